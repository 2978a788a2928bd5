import json

import nbformat
import pytest

from stepwiser_lib.core import config, paths
from stepwiser_lib.tools import runner


def _nb(path, body):
    nb = nbformat.v4.new_notebook()
    nb.metadata = {"kernelspec": {"name": "python3", "language": "python", "display_name": "Python 3"}}
    p = nbformat.v4.new_code_cell('PROFILE: str = "tiny"  # scale\nX: int = 1  # value')
    p.metadata["tags"] = ["parameters"]
    nb.cells = [nbformat.v4.new_markdown_cell("# t"), p, nbformat.v4.new_code_cell(body)]
    nbformat.write(nb, path)


@pytest.fixture
def setup(tmp_path):
    nbd, prof, out = tmp_path / "nbs", tmp_path / "profiles", tmp_path / "out"
    nbd.mkdir(), prof.mkdir()
    (prof / "smoke.yaml").write_text("notebooks:\n  01_ok:\n    X: 5\n")
    _nb(nbd / "01_ok.ipynb", "assert X == 5, X\nprint('fine')")
    return nbd, prof, out


def test_runner_executes_with_profile_values(setup):
    nbd, prof, out = setup
    t = runner.run("smoke", notebooks_dir=nbd, out_dir=out, profiles_dir=prof)
    assert set(t) == {"01_ok"}
    done = json.loads((out / "01_ok.ipynb").read_text())
    assert any("fine" in "".join(o.get("text", "")) for c in done["cells"] for o in c.get("outputs", []))
    assert json.loads((out / "timings.json").read_text())["01_ok"] >= 0


def test_runner_names_the_failing_cell(setup):
    nbd, prof, out = setup
    _nb(nbd / "02_bad.ipynb", "raise ValueError('boom in stage two')")
    with pytest.raises(RuntimeError, match=r"02_bad.ipynb failed at cell 3 .*ValueError: boom in stage two"):
        runner.run("smoke", notebooks_dir=nbd, out_dir=out, profiles_dir=prof)


def test_runner_rejects_bad_profiles_before_any_kernel(setup, capsys):
    nbd, prof, out = setup
    (prof / "typo.yaml").write_text("notebooks:\n  01_ok:\n    XX: 5\n")
    with pytest.raises(runner.ConfigError, match="XX"):
        runner.run("typo", notebooks_dir=nbd, out_dir=out, profiles_dir=prof)
    assert not out.exists()  # nothing ran
    with pytest.raises(runner.ConfigError, match="valid profiles"):
        runner.run("missing", notebooks_dir=nbd, out_dir=out, profiles_dir=prof)
    with pytest.raises(runner.ConfigError, match="no notebook matches"):
        runner.run("smoke", only=["09"], notebooks_dir=nbd, out_dir=out, profiles_dir=prof)


def test_cli_exit_codes():
    assert runner.main(["--profile", "nope"]) == 2
    assert runner.main(["--profile", "paper", "--check"]) == 0


@pytest.mark.parametrize("profile", ["colab", "paper"])
def test_dry_run_plans_without_downloading(profile, capsys):
    """`make reproduce PROFILE=paper DRY_RUN=1`: config checked, models/datasets resolved, plan printed."""
    from stepwiser_lib.tools import runner as r

    assert r.main(["--profile", profile, "--dry-run"]) == 0
    out = capsys.readouterr().out
    assert "DRY RUN" in out and "estimated A100-hours" in out
    assert "Qwen/Qwen2.5" in out and "AI-MO/NuminaMath-CoT" in out
    for stem in ("01_self_segmentation", "02_rollout_labelling", "04_judge_grpo", "07_rsft"):
        assert stem in out
    gpu = {"colab": "1 x T4", "paper": "8 x A100_80GB"}[profile]
    assert f"estimated peak memory per device on {gpu}" in out and "GRPO step" in out
    assert "DOES NOT FIT" not in out  # the shipped profiles fit their target
    assert not list((paths.ROOT / "runs").glob(f"{profile}/*.ipynb"))  # nothing was executed


