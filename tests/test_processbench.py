import json
import os
from pathlib import Path

import pytest

from stepwiser_lib.core import paths, schemas
from stepwiser_lib.method import processbench as PB
from stepwiser_lib.toy import processbench_build

#: The real ProcessBench: the Makefile's (data/full after `make data`, else the committed fixture).
PB_DIR = os.environ.get("STEPWISER_PROCESSBENCH_DIR") or str(paths.real_data_dir() / "processbench")


def test_score_literal_cases():
    s = PB.score([-1, -1, 2, 0], [-1, -1, 2, 0])
    assert (s["error_acc"], s["correct_acc"], s["f1"]) == (100.0, 100.0, 100.0)
    s = PB.score([-1, 1, 2], [1, -1, 1])  # all wrong
    assert (s["error_acc"], s["correct_acc"], s["f1"]) == (0.0, 0.0, 0.0)
    s = PB.score([-1, -1, 3, 1], [-1, None, 3, 2])  # None never matches; late flag is wrong
    assert s["correct_acc"] == 50.0 and s["error_acc"] == 50.0 and s["f1"] == pytest.approx(50.0)
    s = PB.score([2, 1], [2, 1])  # empty correct group
    assert s["correct_acc"] == 0.0 and s["f1"] == 0.0 and s["n_correct"] == 0
    s = PB.score([-1, 0, 0, 0], [-1, 0, -1, -1])  # harmonic mean, not arithmetic
    assert s["f1"] == pytest.approx(2 * 100 * (100 / 3) / (100 + 100 / 3))
    with pytest.raises(ValueError):
        PB.score([1], [])


def test_always_positive_scores_zero_f1():
    labels = [-1, -1, 0, 3]
    assert PB.score(labels, [-1] * 4)["f1"] == 0.0


def test_average_is_unweighted():
    per = {"a": {"f1": 68.2}, "b": {"f1": 62.6}, "c": {"f1": 50.7}, "d": {"f1": 44.3}}
    assert round(PB.average_f1(per), 1) == 56.5  # Qwen2.5-Math-7B-PRM800K, ProcessBench paper Table 3


def test_first_error_index():
    assert PB.first_error_index([True, True]) == -1
    assert PB.first_error_index([True, False, False]) == 1
    assert PB.first_error_index(["Positive", "Negative"]) == 1
    assert PB.first_error_index([]) == -1
    # verdicts.RULE: a step without a verdict before any Negative leaves the solution without a prediction
    assert PB.first_error_index([None, True]) is None and PB.first_error_index([True, None, False]) is None
    assert PB.first_error_index([True, False, None]) == 1  # a Negative first: the prediction stands


def _write(tmp_path, recs, raw_lines=()):
    p = tmp_path / "gsm8k.jsonl"
    p.write_text("".join(json.dumps(r) + "\n" for r in recs) + "".join(raw_lines))
    return tmp_path


GOOD = {
    "id": "gsm8k-0",
    "generator": "g",
    "problem": "p",
    "steps": ["a", "b"],
    "final_answer_correct": True,
    "label": -1,
}


@pytest.mark.parametrize(
    "bad,msg",
    [
        ({k: v for k, v in GOOD.items() if k != "steps"}, "line 1: missing field 'steps'"),
        ({**GOOD, "label": 2}, "outside -1..1"),
        ({**GOOD, "label": "1"}, "'label' should be int"),
        ({**GOOD, "final_answer_correct": 1}, "should be bool"),
        ({**GOOD, "steps": []}, "non-empty list"),
    ],
)
def test_loader_validation_errors(tmp_path, bad, msg):
    d = _write(tmp_path, [bad])
    with pytest.raises(PB.ProcessBenchError, match=msg):
        PB.load_split("gsm8k", str(d))


def test_loader_bad_json_line_and_counts_warning(tmp_path):
    d = _write(tmp_path, [GOOD], ["{not json\n"])
    with pytest.raises(PB.ProcessBenchError, match="gsm8k, line 2: bad JSON"):
        PB.load_split("gsm8k", str(d))
    d = _write(tmp_path, [GOOD])
    with pytest.warns(UserWarning, match="0 erroneous / 1 correct"):
        PB.load_split("gsm8k", str(d))
    with pytest.raises(PB.ProcessBenchError, match="unknown ProcessBench split"):
        PB.load_split("aime", str(d))


