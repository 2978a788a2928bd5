"""Small statistics the comparisons use (stdlib only): intervals, paired tests, claim verdicts.
Each function: one formula, one literal test."""

from __future__ import annotations

import random
from math import comb


def mcnemar_exact(b: int, c: int, alternative: str = "greater") -> float:
    """Exact McNemar test on paired binary outcomes: ``b`` pairs where only the first is right,
    ``c`` where only the second is. Under the null each discordant pair goes either way with
    probability 1/2, so ``b ~ Binomial(b + c, 1/2)``.

    ``alternative="greater"``: P(X >= b), small when the first is right more often;
    ``"two-sided"``: twice the smaller tail, capped at 1. No discordant pairs: 1.0."""
    n = b + c
    if b < 0 or c < 0:
        raise ValueError(f"counts must be >= 0, got b={b}, c={c}")
    if n == 0:
        return 1.0
    upper = sum(comb(n, k) for k in range(b, n + 1)) / 2**n
    if alternative == "greater":
        return upper
    if alternative == "two-sided":
        lower = sum(comb(n, k) for k in range(0, b + 1)) / 2**n
        return min(1.0, 2 * min(upper, lower))
    raise ValueError(f"alternative must be 'greater' or 'two-sided', not {alternative!r}")


#: The normal quantile of a two-sided 95% interval.
Z95 = 1.959963984540054


def wilson(k: int, n: int, z: float = Z95) -> tuple[float, float]:
    """Wilson score interval of a binomial proportion ``k / n`` (95% by default): the ``p`` with
    ``|k/n - p| <= z * sqrt(p (1 - p) / n)``. ``n = 0``: (0, 1)."""
    if n < 0 or not 0 <= k <= n:
        raise ValueError(f"need 0 <= k <= n, got k={k}, n={n}")
    if n == 0:
        return 0.0, 1.0
    p, z2 = k / n, z * z
    centre = (p + z2 / (2 * n)) / (1 + z2 / n)
    half = z * ((p * (1 - p) / n + z2 / (4 * n * n)) ** 0.5) / (1 + z2 / n)
    return max(0.0, centre - half), min(1.0, centre + half)


def _replicates(stat, n_items: int, clusters: list | None, n_boot: int, seed: int) -> list[float]:
    """``n_boot`` values of ``stat`` on cluster-bootstrap replicates (whole clusters drawn with
    replacement; every item its own cluster when ``clusters`` is None)."""
    if n_items == 0:
        raise ValueError("no items to bootstrap")
    ids = clusters if clusters is not None else list(range(n_items))
    if len(ids) != n_items:
        raise ValueError(f"{len(ids)} cluster ids for {n_items} items")
    groups: dict = {}
    for i, c in enumerate(ids):
        groups.setdefault(c, []).append(i)
    members = list(groups.values())
    rng = random.Random(seed)
    return [stat([i for g in rng.choices(members, k=len(members)) for i in g]) for _ in range(n_boot)]


def _percentiles(reps: list[float], level: float) -> tuple[float, float]:
    reps, tail = sorted(reps), (1 - level) / 2
    return reps[int(tail * (len(reps) - 1))], reps[int(round((1 - tail) * (len(reps) - 1)))]


def cluster_bootstrap(
    stat, n_items: int, clusters: list | None = None, n_boot: int = 2000, seed: int = 0, level: float = 0.95
) -> tuple[float, float, float]:
    """Percentile bootstrap of ``stat(indices)`` over items that are correlated within a cluster
    (the chunks of one problem): each replicate draws whole clusters with replacement. Returns
    (estimate, low, high), the estimate being ``stat`` on all items. ``stat`` receives a list of
    item indices (with repeats)."""
    lo, hi = _percentiles(_replicates(stat, n_items, clusters, n_boot, seed), level)
    return stat(list(range(n_items))), lo, hi


