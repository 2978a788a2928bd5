import os

import pytest

from stepwiser_lib.core import io
from stepwiser_lib.core.vocab import WARMUP_NAME
from stepwiser_lib.method import judge_runs as jr


def _ex(problem, chunk="c", history=()):
    return {"problem": problem, "history": list(history), "chunk": chunk, "label": True, "problem_id": problem}


def test_training_runs_repeat_every_variant_at_every_seed():
    variants = ["disc_sft:rel_ratio", "stepwiser:rel_ratio", "stepwiser:abs_q", "no_cot_rl:rel_ratio"]
    assert jr.main_variants(variants) == ("stepwiser:rel_ratio", "disc_sft:rel_ratio")
    assert jr.main_variants(["disc_sft:abs_q", "stepwiser:rel_ratio"]) == ("stepwiser:rel_ratio", None)
    assert jr.main_variants(["disc_sft:abs_q"]) == (None, None)
    runs = jr.training_runs(variants, 0, [1, 0, 2, 1])  # the SEED itself and duplicates add nothing
    assert [r for _, _, r in runs] == variants + [f"{v}@seed{s}" for s in (1, 2) for v in variants]
    assert runs[-1] == ("no_cot_rl:rel_ratio", 2, "no_cot_rl:rel_ratio@seed2")
    assert jr.seeds_of([r for _, _, r in runs], "stepwiser:rel_ratio") == [
        "stepwiser:rel_ratio",
        "stepwiser:rel_ratio@seed1",
        "stepwiser:rel_ratio@seed2",
    ]


def test_warmup_inputs_dedupe_and_refuse_held_out_problems():
    data = {
        "abs_q": {"train_unbalanced": [_ex("p1"), _ex("p2")], "dev_balanced": [_ex("d")], "test_balanced": [_ex("t")]},
        "rel_ratio": {"train_unbalanced": [_ex("p1"), _ex("p1", "other")], "dev_balanced": [], "test_balanced": []},
    }
    got = jr.warmup_inputs(data, [_ex("s1")])
    assert [(e["problem"], e["chunk"]) for e in got] == [("p1", "c"), ("p2", "c"), ("s1", "c"), ("p1", "other")]
    with pytest.raises(ValueError, match="1 warm-up input problem.* are dev or test problems, e.g. 't'"):
        jr.warmup_inputs(data, [_ex("t")])


def _p(judge, verdicts, labels=(True, False, True, False)):
    return [
        {
            "judge": judge,
            "split": "test",
            "problem_id": f"q{i // 2}",
            "chunk_id": f"q{i // 2}/s0#{i}",
            "label": lab,
            "truth": lab,
            "verdict": v,
            "score": float(bool(v)),
        }
        for i, (v, lab) in enumerate(zip(verdicts, labels))
    ]


def test_comparison_pairs_ask_the_papers_questions_where_both_sides_exist():
    right, wrong = [True, False, True, False], [False, True, False, True]
    names = [
        "stepwiser:rel_ratio",
        "stepwiser:rel_ratio@seed1",
        "disc_sft:rel_ratio",
        "no_cot_rl:rel_ratio",
        "stepwiser:abs_q",
        "disc_warmup_sft:rel_ratio",
    ]
    preds = {(n, n.split(":")[1].split("@")[0], "test"): _p(n, right) for n in names}
    preds[(WARMUP_NAME, "rel_ratio", "test")] = _p(WARMUP_NAME, wrong)
    pairs = jr.comparison_pairs(preds, names, "stepwiser:rel_ratio")
    assert [c for c, *_ in pairs] == [
        "RL beats its warm-up",
        "RL beats chance (a constant verdict)",
        "generative RL beats discriminative SFT",
        "the warm-up helps the discriminative judge",
        "the judge's chain of thought helps (RL on both)",
    ]
    assert all(rule == "rel_ratio" for _, rule, _, _ in pairs)  # stepwiser:abs_q meets other labels: not here
    _, _, a, b = pairs[0]
    assert len(a) == 2 and b[0]["judge"] == WARMUP_NAME  # both seeds of the main judge
    assert {p["verdict"] for p in pairs[1][3]} == {True}  # chance: always Positive
    assert len(pairs[2][3]) == 1 and len(pairs[3][2]) == 1
    comps = jr.compare_all(preds, names, "stepwiser:rel_ratio")  # each question answered, in that order
    assert [c["claim"] for c in comps] == [c for c, *_ in pairs] and all(c["split"] == "test" for c in comps)
    assert comps[0]["diff"] > 0 and comps[0]["verdict"] in ("a higher", "undetermined")  # right vs always wrong


def test_read_registry_names_what_is_missing(tmp_path, monkeypatch):
    monkeypatch.setenv("STEPWISER_OUTPUT_ROOT", str(tmp_path))
    with pytest.raises(FileNotFoundError, match="run notebook 04 at profile 'x' first"):
        jr.read_registry("x", ["a"])
    reg = tmp_path / "runs" / "x" / "artifacts" / "04_judge_grpo" / "judges.json"
    reg.parent.mkdir(parents=True)
    io.write_json(reg, [{"name": "w"}, {"name": "a"}, {"name": "b"}])
    assert list(jr.read_registry("x", ["b", "a"])) == ["a", "b"]
    assert list(jr.read_registry("x", ["all"], allow_all=True)) == ["w", "a", "b"]
    with pytest.raises(ValueError, match=r"unknown judge\(s\) \['c'\]; the notebook 04 registry has \['w', 'a', 'b'\]"):
        jr.read_registry("x", ["a", "c"])