def test_plan_numbers_and_model_resolution():
    from stepwiser_lib.tools import plan

    assert plan.model_size_b("Qwen/Qwen2.5-1.5B-Instruct") == 1.5
    assert plan.model_size_b("meta-llama/Llama-3.1-70B-Instruct") == 70.0
    assert plan.describe_model("not a model id", "judge")["ok"] is False
    assert plan.describe_model("Qwen/Qwen2.5-7B-Instruct", "policy")["ok"] is True
    assert "gated" in plan.describe_model("meta-llama/Llama-3.1-70B-Instruct", "teacher")["note"]
    nb = paths.NOTEBOOKS_DIR / "04_judge_grpo.ipynb"
    p04 = {k: d.default for k, d in config.notebook_parameters(nb).items()}
    p04.update(
        {
            "VARIANTS": ["stepwiser:rel_ratio", "disc_sft:abs_q"],
            "REPEAT_SEEDS": [],
            "GRPO_STEPS": 800,
            "PROMPTS_PER_STEP": 1024,
            "GROUP_SIZE": 4,
        }
    )
    p = plan.dry_run("x", {"04_judge_grpo": p04})
    st = p["stages"][0]
    assert st["rl_runs"] == 1 and st["rl_completions"] == 800 * 1024 * 4


def test_colab_plan_gives_t4_minutes_per_stage():
    """docs/colab.md's T4 table quotes these: A100-hours x T4_PER_A100, per notebook; 05's
    per-judge cost counts every judge it scores (JUDGES "all": notebook 04's variants + warm-up)."""
    from stepwiser_lib.tools import plan

    nb = paths.NOTEBOOKS_DIR / "04_judge_grpo.ipynb"
    p04 = {k: d.default for k, d in config.notebook_parameters(nb).items()}
    p04.update(
        {
            "VARIANTS": ["stepwiser:rel_ratio"],
            "REPEAT_SEEDS": [],
            "GRPO_STEPS": 100,
            "PROMPTS_PER_STEP": 32,
            "GROUP_SIZE": 4,
        }
    )
    p = plan.dry_run("colab", {"04_judge_grpo": p04})
    st = p["stages"][0]
    assert st["t4_minutes"] == round(st["a100_hours"] * plan.T4_PER_A100 * 60)
    assert "t4_minutes" not in plan.dry_run("paper", {"04_judge_grpo": p04})["stages"][0]
    assert plan._judges({"04_judge_grpo": p04, "05_processbench": {"JUDGES": ["all"]}}, "05_processbench") == 2
    assert plan._judges({"05_processbench": {"JUDGES": ["a", "b", "c"]}}, "05_processbench") == 3
    assert "estimated time on one T4" in plan.render(p)


def test_dry_run_fails_when_a_stage_would_not_fit_and_names_the_setting(tmp_path, capsys):
    """A colab profile whose Chunk-Reset batch is too large for a T4: the plan fails before any
    compute and says what to change."""
    import shutil

    import yaml

    for f in paths.PROFILES_DIR.glob("*.yaml"):
        shutil.copy(f, tmp_path / f.name)
    prof = yaml.safe_load((tmp_path / "colab.yaml").read_text())
    prof["notebooks"]["06_chunk_reset"].update(GEN_BATCH=64, MAX_CHUNK_TOKENS=512, MAX_CHUNKS=16)
    (tmp_path / "colab.yaml").write_text(yaml.safe_dump(prof))
    with pytest.raises(config.ConfigError, match="06_chunk_reset / policy and judge together.*GEN_BATCH"):
        runner.run("colab", dry_run=True, profiles_dir=tmp_path)
    assert "DOES NOT FIT: change GEN_BATCH" in capsys.readouterr().out


def test_memory_plan_follows_the_batch_settings():
    """Halving the GRPO pass batch lowers the GRPO step estimate; LoRA shrinks the SFT's."""
    from stepwiser_lib.tools import plan

    decl = {
        nb.stem: {k: d.default for k, d in config.notebook_parameters(nb).items()} for nb in config.list_notebooks()
    }
    vals = config.check_profile_file(
        "colab", {k: config.notebook_parameters(paths.NOTEBOOKS_DIR / f"{k}.ipynb") for k in decl}
    )
    full = {k: {**decl[k], **vals[k]} for k in decl}
    gib = lambda p: {(r["stage"], r["phase"]): r["gib"] for r in plan.memory_plan("colab", p)["rows"]}
    a = gib(full)
    full["04_judge_grpo"]["GRPO_MICRO_BATCH"] = 2
    full["07_rsft"]["USE_LORA"] = True
    b = gib(full)
    assert b[("04_judge_grpo", "GRPO step")] <= a[("04_judge_grpo", "GRPO step")]
    assert b[("07_rsft", "SFT on the selected set")] < a[("07_rsft", "SFT on the selected set")]


