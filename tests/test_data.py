"""The real data (issue 50, item 1): committed fixtures that a bare clone reads, and `make data`
(stepwiser_lib/tools/data.py; data/README.md). Seconds, no torch."""

import hashlib
import json
import os
import re
import shutil
import subprocess
import warnings

import pytest

from stepwiser_lib.core import paths
from stepwiser_lib.method import processbench as PB
from stepwiser_lib.method import tasks
from stepwiser_lib.tools import data

ROOT, FIX = paths.ROOT, paths.FIXTURES_DIR


def test_the_fixtures_are_real_records_in_the_full_layout():
    """Every file of the layout is committed; each record passes its loader's checks; every
    ProcessBench split holds 12 erroneous and 12 correct solutions, GSM8K 100 and MATH-500 40
    records; the rule keeps a fixture as it is; and the loaders read them without a warning."""
    for rel in data.SOURCES:
        raw = (FIX / rel).read_bytes()
        s = data.summary(rel, raw)
        if rel.startswith("processbench/"):
            assert (s["erroneous"], s["correct"]) == (PB.FIXTURE_PER_GROUP, PB.FIXTURE_PER_GROUP), rel
        else:
            assert s["records"] == data.FIXTURE_LINES[rel], rel
        assert raw.endswith(b"\n") and data.cut(rel, raw) == raw, rel
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # the fixture's own counts: no "another data version?" warning
        bench = PB.load_bench("real", None, str(FIX / "processbench"), limit=2)
    assert {s: [r["label"] == -1 for r in rs].count(True) for s, rs in bench.items()} == dict.fromkeys(PB.SPLITS, 1)
    m = tasks.load_problems("math500", "eval", 0, seed=0, path=str(FIX / "math500" / "test.jsonl"))
    g = tasks.load_problems("gsm8k", "eval", 0, seed=0, path=str(FIX / "gsm8k" / "test.jsonl"))
    assert len(m) == 40 and len(g) == 100 and all(x["answer"].lstrip("-").isdigit() for x in g)


def test_the_numina_stand_in_made_from_the_gsm8k_fixture_fills_every_pool(tmp_path):
    """`make standin` on the fixture: each NuminaMath pool holds what the smoke-scale real profiles
    ask of it (colab-smoke: 6 sft, 4 label, 3 rsft, 2 eval prompts)."""
    f = tasks.write_numina_standin(FIX / "gsm8k" / "test.jsonl", tmp_path / "numina.jsonl")
    sizes = {p: len(tasks.numina_pool(p, path=str(f), cache_dir=tmp_path / "cache")) for p in tasks.NUMINA_BUCKETS}
    assert sizes == {"sft": 41, "label": 42, "rsft": 13, "eval": 4}


def test_the_fixtures_match_the_table_of_data_readme():
    """data/README.md lists every fixture with its records, bytes, sha256 and rule; the committed
    files are those (else: `python -m stepwiser_lib.tools.data table`)."""
    text = (paths.DATA_DIR / "README.md").read_text()
    stale = [row for row in data.fixture_table() if row not in text]
    assert not stale, "data/README.md's fixture rows are stale:\n" + "\n".join(stale)
    for rel in data.SOURCES:
        sha = hashlib.sha256((FIX / rel).read_bytes()).hexdigest()
        assert re.search(rf"^\| `data/fixtures/{re.escape(rel)}` \|[^\n]*\| `{sha}` \|", text, re.M), rel


def test_the_fixtures_are_cut_from_the_full_files_by_the_rule():
    """Where a full copy is here (data/full after `make data`, or STEPWISER_REAL_DATA), the rule cuts
    the committed fixtures from it: the same bytes from the copies data/README.md describes, the
    same records from any other (a hub copy written by `datasets`)."""
    full = paths.real_data_dir()
    if full == FIX:
        pytest.skip("no full copy here (make data)")
    for rel, src in data.SOURCES.items():
        raw = (full / rel).read_bytes()
        got, want = data.cut(rel, raw), (FIX / rel).read_bytes()
        if hashlib.sha256(raw).hexdigest() == src["sha256"]:
            assert got == want, rel
        else:
            assert [json.loads(x) for x in got.splitlines()] == [json.loads(x) for x in want.splitlines()], rel


