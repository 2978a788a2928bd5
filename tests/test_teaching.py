"""The notebooks' teaching helpers: worked examples with literal answers, and the closing cells."""

import json

import pytest

from stepwiser_lib.tools import teaching


def _traj(tid="p1/s0", q0=0.5, qs=(0.5, 0.25, 0.0), alpha=0.4, gamma=0.8):
    from stepwiser_lib.method import labelling

    cfg = labelling.LabelConfig(alpha=alpha, gamma=gamma)
    out, prev = [], q0
    for i, q in enumerate(qs):
        out.append(
            {
                "traj_id": tid,
                "problem_id": tid.split("/")[0],
                "problem": "P",
                "chunk_index": i,
                "chunk": f"c{i}",
                "q": q,
                "q_prev": prev,
                "q0": q0,
                "n_rollouts": 16,
                **labelling.chunk_labels(q, prev, cfg),
            }
        )
        prev = q
    return out


def test_trajectory_table_by_the_paper_equations():
    # Q0 = 0.5 -> 0.5 -> 0.25 -> 0: mu(0.25) = 1 - 0.75^4 = 0.68359, mu(0.5) = 0.9375
    rows = teaching.trajectory_table(_traj(), "p1/s0", alpha=0.4, gamma=0.8, checker=lambda r: r["chunk"] != "c2")
    assert [(r["abs_q"], r["rel_effective"], r["rel_ratio"]) for r in rows] == [
        ("+", "+", "+"),
        ("+", "+", "−"),
        ("−", "−", "−"),
    ]
    assert rows[1]["Q + α·Δμ"] == pytest.approx(0.25 + 0.4 * (0.68359 - 0.9375), abs=1e-3)  # 0.148
    assert rows[1]["Q / Q_prev"] == 0.5 and rows[0]["Q / Q_prev"] == 1.0
    assert [r["exact checker"] for r in rows] == [True, True, False]
    assert all(r["stored"] for r in rows)
    with pytest.raises(ValueError, match="no chunks"):
        teaching.trajectory_table(_traj(), "nope", 0.4, 0.8)


def test_trajectory_table_flags_labels_that_differ_from_the_stored_ones():
    recs = _traj()
    recs[0]["label_abs_q"] = False  # a stale label in labels.jsonl
    assert [r["stored"] for r in teaching.trajectory_table(recs, "p1/s0", 0.4, 0.8)] == [False, True, True]


def test_pick_trajectory_prefers_one_where_the_rules_disagree():
    agree = _traj("p0/s0", qs=(1.0, 1.0, 1.0))
    assert teaching.pick_trajectory(agree + _traj("p1/s0")) == "p1/s0"
    assert teaching.pick_trajectory(agree) == "p0/s0"
    assert teaching.pick_trajectory([]) is None


def test_positive_rate_ci_resamples_problems():
    recs = _traj("p1/s0") + _traj("p2/s0", qs=(1.0, 1.0, 1.0))
    c = teaching.positive_rate_ci(recs, "abs_q")
    assert (c["rate"], c["chunks"], c["problems"]) == (83.3, 6, 2)  # 5 of 6 chunks
    assert 66.6 <= c["low"] <= c["rate"] <= c["high"] <= 100.0
    with pytest.raises(ValueError):
        teaching.positive_rate_ci([], "abs_q")


def test_grpo_advantages_as_trl_computes_them():
    # rewards 1, 0, 1, 1: mean 0.75, std (Bessel) 0.5 -> A = (r - 0.75) / 0.5001
    assert teaching.grpo_advantages([1, 0, 1, 1], 4) == pytest.approx([0.4999, -1.4997, 0.4999, 0.4999], abs=1e-4)
    assert teaching.grpo_advantages([1, 1, 1, 1, 0, 0, 0, 0], 4) == [0.0] * 8  # groups that agree: no gradient
    with pytest.raises(ValueError):
        teaching.grpo_advantages([1, 0, 1], 2)


def test_sample_groups_rewards_and_advantages(monkeypatch):
    from stepwiser_lib.engines import models

    class Gen:
        def generate(self, prompts, n, temperature, max_new_tokens, seed):
            outs = ["ok \\boxed{Positive}", "x \\boxed{Negative}", "no verdict", "ok \\boxed{Positive}"]
            return [[type("C", (), {"text": t})() for t in outs[:n]] for _ in prompts]

    monkeypatch.setattr(teaching, "load_judge", lambda *a, **k: type("J", (), {"gen": Gen()})())
    monkeypatch.setattr(models, "release", lambda *a: None)
    exs = [{"problem": "P", "history": [], "chunk": "c", "label": True}]
    g = teaching.sample_groups({"style": "cot"}, exs, family="toy", group_size=4, temperature=1.0, max_completion=8)[0]
    assert [o["verdict"] for o in g["outputs"]] == ["Positive", "Negative", None, "Positive"]
    assert [o["reward"] for o in g["outputs"]] == [1.0, 0.0, 0.0, 1.0]
    assert g["advantages"] == pytest.approx([0.866, -0.866, -0.866, 0.866], abs=1e-3)  # std 0.5774
    assert (
        teaching.sample_groups({"style": "cot"}, [], family="toy", group_size=4, temperature=1.0, max_completion=8)
        == []
    )


