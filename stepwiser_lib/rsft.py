"""Stage 7: stepwise rejection-sampling fine-tuning, the judge as a data selector (paper §4.4,
Table 8; notes §6.2).

The chunk policy samples N responses per training prompt. Each chunk is scored by a judge
(score = fraction of Positive verdicts over its samples; with one greedy sample, 1 or 0), the
response score is the **average chunk score**, and among the **correct** responses the best one
per prompt is kept. Baseline: outcome-based selection (a random correct response). The policy is
then fine-tuned on each selected set with the recipe of notebook 01 and evaluated greedily.
"""

from __future__ import annotations

import random

from .chunks import chunk_ends, parse_chunks


def response_score(chunk_scores: list[float]) -> float | None:
    """Average chunk score (paper §4.4); None for a response without chunks."""
    return sum(chunk_scores) / len(chunk_scores) if chunk_scores else None


def select_best(candidates: list[dict], method: str = "judge", seed: int = 0,
                key: str = "") -> int | None:
    """Index of the selected response among one prompt's ``candidates`` (dicts with
    ``correct`` and, for ``method="judge"``, ``score``), or None if none is correct.

    * ``judge``: the correct response with the highest average chunk score; ties go to the
      lowest index (deterministic).
    * ``outcome``: a random correct response (seeded by ``seed`` and the prompt ``key``).
    An incorrect response is never selected.
    """
    ok = [i for i, c in enumerate(candidates) if c["correct"]]
    if not ok:
        return None
    if method == "outcome":
        return random.Random(f"outcome:{seed}:{key}").choice(ok)
    if method != "judge":
        raise ValueError(f"unknown selection method {method!r}; valid: judge, outcome")
    scored = [i for i in ok if candidates[i].get("score") is not None]
    if not scored:
        return ok[0]
    best = max(candidates[i]["score"] for i in scored)
    return min(i for i in scored if candidates[i]["score"] == best)


def score_responses(judge, items: list[dict], k: int = 1, seed: int = 0,
                    progress: bool = False) -> list[list[list[float]]]:
    """Chunk scores for every response: ``items[i]["responses"]`` is a list of response texts
    for ``items[i]["problem"]``; all chunks of all responses go to the judge in one batch."""
    triples, where = [], []
    for i, it in enumerate(items):
        for r, resp in enumerate(it["responses"]):
            chunks = parse_chunks(resp)
            for c, ch in enumerate(chunks):
                triples.append((it["problem"], chunks[:c], ch))
                where.append((i, r))
    res = judge.judge(triples, k=k, seed=seed, progress=progress) if triples else []
    out = [[[] for _ in it["responses"]] for it in items]
    for (i, r), x in zip(where, res):
        out[i][r].append(float(x["score"]))
    return out


def sft_records(items: list[dict], picks: list[int | None], template: str) -> list[dict]:
    """Prompt/completion SFT records of the selected responses (prompts without a pick are
    skipped). Completions are cut after the last ``</chunk>`` so trailing text is not trained."""
    out = []
    for it, p in zip(items, picks):
        if p is None:
            continue
        resp = it["responses"][p]
        ends = chunk_ends(resp)
        out.append({"prompt": template.format(problem=it["problem"]),
                    "completion": resp[:ends[-1]] if ends else resp})
    return out
