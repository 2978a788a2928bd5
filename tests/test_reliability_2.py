"""Cases of the second reliability review (shared/reference/reliability_review_2.md), by case id.
Issue 33 builds these up; the cases below are the hand-off writes (C02, K02, K03, E05)."""

import json
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from stepwiser_lib.core import io
from stepwiser_lib.tools import docs, runner

ROOT = Path(__file__).resolve().parents[1]

#: A process that saves a fake "model" into DEST the way save_pretrained does (config first, then
#: the weights after a pause), tagging both files with its name.
SAVER = textwrap.dedent('''
    import sys, time
    from pathlib import Path
    from stepwiser_lib.core import io
    from stepwiser_lib.engines.models import save_atomically

    class Model:
        def save_pretrained(self, d):
            d = Path(d)
            (d / "config.json").write_text(sys.argv[2])
            time.sleep(float(sys.argv[3]))
            (d / "model.safetensors").write_text(sys.argv[2])

    try:
        save_atomically(Model(), None, sys.argv[1])
        print("SAVED")
    except io.ArtifactBusy as e:
        print("BUSY", e)
''')


def test_two_runs_saving_one_model_never_mix_it_C02(tmp_path):
    script = tmp_path / "saver.py"
    script.write_text(SAVER)
    dest = tmp_path / "chunk_policy" / "model"
    run = lambda tag, pause: subprocess.Popen([sys.executable, str(script), str(dest), tag, str(pause)],  # noqa: E731
                                              cwd=ROOT, stdout=subprocess.PIPE, text=True)
    a = run("A", 3.0)
    for _ in range(100):  # wait until A holds the lock and has written its config
        if any(p.is_dir() and (p / "config.json").exists() for p in dest.parent.glob(".model.*.partial")):
            break
        subprocess.run([sys.executable, "-c", "import time; time.sleep(0.05)"])
    b = run("B", 0.0)
    out_b, out_a = b.communicate(timeout=60)[0], a.communicate(timeout=60)[0]
    assert out_a.strip() == "SAVED"
    assert out_b.startswith("BUSY") and "is being written by process" in out_b and "one copy of a stage" in out_b
    assert (dest / "config.json").read_text() == (dest / "model.safetensors").read_text() == "A"
    assert not list(dest.parent.glob(".model.*.partial"))  # no scratch folder left behind


def test_a_save_cleans_what_a_kill_between_its_renames_left_K02(tmp_path):
    """A save killed after moving the old model aside (``.model.old``) leaves it; the next save
    replaces the model and removes the leftover instead of keeping it forever."""
    from stepwiser_lib.engines.models import save_atomically

    class Model:
        def save_pretrained(self, d):
            (Path(d) / "config.json").write_text("{}")
            (Path(d) / "model.safetensors").write_text("w")

    dest = tmp_path / "model"
    old = tmp_path / ".model.old"
    old.mkdir()
    (old / "config.json").write_text("old")
    save_atomically(Model(), None, dest)
    assert (dest / "model.safetensors").read_text() == "w" and not old.exists()
    save_atomically(Model(), None, dest)  # over an existing model
    assert sorted(p.name for p in tmp_path.iterdir()) == [".model.lock", "model"]


def test_an_interrupted_docs_export_keeps_the_committed_copy_K03(tmp_path, monkeypatch):
    src = tmp_path / "runs" / "p"
    src.mkdir(parents=True)
    nb = {"cells": [], "metadata": {"papermill": {"end_time": "x", "duration": 60.0}}, "nbformat": 4, "nbformat_minor": 5}
    (src / "01_x.ipynb").write_text(json.dumps(nb))
    out = tmp_path / "docs" / "p"
    out.mkdir(parents=True)
    (out / "01_x.ipynb").write_text("THE COMMITTED COPY")

    def full_disk(a, b):
        raise OSError(28, "No space left on device")
    monkeypatch.setattr(io.os, "replace", full_disk)
    with pytest.raises(OSError, match="No space left"):
        docs.export("p", src=src, out=out, root=tmp_path)
    assert (out / "01_x.ipynb").read_text() == "THE COMMITTED COPY"  # untouched, not half-written
    assert sorted(p.name for p in out.iterdir()) == ["01_x.ipynb"]  # no scratch file left


