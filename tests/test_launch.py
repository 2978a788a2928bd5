"""Training under ``accelerate launch`` (stepwiser_lib/engines/launch.py, configs/accelerate/)."""

import json
import os
import sys
from pathlib import Path

import pytest

from stepwiser_lib.engines import launch, sft
from stepwiser_lib.engines.trainers import SFTSettings
from stepwiser_lib.method import discriminative, judge_train

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
    for fn, target in [
        (sft.sft, "stepwiser_lib.engines.sft:sft"),
        (judge_train.train_grpo_judge, "stepwiser_lib.method.judge_train:train_grpo_judge"),
        (discriminative.train_disc_judge, "stepwiser_lib.method.discriminative:train_disc_judge"),
    ]:
        assert fn.launch_target == target


def test_non_data_arguments_fail_clearly():
    with pytest.raises(TypeError, match="plain data"):
        launch._jsonable({"reward_funcs": [len]}, "x")
    assert launch._jsonable({"p": Path("/a")}, "x") == {"p": "/a"}


@pytest.mark.parametrize("name", ["cpu.yaml", "cpu2.yaml", "ddp.yaml", "zero2.yaml", "zero2_multinode.yaml"])
def test_shipped_configs_parse_with_accelerate(name):
    from accelerate.commands.config.config_args import load_config_from_file

    c = load_config_from_file(str(CONFIGS / name))
    if name.startswith("zero2"):
        assert str(c.distributed_type).endswith("DEEPSPEED")
        assert c.deepspeed_config["zero_stage"] == 2 and c.mixed_precision == "bf16"
        assert launch.per_node_processes(str(CONFIGS / name)) == 8  # GPUs per box, for STEPWISER_NODES
    if name == "zero2_multinode.yaml":
        assert (c.num_machines, c.num_processes, c.main_process_port) == (2, 16, 29500)
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
    spilled = job["args"][1]  # a table's path, not records
    assert spilled["records"] == 8 and Path(spilled["__records__"]).parent == tmp_path / "out" / "launch_data"
    assert not list((tmp_path / "out" / "launch_data").glob("maps-*"))  # the ranks' mapped rows end with the launch
    assert job["args"][3]["global_batch"] == 4  # the typed settings travel as a dict


def test_spilled_records_are_one_mapped_table_that_every_rank_reads_lazily_item_18(tmp_path):
    """Real-path reading 3, item 18: a launch's long record list was a JSONL file that every rank
    parsed into dicts, rewritten by every launch. Now it is an Arrow table named by its content,
    written once, memory-mapped by each rank (``Records``), and each stage's training set is mapped
    from it (``to_dataset``, a contiguous share per rank): the same rows in the same order as
    in-process, and the same checkpoint key (``records_digest``)."""
    from stepwiser_lib.core import io

    recs = [
        {"problem": f"p{i}", "history": [f"h{i}"] * (i % 3), "chunk": "c", "label": i % 3 == 0, "q": None}
        for i in range(9)
    ]
    recs[4]["extra"] = {"nested": [1, 2]}  # records need not share one schema: they travel as JSON text
    data = tmp_path / "launch_data"
    assert launch._spill(recs[:3], data) == recs[:3]  # short lists stay in the job file
    old = launch.SPILL_RECORDS
    launch.SPILL_RECORDS = 4
    try:
        job = launch._jsonable(launch._spill(recs, data, data / "maps-a"), "t")
        table = Path(job["__records__"])
        stamp = (table / "dataset_info.json").stat().st_mtime_ns
        assert launch._spill(recs, data, data / "maps-a") == job  # a relaunch reuses the table
        assert (table / "dataset_info.json").stat().st_mtime_ns == stamp
        other = launch._spill(recs[1:], data, data / "maps-b")  # an earlier job's table ...
        launch._prune_spills(data, [job])  # ... is removed when a job that does not read it launches
        assert not Path(other["__records__"]).exists() and table.exists()
        nan = launch._spill([*recs, {"label": float("nan")}], data)
    finally:
        launch.SPILL_RECORDS = old
    r = launch._unspill(job)
    assert isinstance(r, launch.Records) and r.table.cache_files  # memory-mapped from disk, not loaded
    assert len(r) == 9 and list(r) == recs and r[4] == recs[4] and r[2:4] == recs[2:4] and r[9:] == []
    assert io.records_digest(r) == io.records_digest(recs) == job["digest"]
    with pytest.raises(ValueError, match="NaN"):  # read as strictly as a JSONL file is
        list(launch._unspill(nan))
    with pytest.raises(ValueError, match="9 records, the job says 10"):
        launch._unspill({**job, "records": 10})

    def row(e):
        return {"text": e["problem"] + "|".join(e["history"]), "label": bool(e["label"])}

    assert launch.to_dataset(r, row).to_list() == launch.to_dataset(recs, row).to_list() == [row(e) for e in recs]
    assert sorted(p.name for p in (data / "maps-a").iterdir()) == ["rows0-0-of-1.arrow"]  # one process: one share
    # GRPO's balanced steps reorder a mapped set by position, as they reordered the list
    mapped = judge_train.grpo_dataset(r)
    order = judge_train.balanced_indices(mapped["label"], 4, seed=2)
    assert (
        mapped.select(order).to_list()
        == judge_train.grpo_dataset(judge_train.balanced_order(recs, 4, seed=2)).to_list()
    )


