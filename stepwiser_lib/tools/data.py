"""The real data sets: the committed fixtures, and the full sets of ``make data`` (issue 50).

One layout for every copy, the hub's schema one record per line, read by the loaders unchanged
(:func:`stepwiser_lib.method.processbench.load_split`, :func:`stepwiser_lib.method.tasks.load_problems`):
``processbench/{gsm8k,math,olympiadbench,omnimath}.jsonl``, ``gsm8k/test.jsonl`` and
``math500/test.jsonl`` (:data:`SOURCES`).

* ``data/fixtures/`` (committed): a few dozen real records per file, byte-identical lines of the
  full files, cut by :func:`cut` (the rule, as code). The tests and the smoke-scale real profiles
  read them, so a clone needs nothing beside it. data/README.md lists each file's sha256.
* ``data/full/`` (git-ignored): the full sets, ``make data`` (:func:`fetch`): from the hub at
  the pinned revisions of :data:`SOURCES` through ``datasets``, or, with ``make data
  DATA_MIRROR=dir``, copied byte for byte from a folder of the same layout. ``MANIFEST.json``,
  written last, records where each file came from, its records and its sha256.

``python -m stepwiser_lib.tools.data fetch [--mirror DIR] [--out data/full]``;
``python -m stepwiser_lib.tools.data fixtures --from DIR [--out data/fixtures]`` (rewrites the
fixtures from a full copy); ``python -m stepwiser_lib.tools.data table`` (data/README.md's rows).
"""

from __future__ import annotations

import argparse
import datetime
import hashlib
import json
import shutil
from pathlib import Path

from ..core import paths
from ..core.io import atomic_write_text
from ..core.schemas import validate_record
from ..method import processbench, tasks

#: Every file of the layout: where the hub holds it (repository, config, split, pinned revision),
#: how its lines are written (``json.dumps`` with this ``ensure_ascii``: what reproduces the GitHub
#: copies byte for byte), and the records and sha256 of the copies data/README.md describes
#: (ProcessBench from QwenLM/ProcessBench at ee5ae00, GSM8K from openai/grade-school-math,
#: MATH-500 from openai/prm800k).
SOURCES: dict[str, dict] = {
    **{
        f"processbench/{s}.jsonl": {
            "repo": processbench.HF_DATASET,
            "config": None,
            "split": s,
            "revision": processbench.HF_REVISION,
            "ensure_ascii": False,
            "records": sum(processbench.EXPECTED_COUNTS[s]),
            "sha256": sha,
        }
        for s, sha in zip(
            processbench.SPLITS,
            (
                "47171087a5d94d2f235d22d78e20b967076d38ab4642dd9fd39964b31887f5be",
                "db015d520131d2bfd81552ac9a7b5217eec22d7d840e3800f0dae9a1620ee184",
                "d5d5adf6e8572e93ac320d3f52c700ed8b15d75851506d3c332d31b19ee5a44c",
                "c3c0ea2ed92942d88772d3c6f9005390f1b6189a241fd8f76f47c8b8289f78fa",
            ),
        )
    },
    "gsm8k/test.jsonl": {
        "repo": tasks.HUB["gsm8k"][0],
        "config": tasks.HUB["gsm8k"][1],
        "split": tasks.HUB["gsm8k"][2],
        "revision": tasks.HUB_REVISIONS["gsm8k"],
        "ensure_ascii": True,
        "records": 1319,
        "sha256": "3730d312f6e3440559ace48831e51066acaca737f6eabec99bccb9e4b3c39d14",
    },
    "math500/test.jsonl": {
        "repo": tasks.HUB["math500"][0],
        "config": tasks.HUB["math500"][1],
        "split": tasks.HUB["math500"][2],
        "revision": tasks.HUB_REVISIONS["math500"],
        "ensure_ascii": True,
        "records": 500,
        "sha256": "35dc41080a3680858b27fa7e0533d2d547825316fc5dafe5d316f4ccc5a06132",
    },
}
#: The fixture rule for the two evaluation sets: the first this many lines. GSM8K's 100 give every
#: NuminaMath pool of the stand-in made from them (``tasks.write_numina_standin``) enough prompts
#: for the smoke-scale profiles (sft 41, label 42, rsft 13, eval 4).
FIXTURE_LINES = {"gsm8k/test.jsonl": 100, "math500/test.jsonl": 40}
#: The fields each evaluation set's records must have (ProcessBench: ``schemas.validate_record``).
FIELDS = {"gsm8k/test.jsonl": ("question", "answer"), "math500/test.jsonl": ("problem", "solution", "answer")}


