"""Training under ``accelerate launch`` (stepwiser_lib/engines/launch.py, configs/accelerate/)."""
import json
import sys
from pathlib import Path

import pytest

from stepwiser_lib.method import discriminative
from stepwiser_lib.engines import launch, sft
from stepwiser_lib.engines.trainers import SFTSettings
from stepwiser_lib.method import judge_train

CONFIGS = Path(__file__).resolve().parent.parent / "configs" / "accelerate"


def test_launcher_is_off_by_default_and_inline(monkeypatch):
    monkeypatch.delenv(launch.ENV_CONFIG, raising=False)
    assert launch.launcher() is None
    monkeypatch.setenv(launch.ENV_CONFIG, "inline")
    assert launch.launcher() is None


def test_launcher_resolves_shipped_names_and_rejects_missing(monkeypatch, tmp_path):
    monkeypatch.chdir(tmp_path)  # a bare name resolves against configs/accelerate wherever we are
    monkeypatch.setenv(launch.ENV_CONFIG, "zero2.yaml")
    assert launch.launcher() == str((CONFIGS / "zero2.yaml").resolve())
    monkeypatch.setenv(launch.ENV_CONFIG, "configs/accelerate/nope.yaml")
    with pytest.raises(FileNotFoundError, match="zero2.yaml"):
        launch.launcher()


def test_launched_processes_never_launch_again(monkeypatch):
    monkeypatch.setenv(launch.ENV_CONFIG, "zero2.yaml")
    monkeypatch.setenv(launch.ENV_CHILD, "1")
    assert launch.launcher() is None


def test_command_line():
    cmd = launch.command("/x/zero2.yaml", "/r/job.json", num_processes=4)
    assert cmd[:3] == [sys.executable, "-m", "accelerate.commands.launch"]
    assert cmd[cmd.index("--config_file") + 1] == "/x/zero2.yaml"
    assert cmd[cmd.index("--num_processes") + 1] == "4"
    assert cmd[-3:] == ["-m", "stepwiser_lib.engines.launch", "/r/job.json"]
    assert "--num_processes" not in launch.command("c.yaml", "j.json")


def test_training_entry_points_are_launchable():
    for fn, target in [(sft.sft, "stepwiser_lib.engines.sft:sft"),
                       (judge_train.train_grpo_judge, "stepwiser_lib.method.judge_train:train_grpo_judge"),
                       (discriminative.train_disc_judge,
                        "stepwiser_lib.method.discriminative:train_disc_judge")]:
        assert fn.launch_target == target


def test_non_data_arguments_fail_clearly():
    with pytest.raises(TypeError, match="plain data"):
        launch._jsonable({"reward_funcs": [len]}, "x")
    assert launch._jsonable({"p": Path("/a")}, "x") == {"p": "/a"}


@pytest.mark.parametrize("name", ["cpu.yaml", "ddp.yaml", "zero2.yaml"])
def test_shipped_configs_parse_with_accelerate(name):
    from accelerate.commands.config.config_args import load_config_from_file

    c = load_config_from_file(str(CONFIGS / name))
    if name == "zero2.yaml":
        assert str(c.distributed_type).endswith("DEEPSPEED")
        assert c.deepspeed_config["zero_stage"] == 2 and c.mixed_precision == "bf16"
    if name == "cpu.yaml":
        assert c.use_cpu and c.num_processes == 1


def test_sft_through_accelerate_launch_on_cpu(toy_base_dir, tmp_path, monkeypatch):
    """The whole launch path for real: job file, `accelerate launch` child, result back."""
    monkeypatch.setenv(launch.ENV_CONFIG, str(CONFIGS / "cpu.yaml"))
    monkeypatch.delenv(launch.ENV_CHILD, raising=False)
    recs = [{"prompt": f"a = {i}. b = a + 1. Find b.", "completion": f"b = {i + 1}"} for i in range(8)]
    monkeypatch.setattr(launch, "SPILL_RECORDS", 4)  # 8 records: spilled to a file beside the job
    r = sft.sft(toy_base_dir, recs, tmp_path / "out", SFTSettings(max_steps=2, global_batch=4), progress=False)
    assert r["steps"] == 2 and r["records"] == 8
    assert (Path(r["model_dir"]) / "config.json").exists()
    job = json.loads((tmp_path / "out" / "launch_job.json").read_text())
    assert job["target"] == "stepwiser_lib.engines.sft:sft"
    assert job["args"][1] == {"__jsonl__": str(tmp_path / "out" / "launch_arg1.jsonl")}  # a path, not records
    assert job["args"][3]["global_batch"] == 4  # the typed settings travel as a dict
