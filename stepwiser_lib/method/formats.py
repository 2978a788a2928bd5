"""The field's file formats, in and out (issue 50): TRL's stepwise supervision, Math-Shepherd, and
ProcessBench's official prediction files. Each writer has a reader, and a test reads back what was
written (``tests/test_formats.py``); ``data/README.md`` ("Formats of the field") documents the files.

**TRL's ``stepwise_supervision`` rows** (TRL's dataset formats; what its ``PRMTrainer`` trains a
process reward model on): one row per solution, ``prompt`` (str), ``completions`` (list[str], the
steps) and ``labels`` (list[bool], one per step, True = the step is good).

* :func:`to_stepwise`: notebook 02's labelled chunks (``labels.jsonl``) as such rows, one per
  trajectory, its chunks in order and the labels of one rule, so our Monte-Carlo labels go straight
  to TRL's PRM trainer. ``prompt`` is the bare problem (the judge's prompt quotes it too). Each row
  also keeps ``problem_id`` and ``traj_id``, which TRL's trainer drops with every column it does not
  read.
* :func:`from_stepwise`: such rows (TRL's ``trl-lib/math_shepherd``, or another lab's PRM data) as
  label records that notebook 03 (balancing) reads, one per step. A row has one label per step,
  under whatever rule made it, so all three ``label_<rule>`` fields hold it; ``q`` is that label
  as 1.0 or 0.0 (the row has no Monte-Carlo value), ``q_prev`` the step before's, and ``q0`` 0.5
  (unknown): relabelling (:func:`stepwiser_lib.method.labelling.relabel`) under the paper's thresholds
  (``GAMMA`` below 1) gives the same labels back. ``problem_id`` is the row's, else a hash of the
  prompt, so notebook 03's split by problem keeps every row of one problem on one side.
* :func:`math_shepherd_row`: a raw Math-Shepherd record (``peiyi9979/Math-Shepherd``: ``input``
  with every step ended by the tag ``ки``, ``label`` the same text with each tag replaced by ``+``
  or ``-``) as a stepwise row, as TRL's own conversion script (``examples/datasets/math_shepherd.py``,
  which made ``trl-lib/math_shepherd``) does: the question before ``Step 1:`` is the prompt, the
  steps keep their ``Step k:`` prefixes. Math-Shepherd's ``+`` is its hard estimate (some rollout
  from the step reached the answer): our Abs-Q rule.

**ProcessBench's official layout** (:func:`write_official`, :func:`read_official`). Assumption,
from QwenLM/ProcessBench's ``code/run_eval.py`` as we know it (its repository could not be read
from here): per split, ``<split>_error.jsonl`` (the solutions with ``label != -1``) and
``<split>_correct.jsonl`` (``label == -1``), each record the input record plus
``generated_critique`` (the critic's text), ``prediction`` (the predicted first-error index, -1 for
"no error", null when nothing could be read) and ``match`` (``prediction == label``); the script's
F1 is the harmonic mean of the mean ``match`` of the two files (:func:`official_scores`). Our judge
writes one critique per judged step, not one for the solution: ``generated_critique`` joins them
(``Paragraph i: <analysis>``) and ends with ``\\boxed{<prediction>}``, so the official answer
extraction (the last box, read as an integer) gives our prediction back; a solution without one
ends with ``\\boxed{none}`` (no integer: the official ``None``). Two fields of ours ride along:
``index`` (the solution's place in its split, which the two files lose) and ``judged`` (the judge's
per-step outputs as notebook 05 keeps them: ``verdicts``, ``scores``, ``analyses``, ``n_unparsed``
and, when measured, ``p_positive``).

Command line::

    python -m stepwiser_lib.method.formats to-trl runs/tiny/artifacts/02_rollout_labelling/labels.jsonl rows.jsonl --rule rel_ratio
    python -m stepwiser_lib.method.formats from-trl rows.jsonl labels.jsonl
    python -m stepwiser_lib.method.formats math-shepherd math-shepherd.jsonl rows.jsonl
    python -m stepwiser_lib.method.formats processbench runs/tiny/artifacts/05_processbench/stepwiser__rel_ratio.json out/
"""

from __future__ import annotations

import argparse
import hashlib
import json
import re
import sys
import warnings
from collections import defaultdict
from pathlib import Path