def test_real_processbench_loads_with_paper_counts(recwarn):
    """The full splits have the paper's Table 1 counts; the committed fixture 12 erroneous and 12
    correct solutions per split, and it is not warned about."""
    fixture = PB.is_fixture(PB_DIR)
    for split in PB.SPLITS:
        recs = PB.load_split(split, PB_DIR)
        want = (PB.FIXTURE_PER_GROUP, PB.FIXTURE_PER_GROUP) if fixture else PB.EXPECTED_COUNTS[split]
        assert PB.check_counts(split, recs, fixture) == want
    assert not [w for w in recwarn if "erroneous" in str(w.message)]


def test_real_processbench_math_688_keeps_the_official_label():
    """The official GitHub copy labels math-688's first error at step 2; the hub's ``main`` later
    corrected it to 0 (QwenLM/ProcessBench issue 9); ``fix_math_688`` gives the corrected label."""
    import hashlib

    from stepwiser_lib.tools import data

    math = {r["id"]: r for r in PB.load_split("math", PB_DIR)}
    if "math-688" not in math:
        pytest.skip("the committed fixture holds no math-688 (the full split does: make data)")
    github = hashlib.sha256(PB.local_folder(PB_DIR).joinpath("math.jsonl").read_bytes()).hexdigest()
    official = github == data.SOURCES["processbench/math.jsonl"]["sha256"]
    assert math["math-688"]["label"] == 2 if official else math["math-688"]["label"] in (0, 2)
    assert {r["id"]: r for r in PB.load_split("math", PB_DIR, fix_math_688=True)}["math-688"]["label"] == 0


# ----------------------------------------------------------------------------- protocol and toy


def test_threshold_predictions_and_best_threshold():
    scores = [[0.9, 0.2, 0.8], [0.9, 0.9], [0.4, 0.9]]
    assert PB.threshold_predictions(scores, 0.5) == [1, -1, 0]
    assert PB.threshold_predictions(scores, 0.1) == [-1, -1, -1]
    labels = [1, -1, 0]
    t, f1 = PB.best_threshold(labels, scores)
    assert f1 == 100.0 and PB.threshold_predictions(scores, t) == labels
    # ties go to the smallest threshold that reaches the best F1
    assert t == pytest.approx(0.4 + 1e-6)


def test_subset_keeps_groups_balanced_and_order():
    recs = [{"id": i, "label": -1 if i % 3 == 0 else 1} for i in range(30)]
    sub = PB.subset(recs, 10)
    assert len(sub) == 10 and sum(r["label"] == -1 for r in sub) == 5
    assert [r["id"] for r in sub] == sorted(r["id"] for r in sub)
    assert PB.subset(recs, 0) == recs and len(PB.subset(recs[:4], 10)) == 4


def test_error_kinds():
    k = PB.error_kinds([2, 2, 2, 2, -1, -1, 2, -1], [2, 0, 3, -1, -1, 1, None, None])
    assert k == {"exact": 2, "too_early": 1, "too_late": 1, "missed": 1, "false_alarm": 1, "no_verdict": 2}


class _ScriptedJudge:
    """Negative iff the step text contains "bad"; records the batches it got."""

    def __init__(self):
        self.batches = []

    def judge(self, triples, k=1, seed=0, **kw):
        self.batches.append(triples)
        return [
            {
                "verdict": "Negative" if "bad" in c else "Positive",
                "score": 0.0 if "bad" in c else 1.0,
                "analysis": f"a:{c}",
            }
            for _, _, c in triples
        ]


def test_judge_solutions_protocol():
    recs = [
        {"problem": "P", "steps": ["ok", "bad", "ok", "bad"]},
        {"problem": "Q", "steps": ["ok", "ok"]},
        {"problem": "R", "steps": ["bad"]},
    ]
    j = _ScriptedJudge()
    out = PB.judge_solutions(j, recs, progress=False)
    assert [o["prediction"] for o in out] == [1, -1, 0]
    assert [len(o["verdicts"]) for o in out] == [2, 2, 1]  # stopped after the first Negative
    assert [len(b) for b in j.batches] == [3, 2]  # one batched call per step index
    assert j.batches[1][0] == ("P", ["ok"], "bad")  # history = the steps before
    full = PB.judge_solutions(_ScriptedJudge(), recs, stop_at_first_negative=False, progress=False)
    assert [len(o["verdicts"]) for o in full] == [4, 2, 1] and full[0]["prediction"] == 1
    assert full[0]["scores"] == [1.0, 0.0, 1.0, 0.0]


