"""Issue 50, item 4: the field's formats (stepwiser_lib.method.formats), each read back after it is
written: TRL's stepwise_supervision rows, Math-Shepherd's raw layout, ProcessBench's official files."""

import json
import re
from pathlib import Path

import pytest

from stepwiser_lib.core import io, schemas
from stepwiser_lib.method import balancing, formats, labelling, processbench
from stepwiser_lib.method.labelling import LabelConfig

SHEPHERD = Path(__file__).resolve().parents[1].parent / "shared" / "data" / "math_shepherd_samples"


def _labelled(problem_id, traj, chunks, labels):
    """One trajectory's records as notebook 02 writes them (labels.jsonl)."""
    q = [0.9 if x else 0.1 for x in labels]
    return [
        {
            "problem_id": problem_id,
            "problem": f"problem {problem_id}",
            "traj_id": f"{problem_id}/s{traj}",
            "chunk_index": i,
            "n_chunks": len(chunks),
            "history": chunks[:i],
            "chunk": c,
            "q": q[i],
            "q_prev": q[i - 1] if i else 0.5,
            "q0": 0.5,
            "n_rollouts": 16,
            "is_final": i == len(chunks) - 1,
            "traj_correct": labels[-1],
            "label_abs_q": True,
            "label_rel_effective": x,
            "label_rel_ratio": x,
        }
        for i, (c, x) in enumerate(zip(chunks, labels))
    ]


def _records():
    return (
        _labelled("p1", 0, ["b = 5", "c = 7", "\\boxed{7}"], [True, False, False])
        + _labelled("p2", 0, ["b = 1", "\\boxed{1}"], [True, True])
        + _labelled("p1", 1, ["b = 5", "c = 6", "\\boxed{6}"], [True, True, True])
    )


def test_our_labelled_chunks_go_to_trl_stepwise_supervision_and_back():
    recs = _records()
    rows = formats.to_stepwise(recs[::-1], rule="rel_ratio")  # any order: by trajectory, chunks in order
    assert [r["traj_id"] for r in rows] == ["p1/s1", "p2/s0", "p1/s0"]
    assert rows[2] == {
        "prompt": "problem p1",
        "completions": ["b = 5", "c = 7", "\\boxed{7}"],
        "labels": [True, False, False],
        "problem_id": "p1",
        "traj_id": "p1/s0",
    }
    for r in rows:  # TRL's stepwise_supervision columns and types
        assert all(isinstance(r[c], t) for c, t in schemas.STEPWISE_SUPERVISION.items())
        assert all(isinstance(x, bool) for x in r["labels"]) and len(r["labels"]) == len(r["completions"])
    assert [r["labels"] for r in formats.to_stepwise(recs, "abs_q")] == [[True] * 3, [True] * 2, [True] * 3]

    back = formats.from_stepwise(rows)
    key = ("problem_id", "problem", "traj_id", "chunk_index", "n_chunks", "history", "chunk", "is_final")
    assert sorted(tuple(str(r[k]) for k in key) for r in back) == sorted(tuple(str(r[k]) for k in key) for r in recs)
    assert {(r["traj_id"], r["chunk_index"]): r["label_rel_ratio"] for r in back} == {
        (r["traj_id"], r["chunk_index"]): r["label_rel_ratio"] for r in recs
    }
    assert formats.to_stepwise(back) == rows  # the round trip is exact on the rows
    with pytest.raises(ValueError, match=r"trajectory p1/s0: chunks \[0, 2\] of 3"):
        formats.to_stepwise([r for r in recs if not (r["traj_id"] == "p1/s0" and r["chunk_index"] == 1)])
    with pytest.raises(ValueError, match="unknown rule"):
        formats.to_stepwise(recs, "ratio")


