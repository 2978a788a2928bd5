"""ProcessBench (Zheng et al. 2024, arXiv 2412.06559): loader and the official metric (groundwork
for notebook 05; notes §8).

* :func:`load_split` reads the HF dataset ``Qwen/ProcessBench`` (four splits) or a local folder of
  ``{gsm8k,math,olympiadbench,omnimath}.jsonl`` (``STEPWISER_PROCESSBENCH_DIR``), validating every
  record with an error that names split, line and field, and warning when the error/correct
  counts differ from the paper's.
* :func:`score` is the official metric: exact match of the first-error index, accuracy on
  erroneous (label != -1) and on correct (label == -1) samples, and their harmonic mean ("F1").
  The benchmark score is the plain mean of the four split F1s (:func:`average_f1`).
"""

from __future__ import annotations

import os
import warnings
from pathlib import Path

from .io import RecordError, iter_jsonl

SPLITS = ("gsm8k", "math", "olympiadbench", "omnimath")
#: (error, correct) counts per split, ProcessBench paper Table 1 / notes §8.1.
EXPECTED_COUNTS = {"gsm8k": (207, 193), "math": (594, 406), "olympiadbench": (661, 339),
                   "omnimath": (759, 241)}
HF_DATASET = "Qwen/ProcessBench"
#: The hub revision users should pin (notes §8.1: main later changed math.json, "fix annotation").
HF_REVISION = "main"
FIELDS = {"id": str, "generator": str, "problem": str, "steps": list, "final_answer_correct": bool,
          "label": int}


class ProcessBenchError(ValueError):
    pass


def validate_record(rec, split: str, line: int) -> dict:
    where = f"ProcessBench {split}, line {line}"
    if not isinstance(rec, dict):
        raise ProcessBenchError(f"{where}: expected a JSON object")
    for k, t in FIELDS.items():
        if k not in rec:
            raise ProcessBenchError(f"{where}: missing field {k!r}")
        v = rec[k]
        if not isinstance(v, t) or (t is int and isinstance(v, bool)):
            raise ProcessBenchError(f"{where}: field {k!r} should be {t.__name__}, got {type(v).__name__}")
    if not rec["steps"] or not all(isinstance(s, str) for s in rec["steps"]):
        raise ProcessBenchError(f"{where}: field 'steps' must be a non-empty list of strings")
    if not -1 <= rec["label"] <= len(rec["steps"]) - 1:
        raise ProcessBenchError(f"{where}: field 'label' = {rec['label']} is outside -1..{len(rec['steps']) - 1}")
    return rec


def check_counts(split: str, records: list[dict]) -> tuple[int, int]:
    err = sum(r["label"] != -1 for r in records)
    cor = len(records) - err
    exp = EXPECTED_COUNTS.get(split)
    if exp and (err, cor) != exp:
        warnings.warn(f"ProcessBench {split}: {err} erroneous / {cor} correct samples, the paper "
                      f"has {exp[0]} / {exp[1]} (another data version?)", stacklevel=2)
    return err, cor


def load_split(split: str, local_dir: str | None = None, fix_math_688: bool = False,
               revision: str = HF_REVISION) -> list[dict]:
    """Records of one split, validated. ``local_dir`` (or ``STEPWISER_PROCESSBENCH_DIR``) points
    to the JSONL files; otherwise the HF hub dataset is used. ``fix_math_688`` applies the
    correction reported in QwenLM/ProcessBench#9 (label 2 -> 0; the counts do not change)."""
    if split not in SPLITS:
        raise ProcessBenchError(f"unknown ProcessBench split {split!r}; valid: {', '.join(SPLITS)}")
    local_dir = local_dir or os.environ.get("STEPWISER_PROCESSBENCH_DIR") or None
    recs = []
    if local_dir:
        path = Path(local_dir) / f"{split}.jsonl"
        if not path.exists():
            raise FileNotFoundError(f"{path} not found (STEPWISER_PROCESSBENCH_DIR={local_dir})")
        try:
            recs = [validate_record(rec, split, n) for n, rec in iter_jsonl(path, f"ProcessBench {split}")]
        except RecordError as e:
            raise ProcessBenchError(str(e)) from None
    else:  # pragma: no cover - needs the hub
        from datasets import load_dataset

        ds = load_dataset(HF_DATASET, split=split, revision=revision)
        recs = [validate_record(dict(r), split, i + 1) for i, r in enumerate(ds)]
    if fix_math_688:
        for r in recs:
            if r["id"] == "math-688":
                r["label"] = 0
    check_counts(split, recs)
    return recs


def first_error_index(verdicts: list) -> int:
    """Prediction of a stepwise judge: index of the first step judged Negative (False or
    "Negative"), else -1."""
    for i, v in enumerate(verdicts):
        if v is False or v == "Negative":
            return i
    return -1


def score(labels: list[int], predictions: list[int | None]) -> dict:
    """Official ProcessBench metric, in percent: a sample matches only if prediction == label;
    ``error_acc`` over label != -1, ``correct_acc`` over label == -1, ``f1`` their harmonic mean
    (0 when both are 0). None (unparseable) never matches; an empty group scores 0."""
    if len(labels) != len(predictions):
        raise ValueError("labels and predictions differ in length")
    err = [p == y for y, p in zip(labels, predictions) if y != -1]
    cor = [p == y for y, p in zip(labels, predictions) if y == -1]
    ea = 100.0 * sum(err) / len(err) if err else 0.0
    ca = 100.0 * sum(cor) / len(cor) if cor else 0.0
    f1 = 2 * ea * ca / (ea + ca) if ea + ca > 0 else 0.0
    return {"error_acc": ea, "correct_acc": ca, "f1": f1, "n_error": len(err), "n_correct": len(cor)}


def average_f1(per_split: dict[str, dict]) -> float:
    """The benchmark score: plain (unweighted) mean of the split F1s (notes §8.2)."""
    return sum(s["f1"] for s in per_split.values()) / len(per_split)
