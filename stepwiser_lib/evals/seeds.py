"""Training seeds as the unit of resampling, and a claims family read with multiplicity in mind
(issue 35; ``toy_results_review_2.md`` §1.5, §4).

A toy judge's score moves by several points between two training runs of the same code (about 7
F1 points per toy-ProcessBench difference), several times what resampling the test items shows.
So an arm is a set of training seeds, and an interval resamples both levels:

1. the seeds of each arm, with replacement (the same draw for every arm when the arms share their
   pipeline seeds: ``paired_seeds``);
2. then the items (problems, or solutions within their split and group), with replacement, the
   same draw for every arm, so the comparison stays paired on items.

Each arm is an array of per-seed, per-item *counts* ``(seeds, items, C)``; a statistic maps summed
counts ``(..., C)`` to a number (:func:`mean_stat`, :func:`ratio_stat`,
:func:`balanced_accuracy_stat`, :func:`f1_stat`). A bootstrap replicate is then one weighted sum per seed (item weights from a
multinomial draw), so 10,000 replicates are a few array operations, not 10,000 Python loops.

Also here: :func:`holm` (family-wise adjusted p-values), :func:`tost` (equivalence, for a claim
that something "keeps" accuracy) and :func:`direction` (ours against the paper's sign).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np

#: Bootstrap replicates of a claim (the review's own recomputation used 10,000).
N_BOOT = 10_000


def mean_stat(counts: np.ndarray) -> np.ndarray:
    """Percent of a rate from counts ``(successes, trials)``."""
    return 100 * counts[..., 0] / counts[..., 1]


def ratio_stat(counts: np.ndarray) -> np.ndarray:
    """A mean from counts ``(sum, n)`` (steps per solution)."""
    return counts[..., 0] / counts[..., 1]


def balanced_accuracy_stat(counts: np.ndarray) -> np.ndarray:
    """Balanced accuracy (%) from ``(correct positives, positives, correct negatives, negatives)``."""
    return 50 * (counts[..., 0] / counts[..., 1] + counts[..., 2] / counts[..., 3])


def f1_stat(n_splits: int) -> Callable[[np.ndarray], np.ndarray]:
    """ProcessBench's average F1 (%) over ``n_splits`` splits from counts ``(erroneous found,
    erroneous, correct kept, correct)`` per split, laid out as ``C = 4 * n_splits``: per split the
    harmonic mean of the two accuracies (0 when both are 0), then the mean over splits."""

    def stat(counts: np.ndarray) -> np.ndarray:
        c = counts.reshape(*counts.shape[:-1], n_splits, 4)
        a, b = c[..., 0] / c[..., 1], c[..., 2] / c[..., 3]
        with np.errstate(invalid="ignore", divide="ignore"):
            f1 = np.where(a + b > 0, 2 * a * b / (a + b), 0.0)
        return 100 * f1.mean(-1)

    return stat


def item_weights(rng: np.random.Generator, strata: Sequence, n_boot: int) -> np.ndarray:
    """Bootstrap item weights ``(n_boot, items)``: within each stratum, as many draws with
    replacement as it has items (one stratum: a plain bootstrap of the items)."""
    strata = np.asarray(strata)
    w = np.zeros((n_boot, len(strata)))
    for s in dict.fromkeys(strata.tolist()):
        idx = np.flatnonzero(strata == s)
        w[:, idx] = rng.multinomial(len(idx), np.full(len(idx), 1 / len(idx)), size=n_boot)
    return w


def _check(arms: Sequence[np.ndarray]) -> list[np.ndarray]:
    arms = [np.asarray(a, dtype=float) for a in arms]
    if any(a.ndim != 3 for a in arms):
        raise ValueError("each arm: counts of shape (seeds, items, C)")
    if len({a.shape[1:] for a in arms}) != 1:
        raise ValueError(f"arms on other items or counts: shapes {[a.shape for a in arms]}")
    if any(a.shape[0] < 1 for a in arms):
        raise ValueError("an arm without a seed")
    return arms


def arm_estimate(counts: np.ndarray, stat) -> float:
    """An arm's score: the statistic of each seed over every item, averaged over seeds."""
    counts = _check([counts])[0]
    return float(stat(counts.sum(1)).mean())