def test_balanced_order_is_the_order_it_was():
    """The index form of the balanced draw (for mapped training sets) keeps the order the issue-47
    runs trained in: pinned from the list form before the change."""
    ex = [{"i": i, "label": i % 3 == 0} for i in range(14)]
    assert [e["i"] for e in judge_train.balanced_order(ex, 4, seed=2)] == [13, 9, 11, 0, 1, 5, 3, 6, 8, 12, 4, 10, 2, 7]
    assert [e["i"] for e in judge_train.balanced_order(ex, 5, seed=0)] == [4, 1, 6, 3, 9, 11, 2, 12, 8, 0, 7, 10, 13, 5]


@pytest.mark.slow  # 35 s on 2 cores: two launched processes train SFT and GRPO (make test-slow; make test stays under 15 minutes)
def test_two_processes_train_as_one_sft_and_grpo(toy_base_dir, tmp_path, monkeypatch):
    """Issue 34: the multi-process path on two CPU processes (``configs/accelerate/cpu2.yaml``,
    gloo) against one (``cpu.yaml``). SFT with one global batch of 8 split over 2 processes follows
    the 1-process loss curve to float rounding (gloo sums in another order: measured differences
    below 1e-6). GRPO samples each group from its own stream (``judge_train.group_seeds``), so 2
    processes draw the completions 1 process draws: the same rewards at every step, and a loss
    curve within 1e-4 (batches of other shapes round differently; measured in LAB_LOG.md)."""
    monkeypatch.delenv(launch.ENV_CHILD, raising=False)
    monkeypatch.setenv("PYTHONPATH", str(Path(__file__).parent))  # the launched processes import fakes
    monkeypatch.setattr(
        launch, "SPILL_RECORDS", 4
    )  # the records travel as a table each rank maps its share of (item 18)
    recs = [{"prompt": f"What is {a} + {a}?", "completion": f"{a} + {a} = {2 * a}."} for a in range(32)]
    s = SFTSettings(max_steps=6, global_batch=8, lr=1e-3, max_length=128)
    from stepwiser_lib.engines.trainers import GRPOSettings
    from stepwiser_lib.toy import toyworld as tw

    ex = [
        {"problem": p.text, "history": [], "chunk": p.text.split(".")[0], "label": i % 2 == 0}
        for i, p in enumerate(tw.generate_problems("label", 8, seed=3))
    ]
    curves, grpo = {}, {}
    for cfg in ("cpu.yaml", "cpu2.yaml"):
        monkeypatch.setenv(launch.ENV_CONFIG, str(CONFIGS / cfg))
        r = sft.sft(toy_base_dir, recs, tmp_path / cfg, s, progress=False)
        curves[r["processes"]] = [loss for _, loss in r["loss_curve"]]
        g = judge_train.train_grpo_judge(
            toy_base_dir,
            ex,
            tmp_path / cfg / "grpo",
            GRPOSettings(
                steps=3, prompts_per_step=2, group_size=4, max_completion=16, eval_every=0, lr=1e-3, balanced_steps=True
            ),
            progress=False,
            reward_funcs=["fakes:length_reward"],
        )  # a reward that varies, by name (the processes import it)
        grpo[g["processes"]] = g
    assert set(curves) == {1, 2} and len(curves[1]) == 6
    assert curves[2] == pytest.approx(curves[1], rel=1e-5)
    assert grpo[2]["steps"] == 3 and grpo[2]["batches"]["per_device_train_batch_size"] == 4
    one, two = ([h for h in grpo[k]["log_history"] if "loss" in h] for k in (1, 2))
    assert len(one) == len(two) == 3
    print("GRPO 1 vs 2 processes:", [(a["loss"], b["loss"], a["reward"], b["reward"]) for a, b in zip(one, two)])
    assert [h["reward"] for h in two] == pytest.approx([h["reward"] for h in one], abs=1e-6)  # the same completions
    assert [h["completions/mean_length"] for h in two] == [h["completions/mean_length"] for h in one]
    assert [h["loss"] for h in two] == pytest.approx([h["loss"] for h in one], abs=1e-4)


