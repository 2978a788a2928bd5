import json

from stepwiser_lib.evals import claims


def _c(claim, a, b, diff, low, high):
    return {
        "claim": claim,
        "a": a,
        "b": b,
        "diff": diff,
        "low": low,
        "high": high,
        "test": "paired bootstrap by problem (9 problems)",
    }


def test_claims_rows_pair_paper_and_ours(tmp_path):
    (tmp_path / "judges.json").write_text(
        json.dumps(
            {
                "comparisons": [
                    _c(
                        "RL beats its warm-up", "stepwiser:rel_ratio", "warm-up (before RL)", 5.0, 1.0, 9.0
                    ),  # not a paper claim
                    _c(
                        "generative RL beats discriminative SFT",
                        "stepwiser:rel_ratio@seed1",
                        "disc_sft:rel_ratio",
                        -4.0,
                        -7.0,
                        -1.0,
                    ),
                ]
            }
        )
    )
    (tmp_path / "chunk_reset.json").write_text(
        json.dumps(
            {
                "comparisons": [
                    _c(
                        "the judge helps chunk-reset (Table 7)",
                        "stepwiser:rel_ratio",
                        "chunk policy (no judge)",
                        3.0,
                        0.5,
                        6.0,
                    )
                ]
            }
        )
    )
    (tmp_path / "rsft.json").write_text(
        json.dumps(
            {
                "comparisons": [
                    _c("x", "outcome-based selection", "chunk policy (greedy, no RS-FT)", -1.0, -3.0, 1.0),
                    _c("y", "disc_sft:abs_q", "outcome-based selection", 1.0, -1.0, 3.0),
                ]
            }
        )
    )
    rows = claims.rows(tmp_path)
    got = [(r["paper"], r["ours"], r["verdict"]) for r in rows]
    assert got == [
        (12.1, -4.0, "opposite direction"),  # Table 5 rel_ratio: 36.2 - 24.1
        (5.7, 3.0, "same direction"),  # Table 7 1.5B: 36.9 - 31.2
        (0.8, -1.0, "undetermined"),  # Table 8: 60.9 - 60.1
        (0.9, 1.0, "undetermined"),
    ]  # Table 8 disc abs_q: 61.8 - 60.9
    assert rows[0]["claim"].startswith("the generative RL judge") and "Table 5" in rows[0]["paper_source"]
    md = claims.markdown(tmp_path)
    assert md[0].startswith("| paper claim |") and "**opposite direction**" in md[2] and len(md) == 6
    assert claims.markdown(tmp_path / "none") == []


def test_toy_processbench_orderings_meet_the_papers_tables_5_and_6(tmp_path):
    names = [
        "stepwiser:rel_ratio",
        "stepwiser:abs_q",
        "disc_sft:rel_ratio",
        "no_balance_rl:rel_ratio",
        "warm-up (before RL)",
    ]
    pairs = claims.judge_orderings(names)
    assert [(a, b) for _, a, b in pairs] == [
        ("stepwiser:rel_ratio", "disc_sft:rel_ratio"),
        ("stepwiser:rel_ratio", "stepwiser:abs_q"),
        ("stepwiser:rel_ratio", "no_balance_rl:rel_ratio"),
    ]
    assert pairs[0][0] == "the generative RL judge is better than the discriminative SFT judge (rel_ratio)"
    (tmp_path / "processbench.json").write_text(
        json.dumps(
            {
                "comparisons": [
                    {**_c(claim, a, b, 2.0, -1.0, 5.0), "test": "paired bootstrap by solution"} for claim, a, b in pairs
                ]
            }
        )
    )
    rows = claims.rows(tmp_path)
    assert [r["paper"] for r in rows] == [
        12.1,  # 1.5B: 36.2 - 24.1
        0.1,  # 1.5B: 36.2 - 36.1
        12.6,
    ]  # balancing exists at 7B only: 60.5 - 47.9
    assert "7B" in rows[2]["paper_source"] and all(r["verdict"] == "undetermined" for r in rows)


