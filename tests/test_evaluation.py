import pytest

from stepwiser_lib.evals import evaluation


def _ex(problem, k, label):
    return {"problem_id": problem, "traj_id": f"{problem}/s0", "chunk_index": k, "label": label}


def _preds(judge, verdicts, labels, problems):
    ex = [_ex(p, i, lab) for i, (p, lab) in enumerate(zip(problems, labels))]
    out = [{"verdict": {True: "Positive", False: "Negative", None: None}[v], "score": 0.5} for v in verdicts]
    return evaluation.judge_predictions(judge, "rel_ratio", "dev", ex, out)


def test_judge_predictions_schema_and_unparsed_is_wrong():
    p = _preds("j", [True, None], [True, False], ["a", "a"])
    assert p[0] == {
        "judge": "j",
        "rule": "rel_ratio",
        "split": "dev",
        "problem_id": "a",
        "chunk_id": "a/s0#0",
        "label": True,
        "verdict": True,
        "score": 0.5,
        "truth": None,
        "analysis": None,
        "analysis_exact": None,
    }
    assert p[1]["verdict"] is None and not evaluation.correct(p[1])
    with pytest.raises(ValueError, match="2 judge outputs for 1 chunks"):
        evaluation.judge_predictions("j", "rel_ratio", "dev", [_ex("a", 0, True)], [{"verdict": "Positive"}] * 2)


def test_balanced_accuracy_ci_literal():
    # 4 problems x 2 chunks (one Positive, one Negative each); the judge says Positive everywhere
    labels = [True, False] * 4
    p = _preds("always", [True] * 8, labels, ["a", "a", "b", "b", "c", "c", "d", "d"])
    ci = evaluation.balanced_accuracy_ci(p, n_boot=200)
    assert ci == {"balanced_acc": 50.0, "low": 50.0, "high": 50.0, "n": 8, "problems": 4}  # every replicate: 50


def test_compare_pairs_by_chunk_and_reports_both_tests():
    problems = [f"p{i // 2}" for i in range(40)]
    labels = [True, False] * 20
    good = _preds("good", labels, labels, problems)  # always right
    bad = _preds("bad", [True] * 40, labels, problems)  # right on the Positives only
    r = evaluation.compare([list(reversed(good))], bad, n_boot=500)  # order does not matter: paired by chunk_id
    assert r["diff"] == 50.0 and r["low"] > 0 and r["verdict"] == "a higher"
    assert r["mcnemar"] == {"only_a": 20, "only_b": 0, "p": 1.91e-06}  # 2 / 2**20, three significant figures
    same = evaluation.compare([bad], bad, n_boot=200)
    assert same["diff"] == 0 and same["verdict"] == "undetermined" and same["mcnemar"]["p"] == 1.0
    two_seeds = evaluation.compare([good, bad], bad, n_boot=200)
    assert two_seeds["diff"] == 25.0 and "mcnemar" not in two_seeds
    # seeds on both sides: each side's mean balanced accuracy, (100 + 50) / 2 - (50 + 50) / 2
    both = evaluation.compare([good, bad], [bad, list(reversed(bad))], n_boot=200)
    assert both["diff"] == 25.0 and both["seeds_a"] == 2 and both["seeds_b"] == 2 and "mcnemar" not in both
    assert evaluation.compare([good], [bad], n_boot=200)["mcnemar"]["only_a"] == 20  # one run each: McNemar
    chance = evaluation.compare([good], evaluation.constant_judge(good), n_boot=200)
    assert chance["b"] == "always-Positive" and chance["diff"] == 50.0 and chance["low"] == chance["high"] == 50.0
    with pytest.raises(ValueError, match="same chunks"):
        evaluation.compare([good[:-1]], bad)


def test_rates_pair_by_problem_over_seeds():
    ids = [f"q{i}" for i in range(20)]
    a = evaluation.problem_predictions(
        "judge", "toy", 0, ids, [True] * 15 + [False] * 5
    ) + evaluation.problem_predictions("judge", "toy", 1, ids, [True] * 10 + [False] * 10)
    b = evaluation.problem_predictions("none", "toy", 0, ids, [True] * 10 + [False] * 10)
    assert a[0] == {"method": "judge", "task": "toy", "seed": 0, "problem_id": "q0", "correct": True}
    ci = evaluation.rate_ci(a, n_boot=300)
    assert ci["acc"] == 62.5 and ci["problems"] == 20 and ci["runs"] == 40 and ci["low"] < 62.5 < ci["high"]
    r = evaluation.compare_rates(a, b, n_boot=500)
    assert r["diff"] == 12.5 and r["test"] == "paired bootstrap by problem (20 problems)"
    assert r["low"] > 0 and r["verdict"] == "a higher"  # b never beats a on a problem: every replicate is >= 0
    with pytest.raises(ValueError, match="same problems"):
        evaluation.compare_rates(a, b[:-1])
    with pytest.raises(ValueError, match="2 outcomes for 1 problems"):
        evaluation.problem_predictions("m", "toy", 0, ["x"], [True, False])


def test_reference_judge_replaces_only_the_verdicts():
    base = _preds("model", [True, False], [True, True], ["a", "b"])
    ref = evaluation.reference_judge(base, "exact checker", [True, None])
    assert [(r["judge"], r["verdict"], r["score"], r["chunk_id"]) for r in ref] == [
        ("exact checker", True, 1.0, "a/s0#0"),
        ("exact checker", None, None, "b/s0#1"),
    ]
    with pytest.raises(ValueError, match="1 verdicts for 2 chunks"):
        evaluation.reference_judge(base, "x", [True])


def test_mean_sd_is_the_sample_spread():
    assert evaluation.mean_sd([2.0, 4.0, 6.0]) == (4.0, 2.0)
    assert evaluation.mean_sd([5.0]) == (5.0, 0.0)
    with pytest.raises(ValueError):
        evaluation.mean_sd([])


def test_balanced_threshold_literal():
    """Issue 59: the cut of p(Positive) with the best balanced accuracy on dev; ties to the
    smallest; a missing score is wrong at every cut."""
    # scores bunched near 0.9 (a judge whose greedy verdicts all say Positive) still rank the labels
    t, bal = evaluation.balanced_threshold([0.91, 0.95, 0.93, 0.97], [False, True, False, True])
    assert bal == 100.0 and 0.93 < t <= 0.95
    t, bal = evaluation.balanced_threshold([0.2, 0.2], [True, False])
    assert (t, bal) == (0.0, 50.0)  # nothing separates them: the smallest cut, chance
    t, bal = evaluation.balanced_threshold([None, 0.8, 0.1], [True, True, False])
    assert bal == 75.0  # the unscored Positive is wrong: (1/2 + 1) / 2
    with pytest.raises(ValueError, match="2 scores for 1 labels"):
        evaluation.balanced_threshold([0.1, 0.2], [True])
