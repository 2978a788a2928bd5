"""Cases of the second reliability review (fault injection at new points), by case id.
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
SAVER = textwrap.dedent("""
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
""")


def test_two_runs_saving_one_model_never_mix_it_C02(tmp_path):
    script = tmp_path / "saver.py"
    script.write_text(SAVER)
    dest = tmp_path / "chunk_policy" / "model"
    run = lambda tag, pause: subprocess.Popen(
        [sys.executable, str(script), str(dest), tag, str(pause)],  # noqa: E731
        cwd=ROOT,
        stdout=subprocess.PIPE,
        text=True,
    )
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
    # killed between the renames again: a reader puts the previous model back (not while a save holds the lock)
    dest.rename(old)
    with io.artifact_lock(dest):
        assert not io.restore_aside(dest) and not dest.exists()
    with pytest.warns(UserWarning, match="put back the model"):
        assert io.restore_aside(dest)
    assert (dest / "model.safetensors").read_text() == "w" and not old.exists()


def test_an_interrupted_docs_export_keeps_the_committed_copy_K03(tmp_path, monkeypatch):
    src = tmp_path / "runs" / "p"
    src.mkdir(parents=True)
    nb = {
        "cells": [],
        "metadata": {"papermill": {"end_time": "x", "duration": 60.0}},
        "nbformat": 4,
        "nbformat_minor": 5,
    }
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
        return {
            "entry": {"name": name, "kind": "disc_sft", "style": "disc", "base": _whole(d / "model"), "adapter": None},
            "train": {"seconds": 1.0},
        }

    monkeypatch.setattr(judge_train, "train_variant", fake_train)
    monkeypatch.setattr(judge_train, "recipe_key", lambda kind, recipe: {})
    monkeypatch.setattr(paths, "model_fingerprint", lambda init: "fp")
    art = paths.artifacts("p", "04_judge_grpo")
    return jr.train_runs(
        art,
        ["disc_sft:rel_ratio"],
        0,
        [],
        recipe={},
        init="init",
        warmups={},
        warm_keys={},
        data={},
        data_hash={"rel_ratio": "h"},
        family="toy",
    ), art


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
    jr.write_registry(art / "judges.json", [recs["disc_sft:rel_ratio"]["entry"]], family="toy", data_hash={})
    assert json.loads((art / "judges.json").read_text())[0]["base"].startswith("runs/p/")
    # the checkout moves: the cached run resumes without retraining, and the registry points here
    moved = tmp_path / "moved"
    shutil.move(str(first), str(moved))
    monkeypatch.setenv("STEPWISER_OUTPUT_ROOT", str(moved))
    recs, _ = _train_runs(moved, monkeypatch, calls)
    assert calls == ["disc_sft:rel_ratio"]  # trained once, before the move
    assert recs["disc_sft:rel_ratio"]["entry"]["base"] == str(
        moved / "runs/p/artifacts/04_judge_grpo/disc_sft__rel_ratio/model"
    )
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


@pytest.mark.parametrize(
    "case, notebook, values, match",
    [
        (
            "A01",
            "04_judge_grpo",
            {"PROMPTS_PER_STEP": 3, "GROUP_SIZE": 4, "UPDATES_PER_STEP": 5},
            r"04_judge_grpo: .*12 is not divisible by 5; change UPDATES_PER_STEP",
        ),
        (
            "A02",
            "01_self_segmentation",
            {"SFT_BATCH": 8, "SFT_MICRO_BATCH": 3},
            r"01_self_segmentation: .*SFT_MICRO_BATCH.*change SFT_MICRO_BATCH",
        ),
        ("A02", "04_judge_grpo", {"WARMUP_BATCH": 16, "WARMUP_MICRO_BATCH": 5}, r"04_judge_grpo: .*WARMUP_MICRO_BATCH"),
        (
            "A04",
            "03_balancing",
            {"MIN_CHARS": 5000, "MAX_CHARS": 100},
            r"MIN_CHARS = 5000 > MAX_CHARS = 100 keeps no judge example",
        ),
        ("A08", "01_self_segmentation", {"SFT_MAX_STEPS": 0}, r"SFT_MAX_STEPS = 0 would train one step"),
        ("A15", "05_processbench", {"LIMIT": 1}, r"LIMIT = 1 keeps no correct solution per split"),
    ],
)
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

    data = (
        {"shared": {"PROFILE": "tiny"}, "notebooks": {}}
        if where == "shared"
        else {"shared": {}, "notebooks": {"01_self_segmentation": {"PROFILE": "tiny"}}}
    )
    (tmp_path / "a13.yaml").write_text(yaml.safe_dump(data))
    with pytest.raises(ConfigError, match="PROFILE is set by the profile's own name"):
        runner.run("a13", check_only=True, profiles_dir=tmp_path)


def test_every_shipped_profile_fits_together():
    from stepwiser_lib.core import config
    from stepwiser_lib.tools import crosscheck

    nbs = config.list_notebooks()
    for profile in config.PROFILES:
        assert crosscheck.problems(config.with_defaults(nbs, config.checked_parameters(profile, nbs))) == [], profile


@pytest.mark.parametrize(
    "case, values, match",
    [
        (
            "A05",
            {"03_balancing": {"RULES": ["abs_q"]}, "04_judge_grpo": {"VARIANTS": ["stepwiser:rel_ratio"]}},
            r"VARIANTS train on rule\(s\) \['rel_ratio'\], which 03_balancing's RULES \(\['abs_q'\]\) does not build",
        ),
        (
            "A11",
            {"02_rollout_labelling": {"TASK": "gsm8k", "DATA_FILES": {"gsm8": "x.jsonl"}}},
            r"DATA_FILES key 'gsm8' is not a task",
        ),
        (
            "A12",
            {"02_rollout_labelling": {"TASK": "gsm8k", "DATA_FILES": {"gsm8k": "data"}}},
            r"DATA_FILES\['gsm8k'\] = 'data' is a folder",
        ),
        (
            "A16",
            {"05_processbench": {"JUDGES": ["disc_sft:rel_ratio"], "MAJ_K_SCORE_JUDGES": ["disc_sft:rel_ratio"]}},
            r"MAJ_K_SCORE_JUDGES holds 'disc_sft:rel_ratio', a discriminative judge",
        ),
        (
            "A07",
            {"04_judge_grpo": {"PROMPT_FAMILY": "toy"}, "06_chunk_reset": {"PROMPT_FAMILY": "paper"}},
            r"06_chunk_reset: PROMPT_FAMILY = 'paper', but notebook 04 trains its judges with 'toy'",
        ),
    ],
)
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


# ----------------------------------------------------------------------------- A: the rest, checked before compute


def test_reference_trajectories_need_problems_with_a_solution_A03(tmp_path, capsys):
    """The colab-smoke shortcut labels each problem's reference solution; only numina rows carry
    one. ``--check`` names both settings; the labelling CLI stops before any model loads; the
    library stops before any sampling."""
    import yaml
    from fakes import FakeToyPolicy, fake_items

    from stepwiser_lib.core.config import ConfigError
    from stepwiser_lib.method import labelling

    (tmp_path / "a03.yaml").write_text(
        yaml.safe_dump(
            {"shared": {}, "notebooks": {"02_rollout_labelling": {"TASK": "toy", "REFERENCE_TRAJECTORIES": True}}}
        )
    )
    with pytest.raises(ConfigError, match=r"REFERENCE_TRAJECTORIES .* only TASK = 'numina' rows hold \(TASK = 'toy'\)"):
        runner.run("a03", check_only=True, profiles_dir=tmp_path)
    assert labelling.main(["--profile", "a03", "--out", str(tmp_path / "out")], profiles_dir=tmp_path) == 2
    assert "REFERENCE_TRAJECTORIES" in capsys.readouterr().err
    gen = FakeToyPolicy()
    with pytest.raises(ValueError, match="these problems have none"):
        labelling.label_prompts(
            gen,
            fake_items(3),
            "{problem}",
            labelling.LabelConfig(reference_trajectories=True),
            tmp_path / "lib",
            "m",
            progress=False,
        )
    assert gen.calls == []  # nothing sampled


def _labels(path: Path, flip: bool = False) -> Path:
    """Synthetic notebook-02 labels: 24 problems, 4 chunks each, labels alternating."""
    recs = []
    for i in range(24):
        for c in range(4):
            lab = (i + c) % 2 == 0
            lab = not lab if flip else lab
            recs.append(
                {
                    "problem_id": f"p{i}",
                    "problem": f"problem {i}",
                    "history": [f"step {k}" for k in range(c)],
                    "chunk": f"step {c}",
                    "chunk_index": c,
                    "is_final": c == 3,
                    "traj_id": f"p{i}/0",
                    "q0": 0.5,
                    "q": 0.5,
                    "q_prev": 0.5,
                    **{f"label_{r}": lab for r in ("abs_q", "rel_effective", "rel_ratio")},
                }
            )
    io.write_jsonl(path, recs)
    return path


def _cfg04(profile, variants=("stepwiser:rel_ratio",), **kw):
    from types import SimpleNamespace

    return SimpleNamespace(
        notebook="04_judge_grpo", PROFILE=profile, VARIANTS=list(variants), JUDGE_INIT="toy_base", **kw
    )


def test_splits_of_older_labels_are_stale_and_unbuilt_rules_removed_A06_H03(tmp_path, monkeypatch):
    """03 records which labels.jsonl each rule folder came from and removes the rule folders it did
    not rebuild; 04's input check compares with the labels there now and names notebook 03."""
    from stepwiser_lib.core import inputs, paths
    from stepwiser_lib.method import balancing

    monkeypatch.setenv(paths.OUTPUT_ROOT_ENV, str(tmp_path))
    labels = _labels(paths.artifacts("p", "02_rollout_labelling") / "labels.jsonl")
    art = paths.artifacts("p", "03_balancing")

    def build(rules):
        balancing.build_splits(io.read_jsonl(labels), rules, art, dev_fraction=0.25, test_fraction=0.25, source=labels)

    build(["abs_q", "rel_effective", "rel_ratio"])
    inputs.check(_cfg04("p"))  # current: passes
    _labels(labels, flip=True)  # notebook 02 re-run with other settings (H03)
    with pytest.raises(
        inputs.StaleInputs,
        match=r"03_balancing/rel_ratio: built from another labels.jsonl .*"
        r"re-run notebook 03_balancing.ipynb",
    ):
        inputs.check(_cfg04("p"))
    build(["abs_q"])  # A06: 03 re-run with fewer RULES
    assert sorted(p.name for p in art.iterdir() if p.is_dir()) == ["abs_q"]  # no old rel_ratio split left to read
    with pytest.raises(inputs.MissingInputs, match="balanced judge data for rule 'rel_ratio'"):
        inputs.check(_cfg04("p"))
    inputs.check(_cfg04("p", ["stepwiser:abs_q"]))
    (art / "abs_q" / inputs.SOURCES).unlink()  # a folder written before 03 recorded its source
    with pytest.raises(inputs.StaleInputs, match=r"written before notebook 03 recorded which labels.jsonl it read"):
        inputs.check(_cfg04("p", ["stepwiser:abs_q"]))
    build(["abs_q"])
    # a re-run killed while rewriting a rule's files (here: at its third file) leaves that rule unvouched
    real, n = io.write_jsonl, []

    def killed_at_the_third(*a):
        n.append(a[0])
        if len(n) == 3:
            raise KeyboardInterrupt
        real(*a)

    monkeypatch.setattr(io, "write_jsonl", killed_at_the_third)
    with pytest.raises(KeyboardInterrupt):
        build(["abs_q"])
    monkeypatch.setattr(io, "write_jsonl", real)
    with pytest.raises(inputs.StaleInputs, match="abs_q: written before notebook 03 recorded"):
        inputs.check(_cfg04("p", ["stepwiser:abs_q"]))