def test_reference_predictions_and_summary(monkeypatch):
    from stepwiser_lib.method import tasks

    monkeypatch.setattr(tasks, "analysis_verdict", lambda text: text == "difference 0")  # a toy analysis's reading
    ex = [
        {**_ex(f"q{i // 2}", f"c{i}"), "label": lab, "traj_id": f"q{i // 2}/s0", "chunk_index": i}
        for i, lab in enumerate((True, False, False, True))
    ]
    data_rule = {"dev_balanced": ex[:2], "test_balanced": ex}
    judged = {
        "dev": [{"verdict": "Positive", "analysis": "1 + 2 = 3, difference 0"}] * 2,
        "test": [
            {"verdict": v, "analysis": a}
            for v, a in (
                ("Positive", "difference 0"),
                ("Negative", "difference 1"),
                ("Positive", "difference 0"),
                (None, "difference 2"),
            )
        ],
    }
    preds = jr.predictions(WARMUP_NAME, "abs_q", data_rule, judged)
    assert sorted(preds) == [(WARMUP_NAME, "abs_q", "dev"), (WARMUP_NAME, "abs_q", "test")]
    assert [p["verdict"] for p in preds[(WARMUP_NAME, "abs_q", "test")]] == [True, False, True, None]
    refs = jr.reference_predictions(preds, "abs_q", judged)
    assert list(refs) == [
        (jr.REF_RULE, "abs_q", "dev"),
        (jr.REF_EXACT, "abs_q", "dev"),
        (jr.REF_RULE, "abs_q", "test"),
        (jr.REF_EXACT, "abs_q", "test"),
    ]
    rule_test = refs[(jr.REF_RULE, "abs_q", "test")]
    assert [p["verdict"] for p in rule_test] == [True, False, True, False]  # every difference 0 -> Positive
    assert all(p["verdict"] is None for p in refs[(jr.REF_EXACT, "abs_q", "test")])  # not toy problems: no checker
    s = jr.reference_summary(rule_test, refs[(jr.REF_RULE, "abs_q", "dev")])
    # MC labels T F F T against verdicts T F T F: Positive 1/2 right, Negative 1/2 right
    assert (s["balanced_acc"], s["positive_rate"], s["dev_balanced_acc"]) == (50.0, 50.0, 50.0)


def test_variant_row_names_its_seed_and_paper_row():
    rec = {
        "entry": {"row": "Generative CoT + RL (StepWiser)", "rule": "rel_ratio"},
        "train": {"seconds": 12.0},
        "dev": {"balanced_acc": 60.0},
        "test": {"balanced_acc": 62.5, "ci95": {"low": 55.0, "high": 70.0}},
    }
    row = jr.variant_row("stepwiser:rel_ratio@seed2", rec, 0)
    assert (row["seed"], row["ci95"], row["dev_balanced_acc"], row["paper_pb_avg_f1"], row["paper_model"]) == (
        2,
        "[55.0, 70.0]",
        60.0,
        36.2,
        "1.5B",
    )
    assert jr.variant_row("stepwiser:rel_ratio", rec, 0)["seed"] == 0


def test_main_summary_and_variants_out():
    ci = {"low": 50.0, "high": 70.0}
    records = {
        "stepwiser:rel_ratio": {"test": {"balanced_acc": 60.0, "ci95": ci, "score_auc": 0.7}},
        "stepwiser:rel_ratio@seed1": {"test": {"balanced_acc": 58.0, "ci95": ci, "score_auc": 0.6}},
        "disc_sft:rel_ratio": {"test": {"balanced_acc": 65.0, "ci95": ci}},
    }
    before = {"rel_ratio": {"balanced_acc": 50.0, "score_auc": 0.5}}
    comps = [{"verdict": "a higher"}, {"verdict": "undetermined"}]
    s = jr.main_summary("stepwiser:rel_ratio", records, before, comps, auc_k=4)
    assert (s["seeds"], s["rl_balanced_acc"], s["rl_beats_warmup"], s["rl_beats_chance"]) == (
        2,
        [60.0, 58.0],
        True,
        False,
    )
    assert s["rl_score_auc"] == [0.7, 0.6] and s["warmup_score_auc"] == 0.5
    assert "rl_score_auc" not in jr.main_summary("stepwiser:rel_ratio", records, before, comps)
    rec = {
        "entry": {"name": "x", "kind": "rsft"},
        "test": {},
        "dev": {},
        "train": {"seconds": 1.0, "steps": 2, "train_examples": 3, "rsft_kept": 4},
    }
    # issue 59: an RS-FT judge samples from the main warm-up, so it has an oracle only when that
    # warm-up trained on derived analyses
    assert jr.variants_out({"x": rec}, "derived")["x"]["uses_oracle"] is True
    assert jr.variants_out({"x": rec}, "derived", warmed=False)["x"]["uses_oracle"] is False
    assert jr.variants_out({"x": rec}, "own")["x"] == {
        "entry": {"name": "x", "kind": "rsft"},
        "uses_oracle": False,
        "test": {},
        "dev": {},
        "seconds": 1.0,
        "steps": 2,
        "train_examples": 3,
        "rsft_kept": 4,
    }
    assert jr.warmup_entry({"cot": "warm/model"}, {"cot": "k"}, "init")["base"] == "warm/model"


def test_train_runs_trains_each_run_once_and_retrains_only_what_a_setting_names(tmp_path, monkeypatch, capsys):
    from stepwiser_lib.core import paths
    from stepwiser_lib.method import judge_train

    calls = []

    def fake_train(name, data, d, *, seed, **kw):
        calls.append((name, seed))
        return {"entry": {"name": name, "kind": name.split(":")[0]}, "train": {"seconds": 1.0}}

    monkeypatch.setattr(judge_train, "train_variant", fake_train)
    monkeypatch.setattr(
        judge_train, "recipe_key", lambda kind, recipe: {kind: recipe[kind]}
    )  # each kind reads its own setting
    monkeypatch.setattr(paths, "model_fingerprint", lambda init: "fp")
    kw = dict(init="init", warmups={}, warm_keys={}, data={}, data_hash={"rel_ratio": "h"}, family="toy")
    variants = ["stepwiser:rel_ratio", "disc_sft:rel_ratio"]
    recs = jr.train_runs(tmp_path, variants, 0, [1], recipe={"stepwiser": 1, "disc_sft": 1}, **kw)
    assert list(recs) == variants + ["stepwiser:rel_ratio@seed1", "disc_sft:rel_ratio@seed1"]
    assert calls[-1] == ("disc_sft:rel_ratio", 1) and len(calls) == 4
    assert recs["stepwiser:rel_ratio@seed1"]["entry"]["name"] == "stepwiser:rel_ratio@seed1"  # the run id, with its key
    assert recs["disc_sft:rel_ratio"]["entry"]["key"] == recs["disc_sft:rel_ratio"]["_key"]
    calls.clear()
    jr.train_runs(tmp_path, variants, 0, [1], recipe={"stepwiser": 1, "disc_sft": 2}, **kw)  # a new disc setting
    assert calls == [("disc_sft:rel_ratio", 0), ("disc_sft:rel_ratio", 1)]
    assert "(from disk)" in capsys.readouterr().out