def test_a_launch_on_several_nodes_is_one_srun_task_per_node(monkeypatch, tmp_path):
    """Issue 34: STEPWISER_NODES=N inside a SLURM job: one ``accelerate launch`` per node under
    ``srun``, each with its node's rank, rank 0's address and every node's processes. What runs
    here is the command; a real multi-node run is not tested (no cluster)."""
    import shlex

    monkeypatch.delenv("SLURM_CPUS_ON_NODE", raising=False)
    cmd = launch.command(str(CONFIGS / "zero2.yaml"), "/shared/runs/job.json", 16, nodes=2, main_address="gpu-001")
    assert cmd[:6] == ["srun", "--nodes=2", "--ntasks-per-node=1", "--gpus-per-task=8", "bash", "-c"]
    inner = shlex.split(cmd[6].replace("$SLURM_NODEID", "NODEID"))
    assert inner[inner.index("--num_machines") + 1] == "2" and inner[inner.index("--machine_rank") + 1] == "NODEID"
    assert (
        inner[inner.index("--main_process_ip") + 1] == "gpu-001" and inner[inner.index("--num_processes") + 1] == "16"
    )
    assert inner[-3:] == ["-m", "stepwiser_lib.engines.launch", "/shared/runs/job.json"]
    assert launch.per_node_processes(str(CONFIGS / "zero2.yaml")) == 8
    monkeypatch.delenv(launch.ENV_MAIN_ADDRESS, raising=False)
    monkeypatch.delenv("SLURM_JOB_NODELIST", raising=False)
    with pytest.raises(ValueError, match="needs rank 0's address"):
        launch.command("c.yaml", "j.json", nodes=2, main_address=launch.main_address())