def _registry(profile: str, entry: dict) -> Path:
    from stepwiser_lib.core import paths

    reg = paths.judge_registry(profile)
    reg.parent.mkdir(parents=True, exist_ok=True)
    reg.write_text(json.dumps([entry]))
    return reg


def test_judges_trained_on_another_prompt_family_or_other_splits_are_stale_A07(tmp_path, monkeypatch):
    from types import SimpleNamespace

    from stepwiser_lib.core import inputs, paths
    from stepwiser_lib.method import balancing
    from stepwiser_lib.method import judge_runs as jr

    monkeypatch.setenv(paths.OUTPUT_ROOT_ENV, str(tmp_path))
    labels = _labels(paths.artifacts("p", "02_rollout_labelling") / "labels.jsonl")
    balancing.build_splits(
        io.read_jsonl(labels),
        ["rel_ratio"],
        paths.artifacts("p", "03_balancing"),
        dev_fraction=0.25,
        test_fraction=0.25,
        source=labels,
    )
    _, digests = jr.read_splits("p", ["rel_ratio"])
    entry = {
        "name": "disc_sft:rel_ratio",
        "kind": "disc_sft",
        "rule": "rel_ratio",
        "style": "disc",
        "base": "data/toy_base",
        "adapter": None,
    }
    reg = paths.judge_registry("p")
    jr.write_registry(reg, [entry], family="toy", data_hash=digests)
    stored = json.loads(reg.read_text())[0]
    assert stored["prompt_family"] == "toy" and stored["splits"] == {"rel_ratio": digests["rel_ratio"]}
    cfg = lambda fam: SimpleNamespace(
        notebook="05_processbench",
        PROFILE="p",
        JUDGES=["disc_sft:rel_ratio"],  # noqa: E731
        PROMPT_FAMILY=fam,
    )
    inputs.check(cfg("toy"))
    with pytest.raises(
        inputs.StaleInputs,
        match=r"judge 'disc_sft:rel_ratio': trained with PROMPT_FAMILY = 'toy'; "
        r"this notebook prompts it with 'paper'; set PROMPT_FAMILY = 'toy' here",
    ):
        inputs.check(cfg("paper"))
    # notebook 03 rebuilt the splits from other labels after 04 trained: 05 names notebook 04
    _labels(labels, flip=True)
    balancing.build_splits(
        io.read_jsonl(labels),
        ["rel_ratio"],
        paths.artifacts("p", "03_balancing"),
        dev_fraction=0.25,
        test_fraction=0.25,
        source=labels,
    )
    with pytest.raises(
        inputs.StaleInputs,
        match=r"trained on notebook 03's rel_ratio splits as they were; .*"
        r"re-run notebook 04_judge_grpo.ipynb",
    ):
        inputs.check(cfg("toy"))
    import shutil

    shutil.rmtree(paths.artifacts("p", "03_balancing") / "rel_ratio")  # 03 re-run without rel_ratio in RULES
    with pytest.raises(inputs.StaleInputs, match=r"rel_ratio splits, which are no longer there"):
        inputs.check(cfg("toy"))
    _registry("p", entry)  # a registry written before provenance was recorded
    with pytest.raises(inputs.StaleInputs, match="the registry predates provenance records"):
        inputs.check(cfg("toy"))


