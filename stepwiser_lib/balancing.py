"""Stage 3: step-level judge prompts and class balancing (paper §3.3, §4.1, App. A.4; notes §4.3).

Labelled chunks become judge examples ``(problem, history, chunk, label)`` for one label rule.
The paper down-samples the majority class to a 50/50 split ("essential for stable RL") and
drops prompts that are overly short or long (thresholds not given: parameters here).
Train and validation are split **by problem**, never by chunk, so no problem leaks across.
"""

from __future__ import annotations

import hashlib
import random
from collections import Counter

from .labelling import RULES


def judge_examples(records: list[dict], rule: str, min_chars: int = 0, max_chars: int = 10**9,
                   drop_final: bool = False) -> list[dict]:
    """One judge example per labelled chunk, with ``label`` from ``rule``.

    ``min_chars``/``max_chars`` bound the length of history + chunk (the paper's "heuristic
    filtering" of overly short or long prompts; thresholds are not given). ``drop_final``
    removes final-answer chunks. [not in paper]
    """
    if rule not in RULES:
        raise ValueError(f"unknown rule {rule!r}; valid: {', '.join(RULES)}")
    out = []
    for r in records:
        n = sum(map(len, r["history"])) + len(r["chunk"])
        if not min_chars <= n <= max_chars or (drop_final and r["is_final"]):
            continue
        out.append({"problem_id": r["problem_id"], "problem": r["problem"], "traj_id": r["traj_id"],
                    "chunk_index": r["chunk_index"], "history": list(r["history"]),
                    "chunk": r["chunk"], "label": bool(r[f"label_{rule}"]), "rule": rule,
                    "q": r["q"], "q_prev": r["q_prev"]})
    return out


def balance(examples: list[dict], label_key: str = "label", seed: int = 0) -> list[dict]:
    """Down-sample the majority class so positives and negatives are equal; the minority class is
    kept whole; deterministic for a seed; the original order is kept. Labels must be True/False
    (a string "False" would count as positive); when one class is empty nothing can be kept and
    a warning says so."""
    for n, e in enumerate(examples):
        if not isinstance(e.get(label_key), bool):
            raise ValueError(f"balance: example {n} has {label_key} = {e.get(label_key, '<missing>')!r}; "
                             "want True or False")
    pos = [i for i, e in enumerate(examples) if e[label_key]]
    neg = [i for i, e in enumerate(examples) if not e[label_key]]
    if examples and not (pos and neg):
        import warnings

        warnings.warn(f"balance: all {len(examples)} examples are {'positive' if pos else 'negative'}; "
                      "a balanced set of them is empty", stacklevel=2)
    small, big = (pos, neg) if len(pos) <= len(neg) else (neg, pos)
    keep = set(small) | set(random.Random(seed).sample(big, len(small)))
    return [e for i, e in enumerate(examples) if i in keep]


def split_by_problem(examples: list[dict], val_fraction: float, seed: int = 0
                     ) -> tuple[list[dict], list[dict]]:
    """Train/validation split by ``problem_id`` (a seeded hash decides each problem's side)."""
    if not 0 < val_fraction < 1:
        raise ValueError(f"split_by_problem: val_fraction = {val_fraction!r} must be in (0, 1)")

    def side(pid: str) -> bool:
        h = int(hashlib.sha256(f"{seed}:{pid}".encode()).hexdigest(), 16)
        return (h % 10_000) / 10_000 < val_fraction
    train = [e for e in examples if not side(e["problem_id"])]
    val = [e for e in examples if side(e["problem_id"])]
    return train, val


def class_stats(examples: list[dict], label_key: str = "label") -> dict:
    c = Counter(bool(e[label_key]) for e in examples)
    n = len(examples)
    return {"n": n, "positive": c[True], "negative": c[False],
            "positive_rate": round(100 * c[True] / n, 2) if n else None}