def test_evaluate_runs_rows_in_order_with_intervals(monkeypatch):
    from stepwiser_lib.engines import models
    from stepwiser_lib.method import judge, tasks

    monkeypatch.setattr(tasks, "analysis_verdict", lambda text: True)
    monkeypatch.setattr(judge, "load_judge", lambda e, fam, max_new, batch: ("judge", e["name"], max_new))
    monkeypatch.setattr(models, "release", lambda *a: None)

    def fake_eval(j, examples, auc_k=0, readout=False):
        judged = [{"verdict": "Positive" if e["label"] else "Negative", "score": 1.0, "analysis": ""} for e in examples]
        return {"balanced_acc": 100.0, "max_new": j[2]}, judged

    monkeypatch.setattr(judge, "evaluate_judge", fake_eval)
    ex = [
        {**_ex(f"q{i // 2}", f"c{i}"), "label": i % 2 == 0, "traj_id": f"q{i // 2}/s0", "chunk_index": i}
        for i in range(4)
    ]
    data = {"rel_ratio": {"dev_balanced": ex[:2], "test_balanced": ex}}
    warm = {
        "rel_ratio": {
            "dev": [{"verdict": "Positive", "analysis": ""}] * 2,
            "test": [{"verdict": "Positive", "analysis": ""}] * 4,
        }
    }
    records = {
        "no_cot_rl:rel_ratio": {
            "entry": {
                "name": "no_cot_rl:rel_ratio",
                "rule": "rel_ratio",
                "style": "direct",
                "row": "Ablate CoT (discriminative format + RL)",
            },
            "train": {"seconds": 2.0},
        }
    }
    preds, rows, judged_by, refs = jr.evaluate_runs(
        records,
        data,
        {"rel_ratio": {"balanced_acc": 50.0}},
        {"rel_ratio": {"balanced_acc": 50.0}},
        warm,
        family="toy",
        max_completion=128,
        direct_max_completion=8,
        judge_batch=4,
        auc_k=0,
        seed=0,
    )
    assert [r["judge"] for r in rows] == ["warm-up (before RL)", jr.REF_RULE, jr.REF_EXACT, "no_cot_rl:rel_ratio"]
    assert records["no_cot_rl:rel_ratio"]["test"]["max_new"] == 8  # a direct judge keeps its own token limit
    assert records["no_cot_rl:rel_ratio"]["test"]["ci95"]["balanced_acc"] == 100.0
    assert len(preds[("no_cot_rl:rel_ratio", "rel_ratio", "test")]) == 4 and list(judged_by) == ["no_cot_rl:rel_ratio"]
    assert set(refs) == {jr.REF_RULE, jr.REF_EXACT}
    assert jr.split_sizes(data) == {
        "rel_ratio": {"dev": {"chunks": 2, "problems": 1}, "test": {"chunks": 4, "problems": 2}}
    }
    _, rows_paper, _, refs_paper = jr.evaluate_runs(
        records,
        data,
        {"rel_ratio": {"balanced_acc": 50.0}},
        {"rel_ratio": {"balanced_acc": 50.0}},
        warm,
        family="paper",
        max_completion=128,
        direct_max_completion=8,
        judge_batch=4,
        auc_k=0,
        seed=0,
    )
    assert len(rows_paper) == 2 and refs_paper == {}  # the yardsticks read the toy analysis


def test_notebook04_figures_draw_what_they_get():
    from stepwiser_lib.tools import plotting

    tr = {
        "log_history": [
            {"step": s, "reward": 0.1 * s, "entropy": 1.0, "completions/mean_length": 50} for s in (1, 2, 3)
        ],
        "val_curve": [{"step": 0, "balanced_acc": 50.0}, {"step": 3, "balanced_acc": 60.0}],
    }
    fig = plotting.grpo_curves({"a": tr, "b": tr})
    assert len(fig.axes[0].lines) == 4 and len(fig.axes[1].lines) == 3  # 2 runs x (raw, mean); 2 curves + chance
    assert list(fig.axes[0].lines[1].get_ydata()) == pytest.approx([0.1, 0.15, 0.2])  # the running mean
    fig = plotting.readout_histograms({"warm-up": [{"p_positive": 0.3, "analysis": "difference 0"}], "rl": []})
    assert len(fig.axes) == 2
    fig = plotting.judge_bars(
        [
            {"judge": "warm-up (before RL)", "rule": "r", "balanced_acc": 55.0},
            {"judge": "j", "rule": "r", "balanced_acc": 60.0, "truth_balanced_acc": 70.0},
        ]
    )
    assert [p.get_height() for p in fig.axes[0].patches][:2] == [55.0, 60.0] and len(fig.axes[0].patches) == 4


