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


def _claims_doc(verdicts, n_boot=None):
    from stepwiser_lib.evals import seeds

    rows = []
    for k, v in enumerate(verdicts):
        rows.append(
            {
                "claim": f"claim {k}",
                "file": "self_segmentation",
                "a": "chunk",
                "b": "base",
                "paper_diff": -3.6,
                "paper_source": "Table 4",
                "estimate": -1.3,
                "ci_low": -1.4,
                "ci_high": -1.2,
                "metric": "toy steps",
                "test": "t",
                "p_holm": 0.001,
                "verdict": v,
            }
        )
    return {"n_boot": seeds.N_BOOT if n_boot is None else n_boot, "claims": rows}


def test_closing_lines_state_the_claims_tables_verdicts_with_one_vocabulary(tmp_path):
    """Issue 51: a notebook's finding in the claims table's words (claims.table, its Holm and TOST),
    each verdict with its meaning from claims.VERDICT_MEANING, and which Holm family adjusted it."""
    import shutil

    from stepwiser_lib.core.paths import ROOT
    from stepwiser_lib.evals import claims

    for f in ("self_segmentation.json", "self_segmentation_predictions.jsonl"):
        shutil.copy(ROOT / "results" / "tiny" / f, tmp_path / f)
    lines = teaching.closing_lines(tmp_path, "self_segmentation", n_boot=200)  # computed from the predictions
    table = claims.table(tmp_path, 200)
    assert len(lines) == len(table) + 1 == 3
    for line, r in zip(lines, table):
        assert line.startswith(f"- **{r['claim']}.** Paper: {r['paper_diff']:+.1f} ({r['paper_source']}). Ours: ")
        assert f"{r['estimate']:+.1f} [{r['ci_low']:+.1f}, {r['ci_high']:+.1f}]" in line and r["test"] in line
        assert line.endswith(f"**{r['verdict']}**: {claims.VERDICT_MEANING[r['verdict']]}.")
    assert (
        lines[-1].startswith("- Holm over the 2 informative claims computed so far")
        and "results_toy_full.md" in lines[-1]
    )
    # a claims.json as new as every predictions file, in today's vocabulary and n_boot: the final table, read
    (tmp_path / "claims.json").write_text(json.dumps(_claims_doc(["same direction", "not shown equivalent"], 200)))
    final = teaching.closing_lines(tmp_path, "self_segmentation", n_boot=200)
    assert final[0].startswith("- **claim 0.**") and final[-1] == (
        "- Holm over all 2 informative claims of this profile's final table (`claims.json`)."
    )
    # ... but not one in an older vocabulary, or older than a predictions file: computed again
    (tmp_path / "claims.json").write_text(json.dumps(_claims_doc(["no paper effect"], 200)))
    assert teaching.closing_lines(tmp_path, "self_segmentation", n_boot=200)[0] == lines[0]
    # a stage whose paper claim another notebook's results test: the row where it exists, else why not
    elsewhere = teaching.closing_lines(tmp_path, "balancing")
    assert elsewhere == [
        "- **the generative CoT + RL judge is better than RL without prompt balancing (Rel-Ratio).** Paper: +12.6 "
        "(Tables 5/6, 7B, ProcessBench avg F1). Ours: not tested in this results folder: the row needs notebook "
        "04's `no_balance_rl:rel_ratio` judge, trained where 04's `VARIANTS` lists it."
    ]
    assert "No claim of the claims table comes from `rsft`" in teaching.closing_lines(tmp_path, "rsft")[0]


def test_closing_lines_count_the_questions_the_paper_does_not_ask(tmp_path):
    other = {
        "claim": "RL beats chance",
        "a": "stepwiser:rel_ratio",
        "b": "always-Positive",
        "diff": 1.0,
        "low": 0.5,
        "high": 1.5,
        "test": "t",
    }
    (tmp_path / "judges.json").write_text(json.dumps({"comparisons": [other]}))
    assert teaching.closing_lines(tmp_path, "judges", others=True) == [
        "- *RL beats chance* (not a paper claim; stepwiser:rel_ratio − always-Positive): +1.0 [+0.5, +1.5], t."
    ]
    # by default a question the paper does not ask is printed once, where it is computed: here a count
    assert teaching.closing_lines(tmp_path, "judges") == [
        "- and 1 paired question(s) the paper does not ask, printed above where they are computed."
    ]


def test_closing_lines_of_labelling_name_the_rule_orderings_that_judges_test(tmp_path):
    """Notebook 02's stage has no claims-table row of its own: its closing names Table 5's orderings of the
    label rules, which notebook 04's judges test (teaching.ELSEWHERE), and what each row needs."""
    lines = teaching.closing_lines(tmp_path, "labelling")
    assert [ln.split(".** ")[0] for ln in lines] == [
        "- **Rel-Ratio labels train a better judge than Abs-Q labels",
        "- **Rel-Effective labels train a worse judge than Abs-Q labels",
    ]
    assert all("not tested in this results folder" in ln and "`stepwiser:abs_q`" in ln for ln in lines)