def _one_notebook(tmp_path, profile_yaml: str, parameters: str, body: str):
    """A notebooks folder holding ``01_ok.ipynb`` (a parameters cell and one code cell) and a
    profiles folder whose ``smoke.yaml`` is ``profile_yaml``."""
    nbd, prof = tmp_path / "nbs", tmp_path / "profiles"
    nbd.mkdir(), prof.mkdir()
    (prof / "smoke.yaml").write_text(profile_yaml)
    nb = nbformat.v4.new_notebook()
    nb.metadata = {"kernelspec": {"name": "python3", "language": "python", "display_name": "Python 3"}}
    p = nbformat.v4.new_code_cell(parameters)
    p.metadata["tags"] = ["parameters"]
    nb.cells = [nbformat.v4.new_markdown_cell("# t"), p, nbformat.v4.new_code_cell(body)]
    nbformat.write(nb, nbd / "01_ok.ipynb")
    return nbd, prof


def test_constrained_parameters_run_without_papermill_noise(tmp_path, caplog):
    """Papermill's own parameter inference does not read `X: "int in [1, inf)"`; the runner has
    checked it already, so papermill's "unknown parameter" guess is not shown."""
    import logging

    nbd, prof = _one_notebook(
        tmp_path,
        "notebooks:\n  01_ok:\n    X: 5\n",
        'PROFILE: str = "tiny"  # scale\nX: "int in [1, inf)" = 1  # value',
        "assert X == 5, X",
    )
    with caplog.at_level(logging.WARNING, logger="papermill"):
        runner.run("smoke", notebooks_dir=nbd, out_dir=tmp_path / "out", profiles_dir=prof)
    assert not [r for r in caplog.records if "unknown parameter" in r.getMessage()]
    (prof / "smoke.yaml").write_text("notebooks:\n  01_ok:\n    X: 0\n")
    with pytest.raises(config.ConfigError, match=r"X = 0 is not allowed \(want in \[1, inf\)\)"):
        runner.run("smoke", notebooks_dir=nbd, out_dir=tmp_path / "out", profiles_dir=prof)


def test_a_full_run_records_its_times(tmp_path, monkeypatch):
    """The run-time table (docs/results_tiny.md) reads results/<profile>/run_times.json: per-notebook seconds
    and whether the run started with nothing on disk to resume."""
    nbd, prof = _one_notebook(tmp_path, "notebooks: {}\n", 'PROFILE: str = "tiny"  # scale', "x = 1")
    monkeypatch.setenv("STEPWISER_OUTPUT_ROOT", str(tmp_path / "outroot"))
    runner.run("smoke", notebooks_dir=nbd, out_dir=tmp_path / "out", profiles_dir=prof, record=True)
    rec = json.loads((tmp_path / "outroot" / "results" / "smoke" / "run_times.json").read_text())
    assert set(rec["notebooks"]) == {"01_ok"} and rec["fresh"] is True and rec["cpus"] >= 1
    (tmp_path / "out" / "artifacts" / "01_ok").mkdir(parents=True)  # something to resume from
    runner.run("smoke", notebooks_dir=nbd, out_dir=tmp_path / "out", profiles_dir=prof, record=True)
    assert json.loads((tmp_path / "outroot" / "results" / "smoke" / "run_times.json").read_text())["fresh"] is False


def _profile_params(profile):
    decl = {
        nb.stem: {k: d.default for k, d in config.notebook_parameters(nb).items()} for nb in config.list_notebooks()
    }
    vals = config.check_profile_file(
        profile, {k: config.notebook_parameters(paths.NOTEBOOKS_DIR / f"{k}.ipynb") for k in decl}
    )
    return {k: {**decl[k], **vals[k]} for k in decl}


