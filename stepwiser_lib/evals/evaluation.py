"""Per-item judge predictions, and the intervals and paired comparisons computed from them.

Every judge number a table reports is recomputed here from per-chunk predictions, which notebook
04 writes to ``results/<profile>/judge_predictions.jsonl`` (schema: ``data/README.md``), so a reader
can redo any statistic from the repository. Chunks of one problem share its difficulty, so
intervals resample whole problems (:func:`stepwiser_lib.evals.stats.cluster_bootstrap`), and two judges
are compared on the same chunks: a paired bootstrap by problem of the balanced-accuracy difference,
and an exact McNemar test on per-chunk correctness (on a balanced set accuracy is balanced
accuracy). The paper reports balanced step accuracy only on ProcessBench (§4.2); these are the
toy-world checks of its judge claims (Tables 5-6: the generative RL judge above the discriminative
one, and RL above its starting point). [not in paper]
"""

from __future__ import annotations

from ..core.verdicts import informative, tally, uninformative_comparison
from . import stats


def chunk_id(example: dict) -> str:
    """A chunk's id across files: its trajectory and position (``<problem_id>/s<k>#<index>``)."""
    return f"{example['traj_id']}#{example['chunk_index']}"


def judge_predictions(
    judge: str,
    rule: str,
    split: str,
    examples: list[dict],
    judged: list[dict],
    truth: list[bool | None] | None = None,
    exact: list[bool | None] | None = None,
) -> list[dict]:
    """One record per chunk: ``judge`` (variant name, ``@seedN`` for a repeat seed), ``rule`` (whose
    MC labels ``label`` holds), ``split``,
    ``problem_id``, ``chunk_id``, ``label`` (the MC label, True = Positive), ``verdict`` (True,
    False, or None when unparsable), ``score`` (the judge's p(Positive) or Maj@k fraction),
    ``truth`` (the exact step checker, toy world only; else None), and where ``exact`` is given
    (a CoT judge's test chunks, issue 59) ``analysis`` (the judge's text before its verdict) and
    ``analysis_exact`` (whether it is the exact re-derivation; toy world only), else None for both."""
    if len(examples) != len(judged):
        raise ValueError(f"{len(judged)} judge outputs for {len(examples)} chunks")
    truth = truth if truth is not None else [None] * len(examples)
    verdict = {"Positive": True, "Negative": False}
    return [
        {
            "judge": judge,
            "rule": rule,
            "split": split,
            "problem_id": e["problem_id"],
            "chunk_id": chunk_id(e),
            "label": bool(e["label"]),
            "verdict": verdict.get(j["verdict"]),
            "score": j.get("score"),
            "truth": t,
            "analysis": analysis_text(j) if exact is not None else None,
            "analysis_exact": exact[i] if exact is not None else None,
        }
        for i, (e, j, t) in enumerate(zip(examples, judged, truth))
    ]


def analysis_text(judged: dict) -> str | None:
    """A judge output's analysis: its text before the last ``\\boxed`` (all of it without one)."""
    a = judged.get("analysis")
    if a is None:
        return None
    cut = a.rfind("\\boxed")
    return (a[:cut] if cut >= 0 else a).strip()


def correct(p: dict, against: str = "label") -> bool:
    """The verdict equals the reference (``label`` or ``truth``); an unparsable verdict is wrong."""
    return p["verdict"] is not None and p["verdict"] == p[against]


def _bal(preds: list[dict], against: str):
    def stat(idx: list[int]) -> float:
        return stats.balanced_accuracy([preds[i][against] for i in idx], [correct(preds[i], against) for i in idx])

    return stat


def balanced_accuracy_ci(preds: list[dict], against: str = "label", n_boot: int = 2000, seed: int = 0) -> dict:
    """Balanced accuracy (%) of one judge with its 95% interval, resampling problems."""
    if not preds:
        raise ValueError("no predictions")
    est, lo, hi = stats.cluster_bootstrap(
        _bal(preds, against), len(preds), [p["problem_id"] for p in preds], n_boot, seed
    )
    return {
        "balanced_acc": round(est, 2),
        "low": round(lo, 2),
        "high": round(hi, 2),
        "n": len(preds),
        "problems": len({p["problem_id"] for p in preds}),
    }


def _verdict(low: float, high: float) -> str:
    """``a higher`` / ``b higher`` when the interval of a - b excludes zero, else ``undetermined`` (the claims table's word)."""
    return "a higher" if low > 0 else "b higher" if high < 0 else "undetermined"


def _sig(p: float) -> float:
    return float(f"{p:.3g}")  # three significant figures: small p-values stay readable


