"""The claims table: each paper claim our runs test, the paper's difference beside ours.

Two readings of the same claims live here:

- :func:`table` (issue 35), the claims table a profile reports (``results/<profile>/claims.json``,
  :func:`write`): every arm a set of training seeds, each difference with a hierarchical-bootstrap
  interval (seeds, then problems: :mod:`stepwiser_lib.evals.seeds`) computed from the committed
  per-item predictions, raw and Holm-adjusted p over the whole table, "keeps accuracy" as an
  equivalence test, the paper's own difference against its noise, directions instead of
  "reproduced", and arms that never left their start marked uninformative;
- :func:`rows`, the item-only reading of one run: the paired comparisons it wrote
  (``comparisons`` in ``results/<profile>/<file>.json``), items resampled within that one run, in
  the table's verdict words (the notebooks' closings print :func:`table`'s rows instead:
  ``stepwiser_lib.tools.teaching.closing_lines``).

The paper's numbers come from :mod:`stepwiser_lib.evals.paper_results`. A claim whose arms a profile
did not run is left out; the results pages (docs/) say which are missing.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import numpy as np

from ..core import io, paths
from ..core.verdicts import UNINFORMATIVE
from ..core.vocab import KINDS, RULES, rule_name, start_of
from . import paper_results as P
from . import seeds
from .stats import claim_verdict

#: The paper's judge orderings (Tables 5 and 6) as (claim, a, b) templates over judge variants:
#: asked of our judges on toy-ProcessBench, paired on the same solutions (notebook 05).
JUDGE_ORDERINGS = [
    (
        "the generative RL judge is better than the discriminative SFT judge ({rule})",
        "stepwiser:{rule}",
        "disc_sft:{rule}",
    ),
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
        for rule in RULES if "{rule}" in a else [None]:
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
        return (
            f"the generative RL judge is better than the discriminative SFT judge ({a_rule})",
            _t56(KINDS["stepwiser"], a_rule),
            _t56(KINDS["disc_sft"], a_rule),
            f"Table 5, 1.5B, ProcessBench avg F1; ours: balanced step accuracy, {claim.get('split', 'dev')} chunks",
        )
    if file == "self_segmentation":
        base, chunk = (next(r for r in P.TABLE4 if r["generator"] == f"Qwen2.5-1.5B-{g}") for g in ("it", "chunk"))
        field = "avg_acc" if claim.get("field") == "correct" else claim.get("field")
        return (
            claim["claim"],
            chunk[field],
            base[field],
            f"Table 4, 1.5B, {'Avg@32 accuracy' if field == 'avg_acc' else 'steps per solution'}; "
            f"ours: toy {'Avg@k accuracy' if field == 'avg_acc' else 'steps'}, chunk policy − base",
        )
    if file == "processbench" or (file == "judges" and _is_ordering(claim)):
        b_kind, _, b_rule = claim["b"].partition(":")
        b_rule = b_rule.split("@")[0]
        model = "1.5B" if P.paper_row(KINDS.get(b_kind, ""), b_rule) else "7B"  # balancing: 7B only
        pa, pb = (P.paper_row(KINDS.get(k, ""), r, model) for k, r in ((a_kind, a_rule), (b_kind, b_rule)))
        ours = (
            "toy-ProcessBench avg F1"
            if file == "processbench"
            else f"balanced step accuracy, {claim.get('split', 'test')} chunks"
        )
        return (
            claim["claim"],
            pa and pa["avg"],
            pb and pb["avg"],
            f"Tables 5/6, {model}, ProcessBench avg F1; ours: {ours}",
        )
    if file == "chunk_reset" and a_kind in ("stepwiser", "disc_sft"):
        return (
            f"chunk-reset with the {a_kind} judge beats the plain chunk policy ({a_rule})",
            _t7(KINDS[a_kind], a_rule),
            _t7("Qwen2.5-1.5B-chunk (no judge)", "-"),
            "Table 7, 1.5B, avg accuracy; ours: toy accuracy",
        )
    if file == "rsft" and claim["b"] == "outcome-based selection" and a_kind in ("stepwiser", "disc_sft"):
        return (
            f"RS-FT data chosen by the {a_kind} judge beats outcome-based selection ({a_rule})",
            _t8(KINDS[a_kind], a_rule),
            _t8("Outcome-based selection", "-"),
            "Table 8, 7B, avg greedy accuracy; ours: toy greedy accuracy",
        )
    if file == "rsft" and claim["a"] == "outcome-based selection":
        return (
            "RS-FT with outcome-based selection beats the policy before it",
            _t8("Outcome-based selection", "-"),
            _t8("Qwen2.5-7B-chunk (greedy, no RS-FT)", "-"),
            "Table 8, 7B, avg greedy accuracy; ours: toy greedy accuracy",
        )
    return None


def is_paper_claim(file: str, comparison: dict) -> bool:
    """Whether one of a results file's paired comparisons tests a paper claim with the paper's
    numbers on both sides (a row of :func:`rows`): a notebook prints those once, in its closing
    lines, and shows only its other comparisons in the section that computes them."""
    paper = _paper(file, comparison)
    return paper is not None and None not in paper[1:3]


def other_comparisons(file: str, comparisons: list[dict]) -> list[dict]:
    """The comparisons of ``file`` that test no paper claim (:func:`is_paper_claim`)."""
    return [c for c in comparisons if not is_paper_claim(file, c)]


FILES = ("self_segmentation", "judges", "processbench", "chunk_reset", "rsft")


def rows(results_dir: str | Path, files: list[str] | None = None) -> list[dict]:
    """One row per paper claim that ``results_dir``'s comparisons test (of ``files``, default
    all): ``claim``, ``paper`` (a − b, points), ``paper_source``, ``ours`` (a − b), ``low``,
    ``high``, ``test``, ``verdict`` (the table's words, item-only: *same direction* when our
    interval excludes zero in the paper's direction, *opposite direction* the other way, else
    *undetermined*: :func:`stepwiser_lib.evals.stats.claim_verdict`), and ``file`` and ``question``
    (the results file and its comparison's own wording)."""
    out = []
    for file in files or FILES:
        path = Path(results_dir) / f"{file}.json"
        if not path.exists():
            continue
        for c in json.loads(path.read_text()).get("comparisons", []):
            if not is_paper_claim(file, c):
                continue
            text, pa, pb, source = _paper(file, c)
            diff = round(pa - pb, 1)
            silent = c.get("verdict") == UNINFORMATIVE  # a judge that gave no parsable verdict (verdicts.RULE)
            out.append(
                {
                    "claim": text,
                    "paper": diff,
                    "paper_source": source,
                    "ours": c["diff"],
                    "low": c["low"],
                    "high": c["high"],
                    "test": c["test"],
                    "verdict": UNINFORMATIVE if silent else claim_verdict(c["low"], c["high"], 1 if diff > 0 else -1),
                    "file": file,
                    "question": c["claim"],
                    "a": c.get("a"),
                    "b": c.get("b"),
                }
            )
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
    lines = [
        "| paper claim | paper: a − b | where | ours: a − b | 95% interval | paired test | verdict |",
        "|---|---|---|---|---|---|---|",
    ]
    lines += [
        f"| {r['claim']} | {r['paper']:+.1f} | {r['paper_source']} | {_num(r['ours'])} | "
        f"{_interval(r)} | {r['test']} | **{r['verdict']}** |"
        for r in rs
    ]
    return lines


# ----------------------------------------------------------------------------- the seeded claims table

#: Equivalence margin (points of accuracy) of a "keeps accuracy" claim (Table 4), fixed before the
#: run that tests it (LAB_LOG.md, "Verdicts that survive a rerun, part 2"): the paper's own Table 4
#: differences are within ±0.5, and 3 points is about the smallest change a reader of its table
#: would call a loss; narrower margins than the toy's own interval (about ±3) cannot be shown.
KEEPS_MARGIN = 3.0

#: A judge run is *unmoved* when at least this share of its test verdicts equals its own start's
#: (the format warm-up it trained from, before any label): it never left its start, so a
#: comparison with it asks nothing of its training.
DEGENERATE_SHARE = 0.98

#: Family-wise level of the table's verdicts (Holm over every informative row).
ALPHA = 0.05

#: The fields every record of ``claims.json`` has (issue 35). A Table 5/6 row uses the paper's
#: smaller model (1.5B, nearer our toy) wherever the paper reports it, else 7B; both numbers are kept.
CLAIM_FIELDS = (
    "claim",
    "paper_diff",
    "paper_significant",
    "estimate",
    "ci_low",
    "ci_high",
    "seeds",
    "p",
    "p_holm",
    "direction",
    "verdict",
)


def _read(results_dir: Path, stem: str) -> list[dict] | None:
    path = results_dir / f"{stem}_predictions.jsonl"
    if not path.exists():
        return None
    return [rec for _, rec in io.iter_jsonl(path)]  # a cut last line: file and line named (issue 49)


def _runs(names, variant: str) -> list[str]:
    """The run ids of ``variant`` among ``names``: the variant itself and its ``@seedN`` repeats,
    nothing else (not a run's other readings, such as ``"<run> (dev threshold)"``)."""
    repeat = re.compile(re.escape(variant) + r"@seed\d+")
    return sorted({n for n in names if n == variant or repeat.fullmatch(n)}, key=lambda n: (n != variant, n))


def judge_arm(preds: list[dict], run_ids: list[str], rule: str, problems: list[str]) -> np.ndarray:
    """Counts ``(runs, problems, 4)``: per problem, the (correct Positives, Positives, correct
    Negatives, Negatives) of each run's test verdicts against the labels (balanced accuracy)."""
    idx = {q: i for i, q in enumerate(problems)}
    out = np.zeros((len(run_ids), len(problems), 4))
    for s, run in enumerate(run_ids):
        for p in preds:
            if p["judge"] == run and p["rule"] == rule and p["split"] == "test":
                ok = p["verdict"] is not None and p["verdict"] == p["label"]
                i = idx[p["problem_id"]]
                out[s, i, 0 if p["label"] else 2] += ok
                out[s, i, 1 if p["label"] else 3] += 1
    return out


def unmoved(preds: list[dict], run: str, rule: str) -> bool:
    """Whether judge run ``run`` never left its own start on the test chunks of ``rule``: at least
    :data:`DEGENERATE_SHARE` of its verdicts equal, chunk by chunk, those of the warm-up its kind
    trains from (:func:`stepwiser_lib.core.vocab.start_of`; issue 59: the no-CoT judge against the
    no-CoT warm-up, not the CoT one). False when that start's predictions are not there."""
    mine = {
        p["chunk_id"]: p["verdict"] for p in preds if p["judge"] == run and p["rule"] == rule and p["split"] == "test"
    }
    start = start_of(run.split("@")[0].split(":")[0])
    if not mine or not start:
        return False
    theirs = {
        p["chunk_id"]: p["verdict"] for p in preds if p["judge"] == start and p["rule"] == rule and p["split"] == "test"
    }
    if not theirs:
        return False
    return sum(theirs.get(c, object()) == v for c, v in mine.items()) / len(mine) >= DEGENERATE_SHARE


def degenerate(preds: list[dict], run: str, rule: str) -> bool:
    """Whether judge run ``run`` is degenerate on ``rule``'s test chunks: its Positive rate is
    outside :data:`POSITIVE_RATE_RANGE` (one constant verdict, or an unparsed one, included). The
    one definition every count and gate uses (issue 59)."""
    rate = positive_rate(preds, run, rule)
    lo, hi = POSITIVE_RATE_RANGE
    return rate is not None and not lo <= rate <= hi


def uninformative_arms(preds: list[dict] | None) -> dict[str, str]:
    """Variant -> why, for every judge variant of notebook 04's predictions most of whose runs are
    :func:`degenerate` or :func:`unmoved` (on its own rule's test chunks): such an arm decides
    nothing and leaves the Holm family."""
    if not preds:
        return {}
    out = {}
    names = {(p["judge"], p["rule"]) for p in preds if p["split"] == "test" and ":" in p["judge"]}
    for variant in sorted({n.split("@")[0] for n, _ in names}):
        rule = variant.split(":")[1]
        runs = _runs({n for n, r in names if r == rule}, variant)
        degen = [r for r in runs if degenerate(preds, r, rule)]
        still = [r for r in runs if r not in degen and unmoved(preds, r, rule)]
        if runs and (len(degen) + len(still)) * 2 > len(runs):
            lo, hi = POSITIVE_RATE_RANGE
            start = start_of(variant.split(":")[0])
            out[variant] = "; ".join(
                x
                for x in (
                    f"{len(degen)} of {len(runs)} runs degenerate (Positive on under {lo:g}% or over {hi:g}% of the test chunks)"
                    if degen
                    else "",
                    f"{len(still)} of {len(runs)} runs give its start's ({start}) test verdict on at least "
                    f"{DEGENERATE_SHARE:.0%} of the chunks"
                    if still
                    else "",
                )
                if x
            )
    return out


#: A trained judge run is degenerate when its Positive rate on its test chunks (balanced: half are
#: Positive) is outside this range (percent): it has collapsed towards one verdict (issue 47).
POSITIVE_RATE_RANGE = (15.0, 85.0)


def positive_rate(preds: list[dict], run: str, rule: str) -> float | None:
    """Percent of judge run ``run``'s test verdicts on ``rule``'s chunks that are Positive (None
    without any)."""
    mine = [p["verdict"] for p in preds if p["judge"] == run and p["rule"] == rule and p["split"] == "test"]
    return 100 * sum(v is True for v in mine) / len(mine) if mine else None


def degenerate_runs(preds: list[dict] | None, variant: str) -> tuple[int, int] | None:
    """(degenerate runs, runs) of a judge ``variant`` (its ``@seedN`` repeats included): runs whose
    test Positive rate is outside :data:`POSITIVE_RATE_RANGE`. None for an arm that is not a
    trained judge in ``preds``."""
    if not preds or ":" not in variant:
        return None
    rule = variant.split(":")[1]
    runs = _runs({p["judge"] for p in preds if p["split"] == "test" and p["rule"] == rule}, variant)
    if not runs:
        return None
    return sum(degenerate(preds, r, rule) for r in runs), len(runs)


def pb_arm(preds: list[dict], rows_: list[str], splits: list[str], ids: list[str]) -> np.ndarray:
    """Counts ``(runs, solutions, 4 * splits)`` for toy-ProcessBench's average F1
    (:func:`stepwiser_lib.evals.seeds.f1_stat`): each solution adds (first error found, 1) in its
    split's erroneous slots or (kept as correct, 1) in its correct slots."""
    idx = {i: n for n, i in enumerate(ids)}
    out = np.zeros((len(rows_), len(ids), 4 * len(splits)))
    for s, row in enumerate(rows_):
        for p in preds:
            if p["judge"] == row:
                k, n = 4 * splits.index(p["split"]), idx[p["id"]]
                slot = k if p["label"] != -1 else k + 2
                out[s, n, slot] += p["prediction"] == p["label"]
                out[s, n, slot + 1] += 1
    return out


def pb_rows(names, variant: str) -> list[str]:
    """The toy-ProcessBench prediction rows of ``variant``'s runs: each run's row at its threshold
    chosen on the dev split (``"<run> (dev threshold t)"``) where there is one, else its own
    verdicts. A row thresholded on a reported split is never read."""
    out = []
    for run in _runs({n.split(" (")[0] for n in names if ":" in n}, variant):
        dev = [n for n in names if n.startswith(f"{run} (dev threshold")]
        out.append(dev[0] if dev else run)
    return [r for r in out if r in names]


def rate_arm(
    preds: list[dict], method: str, problems: list[str], field: str = "correct", runs_are: str = "judge training seeds"
) -> tuple[np.ndarray, str]:
    """Counts ``(units, problems, 2)`` of (sum of ``field``, outputs) for ``method``'s outputs, and
    what a unit is: the ``@seedN`` runs of ``method`` (``runs_are``: a judge's training seeds, or
    notebook 01's chunk-policy SFT seeds), each summed over its sampling or SFT seeds, else the
    ``seed`` field (SFT or sampling seeds)."""
    runs = _runs({p["method"] for p in preds}, method)
    if len(runs) > 1:
        unit, units, what = (lambda p: p["method"]), runs, runs_are
    else:
        mine = [p for p in preds if p["method"] == method]
        unit, units, what = (lambda p: p["seed"]), sorted({p["seed"] for p in mine}), "seeds"
    idx, uid = {q: i for i, q in enumerate(problems)}, {u: i for i, u in enumerate(units)}
    out = np.zeros((len(units), len(problems), 2))
    for p in preds:
        if (p["method"] in runs) if len(runs) > 1 else p["method"] == method:
            out[uid[unit(p)], idx[p["problem_id"]]] += (float(p[field]), 1)
    return out, what


def _pb_paper(a: str, b: str) -> tuple[float, float, str, float | None] | None:
    """(paper a, paper b, model, the other model's a − b) of a Table 5/6 ordering of variants."""
    (ka, ra), (kb, rb) = (v.split(":") for v in (a, b))
    rows_ = {m: [P.paper_row(KINDS.get(k, ""), r, m) for k, r in ((ka, ra), (kb, rb))] for m in ("1.5B", "7B")}
    have = [m for m in ("1.5B", "7B") if None not in rows_[m]]
    if not have:
        return None
    m, other = have[0], next((x for x in have[1:]), None)
    o = round(rows_[other][0]["avg"] - rows_[other][1]["avg"], 1) if other else None
    return rows_[m][0]["avg"], rows_[m][1]["avg"], m, o


def _ordering_text(a: str, b: str, sign: int) -> str:
    """A Table 5/6 ordering in words, in the direction the paper found (``sign`` of a − b)."""
    better = "better" if sign > 0 else "worse"
    ka, ra = a.split(":")
    kb, rb = b.split(":")
    rule = RULES_NAME.get(ra, ra)
    if ka == kb:  # label rules
        return f"{RULES_NAME.get(ra, ra)} labels train a {better} judge than {RULES_NAME.get(rb, rb)} labels"
    what = {
        "disc_sft": "the discriminative SFT judge",
        "no_cot_rl": "RL without a chain of thought",
        "rsft": "RS-FT instead of RL",
        "no_balance_rl": "RL without prompt balancing",
        "restate_rl": "RL from a warm-up without the oracle derivation",
    }
    if ka == "restate_rl":
        return f"RL from the Monte-Carlo labels alone (a warm-up that derives nothing) is {better} than {what[kb]} ({rule})"
    return f"the generative CoT + RL judge is {better} than {what.get(kb, kb)} ({rule})"


RULES_NAME = {"abs_q": "Abs-Q", "rel_effective": "Rel-Effective", "rel_ratio": "Rel-Ratio"}


def ordering_claim(a: str, b: str) -> dict | None:
    """The paper's side of the judge ordering a − b (variants, e.g. ``"stepwiser:rel_ratio"``) as the
    table words it: ``claim``, ``paper_diff`` and ``paper_source``; None when the paper has no row
    for an arm. What a notebook's closing lines state of a claim whose arms this profile has not run."""
    pap = _pb_paper(a, b)
    if pap is None:
        return None
    pa, pb, model, _ = pap
    return {
        "claim": _ordering_text(a, b, 1 if pa - pb > 0 else -1),
        "paper_diff": round(pa - pb, 1),
        "paper_source": f"Tables 5/6, {model}, ProcessBench avg F1",
    }


#: Orderings of judge variants the table asks (a, b, the paper's (a, b) variants when they differ:
#: the oracle-free arm stands for the paper's StepWiser judge).
TABLE_ORDERINGS = [
    ("stepwiser:{rule}", "disc_sft:{rule}", None),
    ("restate_rl:{rule}", "disc_sft:{rule}", ("stepwiser:{rule}", "disc_sft:{rule}")),
    ("stepwiser:rel_ratio", "no_cot_rl:rel_ratio", None),
    ("stepwiser:rel_ratio", "rsft:rel_ratio", None),
    ("stepwiser:rel_ratio", "no_balance_rl:rel_ratio", None),
    ("stepwiser:rel_ratio", "stepwiser:abs_q", None),
    ("stepwiser:rel_effective", "stepwiser:abs_q", None),
]


def _orderings(variants: set[str], same_rule: bool) -> list[tuple[str, str, tuple[str, str]]]:
    out = []
    for a, b, paper in TABLE_ORDERINGS:
        for rule in RULES if "{rule}" in a else [None]:
            x, y = a.format(rule=rule), b.format(rule=rule)
            if x in variants and y in variants and (not same_rule or x.split(":")[1] == y.split(":")[1]):
                out.append((x, y, tuple(v.format(rule=rule) for v in paper) if paper else (x, y)))
    return out


def _spec(
    claim,
    file,
    metric,
    a,
    b,
    arms,
    stat,
    strata,
    units,
    paper,
    *,
    equivalence=False,
    uninformative=None,
    paired_seeds=False,
    same_units=True,
    degenerate=None,
):
    return {
        "claim": claim,
        "file": file,
        "metric": metric,
        "a": a,
        "b": b,
        "arms": arms,
        "stat": stat,
        "strata": strata,
        "units": units,
        "paper": paper,
        "equivalence": equivalence,
        "uninformative": uninformative,
        "paired_seeds": paired_seeds,
        "same_units": same_units,
        "degenerate": degenerate,
    }


#: The paper side of a row the paper has no number for (issue 47's "GRPO beats its warm-up"): its
#: verdict is ours alone (*a higher* / *b higher* after Holm, else *undetermined*).
NOT_A_PAPER_ROW = {
    "paper_diff": None,
    "paper_z": None,
    "paper_significant": None,
    "paper_source": "not in the paper (the toy judge's start)",
    "paper_noise": "",
}


#: Why the paper's noise is a bound: every comparison the paper makes scores both arms on the same
#: problems, and it gives no per-problem results, so only the unpaired noise of the difference can
#: be computed. It bounds the paired noise from above when the arms' per-problem results are not
#: negatively correlated: a paper difference outside it is an effect, one inside it may still be.
PAPER_NOISE_BOUND = "unpaired, an upper bound: the paper's arms are scored on the same problems"


def _paper_effect(diff_a: float, diff_b: float, se: float | None, source: str, noise: str, other: str = "") -> dict:
    """The paper's difference a − b, its z against the unpaired noise ``se`` (:data:`PAPER_NOISE_BOUND`)
    and ``paper_significant``: true when even the bound leaves it outside ±1.96 se, false when it
    is inside the bound (then *not shown*: the paired noise could be smaller), null without a noise."""
    diff = round(diff_a - diff_b, 1)
    z = None if se is None else round(diff / se, 1)
    return {
        "paper_diff": diff,
        "paper_z": z,
        "paper_significant": None if z is None else abs(z) >= 1.96,
        "paper_source": source + (f"; {other}" if other else ""),
        "paper_noise": f"{noise} ({PAPER_NOISE_BOUND})" if noise else noise,
    }


def tables56_effect(pap: tuple, se: float, noise: str) -> dict:
    """:func:`_paper_effect` of a Tables 5/6 ordering (``pap``: :func:`_pb_paper`'s a, b, model and
    the other model's difference), against ProcessBench's item noise ``se``."""
    pa, pb, model, other = pap
    return _paper_effect(
        pa,
        pb,
        se,
        f"Tables 5/6, {model}, ProcessBench avg F1",
        noise,
        f"{'7B' if model == '1.5B' else '1.5B'}: {other:+.1f}" if other is not None else "",
    )


def specs(results_dir: str | Path) -> list[dict]:
    """Every claim the predictions in ``results_dir`` can test, with its two arms' counts, the
    statistic, the strata items are resampled in, and the paper's difference and noise."""
    R = Path(results_dir)
    out = []
    se_pb = round(2**0.5 * P.pb_avg_f1_se(), 2)
    pb_noise = (
        f"item noise of a ProcessBench avg-F1 difference, about ±{se_pb} (delta method on Table 10's "
        f"1.5B rates and the subset sizes; the paper gives no interval or seeds)"
    )
    seg = _read(R, "self_segmentation")
    if seg:
        problems = sorted({p["problem_id"] for p in seg})
        base, chunk = (next(r for r in P.TABLE4 if r["generator"] == f"Qwen2.5-1.5B-{g}") for g in ("it", "chunk"))
        for field, text in (
            ("steps", "self-segmentation gives fewer steps per solution"),
            ("correct", "self-segmentation keeps accuracy"),
        ):
            (ca, ua), (cb, ub) = (
                rate_arm(seg, m, problems, field, "chunk-policy SFT seeds") for m in ("chunk", "base")
            )
            if field == "steps":
                paper = _paper_effect(
                    chunk["steps"],
                    base["steps"],
                    None,
                    "Table 4, 1.5B, steps per solution",
                    "no spread reported; a 3.6-step drop of a 9.6-step mean over 10K prompts is taken as established",
                )
                paper["paper_significant"] = True
                stat, metric = seeds.ratio_stat, "toy steps per solution, chunk policy − base"
            else:
                se = (P.accuracy_se(chunk["avg_acc"], 500) ** 2 + P.accuracy_se(base["avg_acc"], 500) ** 2) ** 0.5
                paper = _paper_effect(
                    chunk["avg_acc"],
                    base["avg_acc"],
                    se,
                    "Table 4, 1.5B, MATH500 Avg@32",
                    f"item noise of a MATH500 accuracy difference, about ±{se:.1f}",
                )
                stat, metric = (
                    seeds.mean_stat,
                    f"toy Avg@k accuracy, chunk policy − base; equivalence within ±{KEEPS_MARGIN:g}",
                )
            out.append(
                _spec(
                    text,
                    "self_segmentation",
                    metric,
                    "chunk",
                    "base",
                    [ca, cb],
                    stat,
                    None,
                    [ua, ub],
                    paper,
                    equivalence=field == "correct",
                )
            )
    jp = _read(R, "judge")
    bad = uninformative_arms(jp)
    if jp:
        tests = [p for p in jp if p["split"] == "test"]
        variants = {p["judge"].split("@")[0] for p in tests if ":" in p["judge"]}
        names = {p["judge"] for p in tests}
        for a, b, (pa_v, pb_v) in _orderings(variants, same_rule=True):
            rule = a.split(":")[1]
            pap = _pb_paper(pa_v, pb_v)
            if pap is None:
                continue
            problems = sorted({p["problem_id"] for p in tests if p["rule"] == rule})
            ra, rb = _runs(names, a), _runs(names, b)
            text = _ordering_text(a, b, 1 if pap[0] - pap[1] > 0 else -1)
            paper = tables56_effect(pap, se_pb, pb_noise)
            # issue 59: a verdict-only judge is also read at a cut of its p(Positive) chosen on dev
            # (judge_runs.threshold_reading), a row that informs where its greedy verdicts collapse
            rt = [f"{r} (dev threshold)" for r in rb if f"{r} (dev threshold)" in names]
            readings = [(text, b, rb, _why(bad, a, b), degenerate_runs(jp, b))]
            if rt and len(rt) == len(rb):
                readings.append(
                    (
                        text + ", the latter read at a threshold of its p(Positive) chosen on dev",
                        f"{b} (dev threshold)",
                        rt,
                        _why(bad, a, ""),
                        None,
                    )
                )
            for claim, b_name, b_runs, why, b_degenerate in readings:
                out.append(
                    _spec(
                        claim,
                        "judges",
                        f"balanced step accuracy, {rule} test chunks (paper: ProcessBench avg F1)",
                        a,
                        b_name,
                        [judge_arm(jp, ra, rule, problems), judge_arm(jp, b_runs, rule, problems)],
                        seeds.balanced_accuracy_stat,
                        None,
                        ["judge training seeds"] * 2,
                        paper,
                        uninformative=why,
                        same_units=False,  # balanced step accuracy against ProcessBench F1
                        degenerate=[degenerate_runs(jp, a), b_degenerate],
                    )
                )
        out += start_rows(jp, tests, variants, bad)
    pbp = _read(R, "processbench")
    if pbp:
        names = {p["judge"] for p in pbp}
        splits = sorted({p["split"] for p in pbp})
        sols = sorted({p["id"] for p in pbp})
        lab = {p["id"]: (p["split"], p["label"] == -1) for p in pbp}
        strata = [f"{lab[i][0]}/{'correct' if lab[i][1] else 'erroneous'}" for i in sols]
        variants = {n.split(" (")[0].split("@")[0] for n in names if ":" in n}
        for a, b, (pa_v, pb_v) in _orderings(variants, same_rule=False):
            pap = _pb_paper(pa_v, pb_v)
            ra, rb = pb_rows(names, a), pb_rows(names, b)
            if pap is None or not ra or not rb:
                continue
            out.append(
                _spec(
                    _ordering_text(a, b, 1 if pap[0] - pap[1] > 0 else -1),
                    "processbench",
                    "toy-ProcessBench avg F1"
                    + (" (dev-chosen thresholds)" if any("dev threshold" in r for r in ra + rb) else ""),
                    a,
                    b,
                    [pb_arm(pbp, ra, splits, sols), pb_arm(pbp, rb, splits, sols)],
                    seeds.f1_stat(len(splits)),
                    strata,
                    ["judge training seeds"] * 2,
                    tables56_effect(pap, se_pb, pb_noise),
                    uninformative=_why(bad, a, b),
                    degenerate=[degenerate_runs(jp, a), degenerate_runs(jp, b)],
                )
            )
    for stem, base_method, table in (
        ("chunk_reset", "chunk policy (no judge)", "7"),
        ("rsft", "outcome-based selection", "8"),
    ):
        rp = _read(R, stem)
        if not rp:
            continue
        problems = sorted({p["problem_id"] for p in rp})
        methods = {p["method"].split("@")[0] for p in rp}
        pairs = []
        if stem == "rsft" and {"outcome-based selection", "chunk policy (greedy, no RS-FT)"} <= methods:
            pairs.append(
                (
                    "RS-FT with outcome-based selection beats the policy before it",
                    "outcome-based selection",
                    "chunk policy (greedy, no RS-FT)",
                    P.TABLE8,
                    ("Outcome-based selection", "-"),
                    ("Qwen2.5-7B-chunk (greedy, no RS-FT)", "-"),
                    "7B",
                )
            )
        for v in sorted(m for m in methods if ":" in m and m.split(":")[0] in ("stepwiser", "disc_sft")):
            kind, rule = v.split(":")
            text = (
                f"chunk-reset with the {kind} judge beats the plain chunk policy ({rule})"
                if stem == "chunk_reset"
                else f"RS-FT data chosen by the {kind} judge beats outcome-based selection ({rule})"
            )
            pairs.append(
                (
                    text,
                    v,
                    base_method,
                    P.TABLE7 if stem == "chunk_reset" else P.TABLE8,
                    (KINDS[kind], rule),
                    ("Qwen2.5-1.5B-chunk (no judge)", "-")
                    if stem == "chunk_reset"
                    else ("Outcome-based selection", "-"),
                    "1.5B" if stem == "chunk_reset" else "7B",
                )
            )
        for text, a, b, tab, (row_a, sig_a), (row_b, sig_b), model in pairs:
            if b not in methods:
                continue
            xa, xb = _table_row(tab, row_a, sig_a, model), _table_row(tab, row_b, sig_b, model)
            se = (
                P.mean_accuracy_se(xa["math500"], xa["heldout"]) ** 2
                + P.mean_accuracy_se(xb["math500"], xb["heldout"]) ** 2
            ) ** 0.5
            (ca, ua), (cb, ub) = rate_arm(rp, a, problems), rate_arm(rp, b, problems)
            # chunk-reset's arms share their sampling seeds (common random numbers): when both arms'
            # units are those seeds, one seed draw serves both, which keeps the pairing
            # (the same seeds, not as many: two runs' files joined can hold other seeds; issue 49)
            same_seeds = {p["seed"] for p in rp if p["method"] == a} == {p["seed"] for p in rp if p["method"] == b}
            crn = stem == "chunk_reset" and ua == ub == "seeds" and same_seeds
            out.append(
                _spec(
                    text,
                    stem,
                    "toy accuracy" + (" (greedy)" if stem == "rsft" else ""),
                    a,
                    b,
                    [ca, cb],
                    seeds.mean_stat,
                    None,
                    [ua if not crn else "sampling seeds (shared)", ub if not crn else "sampling seeds (shared)"],
                    _paper_effect(
                        xa["avg"],
                        xb["avg"],
                        se,
                        f"Table {table}, {model}, avg accuracy",
                        f"item noise of a difference of MATH500/Heldout-1K means, about ±{se:.1f}",
                    ),
                    uninformative=_why(bad, a, b),
                    paired_seeds=crn,
                    degenerate=[degenerate_runs(jp, a), degenerate_runs(jp, b)],
                )
            )
    return out


#: The generative RL judges whose start the table asks about (issue 47: does GRPO beat its start?
#: issue 59: does it beat a fixed rule reading its start's analysis, and keep that analysis?),
#: each with the words for its start.
START_ROWS = {"stepwiser": "the format warm-up", "oracle_rl": "the oracle warm-up (exact re-derivations)"}


def exact_arm(preds: list[dict], run_ids: list[str], rule: str, problems: list[str]) -> np.ndarray:
    """Counts ``(runs, problems, 2)``: per problem, (exact analyses, test chunks) of each run's
    stored analyses (``analysis_exact`` of the predictions; issue 59)."""
    idx = {q: i for i, q in enumerate(problems)}
    out = np.zeros((len(run_ids), len(problems), 2))
    for s, run in enumerate(run_ids):
        for p in preds:
            if p["judge"] == run and p["rule"] == rule and p["split"] == "test":
                out[s, idx[p["problem_id"]]] += (bool(p.get("analysis_exact")), 1)
    return out


def start_rows(jp: list[dict], tests: list[dict], variants: set[str], bad: dict) -> list[dict]:
    """The rows of ours alone (:data:`NOT_A_PAPER_ROW`, decided by the same Holm family) about what
    RL adds to its start, for every variant of :data:`START_ROWS` whose start is in the predictions:
    RL against the start (issue 47); RL against a fixed rule reading the start's own analysis, and
    the share of exact analyses after RL against the start's, chunk by chunk (issue 59); and, where
    both generative arms ran, the oracle warm-up's arm against the oracle-free one."""
    out = []
    names = {p["judge"] for p in tests}
    for v in sorted(x for x in variants if x.split(":")[0] in START_ROWS):
        kind, rule = v.split(":")
        start, rname = start_of(kind), RULES_NAME.get(rule, rule)
        problems = sorted({p["problem_id"] for p in tests if p["rule"] == rule})
        has = lambda name: any(p["judge"] == name and p["rule"] == rule for p in tests)  # noqa: B023, E731
        if not has(start):
            continue
        runs = _runs(names, v)
        arm = judge_arm(jp, runs, rule, problems)
        common = dict(uninformative=_why(bad, v, ""), degenerate=[degenerate_runs(jp, v), None])
        metric = f"balanced step accuracy, {rule} test chunks"
        out.append(
            _spec(
                f"GRPO beats the judge it starts from, {START_ROWS[kind]} ({rname})",
                "judges",
                metric,
                v,
                start,
                [arm, judge_arm(jp, [start], rule, problems)],
                seeds.balanced_accuracy_stat,
                None,
                ["judge training seeds", "the one warm-up"],
                NOT_A_PAPER_ROW,
                **common,
            )
        )
        ref = rule_name(start)
        if has(ref):
            out.append(
                _spec(
                    f"GRPO beats a fixed rule reading the analysis of its start, {START_ROWS[kind]} ({rname})",
                    "judges",
                    metric,
                    v,
                    ref,
                    [arm, judge_arm(jp, [ref], rule, problems)],
                    seeds.balanced_accuracy_stat,
                    None,
                    ["judge training seeds", "the one warm-up"],
                    NOT_A_PAPER_ROW,
                    **common,
                )
            )
        mine = [p for p in tests if p["judge"] in runs and p["rule"] == rule]
        theirs = [p for p in tests if p["judge"] == start and p["rule"] == rule]
        if mine and theirs and all(p.get("analysis_exact") is not None for p in mine + theirs):
            out.append(
                _spec(
                    f"after GRPO the analysis is the exact re-derivation as often as at its start, {START_ROWS[kind]} ({rname})",
                    "judges",
                    f"% of {rule} test chunks whose analysis is the exact re-derivation, after RL − its start",
                    v,
                    start,
                    [exact_arm(jp, runs, rule, problems), exact_arm(jp, [start], rule, problems)],
                    seeds.mean_stat,
                    None,
                    ["judge training seeds", "the one warm-up"],
                    NOT_A_PAPER_ROW,
                    **common,
                )
            )
    for rule in RULES:
        a, b = f"oracle_rl:{rule}", f"stepwiser:{rule}"
        if a in variants and b in variants:
            problems = sorted({p["problem_id"] for p in tests if p["rule"] == rule})
            out.append(
                _spec(
                    f"a warm-up on exact re-derivations (an oracle) trains a better judge than the oracle-free one "
                    f"({RULES_NAME.get(rule, rule)})",
                    "judges",
                    f"balanced step accuracy, {rule} test chunks",
                    a,
                    b,
                    [judge_arm(jp, _runs(names, a), rule, problems), judge_arm(jp, _runs(names, b), rule, problems)],
                    seeds.balanced_accuracy_stat,
                    None,
                    ["judge training seeds"] * 2,
                    NOT_A_PAPER_ROW,
                    uninformative=_why(bad, a, b),
                    degenerate=[degenerate_runs(jp, a), degenerate_runs(jp, b)],
                )
            )
    return out


def _table_row(tab: list[dict], row: str, signal: str, model: str) -> dict:
    """A Table 7 or 8 row (Table 8 has only 7B rows, without a model field)."""
    return next(r for r in tab if r["row"] == row and r["signal"] == signal and r.get("model", "7B") == model)


def _why(bad: dict, a: str, b: str) -> str | None:
    why = [f"{v}: {bad[v]}" for v in (a, b) if v in bad]
    return "; ".join(why) or None


def table(results_dir: str | Path, n_boot: int = seeds.N_BOOT, seed: int = 0) -> list[dict]:
    """The claims table of ``results_dir`` (:func:`specs`), one record per claim with
    :data:`CLAIM_FIELDS` and more: our a − b (each arm the mean over its seeds) with its 95%
    interval and two-sided p from the variance components (between seeds, seed × item, items:
    :func:`stepwiser_lib.evals.seeds.components`) and a Satterthwaite t
    (:func:`stepwiser_lib.evals.seeds.t_interval`; issue 47: the percentile bootstrap of five
    seeds was too narrow where seeds dominate), the percentile bootstrap's interval beside it
    (``boot_ci``), the seeds of each arm and how many of a judge arm's runs are degenerate
    (``degenerate``: Positive rate outside :data:`POSITIVE_RATE_RANGE`), the TOST p for an
    equivalence claim within ±:data:`KEEPS_MARGIN`, Holm's adjustment over every informative row,
    ``direction`` (the Holm-adjusted result against the paper's sign: same / opposite /
    undetermined; "–" for an equivalence claim), ``size`` (is ours smaller than the paper's
    effect? one-sided p, Holm over the rows that ask it; only where both are in the same units)
    and ``verdict``:

    - *undefined*: the statistic has no value on these items (e.g. a class missing); decides nothing;
    - *uninformative*: an arm never left its start (:func:`uninformative_arms`); decides nothing;
    - *equivalent* / *not shown equivalent*: a "keeps" claim, by its Holm-adjusted TOST p;
    - *same direction* / *opposite direction*: Holm-adjusted p below :data:`ALPHA`, by sign against
      the paper's difference;
    - *paper effect not shown*: ours decides nothing and the paper's own difference is inside an
      upper bound on its noise (``paper_significant`` false; :data:`PAPER_NOISE_BOUND`): whether
      the paper has an effect to reproduce is not known; ours is still reported;
    - *smaller than the paper's*: no direction, but ours is smaller than the paper's effect
      (Holm-adjusted one-sided p below :data:`ALPHA`, same units only);
    - *undetermined*: otherwise;
    - *a higher* / *b higher*: a row the paper has no number for (GRPO against its own start),
      Holm-adjusted p below :data:`ALPHA`.
    """
    out = []
    for k, s in enumerate(specs(results_dir)):
        args = (*s["arms"], s["stat"], s["strata"])
        d = seeds.difference(*args, n_boot=n_boot, seed=seed + k, paired_seeds=s["paired_seeds"])
        d.pop("reps")
        c = seeds.components(*args, n_boot=n_boot, seed=seed + k, paired_seeds=s["paired_seeds"])
        t = seeds.t_interval(d["estimate"], c["se"], c["df"])
        pd = s["paper"]["paper_diff"]
        sign = 0 if pd is None else 1 if pd > 0 else -1 if pd < 0 else 0
        df = "inf" if not np.isfinite(c["df"]) else f"{c['df']:.1f}"
        rec = {
            "claim": s["claim"],
            **s["paper"],
            "estimate": d["estimate"],
            "ci_low": t["ci_low"],
            "ci_high": t["ci_high"],
            "se": round(c["se"], 3),
            "df": round(c["df"], 2) if np.isfinite(c["df"]) else None,
            "boot_ci": [d["ci_low"], d["ci_high"]],
            "seeds": {s["a"]: d["seeds"][0], s["b"]: d["seeds"][1]},
            "seed_units": {s["a"]: s["units"][0], s["b"]: s["units"][1]},
            "degenerate": {
                v: (list(x) if x else None) for v, x in zip((s["a"], s["b"]), s["degenerate"] or [None, None])
            },
            "items": d["items"],
            "p": t["p"],
            "test": (
                f"t on variance components (seeds, seed × items, items; Satterthwaite df {df}); "
                f"items from a {n_boot}-replicate bootstrap"
            ),
            "metric": s["metric"],
            "file": s["file"],
            "a": s["a"],
            "b": s["b"],
            "same_units": s["same_units"],
            "uninformative": s["uninformative"],
        }
        if not (np.isfinite(d["estimate"]) and np.isfinite(c["se"])):
            # a statistic undefined on these items (balanced accuracy with a class absent from the
            # test chunks, an F1 with no erroneous solution): no interval, no p, no verdict (issue 49)
            rec.update(
                estimate=None,
                ci_low=None,
                ci_high=None,
                se=None,
                p=None,
                boot_ci=[None, None],
                undefined="the statistic is undefined on these items (a class missing from them?)",
            )
        elif s["equivalence"]:
            e = seeds.tost_t(d["estimate"], c["se"], c["df"], KEEPS_MARGIN)
            rec.update(p=e["p"], test=f"TOST within ±{KEEPS_MARGIN:g} on the {rec['test']}", equivalence=e)
        elif s["same_units"] and sign and rec["paper_significant"] is not False:
            rec["p_smaller"] = seeds.smaller_p(d["estimate"], c["se"], c["df"], s["paper"]["paper_diff"])
        out.append(rec)
    family = [i for i, r in enumerate(out) if not r["uninformative"] and not r.get("undefined")]
    adj = seeds.holm([out[i]["p"] for i in family]) if family else []
    for r in out:
        r["p_holm"] = None
    for i, a in zip(family, adj):
        out[i]["p_holm"] = round(a, 5)
    sizes = [i for i in family if "p_smaller" in out[i]]
    for i, a in zip(sizes, seeds.holm([out[i]["p_smaller"] for i in sizes]) if sizes else []):
        out[i]["p_smaller_holm"] = round(a, 5)
    for r in out:
        r["direction"] = direction(r)
        r["size"] = size(r)
        r["verdict"] = verdict(r)
    return out


def direction(r: dict) -> str:
    """The Holm-adjusted result against the paper's sign: *same* / *opposite* when ``p_holm`` is
    below :data:`ALPHA`, else *undetermined*; "–" for an equivalence claim, an uninformative row or
    a row the paper has no number for."""
    if r["uninformative"] or r.get("undefined") or "equivalence" in r or r["p_holm"] is None or r["paper_diff"] is None:
        return "–"
    if r["p_holm"] >= ALPHA or not r["paper_diff"]:
        return "undetermined"
    return "same" if (r["estimate"] > 0) == (r["paper_diff"] > 0) else "opposite"


def size(r: dict) -> str:
    """Ours against the paper's effect size: *smaller* when the Holm-adjusted one-sided p
    (``p_smaller_holm``) is below :data:`ALPHA`, *not shown smaller* otherwise, *units differ*
    where the two metrics are not the same, "–" where nothing is asked (the paper's effect not
    shown, equivalence, uninformative)."""
    if r.get("undefined"):
        return "–"
    if "p_smaller_holm" in r:
        return "smaller" if r["p_smaller_holm"] < ALPHA else "not shown smaller"
    if not r.get("same_units", True) and not r["uninformative"] and r["paper_significant"] is not False:
        return "units differ"
    return "–"


def verdict(r: dict) -> str:
    """A claim record's verdict (see :func:`table`)."""
    if r.get("undefined"):
        return "undefined"
    if r["uninformative"]:
        return "uninformative"
    if "equivalence" in r:
        return "equivalent" if r["p_holm"] < ALPHA else "not shown equivalent"
    if r["paper_diff"] is None:  # ours alone
        return ("a higher" if r["estimate"] > 0 else "b higher") if r["p_holm"] < ALPHA else "undetermined"
    if r["p_holm"] < ALPHA and r["paper_diff"]:
        same = (r["estimate"] > 0) == (r["paper_diff"] > 0)
        return "same direction" if same else "opposite direction"
    if r["paper_significant"] is False:
        return "paper effect not shown"
    if r.get("p_smaller_holm") is not None and r["p_smaller_holm"] < ALPHA:
        return "smaller than the paper's"
    return "undetermined"


def write(results_dir: str | Path, profile: str, n_boot: int = seeds.N_BOOT) -> dict:
    """``results_dir/claims.json``: :func:`table`'s records with how they were computed."""
    rows_ = table(results_dir, n_boot)
    doc = {
        "profile": profile,
        "n_boot": n_boot,
        "alpha": ALPHA,
        "keeps_margin": KEEPS_MARGIN,
        "degenerate_share": DEGENERATE_SHARE,
        "positive_rate_range": list(POSITIVE_RATE_RANGE),
        "method": (
            "t interval on unbiased variance components: each arm's variance over its seeds (between seeds "
            "and seed × item) plus the items' share of the paired difference, from an item-only bootstrap "
            "(problems; toy-ProcessBench solutions within split and erroneous/correct group; one draw shared "
            "by both arms); Satterthwaite degrees of freedom; p two-sided; Holm over every informative row; "
            "the percentile interval of the hierarchical bootstrap (seeds, then items) kept as boot_ci"
        ),
        "scope": (
            "conditional on one pipeline: the seeds are the judges' (or notebook 01's chunk policy's) "
            "training seeds; the chunk policy, the Monte-Carlo labels, the judge splits and the format "
            "warm-ups are one draw, shared by every run"
        ),
        "claims": rows_,
    }
    io.write_json(Path(results_dir) / "claims.json", doc)
    return doc


def single_seed(doc: dict) -> bool:
    """Whether every trained arm of a ``claims.json`` document is one training run (tiny): its
    intervals then resample problems (and sampling seeds) only, so a verdict is about that run."""
    trained = [
        n
        for r in doc["claims"]
        for v, n in r["seeds"].items()
        if "training" in r["seed_units"][v] or "SFT" in r["seed_units"][v]
    ]
    return not trained or max(trained) <= 1


VERDICT_ORDER = (
    "a higher",
    "b higher",
    "same direction",
    "opposite direction",
    "smaller than the paper's",
    "undetermined",
    "paper effect not shown",
    "equivalent",
    "not shown equivalent",
    "uninformative",
    "undefined",
)

#: What each verdict of :func:`verdict` means, in one line: the one vocabulary of every place that
#: states a claim's finding (the results pages, and each notebook's closing lines,
#: :func:`stepwiser_lib.tools.teaching.closing_lines`). Keyed by :data:`VERDICT_ORDER`.
VERDICT_MEANING = {
    "a higher": (
        f"a row the paper has no number for: the first arm is higher, beyond this run's noise (Holm-adjusted p < {ALPHA:g})"
    ),
    "b higher": (
        f"a row the paper has no number for: the second arm is higher, beyond this run's noise "
        f"(Holm-adjusted p < {ALPHA:g})"
    ),
    "same direction": f"our difference has the paper's sign, beyond this run's noise (Holm-adjusted p < {ALPHA:g})",
    "opposite direction": f"our difference has the other sign, beyond this run's noise (Holm-adjusted p < {ALPHA:g})",
    "smaller than the paper's": (
        "no direction is shown, but ours is shown smaller than the paper's difference (one-sided test, Holm-adjusted; "
        "same units only)"
    ),
    "undetermined": "this run does not tell: no direction is shown (Holm-adjusted), nor a smaller effect where that is asked",
    "paper effect not shown": (
        "ours decides nothing, and the paper's own difference is within an upper bound on its noise: whether "
        "there is an effect to reproduce is not known"
    ),
    "equivalent": f"a 'keeps' claim shown: the difference is within ±{KEEPS_MARGIN:g} points (TOST, Holm-adjusted)",
    "not shown equivalent": (
        f"a 'keeps' claim not shown: a change of ±{KEEPS_MARGIN:g} points is not ruled out (TOST); this is not "
        "evidence of a difference either"
    ),
    "uninformative": "an arm never left its start (a degenerate judge), so the comparison asks nothing of its training",
    "undefined": "the statistic has no value on these items (a class missing), so it decides nothing",
}


def summary_line(doc: dict) -> str:
    """The verdicts of a ``claims.json`` document counted, and what its seeds are: the sentence
    above its table, filled from the file."""
    from collections import Counter

    rows_ = doc["claims"]
    n = Counter(r["verdict"] for r in rows_)
    seeds_ = sorted({v for r in rows_ for v in r["seeds"].values()})
    head = (
        "**Single-seed table**: every trained arm is one training run, so each interval resamples problems "
        "(and sampling seeds) only and a verdict is about this run, not the method; the seeded table is "
        "toy-full's. "
        if single_seed(doc)
        else ""
    )
    degen = [
        f"{v} {x[0]} of {x[1]}"
        for v, x in {v: x for r in rows_ for v, x in (r.get("degenerate") or {}).items() if x}.items()
    ]
    return (
        head
        + f"{len(rows_)} claims: "
        + ", ".join(f"{n[v]} *{v}*" for v in VERDICT_ORDER if n[v])
        + f". Seeds per arm: {', '.join(map(str, seeds_))}: each row's `seeds a / b` are training seeds (a judge's, or "
        "notebook 01's chunk-policy SFT seeds), or the sampling seeds of an arm nothing was trained for. "
        "The chunk policy, the Monte-Carlo labels, the judge splits and the format warm-ups are one draw shared by "
        "every run, so the intervals hold for this pipeline. "
        + (
            "Degenerate judge runs (Positive rate outside "
            f"{doc.get('positive_rate_range', list(POSITIVE_RATE_RANGE))[0]:g}-"
            f"{doc.get('positive_rate_range', list(POSITIVE_RATE_RANGE))[1]:g}% of the test chunks): "
            + ", ".join(degen)
            + ". "
            if degen
            else ""
        )
        + f"Intervals: t on variance components, items from {doc['n_boot']} bootstrap replicates; "
        f"Holm over the informative rows at α = {doc['alpha']}."
    )


def _degen(r: dict) -> str:
    d = r.get("degenerate") or {}
    return " / ".join("–" if not d.get(v) else f"{d[v][0]} of {d[v][1]}" for v in (r["a"], r["b"]))


def _fmt_p(p: float) -> str:
    """A p-value for the table: three significant digits, and ``<0.0001`` below what the stored
    four decimals resolve (never a bare 0)."""
    return "<0.0001" if p < 1e-4 else f"{p:.3g}"


def table_markdown(doc: dict | None) -> list[str]:
    """The claims table of a ``claims.json`` document as Markdown lines (empty without claims)."""
    if not doc or not doc.get("claims"):
        return []
    lines = [
        summary_line(doc),
        "",
        (
            "| paper claim | paper: a − b (z; outside its noise?) | where | ours: a − b [95%] | seeds a / b | "
            "degenerate runs a / b | p | p (Holm) | direction (Holm) | against the paper's size | verdict |"
        ),
        "|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for r in doc["claims"]:
        z = "no interval" if r["paper_z"] is None else f"z {r['paper_z']:+.1f}"
        sig = {True: "yes", False: "no", None: "?"}[r["paper_significant"]]
        seeds_ = " / ".join(str(v) for v in r["seeds"].values())
        ph = "–" if r["p_holm"] is None else _fmt_p(r["p_holm"])
        ours = (
            "undefined" if r["estimate"] is None else f"{r['estimate']:+.1f} [{r['ci_low']:+.1f}, {r['ci_high']:+.1f}]"
        )
        paper = "–" if r["paper_diff"] is None else f"{r['paper_diff']:+.1f} ({z}; {sig})"
        lines.append(
            f"| {r['claim']} | {paper} | {r['paper_source']}; ours: {r['metric']} | "
            f"{ours} | {seeds_} | {_degen(r)} | "
            f"{'–' if r['p'] is None else _fmt_p(r['p'])} | {ph} | {r.get('direction', '–')} | {r.get('size', '–')} | **{r['verdict']}** |"
        )
    return lines


def main(argv: list[str] | None = None) -> int:
    """``python -m stepwiser_lib.evals.claims --profile P``: write ``results/P/claims.json``."""
    import argparse

    ap = argparse.ArgumentParser(description=main.__doc__)
    ap.add_argument("--profile", required=True)
    ap.add_argument("--results", default=None, help="results folder (default: results/<profile>)")
    ap.add_argument("--n-boot", type=int, default=seeds.N_BOOT)
    a = ap.parse_args(argv)
    res = Path(a.results) if a.results else paths.output_root() / "results" / a.profile
    doc = write(res, a.profile, a.n_boot)
    for r in doc["claims"]:
        ours = (
            "undefined"
            if r["estimate"] is None
            else f"{r['estimate']:+6.1f} [{r['ci_low']:+6.1f}, {r['ci_high']:+6.1f}]"
        )
        print(f"{r['verdict']:22s} {ours}  {r['claim']}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