def test_labelling_that_cut_every_sample_names_max_new_tokens_A09():
    from fakes import fake_items

    from stepwiser_lib.engines.models import Completion
    from stepwiser_lib.method import labelling

    class CutPolicy:  # every sample stops at the token limit, before any chunk closes
        def generate(self, prompts, n=1, **kw):
            return [[Completion(text="<chunk>1 + 2 = ", n_tokens=2, finished=False) for _ in range(n)] for _ in prompts]

    recs, st = labelling.label_shard(
        CutPolicy(), fake_items(4), "{problem}", labelling.LabelConfig(max_new_tokens=2), 0
    )
    assert recs == []
    msg = labelling.no_chunks_message(vars(st), 2)
    n = 4 * labelling.LabelConfig().n_prefilter
    assert msg.startswith(f"no labelled chunks: {n} of {n} pre-filter samples were cut at MAX_NEW_TOKENS = 2")
    assert "raise MAX_NEW_TOKENS" in msg.split(";")[0]  # the right setting first


def test_chunks_cut_at_the_token_limit_are_counted_and_named_A10():
    from stepwiser_lib.engines.models import Completion
    from stepwiser_lib.method import chunk_reset as cr

    class CutPolicy:
        cut_after_separator = False

        def generate(self, prompts, n=1, **kw):
            return [[Completion(text="<chunk>1", n_tokens=1, finished=False)] for _ in prompts]

    class Judge:
        asked = 0

        def judge(self, triples, **kw):
            Judge.asked += len(triples)
            return [{"verdict": "Positive", "score": 1.0, "analysis": ""} for _ in triples]

    cfg = cr.ResetConfig(max_new_tokens=1)
    res = cr.chunk_reset(CutPolicy(), Judge(), ["p1", "p2"], "{problem}", cfg, progress=False)
    assert [r["ended_cut"] for r in res] == [True, True] and Judge.asked == 0
    summary = cr.summarize(res, [False, False])
    assert summary["cut_at_limit"] == 100.0
    runs = {(label, "toy", 0): {"summary": summary} for label in (cr.NO_JUDGE, "stepwiser:rel_ratio")}
    rows, _ = cr.table(runs, ["toy"])
    note = cr.cut_note(rows, 1)
    assert "MAX_CHUNK_TOKENS = 1" in note and "the accuracies measure the limit, not the judges" in note
    assert note in cr.results_markdown(rows, [], [], 1, note=note)
    assert cr.cut_note([{**r, "cut_at_limit": 0.0} for r in rows], 96) == ""

    class NoRoom(CutPolicy):  # a request with no room at all is skipped, not cut by MAX_CHUNK_TOKENS
        def generate(self, prompts, n=1, **kw):
            return [[Completion(text="", n_tokens=0, finished=False, skipped=True)] for _ in prompts]

    assert [r["ended_cut"] for r in cr.chunk_reset(NoRoom(), None, ["p"], "{problem}", cfg, progress=False)] == [False]