def test_table4_and_same_rule_judge_orderings_enter_the_claims_table(tmp_path):
    (tmp_path / "self_segmentation.json").write_text(
        json.dumps(
            {
                "comparisons": [
                    {
                        **_c("self-segmentation gives fewer steps per solution", "chunk", "base", -1.5, -1.7, -1.3),
                        "field": "steps",
                    },
                    {
                        **_c("self-segmentation keeps accuracy", "chunk", "base", -20.0, -25.0, -15.0),
                        "field": "correct",
                    },
                ]
            }
        )
    )
    (tmp_path / "judges.json").write_text(
        json.dumps(
            {
                "comparisons": [
                    _c(
                        "the judge's chain of thought helps (RL on both)",
                        "stepwiser:rel_ratio",
                        "no_cot_rl:rel_ratio",
                        1.0,
                        -2.0,
                        4.0,
                    ),
                    _c(
                        "the judge's chain of thought helps (RL on both)",
                        "stepwiser:rel_ratio",
                        "rsft:rel_ratio",
                        1.0,
                        -2.0,
                        4.0,
                    ),
                ]
            }
        )
    )  # wrong pair: left out
    rows = claims.rows(tmp_path)
    assert [(r["paper"], r["verdict"]) for r in rows] == [
        (-3.6, "same direction"),  # Table 4 1.5B steps: 6.0 - 9.6; fewer steps is the paper's direction
        (0.5, "opposite direction"),  # Table 4 1.5B accuracy: 44.7 - 44.2
        (1.9, "undetermined"),
    ]  # Table 6 1.5B no-CoT: 36.2 - 34.3 (rel_ratio)
    assert "steps per solution" in rows[0]["paper_source"] and "test chunks" in rows[2]["paper_source"]


def test_rows_of_one_results_file(tmp_path):
    c = {
        "claim": "self-segmentation gives fewer steps per solution",
        "field": "steps",
        "a": "chunk",
        "b": "base",
        "diff": -1.0,
        "low": -2.0,
        "high": -0.5,
        "test": "t",
    }
    (tmp_path / "self_segmentation.json").write_text(json.dumps({"comparisons": [c]}))
    assert [r["file"] for r in claims.rows(tmp_path)] == ["self_segmentation"]
    assert claims.rows(tmp_path, files=["rsft"]) == []
    assert claims.rows(tmp_path, files=["self_segmentation"])[0]["question"] == c["claim"]


# ----------------------------------------------------------------------------- the seeded claims table (issue 35)

import numpy as np  # noqa: E402

from stepwiser_lib.evals import paper_results as P  # noqa: E402
from stepwiser_lib.evals import seeds  # noqa: E402


def _judge_preds(name, verdicts, labels, problems, rule="rel_ratio"):
    return [
        {
            "judge": name,
            "rule": rule,
            "split": "test",
            "problem_id": q,
            "chunk_id": f"{q}#{i}",
            "label": lab,
            "verdict": v,
            "score": float(bool(v)),
            "truth": lab,
        }
        for i, (v, lab, q) in enumerate(zip(verdicts, labels, problems))
    ]


def _write(path, recs):
    path.write_text("".join(json.dumps(r) + "\n" for r in recs))


def test_the_paper_noise_estimates():
    assert round(P.pb_avg_f1_se(), 3) == 1.025  # delta method on Table 10's 1.5B Gen + CoT + RL, Rel-Ratio
    assert (
        round(P.pb_avg_f1_se([(50.0, 50.0)] * 4, [(100, 100)] * 4), 3) == 1.768
    )  # E = C = 0.5: 100 * sqrt(4 * 2 * 0.5**2 * 0.25 / 100) / 4
    assert round(P.accuracy_se(50.0, 100), 6) == 5.0
    assert round(P.mean_accuracy_se(50.0, 50.0), 4) == round(
        0.5 * (25 / 500 * 100**2 / 100 + 25 / 1000 * 100) ** 0.5, 4
    )


