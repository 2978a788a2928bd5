"""Sample whole solutions for a set of problems and summarise them (Avg@k, steps, tokens).

Shared by notebook 01 (Table 4), 06 (Table 7 baseline) and 07 (Table 8 evaluation).
"""

from __future__ import annotations

import statistics

from ..core.chunks import (
    CHUNK_OPEN,
    format_ok,
    last_boxed,
    paragraph_chunks,
    parse_chunks,
    split_paragraphs,
    strip_tags,
)
from .tasks import check_many, is_correct


def sample_solutions(
    generator,
    items: list[dict],
    template: str,
    n: int,
    temperature: float,
    max_new_tokens: int,
    seed: int,
    progress: str | bool = False,
) -> list[dict]:
    """``n`` responses per problem; one record per response, scored with the task's checker."""
    prompts = [template.format(problem=it["problem"]) for it in items]
    outs = generator.generate(
        prompts, n=n, temperature=temperature, max_new_tokens=max_new_tokens, seed=seed, progress=progress
    )
    recs = []
    ok = iter(check_many([(it, c.text) for it, cands in zip(items, outs) for c in cands]))  # a pool for real math
    for it, cands in zip(items, outs):
        for j, c in enumerate(cands):
            recs.append(
                {
                    "problem_id": it["id"],
                    "problem": it["problem"],
                    "sample": j,
                    "response": c.text,
                    "correct": next(ok),
                    "n_tokens": c.n_tokens,
                    "finished": c.finished,
                }
            )
    return recs


def reference_samples(items: list[dict], chunked: bool) -> list[dict]:
    """Each problem's reference ``solution`` as one more sample record (``sample`` = "ref"),
    scored by the task's checker like any response; in chunk format (paragraphs as chunks) when
    ``chunked``. [shortcut: the ``colab-smoke`` profile's random-weight policy solves nothing,
    so these stand in for the correct samples later stages need; never used at other profiles]"""
    out = []
    for it in items:
        text = paragraph_chunks(it["solution"]) if chunked else it["solution"]
        out.append(
            {
                "problem_id": it["id"],
                "problem": it["problem"],
                "sample": "ref",
                "response": text,
                "correct": bool(is_correct(it, text)),
                "n_tokens": 0,
                "finished": True,
            }
        )
    return out


#: A chunk-policy response that keeps the Table 11 contract (:func:`stepwiser_lib.core.chunks.format_ok`).
chunk_format_ok = format_ok


def step_count(response: str, chunked: bool) -> int:
    """Steps in one solution as Table 4 counts them: its chunks, or for raw text its ``\\n\\n``
    paragraphs."""
    return len(parse_chunks(response)) if chunked else len(split_paragraphs(strip_tags(response)))


def solution_predictions(method: str, task: str, seed: int, recs: list[dict], chunked: bool) -> list[dict]:
    """One record per sampled solution (``results/<profile>/self_segmentation_predictions.jsonl``,
    schema in ``data/README.md``): ``method``, ``task``, ``seed``, ``problem_id``, ``sample``,
    ``correct`` and ``steps`` (:func:`step_count`)."""
    return [
        {
            "method": method,
            "task": task,
            "seed": seed,
            "problem_id": r["problem_id"],
            "sample": r["sample"],
            "correct": bool(r["correct"]),
            "steps": step_count(r["response"], chunked),
        }
        for r in recs
    ]


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


def output_rates(texts: list[str], correct: list[bool], finished: list[bool]) -> dict:
    """What a model's own outputs look like, in % of ``n`` (every profile prints it; on a real
    135M model it is why a stage needs a shortcut): ``boxed`` (a final ``\\boxed{}``),
    ``correct``, ``chunk_tags`` (any ``<chunk>``), ``chunk_format`` (the Table 11 contract,
    :func:`chunk_format_ok`) and ``truncated`` (stopped by the token limit, not by the model)."""
    n = len(texts)
    pct = lambda k: round(100 * k / n, 1) if n else None  # noqa: E731
    return {
        "n": n,
        "boxed": pct(sum(last_boxed(t) is not None for t in texts)),
        "correct": pct(sum(correct)),
        "chunk_tags": pct(sum(CHUNK_OPEN in t for t in texts)),
        "chunk_format": pct(sum(map(chunk_format_ok, texts))),
        "truncated": pct(sum(not f for f in finished)),
    }


def record_rates(recs: list[dict]) -> dict:
    """:func:`output_rates` of sample records (:func:`sample_solutions`), the model's own only:
    reference solutions added by a shortcut (``sample`` "ref") are left out."""
    own = [r for r in recs if r.get("sample") != "ref"]
    return output_rates([r["response"] for r in own], [r["correct"] for r in own], [r["finished"] for r in own])


def rates_line(rates: dict, what: str = "samples") -> str:
    """``"12 samples of the model's own: 0.0% boxed, 0.0% correct, ..."``"""
    if not rates["n"]:
        return f"no {what} of the model's own"
    return (
        f"{rates['n']} {what} of the model's own: {rates['boxed']}% boxed an answer, {rates['correct']}% correct, "
        f"{rates['chunk_tags']}% wrote a <chunk> tag ({rates['chunk_format']}% in the chunk format), "
        f"{rates['truncated']}% cut at the token limit"
    )
