import pytest

from stepwiser_lib.evals import stats


def test_mcnemar_exact_literal():
    assert stats.mcnemar_exact(0, 0) == 1.0
    assert stats.mcnemar_exact(3, 0) == pytest.approx(1 / 8)  # all three discordant pairs one way
    assert stats.mcnemar_exact(5, 1) == pytest.approx(7 / 64)  # P(X >= 5), X ~ Bin(6, 1/2)
    assert stats.mcnemar_exact(5, 1, "two-sided") == pytest.approx(14 / 64)
    assert stats.mcnemar_exact(1, 5, "two-sided") == pytest.approx(14 / 64)
    with pytest.raises(ValueError):
        stats.mcnemar_exact(-1, 2)


def test_wilson_literal():
    lo, hi = stats.wilson(8, 10)  # textbook: 0.490 to 0.943
    assert (round(lo, 3), round(hi, 3)) == (0.49, 0.943)
    assert stats.wilson(0, 0) == (0.0, 1.0)
    lo, hi = stats.wilson(0, 20)
    assert lo == 0.0 and round(hi, 3) == 0.161
    with pytest.raises(ValueError):
        stats.wilson(3, 2)


def test_balanced_accuracy_literal():
    labels = [True, True, True, False]
    assert stats.balanced_accuracy(labels, [True, True, False, False]) == pytest.approx(100 * (2 / 3 + 0) / 2)
    assert stats.balanced_accuracy([True, True], [True, False]) == 50.0  # one class: its accuracy


def test_cluster_bootstrap_resamples_whole_clusters():
    """Items of one cluster always travel together: with two clusters of constant values the
    replicate means can only be 0, 0.5 or 1 (never a mix inside a cluster)."""
    values, seen = [0, 0, 0, 1, 1, 1], set()

    def mean(idx):
        m = sum(values[i] for i in idx) / len(idx)
        seen.add(round(m, 6))
        return m

    est, lo, hi = stats.cluster_bootstrap(mean, 6, clusters=["a"] * 3 + ["b"] * 3, n_boot=200)
    assert est == 0.5 and seen <= {0.0, 0.5, 1.0} and (lo, hi) == (0.0, 1.0)
    # item-level resampling of 100 Bernoulli(0.3) outcomes: close to the Wilson interval
    outcomes = [1] * 30 + [0] * 70
    est, lo, hi = stats.cluster_bootstrap(lambda idx: sum(outcomes[i] for i in idx) / len(idx), 100, n_boot=4000)
    w = stats.wilson(30, 100)
    assert est == 0.3 and abs(lo - w[0]) < 0.03 and abs(hi - w[1]) < 0.03
    assert stats.cluster_bootstrap(lambda idx: len(idx), 3, n_boot=10, seed=1) == stats.cluster_bootstrap(
        lambda idx: len(idx), 3, n_boot=10, seed=1
    )
    with pytest.raises(ValueError):
        stats.cluster_bootstrap(lambda idx: 0, 3, clusters=[1, 2])


def test_paired_difference_cancels_what_items_share():
    """Two judges right on the same hard items except 10 of 100: the paired interval is narrow and
    excludes zero; shifting b's rights elsewhere keeps the difference but not the pairing."""
    a = [1] * 60 + [0] * 40
    b = [1] * 50 + [0] * 50  # b is a minus 10 items
    r = stats.paired_difference(lambda i: sum(a[k] for k in i) / len(i), lambda i: sum(b[k] for k in i) / len(i), 100)
    assert r["diff"] == pytest.approx(0.1) and 0.04 < r["low"] < r["high"] < 0.17 and r["p"] < 0.01
    always = stats.paired_difference(lambda i: 1.0, lambda i: 0.0, 10, n_boot=99)  # every replicate +1
    assert always["p"] == pytest.approx(2 * 1 / 100)  # (0 + 1) / (99 + 1), twice: never 0
    same = stats.paired_difference(lambda i: sum(a[k] for k in i), lambda i: sum(a[k] for k in i), 100)
    assert same["diff"] == 0 and same["p"] == 1.0 and same["test"] == "paired bootstrap by cluster"


def test_claim_verdict_literal():
    assert stats.claim_verdict(0.5, 3.0, +1) == "same direction"
    assert stats.claim_verdict(-3.0, -0.5, -1) == "same direction"
    assert stats.claim_verdict(-3.0, -0.5, +1) == "opposite direction"
    assert stats.claim_verdict(-1.0, 2.0, +1) == "undetermined"
    with pytest.raises(ValueError):
        stats.claim_verdict(0, 1, 0)


def test_stratified_bootstrap_keeps_each_stratum():
    strata = ["a"] * 3 + ["b"] * 5
    sizes = set()

    def stat(idx):
        sizes.add((sum(strata[i] == "a" for i in idx), sum(strata[i] == "b" for i in idx)))
        return len(idx)

    assert stats.stratified_bootstrap(stat, strata, n_boot=50) == (8, 8, 8)
    assert sizes == {(3, 5)}  # every replicate holds 3 items of a and 5 of b
