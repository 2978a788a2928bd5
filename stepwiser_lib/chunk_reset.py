"""Stage 6: Chunk-Reset Reasoning, the judge used at inference time (paper §4.4, Table 7; notes §6.1).

The chunk policy writes one chunk at a time (generation stops at ``</chunk>``). The judge reads
(problem, accepted history, new chunk): a Positive chunk is accepted and generation continues
from the extended prefix; a Negative one is discarded and a new chunk is sampled from the same
point, up to ``max_attempts`` samples in all. What happens when every attempt is rejected is not
in the paper: ``on_exhausted`` chooses (default: the attempt with the highest judge score, ties
to the latest). Whether the final-answer chunk is judged is ``judge_final``.

Problems advance together: each round generates one candidate chunk for every unfinished
problem in one batched call and judges them in one batched call. **Common random numbers**: each
candidate is sampled with a seed of its own, from (seed, problem, chunk index, attempt), so a
problem's draws do not depend on which other problems share a batch or on another problem's
rejections; arms with different judges (or none) are then paired on the same random numbers,
and a judge that accepts every chunk gives exactly the no-judge result (a test checks it). Policy and judge are injected
(anything with the generator and judge interfaces), so the loop is tested with scripted fakes.
Reported per problem: correctness, accepted length and rejected length in tokens (Table 7's
columns), judge calls and the trace of every attempt.
"""

from __future__ import annotations

import time
from dataclasses import asdict, dataclass, field

from .chunks import CHUNK_CLOSE, SEPARATOR, first_chunk


@dataclass(frozen=True)
class ResetConfig:
    max_attempts: int = 5  # paper: up to 5 attempts (we count every sample, the first included)
    on_exhausted: str = "best_score"  # [not in paper] best_score | last | first
    judge_final: bool = True  # [not in paper] also judge the chunk that gives the final answer
    max_chunks: int = 12  # [not in paper] safety bound on accepted chunks per solution
    temperature: float = 1.0  # [not in paper] policy sampling temperature
    max_new_tokens: int = 96  # tokens per chunk
    judge_k: int = 1  # judge samples per chunk (1: greedy)
    seed: int = 0

    def __post_init__(self):
        if self.on_exhausted not in ("best_score", "last", "first"):
            raise ValueError(f"on_exhausted must be best_score, last or first, not {self.on_exhausted!r}")
        if self.max_attempts < 1:
            raise ValueError("max_attempts must be at least 1")


@dataclass
class _State:
    problem: str
    prefix: str = ""  # accepted assistant text so far
    history: list[str] = field(default_factory=list)  # accepted chunk contents
    accepted_tokens: int = 0
    rejected_tokens: int = 0
    judge_calls: int = 0
    attempts: list[dict] = field(default_factory=list)  # candidates at the current point
    trace: list[dict] = field(default_factory=list)
    done: bool = False


def is_final(content: str) -> bool:
    return "\\boxed" in content


def _choose_fallback(attempts: list[dict], rule: str) -> int:
    if rule == "first":
        return 0
    if rule == "last":
        return len(attempts) - 1
    best = max(a["score"] for a in attempts)
    return max(i for i, a in enumerate(attempts) if a["score"] == best)  # ties: the latest


def draw_seed(*parts) -> int:
    """A 31-bit seed from its parts (seed, problem text, chunk index, attempt): the same candidate
    gets the same random numbers in every arm of an experiment."""
    import hashlib

    return int(hashlib.sha256("|".join(map(str, parts)).encode()).hexdigest()[:8], 16) & 0x7FFFFFFF


