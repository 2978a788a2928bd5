import json

from stepwiser_lib.evals import claims


def _c(claim, a, b, diff, low, high):
    return {"claim": claim, "a": a, "b": b, "diff": diff, "low": low, "high": high, "test": "paired bootstrap by problem (9 problems)"}


def test_claims_rows_pair_paper_and_ours(tmp_path):
    (tmp_path / "judges.json").write_text(json.dumps({"comparisons": [
        _c("RL beats its warm-up", "stepwiser:rel_ratio", "warm-up (before RL)", 5.0, 1.0, 9.0),  # not a paper claim
        _c("generative RL beats discriminative SFT", "stepwiser:rel_ratio@seed1", "disc_sft:rel_ratio", -4.0, -7.0, -1.0)]}))
    (tmp_path / "chunk_reset.json").write_text(json.dumps({"comparisons": [
        _c("the judge helps chunk-reset (Table 7)", "stepwiser:rel_ratio", "chunk policy (no judge)", 3.0, 0.5, 6.0)]}))
    (tmp_path / "rsft.json").write_text(json.dumps({"comparisons": [
        _c("x", "outcome-based selection", "chunk policy (greedy, no RS-FT)", -1.0, -3.0, 1.0),
        _c("y", "disc_sft:abs_q", "outcome-based selection", 1.0, -1.0, 3.0)]}))
    rows = claims.rows(tmp_path)
    got = [(r["paper"], r["ours"], r["verdict"]) for r in rows]
    assert got == [(12.1, -4.0, "contradicted"),  # Table 5 rel_ratio: 36.2 - 24.1
                   (5.7, 3.0, "reproduced"),  # Table 7 1.5B: 36.9 - 31.2
                   (0.8, -1.0, "within noise"),  # Table 8: 60.9 - 60.1
                   (0.9, 1.0, "within noise")]  # Table 8 disc abs_q: 61.8 - 60.9
    assert rows[0]["claim"].startswith("the generative RL judge") and "Table 5" in rows[0]["paper_source"]
    md = claims.markdown(tmp_path)
    assert md[0].startswith("| paper claim |") and "**contradicted**" in md[2] and len(md) == 6
    assert claims.markdown(tmp_path / "none") == []


def test_toy_processbench_orderings_meet_the_papers_tables_5_and_6(tmp_path):
    names = ["stepwiser:rel_ratio", "stepwiser:abs_q", "disc_sft:rel_ratio", "no_balance_rl:rel_ratio", "warm-up (before RL)"]
    pairs = claims.judge_orderings(names)
    assert [(a, b) for _, a, b in pairs] == [("stepwiser:rel_ratio", "disc_sft:rel_ratio"),
                                            ("stepwiser:rel_ratio", "stepwiser:abs_q"),
                                            ("stepwiser:rel_ratio", "no_balance_rl:rel_ratio")]
    assert pairs[0][0] == "the generative RL judge is better than the discriminative SFT judge (rel_ratio)"
    (tmp_path / "processbench.json").write_text(json.dumps({"comparisons": [
        {**_c(claim, a, b, 2.0, -1.0, 5.0), "test": "paired bootstrap by solution"} for claim, a, b in pairs]}))
    rows = claims.rows(tmp_path)
    assert [r["paper"] for r in rows] == [12.1,  # 1.5B: 36.2 - 24.1
                                          0.1,  # 1.5B: 36.2 - 36.1
                                          12.6]  # balancing exists at 7B only: 60.5 - 47.9
    assert "7B" in rows[2]["paper_source"] and all(r["verdict"] == "within noise" for r in rows)


def test_table4_and_same_rule_judge_orderings_enter_the_claims_table(tmp_path):
    (tmp_path / "self_segmentation.json").write_text(json.dumps({"comparisons": [
        {**_c("self-segmentation gives fewer steps per solution", "chunk", "base", -1.5, -1.7, -1.3), "field": "steps"},
        {**_c("self-segmentation keeps accuracy", "chunk", "base", -20.0, -25.0, -15.0), "field": "correct"}]}))
    (tmp_path / "judges.json").write_text(json.dumps({"comparisons": [
        _c("the judge's chain of thought helps (RL on both)", "stepwiser:rel_ratio", "no_cot_rl:rel_ratio", 1.0, -2.0, 4.0),
        _c("the judge's chain of thought helps (RL on both)", "stepwiser:rel_ratio", "rsft:rel_ratio", 1.0, -2.0, 4.0)]}))  # wrong pair: left out
    rows = claims.rows(tmp_path)
    assert [(r["paper"], r["verdict"]) for r in rows] == [
        (-3.6, "reproduced"),  # Table 4 1.5B steps: 6.0 - 9.6; fewer steps is the paper's direction
        (0.5, "contradicted"),  # Table 4 1.5B accuracy: 44.7 - 44.2
        (1.9, "within noise")]  # Table 6 1.5B no-CoT: 36.2 - 34.3 (rel_ratio)
    assert "steps per solution" in rows[0]["paper_source"] and "test chunks" in rows[2]["paper_source"]


def test_rows_of_one_results_file(tmp_path):
    c = {"claim": "self-segmentation gives fewer steps per solution", "field": "steps", "a": "chunk", "b": "base",
         "diff": -1.0, "low": -2.0, "high": -0.5, "test": "t"}
    (tmp_path / "self_segmentation.json").write_text(json.dumps({"comparisons": [c]}))
    assert [r["file"] for r in claims.rows(tmp_path)] == ["self_segmentation"]
    assert claims.rows(tmp_path, files=["rsft"]) == []
    assert claims.rows(tmp_path, files=["self_segmentation"])[0]["question"] == c["claim"]