def test_verdict_rules():
    base = {"uninformative": None, "paper_significant": True, "paper_diff": 12.1, "estimate": 3.0, "p_holm": 0.01}
    assert claims.verdict(base) == "same direction"
    assert claims.verdict({**base, "estimate": -3.0}) == "opposite direction"
    assert claims.verdict({**base, "p_holm": 0.2}) == "undetermined"
    # the paper's difference inside an upper bound on its noise: not shown, unless ours decides
    assert claims.verdict({**base, "paper_significant": False, "p_holm": 0.2}) == "paper effect not shown"
    assert claims.verdict({**base, "paper_significant": False}) == "same direction"
    assert claims.verdict({**base, "uninformative": "rsft: constant"}) == "uninformative"
    assert claims.verdict({**base, "equivalence": {}, "p_holm": 0.01}) == "equivalent"
    assert claims.verdict({**base, "equivalence": {}, "p_holm": 0.3}) == "not shown equivalent"
    # issue 47: an interval that excludes the paper's effect (same units, Holm over those rows)
    assert claims.verdict({**base, "p_holm": 0.2, "p_smaller_holm": 0.01}) == "smaller than the paper's"
    assert claims.verdict({**base, "p_holm": 0.2, "p_smaller_holm": 0.2}) == "undetermined"


def test_direction_follows_holm_and_size_says_when_units_differ():
    base = {"uninformative": None, "paper_significant": True, "paper_diff": 12.1, "estimate": 3.0, "p_holm": 0.01}
    assert claims.direction(base) == "same" and claims.direction({**base, "estimate": -1.0}) == "opposite"
    assert claims.direction({**base, "p_holm": 0.06}) == "undetermined"  # raw p may be small: Holm decides
    assert claims.direction({**base, "equivalence": {}}) == "–" and claims.direction({**base, "p_holm": None}) == "–"
    assert claims.size({**base, "p_smaller_holm": 0.001}) == "smaller"
    assert claims.size({**base, "p_smaller_holm": 0.5}) == "not shown smaller"
    assert claims.size({**base, "same_units": False}) == "units differ"
    assert claims.size({**base, "paper_significant": False}) == "–"


def test_degenerate_runs_are_counted_by_their_positive_rate():
    labels = [bool(i % 2) for i in range(40)]
    problems = [f"p{i // 4}" for i in range(40)]
    preds = _judge_preds("stepwiser:rel_ratio", labels, labels, problems)  # 50% Positive
    preds += _judge_preds("stepwiser:rel_ratio@seed1", [True] * 35 + [False] * 5, labels, problems)  # 87.5%
    preds += _judge_preds("stepwiser:rel_ratio@seed2", [True] * 6 + [False] * 34, labels, problems)  # 15%: kept
    assert claims.positive_rate(preds, "stepwiser:rel_ratio@seed1", "rel_ratio") == 87.5
    assert claims.degenerate_runs(preds, "stepwiser:rel_ratio") == (1, 3)
    # a run's other reading (a verdict-only judge at its dev threshold) is neither a run nor a seed
    preds += _judge_preds("stepwiser:rel_ratio@seed1 (dev threshold)", labels, labels, problems)
    preds += _judge_preds("stepwiser:rel_ratio@seed10", labels, labels, problems)
    assert claims.degenerate_runs(preds, "stepwiser:rel_ratio") == (1, 4)
    names = {p["judge"] for p in preds}
    assert claims._runs(names, "stepwiser:rel_ratio")[-1] == "stepwiser:rel_ratio@seed2"
    assert claims.degenerate_runs(preds, "chunk policy (no judge)") is None
    assert claims.degenerate_runs(preds, "disc_sft:rel_ratio") is None and claims.degenerate_runs(None, "x:y") is None