def test_make_data_copies_a_mirror(tmp_path, monkeypatch, capsys):
    """`make data DATA_MIRROR=dir` (``fetch`` with a mirror; here one built from the fixtures):
    every file copied byte for byte, MANIFEST.json written last, and real_data_dir() then reads
    the copy; a mirror that lacks a file or holds a bad record fails, naming it, and leaves the
    previous copy and no partial one."""
    mirror, out = tmp_path / "mirror", tmp_path / "data" / "full"
    shutil.copytree(FIX, mirror)
    data.main(["fetch", "--mirror", str(mirror), "--out", str(out)])
    assert all((out / rel).read_bytes() == (FIX / rel).read_bytes() for rel in data.SOURCES)
    man = json.loads((out / "MANIFEST.json").read_text())
    assert man["source"] == "mirror" and list(man["files"]) == list(data.SOURCES)
    f = man["files"]["processbench/math.jsonl"]
    assert (f["records"], f["erroneous"], f["correct"]) == (24, 12, 12) and f["mirror"].endswith("math.jsonl")
    assert f["sha256"] == hashlib.sha256((FIX / "processbench/math.jsonl").read_bytes()).hexdigest()
    assert f["same_as_readme_copy"] is False  # the fixture is not the full copy
    assert "[data] gsm8k/test.jsonl: 100 records" in capsys.readouterr().out

    monkeypatch.delenv(paths.REAL_DATA_ENV, raising=False)
    monkeypatch.setattr(paths, "FULL_DATA_DIR", out)
    assert paths.real_data_dir() == out  # make data's copy, once complete
    (mirror / "math500" / "test.jsonl").unlink()
    with pytest.raises(FileNotFoundError, match=r"math500/test.jsonl: not in the mirror"):
        data.fetch(out, mirror)
    (mirror / "math500" / "test.jsonl").write_text('{"problem": "x"}\n')
    with pytest.raises(ValueError, match=r"math500/test.jsonl, line 1: missing field\(s\) \['solution', 'answer'\]"):
        data.fetch(out, mirror)
    assert (out / "MANIFEST.json").exists() and not (tmp_path / "data" / "full.partial").exists()
    (out / "MANIFEST.json").unlink()  # an incomplete copy is not taken
    assert paths.real_data_dir() == FIX
    monkeypatch.setenv(paths.REAL_DATA_ENV, str(mirror))
    assert paths.real_data_dir() == mirror
    with pytest.raises(SystemExit):
        data.main(["fetch", "--revision", "gsm8k.jsonl=abc"])  # not a file of the layout


def _make(*args):
    """``make -n`` in the checkout, with none of the calling make's variables (a `make test` runs this)."""
    env = {
        k: v
        for k, v in os.environ.items()
        if k not in ("MAKEFLAGS", "MFLAGS", "MAKELEVEL", "REAL_DATA", "PROCESSBENCH", "DATA_MIRROR", "TORCH_INDEX")
    }
    r = subprocess.run(["make", "-n", *args], cwd=ROOT, env=env, capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    return r.stdout


def test_make_reads_the_fixtures_until_make_data_has_run():
    """The tests and the stand-in read data/full once `make data` completed it, else the committed
    fixtures; notebook 05 at `make reproduce` gets data/full's ProcessBench or the hub, never the
    fixture; `make data DATA_MIRROR=dir` copies that folder."""
    full = (ROOT / "data" / "full" / "MANIFEST.json").is_file()
    real = ROOT / "data" / ("full" if full else "fixtures")
    out = _make("test")
    assert f"STEPWISER_PROCESSBENCH_DIR={real}/processbench STEPWISER_REAL_DATA={real} " in out
    assert f"numina-standin --gsm8k data/{real.name}/gsm8k/test.jsonl" in _make("standin")
    pb = f"{ROOT}/data/full/processbench" if full else ""
    assert f"STEPWISER_PROCESSBENCH_DIR={pb} " in _make("reproduce", "PROFILE=smoke")
    assert "-m stepwiser_lib.tools.data fetch --mirror /somewhere/mirror" in _make(
        "data", "DATA_MIRROR=/somewhere/mirror"
    )
    assert "STEPWISER_REAL_DATA=/x " in _make("test", "REAL_DATA=/x")


def test_make_installs_the_cpu_torch_where_there_is_no_gpu():
    """No torch wheel on disk and no nvidia-smi: torch from PyTorch's CPU index; a wheel on disk (the
    local path) or a GPU: no index (PyPI's CUDA build with a GPU)."""
    target = ".venv/.installed"
    no_wheel = _make("-B", target, "TORCH_WHEEL=")
    cpu = "pip install -q torch==2.13.0 --extra-index-url https://download.pytorch.org/whl/cpu"
    assert (cpu in no_wheel) == (shutil.which("nvidia-smi") is None)
    wheel = _make("-B", target, "TORCH_WHEEL=/opt/wheels/torch-2.13.0+cpu-cp311-cp311-manylinux_2_28_x86_64.whl")
    assert "pip install -q torch==2.13.0" in wheel and "download.pytorch.org" not in wheel


def test_nothing_reads_data_beside_the_checkout():
    """Issue 50: the Makefile, CI, profiles, library, notebooks and tests name no folder beside the
    checkout (a clone has none); CI runs the tests in a fresh clone."""
    beside = re.compile(r"\.\./shared|shared/data|/ \"shared\" / \"data\"")
    files = [
        ROOT / "Makefile",
        ROOT / ".ci" / "run",
        *sorted((ROOT / "configs").rglob("*.yaml")),
        *sorted((ROOT / "stepwiser_lib").rglob("*.py")),
        *sorted((ROOT / "notebooks").glob("*.ipynb")),
        *sorted(p for p in (ROOT / "tests").glob("*.py") if p.name != "test_data.py"),
    ]
    found = [
        f"{f.relative_to(ROOT)}:{i}: {ln.strip()[:120]}"
        for f in files
        for i, ln in enumerate(f.read_text(encoding="utf-8").splitlines(), 1)
        if beside.search(ln)
    ]
    assert not found, "\n".join(found)
    ci = (ROOT / ".ci" / "run").read_text()
    assert 'git clone -q "$src" "$tmp/repo"' in ci and 'cd "$tmp/repo"' in ci
    assert ci.index('cd "$tmp/repo"') < ci.index("make test\n") < ci.index("make test-real\n")