def test_stopping_at_a_zero_score_leaves_every_thresholded_prediction_as_it_was():
    """The Maj@k score path judges fewer steps, and no threshold can tell."""

    class Graded(_ScriptedJudge):  # score = the fraction of Positive samples a step's text names
        def judge(self, triples, k=1, seed=0, **kw):
            self.batches.append(triples)
            return [{"verdict": None, "score": float(c), "analysis": c} for _, _, c in triples]

    recs = [
        {"problem": "P", "steps": ["1", "0.5", "0", "0.25", "1"]},
        {"problem": "Q", "steps": ["0.75", "1"]},
        {"problem": "R", "steps": ["0", "0.75", "0"]},
        {"problem": "S", "steps": ["0.25", "0.5", "0.75"]},
    ]
    full = PB.judge_solutions(Graded(), recs, stop_at_first_negative=False, progress=False)
    j = Graded()
    cut = PB.judge_solutions(j, recs, stop_at_first_negative=False, stop_at_zero_score=True, progress=False)
    assert [o["scores"] for o in cut] == [[1.0, 0.5, 0.0], [0.75, 1.0], [0.0], [0.25, 0.5, 0.75]]
    assert sum(map(len, j.batches)) == 9  # of the 13 steps
    for t in (0.0, 0.1, 0.26, 0.5, 0.6, 0.8, 1.0, 1.1):
        assert PB.threshold_predictions([o["scores"] for o in cut], t) == PB.threshold_predictions(
            [o["scores"] for o in full], t
        ), t
    labels = [2, -1, 0, 1]
    assert PB.best_threshold(labels, [o["scores"] for o in cut]) == PB.best_threshold(
        labels, [o["scores"] for o in full]
    )


def test_toy_processbench_labels_agree_with_the_step_checker():
    from stepwiser_lib.core.paths import ROOT
    from stepwiser_lib.toy import toyworld as tw

    man = json.loads((ROOT / schemas.TOY_DIR_DEFAULT / "manifest.json").read_text())
    for split in schemas.TOY_SPLITS:
        recs = PB.load_toy(split)
        assert len(recs) == 200
        assert sum(r["label"] == -1 for r in recs) == 100  # half correct, half erroneous
        for r in recs:
            p = tw.parse_problem(r["problem"])
            assert tw.first_error(p, r["steps"]) == r["label"], r["id"]
            assert tw.problem_split(r["problem"]) == "processbench"  # disjoint from training
        # alternating error/correct: any prefix is balanced
        assert abs(sum(r["label"] == -1 for r in recs[:20]) - 10) <= 1
    assert {s: m["n"] for s, m in man["splits"].items()} == {s: 200 for s in schemas.TOY_SPLITS}


def test_toy_loader_errors(tmp_path):
    with pytest.raises(PB.ProcessBenchError, match="unknown toy"):
        PB.load_toy("toy_9step")
    with pytest.raises(FileNotFoundError, match="make toy-processbench"):
        PB.load_toy("toy_2step", tmp_path)
    (tmp_path / "toy_2step.jsonl").write_text(
        json.dumps(
            {"id": "x", "generator": "g", "problem": "p", "steps": ["a"], "final_answer_correct": True, "label": 3}
        )
        + "\n"
    )
    with pytest.raises(PB.ProcessBenchError, match="toy_2step, line 1.*label"):
        PB.load_toy("toy_2step", tmp_path)


def test_prediction_records_literal():
    bench = {"s1": [{"id": "a", "label": 2}, {"id": "b", "label": -1}]}
    recs = PB.prediction_records("j", bench, {"s1": [2, 0]})
    assert recs == [
        {"judge": "j", "split": "s1", "id": "a", "label": 2, "prediction": 2},
        {"judge": "j", "split": "s1", "id": "b", "label": -1, "prediction": 0},
    ]
    with pytest.raises(ValueError, match="1 predictions for 2 s1 solutions"):
        PB.prediction_records("j", bench, {"s1": [2]})


def test_average_f1_ci_literal():
    labels = {"s1": [1, -1], "s2": [0, -1]}
    perfect = PB.average_f1_ci(labels, labels, n_boot=100)
    assert perfect == {"avg_f1": 100.0, "low": 100.0, "high": 100.0}  # every replicate is perfect
    mixed = PB.average_f1_ci(labels, {"s1": [1, -1], "s2": [-1, -1]}, n_boot=200)
    assert mixed["avg_f1"] == 50.0 and mixed["low"] <= 50.0 <= mixed["high"] <= 100.0


def test_compare_avg_f1_pairs_the_same_solutions():
    labels = {"s1": [1, -1] * 10, "s2": [0, -1] * 10}
    worse = {"s1": [1, -1] * 10, "s2": [-1, -1] * 10}  # s1 perfect (F1 100); s2 misses every error (F1 0)
    r = PB.compare_avg_f1(labels, labels, worse, n_boot=300)
    # every replicate keeps each split's error/correct sizes: the difference is 50 points in all of them
    assert (r["diff"], r["low"], r["high"], r["verdict"]) == (50.0, 50.0, 50.0, "a higher")
    assert r["p_bootstrap"] == round(2 / 301, 5) and "40 solutions" in r["test"]
    same = PB.compare_avg_f1(labels, worse, worse, n_boot=100)
    assert same["diff"] == 0 and same["verdict"] == "undetermined" and same["p_bootstrap"] == 1.0
    with pytest.raises(ValueError):
        PB.compare_avg_f1(labels, labels, {"s1": [1], "s2": [0]})  # not the same solutions