def test_a_damaged_timings_file_is_replaced_with_a_warning_E05(tmp_path):
    t = tmp_path / "timings.json"
    t.write_text('{"01_self_segmentation": 3')  # a run killed while writing it
    with pytest.warns(UserWarning, match="is damaged"):
        assert runner.read_timings(t) == {}
    t.write_text('{"01_self_segmentation": 3.5}')
    assert runner.read_timings(t) == {"01_self_segmentation": 3.5}
    assert runner.read_timings(tmp_path / "missing.json") == {}


def _whole(d: Path) -> str:
    d.mkdir(parents=True, exist_ok=True)
    (d / "config.json").write_text("{}")
    (d / "model.safetensors").write_text("w")
    return str(d)


def _train_runs(tmp_path, monkeypatch, calls):
    from stepwiser_lib.core import paths
    from stepwiser_lib.method import judge_runs as jr
    from stepwiser_lib.method import judge_train

    def fake_train(name, data, d, *, seed, **kw):
        calls.append(name)
        return {"entry": {"name": name, "kind": "disc_sft", "style": "disc", "base": _whole(d / "model"), "adapter": None},
                "train": {"seconds": 1.0}}

    monkeypatch.setattr(judge_train, "train_variant", fake_train)
    monkeypatch.setattr(judge_train, "recipe_key", lambda kind, recipe: {})
    monkeypatch.setattr(paths, "model_fingerprint", lambda init: "fp")
    art = paths.artifacts("p", "04_judge_grpo")
    return jr.train_runs(art, ["disc_sft:rel_ratio"], 0, [], recipe={}, init="init", warmups={}, warm_keys={},
                         data={}, data_hash={"rel_ratio": "h"}, family="toy"), art


def test_a_cached_run_whose_model_folder_is_gone_is_retrained_H01(tmp_path, monkeypatch):
    import shutil
    monkeypatch.setenv("STEPWISER_OUTPUT_ROOT", str(tmp_path))
    calls = []
    recs, art = _train_runs(tmp_path, monkeypatch, calls)
    shutil.rmtree(art / "disc_sft__rel_ratio" / "model")  # the judge's weights deleted, its record kept
    with pytest.warns(UserWarning, match="no longer on disk"):
        recs, _ = _train_runs(tmp_path, monkeypatch, calls)
    assert calls == ["disc_sft:rel_ratio", "disc_sft:rel_ratio"]  # retrained, not trusted
    assert (art / "disc_sft__rel_ratio" / "model" / "model.safetensors").exists()


