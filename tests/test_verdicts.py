"""The one rule for a judge output without a parsable verdict (stepwiser_lib.core.verdicts.RULE), the same
in every stage: it never matches a label, never accepts a chunk (scored 0), leaves a ProcessBench
solution without a prediction, and a result whose judge was never asked or never parsed is reported
as uninformative (it replaces four treatments: 05 read no verdict as Positive, 06 as a rejection,
07 as a score of 0, 04 as wrong)."""

import json

import pytest

from stepwiser_lib.core import verdicts
from stepwiser_lib.engines.models import Completion
from stepwiser_lib.evals import claims, evaluation
from stepwiser_lib.method import chunk_reset as cr
from stepwiser_lib.method import judge, judge_train, rsft
from stepwiser_lib.method import processbench as pb


def test_parse_and_the_tally_of_judge_records_and_of_predictions():
    assert (
        verdicts.parse_verdict("so \\boxed{negative}") == "Negative"
        and verdicts.parse_verdict("2. Final Judgment:") is None
    )
    assert judge.parse_verdict is verdicts.parse_verdict  # one parser, the notebooks' old name kept
    recs = [
        {"verdict": "Positive", "n_unparsed": 1},
        {"verdict": None, "n_unparsed": 4},
        {"verdict": "Negative", "n_unparsed": 0},
    ]
    t = verdicts.tally(recs, k=4)
    assert t == {"asked": 3, "samples": 12, "unparsed": 5, "no_verdict": 1, "unparsed_pct": 41.67}
    preds = [{"verdict": True}, {"verdict": None}]  # per-chunk predictions: one greedy verdict each
    assert verdicts.tally(preds)["unparsed"] == 1 and verdicts.informative(verdicts.tally(preds))
    assert not verdicts.informative(verdicts.tally([{"verdict": None}]))
    assert not verdicts.informative(verdicts.tally([])) and not verdicts.informative(None)
    assert verdicts.describe(verdicts.tally([])) == "uninformative: the judge was never asked"
    assert verdicts.describe(verdicts.tally([{"verdict": None}])).startswith("uninformative: 1 judgements, 1 of 1")
    both = verdicts.merge(t, verdicts.tally(preds))
    assert (both["asked"], both["samples"], both["unparsed"]) == (5, 14, 6)


def test_a_silent_judges_row_shows_no_number():
    row = {"judge": "j", "balanced_acc": 0.0, "ci95": "[0.0, 0.0]", "train_s": 3.0}
    m = verdicts.mask(row, verdicts.tally([{"verdict": None}] * 2), ["balanced_acc", "ci95"])
    assert (
        m["balanced_acc"] == m["ci95"] == verdicts.UNINFORMATIVE and m["train_s"] == 3.0 and "2 of 2" in m["verdicts"]
    )
    ok = verdicts.mask(row, verdicts.tally([{"verdict": True}]), ["balanced_acc"])
    assert ok["balanced_acc"] == 0.0 and ok["verdicts"] == "1 judgements, 0 of 1 outputs unparsed (0.0%)"


def test_04_a_comparison_with_a_judge_that_parsed_nothing_is_uninformative():
    def preds(name, verdict):
        return [
            {"judge": name, "problem_id": f"p{i // 2}", "chunk_id": f"c{i}", "label": i % 2 == 0, "verdict": verdict(i)}
            for i in range(8)
        ]

    good, silent = preds("rl", lambda i: i % 2 == 0), preds("warm-up", lambda i: None)
    c = evaluation.compare([good], silent)
    assert c["verdict"] == "uninformative" and c["diff"] is None and "warm-up gave no parsable verdict" in c["test"]
    assert evaluation.compare([good], evaluation.constant_judge(good))["verdict"] in ("a higher", "within noise")
    line = evaluation.comparison_line({"claim": "RL beats its warm-up", **c})
    assert "**uninformative**" in line and "minus" not in line