def test_notebook05_table_helpers():
    per = {
        "a": {"error_acc": 50.0, "correct_acc": 100.0, "f1": 66.666},
        "b": {"error_acc": 0.0, "correct_acc": 100.0, "f1": 0.0},
    }
    assert PB.table_row("j", per, source="ours") == {
        "judge": "j",
        "source": "ours",
        "a err": 50.0,
        "a corr": 100.0,
        "a f1": 66.7,
        "b err": 0.0,
        "b corr": 100.0,
        "b f1": 0.0,
        "avg f1": 33.3,
    }
    bench = {"a": [{"steps": ["1 + 1 = 2", "2 + 2 = 5"], "label": 1}, {"steps": ["1 + 1 = 2"], "label": -1}]}
    base, preds = PB.baselines("toy", bench)
    assert preds == {"a": [1, -1]} and base["calculator [toy]"]["a"]["f1"] == 100.0
    assert base["always-Positive [toy]"]["a"]["error_acc"] == 0.0
    # scores per step; the best threshold on the first split is applied to the second as it is
    t, thr = PB.thresholded({"a": [1, -1], "b": [0]}, {"a": [[0.9, 0.1], [0.9]], "b": [[0.05, 0.9]]})
    assert thr["a"] == [1, -1] and thr["b"] == [0] and t == pytest.approx(0.1 + 1e-6)  # just above the wrong step
    rows = PB.paper_rows(
        [
            {"row": "Generative CoT + RL (StepWiser)", "rule": "rel_ratio"},
            {"row": "Generative CoT + RL (StepWiser)", "rule": "rel_ratio"},
            {"row": "format warm-up", "rule": None},
        ]
    )
    assert len(rows) == 1 and rows[0]["avg f1"] == 36.2 and rows[0]["judge"].startswith("PAPER 1.5B-chunk")


def test_run_judges_rows_thresholds_cache_and_the_orderings_inputs(tmp_path, monkeypatch, capsys):
    from stepwiser_lib.engines import models

    monkeypatch.setattr(models, "release", lambda *a: None)
    bench = {
        "a": [
            {"id": "1", "problem": "P", "steps": ["ok", "bad"], "label": 1},
            {"id": "2", "problem": "Q", "steps": ["ok"], "label": -1},
        ],
        "b": [{"id": "3", "problem": "R", "steps": ["bad", "ok"], "label": 0}],
    }
    loads = []

    def load(e):
        loads.append(e["name"])
        return _ScriptedJudge()

    judges = [{"name": "stepwiser:rel_ratio", "style": "cot"}, {"name": "disc_sft:rel_ratio", "style": "disc"}]
    kw = dict(
        bench_kind="toy",
        stop_at_first_negative=True,
        maj_k=1,
        maj_temperature=1.0,
        max_completion=8,
        maj_k_score=2,
        maj_k_score_judges=["stepwiser:rel_ratio"],
        seed=0,
    )
    run = PB.run_judges(judges, bench, tmp_path, load, **kw)
    assert [r.split(" (threshold")[0] for r in run["results"]] == [
        "stepwiser:rel_ratio",
        "stepwiser:rel_ratio Maj@2 score",
        "disc_sft:rel_ratio",
        "disc_sft:rel_ratio",
    ]
    assert run["results"]["stepwiser:rel_ratio"]["a"]["f1"] == 100.0  # the scripted judge finds every error
    assert loads == ["stepwiser:rel_ratio", "stepwiser:rel_ratio", "disc_sft:rel_ratio"]  # greedy, Maj@2, disc
    assert len(run["records"]) == 3 * len(run["results"]) and set(run["cis"]) == set(run["results"])
    thr_row = next(r for r in run["results"] if r.startswith("disc_sft:rel_ratio (threshold"))
    assert run["first_error"]["disc_sft:rel_ratio"] == {
        s: [r["prediction"] for r in run["records"] if r["judge"] == thr_row and r["split"] == s] for s in bench
    }  # the disc judge meets others at its threshold
    assert run["outputs"]["disc_sft:rel_ratio"]["a"][0]["scores"] == [1.0, 0.0]  # run on every step
    PB.run_judges(judges, bench, tmp_path, load, **kw)
    assert len(loads) == 3  # all from disk
    kinds = PB.error_kinds_by_judge(run["outputs"], bench)
    assert kinds["stepwiser:rel_ratio"] == {
        "exact": 3,
        "too_early": 0,
        "too_late": 0,
        "missed": 0,
        "false_alarm": 0,
        "no_verdict": 0,
    }
    ex = PB.examples(bench, run["outputs"]["stepwiser:rel_ratio"], 1)
    assert [(k, s, r["id"]) for k, s, r, _ in ex] == [("found", "a", "1")]
    text = PB.format_example(ex[0][0], ex[0][1], {**ex[0][2], "generator": "g"}, ex[0][3])
    assert "FOUND (a, 1, generator g): true first error = step 1, judge predicted 1" in text
    assert "judge analysis: a:bad" in text and "step 0 [Positive]: ok" in text
    rows = PB.result_rows(run["results"], {}, run["cis"])
    assert all("avg f1 95% interval" in r for r in rows)
    md = PB.results_markdown(rows, [], [], "toy", list(bench))
    assert md.startswith("Trained judges on toy-ProcessBench (ours):") and "a f1" in md