def test_the_plan_refuses_a_tensor_parallelism_vllm_refuses(monkeypatch):
    """A notebook-wide VLLM_TP 8 reached the 1.5B policy's engines, which vLLM refuses (12 heads),
    while the dry run printed [ok]. Now each engine is checked with its
    own setting: the teacher's TEACHER_VLLM_TP 8 divides Llama-70B's 64 heads."""
    from stepwiser_lib.engines import memory
    from stepwiser_lib.tools import plan

    monkeypatch.delenv("STEPWISER_LAUNCHER", raising=False)
    q15, llama70 = (
        memory.KNOWN_MODELS["Qwen/Qwen2.5-1.5B-Instruct"],
        memory.KNOWN_MODELS["meta-llama/Llama-3.1-70B-Instruct"],
    )
    assert "12 attention heads" in memory.tp_problem(q15, 8) and memory.tp_problem(q15, 2) is None
    assert memory.tp_problem(q15, 4) is None and memory.tp_problem(llama70, 8) is None
    assert "key/value heads" in memory.tp_problem(memory.ModelShape(10, 64, 1, 6, 3, 8, True), 2)
    params = _profile_params("paper")
    rows = {(r["stage"], r["phase"]): r for r in plan.memory_plan("paper", params)["rows"]}
    assert not any(p.endswith("vLLM engine") for _, p in rows)  # the shipped paper profile passes
    params["01_self_segmentation"]["VLLM_TP"] = 8
    bad = [r for r in plan.memory_plan("paper", params)["rows"] if not r["fits"]]
    assert bad and bad[0]["phase"] == "base and chunk policy: vLLM engine" and "VLLM_TP" in bad[0]["change"]
    params["01_self_segmentation"].update(VLLM_TP=1, TEACHER_VLLM_TP=3)
    assert [r["phase"] for r in plan.memory_plan("paper", params)["rows"] if not r["fits"]] == [
        "segmentation teacher: vLLM engine"
    ]


def test_the_plan_computes_memory_and_wall_time_as_the_run_will_launch(monkeypatch):
    """In-process (no launcher) the paper's training rows are one device's; under the ZeRO-2
    launcher they shrink and training's wall time divides by the processes; generation stays on
    one engine either way. A100-hours count every cost: 04's judge evaluations and RS-FT sampling,
    every SFT, 05 times the judges it scores; 02 labels the paper's 40k kept prompts."""
    from stepwiser_lib.tools import plan

    params = _profile_params("paper")
    monkeypatch.delenv("STEPWISER_LAUNCHER", raising=False)
    solo = plan.dry_run("paper", params)
    monkeypatch.setenv("STEPWISER_LAUNCHER", "zero2.yaml")
    multi = plan.dry_run("paper", params)
    mem = lambda p, phase: next(r["gib"] for r in p["memory"]["rows"] if r["phase"] == phase)  # noqa: E731
    assert mem(solo, "SFT of the chunk policy") > 3 * mem(multi, "SFT of the chunk policy")
    assert (
        solo["memory"]["world_size"] == 1 and multi["memory"]["world_size"] == 8 and multi["memory"]["zero_stage"] == 2
    )
    st = lambda p, n: next(s for s in p["stages"] if s["notebook"].startswith(n))  # noqa: E731
    assert st(solo, "04")["wall_hours"] == st(solo, "04")["a100_hours"]  # one GPU in-process
    assert st(multi, "04")["wall_hours"] < st(solo, "04")["wall_hours"] / 4
    assert st(multi, "02")["wall_hours"] == st(solo, "02")["wall_hours"] == st(solo, "02")["a100_hours"]  # one engine
    assert st(solo, "02")["kept_prompts"] == 40000 and st(solo, "02")["rollouts"] == 40000 * 16 * 5 * 16
    four = st(solo, "04")
    assert (
        four["judge_evaluations"] > 0
        and four["rsft_judge_samples"] > four["judge_evaluations"]
        and four["sft_runs"] == 4
    )
    five = st(solo, "05")
    assert five["judges_scored"] == 10 and five["judge_calls"] == 3400 * 7 * 10
    assert solo["estimated_wall_hours"] >= solo["estimated_a100_hours"] / 8
    assert "wall-clock time as launched" in plan.render(solo)


def test_the_math_kernel_term_of_masked_gqa_is_what_the_review_measured():
    """B x heads x L^2 x 8 bytes: colab 04's first GRPO validation (100 prompts of 1.5k tokens on
    Qwen2.5-0.5B's 14 heads) would have needed 23.5 GiB more (C1); the loop no longer asks for it,
    and the plan counts its repeated key/value heads instead."""
    from stepwiser_lib.engines import memory

    q05 = memory.KNOWN_MODELS["Qwen/Qwen2.5-0.5B-Instruct"]
    b = memory.inference(q05, 2, 100, 1500, 0, sdpa_math=True)
    assert round(b.parts["sdpa_math_scores"] / memory.GIB, 1) == 23.5
    r = memory.inference(q05, 2, 100, 1500, 0, gqa_repeat=True)
    assert "sdpa_math_scores" not in r.parts and r.parts["repeated_kv"] == 2 * 100 * 14 * 1500 * 64 * 2