def _stratified_replicates(stat, strata: list, n_boot: int, seed: int) -> list[float]:
    if not strata:
        raise ValueError("no items to bootstrap")
    groups: dict = {}
    for i, s in enumerate(strata):
        groups.setdefault(s, []).append(i)
    rng = random.Random(seed)
    return [stat([i for g in groups.values() for i in rng.choices(g, k=len(g))]) for _ in range(n_boot)]


def stratified_bootstrap(
    stat, strata: list, n_boot: int = 2000, seed: int = 0, level: float = 0.95
) -> tuple[float, float, float]:
    """Percentile bootstrap of ``stat(indices)`` that resamples items within each stratum (a
    benchmark split), keeping every stratum's size: for a score averaged over splits such as
    ProcessBench's mean F1. Returns (estimate, low, high)."""
    lo, hi = _percentiles(_stratified_replicates(stat, strata, n_boot, seed), level)
    return stat(list(range(len(strata)))), lo, hi


def stratified_difference(stat_a, stat_b, strata: list, n_boot: int = 2000, seed: int = 0, level: float = 0.95) -> dict:
    """:func:`paired_difference` with items resampled within strata (both statistics on the same
    replicate): the difference, its interval and the two-sided bootstrap p-value."""

    def diff(idx):
        return stat_a(idx) - stat_b(idx)

    return _difference(
        _stratified_replicates(diff, strata, n_boot, seed),
        diff(list(range(len(strata)))),
        level,
        "paired bootstrap within strata",
    )


def balanced_accuracy(labels: list[bool], correct: list[bool]) -> float:
    """Mean of the accuracy on Positive and on Negative items (%), the judge metric of paper
    §4.2 (one class missing: the accuracy of the other)."""
    acc = [
        sum(c for lab, c in zip(labels, correct) if lab == cls) / n
        for cls in (True, False)
        if (n := sum(lab == cls for lab in labels))
    ]
    return 100 * sum(acc) / len(acc) if acc else float("nan")


def paired_difference(
    stat_a, stat_b, n_items: int, clusters: list | None = None, n_boot: int = 2000, seed: int = 0, level: float = 0.95
) -> dict:
    """Paired bootstrap of ``stat_a - stat_b`` on the same items, resampled by cluster: both
    statistics see the same replicate, so what the two share cancels. Returns the difference,
    its interval and a two-sided bootstrap p-value (twice the share of replicates at or beyond
    zero on the far side, counted as (k + 1) / (n_boot + 1) so it is never 0, capped at 1)."""

    def diff(idx):
        return stat_a(idx) - stat_b(idx)

    return _difference(
        _replicates(diff, n_items, clusters, n_boot, seed),
        diff(list(range(n_items))),
        level,
        "paired bootstrap by cluster",
    )


def _difference(reps: list[float], est: float, level: float, test: str) -> dict:
    """A paired difference from its bootstrap replicates: estimate, percentile interval and the
    two-sided p-value (far + 1) / (n_boot + 1), doubled: never 0, only below its resolution."""
    lo, hi = _percentiles(reps, level)
    far = sum(r <= 0 for r in reps) if est > 0 else sum(r >= 0 for r in reps)
    return {"diff": est, "low": lo, "high": hi, "p": min(1.0, 2 * (far + 1) / (len(reps) + 1)), "test": test}


def claim_verdict(low: float, high: float, direction: int) -> str:
    """A paper claim against one run's paired interval of (ours - comparison): *same direction*
    when the interval excludes zero in the paper's ``direction`` (+1: the paper's method is
    higher, -1: lower), *opposite direction* when it excludes zero the other way, else
    *undetermined*. The words of the claims table (:mod:`stepwiser_lib.evals.claims`), which also
    resamples seeds and corrects for the table's many rows; one run's item interval says less."""
    if direction not in (1, -1):
        raise ValueError(f"direction must be +1 or -1, not {direction!r}")
    if low > 0 or high < 0:
        return "same direction" if (low > 0) == (direction > 0) else "opposite direction"
    return "undetermined"