def test_train_warmups_one_per_style_cached_and_the_direct_one_shorter(tmp_path, monkeypatch, capsys):
    from stepwiser_lib.core import paths
    from stepwiser_lib.engines import sft
    from stepwiser_lib.method import tasks

    runs = []

    def fake_sft(init, recs, d, ws):
        runs.append((d.name, ws.max_steps))
        (d / "model").mkdir(parents=True, exist_ok=True)  # a whole saved model: config and weights
        (d / "model" / "config.json").write_text("{}")
        (d / "model" / "model.safetensors").write_text("w")
        return {"model_dir": str(d / "model"), "steps": ws.max_steps, "train_seconds": 0.1}

    monkeypatch.setattr(sft, "sft", fake_sft)
    monkeypatch.setattr(paths, "model_fingerprint", lambda init: "fp")
    monkeypatch.setattr(
        tasks,
        "warmup_records",
        lambda chunks, fam, seed, style, analyses=None, verdict="coin": [{"style": style, "completion": "x"}],
    )
    kw = dict(family="toy", seed=0, steps=300, direct_steps=60, lr=1e-3, batch=16, micro_batch=8)
    dirs, keys, recs = jr.train_warmups(tmp_path, ["cot", "direct"], [_ex("p")], "init", **kw)
    assert runs == [("warmup_cot", 300), ("warmup_direct", 60)] and set(dirs) == set(keys) == {"cot", "direct"}
    assert recs["direct"] == [{"style": "direct", "completion": "x"}]
    jr.train_warmups(tmp_path, ["cot", "direct"], [_ex("p")], "init", **kw)  # from disk
    jr.train_warmups(tmp_path, ["cot"], [_ex("p")], "init", **{**kw, "lr": 5e-4})  # a new setting retrains
    assert runs[2:] == [("warmup_cot", 300)]
    assert jr.warmup_chunks(tmp_path, "init", 0, 4, family="toy", seed=0) == []


def test_evaluate_start_per_rule_and_the_toy_only_truth_column(monkeypatch):
    from stepwiser_lib.engines import models
    from stepwiser_lib.method import judge

    monkeypatch.setattr(judge, "load_judge", lambda *a: "j")
    monkeypatch.setattr(models, "release", lambda *a: None)
    monkeypatch.setattr(
        judge, "evaluate_judge", lambda j, ex, auc_k=0, readout=False: ({"n": len(ex), "readout": readout}, ex)
    )
    monkeypatch.setattr(jr, "analysis_implies_truth", lambda judged, ex: 42.0)
    data = {r: {"test_balanced": [_ex("t")] * 3, "dev_balanced": [_ex("d")]} for r in ("abs_q", "rel_ratio")}
    before, bj, dev, dj = jr.evaluate_start({}, data, family="toy", max_completion=8, batch=2, auc_k=0)
    assert list(before) == ["abs_q", "rel_ratio"] and before["abs_q"] == {
        "n": 3,
        "readout": True,
        "analysis_implies_truth": 42.0,
    }
    assert dev["rel_ratio"] == {"n": 1, "readout": False} and len(bj["abs_q"]) == 3 and len(dj["abs_q"]) == 1
    assert (
        "analysis_implies_truth"
        not in jr.evaluate_start({}, data, family="paper", max_completion=8, batch=2, auc_k=0)[0]["abs_q"]
    )


def test_results_markdown_says_which_numbers_are_the_papers():
    md = jr.results_markdown(
        [{"judge": "stepwiser:rel_ratio", "balanced_acc": 61.25, "paper_pb_avg_f1": 36.2}],
        ["judge", "balanced_acc", "paper_pb_avg_f1"],
    )
    head, table = md.split("\n\n", 1)
    assert "paper_pb_avg_f1 is the PAPER's" in head and md.endswith("\n")
    assert table.splitlines() == [
        "| judge | balanced_acc | paper_pb_avg_f1 |",
        "|---|---|---|",
        "| stepwiser:rel_ratio | 61.2 | 36.2 |",
    ]


def test_comparisons_markdown_leaves_an_uninformative_comparison_without_numbers():
    comps = [
        {
            "claim": "RL beats its warm-up",
            "a": "stepwiser:rel_ratio",
            "b": "warm-up (before RL)",
            "diff": 4.25,
            "low": 1.0,
            "high": 7.5,
            "test": "paired bootstrap by problem",
            "p_bootstrap": 0.004,
            "mcnemar": {"p": 0.01},
            "verdict": "a higher",
        },
        {
            "claim": "x",
            "a": "restate_rl:rel_ratio",
            "b": "warm-up (before RL)",
            "diff": None,
            "low": None,
            "high": None,
            "test": "no verdict parsed",
            "p_bootstrap": None,
            "verdict": "uninformative",
        },
    ]
    lines = jr.comparisons_markdown(comps).splitlines()
    assert lines[-2] == (
        "| RL beats its warm-up | stepwiser:rel_ratio − warm-up (before RL) | +4.2 | [+1.0, +7.5] | "
        "paired bootstrap by problem | 0.004 | 0.01 | a higher |"
    )
    assert (
        lines[-1]
        == "| x | restate_rl:rel_ratio − warm-up (before RL) |  |  | no verdict parsed |  |  | uninformative |"
    )