def test_load_bench_toy_and_a_clear_error():
    bench = PB.load_bench("toy", None, limit=10)
    assert list(bench) == list(schemas.TOY_SPLITS) and all(len(r) == 10 for r in bench.values())
    s = PB.bench_summary(bench)
    assert all(v["solutions"] == 10 and v["erroneous"] == 5 for v in s.values())
    with pytest.raises(ValueError, match="BENCH must be toy or real, not 'fake'"):
        PB.load_bench("fake", None)


def test_the_maj_k_temperature_reaches_the_judge_and_greedy_stays_greedy():
    seen = []

    class Recording(_ScriptedJudge):
        def judge(self, triples, k=1, seed=0, **kw):
            seen.append(kw.get("temperature"))
            return super().judge(triples, k=k, seed=seed)

    recs = [{"problem": "P", "steps": ["ok"]}]
    PB.judge_solutions(Recording(), recs, k=4, temperature=0.7, progress=False)
    PB.judge_solutions(Recording(), recs, progress=False)
    assert seen == [0.7, None]


def test_take_both_keeps_one_solution_per_problem_in_round_order():
    """toy-ProcessBench's selection (build_toy): correct solutions pick their problems first, each
    problem is used once across both kinds, and a later round's records come after the first
    round's (a top-up never changes what the first round chose)."""

    def rec(problem, label):
        return {"problem": problem, "label": label}

    cor = [((1, 0, 0), rec("p9", -1)), ((0, 1, 0), rec("p1", -1)), ((0, 0, 1), rec("p0", -1))]
    err = [((0, 0, 0), rec("p0", 2)), ((0, 2, 0), rec("p2", 1)), ((1, 1, 0), rec("p8", 0)), ((0, 3, 0), rec("p3", 1))]
    c, e = processbench_build._take_both(cor, err, 2)
    assert [r["problem"] for r in c] == ["p0", "p1"]
    assert [r["problem"] for r in e] == ["p2", "p3"]  # p0 went to the correct side; round 1's p8 comes last
    c, e = processbench_build._take_both(cor, err, 3)
    assert [r["problem"] for r in c] == ["p0", "p1", "p9"] and [r["problem"] for r in e] == ["p2", "p3", "p8"]


def test_examples_show_each_kind_of_error_named_as_error_kinds_names_it():
    bench = {
        "s": [
            {"id": "1", "label": 1},
            {"id": "2", "label": 0},
            {"id": "3", "label": -1},
            {"id": "4", "label": -1},
            {"id": "5", "label": 4},
            {"id": "6", "label": 1},
            {"id": "7", "label": 2},
        ]
    }
    outs = {
        "s": [
            {"prediction": 1},
            {"prediction": -1},
            {"prediction": -1},
            {"prediction": 0},
            {"prediction": 2},
            {"prediction": 3},
            {"prediction": 0},
        ]
    }
    assert [(k, r["id"]) for k, _, r, _ in PB.examples(bench, outs, 1)] == [
        ("found", "1"),
        ("missed", "2"),
        ("false alarm", "4"),
        ("too early", "5"),
        ("too late", "6"),
    ]  # the first of each kind
    r = {"id": "4", "label": -1, "generator": "g", "problem": "P", "steps": ["a"]}
    text = PB.format_example("false alarm", "s", r, {"prediction": 0, "verdicts": ["Negative"], "analyses": ["why"]})
    assert "true first error = none (a correct solution), judge predicted 0" in text and "judge analysis: why" in text


