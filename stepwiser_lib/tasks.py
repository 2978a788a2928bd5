"""Problem sources and answer checking: the toy world, and real math for colab/paper profiles.

Every stage sees problems as plain dicts ``{"id", "problem", "answer", ...}`` and checks a
response with :func:`is_correct`, so the same notebook code runs on both worlds.

* ``toy``: :mod:`stepwiser_lib.toyworld` problems, exact integer check of the last ``\\boxed{}``.
* ``numina``: NuminaMath-CoT prompts (paper §4.1) via ``datasets``, filtered as in the paper:
  the reference solution's boxed answer must be verifiable by Math-Verify.
* ``math500`` / ``gsm8k``: evaluation sets (HF ``HuggingFaceH4/MATH-500``, ``openai/gsm8k``), or
  local JSONL copies given by path.

Answer checking on real math uses Math-Verify (``math_verify.parse`` / ``verify``).
"""

from __future__ import annotations

import hashlib
import random

from . import toyworld

TASKS = ("toy", "numina", "math500", "gsm8k")


def load_problems(task: str, split: str, n: int, seed: int, **kw) -> list[dict]:
    """``n`` problems of ``task``; for the toy world ``split`` is one of
    :data:`toyworld.SPLIT_BUCKETS` and ``kw`` may set ``steps``/``distractors``."""
    if task == "toy":
        ps = toyworld.generate_problems(split, n, seed=seed, **kw)
        return [{"id": p.id, "problem": p.text, "answer": str(p.answer), "toy": p.to_dict()}
                for p in ps]
    if task == "numina":
        return _numina(split, n, seed, **kw)
    if task in ("math500", "gsm8k"):
        return _eval_set(task, n, seed, **kw)
    raise ValueError(f"unknown task {task!r}; valid: {', '.join(TASKS)}")


def toy_problem(item: dict) -> toyworld.Problem:
    return toyworld.Problem.from_dict(item["toy"])


def is_correct(item: dict, response: str) -> bool:
    """Outcome reward r* (paper: Math-Verify on the final answer)."""
    if "toy" in item:
        return toyworld.is_correct(toy_problem(item), response)
    return math_verify_correct(item["answer"], response)


def math_verify_correct(gold: str, response: str) -> bool:
    """Math-Verify: parse the gold answer and the response's last boxed/answer, compare."""
    from math_verify import parse, verify

    g = parse(gold if "\\boxed" in gold or "$" in gold else f"${gold}$")
    p = parse(response)
    if not g or not p:
        return False
    return bool(verify(g, p))


def _stable_hash(text: str) -> int:
    return int(hashlib.sha1(text.encode()).hexdigest(), 16)


#: NuminaMath-CoT disjoint prompt pools by hash bucket (of 100). The paper does not say how its
#: 20k/40k subsets and the Heldout-1K set were drawn (notes §1.2).  # [not in paper]
NUMINA_BUCKETS = {"sft": range(0, 40), "label": range(40, 80), "rsft": range(80, 95),
                  "eval": range(95, 100)}


def _numina(split: str, n: int, seed: int, dataset: str = "AI-MO/NuminaMath-CoT",
            revision: str | None = None) -> list[dict]:  # pragma: no cover - needs the hub
    """NuminaMath-CoT prompts after the paper's filter (dedupe; boxed reference answer that
    Math-Verify can parse), split into disjoint pools by prompt hash."""
    from datasets import load_dataset
    from math_verify import parse

    ds = load_dataset(dataset, split="train", revision=revision)
    buckets = NUMINA_BUCKETS[split]
    seen, pool = set(), []
    for i, r in enumerate(ds):
        q = r["problem"].strip()
        if q in seen or _stable_hash(q) % 100 not in buckets:
            continue
        seen.add(q)
        box = toyworld.last_boxed(r["solution"])
        if box is None or not parse(f"${box}$"):
            continue
        pool.append({"id": f"numina-{i}", "problem": q, "answer": box, "source": r.get("source")})
    random.Random(seed).shuffle(pool)
    return pool[:n]


def _eval_set(task: str, n: int, seed: int, path: str | None = None) -> list[dict]:  # pragma: no cover
    import json

    if path:
        rows = [json.loads(x) for x in open(path) if x.strip()]
    else:
        from datasets import load_dataset

        name, split = {"math500": ("HuggingFaceH4/MATH-500", "test"),
                       "gsm8k": ("openai/gsm8k", "test")}[task]
        rows = list(load_dataset(name, "main", split=split) if task == "gsm8k"
                    else load_dataset(name, split=split))
    out = []
    for i, r in enumerate(rows):
        if task == "gsm8k":
            out.append({"id": f"gsm8k-{i}", "problem": r["question"],
                        "answer": r["answer"].split("####")[-1].strip().replace(",", "")})
        else:
            out.append({"id": r.get("unique_id", f"math500-{i}"), "problem": r["problem"],
                        "answer": r["answer"]})
    return out if n <= 0 or n >= len(out) else random.Random(seed).sample(out, n)