def test_behaviour_measures_what_the_analysis_and_the_verdict_do():
    """Issue 36: the printed analyses invented arithmetic and verdicts contradicted them; these rates say how often."""
    from stepwiser_lib.toy import judge_text

    p = "a = 25. b = a + 30. c = b + 6. Find c."
    ex = [{"problem": p, "chunk": "b = a + 30 = 25 + 30 = 55"}] * 3
    exact = judge_text.toy_analysis(p, ex[0]["chunk"])
    judged = [
        {"verdict": "Positive", "analysis": exact + "\n\\boxed{Positive}"},  # exact, follows
        {"verdict": "Negative", "analysis": exact},  # exact, contradicts its analysis
        {"verdict": None, "analysis": "b = a + 30 = 25 + 30 = 51\ncheck b: b = 51; stated 55; 55 - 51 = 4"},
    ]  # 25 + 30 != 51
    b = jr.behaviour(judged, ex)
    assert {k: (v["rate"], v["n"]) for k, v in b.items()} == {
        "analysis_exact": (66.7, 3),
        "arithmetic_ok": (66.7, 3),
        "follows_analysis": (50.0, 2),
        "positive": (33.3, 3),
    }
    assert b["positive"]["low"] < 33.3 < b["positive"]["high"]
    lines = jr.behaviour_lines({"warm-up": b, "RL": b})
    assert len(lines) == 4 and lines[2].startswith("- *the verdict is the one its own analysis implies*: warm-up 50.0%")
    assert jr.behaviour(judged, [{"problem": "not a toy problem", "chunk": "x"}] * 3) is None
    warm = {"analysis_faithful": 70.0, "readout_auc": 0.6, "balanced_acc": 55.0}
    records = {"stepwiser:rel_ratio": {"test": {"readout_auc": 0.9, "balanced_acc": 58.0}}}
    rep = jr.readout_report(
        {"warm-up": judged, "stepwiser:rel_ratio": judged}, warm, records, ex, "stepwiser:rel_ratio"
    )
    assert (
        rep["table"]["warm-up"]["analysis_faithful"] == 70.0
        and rep["table"]["stepwiser:rel_ratio"]["balanced_acc"] == 58.0
    )
    assert (
        list(rep["table"]["warm-up"]) == list(jr.READOUT_KEYS) and rep["table"]["warm-up"]["verdict_prob_auc"] is None
    )
    bullets = rep["text"].split("\n\n")[0].splitlines()
    assert len(bullets) == 4 and bullets[3].startswith("- *the verdict is Positive*: warm-up 33.3%")
    assert (
        rep["text"].endswith("(33.3% → 33.3%).")
        and "**What RL changed (stepwiser:rel_ratio against its warm-up).**" in rep["text"]
    )
    assert rep["summary"]["warmup_readout_auc"] == 0.6 and rep["summary"]["rl_readout_auc"] == [0.9]
    assert rep["summary"]["behaviour"]["warm-up"] == b


def test_describe_output_says_what_a_printed_judge_output_is():
    from stepwiser_lib.toy import judge_text

    p = "a = 25. b = a + 30. c = b + 6. Find c."
    e = {"problem": p, "chunk": "b = a + 30 = 25 + 30 = 55"}
    line = jr.describe_output(e, {"verdict": "Negative", "analysis": judge_text.toy_analysis(p, e["chunk"])})
    assert line == (
        "[analysis: the exact re-derivation; it implies the chunk is right; verdict Negative; the verdict "
        "contradicts it; exact checker: right]"
    )
    bad = jr.describe_output(
        e, {"verdict": "Negative", "analysis": "b = a + 30 = 25 + 30 = 51\ncheck b: b = 51; stated 55; 55 - 51 = 4"}
    )
    assert "a sum in it is wrong" in bad and "the verdict follows it" in bad


def test_example_block_prints_the_chunk_and_each_output_with_what_it_is():
    e = {"problem": "a = 25. b = a + 30. Find b.", "history": [], "chunk": "b = a + 30 = 25 + 30 = 55", "label": 1}
    out = {"verdict": "Positive", "analysis": "b = a + 30 = 25 + 30 = 55\ncheck b: b = 55; stated 55; 55 - 55 = 0"}
    block = jr.example_block(e, {"before": out, "after RL": {"verdict": None, "analysis": ""}}).splitlines()
    assert block[1:5] == [
        "PROBLEM: a = 25. b = a + 30. Find b.",
        "HISTORY: (none)",
        "CHUNK:   b = a + 30 = 25 + 30 = 55",
        "MC label: Positive   exact checker: True",
    ]
    assert block[5] == "-- before  : b = a + 30 = 25 + 30 = 55 / check b: b = 55; stated 55; 55 - 55 = 0"
    assert "the verdict follows it" in block[6] and block[7] == "-- after RL: "


def test_in_order_keeps_every_seed_of_each_named_judge():
    """A notebook that ordered its judges by JUDGES dropped the repeat seeds EVERY_SEED had read (toy-full's 06 and 07)."""
    reg = {
        n: {"name": n}
        for n in [
            "warm-up (before RL)",
            "stepwiser:rel_ratio",
            "disc_sft:rel_ratio",
            "stepwiser:rel_ratio@seed1",
            "disc_sft:rel_ratio@seed1",
            "stepwiser:rel_ratio@seed2",
        ]
    }
    assert list(jr.in_order(reg, ["disc_sft:rel_ratio", "stepwiser:rel_ratio"])) == [
        "disc_sft:rel_ratio",
        "disc_sft:rel_ratio@seed1",
        "stepwiser:rel_ratio",
        "stepwiser:rel_ratio@seed1",
        "stepwiser:rel_ratio@seed2",
    ]


def test_dev_test_line_says_whether_the_intervals_overlap():
    sizes = {"dev": {"chunks": 112, "problems": 14}, "test": {"chunks": 360, "problems": 43}}
    rec = {
        "dev": {"ci95": {"balanced_acc": 50.9, "low": 41.0, "high": 60.7}},
        "test": {"ci95": {"balanced_acc": 65.0, "low": 59.8, "high": 70.1}},
    }
    line = jr.dev_test_line("stepwiser:rel_ratio", rec, sizes)
    assert line == (
        "stepwiser:rel_ratio: dev 50.9 [41.0, 60.7] on 112 chunks (14 problems); test 65.0 [59.8, 70.1] on "
        "360 chunks (43 problems): the intervals overlap, so dev and test do not disagree beyond noise"
    )
    rec["dev"]["ci95"].update(low=40.0, high=55.0)
    assert jr.dev_test_line("j", rec, sizes).endswith(
        "the intervals do not overlap: dev and test disagree beyond noise"
    )