class _Silent:
    """A generative judge that never writes a verdict (SmolLM2 at 135M: 0 in 48 tries)."""

    def __init__(self):
        self.asked = 0

    def judge(self, triples, k=1, seed=0, **kw):
        self.asked += len(triples)
        return [
            {"verdict": None, "score": 0.0, "analysis": "1. Analysis: the step is fine.", "n_unparsed": k}
            for _ in triples
        ]


def test_05_no_verdict_leaves_a_solution_without_a_prediction_and_stops_judging_it():
    recs = [{"problem": "p", "steps": ["a", "b", "c"], "label": 1}, {"problem": "q", "steps": ["a", "b"], "label": -1}]
    j = _Silent()
    out = pb.judge_solutions(j, recs, progress=False)
    assert [o["prediction"] for o in out] == [None, None] and j.asked == 2  # one step each, then stopped
    scored = pb.score([r["label"] for r in recs], [o["prediction"] for o in out])
    assert scored["error_acc"] == scored["correct_acc"] == 0.0  # matches neither "no error" (-1) nor an index
    t = pb.judged_tally({"gsm8k": out}, 1)
    assert t["asked"] == 2 and t["unparsed"] == 2 and not verdicts.informative(t)
    always_pos = pb.score([1, -1], [-1, -1])  # what treating it as Positive used to give: always-Positive's score
    assert always_pos["correct_acc"] == 100.0
    labels = {"gsm8k": [1, -1]}
    first = {"stepwiser:rel_ratio": {"gsm8k": [None, None]}, "disc_sft:rel_ratio": {"gsm8k": [1, 0]}}
    comps = pb.orderings(
        labels, first, {"stepwiser:rel_ratio": t, "disc_sft:rel_ratio": verdicts.tally([{"verdict": True}])}
    )
    assert comps and all(c["verdict"] == "uninformative" for c in comps if "stepwiser:rel_ratio" in (c["a"], c["b"]))
    rows = pb.result_rows(
        {"stepwiser:rel_ratio": {"gsm8k": pb.score([1, -1], [None, None])}}, {}, {}, {"stepwiser:rel_ratio": t}
    )
    assert rows[0]["avg f1"] == "uninformative" and rows[0]["gsm8k f1"] == "uninformative"
    bench = {"gsm8k": [{**r, "id": str(i), "generator": "g"} for i, r in enumerate(recs)]}
    kinds = [k for k, *_ in pb.examples(bench, {"gsm8k": out}, 2)]
    assert kinds == ["no verdict", "no verdict"]  # not a "missed" error nor a "false alarm"
    assert "judge predicted nothing" in pb.format_example("no verdict", "gsm8k", bench["gsm8k"][1], out[1])


def test_05_a_thresholded_score_treats_a_step_with_no_parsed_sample_as_no_prediction():
    """Under ProcessBench's threshold protocol a verdict-less step scores 0, which every threshold
    would flag as the first error; it leaves the solution without a prediction instead."""
    scores = [[0.9, 0.0, 0.2], [0.0, 0.5], [0.9, 0.1]]
    silent = [[False, True, False], [False, False], [False, False]]
    assert pb.threshold_predictions(scores, 0.5) == [1, 0, 1]
    assert pb.threshold_predictions(scores, 0.5, silent) == [None, 0, 1]
    assert pb.threshold_predictions([[0.9, 0.0]], 0.0, [[False, True]]) == [None]  # no flag before it either
    t, preds = pb.thresholded({"a": [1, 0, 1]}, {"a": scores}, {"a": silent})
    assert preds["a"][0] is None


class _Words:
    """A policy that writes one chunk-free sentence: no complete chunk, so no judge is ever asked
    (06 reported such a row as "within noise")."""

    cut_after_separator = False

    def generate(self, prompts, n=1, temperature=1.0, max_new_tokens=8, stop=None, seed=0, prefixes=None, **kw):
        return [[Completion(text="1. Step 1: think.", n_tokens=6, finished=False)] for _ in prompts]


class _Chunks:
    cut_after_separator = False

    def generate(self, prompts, n=1, temperature=1.0, max_new_tokens=8, stop=None, seed=0, prefixes=None, **kw):
        return [[Completion(text="<chunk>x = 1</chunk>", n_tokens=4, finished=True)] for _ in prompts]