from ..core import io
from ..core.schemas import STEPWISE_COLUMNS, TOY_DEV_SPLIT, TOY_SPLITS, validate_record
from ..core.vocab import RULES
from . import processbench

# ----------------------------------------------------------------------------- TRL stepwise supervision


def _check_row(row, n: int) -> None:
    where = f"stepwise row {n}"
    if not isinstance(row, dict):
        raise ValueError(f"{where}: expected an object with {', '.join(STEPWISE_COLUMNS)}")
    missing = [c for c in STEPWISE_COLUMNS if c not in row]
    if missing:
        raise ValueError(f"{where}: missing column(s) {missing}")
    p, cs, ls = row["prompt"], row["completions"], row["labels"]
    if not isinstance(p, str) or not p.strip():
        raise ValueError(f"{where}: 'prompt' must be non-empty text, got {p!r}")
    if not isinstance(cs, list) or not cs or not all(isinstance(c, str) for c in cs):
        raise ValueError(f"{where}: 'completions' must be a non-empty list of strings (the steps)")
    if not isinstance(ls, list) or not all(isinstance(x, bool) for x in ls):
        raise ValueError(f"{where}: 'labels' must be a list of true/false, got {ls!r}")
    if len(ls) != len(cs):
        raise ValueError(f"{where}: {len(cs)} steps but {len(ls)} labels")


def trajectories(records: list[dict]) -> list[list[dict]]:
    """Label records grouped by ``traj_id`` in their first appearance's order, each in chunk order
    and checked whole: chunk indices 0..n-1 (``n_chunks`` when given), each ``history`` the chunks
    before it."""
    groups: dict[str, list[dict]] = defaultdict(list)
    for r in records:
        groups[r["traj_id"]].append(r)
    out = []
    for tid, rs in groups.items():
        rs = sorted(rs, key=lambda r: r["chunk_index"])
        n = rs[0].get("n_chunks", len(rs))
        if [r["chunk_index"] for r in rs] != list(range(n)):
            raise ValueError(
                f"trajectory {tid}: chunks {[r['chunk_index'] for r in rs]} of {n}; a stepwise row needs every "
                "chunk of its solution (read labels.jsonl, not a filtered or balanced set)"
            )
        for i, r in enumerate(rs):
            if list(r["history"]) != [x["chunk"] for x in rs[:i]]:
                raise ValueError(f"trajectory {tid}, chunk {i}: its history is not the chunks before it")
        out.append(rs)
    return out


def to_stepwise(records: list[dict], rule: str = "rel_ratio") -> list[dict]:
    """Notebook 02's label records as TRL ``stepwise_supervision`` rows, one per trajectory, with
    the labels of ``rule`` (``abs_q``, ``rel_effective`` or ``rel_ratio``)."""
    if rule not in RULES:
        raise ValueError(f"unknown rule {rule!r}; valid: {', '.join(RULES)}")
    rows = []
    for rs in trajectories(records):
        labels = [r[f"label_{rule}"] for r in rs]
        bad = [x for x in labels if not isinstance(x, bool)]
        if bad:
            raise ValueError(f"trajectory {rs[0]['traj_id']}: label_{rule} = {bad[0]!r}; want true or false")
        rows.append(
            {
                "prompt": rs[0]["problem"],
                "completions": [r["chunk"] for r in rs],
                "labels": labels,
                "problem_id": rs[0]["problem_id"],
                "traj_id": rs[0]["traj_id"],
            }
        )
    return rows


#: ``q0`` of a record read from a stepwise row: unknown, and set so that relabelling under the
#: paper's thresholds gives the row's labels back (see the module docstring).
UNKNOWN_Q0 = 0.5


def prompt_id(prompt: str, prefix: str = "sw") -> str:
    """A stable problem id for a prompt without one: a hash of its text."""
    return f"{prefix}-{hashlib.sha256(prompt.encode('utf-8')).hexdigest()[:12]}"