def test_warmup_stage_trains_the_styles_the_variants_need(tmp_path, monkeypatch, capsys):
    from types import SimpleNamespace

    seen = {}

    def fake_train(art, styles, chunks, init, **kw):
        seen.update(styles=styles, chunks=len(chunks), steps=kw["steps"])
        return (
            {s: f"{s}/model" for s in styles},
            {s: "k" for s in styles},
            {s: [{"completion": s + " text"}] for s in styles},
        )

    monkeypatch.setattr(jr, "warmup_chunks", lambda *a, **k: [_ex("sft1"), _ex("sft1"), _ex("t1")])  # two repeats
    monkeypatch.setattr(jr, "train_warmups", fake_train)
    cfg = SimpleNamespace(
        WARMUP=True, WARMUP_PROBLEMS=3, WARMUP_SAMPLES=2, PROMPT_FAMILY="toy", SEED=0, WARMUP_STEPS=300,
        DIRECT_WARMUP_STEPS=60, WARMUP_LR=1e-3, WARMUP_BATCH=16, WARMUP_MICRO_BATCH=8, WARMUP_ANALYSIS="derived", WARMUP_VERDICT="coin",
    )  # fmt: skip
    data = {"rel_ratio": {"train_unbalanced": [_ex("t1"), _ex("t2")], "dev_balanced": [], "test_balanced": []}}
    variants = [("stepwiser", "rel_ratio"), ("no_cot_rl", "rel_ratio"), ("disc_sft", "rel_ratio")]
    dirs, keys, example = jr.warmup_stage(tmp_path, cfg, variants, "stepwiser:rel_ratio", "init", data)
    assert (
        seen == {"styles": ["cot", "direct"], "chunks": 3, "steps": 300} and example == "cot text"
    )  # the main judge's warm-up record
    assert (
        "warm-up inputs: 3 distinct chunks, 2 of them training chunks (every rule's, each once) and 1 of the 3 the "
        "chunk policy wrote on 3 SFT-split problems (the others repeat a chunk already in)"
    ) in capsys.readouterr().out
    assert jr.warmup_stage(tmp_path, SimpleNamespace(WARMUP=False), variants, None, "init", data) == ({}, {}, None)
    assert "no warm-up" in capsys.readouterr().out


def test_comparison_report_lines_in_order(monkeypatch):
    paper = {
        "verdict": "undetermined",
        "claim": "generative RL beats discriminative SFT",
        "a": "stepwiser:rel_ratio",
        "b": "disc_sft:rel_ratio",
    }  # a paper claim: the closing lines print it, not this report
    comps = [
        {"verdict": "a higher", "claim": "q1", "a": "x", "b": "y"},
        paper,
        {"verdict": "undetermined", "claim": "q2", "a": "x", "b": "y"},
    ]
    monkeypatch.setattr(jr, "compare_all", lambda preds, ids, main: comps)
    monkeypatch.setattr(jr, "comparison_line", lambda c: f"line {c['claim']}")
    monkeypatch.setattr(jr, "dev_test_line", lambda r, rec, sizes: f"dev/test {r} {sizes}")
    monkeypatch.setattr(jr, "split_sizes", lambda data: {"rel_ratio": {"test": 9}})
    records = {
        "stepwiser:rel_ratio": {"test": {"balanced_acc": 60.0, "ci95": {}, "score_auc": 0.7}},
        "disc_sft:rel_ratio": {"test": {"balanced_acc": 65.0, "ci95": {}}},
    }
    before = {"rel_ratio": {"balanced_acc": 50.0, "score_auc": 0.5}}
    rep = jr.comparison_report({}, records, "stepwiser:rel_ratio", before, {}, auc_k=4)
    assert rep["main_runs"] == ["stepwiser:rel_ratio"] and rep["summary"]["rl_beats_warmup"] is True
    assert rep["lines"][:3] == ["line q1", "line q2", "dev/test stepwiser:rel_ratio {'test': 9}"]
    assert rep["lines"][3].startswith("Score AUC (Maj@4, against MC labels): warm-up 0.5 → after GRPO [0.7]")
    assert jr.comparison_report({}, records, None, before, {}) == {
        "comparisons": [], "summary": {}, "main_runs": [], "lines": []
    }  # fmt: skip


def test_behaviour_change_says_what_rl_changed():
    def m(rate, low, high):
        return {"rate": rate, "low": low, "high": high, "n": 100}

    before = {
        "analysis_exact": m(48.9, 43.9, 54.0),
        "arithmetic_ok": m(65.6, 60.6, 70.2),
        "follows_analysis": m(72.2, 67.5, 76.5),
        "positive": m(67.2, 62.3, 71.8),
    }
    after = {
        "analysis_exact": m(29.0, 24.7, 33.8),
        "arithmetic_ok": m(46.2, 41.2, 51.3),
        "follows_analysis": m(98.9, 97.3, 99.6),
        "positive": m(72.0, 67.3, 76.4),
    }
    line = jr.behaviour_change(before, after, "stepwiser:rel_ratio")
    assert line.startswith(
        "**What RL changed (stepwiser:rel_ratio against its warm-up).** the analysis is the exact re-derivation "
        "less often (48.9% → 29.0%); its sums hold less often (65.6% → 46.2%); the verdict follows the analysis "
        "more often (72.2% → 98.9%); the verdict is Positive about as often (the intervals overlap) (67.2% → 72.0%)."
    )
    assert "the analysis it reads is worse" in line
    assert "worse" not in jr.behaviour_change(before, before, "x") and jr.behaviour_change(None, after, "x") == ""