def _aligned(runs: list[list[dict]], other: list[dict]) -> list[list[dict]]:
    """``runs`` reordered to ``other``'s chunks; the same chunks or an error."""
    order = [p["chunk_id"] for p in other]
    out = []
    for r in runs:
        by_id = {p["chunk_id"]: p for p in r}
        if sorted(by_id) != sorted(order) or len(by_id) != len(r):
            raise ValueError(
                f"judge {r[0]['judge'] if r else '?'} was not evaluated on the same chunks as "
                f"{other[0]['judge'] if other else '?'}"
            )
        out.append([by_id[c] for c in order])
    return out


def compare(
    a: list[list[dict]], b: list[dict] | list[list[dict]], against: str = "label", n_boot: int = 2000, seed: int = 0
) -> dict:
    """Paired comparison of judge ``a`` (its seeds: one prediction list each, averaged) with judge
    ``b`` (one prediction list, or one per seed, averaged too) on the same chunks: the
    balanced-accuracy difference a - b (points) with its 95% interval and p-value from a paired
    bootstrap by problem (every seed of both sees the same resampled problems), and, for a single
    run of each, the exact two-sided McNemar test on per-chunk correctness. ``verdict``:
    ``a higher`` / ``b higher`` when the interval excludes zero, else ``undetermined`` (the claims table's word)."""
    b_runs = b if b and isinstance(b[0], list) else [b]
    ref = b_runs[0]
    a, b_runs = _aligned(a, ref), _aligned(b_runs, ref)
    silent = list(dict.fromkeys(r[0]["judge"] for r in [*a, *b_runs] if r and not informative(tally(r))))
    if silent:  # verdicts.RULE: a judge with no parsable verdict is no yardstick and no contender
        return uninformative_comparison(
            {
                "a": a[0][0]["judge"],
                "b": ref[0]["judge"],
                "against": against,
                "seeds_a": len(a),
                "seeds_b": len(b_runs),
            },
            f"not compared: {', '.join(silent)} gave no parsable verdict",
        )
    clusters = [p["problem_id"] for p in ref]
    stats_a = [_bal(r, against) for r in a]
    stats_b = [_bal(r, against) for r in b_runs]
    res = stats.paired_difference(
        lambda idx: sum(s(idx) for s in stats_a) / len(stats_a),
        lambda idx: sum(s(idx) for s in stats_b) / len(stats_b),
        len(ref),
        clusters,
        n_boot,
        seed,
    )
    out = {
        "a": a[0][0]["judge"],
        "b": ref[0]["judge"],
        "against": against,
        "seeds_a": len(a),
        "seeds_b": len(b_runs),
        "diff": round(res["diff"], 2),
        "low": round(res["low"], 2),
        "high": round(res["high"], 2),
        "p_bootstrap": _sig(res["p"]),
        "test": f"paired bootstrap by problem ({len(set(clusters))} problems, {len(ref)} chunks)",
        "verdict": _verdict(res["low"], res["high"]),
    }
    if len(a) == 1 and len(b_runs) == 1:
        only_a = sum(correct(x, against) and not correct(y, against) for x, y in zip(a[0], ref))
        only_b = sum(correct(y, against) and not correct(x, against) for x, y in zip(a[0], ref))
        out["mcnemar"] = {
            "only_a": only_a,
            "only_b": only_b,
            "p": _sig(stats.mcnemar_exact(only_a, only_b, "two-sided")),
        }
    return out


def comparison_line(c: dict) -> str:
    """One paired comparison as a sentence (notebooks 04-07): a − b with its interval, test and
    verdict, or why it was not made (:func:`stepwiser_lib.core.verdicts.uninformative_comparison`)."""
    if c["diff"] is None:
        return f"**{c['claim']}?** {c['a']} vs {c['b']}: **{c['verdict']}** ({c['test']})."
    seeds = f" ({c['seeds_a']} seed(s))" if "seeds_a" in c else ""
    extra = f"; McNemar p = {c['mcnemar']['p']}" if "mcnemar" in c else ""
    return (
        f"**{c['claim']}?** {c['a']}{seeds} minus {c['b']}: **{c['diff']:+.1f}** points "
        f"[{c['low']:+.1f}, {c['high']:+.1f}], {c['test']}, p = {c['p_bootstrap']}{extra}: **{c['verdict']}**."
    )


def reference_judge(preds: list[dict], judge: str, verdicts: list[bool | None]) -> list[dict]:
    """The same chunks judged by a rule instead of a model: ``verdicts`` in ``preds``' order (for
    example the exact checker, whose balanced accuracy against the MC labels is the label-noise
    ceiling, or the verdict a judge's own analysis implies read by a rule)."""
    if len(verdicts) != len(preds):
        raise ValueError(f"{len(verdicts)} verdicts for {len(preds)} chunks")
    return [
        {
            **p,
            "judge": judge,
            "verdict": v,
            "score": None if v is None else float(v),
            "analysis": None,
            "analysis_exact": None,
        }
        for p, v in zip(preds, verdicts)
    ]