def test_workers_run_each_generation_stage_and_07_in_two_rounds(monkeypatch, tmp_path, capsys):
    """``make workers STAGE=S WORKERS=K`` (issue 34): the stage's worker CLI, once per worker, each
    with its GPU; 07 in two rounds (its judges score once every sample is on disk); a failed worker
    is named and stops the next round."""
    import subprocess

    from stepwiser_lib.core import paths
    from stepwiser_lib.tools import workers

    cmd = workers.worker_command("paper", 3, 8, stage="05")
    assert cmd[1:] == [
        "-m",
        "stepwiser_lib.method.processbench",
        "--profile",
        "paper",
        "--worker",
        "3",
        "--workers",
        "8",
    ]
    assert workers.worker_command("smoke", 0, 2, out="x")[-2:] == ["--out", "x"]
    with pytest.raises(SystemExit, match="no data-parallel stage '04'"):
        workers.worker_command("smoke", 0, 2, stage="04")
    with pytest.raises(SystemExit, match="stage 02 only"):
        workers.worker_command("smoke", 0, 2, out="x", stage="07")
    monkeypatch.setattr(paths, "run_dir", lambda p: tmp_path / p)
    started = []

    class Proc:
        pid = 0

        def __init__(self, cmd, env=None, **kw):
            started.append((cmd[2], cmd[cmd.index("--worker") + 1], env.get("CUDA_VISIBLE_DEVICES")))
            threads.append(env.get("OMP_NUM_THREADS"))
            self.returncode = 1 if fail and cmd[cmd.index("--worker") + 1] == "1" else 0

        def wait(self):
            return self.returncode

    fail, threads = False, []
    monkeypatch.setattr(subprocess, "Popen", Proc)
    monkeypatch.setattr(os, "cpu_count", lambda: 8)
    monkeypatch.delenv("OMP_NUM_THREADS", raising=False)
    assert workers.run_workers("smoke", 2, ["4", "5"], stage="07") == 0
    assert started == [("stepwiser_lib.method.rsft", "0", "4"), ("stepwiser_lib.method.rsft", "1", "5")] * 2
    assert (tmp_path / "smoke" / "workers" / "07_worker_1.log").exists()
    started.clear()
    fail = True
    assert threads == [None] * 4  # a GPU each: the threads are left alone
    threads.clear()
    assert workers.run_workers("smoke", 2, None, stage="07") == 1 and len(started) == 2  # no second round
    assert threads == ["4", "4"]  # a CPU machine: a share of the cores each, never oversubscribed
    assert "FAILED: worker(s) [1]" in capsys.readouterr().err


def test_workers_get_a_gpu_each_on_a_box_that_sets_no_visible_devices_N1(monkeypatch, tmp_path):
    """Real-path reading 3, N1: ``make workers`` passes no ``--gpus`` and an ordinary 8-GPU box
    leaves ``CUDA_VISIBLE_DEVICES`` unset; each worker must still see a device of its own (a TP-1
    vLLM engine takes the first visible device, so eight workers that see all eight share GPU 0
    and seven fail at start). A scheduler's binding (the variable set) is kept as it is."""
    import subprocess

    import torch

    from stepwiser_lib.core import paths
    from stepwiser_lib.tools import workers

    monkeypatch.setattr(paths, "run_dir", lambda p: tmp_path / p)
    seen = []

    class Proc:
        returncode, pid = 0, 0

        def __init__(self, cmd, env=None, **kw):
            seen.append(env.get("CUDA_VISIBLE_DEVICES"))

        def wait(self):
            return 0

    monkeypatch.setattr(subprocess, "Popen", Proc)
    monkeypatch.delenv("CUDA_VISIBLE_DEVICES", raising=False)
    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    monkeypatch.setattr(torch.cuda, "device_count", lambda: 2)
    assert workers.main(["--stage", "05", "--profile", "smoke", "--workers", "2"]) == 0
    assert seen == ["0", "1"]  # distinct devices
    with pytest.raises(SystemExit, match="3 workers but only GPUs"):
        workers.main(["--stage", "05", "--profile", "smoke", "--workers", "3"])
    seen.clear()
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "3,5")  # SLURM's --gpus-per-task binding, or a user's
    assert workers.main(["--stage", "05", "--profile", "smoke", "--workers", "2"]) == 0
    assert seen == ["3", "5"]
    seen.clear()
    monkeypatch.delenv("CUDA_VISIBLE_DEVICES")
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)  # a CPU machine: a share of the cores each
    assert workers.main(["--stage", "05", "--profile", "smoke", "--workers", "2"]) == 0
    assert seen == [None, None]


def test_the_slurm_script_is_bash_and_names_what_exists():
    """``configs/slurm/reproduce.sbatch`` cannot run here (no cluster): it parses as bash, every
    module it starts is a worker CLI of :data:`stepwiser_lib.tools.workers.STAGES` (or the runner
    and README writer), and every accelerate config it names is shipped."""
    import importlib
    import re
    import subprocess

    from stepwiser_lib.tools import workers

    script = CONFIGS.parents[1] / "configs" / "slurm" / "reproduce.sbatch"
    subprocess.run(["bash", "-n", str(script)], check=True)
    text = script.read_text()
    mods = {m for m in re.findall(r"-m (stepwiser_lib\.[\w.]+)", text) if not m.endswith(".")}
    mods |= {f"stepwiser_lib.method.{m}" for m in re.findall(r"for module in ([\w ]+); do", text)[0].split()}
    assert {m for m, _ in workers.STAGES.values()} <= mods
    for m in mods:
        importlib.import_module(m)
    for cfg in re.findall(r"configs/accelerate/([\w.]+\.yaml)", text):
        assert (CONFIGS / cfg).exists(), cfg