def test_a_moved_checkout_resumes_and_a_copy_reads_its_own_judges_H02(tmp_path, monkeypatch):
    import shutil

    from stepwiser_lib.core import paths
    from stepwiser_lib.method import judge_runs as jr
    first = tmp_path / "first"
    monkeypatch.setenv("STEPWISER_OUTPUT_ROOT", str(first))
    calls = []
    recs, art = _train_runs(first, monkeypatch, calls)
    rec = json.loads((art / "disc_sft__rel_ratio" / "record.json").read_text())
    assert rec["entry"]["base"] == "runs/p/artifacts/04_judge_grpo/disc_sft__rel_ratio/model"  # stored relative
    jr.write_registry(art / "judges.json", [recs["disc_sft:rel_ratio"]["entry"]])
    assert json.loads((art / "judges.json").read_text())[0]["base"].startswith("runs/p/")
    # the checkout moves: the cached run resumes without retraining, and the registry points here
    moved = tmp_path / "moved"
    shutil.move(str(first), str(moved))
    monkeypatch.setenv("STEPWISER_OUTPUT_ROOT", str(moved))
    recs, _ = _train_runs(moved, monkeypatch, calls)
    assert calls == ["disc_sft:rel_ratio"]  # trained once, before the move
    assert recs["disc_sft:rel_ratio"]["entry"]["base"] == str(moved / "runs/p/artifacts/04_judge_grpo/disc_sft__rel_ratio/model")
    assert jr.read_registry("p", ["all"], allow_all=True)["disc_sft:rel_ratio"]["base"].startswith(str(moved))
    # a record written with an absolute path by another checkout (before this fix) is read from here
    copy = tmp_path / "copy"
    shutil.copytree(moved, copy)
    monkeypatch.setenv("STEPWISER_OUTPUT_ROOT", str(copy))
    old_abs = str(moved / "runs/p/artifacts/04_judge_grpo/disc_sft__rel_ratio/model")
    assert paths.resolve_stored(old_abs) == str(copy / "runs/p/artifacts/04_judge_grpo/disc_sft__rel_ratio/model")
    assert paths.resolve_stored("Qwen/Qwen2.5-1.5B-Instruct") == "Qwen/Qwen2.5-1.5B-Instruct"  # a hub id
    assert paths.stored_path(str(paths.TOY_BASE_DIR)) == "data/toy_base"
    assert paths.resolve_stored("data/toy_base") == str(paths.TOY_BASE_DIR)


# ----------------------------------------------------------------------------- A: settings that do not fit together

@pytest.mark.parametrize("case, notebook, values, match", [
    ("A01", "04_judge_grpo", {"PROMPTS_PER_STEP": 3, "GROUP_SIZE": 4, "UPDATES_PER_STEP": 5},
     r"04_judge_grpo: .*12 is not divisible by 5; change UPDATES_PER_STEP"),
    ("A02", "01_self_segmentation", {"SFT_BATCH": 8, "SFT_MICRO_BATCH": 3},
     r"01_self_segmentation: .*SFT_MICRO_BATCH.*change SFT_MICRO_BATCH"),
    ("A02", "04_judge_grpo", {"WARMUP_BATCH": 16, "WARMUP_MICRO_BATCH": 5}, r"04_judge_grpo: .*WARMUP_MICRO_BATCH"),
    ("A04", "03_balancing", {"MIN_CHARS": 5000, "MAX_CHARS": 100}, r"MIN_CHARS = 5000 > MAX_CHARS = 100 keeps no judge example"),
    ("A08", "01_self_segmentation", {"SFT_MAX_STEPS": 0}, r"SFT_MAX_STEPS = 0 would train one step"),
    ("A15", "05_processbench", {"LIMIT": 1}, r"LIMIT = 1 keeps no correct solution per split"),
])
def test_settings_that_do_not_fit_together_stop_check_and_dry_run(case, notebook, values, match, tmp_path):
    """Each value passes its own declaration; together they cannot work. ``--check`` and
    ``--dry-run`` (and every run) stop before any kernel starts, naming the settings and the fix."""
    import yaml

    from stepwiser_lib.core.config import ConfigError
    (tmp_path / f"{case.lower()}.yaml").write_text(yaml.safe_dump({"shared": {}, "notebooks": {notebook: values}}))
    for kw in ({"check_only": True}, {"dry_run": True}):
        with pytest.raises(ConfigError, match=match):
            runner.run(case.lower(), profiles_dir=tmp_path, **kw)


@pytest.mark.parametrize("where", ["shared", "notebook"])
def test_a_profile_cannot_set_profile_A13(where, tmp_path):
    import yaml

    from stepwiser_lib.core.config import ConfigError
    data = {"shared": {"PROFILE": "tiny"}, "notebooks": {}} if where == "shared" else \
        {"shared": {}, "notebooks": {"01_self_segmentation": {"PROFILE": "tiny"}}}
    (tmp_path / "a13.yaml").write_text(yaml.safe_dump(data))
    with pytest.raises(ConfigError, match="PROFILE is set by the profile's own name"):
        runner.run("a13", check_only=True, profiles_dir=tmp_path)