def test_stepwise_rows_become_records_notebook_03_reads_and_balances(tmp_path):
    """Rows without ids (TRL's trl-lib/math_shepherd has none): every row of one prompt gets one
    problem id, relabelling under the paper's thresholds keeps the labels, and notebook 03's reading
    and balancing take the records."""
    rows = [
        {"prompt": "Q1", "completions": ["s1", "s2"], "labels": [True, False]},
        {"prompt": "Q1", "completions": ["t1"], "labels": [True]},
        {"prompt": "Q2", "completions": ["u1", "u2", "u3"], "labels": [False, True, False]},
    ]
    recs = formats.from_stepwise(rows)
    assert len(recs) == 6 and len({r["problem_id"] for r in recs[:3]}) == 1
    assert [r["traj_id"].split("/")[1] for r in recs] == ["s0", "s0", "s1", "s0", "s0", "s0"]
    assert [(r["q"], r["q_prev"]) for r in recs[3:]] == [(0.0, 0.5), (1.0, 0.0), (0.0, 1.0)]
    for cfg in (LabelConfig(), LabelConfig(alpha=0.8, gamma=0.7)):  # the paper's 1.5B and 7B thresholds
        assert labelling.relabel(recs, cfg) == recs
    assert [{k: r[k] for k in schemas.STEPWISE_COLUMNS} for r in formats.to_stepwise(recs)] == rows

    path = tmp_path / "labels.jsonl"
    io.write_jsonl(path, recs)
    read = io.read_jsonl(path, required=schemas.BALANCING_INPUT)  # notebook 03's read
    io.read_jsonl(path, required=schemas.LABEL_RECORD)
    stats, _ = balancing.build_splits(read, ["rel_ratio"], tmp_path / "03", dev_fraction=0.0, test_fraction=0.0)
    assert stats["rel_ratio"]["train_balanced"]["positive"] == stats["rel_ratio"]["train_balanced"]["negative"] == 3

    for bad, why in (
        ({"prompt": "Q", "completions": ["a"], "labels": [True, False]}, "1 steps but 2 labels"),
        ({"prompt": "Q", "completions": ["a"], "labels": ["True"]}, "list of true/false"),
        ({"prompt": "", "completions": ["a"], "labels": [True]}, "non-empty text"),
        ({"completions": ["a"], "labels": [True]}, r"missing column\(s\) \['prompt'\]"),
    ):
        with pytest.raises(ValueError, match=why):
            formats.from_stepwise([rows[0], bad])


SHEPHERD_RECORD = {  # Math-Shepherd's raw layout (a made-up problem): steps end in "ки", marked +/- in label
    "input": "What is 2 + 3 * 4? Step 1: 3 * 4 = <<3*4=12>>12 ки\nStep 2: 2 + 12 = <<2+12=14>>14. The answer is: 14 ки",
    "label": "What is 2 + 3 * 4? Step 1: 3 * 4 = <<3*4=12>>12 +\nStep 2: 2 + 12 = <<2+12=14>>14. The answer is: 14 -",
    "task": "GSM8K",
}


def test_math_shepherd_records_become_stepwise_rows_as_trl_converts_them():
    assert formats.math_shepherd_row(SHEPHERD_RECORD) == {
        "prompt": "What is 2 + 3 * 4?",
        "completions": ["Step 1: 3 * 4 = <<3*4=12>>12", "Step 2: 2 + 12 = <<2+12=14>>14. The answer is: 14"],
        "labels": [True, False],
    }
    moved = {**SHEPHERD_RECORD, "label": SHEPHERD_RECORD["label"].replace("12 +", "12 x")}
    noprefix = {k: v.replace("Step 1: ", "") if k != "task" else v for k, v in SHEPHERD_RECORD.items()}
    with pytest.warns(UserWarning, match=r"2 of 3 Math-Shepherd records skipped \(record 1: 'label' has no \+/-"):
        rows = formats.math_shepherd_rows([SHEPHERD_RECORD, moved, noprefix])
    assert len(rows) == 1
    with pytest.raises(ValueError, match="no 'Step 1:'"):
        formats.math_shepherd_row(noprefix)


@pytest.mark.skipif(not SHEPHERD.exists(), reason="the Math-Shepherd samples of ../shared/data are not here")
def test_real_math_shepherd_samples_convert_and_come_back():
    raw = io.read_jsonl(SHEPHERD / "samples_math-shepherd.jsonl")
    rows = formats.math_shepherd_rows(raw)
    assert len(rows) == len(raw) == 7
    assert rows[0]["prompt"].startswith("Janet pays $40/hour") and rows[0]["prompt"].endswith("in a year?")
    assert rows[0]["labels"] == [True, True, True, True, False] and rows[0]["completions"][0].startswith("Step 1:")
    for r, x in zip(rows, raw):  # the steps, tags put back, are the input
        assert (
            x["input"].replace(" ки", "").replace("ки", "").split()
            == " ".join([r["prompt"], *r["completions"]]).split()
        )
    assert [
        {k: r[k] for k in schemas.STEPWISE_COLUMNS} for r in formats.to_stepwise(formats.from_stepwise(rows))
    ] == rows


class _StepJudge:
    """Negative on a step holding 'wrong', no verdict on one holding '??', else Positive."""

    def judge(self, triples, k=1, seed=0, **kw):
        out = []
        for _, _, c in triples:
            v = None if "??" in c else "Negative" if "wrong" in c else "Positive"
            out.append({"verdict": v, "analysis": f"checked: {c[:10]} \\boxed{{{v}}}", "score": float(v == "Positive")})
        return out