def chunk_reset(policy, judge, problems: list[str], template: str, cfg: ResetConfig,
                progress: bool = True) -> list[dict]:
    """Run Chunk-Reset Reasoning on ``problems`` (texts). ``judge=None`` is the plain chunk
    policy (every chunk accepted): the Table 7 baseline row, through the same loop.

    ``policy.generate(prompts, n, temperature, max_new_tokens, stop, seed, prefixes, seeds=...)``
    and ``judge.judge(triples, k, seed, seeds=...)`` are the generator and judge interfaces of
    :mod:`stepwiser_lib.models` and :mod:`stepwiser_lib.judge`; ``seeds`` holds one
    :func:`draw_seed` per prompt (common random numbers, see the module docstring).
    """
    from tqdm.auto import tqdm

    states = [_State(problem=p) for p in problems]
    prompts = [template.format(problem=p) for p in problems]
    rnd = 0
    bar = tqdm(total=len(states), desc="chunk-reset", unit="problem", disable=not progress)
    while True:
        active = [i for i, s in enumerate(states) if not s.done]
        if not active:
            break
        outs = policy.generate([prompts[i] for i in active], n=1, temperature=cfg.temperature,
                               max_new_tokens=cfg.max_new_tokens, stop=[CHUNK_CLOSE],
                               seed=cfg.seed * 1_000_003 + rnd, prefixes=[states[i].prefix for i in active],
                               seeds=[draw_seed(cfg.seed, states[i].problem, len(states[i].history), len(states[i].attempts))
                                      for i in active])
        rnd += 1
        to_judge = []
        for i, o in zip(active, outs):
            s, c = states[i], o[0]
            content = first_chunk(c.text)
            if content is None:  # the response ended (or broke format): nothing more to judge
                s.accepted_tokens += c.n_tokens
                s.prefix += c.text
                s.done = True
                bar.update(1)
                continue
            cand = {"text": c.text, "content": content, "n_tokens": c.n_tokens, "verdict": None,
                    "score": 1.0, "analysis": ""}
            s.attempts.append(cand)
            if judge is not None and (cfg.judge_final or not is_final(content)):
                to_judge.append(i)
            else:
                cand["verdict"] = "Positive"
        if to_judge:
            res = judge.judge([(states[i].problem, list(states[i].history), states[i].attempts[-1]["content"])
                               for i in to_judge], k=cfg.judge_k, seed=cfg.seed + rnd,
                              seeds=[draw_seed("judge", cfg.seed, states[i].problem, len(states[i].history),
                                               len(states[i].attempts) - 1) for i in to_judge])
            for i, r in zip(to_judge, res):
                a = states[i].attempts[-1]
                a.update(verdict=r["verdict"], score=r["score"], analysis=r["analysis"])
                states[i].judge_calls += 1
        for i in active:
            s = states[i]
            if s.done or not s.attempts:
                continue
            a = s.attempts[-1]
            if a["verdict"] == "Positive":
                pick = len(s.attempts) - 1
            elif len(s.attempts) >= cfg.max_attempts:
                pick = _choose_fallback(s.attempts, cfg.on_exhausted)
            else:
                continue  # rejected: sample again from the same point
            chosen = s.attempts[pick]
            s.rejected_tokens += sum(x["n_tokens"] for j, x in enumerate(s.attempts) if j != pick)
            s.accepted_tokens += chosen["n_tokens"]
            s.prefix += chosen["text"]
            if getattr(policy, "cut_after_separator", False):
                s.prefix += SEPARATOR  # continue where the policy's next chunk begins (chunks.SEPARATOR)
            s.history.append(chosen["content"])
            s.trace.append({"chunk_index": len(s.history) - 1, "accepted": pick,
                            "exhausted": a["verdict"] != "Positive",
                            "attempts": [{k: x[k] for k in ("content", "verdict", "score", "analysis", "n_tokens")}
                                         for x in s.attempts]})
            s.attempts = []
            if is_final(chosen["content"]) or len(s.history) >= cfg.max_chunks:
                s.done = True
                bar.update(1)
    bar.close()
    return [{"problem": s.problem, "response": s.prefix, "accepted_tokens": s.accepted_tokens,
             "rejected_tokens": s.rejected_tokens, "judge_calls": s.judge_calls,
             "chunks": len(s.history), "resets": sum(len(t["attempts"]) - 1 for t in s.trace),
             "exhausted": sum(t["exhausted"] for t in s.trace), "trace": s.trace} for s in states]


def summarize(results: list[dict], correct: list[bool], seconds: float | None = None) -> dict:
    """Table 7 columns: accuracy (%), mean accepted and rejected length (tokens), plus judge
    calls, resets and exhausted points per problem."""
    n = max(1, len(results))
    out = {"n": len(results), "accuracy": round(100 * sum(correct) / n, 2),
           "accepted_length": round(sum(r["accepted_tokens"] for r in results) / n, 1),
           "rejected_length": round(sum(r["rejected_tokens"] for r in results) / n, 1),
           "judge_calls": round(sum(r["judge_calls"] for r in results) / n, 2),
           "resets": round(sum(r["resets"] for r in results) / n, 2),
           "exhausted": round(sum(r["exhausted"] for r in results) / n, 3)}
    if seconds is not None:
        out["seconds"] = round(seconds, 1)
    return out


def config_dict(cfg: ResetConfig) -> dict:
    return asdict(cfg)


def timed(fn, *a, **kw):
    t = time.time()
    r = fn(*a, **kw)
    return r, time.time() - t


def run_arm(policy, judge, items: list[dict], template: str, cfg: ResetConfig, is_correct) -> dict:
    """One arm of notebook 06 on ``items`` (problems with ``problem``): :func:`chunk_reset` with
    ``judge`` (None: the plain policy), each response checked by ``is_correct(item, response)``;
    ``results``, ``correct`` and :func:`summarize`'s ``summary`` (with the seconds it took)."""
    res, secs = timed(chunk_reset, policy, judge, [i["problem"] for i in items], template, cfg, progress=False)
    correct = [bool(is_correct(i, r["response"])) for i, r in zip(items, res)]
    return {"results": res, "correct": correct, "summary": summarize(res, correct, secs)}