def test_a_damaged_registry_is_named_with_the_notebook_that_rebuilds_it_H04(tmp_path, monkeypatch):
    from types import SimpleNamespace

    from stepwiser_lib.core import inputs, paths
    from stepwiser_lib.method import judge_runs as jr

    monkeypatch.setenv(paths.OUTPUT_ROOT_ENV, str(tmp_path))
    reg = paths.judge_registry("p")
    reg.parent.mkdir(parents=True)
    reg.write_text('[{"name": "disc_sft:rel_ratio", "base": "runs/p/artif')  # a copy cut short
    cfg = SimpleNamespace(notebook="05_processbench", PROFILE="p", JUDGES=["disc_sft:rel_ratio"], PROMPT_FAMILY="toy")
    with pytest.raises(
        inputs.MissingInputs,
        match=r"judges.json: the judge registry \(damaged.*\n.*"
        r"Run notebook .*04_judge_grpo, then this one",
    ):
        inputs.check(cfg)
    with pytest.raises(ValueError, match=r"judges.json is damaged \(JSONDecodeError.*re-run notebook 04"):
        jr.read_registry("p", ["disc_sft:rel_ratio"])


def test_the_dry_run_names_the_data_files_it_will_read_E06(tmp_path, capsys):
    import yaml

    from stepwiser_lib.core.config import ConfigError

    files = {"math500": str(tmp_path / "missing" / "test.jsonl"), "numina": str(tmp_path / "numina.jsonl")}
    (tmp_path / "numina.jsonl").write_text("")
    (tmp_path / "e06.yaml").write_text(
        yaml.safe_dump(
            {"shared": {"DATA_FILES": files}, "notebooks": {"06_chunk_reset": {"EVAL_TASKS": ["math500", "numina"]}}}
        )
    )
    with pytest.raises(ConfigError, match=r"DATA_FILES\['math500'\] = .*missing/test.jsonl': no such file"):
        runner.run("e06", only=["06"], dry_run=True, profiles_dir=tmp_path)
    out = capsys.readouterr().out
    assert f"math500 -> {files['math500']} (MISSING)" in out and f"numina -> {files['numina']} (local file)" in out
    with pytest.raises(ConfigError, match="no such file"):  # a run stops before any kernel too
        runner.run("e06", only=["06"], profiles_dir=tmp_path)
    # a file of a task the notebook never reads need not be there
    (tmp_path / "e06.yaml").write_text(
        yaml.safe_dump({"shared": {"DATA_FILES": files}, "notebooks": {"06_chunk_reset": {"EVAL_TASKS": ["numina"]}}})
    )
    runner.run("e06", only=["06"], dry_run=True, profiles_dir=tmp_path)