def _lines(data: bytes) -> list[bytes]:
    """The lines of a JSONL file, each with its ``\\n`` (a last line without one gets it)."""
    parts = data.split(b"\n")
    if parts and parts[-1] == b"":
        parts.pop()
    return [p + b"\n" for p in parts]


def cut(rel: str, data: bytes) -> bytes:
    """The fixture of the file ``rel`` (a key of :data:`SOURCES`) from its full ``data``, lines kept
    byte for byte and in file order: for a ProcessBench split the first
    :data:`~stepwiser_lib.method.processbench.FIXTURE_PER_GROUP` erroneous (label != -1) and the
    first as many correct (label -1) records; for GSM8K and MATH-500 the first
    :data:`FIXTURE_LINES` lines."""
    lines = _lines(data)
    if rel.startswith("processbench/"):
        kept, out = {True: 0, False: 0}, []
        for ln in lines:
            err = json.loads(ln)["label"] != -1
            if kept[err] < processbench.FIXTURE_PER_GROUP:
                kept[err] += 1
                out.append(ln)
        return b"".join(out)
    return b"".join(lines[: FIXTURE_LINES[rel]])


def summary(rel: str, data: bytes) -> dict:
    """Records, bytes and sha256 of one file of the layout, each record checked (a bad one fails
    naming the file and line); for ProcessBench also the erroneous and correct counts."""
    recs = []
    for n, ln in enumerate(_lines(data), 1):
        try:
            rec = json.loads(ln)
        except ValueError as e:
            raise ValueError(f"{rel}, line {n}: not JSON ({e})") from None
        if rel.startswith("processbench/"):
            validate_record(rec, rel.split("/")[1].removesuffix(".jsonl"), n)
        else:
            missing = [k for k in FIELDS[rel] if not isinstance(rec, dict) or k not in rec]
            if missing:
                raise ValueError(f"{rel}, line {n}: missing field(s) {missing}")
        recs.append(rec)
    out = {"records": len(recs), "bytes": len(data), "sha256": hashlib.sha256(data).hexdigest()}
    if rel.startswith("processbench/"):
        err = sum(r["label"] != -1 for r in recs)
        out.update(erroneous=err, correct=len(recs) - err)
    return out


def fixture_rule(rel: str) -> str:
    """The rule :func:`cut` applies to ``rel``, in words (data/README.md's table)."""
    if rel.startswith("processbench/"):
        k = processbench.FIXTURE_PER_GROUP
        return f"the first {k} erroneous and the first {k} correct records, in file order"
    return f"the first {FIXTURE_LINES[rel]} lines"


def fixture_table(folder: str | Path | None = None) -> list[str]:
    """data/README.md's table of the fixtures (the rows after its header): file, records (with
    erroneous / correct for ProcessBench), bytes, sha256 and the rule, from the files in ``folder``
    (default: the committed ``data/fixtures``)."""
    d = Path(folder or paths.FIXTURES_DIR)
    rows = []
    for rel in SOURCES:
        s = summary(rel, (d / rel).read_bytes())
        n = f"{s['records']} ({s['erroneous']} / {s['correct']})" if "erroneous" in s else str(s["records"])
        rows.append(f"| `data/fixtures/{rel}` | {n} | {s['bytes']} | `{s['sha256']}` | {fixture_rule(rel)} |")
    return rows


def write_fixtures(full: str | Path, out: str | Path | None = None) -> dict:
    """Cut every file of the full copy in ``full`` (:func:`cut`) into ``out`` (default: the
    committed ``data/fixtures``); returns each fixture's :func:`summary`."""
    full, out = Path(full), Path(out or paths.FIXTURES_DIR)
    done = {}
    for rel in SOURCES:
        data = cut(rel, (full / rel).read_bytes())
        done[rel] = summary(rel, data)
        (out / rel).parent.mkdir(parents=True, exist_ok=True)
        (out / rel).write_bytes(data)
    return done


def _from_hub(rel: str, revision: str) -> tuple[bytes, str | None]:  # pragma: no cover - needs the hub
    """One file of the layout from the hub: ``datasets.load_dataset`` at ``revision``, each row
    written as the GitHub copies are (``json.dumps``, :data:`SOURCES`' ``ensure_ascii``), and the
    commit the revision resolved to (None when the hub API does not say)."""
    from datasets import load_dataset  # only the hub path needs it
    from huggingface_hub import HfApi

    src = SOURCES[rel]
    ds = load_dataset(src["repo"], src["config"], split=src["split"], revision=revision)
    data = "".join(json.dumps(dict(r), ensure_ascii=src["ensure_ascii"]) + "\n" for r in ds).encode("utf-8")
    try:
        commit = HfApi().dataset_info(src["repo"], revision=revision).sha
    except Exception:  # the data came; only the commit is unknown
        commit = None
    return data, commit