def from_stepwise(rows: list[dict], source: str = "stepwise_supervision") -> list[dict]:
    """TRL ``stepwise_supervision`` rows as label records (the fields of notebook 02's
    ``labels.jsonl``), one per step, for notebook 03. ``source`` is stored as ``label_source``."""
    out, seen = [], defaultdict(int)
    for n, row in enumerate(rows):
        _check_row(row, n)
        pid = row.get("problem_id") or prompt_id(row["prompt"])
        tid = row.get("traj_id") or f"{pid}/s{seen[pid]}"
        seen[pid] += 1
        steps, labels = row["completions"], row["labels"]
        q = [1.0 if x else 0.0 for x in labels]
        for i, (step, label) in enumerate(zip(steps, labels)):
            out.append(
                {
                    "problem_id": pid,
                    "problem": row["prompt"],
                    "traj_id": tid,
                    "chunk_index": i,
                    "n_chunks": len(steps),
                    "history": list(steps[:i]),
                    "chunk": step,
                    "q": q[i],
                    "q_prev": q[i - 1] if i else UNKNOWN_Q0,
                    "q0": UNKNOWN_Q0,
                    "n_rollouts": 0,
                    "is_final": i == len(steps) - 1,
                    "traj_correct": labels[-1],
                    **{f"label_{r}": label for r in RULES},
                    "label_source": source,
                }
            )
    return out


# ----------------------------------------------------------------------------- Math-Shepherd

#: Math-Shepherd's step tag in ``input``; ``label`` has ``+`` or ``-`` in its place.
STEP_TAG = "ки"
FIRST_STEP = re.compile(r"[Ss]tep 1:")


def math_shepherd_row(rec: dict) -> dict:
    """One raw Math-Shepherd record (``input``, ``label``) as a stepwise row, as TRL's conversion
    makes it (module docstring). A record whose ``label`` is not its ``input`` with each tag marked,
    or whose question has no ``Step 1:`` after it, raises ValueError."""
    text, marked = rec.get("input"), rec.get("label")
    if not isinstance(text, str) or not isinstance(marked, str):
        raise ValueError("a Math-Shepherd record has text fields 'input' and 'label'")
    parts = text.split(STEP_TAG)
    if len(parts) < 2:
        raise ValueError(f"no step tag {STEP_TAG!r} in 'input'")
    labels, at = [], 0
    for part in parts[:-1]:
        at += len(part)
        if at >= len(marked) or marked[at] not in "+-":
            raise ValueError(f"'label' has no +/- where 'input' has step tag {len(labels) + 1}")
        labels.append(marked[at] == "+")
        at += 1
    if "".join(p + ("+" if x else "-") for p, x in zip(parts, labels)) + parts[-1] != marked:
        raise ValueError("'label' is not 'input' with each step tag replaced by + or -")
    m = FIRST_STEP.search(parts[0])
    if not m:
        raise ValueError("no 'Step 1:' after the question: the prompt and the first step cannot be told apart")
    prompt = parts[0][: m.start()].strip()
    steps = [parts[0][m.start() :].strip()] + [p.strip() for p in parts[1:-1]]
    if not prompt or not all(steps):
        raise ValueError("an empty question or step")
    return {"prompt": prompt, "completions": steps, "labels": labels}


def math_shepherd_rows(records: list[dict]) -> list[dict]:
    """:func:`math_shepherd_row` of each record; the records it cannot read are skipped, with one
    warning that counts them and names the first (TRL's script skips a handful of annotation errors
    by hand)."""
    rows, bad = [], []
    for n, rec in enumerate(records):
        try:
            rows.append(math_shepherd_row(rec))
        except ValueError as e:
            bad.append(f"record {n}: {e}")
    if bad:
        warnings.warn(f"{len(bad)} of {len(records)} Math-Shepherd records skipped ({bad[0]})", stacklevel=2)
    return rows


# ----------------------------------------------------------------------------- ProcessBench's official layout

#: The fields ProcessBench's ``run_eval.py`` adds to each input record.
OFFICIAL_FIELDS = ("generated_critique", "prediction", "match")
#: The fields of ours beside them (module docstring).
OURS = ("index", "judged")


def critique(judged: dict, prediction: int | None) -> str:
    """One solution's per-step judge outputs as one critique text, ending in ``\\boxed{prediction}``
    (``\\boxed{none}`` without one), so ProcessBench's answer extraction reads our prediction."""
    lines = []
    for i, v in enumerate(judged.get("verdicts", [])):
        a = judged["analyses"][i].strip() if i < len(judged.get("analyses", [])) else ""
        lines.append(f"Paragraph {i}: {a or (v or 'no verdict')}")
    ending = "none" if prediction is None else str(prediction)
    return "\n\n".join(lines + [f"The earliest paragraph with an error: \\boxed{{{ending}}}"])