def test_a_folder_the_run_cannot_write_stops_it_before_any_kernel_E03(tmp_path, monkeypatch):
    from stepwiser_lib.core import paths
    from stepwiser_lib.core.config import ConfigError

    monkeypatch.setenv(paths.OUTPUT_ROOT_ENV, str(tmp_path))
    (tmp_path / "results").write_text("a file where results/ should be")
    with pytest.raises(ConfigError, match=r"cannot write to .*results/smoke: .*is a file"):
        runner.run("smoke", only=["03"])
    assert not (tmp_path / "runs" / "smoke" / "03_balancing.ipynb").exists()


def test_doubled_variants_and_repeat_seeds_train_once_each_A14():
    from stepwiser_lib.method import judge_runs as jr

    runs = jr.training_runs(["stepwiser:rel_ratio", "disc_sft:rel_ratio", "stepwiser:rel_ratio"], 0, [0, 1, 1])
    ids = [r for _, _, r in runs]
    assert len(ids) == len(set(ids))
    assert ids == ["stepwiser:rel_ratio", "disc_sft:rel_ratio", "stepwiser:rel_ratio@seed1", "disc_sft:rel_ratio@seed1"]


def test_an_unknown_judge_is_named_with_the_registry_A17(tmp_path, monkeypatch):
    from stepwiser_lib.core import paths
    from stepwiser_lib.method import judge_runs as jr

    monkeypatch.setenv(paths.OUTPUT_ROOT_ENV, str(tmp_path))
    _registry("p", {"name": "disc_sft:rel_ratio", "style": "disc", "base": "data/toy_base"})
    with pytest.raises(
        ValueError,
        match=r"unknown judge\(s\) \['stepwiser:rel_ratio'\]; the notebook 04 registry "
        r"has \['disc_sft:rel_ratio'\]",
    ):
        jr.read_registry("p", ["stepwiser:rel_ratio"])


