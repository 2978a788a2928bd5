"""The claims table: each paper claim our runs test, the paper's difference beside ours with its
95% interval, and a verdict computed by :func:`stepwiser_lib.stats.claim_verdict`.

Ours come from the paired comparisons the notebooks write (``comparisons`` in
``results/<profile>/{judges,chunk_reset,rsft}.json``, :mod:`stepwiser_lib.evaluation`); the
paper's from :mod:`stepwiser_lib.paper_results`. A claim whose comparison a profile did not run
is left out; the README says which are missing.
"""

from __future__ import annotations

import json
from pathlib import Path

from . import paper_results as P
from .stats import claim_verdict

KIND_ROW = {"stepwiser": "Generative CoT + RL (StepWiser)", "disc_sft": "Discriminative + SFT"}


def _t56(row: str, rule: str) -> float | None:
    r = P.paper_row(row, rule)
    return r and r["avg"]


def _t7(row: str, rule: str) -> float | None:
    return next((r["avg"] for r in P.TABLE7 if r["model"] == "1.5B" and r["row"] == row and r["signal"] == rule), None)


def _t8(row: str, rule: str) -> float | None:
    return next((r["avg"] for r in P.TABLE8 if r["row"] == row and r["signal"] == rule), None)


def _paper(file: str, claim: dict) -> tuple[str, float | None, float | None, str] | None:
    """(claim text, paper's number for a, for b, where) for one of our comparisons, or None when
    the paper makes no such claim."""
    a_kind, _, a_rule = claim["a"].partition(":")
    a_rule = a_rule.split("@")[0]
    if file == "judges" and claim["claim"] == "generative RL beats discriminative SFT":
        return (f"the generative RL judge is better than the discriminative SFT judge ({a_rule})",
                _t56(KIND_ROW["stepwiser"], a_rule), _t56(KIND_ROW["disc_sft"], a_rule),
                f"Table 5, 1.5B, ProcessBench avg F1; ours: balanced step accuracy, {claim.get('split', 'dev')} chunks")
    if file == "chunk_reset" and a_kind in KIND_ROW:
        return (f"chunk-reset with the {a_kind} judge beats the plain chunk policy ({a_rule})",
                _t7(KIND_ROW[a_kind], a_rule), _t7("Qwen2.5-1.5B-chunk (no judge)", "-"),
                "Table 7, 1.5B, avg accuracy; ours: toy accuracy")
    if file == "rsft" and claim["b"] == "outcome-based selection" and a_kind in KIND_ROW:
        return (f"RS-FT data chosen by the {a_kind} judge beats outcome-based selection ({a_rule})",
                _t8(KIND_ROW[a_kind], a_rule), _t8("Outcome-based selection", "-"),
                "Table 8, 7B, avg greedy accuracy; ours: toy greedy accuracy")
    if file == "rsft" and claim["a"] == "outcome-based selection":
        return ("RS-FT with outcome-based selection beats the policy before it",
                _t8("Outcome-based selection", "-"), _t8("Qwen2.5-7B-chunk (greedy, no RS-FT)", "-"),
                "Table 8, 7B, avg greedy accuracy; ours: toy greedy accuracy")
    return None


def rows(results_dir: str | Path) -> list[dict]:
    """One row per paper claim that ``results_dir``'s comparisons test: ``claim``, ``paper``
    (a − b, points), ``paper_source``, ``ours`` (a − b), ``low``, ``high``, ``test`` and
    ``verdict`` (*reproduced* when our interval excludes zero in the paper's direction,
    *contradicted* the other way, else *within noise*)."""
    out = []
    for file in ("judges", "chunk_reset", "rsft"):
        path = Path(results_dir) / f"{file}.json"
        if not path.exists():
            continue
        for c in json.loads(path.read_text()).get("comparisons", []):
            paper = _paper(file, c)
            if paper is None or None in paper[1:3]:
                continue
            text, pa, pb, source = paper
            diff = round(pa - pb, 1)
            out.append({"claim": text, "paper": diff, "paper_source": source, "ours": c["diff"],
                        "low": c["low"], "high": c["high"], "test": c["test"],
                        "verdict": claim_verdict(c["low"], c["high"], 1 if diff > 0 else -1)})
    return out


def markdown(results_dir: str | Path) -> list[str]:
    """The claims table as Markdown lines (empty when no claim was tested)."""
    rs = rows(results_dir)
    if not rs:
        return []
    lines = ["| paper claim | paper: a − b | where | ours: a − b | 95% interval | paired test | verdict |",
             "|---|---|---|---|---|---|---|"]
    lines += [f"| {r['claim']} | {r['paper']:+.1f} | {r['paper_source']} | {r['ours']:+.1f} | "
              f"[{r['low']:+.1f}, {r['high']:+.1f}] | {r['test']} | **{r['verdict']}** |" for r in rs]
    return lines