def official_records(records: list[dict], outputs: list[dict]) -> tuple[list[dict], list[dict]]:
    """One split's solutions and notebook 05's judged outputs (:func:`processbench.judge_solutions`,
    in the same order) as the official ``(error, correct)`` records."""
    if len(records) != len(outputs):
        raise ValueError(f"{len(outputs)} judged outputs for {len(records)} solutions")
    err, cor = [], []
    for i, (r, o) in enumerate(zip(records, outputs)):
        pred = o["prediction"]
        rec = {
            **r,
            "generated_critique": critique(o, pred),
            "prediction": pred,
            "match": pred == r["label"],
            "index": i,
            "judged": {k: v for k, v in o.items() if k != "prediction"},
        }
        (err if r["label"] != -1 else cor).append(rec)
    return err, cor


def write_official(out_dir, bench: dict[str, list[dict]], outputs: dict[str, list[dict]]) -> list[Path]:
    """``<split>_error.jsonl`` and ``<split>_correct.jsonl`` in ``out_dir`` for every split of
    ``outputs`` (``bench``: split -> the solutions judged, in order). Returns the files written."""
    out_dir, written = Path(out_dir), []
    for split, outs in outputs.items():
        if split not in bench:
            raise ValueError(f"judged split {split!r} is not in the benchmark given ({', '.join(bench)})")
        err, cor = official_records(bench[split], outs)
        for kind, recs in (("error", err), ("correct", cor)):
            path = out_dir / f"{split}_{kind}.jsonl"
            io.write_jsonl(path, recs)
            written.append(path)
    return written


def read_official(out_dir) -> tuple[dict[str, list[dict]], dict[str, list[dict]]]:
    """What :func:`write_official` wrote: ``(bench, outputs)``, split -> solutions and split ->
    judged outputs, in the order they were judged. Each record is checked: its input fields as a
    ProcessBench record, and ``match`` against ``prediction`` and ``label``."""
    out_dir = Path(out_dir)
    splits = sorted(p.name[: -len("_error.jsonl")] for p in out_dir.glob("*_error.jsonl"))
    if not splits:
        raise FileNotFoundError(f"{out_dir}: no <split>_error.jsonl (ProcessBench's official layout)")
    bench, outputs = {}, {}
    for split in splits:
        recs = []
        for kind in ("error", "correct"):
            path = out_dir / f"{split}_{kind}.jsonl"
            if not path.exists():
                raise FileNotFoundError(f"{path}: missing (its {split}_error.jsonl is there)")
            for n, r in enumerate(io.read_jsonl(path), 1):
                where = f"{path.name}, line {n}"
                missing = [k for k in (*OFFICIAL_FIELDS, *OURS) if k not in r]
                if missing:
                    raise ValueError(f"{where}: missing {missing}")
                validate_record({k: r[k] for k in r if k not in (*OFFICIAL_FIELDS, *OURS)}, split, n)
                if (r["label"] != -1) != (kind == "error"):
                    other = "correct" if kind == "error" else "error"
                    raise ValueError(f"{where}: label {r['label']} belongs in {split}_{other}.jsonl")
                if r["match"] is not (r["prediction"] == r["label"]):
                    raise ValueError(
                        f"{where}: match is {r['match']} for prediction {r['prediction']} and label {r['label']}"
                    )
                recs.append(r)
        recs.sort(key=lambda r: r["index"])
        if [r["index"] for r in recs] != list(range(len(recs))):
            raise ValueError(f"{split}: the indices of its solutions are not 0..{len(recs) - 1}")
        bench[split] = [{k: v for k, v in r.items() if k not in (*OFFICIAL_FIELDS, *OURS)} for r in recs]
        outputs[split] = [{"prediction": r["prediction"], **r["judged"]} for r in recs]
    return bench, outputs