def test_every_shipped_profile_fits_together():
    from stepwiser_lib.core import config
    from stepwiser_lib.tools import crosscheck
    nbs = config.list_notebooks()
    for profile in config.PROFILES:
        assert crosscheck.problems(config.with_defaults(nbs, config.checked_parameters(profile, nbs))) == [], profile


@pytest.mark.parametrize("case, values, match", [
    ("A05", {"03_balancing": {"RULES": ["abs_q"]}, "04_judge_grpo": {"VARIANTS": ["stepwiser:rel_ratio"]}},
     r"VARIANTS train on rule\(s\) \['rel_ratio'\], which 03_balancing's RULES \(\['abs_q'\]\) does not build"),
    ("A11", {"02_rollout_labelling": {"TASK": "gsm8k", "DATA_FILES": {"gsm8": "x.jsonl"}}}, r"DATA_FILES key 'gsm8' is not a task"),
    ("A12", {"02_rollout_labelling": {"TASK": "gsm8k", "DATA_FILES": {"gsm8k": "data"}}}, r"DATA_FILES\['gsm8k'\] = 'data' is a folder"),
    ("A16", {"05_processbench": {"JUDGES": ["disc_sft:rel_ratio"], "MAJ_K_SCORE_JUDGES": ["disc_sft:rel_ratio"]}},
     r"MAJ_K_SCORE_JUDGES holds 'disc_sft:rel_ratio', a discriminative judge"),
])
def test_settings_across_notebooks_and_files_are_checked_first(case, values, match, tmp_path):
    """A05: checked also when only notebook 04 is run; A11, A12, A16 before any model loads."""
    import yaml

    from stepwiser_lib.core.config import ConfigError
    (tmp_path / f"{case.lower()}.yaml").write_text(yaml.safe_dump({"shared": {}, "notebooks": values}))
    with pytest.raises(ConfigError, match=match):
        runner.run(case.lower(), only=["04"] if case == "A05" else None, check_only=True, profiles_dir=tmp_path)


def test_the_output_root_is_one_absolute_folder_E01_E02(tmp_path, monkeypatch):
    import os

    from stepwiser_lib.core import paths
    from stepwiser_lib.core.config import ConfigError
    f = tmp_path / "outfile"
    f.write_text("")
    monkeypatch.setenv(paths.OUTPUT_ROOT_ENV, str(f))
    with pytest.raises(ConfigError, match="is a file, not a folder"):
        runner.run("smoke", check_only=True)
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv(paths.OUTPUT_ROOT_ENV, "relout")
    runner.run("smoke", check_only=True)
    assert os.environ[paths.OUTPUT_ROOT_ENV] == str(tmp_path / "relout")  # what the kernels inherit


def test_the_docs_tables_read_the_output_root_and_only_their_profile_H05_H06(tmp_path, monkeypatch):
    from stepwiser_lib.core import paths
    from stepwiser_lib.tools import readme
    monkeypatch.setenv(paths.OUTPUT_ROOT_ENV, str(tmp_path))
    res = tmp_path / "results" / "tiny"
    res.mkdir(parents=True)
    (res / "run_times.json").write_text(json.dumps({"notebooks": {"01_x": 120.0}, "cpus": 2, "fresh": True}))
    assert readme.results_of("tiny") == res
    assert "| 01_x | 2.0 |" in readme.run_times("tiny")  # the run that wrote here, not the repository's
    (res / "judges.json").write_text(json.dumps({"profile": "toy-full"}))
    with pytest.raises(ValueError, match="holds results of profile 'toy-full', not 'tiny'"):
        readme.results_section("tiny")
