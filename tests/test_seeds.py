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