def test_set_threads_keeps_a_workers_share(monkeypatch):
    import torch

    from stepwiser_lib.engines import models

    before = torch.get_num_threads()
    try:
        monkeypatch.setenv("OMP_NUM_THREADS", "1")
        assert models.set_threads() == 1 and torch.get_num_threads() == 1
        monkeypatch.delenv("OMP_NUM_THREADS")
        assert models.set_threads() == (os.cpu_count() or 1)
    finally:
        torch.set_num_threads(before)


def test_check_divides_every_batch_by_the_world_the_launch_will_have_1_to_8_nodes_N2(monkeypatch):
    """Issue 48 (N2): ``--check`` and the dry run divided the batches for one process, so at 3, 5,
    6 or 7 nodes of 8 GPUs every GRPO and SFT run of the paper profile failed when it started,
    about a day into the SLURM job. The check now divides by the launch's own world size
    (``launch.world_size``), and names the setting and the world. The table: the paper's GRPO
    update (1,024 prompts x 4 / 4 updates = 1,024 completions) divides by 8N GPUs at N = 1, 2, 4,
    8; its SFT global batch of 32 at N = 1, 2, 4."""
    from stepwiser_lib.core import config
    from stepwiser_lib.engines import launch
    from stepwiser_lib.tools import crosscheck

    nbs = config.list_notebooks()
    params = config.with_defaults(nbs, config.checked_parameters("paper", nbs))
    monkeypatch.delenv(launch.ENV_PROCS, raising=False)
    table = {}
    for nodes in range(1, 9):
        monkeypatch.setenv(launch.ENV_CONFIG, "zero2_multinode.yaml" if nodes > 1 else "zero2.yaml")
        monkeypatch.setenv(launch.ENV_NODES, str(nodes))
        world = crosscheck.training_world()
        assert world[0] == 8 * nodes  # one machine's 8 processes times the nodes, as the launch counts them
        found = crosscheck.problems(params, world)
        table[nodes] = (
            not any("04_judge_grpo" in f and "PROMPTS_PER_STEP or the number of GPUs" in f for f in found),
            not any("SFT_BATCH or the number of GPUs" in f for f in found),
        )
        assert all(f"at {8 * nodes} processes" in f for f in found)  # the world it failed at, named
        if nodes == 3:
            with pytest.raises(
                config.ConfigError, match=r"01_self_segmentation: SFT_BATCH / processes: 32 is not divisible by 24"
            ):
                crosscheck.check(params)
    assert table == {
        1: (True, True),
        2: (True, True),
        3: (False, False),
        4: (True, True),
        5: (False, False),
        6: (False, False),
        7: (False, False),
        8: (True, False),
    }
    monkeypatch.delenv(launch.ENV_CONFIG)  # in-process: one process, whatever NODES says
    assert crosscheck.training_world() == (1, "in-process")
    assert crosscheck.problems(params, crosscheck.training_world()) == []


