"""Sample whole solutions for a set of problems and summarise them (Avg@k, steps, tokens).

Shared by notebook 01 (Table 4), 06 (Table 7 baseline) and 07 (Table 8 evaluation).
"""

from __future__ import annotations

import statistics

from .tasks import is_correct
from .chunks import format_ok, parse_chunks, split_paragraphs, strip_tags


def sample_solutions(generator, items: list[dict], template: str, n: int, temperature: float,
                     max_new_tokens: int, seed: int, progress: str | bool = False) -> list[dict]:
    """``n`` responses per problem; one record per response, scored with the task's checker."""
    prompts = [template.format(problem=it["problem"]) for it in items]
    outs = generator.generate(prompts, n=n, temperature=temperature, max_new_tokens=max_new_tokens,
                              seed=seed, progress=progress)
    recs = []
    for it, cands in zip(items, outs):
        for j, c in enumerate(cands):
            recs.append({"problem_id": it["id"], "problem": it["problem"], "sample": j,
                         "response": c.text, "correct": bool(is_correct(it, c.text)),
                         "n_tokens": c.n_tokens, "finished": c.finished})
    return recs


def reference_samples(items: list[dict], chunked: bool) -> list[dict]:
    """Each problem's reference ``solution`` as one more sample record (``sample`` = "ref"),
    scored by the task's checker like any response; in chunk format (paragraphs as chunks) when
    ``chunked``. [shortcut: the ``colab-smoke`` profile's random-weight policy solves nothing,
    so these stand in for the correct samples later stages need; never used at other profiles]"""
    from .chunks import paragraph_chunks

    out = []
    for it in items:
        text = paragraph_chunks(it["solution"]) if chunked else it["solution"]
        out.append({"problem_id": it["id"], "problem": it["problem"], "sample": "ref",
                    "response": text, "correct": bool(is_correct(it, text)), "n_tokens": 0,
                    "finished": True})
    return out


#: A chunk-policy response that keeps the Table 11 contract (:func:`stepwiser_lib.chunks.format_ok`).
chunk_format_ok = format_ok


def step_count(response: str, chunked: bool) -> int:
    """Steps in one solution as Table 4 counts them: its chunks, or for raw text its ``\\n\\n``
    paragraphs."""
    return len(parse_chunks(response)) if chunked else len(split_paragraphs(strip_tags(response)))


def solution_predictions(method: str, task: str, seed: int, recs: list[dict], chunked: bool) -> list[dict]:
    """One record per sampled solution (``results/<profile>/self_segmentation_predictions.jsonl``,
    schema in ``data/README.md``): ``method``, ``task``, ``seed``, ``problem_id``, ``sample``,
    ``correct`` and ``steps`` (:func:`step_count`)."""
    return [{"method": method, "task": task, "seed": seed, "problem_id": r["problem_id"], "sample": r["sample"],
             "correct": bool(r["correct"]), "steps": step_count(r["response"], chunked)} for r in recs]


def summarize(recs: list[dict], chunked: bool) -> dict:
    """Avg@k accuracy (mean over all samples), steps per solution (chunks, or ``\\n\\n``
    paragraphs for raw text) and tokens per solution, as in the paper's Table 4."""
    if not recs:
        return {"n": 0}
    steps = [step_count(r["response"], chunked) for r in recs]
    out = {
        "n": len(recs),
        "avg_acc": round(100 * sum(r["correct"] for r in recs) / len(recs), 2),
        "steps": round(statistics.mean(steps), 3),
        "tokens": round(statistics.mean(r["n_tokens"] for r in recs), 2),
        "finished": round(100 * sum(r["finished"] for r in recs) / len(recs), 2),
    }
    if chunked:
        out["format_ok"] = round(100 * sum(chunk_format_ok(r["response"]) for r in recs) / len(recs), 2)
    return out