def test_evaluate_runs_reads_other_starts_their_rules_and_a_dev_threshold_issue_59(monkeypatch):
    """Each other warm-up is a row and its predictions (the oracle warm-up's analyses kept on test,
    and the rule reading them); a verdict-only run is also read at the dev-chosen cut of its
    p(Positive), which here separates the chunks its greedy verdicts (all Positive) do not."""
    from stepwiser_lib.core import vocab
    from stepwiser_lib.engines import models
    from stepwiser_lib.method import judge, tasks

    monkeypatch.setattr(tasks, "analysis_verdict", lambda text: "0" in text)
    monkeypatch.setattr(tasks, "analysis_checks", lambda e, a: {"exact": a.startswith("check 0")})
    monkeypatch.setattr(judge, "load_judge", lambda e, fam, max_new, batch: ("judge", e["name"], max_new))
    monkeypatch.setattr(models, "release", lambda *a: None)

    def fake_eval(j, examples, auc_k=0, readout=False):
        judged = [
            {
                "verdict": "Positive",
                "score": 1.0,
                "analysis": "\\boxed{Positive}",
                "p_positive": 0.9 + 0.05 * e["label"],
            }
            for e in examples
        ]
        return {"balanced_acc": 50.0}, judged

    monkeypatch.setattr(judge, "evaluate_judge", fake_eval)
    ex = [
        {**_ex(f"q{i // 2}", f"c{i}"), "label": i % 2 == 0, "traj_id": f"q{i // 2}/s0", "chunk_index": i}
        for i in range(4)
    ]
    data = {"rel_ratio": {"dev_balanced": ex, "test_balanced": ex}}
    cot = [{"verdict": "Negative", "analysis": f"check {i % 2}\n\\boxed{{Negative}}"} for i in range(4)]
    warm = {"rel_ratio": {"dev": cot, "test": cot}}
    oracle = vocab.START_NAME["derived"]
    records = {
        "no_cot_rl:rel_ratio": {
            "entry": {"name": "no_cot_rl:rel_ratio", "rule": "rel_ratio", "style": "direct", "row": "x"},
            "train": {"seconds": 2.0},
        }
    }
    preds, rows, _, refs = jr.evaluate_runs(
        records,
        data,
        {"rel_ratio": {"balanced_acc": 50.0}},
        {"rel_ratio": {"balanced_acc": 50.0}},
        warm,
        family="toy",
        max_completion=128,
        direct_max_completion=8,
        judge_batch=4,
        auc_k=0,
        seed=0,
        other_starts={oracle: {"rel_ratio": {"dev": cot, "test": cot}}},
    )
    names = [r["judge"] for r in rows]
    assert names[:2] == ["warm-up (before RL)", oracle] and vocab.rule_name(oracle) in names
    start = preds[(oracle, "rel_ratio", "test")]
    assert [p["analysis_exact"] for p in start] == [True, False, True, False]
    assert start[0]["analysis"] == "check 0" and preds[(oracle, "rel_ratio", "dev")][0]["analysis"] is None
    assert [p["verdict"] for p in preds[(vocab.rule_name(oracle), "rel_ratio", "test")]] == [True, False, True, False]
    assert vocab.rule_name(oracle) in refs
    th = preds[("no_cot_rl:rel_ratio (dev threshold)", "rel_ratio", "test")]
    assert [p["verdict"] for p in th] == [True, False, True, False]  # the cut between 0.90 and 0.95
    assert records["no_cot_rl:rel_ratio"]["dev_threshold"]["test_balanced_acc"] == 100.0
    assert all(p["verdict"] is True for p in preds[("no_cot_rl:rel_ratio", "rel_ratio", "test")])
    assert jr.oracle_map(sorted({k[0] for k in preds}), "own") == {
        "warm-up (before RL)": False,
        oracle: True,
        jr.REF_RULE: False,
        vocab.rule_name(oracle): True,
        jr.REF_EXACT: True,
        "no_cot_rl:rel_ratio": False,
        "no_cot_rl:rel_ratio (dev threshold)": False,
    }
    changes = jr.analysis_changes(
        {
            **preds,
            ("oracle_rl:rel_ratio", "rel_ratio", "test"): [
                {**p, "analysis_exact": True} for p in preds[(oracle, "rel_ratio", "test")]
            ],
        },
        ["oracle_rl:rel_ratio", "no_cot_rl:rel_ratio"],
    )
    assert list(changes) == ["oracle_rl:rel_ratio"]
    assert (changes["oracle_rl:rel_ratio"]["gained"], changes["oracle_rl:rel_ratio"]["lost"]) == (2, 0)


def _child_train(name, data, d, *, seed, **kw):
    """A stand-in for train_variant that runs in a training process (module level: pickled by
    name): it records which process trained it and how many threads torch had there."""
    import time

    import torch

    if seed == 99:
        raise RuntimeError("a run that fails")
    time.sleep(0.3)  # long enough that both processes take runs
    return {
        "entry": {"name": name, "kind": name.split(":")[0]},
        "train": {"seconds": 0.3, "pid": os.getpid(), "threads": torch.get_num_threads(), "seed": seed},
    }