def test_slurm_single_node_phases_run_as_their_own_jobs_and_training_gets_the_nodes_cpus_N3_N13(monkeypatch):
    """Issue 48 (N3, N13). The job log goes to the folder sbatch runs from (SLURM does not create
    a missing log folder, and ``runs/`` is not in a fresh clone). ``submit.sh`` chains five jobs,
    each after the last succeeded, with the one-node phases (01, final) on one node, so no job
    holds N nodes idle for a day; every phase it names is one the batch script runs. The
    training ``srun`` (one task per node that starts every rank of the node) asks for the node's
    CPUs, not the job's per-GPU-worker share."""
    import re
    import subprocess

    slurm = CONFIGS.parents[1] / "configs" / "slurm"
    sbatch, submit = (slurm / "reproduce.sbatch").read_text(), (slurm / "submit.sh").read_text()
    log = re.search(r"^#SBATCH --output=(\S+)$", sbatch, re.M).group(1)
    assert "/" not in log  # the submit folder, which exists
    subprocess.run(["bash", "-n", str(slurm / "submit.sh")], check=True)
    phases = re.search(r"for spec in ([^;]+); do", submit).group(1).split()
    assert [p.split(":") for p in phases] == [
        ["01", "1"],
        ["label", "$N"],
        ["train", "$N"],
        ["generate", "$N"],
        ["final", "1"],
    ]
    assert "--dependency=afterok:" in submit
    runs = set(re.findall(r"if run (\w+); then", sbatch))
    assert runs == {"01", "label", "train", "generate", "final"}
    # an unknown phase is refused, not skipped silently (a bash run of the script's phase guard)
    guard = sbatch[sbatch.index("phase=${PHASE:-all}") : sbatch.index("run() {")]
    bad = subprocess.run(
        ["bash", "-c", guard], env={"PHASE": "lable", "PATH": os.environ["PATH"]}, capture_output=True, text=True
    )
    assert bad.returncode == 2 and "PHASE=lable" in bad.stderr

    monkeypatch.setenv("SLURM_CPUS_ON_NODE", "64")
    cmd = launch.command(str(CONFIGS / "zero2.yaml"), "/shared/runs/job.json", 16, nodes=2, main_address="gpu-001")
    assert cmd[:5] == ["srun", "--nodes=2", "--ntasks-per-node=1", "--gpus-per-task=8", "--cpus-per-task=64"]


def test_a_stopped_launcher_stops_its_workers_and_a_failed_one_says_why_WK06_WK07_WK08(tmp_path, monkeypatch, capsys):
    """Issue 49 (reliability review 3): WK06, SIGTERM to ``make workers`` left its workers labelling
    as orphans; WK07, workers that refused their configuration were reported as "run it again",
    the cause only in their logs; WK08, a relative output root meant the checkout's folder to the
    workers (they start there) and the caller's to the launcher."""
    import signal
    import subprocess
    import sys

    from stepwiser_lib.core import paths
    from stepwiser_lib.tools import workers

    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv(paths.OUTPUT_ROOT_ENV, "out")  # relative: the caller's folder
    monkeypatch.setattr(workers, "visible_gpus", lambda given="": [])
    # real processes: each worker prints a configuration error and exits 2
    script = (
        "import sys; print('[labelling] configuration error: no chunk policy at X: run notebook 01 first'); sys.exit(2)"
    )
    monkeypatch.setattr(workers, "worker_command", lambda *a, **k: [sys.executable, "-c", script])
    envs = []
    real = subprocess.Popen

    def popen(cmd, env=None, **kw):
        envs.append(env[paths.OUTPUT_ROOT_ENV])
        return real(cmd, env=env, **kw)

    monkeypatch.setattr(subprocess, "Popen", popen)
    assert workers.main(["--stage", "02", "--profile", "smoke", "--workers", "2"]) == 2
    err = capsys.readouterr().err
    assert (
        "run notebook 01 first" in err and "a rerun as it is cannot help" in err and "run the same command" not in err
    )
    assert envs == [str(tmp_path / "out")] * 2  # pinned: the workers label where the caller meant
    # WK06: the launcher's SIGTERM reaches its workers, which would otherwise run on
    script = "import time; time.sleep(60)"
    monkeypatch.setattr(workers, "worker_command", lambda *a, **k: [sys.executable, "-c", script])
    started = []

    def popen_then_stop(cmd, env=None, **kw):
        p = real(cmd, env=env, **kw)
        started.append(p)
        if len(started) == 2:
            signal.raise_signal(signal.SIGTERM)  # as `kill <launcher>` once both have started
        return p

    monkeypatch.setattr(subprocess, "Popen", popen_then_stop)
    t0 = __import__("time").time()
    assert workers.main(["--stage", "02", "--profile", "smoke", "--workers", "2"]) == 128 + signal.SIGTERM
    assert __import__("time").time() - t0 < 30 and all(p.poll() is not None for p in started)
    assert "every worker was stopped too" in capsys.readouterr().err