class _SeededJudge(_ScriptedJudge):
    """The scripted judge, whose analysis also names the seed it was called with (so a test sees
    which shard seed judged which solution)."""

    def judge(self, triples, k=1, seed=0, **kw):
        return [{**r, "analysis": f"{r['analysis']}|{seed}"} for r in super().judge(triples, k=k, seed=seed)]


def _seeded_load(e):  # module level: side-by-side processes receive it pickled
    return _SeededJudge()


def test_run_judges_side_by_side_writes_the_runs_one_process_would(tmp_path, monkeypatch, capsys):
    """Notebook 05's PROCESSES (issue 61): the runs not on disk are judged by two side-by-side
    processes first, then read back; the outputs, seeds included, are those of one process."""
    from stepwiser_lib.engines import models

    monkeypatch.setattr(models, "release", lambda *a: None)
    bench = {
        "a": [
            {"id": str(i), "problem": "P", "steps": ["ok", "bad" if i % 2 else "ok"], "label": 1 if i % 2 else -1}
            for i in range(5)
        ]
    }
    judges = [
        {"name": "disc_sft:rel_ratio", "style": "disc"},
        {"name": "stepwiser:rel_ratio", "style": "cot"},
        {"name": "stepwiser:rel_ratio@seed1", "style": "cot"},
    ]
    kw = dict(
        bench_kind="toy",
        stop_at_first_negative=True,
        maj_k=1,
        maj_temperature=1.0,
        max_completion=8,
        maj_k_score=2,
        maj_k_score_judges=[],
        seed=3,
    )
    one = PB.run_judges(judges, bench, tmp_path / "one", _seeded_load, processes=1, **kw)
    loads = []
    here = lambda e: loads.append(e["name"]) or _SeededJudge()  # noqa: E731
    runs = [
        (e, r)
        for e in judges
        for r in PB.bench_runs(e, bench, tmp_path / "two", "toy", **{k: v for k, v in kw.items() if k != "bench_kind"})
    ]
    assert PB.judge_in_processes(runs, bench, _seeded_load, 2, temperature=1.0, seed=3) == 3
    two = PB.run_judges(judges, bench, tmp_path / "two", here, processes=2, **kw)
    assert loads == []  # every run came from the side-by-side processes' files
    assert two["outputs"] == one["outputs"] and two["results"] == one["results"]
    assert PB.judge_in_processes(runs, bench, _seeded_load, 2, temperature=1.0, seed=3) == 0  # all on disk
    monkeypatch.setattr(models, "pick_device", lambda device="auto": "cuda")  # a GPU: one at a time, by the caller
    fresh = [({**e}, {**r, "path": tmp_path / "three" / Path(r["path"]).name}) for e, r in runs]
    assert PB.judge_in_processes(fresh, bench, _seeded_load, 2, temperature=1.0, seed=3) == 0
    assert not (tmp_path / "three").exists()


def test_judge_bench_in_shards_two_workers_and_the_join(tmp_path, monkeypatch):
    """Issue 34: one judge's run in shards of 2 solutions; two workers (each judging its shards)
    and the notebook's join give the outputs of one process, the join loading no judge; a run of
    one shard is judged exactly as :func:`judge_solutions` judges it, with the run's own seed."""
    from stepwiser_lib.core import shards
    from stepwiser_lib.engines import models

    monkeypatch.setattr(models, "release", lambda *a: None)
    bench = {
        "a": [
            {"id": str(i), "problem": "P", "steps": ["ok", "bad" if i % 2 else "ok"], "label": 1 if i % 2 else -1}
            for i in range(5)
        ],
        "b": [{"id": "9", "problem": "Q", "steps": ["bad"], "label": 0}],
    }
    loads = []

    def load(e):
        loads.append(e["name"])
        return _SeededJudge()

    e = {"name": "stepwiser:rel_ratio", "style": "cot"}
    kw = dict(load=load, k=1, stop=True, temperature=1.0, seed=3, shard_size=2)
    one = PB.judge_bench(e, bench, path=tmp_path / "one.json", key="k", **kw)
    assert [o["analyses"][0] for o in one["outputs"]["a"]] == ["a:ok|3"] * 2 + [
        f"a:ok|{shards.shard_seed(3, 1)}"
    ] * 2 + [f"a:ok|{shards.shard_seed(3, 2)}"]
    assert one["outputs"]["b"] == PB.judge_solutions(_SeededJudge(), bench["b"], seed=3, progress=False)  # one shard
    assert not (tmp_path / "one.shards").exists()  # the joined run is cached; its shards are gone
    path = tmp_path / "two.json"
    assert PB.judge_bench(e, bench, path=path, key="k", worker=0, workers=2, **kw) is None  # shard a/1 missing
    whole = PB.judge_bench(e, bench, path=path, key="k", worker=1, workers=2, **kw)
    assert whole["outputs"] == one["outputs"] and not path.exists()  # a worker never writes the join
    n = len(loads)
    joined = PB.judge_bench(e, bench, path=path, key="k", **kw)
    assert len(loads) == n and joined["outputs"] == one["outputs"] and json.loads(path.read_text())["_key"] == "k"
    assert PB.judge_bench(e, bench, path=path, key="k", **kw) == joined and len(loads) == n  # from the cache
    keys = [
        PB.judge_key(
            e,
            bench,
            "toy",
            stop_at_first_negative=True,
            maj_k=1,
            maj_temperature=1.0,
            max_completion=8,
            seed=3,
            shard_size=size,
        )
        for size in (2, 3, 5)
    ]
    assert keys[0] != keys[1] and keys[2] == PB.judge_key(
        e,
        bench,
        "toy",
        stop_at_first_negative=True,
        maj_k=1,
        maj_temperature=1.0,
        max_completion=8,
        seed=3,
        shard_size=6,
    )