def test_claims_table_resamples_seeds_names_directions_and_marks_arms_that_never_left_their_start(tmp_path):
    rng = np.random.default_rng(0)
    problems = [f"label-0-{i // 4}" for i in range(160)]  # 40 problems, 4 chunks each
    labels = [bool(i % 2) for i in range(160)]
    preds = _judge_preds("warm-up (before RL)", [False] * 160, labels, problems)
    for run in ["", "@seed1", "@seed2"]:
        good = [lab if rng.random() < 0.8 else not lab for lab in labels]  # about 80% right
        fair = [lab if rng.random() < 0.6 else not lab for lab in labels]  # about 60% right
        preds += _judge_preds(f"stepwiser:rel_ratio{run}", good, labels, problems)
        preds += _judge_preds(f"disc_sft:rel_ratio{run}", fair, labels, problems)
        preds += _judge_preds(
            f"rsft:rel_ratio{run}", [False] * 159 + [True], labels, problems
        )  # the warm-up's verdicts
    _write(tmp_path / "judge_predictions.jsonl", preds)
    rows = claims.table(tmp_path, n_boot=2000)
    by = {(r["a"], r["b"]): r for r in rows}
    gen = by[("stepwiser:rel_ratio", "disc_sft:rel_ratio")]
    assert set(claims.CLAIM_FIELDS) <= set(gen)
    assert gen["seeds"] == {"stepwiser:rel_ratio": 3, "disc_sft:rel_ratio": 3} and gen["items"] == 40
    assert gen["paper_diff"] == 12.1 and gen["paper_significant"] is True  # 36.2 - 24.1 at 1.5B, z about 8
    assert 10 < gen["estimate"] < 30 and gen["ci_low"] > 0 and gen["direction"] == "same"
    assert gen["verdict"] == "same direction" and gen["p_holm"] >= gen["p"]
    # issue 47: GRPO against the judge it starts from, a row of ours alone, decided after Holm
    start = by[("stepwiser:rel_ratio", "warm-up (before RL)")]
    assert start["paper_diff"] is None and start["verdict"] == "a higher" and start["direction"] == "–"
    assert start["seeds"] == {"stepwiser:rel_ratio": 3, "warm-up (before RL)": 1} and start["p_holm"] is not None
    rs = by[("stepwiser:rel_ratio", "rsft:rel_ratio")]
    assert rs["verdict"] == "uninformative" and rs["p_holm"] is None and "3 of 3 runs" in rs["uninformative"]
    assert claims.degenerate(preds, "rsft:rel_ratio", "rel_ratio") and not claims.degenerate(
        preds, "stepwiser:rel_ratio", "rel_ratio"
    )
    # the estimate is the mean over seeds of each arm's balanced accuracy, its difference
    arm = lambda v: claims.judge_arm(
        preds,
        claims._runs({p["judge"] for p in preds}, v),
        "rel_ratio",  # noqa: E731
        sorted(set(problems)),
    )
    want = seeds.arm_estimate(arm("stepwiser:rel_ratio"), seeds.balanced_accuracy_stat) - seeds.arm_estimate(
        arm("disc_sft:rel_ratio"), seeds.balanced_accuracy_stat
    )
    assert abs(gen["estimate"] - want) < 0.01
    doc = claims.write(tmp_path, "unit", n_boot=500)
    assert json.loads((tmp_path / "claims.json").read_text())["claims"][0]["claim"] == doc["claims"][0]["claim"]
    md = claims.table_markdown(doc)
    assert md[0] == claims.summary_line(doc) and md[0].startswith(f"{len(doc['claims'])} claims: ")
    assert "*uninformative*" in md[0] and "Seeds per arm: 1, 3" in md[0] and "Single-seed" not in md[0]
    assert "rsft:rel_ratio 3 of 3" in md[0]  # every RS-FT run says Negative on 159 of 160 chunks
    assert gen["degenerate"] == {"stepwiser:rel_ratio": [0, 3], "disc_sft:rel_ratio": [0, 3]}
    assert gen["size"] == "units differ" and "p_smaller" not in gen  # balanced step accuracy against F1
    single = {**doc, "claims": [{**r, "seeds": {k: 1 for k in r["seeds"]}} for r in doc["claims"]]}
    assert claims.table_markdown(single)[0].startswith("**Single-seed table**")
    assert (
        md[2].startswith("| paper claim |")
        and len(md) == 4 + len(doc["claims"])
        and "**uninformative**" in "\n".join(md)
    )


