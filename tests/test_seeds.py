"""Seeds as the unit of resampling, Holm and TOST (issue 35): stepwiser_lib.evals.seeds."""

import numpy as np
import pytest

from stepwiser_lib.evals import seeds as S


def _rate_counts(values):
    """(seeds, items) of 0/1 outcomes -> counts (seeds, items, 2): (success, trial)."""
    v = np.asarray(values, dtype=float)
    return np.stack([v, np.ones_like(v)], -1)


def test_statistics_from_counts_literal():
    assert S.mean_stat(np.array([3.0, 4.0])) == 75.0
    assert S.balanced_accuracy_stat(np.array([1.0, 2.0, 3.0, 3.0])) == 75.0  # (50 + 100) / 2
    f1 = S.f1_stat(2)(np.array([1.0, 2.0, 1.0, 1.0, 0.0, 2.0, 0.0, 2.0]))
    assert f1 == pytest.approx(100 * (2 * 0.5 * 1.0 / 1.5 + 0.0) / 2)  # split 2: both accuracies 0 -> F1 0
    a = _rate_counts([[1, 1, 0, 0], [1, 1, 1, 0]])  # seed 0: 50%, seed 1: 75%
    assert S.arm_estimate(a, S.mean_stat) == 62.5


def test_holm_literal_and_tost_and_direction():
    assert S.holm([0.01, 0.04, 0.03]) == pytest.approx([0.03, 0.06, 0.06])
    assert S.holm([0.5, 0.001]) == pytest.approx([0.5, 0.002])
    assert S.holm([0.6, 0.6, 0.6]) == pytest.approx([1.0, 1.0, 1.0])
    inside = np.random.default_rng(0).normal(0.2, 0.5, 10_000)
    eq = S.tost(inside, margin=2.0)
    assert eq["equivalent"] and eq["p"] < 0.001 and -2 < eq["ci_low"] < eq["ci_high"] < 2
    wide = S.tost(np.random.default_rng(0).normal(0.0, 3.0, 10_000), margin=2.0)
    assert not wide["equivalent"] and wide["p"] > 0.2
    with pytest.raises(ValueError, match="margin"):
        S.tost(inside, margin=0)
    assert [S.direction(1, 3, 1), S.direction(1, 3, -1), S.direction(-1, 3, 1), S.direction(-3, -1, -1)] == [
        "same",
        "opposite",
        "undetermined",
        "same",
    ]


def test_item_level_matches_scipys_bootstrap():
    """One seed per arm: the hierarchical bootstrap is the paired item bootstrap, whose percentile
    interval scipy computes independently; they agree within Monte Carlo error."""
    import scipy.stats as scipy_stats

    rng = np.random.default_rng(1)
    x, y = rng.random(400) < 0.7, rng.random(400) < 0.55  # 400 items: the difference moves in steps of 0.25
    d = S.difference(_rate_counts([x]), _rate_counts([y]), S.mean_stat, n_boot=20_000, seed=2)
    ref = scipy_stats.bootstrap(
        ((x.astype(float) - y.astype(float)) * 100,), np.mean, n_resamples=20_000, method="percentile", random_state=3
    ).confidence_interval
    assert d["estimate"] == pytest.approx(100 * (x.mean() - y.mean()), abs=0.01)
    assert d["ci_low"] == pytest.approx(ref.low, abs=0.5) and d["ci_high"] == pytest.approx(ref.high, abs=0.5)


def test_the_seed_level_widens_the_interval_as_scipy_says():
    """Items that do not vary within a seed: only the seeds vary, and the interval is scipy's
    bootstrap of the seed means. With item noise too, the hierarchical interval is wider than the
    item-only one of the same runs."""
    import scipy.stats as scipy_stats

    seed_means = np.array([0.5, 0.6, 0.7, 0.55, 0.65])
    arm = np.stack([np.stack([np.full(50, m), np.ones(50)], -1) for m in seed_means])  # (5, 50, 2)
    zero = np.stack([np.zeros(50), np.ones(50)], -1)[None]
    d = S.difference(arm, zero, S.mean_stat, n_boot=20_000, seed=0)
    ref = scipy_stats.bootstrap(
        (100 * seed_means,), np.mean, n_resamples=20_000, method="percentile", random_state=1
    ).confidence_interval
    assert d["estimate"] == 60.0 and d["seeds"] == [5, 1]
    assert d["ci_low"] == pytest.approx(ref.low, abs=0.5) and d["ci_high"] == pytest.approx(ref.high, abs=0.5)
    rng = np.random.default_rng(4)
    runs = np.stack([rng.random(60) < m for m in seed_means])
    other = np.stack([rng.random(60) < 0.5 for _ in seed_means])
    both = S.difference(_rate_counts(runs), _rate_counts(other), S.mean_stat, n_boot=5000)
    items = S.difference(
        _rate_counts(runs.mean(0, keepdims=True)), _rate_counts(other.mean(0, keepdims=True)), S.mean_stat, n_boot=5000
    )
    assert both["ci_high"] - both["ci_low"] > items["ci_high"] - items["ci_low"]


