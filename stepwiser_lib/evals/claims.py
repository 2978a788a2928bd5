"""The claims table: each paper claim our runs test, the paper's difference beside ours with its
95% interval, and a verdict computed by :func:`stepwiser_lib.evals.stats.claim_verdict`.

Ours come from the paired comparisons the notebooks write (``comparisons`` in
``results/<profile>/{self_segmentation,judges,processbench,chunk_reset,rsft}.json``, :mod:`stepwiser_lib.evals.evaluation`); the
paper's from :mod:`stepwiser_lib.evals.paper_results`. A claim whose comparison a profile did not run
is left out; the results pages (docs/) say which are missing.
"""

from __future__ import annotations

import json
from pathlib import Path

from ..core.verdicts import UNINFORMATIVE
from ..core.vocab import KINDS, RULES
from . import paper_results as P
from .stats import claim_verdict

#: The paper's judge orderings (Tables 5 and 6) as (claim, a, b) templates over judge variants:
#: asked of our judges on toy-ProcessBench, paired on the same solutions (notebook 05).
JUDGE_ORDERINGS = [
    ("the generative RL judge is better than the discriminative SFT judge ({rule})", "stepwiser:{rule}", "disc_sft:{rule}"),
    ("Rel-Ratio labels train a better judge than Abs-Q labels", "stepwiser:rel_ratio", "stepwiser:abs_q"),
    ("Rel-Effective labels train a better judge than Abs-Q labels", "stepwiser:rel_effective", "stepwiser:abs_q"),
    ("the judge's chain of thought helps (RL on both)", "stepwiser:rel_ratio", "no_cot_rl:rel_ratio"),
    ("RL trains a better judge than RS-FT", "stepwiser:rel_ratio", "rsft:rel_ratio"),
    ("prompt balancing trains a better judge", "stepwiser:rel_ratio", "no_balance_rl:rel_ratio"),
]


def judge_orderings(names: list[str]) -> list[tuple[str, str, str]]:
    """The (claim, a, b) of :data:`JUDGE_ORDERINGS` whose two judges are both in ``names``."""
    out = []
    for claim, a, b in JUDGE_ORDERINGS:
        for rule in (RULES if "{rule}" in a else [None]):
            x, y = a.format(rule=rule), b.format(rule=rule)
            if x in names and y in names:
                out.append((claim.format(rule=rule), x, y))
    return out