def test_claim_text_follows_the_papers_sign_and_the_label_rule_rows_are_not_established_at_1p5b(tmp_path):
    preds = []
    for j, _rule in (("stepwiser:rel_effective", "rel_effective"), ("stepwiser:abs_q", "abs_q")):
        for i in range(40):
            preds.append(
                {
                    "judge": j,
                    "split": "toy_2step",
                    "id": f"toy_2step-{i}",
                    "label": -1 if i % 2 else 1,
                    "prediction": -1 if (i % 3) else 1,
                }
            )
    _write(tmp_path / "processbench_predictions.jsonl", preds)
    (row,) = claims.table(tmp_path, n_boot=500)
    # the paper's 1.5B difference is -1.3 (34.8 - 36.1): the row says "worse", and that is inside the
    # paper's unpaired noise, an upper bound on the noise of its paired difference: not shown
    assert row["claim"] == "Rel-Effective labels train a worse judge than Abs-Q labels"
    assert row["paper_diff"] == -1.3 and row["paper_significant"] is False and "7B: +8.1" in row["paper_source"]
    assert row["verdict"] == "paper effect not shown" and row["estimate"] == 0.0
    assert claims.PAPER_NOISE_BOUND in row["paper_noise"]


def test_keeps_accuracy_is_an_equivalence_test(tmp_path):
    recs = [
        {
            "method": m,
            "task": "toy",
            "seed": s,
            "problem_id": f"eval-0-{q}",
            "sample": k,
            "correct": (q + k) % 3 != 0,
            "steps": 5 if m == "base" else 3,
        }
        for m in ("base", "chunk")
        for s in (1,)
        for q in range(300)
        for k in range(4)
    ]
    _write(tmp_path / "self_segmentation_predictions.jsonl", recs)
    steps, keeps = claims.table(tmp_path, n_boot=1000)
    assert steps["estimate"] == -2.0 and steps["paper_diff"] == -3.6 and steps["verdict"] == "same direction"
    assert keeps["equivalence"]["margin"] == claims.KEEPS_MARGIN and keeps["estimate"] == 0.0
    assert keeps["verdict"] == "equivalent" and keeps["paper_significant"] is False  # 44.7 vs 44.2: +0.5


def test_ratio_stat():
    assert seeds.ratio_stat(np.array([[10.0, 4.0]])).tolist() == [2.5]


def test_chunk_reset_arms_that_share_sampling_seeds_are_resampled_together(tmp_path):
    recs = [
        {"method": m, "task": "toy", "seed": s, "problem_id": f"toy/eval-0-{q}", "correct": (q + s) % 3 != 0}
        for m in ("chunk policy (no judge)", "stepwiser:rel_ratio")
        for s in (0, 1)
        for q in range(64)
    ]
    _write(tmp_path / "chunk_reset_predictions.jsonl", recs)
    (row,) = claims.table(tmp_path, n_boot=500)
    # identical arms on shared seeds: every replicate draws the same seeds and problems for both, so 0 exactly
    assert row["estimate"] == 0.0 and row["ci_low"] == 0.0 == row["ci_high"]
    assert set(row["seed_units"].values()) == {"sampling seeds (shared)"} and row["seeds"] == {
        "stepwiser:rel_ratio": 2,
        "chunk policy (no judge)": 2,
    }