def test_the_paper_plan_knows_workers_and_nodes(monkeypatch, capsys):
    """Issue 34: `make reproduce PROFILE=paper DRY_RUN=1 WORKERS=8 NODES=N`: labelling on 8 x N GPUs,
    training on the launcher's processes on every node; the wall time falls, the A100-hours do not."""
    import re

    from stepwiser_lib.tools import runner as r

    walls = {}
    for nodes in (1, 4):
        monkeypatch.setenv("STEPWISER_LAUNCHER", "zero2.yaml")
        monkeypatch.setenv("STEPWISER_WORKERS", "8")
        monkeypatch.setenv("STEPWISER_NODES", str(nodes))
        assert r.main(["--profile", "paper", "--dry-run"]) == 0
        out = capsys.readouterr().out
        assert f"labelling_gpus={8 * nodes}" in out and f"02, 05, 06 and 07 on {8 * nodes} GPU(s)" in out
        assert f"{8 * nodes} processes" in out
        walls[nodes] = {
            m[0]: (float(m[1]), float(m[2]))
            for m in re.findall(r"(\d\d)_\w+ +.*a100_hours=([\d.]+), wall_hours=([\d.]+)", out)
        }
    from stepwiser_lib.tools.plan import labelling_speedup

    # labelling: 4x the GPUs, at the measured speed-up of K workers under N_KEPT (issue 48)
    assert walls[4]["02"][1] == pytest.approx(
        walls[1]["02"][1] * labelling_speedup(8) / labelling_speedup(32), rel=0.02
    )
    assert walls[1]["05"][1] == pytest.approx(
        walls[1]["05"][0] / 8, abs=0.06
    )  # judging on every worker (printed to 0.1 h)
    assert walls[4]["07"][1] < walls[1]["07"][1] and walls[4]["07"][0] == walls[1]["07"][0]  # sampling and scoring too
    assert walls[4]["04"][1] < walls[1]["04"][1] and walls[4]["02"][0] == walls[1]["02"][0]
    monkeypatch.setenv("STEPWISER_NODES", "0")
    assert r.main(["--profile", "paper", "--dry-run"]) == 2


def test_cpu_workers_run_only_stage_02_on_a_cpu_machine_on_hf(monkeypatch, capsys):
    """make reproduce's CPU_WORKERS (issue 61): notebook 02's labelling first runs in side-by-side
    worker processes where that paid on tiny (02), never on a GPU machine, on vLLM, or with one."""
    from stepwiser_lib.tools import runner, workers

    calls = []
    monkeypatch.setattr(workers, "run_workers", lambda profile, k, stage: calls.append((profile, k, stage)) or 0)
    monkeypatch.setattr(workers, "visible_gpus", lambda given="": [])
    hf = {"BACKEND": "hf", "JUDGE_BACKEND": "hf"}
    runner._side_by_side("tiny", "02_rollout_labelling", hf, 2)
    for stem in ("01_self_segmentation", "05_processbench", "06_chunk_reset", "07_rsft"):
        runner._side_by_side("tiny", stem, hf, 2)
    runner._side_by_side("tiny", "02_rollout_labelling", hf, 1)
    runner._side_by_side("tiny", "02_rollout_labelling", {"BACKEND": "vllm"}, 2)
    assert calls == [("tiny", 2, "02")]
    monkeypatch.setattr(workers, "visible_gpus", lambda given="": ["0"])
    runner._side_by_side("tiny", "02_rollout_labelling", hf, 2)
    assert len(calls) == 1
    monkeypatch.setattr(workers, "visible_gpus", lambda given="": [])
    monkeypatch.setattr(workers, "run_workers", lambda profile, k, stage: 1)  # a failed worker: the notebook goes on
    runner._side_by_side("tiny", "02_rollout_labelling", hf, 2)
    assert "the notebook computes what is missing" in capsys.readouterr().out