def fetch(out: str | Path | None = None, mirror: str | Path | None = None, revisions: dict | None = None) -> dict:
    """The full sets into ``out`` (default ``data/full``): copied byte for byte from ``mirror`` (a
    folder of the same layout), else from the hub at :data:`SOURCES`' revisions (``revisions``:
    file -> revision overrides). Every record is checked (:func:`summary`); everything is written
    into ``<out>.partial`` and moved to ``out`` at the end with ``MANIFEST.json``, so an
    interrupted fetch leaves no half copy that :func:`stepwiser_lib.core.paths.real_data_dir`
    would take. Returns the manifest."""
    out = Path(out or paths.FULL_DATA_DIR).absolute()
    tmp = out.with_name(out.name + ".partial")
    shutil.rmtree(tmp, ignore_errors=True)
    files = {}
    try:
        for rel, src in SOURCES.items():
            if mirror:
                path = Path(mirror) / rel
                if not path.is_file():
                    raise FileNotFoundError(
                        f"{path}: not in the mirror (DATA_MIRROR={mirror}); it needs every file of {list(SOURCES)}"
                    )
                data, origin = path.read_bytes(), {"mirror": str(Path(mirror).absolute() / rel)}
            else:  # pragma: no cover - needs the hub
                rev = (revisions or {}).get(rel, src["revision"])
                data, commit = _from_hub(rel, rev)
                origin = {"hub": src["repo"], "config": src["config"], "split": src["split"], "revision": rev}
                origin["commit"] = commit
            s = summary(rel, data)
            s["same_as_readme_copy"] = s["sha256"] == src["sha256"]
            files[rel] = {**origin, **s}
            (tmp / rel).parent.mkdir(parents=True, exist_ok=True)
            (tmp / rel).write_bytes(data)
            note = "" if s["same_as_readme_copy"] else " (not the bytes of the copy data/README.md describes)"
            print(
                f"[data] {rel}: {s['records']} records, {s['bytes']} bytes, sha256 {s['sha256'][:12]}{note}", flush=True
            )
        manifest = {
            "written": datetime.datetime.now(datetime.UTC).isoformat(timespec="seconds"),
            "source": "mirror" if mirror else "hub",
            "files": files,
        }
        atomic_write_text(tmp / "MANIFEST.json", json.dumps(manifest, indent=1) + "\n")
        if out.exists():
            shutil.rmtree(out)
        tmp.rename(out)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    print(f"[data] wrote {out} ({len(files)} files); the tests and make test-real now read it", flush=True)
    return manifest


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description="the real data sets: fetch the full ones, cut the fixtures")
    sub = ap.add_subparsers(dest="cmd", required=True)
    f = sub.add_parser("fetch", help="the full sets into data/full (make data)")
    f.add_argument("--out", default=None, help="default: data/full")
    f.add_argument("--mirror", default=None, help="a folder of the same layout to copy from, instead of the hub")
    f.add_argument(
        "--revision",
        action="append",
        default=[],
        metavar="FILE=REV",
        help="another hub revision for one file, e.g. processbench/math.jsonl=main (repeatable)",
    )
    x = sub.add_parser(
        "fixtures", help="rewrite data/fixtures from a full copy (the rule: stepwiser_lib.tools.data.cut)"
    )
    x.add_argument("--from", dest="src", required=True, help="a full copy, e.g. data/full")
    x.add_argument("--out", default=None, help="default: data/fixtures")
    t = sub.add_parser("table", help="data/README.md's rows for the fixtures")
    t.add_argument("--dir", default=None, help="default: data/fixtures")
    a = ap.parse_args(argv)
    if a.cmd == "fetch":
        revs = dict(r.split("=", 1) for r in a.revision)
        unknown = sorted(set(revs) - set(SOURCES))
        if unknown:
            ap.error(f"--revision names {unknown}; the files are {list(SOURCES)}")
        fetch(a.out, a.mirror, revs)
    elif a.cmd == "fixtures":
        for rel, s in write_fixtures(a.src, a.out).items():
            print(f"{rel}: {s}")
    else:
        print("\n".join(fixture_table(a.dir)))


if __name__ == "__main__":
    main()