def test_is_paper_claim_tells_a_paper_claim_from_our_own_question():
    ours = {"claim": "RL beats its warm-up", "a": "stepwiser:rel_ratio", "b": "warm-up (before RL)"}
    paper = {"claim": "generative RL beats discriminative SFT", "a": "stepwiser:rel_ratio", "b": "disc_sft:rel_ratio"}
    assert claims.is_paper_claim("judges", paper) and not claims.is_paper_claim("judges", ours)
    assert claims.other_comparisons("judges", [paper, ours]) == [ours]
    greedy = {"claim": "greedy decoding beats sampling (no judge)", "a": "chunk policy (greedy, no judge)", "b": "none"}
    reset = {"claim": "x", "a": "stepwiser:rel_ratio", "b": "chunk policy (no judge)"}
    assert claims.other_comparisons("chunk_reset", [reset, greedy]) == [greedy]


def test_paper_rate_reads_a_rule_under_its_setting():
    rates = {"abs_q": 70.2, "rel_ratio_gamma0.8": 56.5}
    assert P.paper_rate(rates, "abs_q") == 70.2 and P.paper_rate(rates, "rel_ratio") == 56.5
    assert P.paper_rate(rates, "rel_effective") is None


def test_a_p_value_below_what_is_stored_is_not_printed_as_zero():
    assert claims._fmt_p(0.0) == "<0.0001"
    assert claims._fmt_p(0.00004) == "<0.0001"
    assert claims._fmt_p(0.0404) == "0.0404"
    assert claims._fmt_p(1.0) == "1"


def test_undefined_statistics_and_unequal_seed_sets_decide_nothing_CL01_CL03_CL05(tmp_path):
    """Issue 49 (reliability review 3): CL01, a balanced accuracy on test chunks that are all
    Positive is undefined; it became an interval of NaN with p 0.001 and "opposite direction".
    CL03, chunk-reset arms on seeds {0, 1} and {7, 8} were paired as shared sampling seeds. CL05,
    a cut predictions line named neither file nor line."""
    import pytest

    from stepwiser_lib.core import io

    problems = [f"label-0-{i // 4}" for i in range(80)]
    labels = [True] * 80  # no Negative chunk: balanced accuracy has no value
    preds = _judge_preds("warm-up (before RL)", [False] * 80, labels, problems)
    for run in ["", "@seed1"]:
        preds += _judge_preds(f"stepwiser:rel_ratio{run}", [i % 3 > 0 for i in range(80)], labels, problems)
        preds += _judge_preds(f"disc_sft:rel_ratio{run}", [i % 2 > 0 for i in range(80)], labels, problems)
    _write(tmp_path / "judge_predictions.jsonl", preds)
    doc = claims.write(tmp_path, "unit", n_boot=200)
    rows = doc["claims"]
    assert rows and all(r["verdict"] == "undefined" and r["p"] is None and r["p_holm"] is None for r in rows)
    assert all(r["direction"] == "–" and r["size"] == "–" and r["estimate"] is None for r in rows)
    assert all("| undefined |" in line for line in claims.table_markdown(doc)[4:])
    assert np.isnan(seeds.p_two_sided(np.array([0.1, np.nan, 0.2])))

    recs = [
        {"method": m, "task": "toy", "seed": s, "problem_id": f"toy/eval-0-{q}", "correct": (q + s) % 3 != 0}
        for m, ss in (("chunk policy (no judge)", (0, 1)), ("stepwiser:rel_ratio", (7, 8)))
        for s in ss
        for q in range(64)
    ]
    cr = tmp_path / "cr"
    cr.mkdir()
    _write(cr / "chunk_reset_predictions.jsonl", recs)
    (row,) = claims.table(cr, n_boot=200)
    assert set(row["seed_units"].values()) == {"seeds"}  # unpaired: not the same seeds
    (cr / "chunk_reset_predictions.jsonl").write_text(
        (cr / "chunk_reset_predictions.jsonl").read_text() + '{"method": "x", "seed": 0, "problem_id'
    )
    with pytest.raises(io.RecordError, match=r"chunk_reset_predictions.jsonl, line 257"):
        claims.table(cr, n_boot=200)