def test_pairing_strata_and_bad_input():
    rng = np.random.default_rng(0)
    a = _rate_counts(rng.random((3, 40)) < 0.6)
    same = S.difference(a, a, S.mean_stat, n_boot=2000, paired_seeds=True)
    assert same["estimate"] == 0 and same["ci_low"] == same["ci_high"] == 0 and same["p"] == 1.0
    w = S.item_weights(rng, ["a"] * 3 + ["b"] * 5, 100)
    assert (w[:, :3].sum(1) == 3).all() and (w[:, 3:].sum(1) == 5).all()  # each stratum keeps its size
    r1 = S.replicates([a], S.mean_stat, n_boot=500, seed=7)
    assert np.array_equal(r1, S.replicates([a], S.mean_stat, n_boot=500, seed=7))  # seeded
    with pytest.raises(ValueError, match="same seeds in every arm"):
        S.replicates([a, a[:2]], S.mean_stat, paired_seeds=True)
    with pytest.raises(ValueError, match="other items"):
        S.difference(a, a[:, :10], S.mean_stat)
    with pytest.raises(ValueError, match=r"\(seeds, items, C\)"):
        S.difference(a[0], a, S.mean_stat)


# ----------------------------------------------------------------------------- the t interval (issue 47)


def _score_counts(values):
    """(seeds, items) of scores -> counts (seeds, items, 2): (score, 1), read by ratio_stat as a mean."""
    v = np.asarray(values, dtype=float)
    return np.stack([v, np.ones_like(v)], -1)


def test_t_interval_on_variance_components_literal():
    # arm a: three seeds that differ by a constant on every item (1, 2, 3), arm b: 0 everywhere.
    # No item varies, so the item parts vanish: se^2 = var(1, 2, 3) / 3 = 1 / 3 with S - 1 = 2 df.
    a = _score_counts([[1.0] * 10, [2.0] * 10, [3.0] * 10])
    b = _score_counts([[0.0] * 10] * 3)
    c = S.components(a, b, S.ratio_stat, n_boot=200)
    assert c["s2"] == pytest.approx([1.0, 0.0]) and c["ve"] == pytest.approx([0.0, 0.0]) and c["vb"] == 0.0
    assert c["se"] == pytest.approx((1 / 3) ** 0.5) and c["df"] == pytest.approx(2.0)
    t = S.t_interval(2.0, c["se"], c["df"])
    half = 4.302653 * (1 / 3) ** 0.5  # t(0.975, 2 df)
    assert (t["ci_low"], t["ci_high"]) == (round(2 - half, 2), round(2 + half, 2))
    x = 2 / (1 / 3) ** 0.5  # two-sided p of a t with 2 df in closed form: 1 - x / sqrt(x^2 + 2)
    assert t["p"] == pytest.approx(1 - x / (x * x + 2) ** 0.5, abs=1e-4)
    # one seed per arm: items only (items - 1 df); se about the binomial sd of a mean of 0/1 items
    one = S.components(_score_counts([[1.0, 0.0] * 200]), _score_counts([[0.0] * 400]), S.ratio_stat, n_boot=4000)
    assert one["df"] == 399 and one["se"] == pytest.approx((0.25 / 400) ** 0.5, rel=0.06)
    assert S.t_interval(0.5, one["se"], float("inf"))["ci_low"] == round(0.5 - 1.959964 * one["se"], 2)


def test_tost_t_and_smaller_p_literal():
    e = S.tost_t(0.5, 1.0, float("inf"), margin=3.0)  # p = max(P(Z > 3.5), P(Z < -2.5)) = 0.00621
    assert e["p"] == pytest.approx(0.00621, abs=1e-4) and e["equivalent"]
    assert not S.tost_t(0.5, 2.0, 4.0, margin=3.0)["equivalent"]
    assert S.smaller_p(2.0, 2.0, float("inf"), 12.0) == pytest.approx(3e-7, abs=1e-6)  # (2 - 12) / 2 = -5 sd
    assert S.smaller_p(-2.0, 1.0, float("inf"), -1.0) == pytest.approx(0.8413, abs=1e-4)  # not smaller in size
    with pytest.raises(ValueError, match="paper's effect is 0"):
        S.smaller_p(1.0, 1.0, 4.0, 0.0)


def test_the_t_interval_keeps_its_coverage_where_the_percentile_bootstrap_of_few_seeds_does_not():
    """Simulated arms with a real seed effect: at 2 seeds the percentile bootstrap covers the true
    difference far less than 95% of the time (LAB_LOG.md, issue 47, has the full-size numbers)."""
    two = S.simulate_coverage(n_seeds=2, sims=60, n_boot=300, seed=1)
    assert two["t"] >= 0.88 and two["bootstrap"] <= two["t"] - 0.1
