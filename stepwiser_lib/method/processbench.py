"""Stage 5: ProcessBench (Zheng et al. 2024, arXiv 2412.06559), notebook 05 (its paper §3, §4.1).

* :func:`load_split` reads the HF dataset ``Qwen/ProcessBench`` (four splits) or a local folder of
  ``{gsm8k,math,olympiadbench,omnimath}.jsonl`` (``STEPWISER_PROCESSBENCH_DIR``), validating every
  record with an error that names split, line and field, and warning when the error/correct
  counts differ from the paper's.
* :func:`score` is the official metric: exact match of the first-error index, accuracy on
  erroneous (label != -1) and on correct (label == -1) samples, and their harmonic mean ("F1").
  The benchmark score is the plain mean of the four split F1s (:func:`average_f1`).
* :func:`judge_solutions` runs a stepwise judge with the first-error protocol (ProcessBench paper
  §4.1's rule for binary PRMs; the StepWiser paper does not state its step protocol);
  :func:`best_threshold` is ProcessBench's rule for scalar-score PRMs.
* :func:`load_toy`: toy-ProcessBench, the same schema on toy problems with exact first-error labels
  (built by :mod:`stepwiser_lib.toy.processbench_build`, ``make toy-processbench``).
"""

from __future__ import annotations

import json
import os
import sys
import warnings
from pathlib import Path

from ..core import inputs, io, paths, shards
from ..core.config import ConfigError
from ..core.io import RecordError, iter_jsonl, markdown_table
from ..core.paths import ROOT
from ..core.schemas import (
    TOY_DEV_SPLIT,
    TOY_DIR_DEFAULT,
    TOY_SPLITS,
    ProcessBenchError,
    validate_record,
)
from ..core.verdicts import (
    RULE_VERSION,
    describe,
    informative,
    mask,
    tally,
    uninformative_comparison,
)
from ..core.vocab import variant_slug
from ..evals.claims import judge_orderings
from ..evals.paper_results import paper_row
from ..evals.stats import stratified_bootstrap, stratified_difference
from . import judge, judge_runs, tasks
from .calculator import predict
from .judge import stored_entry

SPLITS = ("gsm8k", "math", "olympiadbench", "omnimath")
#: (error, correct) counts per split, ProcessBench paper Table 1.
EXPECTED_COUNTS = {"gsm8k": (207, 193), "math": (594, 406), "olympiadbench": (661, 339), "omnimath": (759, 241)}
HF_DATASET = "Qwen/ProcessBench"
#: The hub revision users should pin (main later changed math.json: commit 3bdcd53, "fix annotation").
HF_REVISION = "main"


#: The committed fixture (``data/fixtures/processbench``, :mod:`stepwiser_lib.tools.data`): of each
#: split, the first this many erroneous and the first this many correct records, in file order. So
#: :func:`subset` at any ``LIMIT`` up to twice this picks the same solutions from it as from the full split.
FIXTURE_PER_GROUP = 12


def local_folder(local_dir: str | Path) -> Path:
    """``local_dir`` as a folder: a relative one that is not there from the current folder is
    taken from the repository (profiles name ``data/fixtures/processbench``)."""
    p = Path(local_dir)
    return ROOT / p if not p.is_absolute() and not p.exists() and (ROOT / p).exists() else p


def is_fixture(local_dir: str | Path | None) -> bool:
    """Is ``local_dir`` the committed fixture folder (a few dozen records per split)?"""
    return bool(local_dir) and local_folder(local_dir).resolve() == (paths.FIXTURES_DIR / "processbench").resolve()


def check_counts(split: str, records: list[dict], fixture: bool = False) -> tuple[int, int]:
    """(erroneous, correct) of a split, with a warning when they differ from the paper's Table 1
    (``fixture``: from the committed fixture's :data:`FIXTURE_PER_GROUP` each)."""
    err = sum(r["label"] != -1 for r in records)
    cor = len(records) - err
    exp = (FIXTURE_PER_GROUP, FIXTURE_PER_GROUP) if fixture else EXPECTED_COUNTS.get(split)
    if exp and (err, cor) != exp:
        has = "the committed fixture has" if fixture else "the paper has"
        warnings.warn(
            f"ProcessBench {split}: {err} erroneous / {cor} correct samples, {has} "
            f"{exp[0]} / {exp[1]} (another data version?)",
            stacklevel=2,
        )
    return err, cor


def load_split(
    split: str, local_dir: str | None = None, fix_math_688: bool = False, revision: str = HF_REVISION
) -> list[dict]:
    """Records of one split, validated. ``local_dir`` (or ``STEPWISER_PROCESSBENCH_DIR``) points
    to the JSONL files (``data/full/processbench`` after ``make data``, or the committed fixture
    ``data/fixtures/processbench``); otherwise the HF hub dataset is used. ``fix_math_688`` applies the
    correction reported in QwenLM/ProcessBench#9 (label 2 -> 0; the counts do not change)."""
    if split not in SPLITS:
        raise ProcessBenchError(f"unknown ProcessBench split {split!r}; valid: {', '.join(SPLITS)}")
    local_dir = local_dir or os.environ.get("STEPWISER_PROCESSBENCH_DIR") or None
    recs = []
    if local_dir:
        path = local_folder(local_dir) / f"{split}.jsonl"
        if not path.exists():
            raise FileNotFoundError(f"{path} not found (STEPWISER_PROCESSBENCH_DIR={local_dir})")
        try:
            recs = [validate_record(rec, split, n) for n, rec in iter_jsonl(path, f"ProcessBench {split}")]
        except RecordError as e:
            raise ProcessBenchError(str(e)) from None
    else:  # pragma: no cover - needs the hub
        from datasets import load_dataset

        ds = load_dataset(HF_DATASET, split=split, revision=revision)
        recs = [validate_record(dict(r), split, i + 1) for i, r in enumerate(ds)]
    seen: dict[str, int] = {}
    for i, r in enumerate(recs, 1):
        if r["id"] in seen:
            raise ProcessBenchError(
                f"ProcessBench {split}: id {r['id']!r} appears twice (records {seen[r['id']]} and {i})"
            )
        seen[r["id"]] = i
    if fix_math_688:
        for r in recs:
            if r["id"] == "math-688":
                r["label"] = 0
    check_counts(split, recs, fixture=is_fixture(local_dir))
    return recs


def first_error_index(verdicts: list) -> int | None:
    """Prediction of a stepwise judge: index of the first step judged Negative (False or
    "Negative"), -1 when every step is Positive, and None when a step before any Negative got no
    verdict (:data:`stepwiser_lib.core.verdicts.RULE`: the solution has no prediction, which matches
    neither an error index nor -1, as ProcessBench scores an unparsable critic)."""
    for i, v in enumerate(verdicts):
        if v is None:
            return None
        if v is False or v == "Negative":
            return i
    return -1