def test_what_rl_adds_rows_pair_each_arm_with_its_own_start_rule_and_analysis_issue_59(tmp_path):
    """Issue 59's rows of ours alone: GRPO against a fixed rule reading its start's analysis, the
    exact-analysis share after RL against the start's (chunk by chunk), the oracle warm-up's arm
    against the oracle-free one; and the uninformative gate reads each arm's own start (the no-CoT
    judge against the no-CoT warm-up), with one definition of degenerate."""
    from stepwiser_lib.core import vocab

    rng = np.random.default_rng(1)
    problems = [f"label-0-{i // 4}" for i in range(200)]
    labels = [bool(i % 2) for i in range(200)]

    def noisy(p):
        return [lab if rng.random() < p else not lab for lab in labels]

    def with_exact(recs, rate):
        return [{**r, "analysis": "x", "analysis_exact": bool(rng.random() < rate)} for r in recs]

    start, ostart = vocab.START_NAME["cot"], vocab.START_NAME["derived"]
    preds = with_exact(_judge_preds(start, [False] * 200, labels, problems), 0.7)
    preds += with_exact(_judge_preds(ostart, [True] * 200, labels, problems), 0.8)
    preds += _judge_preds(vocab.rule_name(start), noisy(0.7), labels, problems)
    preds += _judge_preds(vocab.rule_name(ostart), noisy(0.8), labels, problems)
    nocot = [rng.random() < 0.5 for _ in labels]
    preds += _judge_preds(vocab.START_NAME["direct"], nocot, labels, problems)
    for run in ["", "@seed1", "@seed2"]:
        preds += with_exact(_judge_preds(f"stepwiser:rel_ratio{run}", noisy(0.9), labels, problems), 0.9)
        preds += with_exact(_judge_preds(f"oracle_rl:rel_ratio{run}", noisy(0.8), labels, problems), 0.8)
        preds += _judge_preds(f"no_cot_rl:rel_ratio{run}", nocot, labels, problems)  # its start's verdicts
    _write(tmp_path / "judge_predictions.jsonl", preds)
    rows = claims.table(tmp_path, n_boot=1000)
    by = {(r["a"], r["b"]): r for r in rows if not r["claim"].startswith("after GRPO")}
    rule_row = by[("stepwiser:rel_ratio", vocab.rule_name(start))]
    assert rule_row["claim"].startswith("GRPO beats a fixed rule reading the analysis of its start")
    assert rule_row["paper_diff"] is None and rule_row["verdict"] == "a higher" and rule_row["estimate"] > 10
    ex = by[("stepwiser:rel_ratio", start)]
    assert ex["claim"].startswith("GRPO beats the judge it starts from")  # the issue-47 row, unchanged
    exact = next(
        r for r in rows if r["claim"].startswith("after GRPO the analysis") and r["a"] == "stepwiser:rel_ratio"
    )
    assert exact["b"] == start and exact["verdict"] == "a higher" and 10 < exact["estimate"] < 30
    assert ("oracle_rl:rel_ratio", ostart) in by and ("oracle_rl:rel_ratio", vocab.rule_name(ostart)) in by
    orc = by[("oracle_rl:rel_ratio", "stepwiser:rel_ratio")]
    assert orc["claim"].startswith("a warm-up on exact re-derivations") and orc["verdict"] == "b higher"
    # the no-CoT judge never left the no-CoT warm-up: unmoved, though not degenerate (Positive about half)
    assert claims.unmoved(preds, "no_cot_rl:rel_ratio", "rel_ratio")
    assert not claims.degenerate(preds, "no_cot_rl:rel_ratio", "rel_ratio")
    assert (
        "runs give its start's (no-CoT warm-up (before RL))" in claims.uninformative_arms(preds)["no_cot_rl:rel_ratio"]
    )
    assert claims.degenerate_runs(preds, "no_cot_rl:rel_ratio") == (0, 3)
