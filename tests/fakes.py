"""Scripted stand-ins for a policy, so pipeline logic is tested in milliseconds."""

import random

from stepwiser_lib.engines.models import Completion


class FakeToyPolicy:
    """Chunk-format toy solutions. A bare prompt succeeds with probability ``p``; a continuation
    succeeds with probability ``p_after`` unless the prefix already contains a wrong step.
    Deterministic in (seed, prompt, prefix, sample index), like a seeded sampler."""

    backend = "fake"

    def __init__(self, p=0.5, p_after=0.6):
        self.p, self.p_after = p, p_after
        self.calls = []  # (number of prompts, n) per call

    def generate(
        self,
        prompts,
        n=1,
        temperature=1.0,
        top_p=1.0,
        max_new_tokens=256,
        stop=None,
        seed=0,
        prefixes=None,
        progress=False,
        seeds=None,
        count_prefix=False,
    ):
        self.calls.append((len(prompts), n))
        prefixes = prefixes or [""] * len(prompts)
        out = []
        for i, (prompt, prefix) in enumerate(zip(prompts, prefixes)):
            res = []
            for j in range(n):
                rng = random.Random(f"{seed if seeds is None else seeds[i]}|{prompt}|{prefix}|{j}")
                bad_prefix = "WRONG" in prefix
                ok = rng.random() < (self.p if not prefix else (0 if bad_prefix else self.p_after))
                ans = "7" if ok else "8"
                if prefix:
                    text = f"\n\n<chunk>So the answer is \\boxed{{{ans}}}.</chunk>"
                else:
                    k = rng.randint(1, 3)
                    mid = "".join(
                        f"<chunk>step {i}{' WRONG' if not ok and i == k - 1 else ''}</chunk>\n\n" for i in range(k)
                    )
                    text = mid + f"<chunk>So the answer is \\boxed{{{ans}}}.</chunk>"
                res.append(Completion(text=text, n_tokens=len(text) // 3, finished=True))
            out.append(res)
        return out


def fake_items(n, answer="7"):
    return [{"id": f"fake-{i}", "problem": f"fake problem {i}", "answer": answer} for i in range(n)]


def length_reward(completions, **kw):
    """A GRPO reward that varies without a trained judge: a completion's length in characters,
    scaled (a test's, passed by name, ``"fakes:length_reward"``, so launched processes import it)."""
    return [len(c if isinstance(c, str) else c[-1]["content"]) / 100 for c in completions]