def official_scores(out_dir) -> dict[str, dict]:
    """Per split, what ProcessBench's ``run_eval.py`` prints from these files: ``error_acc`` and
    ``correct_acc`` (the mean ``match`` of each file, in percent) and ``f1`` (their harmonic mean;
    0 when both are 0, where the script would divide by zero)."""
    out = {}
    for p in sorted(Path(out_dir).glob("*_error.jsonl")):
        split = p.name[: -len("_error.jsonl")]
        accs = []
        for kind in ("error", "correct"):
            ms = [r["match"] for r in io.read_jsonl(Path(out_dir) / f"{split}_{kind}.jsonl")]
            accs.append(100.0 * sum(ms) / len(ms) if ms else 0.0)
        ea, ca = accs
        out[split] = {"error_acc": ea, "correct_acc": ca, "f1": 2 * ea * ca / (ea + ca) if ea + ca else 0.0}
    return out


def bench_for(outputs: dict, toy_dir=None, local_dir: str | None = None, limit: int = 0, fix_math_688=False):
    """The solutions notebook 05 judged for ``outputs``' splits: toy-ProcessBench's (``toy_dir``)
    or the real ProcessBench's (``local_dir`` or the hub), each cut to ``limit`` as notebook 05's
    ``LIMIT`` cut it (:func:`processbench.subset`)."""
    bench = {}
    for s in outputs:
        if s in (*TOY_SPLITS, TOY_DEV_SPLIT):
            recs = processbench.load_toy(s, toy_dir)
        else:
            recs = processbench.load_split(s, local_dir, fix_math_688)
        bench[s] = processbench.subset(recs, limit)
        if len(bench[s]) != len(outputs[s]):
            raise ValueError(
                f"{s}: {len(outputs[s])} judged solutions, {len(bench[s])} in the benchmark at limit {limit}: "
                "give notebook 05's LIMIT (--limit)"
            )
    return bench


# ----------------------------------------------------------------------------- command line


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(
        prog="python -m stepwiser_lib.method.formats",
        description="Convert between our files and the field's formats (TRL stepwise supervision, "
        "Math-Shepherd, ProcessBench's official prediction files).",
    )
    sub = ap.add_subparsers(dest="cmd", required=True)
    a = sub.add_parser("to-trl", help="notebook 02's labels.jsonl -> TRL stepwise_supervision rows (JSONL)")
    a.add_argument("labels")
    a.add_argument("out")
    a.add_argument("--rule", default="rel_ratio", choices=RULES)
    a = sub.add_parser("from-trl", help="TRL stepwise_supervision rows (JSONL) -> label records for notebook 03")
    a.add_argument("rows")
    a.add_argument("out")
    a = sub.add_parser("math-shepherd", help="raw Math-Shepherd records (JSONL) -> TRL stepwise_supervision rows")
    a.add_argument("raw")
    a.add_argument("out")
    a = sub.add_parser("processbench", help="notebook 05's <judge>.json -> ProcessBench's official prediction files")
    a.add_argument("judged", help="runs/<profile>/artifacts/05_processbench/<judge>.json")
    a.add_argument("out_dir")
    a.add_argument("--toy-dir", default=None, help="toy-ProcessBench's folder (default data/toy_processbench)")
    a.add_argument("--processbench-dir", default=None, help="the real ProcessBench's JSONL folder (else the hub)")
    a.add_argument("--limit", type=int, default=0, help="notebook 05's LIMIT (0: every solution)")
    a.add_argument("--fix-math-688", action="store_true", help="notebook 05's FIX_MATH_688")
    args = ap.parse_args(argv)
    try:
        if args.cmd == "to-trl":
            rows = to_stepwise(io.read_jsonl(args.labels), args.rule)
            io.write_jsonl(args.out, rows)
            print(f"{len(rows)} stepwise rows ({args.rule} labels) -> {args.out}")
        elif args.cmd == "from-trl":
            recs = from_stepwise(io.read_jsonl(args.rows))
            io.write_jsonl(args.out, recs)
            print(f"{len(recs)} label records -> {args.out}")
        elif args.cmd == "math-shepherd":
            rows = math_shepherd_rows(io.read_jsonl(args.raw))
            io.write_jsonl(args.out, rows)
            print(f"{len(rows)} stepwise rows -> {args.out}")
        else:
            outputs = io.read_json(args.judged)["outputs"]
            bench = bench_for(outputs, args.toy_dir, args.processbench_dir, args.limit, args.fix_math_688)
            files = write_official(args.out_dir, bench, outputs)
            print(json.dumps({"files": [str(f) for f in files], "scores": official_scores(args.out_dir)}, indent=1))
    except (OSError, ValueError, KeyError) as e:
        print(f"[formats] {type(e).__name__}: {e}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