def test_claim_lines_give_the_verdict_its_meaning_and_the_other_questions(tmp_path):
    comps = [
        {
            "claim": "self-segmentation gives fewer steps per solution",
            "field": "steps",
            "a": "chunk",
            "b": "base",
            "diff": -1.3,
            "low": -1.4,
            "high": -1.2,
            "test": "paired bootstrap by problem (200 problems)",
        },
        {
            "claim": "self-segmentation keeps accuracy",
            "field": "correct",
            "a": "chunk",
            "b": "base",
            "diff": -0.5,
            "low": -3.0,
            "high": 2.0,
            "test": "paired bootstrap by problem (200 problems)",
        },
    ]
    (tmp_path / "self_segmentation.json").write_text(json.dumps({"comparisons": comps}))
    lines = teaching.claim_lines(tmp_path, "self_segmentation")
    assert len(lines) == 2
    assert "Paper: -3.6" in lines[0] and "**same direction**" in lines[0] and "has the paper's sign" in lines[0]
    assert "**undetermined**" in lines[1] and "does not tell either way" in lines[1]
    other = {
        "claim": "RL beats its warm-up",
        "a": "stepwiser:rel_ratio",
        "b": "warm-up (before RL)",
        "diff": 1.0,
        "low": 0.5,
        "high": 1.5,
        "test": "t",
    }
    (tmp_path / "judges.json").write_text(json.dumps({"comparisons": [other]}))
    assert teaching.claim_lines(tmp_path, "judges", others=True) == [
        "- *RL beats its warm-up* (not a paper claim; stepwiser:rel_ratio − warm-up (before RL)): +1.0 [+0.5, +1.5], t."
    ]
    # by default a question the paper does not ask is printed once, where it is computed: here a count
    assert teaching.claim_lines(tmp_path, "judges") == [
        "- and 1 paired question(s) the paper does not ask, printed above where they are computed."
    ]
    assert "no `rsft.json` yet" in teaching.claim_lines(tmp_path, "rsft")[0]
    (tmp_path / "rsft.json").write_text(json.dumps({"comparisons": []}))
    assert "no paired claim" in teaching.claim_lines(tmp_path, "rsft")[0]


def test_label_noise_line_says_what_kind_of_example_a_trajectory_is():
    row = lambda i, ok, a, e, r: {"i": i, "exact checker": ok, "abs_q": a, "rel_effective": e, "rel_ratio": r}  # noqa: E731
    assert teaching.label_noise_line([row(0, True, "+", "+", "+"), row(1, False, "−", "−", "−")]).startswith(
        "A clean example"
    )
    line = teaching.label_noise_line([row(0, True, "+", "+", "−"), row(1, False, "+", "−", "−")])
    assert line.startswith(
        "Label noise in this example: chunk 0 is right by the exact checker, but Rel-Ratio labels it "
        "Negative; chunk 1 is wrong by the exact checker, but Abs-Q labels it Positive."
    )
    assert teaching.label_noise_line([{"i": 0, "abs_q": "+"}]) == ""  # no checker (real maths)


def test_folded_keeps_the_text_under_its_summary():
    md = teaching.folded("2 prompts", "a <chunk>\\boxed{1}\n\n")
    assert md == "<details><summary>2 prompts</summary>\n\n```\na <chunk>\\boxed{1}\n```\n\n</details>"
    assert teaching.folded("s", "x ```y```").count("~~~~") == 2  # a fence inside the text does not close it
    table = "| a |\n|---|\n| 1 |\n"
    assert teaching.folded("the numbers", table, markdown=True) == (
        "<details><summary>the numbers</summary>\n\n| a |\n|---|\n| 1 |\n\n</details>"
    )  # rendered, not fenced


def test_the_group_worked_by_hand_and_its_rows():
    def grp(rewards, adv):
        outs = [
            {"reward": r, "verdict": "Positive" if r else "Negative", "text": f"out {i}\nx"}
            for i, r in enumerate(rewards)
        ]
        return {"outputs": outs, "advantages": adv}

    same, mixed = grp([1, 1], [0.0, 0.0]), grp([1, 0], [0.7071, -0.7071])
    assert teaching.mixed_group([same, mixed]) is mixed and teaching.mixed_group([same]) is same
    assert teaching.mixed_group([]) is None
    rows = teaching.group_rows(mixed, [0.70706, -0.70706])
    assert rows[0] == {
        "verdict": "Positive",
        "reward r_i": 1,
        "A_i by hand": 0.7071,
        "A_i (TRL's formula)": 0.7071,
        "output": "out 0 / x",
    }
    assert teaching.equal_rewards_line([same, mixed]).startswith("1 of 2 groups have equal rewards")


def test_group_case_line_says_whether_the_group_is_label_noise():
    g = {"problem": "a = 49. b = a + 17. c = b + 20. Find c.", "history": [], "chunk": "b = a + 17 = 49 + 17 = 66"}
    assert teaching.group_case_line({**g, "label": False}).startswith(
        "Label noise in this group: the exact checker calls the chunk right, but its MC label is Negative"
    )
    assert teaching.group_case_line({**g, "label": True}).startswith("A clean group")
    wrong = {**g, "chunk": "b = a + 17 = 49 + 17 = 67", "label": True}
    assert "calls the chunk wrong, but its MC label is Positive" in teaching.group_case_line(wrong)
    assert (
        teaching.group_case_line({"problem": "Find x if 2x = 4.", "history": [], "chunk": "x = 2", "label": True}) == ""
    )