def test_06_a_judge_never_asked_or_never_parsed_makes_its_arm_uninformative():
    items = [{"id": str(i), "problem": f"p{i}", "answer": "1"} for i in range(3)]
    cfg = cr.ResetConfig(max_attempts=2, max_chunks=2, max_new_tokens=8)
    runs = {}
    for policy, label in ((_Words(), "stepwiser:rel_ratio"), (_Chunks(), "stepwiser:abs_q")):
        runs[(cr.NO_JUDGE, "t", 0)] = cr.run_arm(policy, None, items, "{problem}", cfg, lambda it, r: False)
        runs[(label, "t", 0)] = cr.run_arm(policy, _Silent(), items, "{problem}", cfg, lambda it, r: False)
    t = cr.tallies(runs)
    assert t["stepwiser:rel_ratio"]["asked"] == 0  # the policy wrote no chunk: the judge was never asked
    words = runs[("stepwiser:abs_q", "t", 0)]["results"][0]
    assert words["judge_calls"] == 4 and words["judge_unparsed"] == 4 and words["judge_no_verdict"] == 4
    assert words["exhausted"] == 2 and words["resets"] == 2  # no verdict accepts nothing: every chunk sampled again
    assert t["stepwiser:abs_q"]["unparsed"] == t["stepwiser:abs_q"]["samples"] == 12
    preds = {
        lab: [{"method": lab, "task": "t", "seed": 0, "problem_id": i["id"], "correct": False} for i in items]
        for lab in (cr.NO_JUDGE, "stepwiser:rel_ratio", "stepwiser:abs_q")
    }
    comps = cr.comparisons(preds, t)
    assert [c["verdict"] for c in comps] == ["uninformative", "uninformative"]
    assert "never asked" in comps[0]["test"] and "12 of 12" in comps[1]["test"]
    rows = cr.with_verdicts([{"method": cr.NO_JUDGE}, {"method": "stepwiser:rel_ratio"}], t)
    assert rows[0]["verdicts"] == "-" and rows[1]["verdicts"].startswith("uninformative")


def test_07_and_rsft_score_no_verdict_as_zero_and_never_keep_it():
    items = [{"problem": "p", "responses": ["<chunk>a</chunk>\n\n<chunk>b</chunk>"], "correct": [True]}]
    scores, t = rsft.score_responses(_Silent(), items, with_tally=True)
    assert scores == [[[0.0, 0.0]]] and t["asked"] == 2 and not verdicts.informative(t)
    ex = [{"problem": "p", "history": [], "chunk": "c", "label": True}]
    kept = judge_train.rsft_select(ex, [["1. Analysis: fine.", "ok \\boxed{Positive}"]], family="paper")
    assert [r["completion"] for r in kept] == ["ok \\boxed{Positive}"]
    assert judge.verdict_reward(["no verdict", "\\boxed{Negative}"], label=[False, False]) == [0.0, 1.0]


def test_the_claims_table_reports_an_uninformative_claim_without_a_number(tmp_path):
    comp = verdicts.uninformative_comparison(
        {"claim": "the judge helps chunk-reset (Table 7)", "a": "stepwiser:rel_ratio", "b": cr.NO_JUDGE},
        "not compared: the judge was never asked",
    )
    (tmp_path / "chunk_reset.json").write_text(json.dumps({"comparisons": [comp]}))
    rows = claims.rows(tmp_path, files=["chunk_reset"])
    assert rows and rows[0]["verdict"] == "uninformative" and rows[0]["ours"] is None
    md = "\n".join(claims.markdown(tmp_path))
    assert "**uninformative**" in md and "| - |" in md


@pytest.mark.parametrize("text", ["", "2. Final Judgment:", "\\boxed{}", "\\boxed{Positive and Negative}"])
def test_outputs_real_models_write_do_not_parse(text):
    assert verdicts.parse_verdict(text) is None