def _bench():
    recs = [
        {
            "id": "t-0",
            "generator": "g",
            "problem": "p0",
            "steps": ["a", "b wrong", "c"],
            "final_answer_correct": False,
            "label": 1,
        },
        {
            "id": "t-1",
            "generator": "g",
            "problem": "p1",
            "steps": ["a", "b"],
            "final_answer_correct": True,
            "label": -1,
        },
        {
            "id": "t-2",
            "generator": "g",
            "problem": "p2",
            "steps": ["a wrong", "b"],
            "final_answer_correct": False,
            "label": 1,
        },
        {
            "id": "t-3",
            "generator": "g",
            "problem": "p3",
            "steps": ["a ??", "b"],
            "final_answer_correct": True,
            "label": -1,
        },
        {
            "id": "t-4",
            "generator": "g",
            "problem": "p4",
            "steps": ["a", "b", "c wrong"],
            "final_answer_correct": True,
            "label": -1,
        },
    ]
    return {"toy_2step": recs, "other": recs[:2]}


def test_processbench_predictions_in_the_official_layout_and_back(tmp_path):
    bench = _bench()
    outputs = {s: processbench.judge_solutions(_StepJudge(), r, progress=False) for s, r in bench.items()}
    files = formats.write_official(tmp_path, bench, outputs)
    assert sorted(f.name for f in files) == [
        "other_correct.jsonl",
        "other_error.jsonl",
        "toy_2step_correct.jsonl",
        "toy_2step_error.jsonl",
    ]
    err = io.read_jsonl(tmp_path / "toy_2step_error.jsonl")
    cor = io.read_jsonl(tmp_path / "toy_2step_correct.jsonl")
    assert [r["id"] for r in err] == ["t-0", "t-2"] and [r["id"] for r in cor] == ["t-1", "t-3", "t-4"]
    assert [(r["prediction"], r["match"]) for r in err + cor] == [
        (1, True),
        (0, False),
        (-1, True),
        (None, False),
        (2, False),
    ]
    for r in err + cor:  # the input record, then the official fields, then ours
        assert {k: r[k] for k in schemas.PROCESSBENCH_FIELDS} == bench["toy_2step"][r["index"]]
        assert r["judged"]["analyses"] and "Paragraph 0: checked: a" in r["generated_critique"]
        # run_eval.py's extraction: the last \boxed{...}, read as an integer (None when it is none)
        last = re.findall(r"\\boxed\{([^}]*)\}", r["generated_critique"])[-1]
        assert (int(last) if re.fullmatch(r"-?\d+", last) else None) == r["prediction"]

    back_bench, back_outputs = formats.read_official(tmp_path)
    assert back_bench == bench and back_outputs == outputs
    ours = processbench.score([r["label"] for r in bench["toy_2step"]], [o["prediction"] for o in outputs["toy_2step"]])
    official = formats.official_scores(tmp_path)["toy_2step"]
    assert official == {k: pytest.approx(ours[k]) for k in ("error_acc", "correct_acc", "f1")}

    bad = [{**r, "match": not r["match"]} if r["id"] == "t-0" else r for r in err]
    io.write_jsonl(tmp_path / "toy_2step_error.jsonl", bad)
    with pytest.raises(ValueError, match=r"toy_2step_error.jsonl, line 1: match is False for prediction 1 and label 1"):
        formats.read_official(tmp_path)


def test_the_processbench_command_writes_a_notebook_05_run_in_the_official_layout(tmp_path, capsys):
    bench = {"toy_2step": processbench.subset(processbench.load_toy("toy_2step"), 6)}
    outputs = {s: processbench.judge_solutions(_StepJudge(), r, progress=False) for s, r in bench.items()}
    io.write_json(tmp_path / "judge.json", {"outputs": outputs, "seconds": 0.0, "_key": "k"})
    assert formats.main(["processbench", str(tmp_path / "judge.json"), str(tmp_path / "out"), "--limit", "6"]) == 0
    printed = json.loads(capsys.readouterr().out)
    assert set(printed["scores"]) == {"toy_2step"}
    assert formats.read_official(tmp_path / "out") == (bench, outputs)
    assert formats.main(["processbench", str(tmp_path / "judge.json"), str(tmp_path / "o2")]) == 2
    assert "give notebook 05's LIMIT (--limit)" in capsys.readouterr().err


def test_the_stepwise_commands_round_trip_a_file(tmp_path):
    io.write_jsonl(tmp_path / "labels.jsonl", _records())
    assert formats.main(["to-trl", str(tmp_path / "labels.jsonl"), str(tmp_path / "rows.jsonl")]) == 0
    assert formats.main(["from-trl", str(tmp_path / "rows.jsonl"), str(tmp_path / "back.jsonl")]) == 0
    assert formats.to_stepwise(io.read_jsonl(tmp_path / "back.jsonl")) == io.read_jsonl(tmp_path / "rows.jsonl")
    io.write_jsonl(tmp_path / "raw.jsonl", [SHEPHERD_RECORD])
    assert formats.main(["math-shepherd", str(tmp_path / "raw.jsonl"), str(tmp_path / "ms.jsonl")]) == 0
    assert io.read_jsonl(tmp_path / "ms.jsonl") == [formats.math_shepherd_row(SHEPHERD_RECORD)]