def test_toy_processbench_dev_split_is_disjoint_from_the_reported_splits():
    """Issue 35: every judge's threshold is chosen on toy_dev, whose problems no reported split holds."""
    from stepwiser_lib.core.paths import ROOT

    dev = PB.load_dev(ROOT / schemas.TOY_DIR_DEFAULT)[schemas.TOY_DEV_SPLIT]
    test = {r["problem"] for s in schemas.TOY_SPLITS for r in PB.load_toy(s)}
    assert len(dev) == 200 and sum(r["label"] == -1 for r in dev) == 100
    assert not {r["problem"] for r in dev} & test
    assert len({r["problem"] for r in dev}) == len(dev)  # one solution per problem


def test_dev_threshold_is_chosen_on_the_dev_split_only():
    # dev: the erroneous solution's bad step scores 0.3, the correct one's steps 0.6 -> a threshold in (0.3, 0.6]
    scores = {"toy_dev": [[0.9, 0.3], [0.6, 0.7]], "toy_2step": [[0.5, 0.9], [0.9, 0.95]]}
    silent = {s: [[False] * len(x) for x in v] for s, v in scores.items()}
    t, preds = PB.dev_thresholded({"toy_dev": [1, -1]}, scores, silent, ["toy_2step"])
    assert 0.3 < t <= 0.6 and list(preds) == ["toy_2step"]
    # on the reported split a threshold of 0.4 would do better (its error is at step 1, scored 0.9);
    # the dev one flags step 0 (0.5 < t) or nothing, whichever t is: chosen without looking
    assert preds["toy_2step"] == PB.threshold_predictions(scores["toy_2step"], t)
    s, q = PB.step_scores({"x": [{"p_positive": [0.8, None], "scores": [1.0, 0.0]}]}, "p_positive")
    assert s == {"x": [[0.8, 0.0]]} and q == {"x": [[False, True]]}


def test_positive_share_counts_judged_steps():
    outs = {"a": [{"verdicts": ["Positive", "Negative"]}, {"verdicts": ["Positive", None]}], "b": [{"verdicts": []}]}
    assert PB.positive_share(outs) == round(100 * 2 / 3, 1)
    assert PB.positive_share({"a": [{"verdicts": [None]}]}) is None


def test_kinds_line_gives_each_kind_as_a_share_largest_first():
    assert PB.kinds_line("j", {"exact": 2, "too_early": 3, "false_alarm": 5, "missed": 0}) == (
        "j: false alarm 50%, too early 30%, exact 20%"
    )
    assert PB.kinds_line("j", {"exact": 0}) == "j: no solution judged"


def test_by_benchmark_gives_one_table_per_set_of_splits():
    toy = PB.table_row("j [toy]", {"toy_2step": {"error_acc": 1.0, "correct_acc": 2.0, "f1": 1.3}})
    real = PB.table_row("calc [real]", {"gsm8k": {"error_acc": 1.0, "correct_acc": 2.0, "f1": 1.3}})
    parts = PB.by_benchmark([toy, real, {**toy, "judge": "k [toy]"}])
    assert [[r["judge"] for r in p] for p in parts] == [["j [toy]", "k [toy]"], ["calc [real]"]]