def _is_ordering(claim: dict) -> bool:
    """The comparison asks one of :data:`JUDGE_ORDERINGS` of its two judges (any seeds)."""
    a, b = (claim[k].split("@")[0] for k in ("a", "b"))
    return (claim["claim"], a, b) in judge_orderings([a, b])


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
                _t56(KINDS["stepwiser"], a_rule), _t56(KINDS["disc_sft"], a_rule),
                f"Table 5, 1.5B, ProcessBench avg F1; ours: balanced step accuracy, {claim.get('split', 'dev')} chunks")
    if file == "self_segmentation":
        base, chunk = (next(r for r in P.TABLE4 if r["generator"] == f"Qwen2.5-1.5B-{g}") for g in ("it", "chunk"))
        field = "avg_acc" if claim.get("field") == "correct" else claim.get("field")
        return (claim["claim"], chunk[field], base[field],
                f"Table 4, 1.5B, {'Avg@32 accuracy' if field == 'avg_acc' else 'steps per solution'}; "
                f"ours: toy {'Avg@k accuracy' if field == 'avg_acc' else 'steps'}, chunk policy − base")
    if file == "processbench" or (file == "judges" and _is_ordering(claim)):
        b_kind, _, b_rule = claim["b"].partition(":")
        b_rule = b_rule.split("@")[0]
        model = "1.5B" if P.paper_row(KINDS.get(b_kind, ""), b_rule) else "7B"  # balancing: 7B only
        pa, pb = (P.paper_row(KINDS.get(k, ""), r, model) for k, r in ((a_kind, a_rule), (b_kind, b_rule)))
        ours = "toy-ProcessBench avg F1" if file == "processbench" else f"balanced step accuracy, {claim.get('split', 'test')} chunks"
        return (claim["claim"], pa and pa["avg"], pb and pb["avg"], f"Tables 5/6, {model}, ProcessBench avg F1; ours: {ours}")
    if file == "chunk_reset" and a_kind in ("stepwiser", "disc_sft"):
        return (f"chunk-reset with the {a_kind} judge beats the plain chunk policy ({a_rule})",
                _t7(KINDS[a_kind], a_rule), _t7("Qwen2.5-1.5B-chunk (no judge)", "-"),
                "Table 7, 1.5B, avg accuracy; ours: toy accuracy")
    if file == "rsft" and claim["b"] == "outcome-based selection" and a_kind in ("stepwiser", "disc_sft"):
        return (f"RS-FT data chosen by the {a_kind} judge beats outcome-based selection ({a_rule})",
                _t8(KINDS[a_kind], a_rule), _t8("Outcome-based selection", "-"),
                "Table 8, 7B, avg greedy accuracy; ours: toy greedy accuracy")
    if file == "rsft" and claim["a"] == "outcome-based selection":
        return ("RS-FT with outcome-based selection beats the policy before it",
                _t8("Outcome-based selection", "-"), _t8("Qwen2.5-7B-chunk (greedy, no RS-FT)", "-"),
                "Table 8, 7B, avg greedy accuracy; ours: toy greedy accuracy")
    return None


FILES = ("self_segmentation", "judges", "processbench", "chunk_reset", "rsft")


def rows(results_dir: str | Path, files: list[str] | None = None) -> list[dict]:
    """One row per paper claim that ``results_dir``'s comparisons test (of ``files``, default
    all): ``claim``, ``paper`` (a − b, points), ``paper_source``, ``ours`` (a − b), ``low``,
    ``high``, ``test``, ``verdict`` (*reproduced* when our interval excludes zero in the paper's
    direction, *contradicted* the other way, else *within noise*), and ``file`` and ``question``
    (the results file and its comparison's own wording)."""
    out = []
    for file in files or FILES:
        path = Path(results_dir) / f"{file}.json"
        if not path.exists():
            continue
        for c in json.loads(path.read_text()).get("comparisons", []):
            paper = _paper(file, c)
            if paper is None or None in paper[1:3]:
                continue
            text, pa, pb, source = paper
            diff = round(pa - pb, 1)
            silent = c.get("verdict") == UNINFORMATIVE  # a judge that gave no parsable verdict (verdicts.RULE)
            out.append({"claim": text, "paper": diff, "paper_source": source, "ours": c["diff"],
                        "low": c["low"], "high": c["high"], "test": c["test"],
                        "verdict": UNINFORMATIVE if silent else claim_verdict(c["low"], c["high"], 1 if diff > 0 else -1),
                        "file": file, "question": c["claim"], "a": c.get("a"), "b": c.get("b")})
    return out


def _num(x) -> str:
    return "-" if x is None else f"{x:+.1f}"


def _interval(r: dict) -> str:
    return "-" if r["low"] is None else f"[{r['low']:+.1f}, {r['high']:+.1f}]"


def markdown(results_dir: str | Path) -> list[str]:
    """The claims table as Markdown lines (empty when no claim was tested)."""
    rs = rows(results_dir)
    if not rs:
        return []
    lines = ["| paper claim | paper: a − b | where | ours: a − b | 95% interval | paired test | verdict |",
             "|---|---|---|---|---|---|---|"]
    lines += [f"| {r['claim']} | {r['paper']:+.1f} | {r['paper_source']} | {_num(r['ours'])} | "
              f"{_interval(r)} | {r['test']} | **{r['verdict']}** |" for r in rs]
    return lines