def test_every_verdict_the_table_can_give_has_one_meaning_and_teaching_has_no_other_words():
    """One vocabulary (issue 51): the verdicts claims.verdict can return are claims.VERDICT_ORDER, each
    with its meaning in claims.VERDICT_MEANING; teaching keeps no verdict words of its own."""
    import ast
    import inspect

    from stepwiser_lib.evals import claims

    def values(e):  # the strings an expression can evaluate to: a constant, or either branch of `x if c else y`
        if isinstance(e, ast.IfExp):
            return values(e.body) | values(e.orelse)
        return {e.value} if isinstance(e, ast.Constant) and isinstance(e.value, str) else set()

    returned = set()
    for node in ast.walk(ast.parse(inspect.getsource(claims.verdict))):
        if isinstance(node, ast.Return):
            returned |= values(node.value)
    assert returned == set(claims.VERDICT_ORDER) == set(claims.VERDICT_MEANING)
    assert all(claims.VERDICT_MEANING[v] for v in claims.VERDICT_ORDER)
    assert not hasattr(teaching, "MEANING") and not hasattr(teaching, "claim_lines")
    text = inspect.getsource(teaching)
    for old in ("within noise", "reproduced", "no paper effect", 'opposite direction"', 'same direction"'):
        assert old not in text, old


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


def test_settings_table_puts_the_papers_values_beside_this_runs_with_why(tmp_path):
    """Issue 51: the paper beside the toy. The paper's value from configs/profiles/paper.yaml with where
    it says it comes from; this run's; why they differ: the parameter comment's ``tiny:`` part for the
    notebook's own value, the profile's comment for a value a profile set."""
    from stepwiser_lib.core import config

    tiny = config.for_notebook("tiny", "01_self_segmentation")
    rows = {r["setting"]: r for r in teaching.settings_rows(tiny)}
    assert list(rows) == list(teaching.KEY_SETTINGS["01_self_segmentation"])
    assert rows["N_PROBLEMS"]["paper"] == "20000 (§4.1)" and rows["N_PROBLEMS"]["this run"] == "200"
    assert rows["N_PROBLEMS"]["why"].startswith("a few hundred SFT examples")  # the comment after "tiny:"
    assert (
        rows["BASE_MODEL"]["paper"] == "`Qwen/Qwen2.5-1.5B-Instruct` (§4.1)"
        and rows["EVAL_SAMPLES"]["paper"] == "32 (Table 4)"
    )
    table = teaching.settings_table(tiny).splitlines()
    assert table[0] == "| setting | the paper | this run (tiny) | why this run differs |" and len(table) == 2 + len(
        rows
    )
    paper = {
        r["setting"]: r["why"] for r in teaching.settings_rows(config.for_notebook("paper", "01_self_segmentation"))
    }
    assert set(paper.values()) == {"the paper's value"}
    colab = {r["setting"]: r for r in teaching.settings_rows(config.for_notebook("colab", "01_self_segmentation"))}
    assert (
        colab["BASE_MODEL"]["why"].startswith("colab: ") and "T4" in colab["BASE_MODEL"]["why"]
    )  # colab.yaml's comment
    b = {r["setting"]: r for r in teaching.settings_rows(config.for_notebook("tiny", "03_balancing"))}
    assert (
        b["MAX_CHARS"]["paper"] == "12000 ([not in paper])"
        and b["PROMPT_FAMILY"]["paper"] == "`paper` (Tables 1, 3, 11)"
    )
    # a settings list of another notebook's, or a paper.yaml key it lacks: the notebook's own value, named so
    row = teaching.settings_rows(tiny, keys=["SFT_MICRO_BATCH", "REPORT_TO"])
    assert row[1] == {
        "setting": "REPORT_TO",
        "paper": "`none` (the notebook's value)",
        "this run": "`none`",
        "why": "the paper's value",
    }


@pytest.mark.parametrize("stem", sorted(teaching.KEY_SETTINGS))
def test_every_key_setting_that_differs_from_the_paper_says_why_after_tiny(stem):
    """The convention the settings table reads: a key setting whose tiny value is not the paper's
    gives its reason in its parameter comment, after ``tiny:``."""
    from stepwiser_lib.core import config

    declared = config.notebook_parameters(config.NOTEBOOKS_DIR / f"{stem}.ipynb")
    paper, tiny = config.for_notebook("paper", stem), config.for_notebook("tiny", stem)
    assert 4 <= len(teaching.KEY_SETTINGS[stem]) <= 8
    for k in teaching.KEY_SETTINGS[stem]:
        assert k in declared, f"{stem}: {k} is not a parameter"
        if getattr(paper, k) != getattr(tiny, k):
            assert "tiny:" in declared[k].comment, f"{stem}.{k}: its comment gives no 'tiny:' reason"
