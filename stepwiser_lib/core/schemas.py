"""The schemas of the files stages hand to each other: the required fields (name -> type) that
readers check with :func:`stepwiser_lib.core.io.read_jsonl`, and the ProcessBench record.
``data/README.md`` documents each file; ``tests/test_schemas.py`` checks the two agree.
"""

from __future__ import annotations

#: Stage 02 (``labels.jsonl`` and each shard's records): what :func:`stepwiser_lib.method.labelling.relabel`
#: and notebook 03 read.
LABEL_RECORD = {
    "problem_id": str,
    "problem": str,
    "traj_id": str,
    "chunk_index": int,
    "history": list,
    "chunk": str,
    "q": (int, float),
    "q_prev": (int, float),
    "q0": (int, float),
}
#: Stage 03's input: what notebook 03 reads of each labelled chunk.
BALANCING_INPUT = {"problem_id": str, "history": list, "chunk": str, "q": (int, float)}
#: Stage 03's output (``<rule>/<split>.jsonl``): what notebook 04 reads of each judge example.
JUDGE_EXAMPLE = {"problem": str, "history": list, "chunk": str, "label": bool, "problem_id": str}
#: The splits notebook 04 trains on (``train_*``), makes choices on (``dev``) and reports on (``test``).
JUDGE_SPLITS = ("train_balanced", "train_unbalanced", "dev_balanced", "test_balanced")
#: TRL's ``stepwise_supervision`` rows (:mod:`stepwiser_lib.method.formats`): a process reward model's
#: training data, one row per solution, ``labels`` one true/false per step of ``completions``.
STEPWISE_SUPERVISION = {"prompt": str, "completions": list, "labels": list}
STEPWISE_COLUMNS = tuple(STEPWISE_SUPERVISION)
#: One judged chunk of ``results/<profile>/judge_predictions.jsonl`` (:mod:`stepwiser_lib.evals.evaluation`).
PREDICTION_FIELDS = (
    "judge",
    "rule",
    "split",
    "problem_id",
    "chunk_id",
    "label",
    "verdict",
    "score",
    "truth",
    "analysis",
    "analysis_exact",
)

# ----------------------------------------------------------------------------- ProcessBench

#: A ProcessBench record (Zheng et al. 2024, the hub's schema); toy-ProcessBench uses the same.
PROCESSBENCH_FIELDS = {
    "id": str,
    "generator": str,
    "problem": str,
    "steps": list,
    "final_answer_correct": bool,
    "label": int,
}


class ProcessBenchError(ValueError):
    pass


def validate_record(rec, split: str, line: int) -> dict:
    where = f"ProcessBench {split}, line {line}"
    if not isinstance(rec, dict):
        raise ProcessBenchError(f"{where}: expected a JSON object")
    for k, t in PROCESSBENCH_FIELDS.items():
        if k not in rec:
            raise ProcessBenchError(f"{where}: missing field {k!r}")
        v = rec[k]
        if not isinstance(v, t) or (t is int and isinstance(v, bool)):
            raise ProcessBenchError(f"{where}: field {k!r} should be {t.__name__}, got {type(v).__name__}")
    if not rec["steps"] or not all(isinstance(s, str) for s in rec["steps"]):
        raise ProcessBenchError(f"{where}: field 'steps' must be a non-empty list of strings")
    for k, v in [(k, rec[k]) for k, t in PROCESSBENCH_FIELDS.items() if t is str] + [
        (f"steps[{i}]", x) for i, x in enumerate(rec["steps"])
    ]:
        try:  # a lone surrogate (the JSON escape \ud835 alone) is valid JSON, not text a tokenizer takes
            v.encode("utf-8")
        except UnicodeEncodeError as e:
            raise ProcessBenchError(
                f"{where}: field {k!r} is not valid Unicode ({e.reason} at character {e.start})"
            ) from None
    blank = [i for i, s in enumerate(rec["steps"]) if not s.strip()]
    if blank:  # a judge would be asked about nothing; the real data has none
        raise ProcessBenchError(f"{where}: step(s) {blank} are blank")
    if rec["label"] == -1 and rec.get("final_answer_correct") is False:
        raise ProcessBenchError(f"{where}: label -1 (no erroneous step) but final_answer_correct is false")
    if not -1 <= rec["label"] <= len(rec["steps"]) - 1:
        raise ProcessBenchError(f"{where}: field 'label' = {rec['label']} is outside -1..{len(rec['steps']) - 1}")
    return rec


# ----------------------------------------------------------------------------- toy-ProcessBench

#: Four toy splits of rising difficulty (longer chains, more distractors), standing in for
#: GSM8K, MATH, OlympiadBench and Omni-MATH. [not in paper]
TOY_SPLITS = {
    "toy_2step": ((2, 2), (0, 1)),
    "toy_3step": ((3, 3), (0, 2)),
    "toy_4step": ((4, 4), (1, 2)),
    "toy_5step": ((5, 5), (0, 1)),
}
TOY_DIR_DEFAULT = "data/toy_processbench"
#: toy-ProcessBench's dev split: every judge's threshold is chosen on it, and it is never reported
#: (issue 35). Its problems are none of the four test splits' (a test checks).
TOY_DEV_SPLIT = "toy_dev"