def balanced_threshold(scores: list[float | None], labels: list[bool]) -> tuple[float, float]:
    """``(threshold, balanced accuracy %)``: the cut on a judge's p(Positive) (a verdict is Positive
    when its score is at least the threshold) with the highest balanced accuracy against ``labels``,
    chosen on a dev split and read on test (issue 59: a judge whose greedy verdicts collapsed to
    one side may still rank chunks). A missing score is a wrong verdict at every cut. Ties go to
    the smallest threshold. [not in paper]"""
    if len(scores) != len(labels):
        raise ValueError(f"{len(scores)} scores for {len(labels)} labels")
    vals = sorted({s for s in scores if s is not None})
    best = (0.5, -1.0)
    for t in [0.0, *(v + 1e-9 for v in vals)]:
        bal = stats.balanced_accuracy(labels, [s is not None and (s >= t) == y for s, y in zip(scores, labels)])
        if bal > best[1] + 1e-12:
            best = (t, bal)
    return best[0], round(best[1], 2)


def constant_judge(preds: list[dict], verdict: bool = True) -> list[dict]:
    """The same chunks judged by a constant verdict (always Positive by default): balanced accuracy
    exactly 50 on any resample holding both classes, the chance line a comparison can pair with."""
    return [
        {**p, "judge": "always-" + ("Positive" if verdict else "Negative"), "verdict": verdict, "score": float(verdict)}
        for p in preds
    ]


# ----------------------------------------------------------------------------- per-problem rates


def problem_predictions(method: str, task: str, seed: int, problem_ids: list[str], correct: list[bool]) -> list[dict]:
    """One record per problem and run (chunk-reset, RS-FT; schema in ``data/README.md``): ``method``,
    ``task``, ``seed`` (the sampling or SFT seed), ``problem_id``, ``correct``."""
    if len(problem_ids) != len(correct):
        raise ValueError(f"{len(correct)} outcomes for {len(problem_ids)} problems")
    return [
        {"method": method, "task": task, "seed": seed, "problem_id": p, "correct": bool(c)}
        for p, c in zip(problem_ids, correct)
    ]


def _per_problem(preds: list[dict], field: str = "correct") -> dict:
    """problem -> mean of ``field`` over its runs (seeds, samples): correctness in %, any other
    numeric field (for example ``steps``) as it is."""
    scale = 100 if field == "correct" else 1
    acc: dict = {}
    for p in preds:
        acc.setdefault(p["problem_id"], []).append(p[field])
    return {k: scale * sum(v) / len(v) for k, v in acc.items()}


def rate_ci(preds: list[dict], n_boot: int = 2000, seed: int = 0) -> dict:
    """Accuracy (%) of one method over problems and seeds, with a 95% interval that resamples
    problems (a problem's seeds travel together)."""
    per = _per_problem(preds)
    if not per:
        raise ValueError("no predictions")
    vals = list(per.values())
    est, lo, hi = stats.cluster_bootstrap(
        lambda idx: sum(vals[i] for i in idx) / len(idx), len(vals), None, n_boot, seed
    )
    return {"acc": round(est, 2), "low": round(lo, 2), "high": round(hi, 2), "problems": len(vals), "runs": len(preds)}


def compare_rates(a: list[dict], b: list[dict], n_boot: int = 2000, seed: int = 0, field: str = "correct") -> dict:
    """Paired comparison of two methods on the same problems: the accuracy difference a - b
    (points; each problem's mean over its seeds), its 95% interval and p-value from a paired
    bootstrap over problems, and the verdict (``a higher`` / ``b higher`` / ``undetermined``).
    ``field`` compares another per-run number the same way (``steps``: the difference in steps)."""
    pa, pb = _per_problem(a, field), _per_problem(b, field)
    if set(pa) != set(pb):
        raise ValueError(
            f"{a[0]['method'] if a else '?'} and {b[0]['method'] if b else '?'} were not run on the same problems"
        )
    keys = sorted(pa)
    res = stats.paired_difference(
        lambda idx: sum(pa[keys[i]] for i in idx) / len(idx),
        lambda idx: sum(pb[keys[i]] for i in idx) / len(idx),
        len(keys),
        None,
        n_boot,
        seed,
    )
    return {
        "a": a[0]["method"],
        "b": b[0]["method"],
        "diff": round(res["diff"], 2),
        "low": round(res["low"], 2),
        "high": round(res["high"], 2),
        "p_bootstrap": _sig(res["p"]),
        "test": f"paired bootstrap by problem ({len(keys)} problems)",
        "verdict": _verdict(res["low"], res["high"]),
    }


def mean_sd(values: list[float]) -> tuple[float, float]:
    """Mean and sample standard deviation (0 for a single value): the seed spread a table shows
    beside the interval (the interval, not the spread, is what comparisons read)."""
    if not values:
        raise ValueError("no values")
    m = sum(values) / len(values)
    return m, (sum((v - m) ** 2 for v in values) / max(1, len(values) - 1)) ** 0.5