def score(labels: list[int], predictions: list[int | None]) -> dict:
    """Official ProcessBench metric, in percent: a sample matches only if prediction == label;
    ``error_acc`` over label != -1, ``correct_acc`` over label == -1, ``f1`` their harmonic mean
    (0 when both are 0). None (unparseable) never matches; an empty group scores 0."""
    if len(labels) != len(predictions):
        raise ValueError("labels and predictions differ in length")
    if not labels:
        raise ValueError("ProcessBench score of no samples is undefined")
    err = [p == y for y, p in zip(labels, predictions) if y != -1]
    cor = [p == y for y, p in zip(labels, predictions) if y == -1]
    ea = 100.0 * sum(err) / len(err) if err else 0.0
    ca = 100.0 * sum(cor) / len(cor) if cor else 0.0
    f1 = 2 * ea * ca / (ea + ca) if ea + ca > 0 else 0.0
    return {"error_acc": ea, "correct_acc": ca, "f1": f1, "n_error": len(err), "n_correct": len(cor)}


def average_f1(per_split: dict[str, dict]) -> float:
    """The benchmark score: plain (unweighted) mean of the split F1s (ProcessBench paper Table 3)."""
    return sum(s["f1"] for s in per_split.values()) / len(per_split)


def subset(records: list[dict], n: int) -> list[dict]:
    """At most ``n`` records with the error/correct proportion kept as close to 50/50 as the
    data allow: the first ``n // 2`` of each group in file order (deterministic). The metric is
    per-group accuracy, so sub-sampling within groups leaves it unbiased. ``n = 0``: all."""
    if not n or n >= len(records):
        return list(records)
    err = [r for r in records if r["label"] != -1]
    cor = [r for r in records if r["label"] == -1]
    k_cor = min(len(cor), n // 2)
    k_err = min(len(err), n - k_cor)
    keep = {id(r) for r in err[:k_err] + cor[:k_cor]}
    return [r for r in records if id(r) in keep]


# ----------------------------------------------------------------------------- protocol


def threshold_predictions(
    step_scores: list[list[float]], threshold: float, silent: list[list[bool]] | None = None
) -> list[int | None]:
    """Scalar-score PRM protocol: a step scoring below ``threshold`` is predicted wrong; the
    prediction is the first such step, else -1 (ProcessBench paper §4.1). ``silent`` marks steps
    none of whose samples gave a parsable verdict (score 0 only because nothing parsed): reached
    before any flagged step, such a step leaves the solution without a prediction (None), as in the
    verdict protocol (:func:`first_error_index`, :data:`stepwiser_lib.core.verdicts.RULE`)."""
    out = []
    for n, ss in enumerate(step_scores):
        first = next((i for i, s in enumerate(ss) if s < threshold), -1)
        quiet = next((i for i, q in enumerate(silent[n]) if q), None) if silent else None
        out.append(None if quiet is not None and (first == -1 or quiet <= first) else first)
    return out


def best_threshold(
    labels: list[int],
    step_scores: list[list[float]],
    candidates: list[float] | None = None,
    silent: list[list[bool]] | None = None,
) -> tuple[float, float]:
    """``(threshold, f1)`` with the highest F1 on one split (ProcessBench's rule: chosen on
    GSM8K, then applied to every split). Ties go to the smallest threshold."""
    if candidates is None:
        vals = sorted({round(s, 6) for ss in step_scores for s in ss})
        candidates = [0.0] + [v + 1e-6 for v in vals]
    best = (0.5, -1.0)
    for t in candidates:
        f = score(labels, threshold_predictions(step_scores, t, silent))["f1"]
        if f > best[1] + 1e-12:
            best = (t, f)
    return best


def judge_solutions(
    judge,
    records: list[dict],
    stop_at_first_negative: bool = True,
    k: int = 1,
    seed: int = 0,
    progress: bool = True,
    stop_at_zero_score: bool = False,
    temperature: float | None = None,
    probs: bool = False,
) -> list[dict]:
    """Run a stepwise judge over ProcessBench-style records (ProcessBench paper §4.1's rule
    for binary PRMs; the StepWiser paper does not state its step protocol).

    Step ``i`` is judged with history ``steps[:i]``. Solutions advance together, one step index
    per round, so every round is one batched judge call. With ``stop_at_first_negative`` a
    solution stops at its first Negative, or at its first step without a parsable verdict
    (:func:`first_error_index`: its prediction cannot change after either). With
    ``stop_at_zero_score`` (for a score thresholded afterwards, :func:`thresholded`) a solution
    stops after a step whose score is 0, the lowest there is: every threshold that flags any step
    flags that one, so what follows it cannot change a thresholded prediction (at Maj@4 on
    toy-full this skips about a quarter of the steps). ``temperature``: of the ``k`` samples
    (None: the judge's default, greedy for one and 1.0 for more). Returns, per record:
    ``prediction`` (:func:`first_error_index`: first Negative, else -1, None after a step without a
    verdict), ``verdicts``, ``scores``, ``analyses`` and ``n_unparsed`` of the judged steps; with
    ``probs`` (a generative judge) also ``p_positive``, its verdict's p(Positive) after its own
    analysis (:meth:`stepwiser_lib.method.judge.Judge.verdict_probs`; None without a box): the
    scalar score a threshold chosen on the dev split reads (issue 35).
    """
    from tqdm.auto import tqdm

    probs = probs and hasattr(judge, "verdict_probs")
    out = [
        {
            "prediction": -1,
            "verdicts": [],
            "scores": [],
            "analyses": [],
            "n_unparsed": [],
            **({"p_positive": []} if probs else {}),
        }
        for _ in records
    ]
    active = list(range(len(records)))
    depth = max((len(r["steps"]) for r in records), default=0)
    bar = tqdm(total=sum(len(r["steps"]) for r in records), desc="judging steps", disable=not progress)
    for i in range(depth):
        todo = [j for j in active if i < len(records[j]["steps"])]
        if not todo:
            break
        triples = [(records[j]["problem"], records[j]["steps"][:i], records[j]["steps"][i]) for j in todo]
        res = judge.judge(
            triples, k=k, seed=seed + i, **({"temperature": temperature} if temperature is not None else {})
        )
        if probs:
            for j, p in zip(todo, judge.verdict_probs(triples, [r["analysis"] for r in res])):
                out[j]["p_positive"].append(p)
        for j, r in zip(todo, res):
            o = out[j]
            o["verdicts"].append(r["verdict"])
            o["scores"].append(r["score"])
            o["analyses"].append(r["analysis"])
            o["n_unparsed"].append(int(r.get("n_unparsed", 0)))
        bar.update(len(todo))
        if stop_at_first_negative or stop_at_zero_score:
            neg = {
                j
                for j, r in zip(todo, res)
                if (stop_at_first_negative and r["verdict"] in ("Negative", None))
                or (stop_at_zero_score and r["score"] == 0)
            }
            bar.update(sum(len(records[j]["steps"]) - i - 1 for j in neg))
            active = [j for j in active if j not in neg]
    bar.close()
    for o in out:
        o["prediction"] = first_error_index(o["verdicts"])
    return out


def error_kinds(labels: list[int], predictions: list[int | None]) -> dict[str, int]:
    """Where a judge errs: exact, too early, too late, missed (error predicted -1), false alarm
    (a correct solution flagged), no verdict (a step before any Negative did not parse: no
    prediction, :func:`first_error_index`)."""
    c = {"exact": 0, "too_early": 0, "too_late": 0, "missed": 0, "false_alarm": 0, "no_verdict": 0}
    for y, p in zip(labels, predictions):
        if p is None:
            c["no_verdict"] += 1
        elif p == y:
            c["exact"] += 1
        elif y == -1:
            c["false_alarm"] += 1
        elif p == -1:
            c["missed"] += 1
        else:
            c["too_early" if p < y else "too_late"] += 1
    return c


def load_toy(split: str, toy_dir: str | None = None) -> list[dict]:
    """A toy-ProcessBench split (one of the four reported ones, or the dev split
    :data:`~stepwiser_lib.core.schemas.TOY_DEV_SPLIT`), validated like the real one."""
    if split not in (*TOY_SPLITS, TOY_DEV_SPLIT):
        raise ProcessBenchError(
            f"unknown toy-ProcessBench split {split!r}; valid: {', '.join((*TOY_SPLITS, TOY_DEV_SPLIT))}"
        )
    d = Path(toy_dir) if toy_dir else ROOT / TOY_DIR_DEFAULT
    path = d / f"{split}.jsonl"
    if not path.exists():
        raise FileNotFoundError(f"{path} not found: build it with `make toy-processbench`")
    try:
        return [validate_record(rec, split, n) for n, rec in iter_jsonl(path, f"toy-ProcessBench {split}")]
    except RecordError as e:
        raise ProcessBenchError(str(e)) from None


def prediction_records(judge: str, bench: dict[str, list[dict]], predictions: dict[str, list[int]]) -> list[dict]:
    """One record per solution (``results/<profile>/processbench_predictions.jsonl``): ``judge``,
    ``split``, ``id``, ``label`` (the true first-error step, -1 for a correct solution) and
    ``prediction`` (the judge's first Negative step, -1 for none, null when a step before any
    Negative got no parsable verdict: :func:`first_error_index`), so every F1 can be recomputed."""
    out = []
    for split, recs in bench.items():
        if len(predictions[split]) != len(recs):
            raise ValueError(f"{judge}: {len(predictions[split])} predictions for {len(recs)} {split} solutions")
        out += [
            {
                "judge": judge,
                "split": split,
                "id": r["id"],
                "label": r["label"],
                "prediction": None if p is None else int(p),
            }
            for r, p in zip(recs, predictions[split])
        ]
    return out


def compare_avg_f1(
    labels: dict[str, list[int]], a: dict[str, list[int]], b: dict[str, list[int]], n_boot: int = 2000, seed: int = 0
) -> dict:
    """Two judges' :func:`average_f1` on the same solutions, paired: the difference a - b (points)
    with its 95% interval and p-value, both judges scored on each replicate of solutions resampled
    within every split and its erroneous and correct groups (as :func:`average_f1_ci`).
    ``verdict``: ``a higher`` / ``b higher`` when the interval excludes zero, else ``undetermined`` (the claims table's word).
    [not in paper]"""
    splits = list(labels)
    items = [(s, y, pa, pb) for s in splits for y, pa, pb in zip(labels[s], a[s], b[s], strict=True)]

    def stat(which):
        def f(idx):
            by = {s: ([], []) for s in splits}
            for i in idx:
                by[items[i][0]][0].append(items[i][1])
                by[items[i][0]][1].append(items[i][which])
            return average_f1({s: score(*by[s]) for s in splits})

        return f

    r = stratified_difference(stat(2), stat(3), [(s, y == -1) for s, y, _, _ in items], n_boot, seed)
    low, high = round(r["low"], 2), round(r["high"], 2)
    return {
        "diff": round(r["diff"], 2),
        "low": low,
        "high": high,
        "p_bootstrap": float(f"{r['p']:.3g}"),
        "test": f"paired bootstrap by solution within split and group ({len(items)} solutions)",
        "verdict": "a higher" if low > 0 else "b higher" if high < 0 else "undetermined",
    }


def average_f1_ci(
    labels: dict[str, list[int]], predictions: dict[str, list[int]], n_boot: int = 2000, seed: int = 0
) -> dict:
    """:func:`average_f1` with a 95% interval: solutions resampled within each split and within
    its erroneous and its correct group, whose sizes the metric is built on
    (:func:`stepwiser_lib.evals.stats.stratified_bootstrap`). [not in paper: ProcessBench reports none]"""
    splits = list(labels)
    items = [(s, y, p) for s in splits for y, p in zip(labels[s], predictions[s], strict=True)]

    def stat(idx):
        by = {s: ([], []) for s in splits}
        for i in idx:
            s, y, p = items[i]
            by[s][0].append(y)
            by[s][1].append(p)
        return average_f1({s: score(*by[s]) for s in splits})

    est, lo, hi = stratified_bootstrap(stat, [(s, y == -1) for s, y, _ in items], n_boot, seed)
    return {"avg_f1": round(est, 2), "low": round(lo, 2), "high": round(hi, 2)}


# ----------------------------------------------------------------------------- notebook 05's driver


def load_bench(
    kind: str, toy_dir, local_dir: str | None = None, fix_math_688: bool = False, limit: int = 0
) -> dict[str, list[dict]]:
    """Notebook 05's benchmark, split -> solutions: toy-ProcessBench (``kind`` "toy", from
    ``toy_dir``) or the real ProcessBench ("real", :func:`load_split`), each split cut to ``limit``
    solutions with its groups balanced (:func:`subset`; 0 keeps all)."""
    if kind == "toy":
        bench = {s: load_toy(s, toy_dir) for s in TOY_SPLITS}
    elif kind == "real":
        bench = {s: load_split(s, local_dir, fix_math_688) for s in SPLITS}
    else:
        raise ValueError(f"BENCH must be toy or real, not {kind!r}")
    return {s: subset(r, limit) for s, r in bench.items()}


def bench_summary(bench: dict[str, list[dict]]) -> dict:
    """Per split: solutions, how many are erroneous, and the mean number of steps."""
    return {
        s: {
            "solutions": len(r),
            "erroneous": sum(x["label"] != -1 for x in r),
            "mean steps": round(sum(len(x["steps"]) for x in r) / len(r), 2),
        }
        for s, r in bench.items()
    }


#: Solutions per shard of one judge's run on one split (:mod:`stepwiser_lib.core.shards`): data-parallel
#: workers take whole shards, and a dead worker loses at most one. Fixed, so the results do not
#: depend on the number of workers; 256 keeps a vLLM batch full, and every toy split is one shard.
SHARD_SOLUTIONS = 256


def judge_key(
    e: dict,
    bench: dict[str, list[dict]],
    bench_kind: str,
    *,
    stop_at_first_negative: bool,
    maj_k: int,
    maj_temperature: float,
    max_completion: int,
    seed: int,
    shard_size: int = SHARD_SOLUTIONS,
) -> str:
    """The cache key of one judge's run (:func:`run_judges`): its stored entry, the solutions, the
    settings and, when a split needs more than one shard, the shard size (it decides the seeds)."""
    sharded = shards.layout(max((len(rs) for rs in bench.values()), default=0), shard_size)
    return io.digest(
        stored_entry(e),
        bench_kind,
        {s: [r["id"] for r in rs] for s, rs in bench.items()},
        stop_at_first_negative,
        maj_k,
        maj_temperature,
        max_completion,
        seed,
        RULE_VERSION,
        *sharded,
    )


def shards_to_judge(
    bench: dict[str, list[dict]],
    *,
    path,
    key: str,
    worker: int = 0,
    workers: int = 1,
    shard_size: int = SHARD_SOLUTIONS,
    **_,
) -> int:
    """How many shards :func:`judge_bench` would judge in this process (0: its run is on disk)."""
    path = Path(path)
    if io.has_cached(path, key):
        return 0
    return sum(
        len(
            shards.todo(
                len(rs), shard_size, path.with_suffix(".shards") / s, io.digest(key, s), worker=worker, workers=workers
            )
        )
        for s, rs in bench.items()
    )


def judge_bench(
    e: dict,
    bench: dict[str, list[dict]],
    *,
    path,
    key: str,
    load,
    k: int,
    stop: bool,
    temperature: float,
    seed: int,
    stop_at_zero: bool = False,
    worker: int = 0,
    workers: int = 1,
    shard_size: int = SHARD_SOLUTIONS,
    probs: bool = False,
) -> dict | None:
    """One judge (registry entry ``e``; ``load``: entry -> judge, called only when a shard is not
    on disk) over every split of ``bench`` with :func:`judge_solutions`, cached in ``path`` under
    ``key``: ``{"outputs": split -> judged solutions, "seconds"}``.

    The solutions of a split go in shards of ``shard_size`` (:func:`stepwiser_lib.core.shards.run`,
    shard ``i`` sampled with :func:`~stepwiser_lib.core.shards.shard_seed`), kept beside ``path``
    until the run is whole. With ``workers`` K > 1 (``python -m stepwiser_lib.method.processbench
    --worker I --workers K``, one process per GPU) this process judges only its shards and returns
    None while another worker's are missing (a worker never writes ``path``: the notebook, one
    process, joins the shards). The outputs are the same for any K."""
    path = Path(path)
    if io.has_cached(path, key):
        return io.read_json(path)
    folder = path.with_suffix(".shards")
    holder: dict = {}

    def compute(split):
        def one(recs, sid):
            if "judge" not in holder:
                holder["judge"] = load(e)
            return judge_solutions(
                holder["judge"],
                recs,
                stop_at_first_negative=stop,
                k=k,
                seed=shards.shard_seed(seed, sid),
                stop_at_zero_score=stop_at_zero,
                temperature=temperature if k > 1 else None,
                progress=False,
                probs=probs,
            )

        return one

    outs, seconds, whole = {}, 0.0, True
    for s, rs in bench.items():
        outs[s], secs = shards.run(
            rs, shard_size, compute(s), folder / s, io.digest(key, s), worker=worker, workers=workers
        )
        seconds += secs
        whole = whole and outs[s] is not None
    if "judge" in holder:
        from ..engines.models import release  # lazy: torch

        release(holder["judge"])  # the next judge needs the memory
    if not whole:
        return None
    rec = {"outputs": outs, "seconds": round(seconds, 1), "_key": key}
    if workers == 1:  # the join: only the notebook (one process) writes it and removes the shards
        io.write_json(path, rec)
        shards.clear(folder)
    return rec


def bench_runs(
    e: dict,
    bench: dict[str, list[dict]],
    art,
    bench_kind: str,
    *,
    stop_at_first_negative: bool,
    maj_k: int,
    maj_temperature: float,
    max_completion: int,
    maj_k_score: int,
    maj_k_score_judges: list[str],
    seed: int,
    shard_size: int = SHARD_SOLUTIONS,
    dev_thresholds: bool = False,
) -> list[dict]:
    """The runs :func:`run_judges` makes of judge ``e``, as :func:`judge_bench` arguments (``path``,
    ``key``, ``k``, ``stop``, ``stop_at_zero``, ``probs``): its verdicts (a discriminative judge on
    every step, so any threshold can be applied afterwards; with ``dev_thresholds`` a generative
    greedy judge too, with its verdict probability on every step), and for a generative judge in
    ``maj_k_score_judges`` its Maj@``maj_k_score`` score on every step up to a 0 (a 0 flags at
    every threshold). The notebook and the data-parallel workers (:func:`main`) make the same."""
    disc = e["style"] == "disc"
    probs = dev_thresholds and not disc and maj_k == 1
    key = judge_key(
        e,
        bench,
        bench_kind,
        stop_at_first_negative=stop_at_first_negative and not probs,
        maj_k=maj_k,
        maj_temperature=maj_temperature,
        max_completion=max_completion,
        seed=seed,
        shard_size=shard_size,
    )
    key = io.digest(key, "p_positive on every step") if probs else key
    slug = variant_slug(e["name"])
    runs = [
        {
            "path": Path(art) / f"{slug}.json",
            "key": key,
            "k": 1 if disc else maj_k,
            "stop": stop_at_first_negative and not disc and not probs,
            "probs": probs,
        }
    ]
    if not disc and e["name"] in maj_k_score_judges:
        runs.append(
            {
                "path": Path(art) / f"{slug}__maj{maj_k_score}.json",
                "stop": False,
                "stop_at_zero": True,
                "key": io.digest(key, "maj_k_score", maj_k_score, "stop_at_zero_score"),
                "k": maj_k_score,
            }
        )
    return runs


def _worker_bench(job: tuple) -> tuple[str, float]:
    import time

    e, r = job
    t0 = time.time()
    shared = judge_runs._SHARED
    judge_bench(e, shared["bench"], load=shared["load"], temperature=shared["temperature"], seed=shared["seed"], **r)
    return e["name"], time.time() - t0


def judge_in_processes(runs: list[tuple[dict, dict]], bench: dict, load, processes: int, **kw) -> int:
    """The runs of ``runs`` ((registry entry, :func:`bench_runs` arguments)) not yet on disk, judged
    by ``processes`` side-by-side processes with a share of the cores each
    (:func:`stepwiser_lib.method.judge_runs.in_processes`; issue 61: one process's greedy decode of
    a toy judge leaves a core half idle; LAB_LOG.md measures what two gain, and how much it varies),
    each written to its cache as :func:`judge_bench` writes it; generative judges first (the longest).
    On a GPU, on vLLM, or with one run to do, nothing is done here (the caller judges them one at a time).
    ``load`` must pickle (:class:`~stepwiser_lib.method.judge.Loader`); ``kw``: ``temperature``,
    ``seed``. Returns how many runs were judged. The outputs do not depend on it: every shard has
    its own seed (:func:`stepwiser_lib.core.shards.shard_seed`)."""
    todo = [(e, r) for e, r in runs if not io.has_cached(Path(r["path"]), r["key"])]
    if getattr(load, "backend", "hf") != "hf":  # an engine per process would split the GPU (or RAM) it reserves
        return 0
    processes = judge_runs.cpu_processes(processes, "judges") if len(todo) > 1 else 1
    if processes <= 1:
        return 0
    todo.sort(key=lambda j: j[0]["style"] == "disc")  # stable: generative judges first, else in order
    shared = {"bench": bench, "load": load, **kw}
    for bar, (name, secs) in judge_runs.in_processes(_worker_bench, todo, processes, shared, "judges", "run"):
        bar.write(f"{name:34s} judged in {secs:7.1f} s")
    return len(todo)


def run_options(cfg) -> dict:
    """The settings of notebook 05's config that :func:`run_judges` takes, by keyword (all but the
    judges, the benchmark, the folder, the loader and the dev split)."""
    return {
        "bench_kind": cfg.BENCH,
        "stop_at_first_negative": cfg.STOP_AT_FIRST_NEGATIVE,
        "maj_k": cfg.MAJ_K,
        "maj_temperature": cfg.MAJ_TEMPERATURE,
        "max_completion": cfg.MAX_COMPLETION,
        "maj_k_score": cfg.MAJ_K_SCORE,
        "maj_k_score_judges": cfg.MAJ_K_SCORE_JUDGES,
        "seed": cfg.SEED,
        "processes": cfg.PROCESSES,
    }


def run_judges(
    judges: list[dict],
    bench: dict[str, list[dict]],
    art,
    load,
    *,
    bench_kind: str,
    stop_at_first_negative: bool,
    maj_k: int,
    maj_temperature: float,
    max_completion: int,
    maj_k_score: int,
    maj_k_score_judges: list[str],
    seed: int,
    dev: dict | None = None,
    processes: int = 1,
) -> dict:
    """Notebook 05, section 2: every judge of the registry on every split (:func:`judge_solutions`),
    each run cached in ``art/<slug>.json``; ``load``: registry entry -> a judge.

    ``processes`` > 1 (``PROCESSES``, a CPU machine): the runs not on disk are first judged by that
    many side-by-side processes (:func:`judge_in_processes`), then read back as cached ones.

    A generative judge gives its first Negative (Maj@``maj_k`` verdicts; stops at the first
    Negative when ``stop_at_first_negative``). A discriminative judge is also run on every step and
    its score thresholded (:func:`thresholded`, ProcessBench's rule for scalar PRMs), as is the
    Maj@``maj_k_score`` score of each generative judge in ``maj_k_score_judges``. Returns
    ``results`` (row -> split -> :func:`score`), ``outputs`` (judge -> split -> judged
    solutions), ``cis`` (row -> average F1 with its 95% interval), ``records`` (one per row and
    solution, :func:`prediction_records`), ``first_error`` (judge -> split -> the predictions its
    paired orderings use: the thresholded ones for a scalar score) and ``seconds`` per judge.

    With ``dev`` (split -> solutions: toy-ProcessBench's dev split, issue 35) every judge also
    judges it, and every score, a generative judge's verdict probability included, is thresholded
    at the best-F1 threshold of the dev split (:func:`dev_thresholded`), never of a reported one:
    rows ``<judge> (dev threshold t)``. The dev split enters no row, interval or comparison."""

    labels = {s: [r["label"] for r in rs] for s, rs in bench.items()}
    dev = dev or {}
    full = {**bench, **dev}
    out = {
        "results": {},
        "outputs": {},
        "cis": {},
        "records": [],
        "first_error": {},
        "greedy": {},
        "seconds": {},
        "tallies": {},
    }

    def add_row(row, preds):
        out["results"][row] = {s: score(labels[s], preds[s]) for s in bench}
        out["records"].extend(prediction_records(row, bench, preds))
        out["cis"][row] = average_f1_ci(labels, preds)

    def threshold(name, outs, k=1, field="scores"):
        if dev:  # chosen on the dev split, applied to the reported ones
            scores, silent = step_scores(outs, field, k)
            t, thr = dev_thresholded(
                {s: [r["label"] for r in rs] for s, rs in dev.items()}, scores, silent, list(bench)
            )
            row = f"{name} (dev threshold {t:.2f})"
        else:
            silent = {
                s: [[n >= k for n in o.get("n_unparsed", [])] for o in outs[s]] for s in bench
            }  # no sample parsed
            t, thr = thresholded(labels, {s: [o["scores"] for o in outs[s]] for s in bench}, silent)
            row = f"{name} (threshold {t:.2f})"
        out["first_error"][name] = thr  # a scalar score enters the orderings at its threshold
        add_row(row, thr)
        out["tallies"][name] = out["tallies"][row] = judged_tally({s: outs[s] for s in bench}, k)

    runs = {
        e["name"]: bench_runs(
            e,
            full,
            art,
            bench_kind,
            stop_at_first_negative=stop_at_first_negative,
            maj_k=maj_k,
            maj_temperature=maj_temperature,
            max_completion=max_completion,
            maj_k_score=maj_k_score,
            maj_k_score_judges=maj_k_score_judges,
            seed=seed,
            dev_thresholds=bool(dev),
        )
        for e in judges
    }
    judge_in_processes(
        [(e, r) for e in judges for r in runs[e["name"]]], full, load, processes, temperature=maj_temperature, seed=seed
    )
    for e in judges:
        disc = e["style"] == "disc"
        rec, *more = [
            judge_bench(e, full, load=load, temperature=maj_temperature, seed=seed, **r) for r in runs[e["name"]]
        ]
        out["outputs"][e["name"]], out["seconds"][e["name"]] = {s: rec["outputs"][s] for s in bench}, rec["seconds"]
        preds = {s: [o["prediction"] for o in rec["outputs"][s]] for s in bench}
        out["first_error"][e["name"]] = out["greedy"][e["name"]] = (
            preds  # its own verdicts (a threshold may replace the first)
        )
        add_row(e["name"], preds)
        t = out["tallies"][e["name"]] = judged_tally({s: rec["outputs"][s] for s in bench}, 1 if disc else maj_k)
        if disc:  # a scalar-score judge is run on every step, so any threshold can be applied afterwards
            threshold(e["name"], rec["outputs"])
        elif dev and any(
            p is not None for os_ in rec["outputs"].values() for o in os_ for p in o.get("p_positive", [])
        ):
            # its verdict probability, thresholded (a vLLM judge has none: its verdicts only)
            threshold(e["name"], rec["outputs"], field="p_positive")
        if more:  # a generative judge's Maj@k score, thresholded the same way
            threshold(f"{e['name']} Maj@{maj_k_score} score", more[0]["outputs"], maj_k_score)
        print(
            f"{e['name']:34s} avg F1 {average_f1(out['results'][e['name']]):5.1f}   ({rec['seconds']} s; {describe(t)})"
        )
    return out


def positive_share(outputs: dict[str, list[dict]]) -> float | None:
    """% of a judge's judged steps it called Positive, over every split: with toy-ProcessBench's
    rule (a solution counts as correct only when every step is Positive) this share, more than
    discrimination, sets where a judge lands (issue 36: the untrained warm-up out-scored the RL judge)."""
    vs = [v for os_ in outputs.values() for o in os_ for v in o["verdicts"] if v is not None]
    return round(100 * sum(v == "Positive" for v in vs) / len(vs), 1) if vs else None


def judged_tally(outputs: dict[str, list[dict]], k: int) -> dict:
    """:func:`stepwiser_lib.core.verdicts.tally` of one judge's run over every split: each judged step
    of :func:`judge_solutions`' outputs (``k`` samples each; a cached run from before the unparsed
    counts were kept counts its verdict-less steps)."""

    steps = [
        {"verdict": v, **({"n_unparsed": n[i]} if i < len(n) else {})}
        for outs in outputs.values()
        for o in outs
        for i, v, n in ((i, v, o.get("n_unparsed", [])) for i, v in enumerate(o["verdicts"]))
    ]
    return tally(steps, k)


def orderings(labels: dict[str, list[int]], first_error: dict, tallies: dict, reading: str = "") -> list[dict]:
    """The paper's judge orderings (Tables 5 and 6, :func:`stepwiser_lib.evals.claims.judge_orderings`)
    asked of the judges this run has, paired on the same solutions (:func:`compare_avg_f1`); one
    whose judge gave no parsable verdict is :data:`~stepwiser_lib.core.verdicts.UNINFORMATIVE`.
    ``reading`` names how the judges were read (their own verdicts, or a dev-split threshold), in
    each claim's text and its ``reading`` field."""
    out = []
    for claim, a, b in judge_orderings(list(first_error)):
        silent = [n for n in (a, b) if not informative(tallies.get(n))]
        base = {
            "claim": claim + (f" ({reading})" if reading else ""),
            "a": a,
            "b": b,
            **({"reading": reading} if reading else {}),
        }
        out.append(
            uninformative_comparison(base, f"not compared: {', '.join(silent)} gave no parsable verdict")
            if silent
            else {**base, **compare_avg_f1(labels, first_error[a], first_error[b])}
        )
    return out


def error_kinds_by_judge(outputs: dict, bench: dict[str, list[dict]]) -> dict[str, dict[str, int]]:
    """:func:`error_kinds` of each judge's first-Negative predictions, over all splits."""
    labels = [r["label"] for s in bench for r in bench[s]]
    return {n: error_kinds(labels, [o["prediction"] for s in bench for o in outs[s]]) for n, outs in outputs.items()}


def kinds_line(name: str, counts: dict[str, int]) -> str:
    """One judge's :func:`error_kinds` as shares of its solutions, largest first, in words
    (notebook 05: which kind of error dominates is read from this line, not from the figure alone)."""
    total = sum(counts.values())
    if not total:
        return f"{name}: no solution judged"
    parts = sorted(((v, k) for k, v in counts.items() if v), reverse=True)
    return f"{name}: " + ", ".join(f"{k.replace('_', ' ')} {100 * v / total:.0f}%" for v, k in parts)


def examples(bench: dict[str, list[dict]], outputs: dict, n: int) -> list[tuple[str, str, dict, dict]]:
    """Up to ``n`` solutions of each kind of :func:`error_kinds` (an erroneous solution whose first
    error the judge found, flagged too early, too late, or missed, i.e. judged all Positive; a
    correct one it flagged anyway, a false alarm, the commonest failure of a stepwise judge; one
    with no parsable verdict), chosen by one stated rule: the first of each kind in benchmark
    order, so they are neither the best nor the worst (issue 36). Returns (kind, split, record,
    the judge's output on it)."""
    shown, out = {"found": 0, "too early": 0, "too late": 0, "missed": 0, "false alarm": 0, "no verdict": 0}, []
    for s in bench:
        for r, o in zip(bench[s], outputs[s]):
            p, y = o["prediction"], r["label"]
            if p is None:  # a step before any Negative did not parse (verdicts.RULE)
                kind = "no verdict"
            elif y == -1:
                kind = "false alarm" if p != -1 else None
            else:
                kind = "found" if p == y else "missed" if p == -1 else "too early" if p < y else "too late"
            if kind and shown[kind] < n:
                shown[kind] += 1
                out.append((kind, s, r, o))
    return out


def format_example(kind: str, split: str, r: dict, o: dict) -> str:
    """One solution as the judge saw it: every step with its verdict, and the judge's analysis at
    the true first error and at the predicted one, with (toy world) a line saying what that output
    is (:func:`stepwiser_lib.method.judge_runs.describe_output`)."""
    truth = "none (a correct solution)" if r["label"] == -1 else f"step {r['label']}"
    pred = "nothing (a step without a parsable verdict)" if o["prediction"] is None else o["prediction"]
    lines = [
        "=" * 100,
        f"{kind.upper()} ({split}, {r['id']}, generator {r['generator']}): true first error = "
        f"{truth}, judge predicted {pred}",
        f"PROBLEM: {r['problem']}",
    ]
    for i, step in enumerate(r["steps"]):
        v = o["verdicts"][i] if i < len(o["verdicts"]) else "(not judged)"
        lines.append(f"  step {i} [{v}]: {step.replace(chr(10), ' / ')}")
        if i < len(o["analyses"]) and i in (r["label"], o["prediction"]):
            lines.append(f"      judge analysis: {o['analyses'][i].strip().replace(chr(10), ' / ')}")
            if tasks.analysis_checks({"problem": r["problem"], "chunk": step}, "") is not None:  # toy: say what it is
                lines.append(
                    "      "
                    + judge_runs.describe_output(
                        {"problem": r["problem"], "chunk": step},
                        {"verdict": o["verdicts"][i], "analysis": o["analyses"][i]},
                    )
                )
    return "\n".join(lines)


# ----------------------------------------------------------------------------- notebook 05's tables


def table_row(name: str, per_split: dict[str, dict], **extra) -> dict:
    """One row of notebook 05's table: per split the error / correct accuracy and F1, then the
    average F1 (Table 5's columns), rounded to 0.1."""
    row = {"judge": name, **extra}
    for s, m in per_split.items():
        row.update(
            {
                f"{s} err": round(m["error_acc"], 1),
                f"{s} corr": round(m["correct_acc"], 1),
                f"{s} f1": round(m["f1"], 1),
            }
        )
    row["avg f1"] = round(average_f1(per_split), 1)
    return row


def by_benchmark(rows: list[dict]) -> list[list[dict]]:
    """``rows`` (:func:`table_row`) grouped by the splits they have, in order of first appearance:
    one table per benchmark (toy-ProcessBench, the real one), so that no table is mostly empty
    columns of the other benchmark's splits (issue 36)."""
    groups: dict[tuple, list[dict]] = {}
    for r in rows:
        groups.setdefault(tuple(k for k in r if k.endswith(" f1")), []).append(r)
    return list(groups.values())


def result_rows(results: dict, baselines: dict, cis: dict, tallies: dict | None = None) -> list[dict]:
    """Notebook 05's rows (ours): every judge row of :func:`run_judges`, then the baselines, each
    :func:`table_row` with its average F1's 95% interval where it has one. With ``tallies`` (row ->
    :func:`judged_tally`), a judge's row says how its verdicts parsed, and one that parsed none
    shows :data:`~stepwiser_lib.core.verdicts.UNINFORMATIVE` instead of its F1s."""

    rows = [table_row(k, v, source="ours") for k, v in {**results, **baselines}.items()]
    for r in rows:
        if r["judge"] in cis:
            r["avg f1 95% interval"] = f"[{cis[r['judge']]['low']}, {cis[r['judge']]['high']}]"
    if tallies is None:
        return rows
    return [
        mask(r, tallies[r["judge"]], [k for k in r if k not in ("judge", "source")]) if r["judge"] in tallies else r
        for r in rows
    ]


def results_markdown(
    rows: list[dict], comparisons: list[dict], paper: list[dict], bench_kind: str, splits: list[str]
) -> str:
    """``results/<profile>/processbench.md``: our trained judges on the benchmark, the untrained
    baselines on the real ProcessBench where they ran, the paired orderings, then the paper's rows."""
    cols = (
        ["judge", "source"]
        + [f"{s} {m}" for s in splits for m in ("err", "corr", "f1")]
        + ["avg f1", "avg f1 95% interval"]
    )
    cols += ["verdicts"] if any("verdicts" in r for r in rows) else []
    real_rows = [r for r in rows if r["judge"].endswith("[real ProcessBench]")]
    md = [
        f"Trained judges on {'toy-ProcessBench' if bench_kind == 'toy' else 'ProcessBench'} (ours):",
        "",
        markdown_table([r for r in rows if r not in real_rows], cols),
    ]
    if real_rows:
        real_cols = ["judge"] + [f"{s} {m}" for s in SPLITS for m in ("err", "corr", "f1")] + ["avg f1"]
        md += ["", "Real ProcessBench, judges that need no training (ours):", "", markdown_table(real_rows, real_cols)]
    if comparisons:
        md += [
            "",
            "The paper's judge orderings asked of ours (paired on the same solutions):",
            "",
            markdown_table(comparisons, ["claim", "a", "b", "diff", "low", "high", "p_bootstrap", "test", "verdict"]),
        ]
    md += [
        "",
        "The paper's rows (real ProcessBench, Qwen2.5-1.5B-chunk judges, Tables 5/6; not ours):",
        "",
        markdown_table(paper, ["judge"] + [f"{s} f1" for s in SPLITS] + ["avg f1"]),
    ]
    return "\n".join(md) + "\n"


def baselines(tag: str, bench: dict[str, list[dict]]) -> tuple[dict, dict]:
    """The two untrained baselines on ``bench`` (split -> solutions): always-Positive (predicts
    "no error", -1) and the step calculator (:mod:`stepwiser_lib.method.calculator`), scored per split and
    named ``<baseline> [<tag>]``; also the calculator's predictions."""
    preds = {s: [predict(r["steps"]) for r in rs] for s, rs in bench.items()}
    out = {
        "always-Positive": {s: score([r["label"] for r in rs], [-1] * len(rs)) for s, rs in bench.items()},
        "calculator": {s: score([r["label"] for r in bench[s]], preds[s]) for s in bench},
    }
    return {f"{k} [{tag}]": v for k, v in out.items()}, preds


def all_baselines(
    tag: str, bench: dict[str, list[dict]], real: bool = True, real_dir: str | None = None, fix_math_688: bool = False
) -> dict:
    """Notebook 05's untrained baselines (:func:`baselines`): on ``bench`` (named ``[<tag>]``) and,
    with ``real``, on the four real ProcessBench splits too (:func:`load_split` from ``real_dir``,
    ``STEPWISER_PROCESSBENCH_DIR`` or the hub, named ``[real ProcessBench]``). When the real splits
    cannot be loaded (no local copy, no hub access) it says so, visibly (a ``SKIPPED`` line with the
    error), and returns the ``bench`` ones only."""
    out, _ = baselines(tag, bench)
    if real:
        try:
            splits = {s: load_split(s, real_dir, fix_math_688) for s in SPLITS}
        except Exception as e:  # no local copy and no hub access
            print(f"SKIPPED real ProcessBench baselines: {type(e).__name__}: {e}")
        else:
            out.update(baselines("real ProcessBench", splits)[0])
    return out


def both_readings(labels: dict[str, list[int]], run: dict, dev) -> list[dict]:
    """The paper's orderings (:func:`orderings`) in both readings of every judge of :func:`run_judges`'
    ``run``: its own verdicts (``greedy``), then its score at a threshold (``first_error``): the dev
    split's best-F1 one when there is a ``dev`` split, else ProcessBench's rule for scalar PRMs."""
    return orderings(labels, run["greedy"], run["tallies"], "own verdicts") + orderings(
        labels, run["first_error"], run["tallies"], "dev thresholds" if dev else "a threshold"
    )


def informative_only(tallies: dict, *by_judge: dict) -> tuple[dict, ...]:
    """Each of ``by_judge`` (row name -> anything) kept to the rows whose judge gave a parsable
    verdict (:func:`~stepwiser_lib.core.verdicts.informative` of its tally in ``tallies``; a row
    without a tally is left out): what notebook 05's figure draws."""
    return tuple({n: v for n, v in d.items() if informative(tallies.get(n))} for d in by_judge)


def check_score_judges(score_judges: list[str], judges: list[dict], asked: list[str]) -> None:
    """Fails naming the ``MAJ_K_SCORE_JUDGES`` that are not among the ``judges`` (registry entries)
    notebook 05 runs, those of ``JUDGES`` (``asked``): each would be silently skipped."""
    stray = [j for j in score_judges if j not in [e["name"] for e in judges]]
    if stray:
        raise ValueError(f"MAJ_K_SCORE_JUDGES {stray} are not among the judges run here (JUDGES = {asked})")


def thresholded(
    labels: dict[str, list[int]],
    step_scores: dict[str, list[list[float]]],
    silent: dict[str, list[list[bool]]] | None = None,
) -> tuple[float, dict]:
    """ProcessBench's rule for scalar-score PRMs: the threshold with the best F1 on the first split
    (so that split's F1 is optimistic: the threshold was chosen on it), applied to every split.
    ``silent``: split -> per solution, which steps had no parsable verdict at all
    (:func:`threshold_predictions`). Returns the threshold and each split's first-error predictions."""
    first = next(iter(labels))
    sil = silent or {}
    t, _ = best_threshold(labels[first], step_scores[first], silent=sil.get(first))
    return t, {s: threshold_predictions(step_scores[s], t, sil.get(s)) for s in labels}


def step_scores(outputs: dict[str, list[dict]], field: str = "scores", k: int = 1) -> tuple[dict, dict]:
    """Per split, each solution's step scores (``field``: ``scores``, or a generative judge's
    ``p_positive``, whose None, a step without a box, scores 0) and which steps are silent (no
    sample parsed: :func:`threshold_predictions`)."""
    if field == "p_positive":
        scores = {s: [[0.0 if p is None else p for p in o["p_positive"]] for o in os_] for s, os_ in outputs.items()}
        silent = {s: [[p is None for p in o["p_positive"]] for o in os_] for s, os_ in outputs.items()}
    else:
        scores = {s: [o["scores"] for o in os_] for s, os_ in outputs.items()}
        silent = {s: [[n >= k for n in o.get("n_unparsed", [])] for o in os_] for s, os_ in outputs.items()}
    return scores, silent


def dev_thresholded(
    dev_labels: dict[str, list[int]],
    step_scores_: dict[str, list[list[float]]],
    silent: dict[str, list[list[bool]]],
    reported: list[str],
) -> tuple[float, dict]:
    """The threshold with the best F1 on the dev split(s) (``dev_labels``: split -> labels; the
    scores of every split in ``step_scores_``), and the first-error predictions it gives on each
    ``reported`` split: no reported solution is read to choose it (issue 35)."""
    dev_split = next(iter(dev_labels))
    t, _ = best_threshold(dev_labels[dev_split], step_scores_[dev_split], silent=silent.get(dev_split))
    return t, {s: threshold_predictions(step_scores_[s], t, silent.get(s)) for s in reported}


def dev_split(cfg) -> dict[str, list[dict]]:
    """Notebook 05's dev split: toy-ProcessBench's (:func:`load_dev`) when ``BENCH`` is toy and
    ``DEV_THRESHOLDS`` is on, else none."""
    return load_dev(ROOT / cfg.TOY_DIR, cfg.LIMIT) if cfg.BENCH == "toy" and cfg.DEV_THRESHOLDS else {}


def load_dev(toy_dir, limit: int = 0) -> dict[str, list[dict]]:
    """Toy-ProcessBench's dev split (:data:`stepwiser_lib.core.schemas.TOY_DEV_SPLIT`) as
    ``{split: solutions}``, cut like the reported splits (:func:`subset`)."""
    return {TOY_DEV_SPLIT: subset(load_toy(TOY_DEV_SPLIT, toy_dir), limit)}


def paper_rows(entries: list[dict]) -> list[dict]:
    """The paper's ProcessBench row (Tables 5/6, 1.5B) for each judge entry's kind and rule, once
    each, named ``PAPER 1.5B-chunk: <row> / <rule>``: for display beside ours, never mixed in."""
    out, seen = [], set()
    for e in entries:
        p = paper_row(e.get("row"), e.get("rule")) if e.get("rule") else None
        if p and (p["row"], p["signal"]) not in seen:
            seen.add((p["row"], p["signal"]))
            out.append(
                {
                    "judge": f"PAPER 1.5B-chunk: {p['row']} / {p['signal']}",
                    "source": "paper Table 5/6",
                    "avg f1": p["avg"],
                    **{f"{s} f1": p[k] for s, k in zip(SPLITS, ("gsm8k", "math", "olympiadbench", "omnimath"))},
                }
            )
    return out


def main(argv: list[str] | None = None, profiles_dir=None) -> int:
    """Notebook 05's judge runs outside a kernel, one worker of K (issue 34): ``python -m
    stepwiser_lib.method.processbench --profile P --worker I --workers K``, one process per GPU,
    each judging its shards (:func:`judge_bench`) of every judge's run; then notebook 05 finds
    them on disk and joins them. Checks the profile and the inputs first (exit 2)."""
    a = shards.worker_args(
        "ProcessBench judging of notebook 05, as one of K data-parallel workers",
        argv,
        SHARD_SOLUTIONS,
        "solutions",
        "05",
    )
    try:
        cfg = shards.worker_config(a, "05_processbench", profiles_dir)
        judges = list(
            judge_runs.read_registry(cfg.PROFILE, cfg.JUDGES, allow_all=True, every_seed=cfg.EVERY_SEED).values()
        )
        pb_dir = cfg.PROCESSBENCH_DIR or os.environ.get("STEPWISER_PROCESSBENCH_DIR") or None
        bench = load_bench(cfg.BENCH, ROOT / cfg.TOY_DIR, pb_dir, cfg.FIX_MATH_688, cfg.LIMIT)
        bench = {**bench, **dev_split(cfg)}  # judged like the others; only the notebook tells them apart
    except (ConfigError, FileNotFoundError, inputs.StaleInputs, ProcessBenchError, ValueError) as e:
        print(f"[processbench] configuration error: {e}", file=sys.stderr)
        return 2
    art, load = paths.artifacts(cfg.PROFILE, "05_processbench"), judge.loader(cfg)
    runs = [
        (e, {**r, "shard_size": a.shard_size})
        for e in judges
        for r in bench_runs(
            e,
            bench,
            art,
            cfg.BENCH,
            stop_at_first_negative=cfg.STOP_AT_FIRST_NEGATIVE,
            maj_k=cfg.MAJ_K,
            maj_temperature=cfg.MAJ_TEMPERATURE,
            max_completion=cfg.MAX_COMPLETION,
            maj_k_score=cfg.MAJ_K_SCORE,
            maj_k_score_judges=cfg.MAJ_K_SCORE_JUDGES,
            seed=cfg.SEED,
            shard_size=a.shard_size,
            dev_thresholds=bool(dev_split(cfg)),
        )
    ]
    todo = sum(shards_to_judge(bench, worker=a.worker, workers=a.workers, **r) for _, r in runs)
    print(
        f"[processbench] worker {a.worker} of {a.workers}: {todo} shard(s) of {a.shard_size} solutions to judge "
        f"over {len(runs)} run(s)",
        flush=True,
    )
    done = []
    for e, r in runs:
        rec = judge_bench(
            e, bench, load=load, temperature=cfg.MAJ_TEMPERATURE, seed=cfg.SEED, worker=a.worker, workers=a.workers, **r
        )
        done += [r["path"].name] if rec is not None else []
    print(json.dumps({"worker": a.worker, "workers": a.workers, "judged_shards": todo, "whole_runs": done}))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
