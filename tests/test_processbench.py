import json
import os

import pytest

from stepwiser_lib import processbench as PB

PB_DIR = os.environ.get("STEPWISER_PROCESSBENCH_DIR") or None


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
    assert round(PB.average_f1(per), 1) == 56.5  # Qwen2.5-Math-7B-PRM800K, notes §8.2


def test_first_error_index():
    assert PB.first_error_index([True, True]) == -1
    assert PB.first_error_index([True, False, False]) == 1
    assert PB.first_error_index(["Positive", "Negative"]) == 1
    assert PB.first_error_index([]) == -1
    assert PB.first_error_index([None, True]) == -1  # no verdict is not a Negative


def _write(tmp_path, recs, raw_lines=()):
    p = tmp_path / "gsm8k.jsonl"
    p.write_text("".join(json.dumps(r) + "\n" for r in recs) + "".join(raw_lines))
    return tmp_path


GOOD = {"id": "gsm8k-0", "generator": "g", "problem": "p", "steps": ["a", "b"],
        "final_answer_correct": True, "label": -1}


@pytest.mark.parametrize("bad,msg", [
    ({k: v for k, v in GOOD.items() if k != "steps"}, "line 1: missing field 'steps'"),
    ({**GOOD, "label": 2}, "outside -1..1"),
    ({**GOOD, "label": "1"}, "'label' should be int"),
    ({**GOOD, "final_answer_correct": 1}, "should be bool"),
    ({**GOOD, "steps": []}, "non-empty list"),
])
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


@pytest.mark.skipif(not PB_DIR, reason="real ProcessBench not available (set STEPWISER_PROCESSBENCH_DIR)")
def test_real_processbench_loads_with_paper_counts(recwarn):
    for split in PB.SPLITS:
        recs = PB.load_split(split, PB_DIR)
        assert PB.check_counts(split, recs) == PB.EXPECTED_COUNTS[split]
    assert not [w for w in recwarn if "erroneous" in str(w.message)]
    math = {r["id"]: r for r in PB.load_split("math", PB_DIR)}
    assert math["math-688"]["label"] == 2  # official GitHub copy
    assert {r["id"]: r for r in PB.load_split("math", PB_DIR, fix_math_688=True)}["math-688"]["label"] == 0