def test_a_missing_checkout_root_is_named_E07(tmp_path):
    env = {**__import__("os").environ, "STEPWISER_ROOT": str(tmp_path / "missing")}
    r = subprocess.run(
        [sys.executable, "-m", "stepwiser_lib.tools.runner", "--profile", "smoke", "--check"],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert r.returncode == 2 and f"no notebooks in {tmp_path / 'missing'}/notebooks" in r.stderr


# ----------------------------------------------------------------------------- C and K: two runs, interruptions


def test_two_labelling_runs_into_one_folder_give_the_single_run_labels_C01(tmp_path):
    """Shard writes are atomic and deterministic: two runs racing over one folder each finish,
    and the labels equal a run alone."""
    script = tmp_path / "label.py"
    script.write_text(
        textwrap.dedent("""
        import sys
        sys.path.insert(0, "tests")
        from fakes import FakeToyPolicy, fake_items
        from stepwiser_lib.core import io
        from stepwiser_lib.method import labelling as L
        res = L.label_prompts(FakeToyPolicy(), fake_items(12), "{problem}", L.LabelConfig(n_prefilter=8, m_rollouts=8,
                              shard_size=3, seed=1), sys.argv[1], "m", progress=False)
        io.write_jsonl(sys.argv[1] + "/labels.jsonl", res["records"])
    """)
    )
    run = lambda out: subprocess.Popen([sys.executable, str(script), str(out)], cwd=ROOT)  # noqa: E731
    a, b = run(tmp_path / "shared"), run(tmp_path / "shared")
    assert a.wait(timeout=120) == 0 and b.wait(timeout=120) == 0
    assert run(tmp_path / "alone").wait(timeout=120) == 0
    assert (tmp_path / "shared" / "labels.jsonl").read_bytes() == (tmp_path / "alone" / "labels.jsonl").read_bytes()


KILLED_SAVER = textwrap.dedent("""
    import sys
    from pathlib import Path
    from stepwiser_lib.engines.models import save_atomically

    class Model:
        def __init__(self, k):
            self.k = k

        def save_pretrained(self, d):
            (Path(d) / "config.json").write_text(str(self.k))
            (Path(d) / "model.safetensors").write_bytes(str(self.k).encode() * 200_000)

    k = 1
    save_atomically(Model(k), None, sys.argv[1])
    print("READY", flush=True)  # a whole model is in place; from now on every save replaces one
    while True:
        k += 1
        save_atomically(Model(k), None, sys.argv[1])
""")


def test_a_save_killed_at_any_moment_leaves_a_whole_model_K01(tmp_path):
    import signal
    import time

    from stepwiser_lib.core import paths

    script = tmp_path / "saver.py"
    script.write_text(KILLED_SAVER)
    dest = tmp_path / "model"
    for delay in (0.3, 0.55, 0.8):
        p = subprocess.Popen([sys.executable, str(script), str(dest)], cwd=ROOT, stdout=subprocess.PIPE, text=True)
        assert p.stdout.readline().strip() == "READY"
        time.sleep(delay)
        p.send_signal(signal.SIGKILL)
        p.wait(timeout=30)
        io.restore_aside(dest)  # what every reader's input check does first (a kill between the two renames)
        assert paths.model_complete(dest)
        k = (dest / "config.json").read_text()
        assert (dest / "model.safetensors").read_bytes() == k.encode() * 200_000  # one save's config and weights


SLEEPER = {
    "cells": [
        {
            "cell_type": "code",
            "execution_count": None,
            "id": "p",
            "metadata": {"tags": ["parameters"]},
            "outputs": [],
            "source": ['PROFILE: str = "tiny"  # profile\n', 'SLEEP: "float in [0, inf)" = 0.0  # seconds'],
        },
        {
            "cell_type": "code",
            "execution_count": None,
            "id": "s",
            "metadata": {},
            "outputs": [],
            "source": [
                "import os, pathlib, time\n",
                "pathlib.Path(os.environ['PID_FILE']).write_text(str(os.getpid()))\n",
                "time.sleep(SLEEP)",
            ],
        },
    ],
    "metadata": {"kernelspec": {"display_name": "Python 3", "language": "python", "name": "python3"}},
    "nbformat": 4,
    "nbformat_minor": 5,
}


def _runner_scaffold(tmp_path, sleep: float):
    """A scratch folder with one notebook that writes its kernel's pid and sleeps, a profile, and
    a script that runs it through :func:`runner.run` (what ``make reproduce`` does)."""
    nbs = tmp_path / "notebooks"
    nbs.mkdir()
    (nbs / "01_sleep.ipynb").write_text(json.dumps(SLEEPER))
    (tmp_path / "k.yaml").write_text(f"shared: {{}}\nnotebooks:\n  01_sleep:\n    SLEEP: {sleep}\n")
    script = tmp_path / "run.py"
    script.write_text(
        textwrap.dedent(f"""
        import sys
        from pathlib import Path
        from stepwiser_lib.tools import runner
        sys.argv = ["runner", "--profile", "k"]
        runner.NOTEBOOKS_DIR = Path({str(nbs)!r})
        orig = runner.run
        runner.run = lambda *a, **kw: orig(*a, **{{**kw, "notebooks_dir": Path({str(nbs)!r}),
                                                  "out_dir": Path(sys.argv_out), "profiles_dir": Path({str(tmp_path)!r})}})
    """)
    )
    return script


def _start(tmp_path, script, out: str, pid_file: str, **kw):
    import os
    import signal

    code = f"import sys; sys.argv_out = {out!r}; exec(open({str(script)!r}).read()); sys.exit(runner.main(['--profile', 'k']))"
    return subprocess.Popen(
        [sys.executable, "-c", code],
        cwd=ROOT,
        env={**os.environ, "PID_FILE": pid_file},
        # a terminal's Ctrl-C reaches a process whose SIGINT is not ignored: a test suite started as a
        # background job of a script (CI, `make test &`) inherits SIGINT ignored, and then neither the
        # runner nor its kernel would see the signal this test sends (issue 49, LAB_LOG.md part 5)
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        **kw,
    )


def _wait_for(path: Path, timeout: float = 120) -> int:
    import time

    t = time.time()
    while time.time() - t < timeout:
        if path.exists() and path.read_text():
            return int(path.read_text())
        time.sleep(0.2)
    raise TimeoutError(path)


def _alive(pid: int) -> bool:
    import os

    try:
        os.kill(pid, 0)
        return "zombie" not in Path(f"/proc/{pid}/status").read_text().lower()
    except (ProcessLookupError, FileNotFoundError):
        return False


def test_a_terminated_run_leaves_no_kernel_and_ctrl_c_says_one_line_K04_K05(tmp_path):
    import os
    import signal
    import time

    script = _runner_scaffold(tmp_path, sleep=600)  # only a signal ends it: a sleep that ran out would exit 0
    # K04: SIGTERM to the runner; its kernel goes with it
    p = _start(tmp_path, script, str(tmp_path / "out1"), str(tmp_path / "pid1"))
    kernel = _wait_for(tmp_path / "pid1")
    p.send_signal(signal.SIGTERM)
    p.wait(timeout=60)
    t = time.time()
    while _alive(kernel) and time.time() - t < 30:
        time.sleep(0.5)
    assert not _alive(kernel), "the kernel outlived its runner"
    # K05: a real Ctrl-C (SIGINT to the process group): exit 130 and the runner's one line, no traceback
    p = _start(tmp_path, script, str(tmp_path / "out2"), str(tmp_path / "pid2"), start_new_session=True)
    kernel = _wait_for(tmp_path / "pid2")
    os.killpg(p.pid, signal.SIGINT)
    _, err = p.communicate(timeout=180)  # a loaded 2-core machine (make test) took over 60 s once
    assert p.returncode == 130, err
    assert "[runner] interrupted in 01_sleep.ipynb; the next run resumes" in err and "Traceback" not in err
    t = time.time()
    while _alive(kernel) and time.time() - t < 30:
        time.sleep(0.5)
    assert not _alive(kernel), "the kernel outlived an interrupted runner"


def test_two_runs_of_one_profile_at_once_both_finish_and_leave_readable_files_C03(tmp_path):
    script = _runner_scaffold(tmp_path, sleep=0.5)
    procs = [_start(tmp_path, script, str(tmp_path / "out"), str(tmp_path / f"pid{i}")) for i in range(2)]
    outs = [p.communicate(timeout=180) for p in procs]
    assert [p.returncode for p in procs] == [0, 0], outs
    assert json.loads((tmp_path / "out" / "timings.json").read_text()).keys() == {"01_sleep"}
    json.loads((tmp_path / "out" / "01_sleep.ipynb").read_text())  # the executed notebook reads back


def test_a_full_disk_while_labelling_keeps_the_shards_and_resumes_E04(tmp_path, monkeypatch):
    from fakes import FakeToyPolicy, fake_items

    from stepwiser_lib.method import labelling as L

    cfg = L.LabelConfig(n_prefilter=8, m_rollouts=8, shard_size=3, seed=1)
    alone = L.label_prompts(FakeToyPolicy(), fake_items(12), "{problem}", cfg, tmp_path / "alone", "m", progress=False)
    real, writes = io.atomic_write_text, []

    def full_after_two(path, text):
        writes.append(path)
        if len(writes) > 2:
            raise OSError(28, "No space left on device")
        real(path, text)

    monkeypatch.setattr(io, "atomic_write_text", full_after_two)
    with pytest.raises(OSError, match="No space left"):
        L.label_prompts(FakeToyPolicy(), fake_items(12), "{problem}", cfg, tmp_path / "run", "m", progress=False)
    monkeypatch.setattr(io, "atomic_write_text", real)
    assert sorted(p.name for p in (tmp_path / "run" / "shards").iterdir()) == ["shard_00000.jsonl", "shard_00001.jsonl"]
    res = L.label_prompts(FakeToyPolicy(), fake_items(12), "{problem}", cfg, tmp_path / "run", "m", progress=False)
    assert res["resumed"] == 2 and res["records"] == alone["records"]


def test_large_weight_files_are_fingerprinted_by_content_not_by_date(tmp_path):
    """A copied checkout (new modification times) keeps its keys; retrained weights do not."""
    import os

    from stepwiser_lib.core import paths

    d = tmp_path / "m"
    d.mkdir()
    (d / "config.json").write_text("{}")
    w = d / "model.safetensors"
    with open(w, "wb") as f:  # sparse: 201 MB on paper, nothing on disk
        f.truncate(201 * 2**20)
    before = paths.model_fingerprint(str(d))
    os.utime(w, (1, 1))
    assert paths.model_fingerprint(str(d)) == before
    with open(w, "r+b") as f:  # training changes every weight; one sampled block in the middle is enough to see it
        size = 201 * 2**20
        f.seek((size - paths.BLOCK) * (paths.SAMPLED_BLOCKS // 2) // (paths.SAMPLED_BLOCKS - 1) + 10)
        f.write(b"x")
    assert paths.model_fingerprint(str(d)) != before