def test_all_baselines_adds_the_real_splits_or_says_why_not(tmp_path, capsys):
    bench = {"a": [{"steps": ["1 + 1 = 2", "2 + 2 = 5"], "label": 1}, {"steps": ["1 + 1 = 2"], "label": -1}]}
    assert sorted(PB.all_baselines("toy", bench, real=False)) == ["always-Positive [toy]", "calculator [toy]"]
    assert capsys.readouterr().out == ""
    out = PB.all_baselines("toy", bench, real_dir=str(tmp_path))  # no split files there
    assert sorted(out) == ["always-Positive [toy]", "calculator [toy]"]
    assert capsys.readouterr().out.startswith("SKIPPED real ProcessBench baselines: FileNotFoundError: ")
    for s in PB.SPLITS:  # one erroneous solution (the calculator finds it) and one correct per split
        recs = [
            {**GOOD, "id": f"{s}-0", "steps": ["1 + 1 = 3", "done"], "label": 0, "final_answer_correct": False},
            {**GOOD, "id": f"{s}-1", "steps": ["1 + 1 = 2", "done"]},
        ]
        (tmp_path / f"{s}.jsonl").write_text("".join(json.dumps(r) + "\n" for r in recs))
    with pytest.warns(UserWarning, match="another data version"):
        out = PB.all_baselines("toy", bench, real_dir=str(tmp_path))
    assert capsys.readouterr().out == ""
    assert out["calculator [real ProcessBench]"]["math"]["f1"] == 100.0
    assert [round(PB.average_f1(out[k]), 1) for k in sorted(out)] == [0.0, 0.0, 100.0, 100.0]


def test_both_readings_ask_each_ordering_of_the_verdicts_then_of_the_threshold():
    labels = {"s": [0, -1, 1, -1]}
    t = {"asked": 4, "unparsed": 0, "samples": 4}
    run = {
        "greedy": {"stepwiser:rel_ratio": {"s": [0, -1, 1, -1]}, "disc_sft:rel_ratio": {"s": [0, 0, 0, 0]}},
        "first_error": {"stepwiser:rel_ratio": {"s": [0, -1, 0, 0]}, "disc_sft:rel_ratio": {"s": [0, -1, 1, -1]}},
        "tallies": {"stepwiser:rel_ratio": t, "disc_sft:rel_ratio": t},
    }
    out = PB.both_readings(labels, run, dev={"toy_dev": []})
    assert [(c["reading"], c["a"], c["b"]) for c in out] == [
        ("own verdicts", "stepwiser:rel_ratio", "disc_sft:rel_ratio"),
        ("dev thresholds", "stepwiser:rel_ratio", "disc_sft:rel_ratio"),
    ]
    assert [c["diff"] for c in out] == [100.0, -50.0]  # F1 100 vs 0 (no correct kept), then 50 vs 100
    assert PB.both_readings(labels, run, dev={})[1]["reading"] == "a threshold"


def test_informative_only_drops_a_judge_without_a_parsable_verdict():
    tallies = {"a": {"asked": 3, "unparsed": 1, "samples": 3}, "b": {"asked": 3, "unparsed": 3, "samples": 3}}
    assert PB.informative_only(tallies, {"a": 1, "b": 2, "c": 3}, {"b": 4, "a": 5}) == ({"a": 1}, {"a": 5})


def test_check_score_judges_names_the_stray_ones():
    judges = [{"name": "stepwiser:rel_ratio"}, {"name": "disc_sft:rel_ratio"}]
    PB.check_score_judges(["stepwiser:rel_ratio"], judges, ["all"])
    with pytest.raises(
        ValueError, match=r"\['rsft:rel_ratio'\] are not among the judges run here \(JUDGES = \['x'\]\)"
    ):
        PB.check_score_judges(["rsft:rel_ratio", "disc_sft:rel_ratio"], judges, ["x"])


def test_run_options_pass_the_config_to_run_judges_by_name():
    import inspect
    from types import SimpleNamespace

    cfg = SimpleNamespace(
        BENCH="toy",
        STOP_AT_FIRST_NEGATIVE=True,
        MAJ_K=3,
        MAJ_TEMPERATURE=0.7,
        MAX_COMPLETION=64,
        MAJ_K_SCORE=4,
        MAJ_K_SCORE_JUDGES=["stepwiser:rel_ratio"],
        SEED=5,
        LIMIT=40,
        PROCESSES=2,
    )
    opts = PB.run_options(cfg)
    assert opts == {
        "bench_kind": "toy",
        "stop_at_first_negative": True,
        "maj_k": 3,
        "maj_temperature": 0.7,
        "max_completion": 64,
        "maj_k_score": 4,
        "maj_k_score_judges": ["stepwiser:rel_ratio"],
        "seed": 5,
        "processes": 2,
    }
    keyword_only = [n for n, q in inspect.signature(PB.run_judges).parameters.items() if q.kind == q.KEYWORD_ONLY]
    assert sorted([*opts, "dev"]) == sorted(keyword_only)  # every setting run_judges asks for, and no other