def test_train_in_processes_shares_the_runs_out_and_train_runs_reads_them_from_disk(tmp_path, monkeypatch, capsys):
    """TRAIN_PROCESSES (issue 61): the runs are trained by side-by-side processes with a share of
    the cores each, cached under the keys train_runs uses, so that it trains nothing itself."""
    from stepwiser_lib.core import paths
    from stepwiser_lib.method import judge_train

    monkeypatch.setattr(paths, "model_fingerprint", lambda init: "fp")
    monkeypatch.setattr(judge_train, "recipe_key", lambda kind, recipe: {kind: recipe[kind]})
    kw = dict(init="init", warmups={}, data={}, family="toy")
    recipe = {"stepwiser": 1, "disc_sft": 1}
    runs = jr.training_runs(["stepwiser:rel_ratio", "disc_sft:rel_ratio"], 0, [1])
    jobs = [
        (
            n,
            s,
            r,
            jr.run_key(n, s, recipe=recipe, init="init", warm_keys={}, data_hash={"rel_ratio": "h"}, family="toy"),
        )
        for n, s, r in runs
    ]
    done = jr.train_in_processes(jobs, 2, {"art": tmp_path, "recipe": recipe, **kw, "train": _child_train})
    assert sorted(done) == sorted(r for _, _, r in runs) and all(t for _, t in done.values())
    recs = {r: io.read_json(tmp_path / jr.variant_slug(r) / "record.json") for _, _, r in runs}
    assert len({rec["train"]["pid"] for rec in recs.values()}) == 2  # both processes trained
    assert {rec["train"]["pid"] for rec in recs.values()}.isdisjoint({os.getpid()})
    cores = int(os.environ.get("OMP_NUM_THREADS") or 0) or os.cpu_count() or 1
    assert {rec["train"]["threads"] for rec in recs.values()} == {max(1, cores // 2)}
    assert recs["disc_sft:rel_ratio@seed1"]["train"]["seed"] == 1

    def no_training(*a, **k):
        raise AssertionError("train_runs trained a run the processes had trained")

    monkeypatch.setattr(judge_train, "train_variant", no_training)
    every = dict(recipe=recipe, warm_keys={}, data_hash={"rel_ratio": "h"}, **kw)  # what train_runs reads
    out = jr.train_runs(tmp_path, ["stepwiser:rel_ratio", "disc_sft:rel_ratio"], 0, [1], **every)
    assert list(out) == [r for _, _, r in runs] and "(from disk)" in capsys.readouterr().out
    assert all(jr.on_disk(tmp_path, r, k) for _, _, r, k in jobs) and not jr.on_disk(tmp_path, runs[0][2], "other key")
    monkeypatch.setattr(jr, "train_in_processes", lambda *a: pytest.fail("processes started for runs on disk"))
    jr.train_runs(tmp_path, ["stepwiser:rel_ratio", "disc_sft:rel_ratio"], 0, [1], processes=2, **every)
    monkeypatch.undo()
    # a failing run raises in the caller; the runs already done stay on disk
    with pytest.raises(RuntimeError, match="a run that fails"):
        jr.train_in_processes(
            [("rsft:rel_ratio", 99, "rsft:rel_ratio@seed99", "k")],
            2,
            {"art": tmp_path, "recipe": recipe, **kw, "train": _child_train},
        )
    assert (tmp_path / jr.variant_slug("stepwiser:rel_ratio") / "record.json").exists()


def test_train_runs_trains_one_at_a_time_on_a_gpu(tmp_path, monkeypatch, capsys):
    from stepwiser_lib.core import paths
    from stepwiser_lib.engines import models
    from stepwiser_lib.method import judge_train

    monkeypatch.setattr(models, "pick_device", lambda device="auto": "cuda")
    monkeypatch.setattr(paths, "model_fingerprint", lambda init: "fp")
    monkeypatch.setattr(judge_train, "recipe_key", lambda kind, recipe: {})
    monkeypatch.setattr(jr, "train_in_processes", lambda *a: pytest.fail("side-by-side processes on a GPU"))
    monkeypatch.setattr(
        judge_train,
        "train_variant",
        lambda name, data, d, *, seed, **kw: {"entry": {"name": name}, "train": {"seconds": 1.0}},
    )
    recs = jr.train_runs(
        tmp_path,
        ["disc_sft:rel_ratio"],
        0,
        [1],
        recipe={},
        init="i",
        warmups={},
        warm_keys={},
        data={},
        data_hash={"rel_ratio": "h"},
        family="toy",
        processes=2,
    )
    assert len(recs) == 2 and "the runs go one at a time" in capsys.readouterr().out


def _child_judge(entry, data, splits, *, family, max_completion, direct_max_completion, batch):
    """A stand-in for judge_entry in a judging process (module level: pickled by name)."""
    import torch

    return {
        (rule, split): ({"pid": os.getpid(), "threads": torch.get_num_threads(), **kw}, data[rule][split][:1])
        for rule, split, kw in splits
    }


def test_judge_many_judges_side_by_side_and_returns_the_jobs_in_order(monkeypatch):
    """The evaluations of notebook 04 (issue 61): the judges shared out to TRAIN_PROCESSES
    processes, their results returned in the order of the jobs, as one process returns them."""
    data = {"rel_ratio": {"dev": [{"i": 0}], "test": [{"i": 1}]}}
    jobs = {
        f"j{i}": ({"name": f"j{i}", "style": "cot"}, [("rel_ratio", "dev", {}), ("rel_ratio", "test", {"auc_k": i})])
        for i in range(4)
    }
    settings = dict(family="toy", max_completion=8, direct_max_completion=4, batch=2, judge_entry=_child_judge)
    two = jr.judge_many(jobs, data, processes=2, **settings)
    one = jr.judge_many(jobs, data, processes=1, **settings)
    assert list(two) == list(one) == list(jobs)
    assert {two[n][("rel_ratio", "dev")][0]["pid"] for n in jobs} - {os.getpid()}  # not judged here
    assert all(two[n][("rel_ratio", "test")][0]["auc_k"] == int(n[1:]) for n in jobs)
    cores = int(os.environ.get("OMP_NUM_THREADS") or 0) or os.cpu_count() or 1
    assert {two[n][k][0]["threads"] for n in jobs for k in two[n]} == {max(1, cores // 2)}
    strip = lambda out: {
        n: {k: (m["auc_k"] if "auc_k" in m else None, j) for k, (m, j) in v.items()} for n, v in out.items()
    }  # noqa: E731
    assert strip(two) == strip(one)
    from stepwiser_lib.engines import models

    monkeypatch.setattr(models, "pick_device", lambda device="auto": "cuda")
    monkeypatch.setattr(jr, "in_processes", lambda *a: pytest.fail("side-by-side judges on a GPU"))
    assert list(jr.judge_many(jobs, data, processes=2, **settings)) == list(jobs)


def test_own_analyses_in_parts_keep_the_chunks_order(tmp_path, monkeypatch):
    """TRAIN_PROCESSES (issue 61): the checking texts are written in contiguous parts by side-by-side
    processes and joined in the chunks' order (here the processes are stood in for in-process)."""
    monkeypatch.setattr(jr, "_checks", lambda init, texts, batch, max_new, progress=True: [t[-12:] for t in texts])
    monkeypatch.setattr(jr, "cpu_processes", lambda p, what: p)

    def pool(fn, jobs, processes, shared, desc, unit):
        jr._SHARED.clear()
        jr._SHARED.update(shared)
        for job in reversed(jobs):  # out of order, as a pool may finish them
            yield None, fn(job)

    monkeypatch.setattr(jr, "in_processes", pool)
    monkeypatch.setattr(jr.paths, "model_fingerprint", lambda init: "m")
    chunks = [_ex(f"p{i}", chunk=f"chunk number {i:03d}") for i in range(7)]
    one = jr.own_analyses(tmp_path / "a", "init", chunks, batch=2, max_new_tokens=8, processes=1)
    two = jr.own_analyses(tmp_path / "b", "init", chunks, batch=2, max_new_tokens=8, processes=3)
    assert two == one and len(one) == 7 and len(set(one)) == 7