def replicates(
    arms: Sequence[np.ndarray],
    stat,
    strata: Sequence | None = None,
    n_boot: int = N_BOOT,
    seed: int = 0,
    paired_seeds: bool = False,
) -> np.ndarray:
    """Hierarchical bootstrap replicates ``(arms, n_boot)`` of each arm's score: seeds drawn with
    replacement within each arm (one shared draw with ``paired_seeds``, which needs equal seed
    counts), then items, one shared draw (stratified by ``strata``)."""
    arms = _check(arms)
    rng = np.random.default_rng(seed)
    n_items = arms[0].shape[1]
    w = item_weights(rng, strata if strata is not None else [0] * n_items, n_boot)
    if paired_seeds and len({a.shape[0] for a in arms}) != 1:
        raise ValueError(f"paired seeds need the same seeds in every arm: {[a.shape[0] for a in arms]}")
    shared = rng.integers(0, arms[0].shape[0], size=(n_boot, arms[0].shape[0])) if paired_seeds else None
    out = []
    for a in arms:
        per_seed = stat(np.einsum("bp,spc->bsc", w, a))  # (n_boot, seeds): each seed on the drawn items
        draw = shared if paired_seeds else rng.integers(0, a.shape[0], size=(n_boot, a.shape[0]))
        out.append(np.take_along_axis(per_seed, draw, axis=1).mean(1))
    return np.stack(out)


def p_two_sided(reps: np.ndarray, null: float = 0.0) -> float:
    """Bootstrap p of a difference: twice the smaller share of replicates on either side of
    ``null`` (each share counted as (k + 1) / (B + 1)), at most 1."""
    b = len(reps)
    lo, hi = (np.sum(reps <= null) + 1) / (b + 1), (np.sum(reps >= null) + 1) / (b + 1)
    return float(min(1.0, 2 * min(lo, hi)))


def difference(
    a: np.ndarray,
    b: np.ndarray,
    stat,
    strata: Sequence | None = None,
    n_boot: int = N_BOOT,
    seed: int = 0,
    paired_seeds: bool = False,
    level: float = 0.95,
) -> dict:
    """Arm ``a`` minus arm ``b`` (:func:`arm_estimate`) with its hierarchical-bootstrap interval
    and two-sided p; ``reps`` holds the replicates (for :func:`tost`)."""
    reps = replicates([a, b], stat, strata, n_boot, seed, paired_seeds)
    d = reps[0] - reps[1]
    est = arm_estimate(a, stat) - arm_estimate(b, stat)
    q = (1 - level) / 2
    lo, hi = np.quantile(d, [q, 1 - q])
    return {
        "estimate": round(est, 2),
        "ci_low": round(float(lo), 2),
        "ci_high": round(float(hi), 2),
        "p": round(p_two_sided(d), 5),
        "seeds": [int(np.shape(a)[0]), int(np.shape(b)[0])],
        "items": int(np.shape(a)[1]),
        "test": f"hierarchical bootstrap (seeds, then items; {n_boot} replicates)",
        "reps": d,
    }


def holm(p: Sequence[float]) -> list[float]:
    """Holm's step-down adjusted p-values, in the input order: the ``k``-th smallest p times
    ``m - k + 1`` (``k`` from 1), made non-decreasing, capped at 1. Controls the family-wise error."""
    p = np.asarray(p, dtype=float)
    m = len(p)
    order = np.argsort(p, kind="stable")
    adj = np.minimum(1.0, np.maximum.accumulate(p[order] * (m - np.arange(m))))
    out = np.empty(m)
    out[order] = adj
    return [float(x) for x in out]


def tost(reps: np.ndarray, margin: float, alpha: float = 0.05) -> dict:
    """Two one-sided tests of equivalence within ``±margin`` on bootstrap replicates of a
    difference: p is the larger of the shares at or beyond each margin ((k + 1) / (B + 1)); the
    difference is equivalent when p < ``alpha``, i.e. the (1 - 2 alpha) interval lies inside the
    margins. The margin must be fixed before the run."""
    if margin <= 0:
        raise ValueError(f"equivalence margin {margin}: want > 0")
    reps = np.asarray(reps, dtype=float)
    b = len(reps)
    p = max((np.sum(reps <= -margin) + 1) / (b + 1), (np.sum(reps >= margin) + 1) / (b + 1))
    lo, hi = np.quantile(reps, [alpha, 1 - alpha])
    return {
        "p": round(float(p), 5),
        "equivalent": bool(p < alpha),
        "margin": margin,
        "ci_low": round(float(lo), 2),
        "ci_high": round(float(hi), 2),
        "level": 1 - 2 * alpha,
    }


def direction(ci_low: float, ci_high: float, paper_sign: int) -> str:
    """Ours against the paper's sign (+1 or -1): "same" when the interval excludes 0 on the
    paper's side, "opposite" on the other side, else "undetermined"."""
    if paper_sign not in (1, -1):
        raise ValueError(f"paper sign {paper_sign}: want +1 or -1")
    if ci_low > 0 or ci_high < 0:
        return "same" if (ci_low > 0) == (paper_sign > 0) else "opposite"
    return "undetermined"
