"""Run a training stage in-process or under ``accelerate launch`` (multi-GPU, DeepSpeed ZeRO).

The notebooks call the training functions directly (:func:`stepwiser_lib.engines.sft.sft`,
:func:`stepwiser_lib.method.judge_train.train_grpo_judge`, :func:`stepwiser_lib.method.discriminative.train_disc_judge`).
Each is decorated with :func:`launchable`: with ``STEPWISER_LAUNCHER`` unset (CPU, Colab, one GPU)
the call runs in the notebook's process as before; with ``STEPWISER_LAUNCHER`` set to an accelerate
config file (``configs/accelerate/*.yaml``) the call is written to a job file and re-run by

    accelerate launch --config_file <config> -m stepwiser_lib.engines.launch <job.json>

on every process; the main process writes the function's result next to the job and the
notebook reads it back. Trainers (TRL's ``SFTTrainer``/``GRPOTrainer``) pick up the distributed
set-up and the DeepSpeed config from accelerate, the way open-r1 launches TRL. ``make reproduce
LAUNCHER=configs/accelerate/zero2.yaml`` sets the variable for every notebook.  # [not in paper]
"""

from __future__ import annotations

import dataclasses
import functools
import importlib
import json
import os
import shlex
import shutil
import subprocess
import sys
import time
import uuid
from collections.abc import Sequence
from pathlib import Path

from ..core.io import loads_strict, records_digest

ENV_CONFIG = "STEPWISER_LAUNCHER"  # accelerate config file; unset or "inline" = run in-process
ENV_PROCS = "STEPWISER_NUM_PROCESSES"  # optional override of the config's num_processes
ENV_CHILD = "STEPWISER_IN_LAUNCH"  # set in launched processes, so they do not launch again
ENV_NODES = "STEPWISER_NODES"  # machines to train on (SLURM allocation); unset or 1: this machine only
ENV_MAIN_ADDRESS = "STEPWISER_MAIN_ADDRESS"  # rank 0's host (default: the first node of the SLURM job)
ENV_MAIN_PORT = "STEPWISER_MAIN_PORT"  # rank 0's port (default 29500)
CONFIG_DIR = Path(__file__).resolve().parents[2] / "configs" / "accelerate"


def launcher() -> str | None:
    """The accelerate config file to launch training with, or None to run in-process."""
    cfg = os.environ.get(ENV_CONFIG, "").strip()
    if not cfg or cfg == "inline" or os.environ.get(ENV_CHILD):
        return None
    p = Path(cfg)
    if not p.is_absolute() and not p.exists() and (CONFIG_DIR / p.name).exists():
        p = CONFIG_DIR / p.name  # "zero2.yaml" is enough
    if not p.exists():
        raise FileNotFoundError(
            f"{ENV_CONFIG}={cfg!r}: no such accelerate config; shipped ones: "
            f"{sorted(x.name for x in CONFIG_DIR.glob('*.yaml'))}"
        )
    return str(p.resolve())


def command(
    config_file: str,
    job_file: str | Path,
    num_processes: int | None = None,
    nodes: int = 1,
    main_address: str = "",
    main_port: int = 29500,
) -> list[str]:
    """The ``accelerate launch`` command line for one job (module form, so no PATH lookup).

    With ``nodes`` > 1 (``STEPWISER_NODES``, inside a SLURM allocation) the command is one task per
    node under ``srun``, each an ``accelerate launch`` with ``--num_machines``, its own
    ``--machine_rank`` (``$SLURM_NODEID``, expanded on that node) and rank 0's address; the job
    and result files must then be on storage every node sees (the output root). ``num_processes``
    counts every process of every node, as accelerate counts them."""
    cmd = [sys.executable, "-m", "accelerate.commands.launch", "--config_file", str(config_file)]
    if num_processes:
        cmd += ["--num_processes", str(int(num_processes))]
    if nodes > 1:
        if not main_address:
            raise ValueError(
                f"a launch on {nodes} nodes needs rank 0's address: set {ENV_MAIN_ADDRESS} "
                "(inside a SLURM job it is the first node of $SLURM_JOB_NODELIST)"
            )
        cmd += [
            "--num_machines",
            str(nodes),
            "--machine_rank",
            "$SLURM_NODEID",
            "--main_process_ip",
            main_address,
            "--main_process_port",
            str(int(main_port)),
            "--rdzv_backend",
            "static",
            "--same_network",
        ]
        inner = " ".join(
            shlex.quote(c) if c != "$SLURM_NODEID" else c
            for c in cmd + ["-m", "stepwiser_lib.engines.launch", str(job_file)]
        )
        per_node = (
            [f"--gpus-per-task={int(num_processes) // nodes}"] if num_processes else []
        )  # each task: its node's GPUs
        # and its node's CPUs: the one task per node starts every rank of that node (with their
        # dataloaders and colocated engines), and srun would otherwise give it the job's
        # --cpus-per-task, one GPU worker's share (issue 48)
        cpus = os.environ.get("SLURM_CPUS_ON_NODE", "").strip()
        per_node += [f"--cpus-per-task={int(cpus)}"] if cpus.isdigit() else []
        return ["srun", f"--nodes={nodes}", "--ntasks-per-node=1", *per_node, "bash", "-c", inner]
    return cmd + ["-m", "stepwiser_lib.engines.launch", str(job_file)]


def per_node_processes(config_file: str) -> int:
    """The processes (GPUs) of one machine in an accelerate config: ``num_processes``, which
    accelerate counts over every machine, divided by ``num_machines``."""
    import yaml

    c = yaml.safe_load(Path(config_file).read_text())
    return int(c.get("num_processes", 1)) // max(1, int(c.get("num_machines", 1)))


def world_size(config_file: str) -> int:
    """The processes a launch with ``config_file`` starts, every node's together, as the trainers
    divide their batches by them: ``STEPWISER_NUM_PROCESSES`` when set; on ``STEPWISER_NODES`` > 1
    nodes, one machine's processes (:func:`per_node_processes`) times the nodes; else the config's
    ``num_processes``. One function for the launch and for the checks made before it (issue 48),
    so that ``--check`` divides by the number the run will divide by."""
    import yaml

    if os.environ.get(ENV_PROCS):
        return int(os.environ[ENV_PROCS])
    nodes = int(os.environ.get(ENV_NODES, "1") or 1)
    if nodes > 1:  # the config's num_processes is one machine's share times its num_machines
        return per_node_processes(config_file) * nodes
    return int((yaml.safe_load(Path(config_file).read_text()) or {}).get("num_processes", 1))


def main_address() -> str:
    """Rank 0's host: ``STEPWISER_MAIN_ADDRESS``, else the first node of the SLURM job, else ""."""
    if os.environ.get(ENV_MAIN_ADDRESS):
        return os.environ[ENV_MAIN_ADDRESS]
    nodelist = os.environ.get("SLURM_JOB_NODELIST", "")
    if not nodelist:
        return ""
    out = subprocess.run(["scontrol", "show", "hostnames", nodelist], capture_output=True, text=True, check=True)
    return out.stdout.split()[0]


def _jsonable(x, where: str):
    try:
        return json.loads(json.dumps(x, default=lambda o: str(o) if isinstance(o, Path) else _bad(o)))
    except TypeError as e:
        raise TypeError(
            f"{where}: cannot pass {e} to a launched process; pass plain data "
            f"(records, numbers, paths) or unset {ENV_CONFIG}"
        ) from None


def _bad(o):
    if dataclasses.is_dataclass(o) and not isinstance(o, type):  # typed settings travel as dicts
        return dataclasses.asdict(o)
    raise TypeError(type(o).__name__)


def launchable(fn):
    """Decorator: run ``fn`` in-process, or under ``accelerate launch`` when a launcher is set.

    The wrapped function's arguments must be JSON data (records, numbers, strings, paths) and
    its result a JSON-able dict; its first ``out_dir``-like argument names where the job goes.
    """
    target = f"{fn.__module__}:{fn.__qualname__}"

    @functools.wraps(fn)
    def wrapper(*args, **kw):
        cfg = launcher()
        if cfg is None:
            return fn(*args, **kw)
        out_dir = kw.get("out_dir") or (args[2] if len(args) > 2 else None)
        if out_dir is None:
            raise TypeError(f"{target}: a launched call needs its out_dir (third argument)")
        out_dir = Path(out_dir)
        return run_launched(target, args, kw, cfg, out_dir)

    wrapper.launch_target = target
    return wrapper


#: Record lists longer than this leave the job file: every rank parses the job file, and
#: paper-scale training sets are millions of records (3.3 M RL examples at paper, 8 ranks a node).
SPILL_RECORDS = 200
_SPILLED = "__records__"
#: The process group's timeout when a launched stage starts it to map its records: transformers'
#: ``TrainingArguments.ddp_timeout`` default, which the trainer would have used (it reuses a group
#: that exists, whatever its own setting).
DDP_TIMEOUT_S = 1800


class Records(Sequence):
    """Records a launch spilled: an Arrow table of one JSON string per record, written once by the
    notebook's process and memory-mapped by every rank (``datasets.load_from_disk``), so the ranks
    of a node share one copy in the page cache and no rank holds every record as a dict.

    A read-only sequence: ``len``, indexing and iteration parse one record at a time (refusing NaN,
    as :func:`stepwiser_lib.core.io.iter_jsonl` does). The stage functions turn it into their
    training set with :func:`to_dataset`. ``digest`` is :func:`stepwiser_lib.core.io.records_digest`
    of the records, computed when they were written; ``maps`` the folder of this launch's mapped
    rows (removed when the launch ends). [not in paper]
    """

    def __init__(self, folder: str | Path, digest: str | None = None, maps: str | Path | None = None):
        from datasets import load_from_disk

        self.folder = Path(folder)
        self.table = load_from_disk(str(self.folder))
        self.digest = digest
        self.maps = Path(maps) if maps else self.folder.parent / "maps"
        self._mapped = 0

    def __len__(self) -> int:
        return self.table.num_rows

    def __getitem__(self, i):
        if isinstance(i, slice):
            return [self[j] for j in range(*i.indices(len(self)))]
        return loads_strict(self.table[i]["record"])

    def __iter__(self):
        for batch in self.table.iter(batch_size=1024):
            yield from (loads_strict(x) for x in batch["record"])

    def map_rows(self, row_fn):
        """``datasets.Dataset`` of ``row_fn(record)``, the rows in the records' order: each of the
        launch's N ranks maps a contiguous 1/N of the table into a file of this launch's ``maps``
        folder, then every rank memory-maps the N files. No rank waits while another maps all of
        it, and no cache outlives the launch (file names and fingerprints come from the launch,
        not from hashing ``row_fn``, so an edited prompt never reads old rows)."""
        from datetime import timedelta

        from accelerate import PartialState
        from datasets import Dataset, concatenate_datasets

        state = PartialState(timeout=timedelta(seconds=DDP_TIMEOUT_S))  # an existing group is kept
        k, self._mapped = self._mapped, self._mapped + 1  # every rank maps in the same order
        shards = max(1, min(state.num_processes, len(self)))
        self.maps.mkdir(parents=True, exist_ok=True)
        files = [self.maps / f"rows{k}-{i}-of-{shards}.arrow" for i in range(shards)]

        def rows(batch):
            out = [row_fn(loads_strict(x)) for x in batch["record"]]
            return {c: [r[c] for r in out] for c in out[0]}

        if state.process_index < shards:
            self.table.shard(shards, state.process_index, contiguous=True).map(
                rows,
                batched=True,
                batch_size=256,
                remove_columns=["record"],
                cache_file_name=str(files[state.process_index]),
                new_fingerprint=f"{self.maps.name}-{k}-{state.process_index}",
                load_from_cache_file=False,
            )
        state.wait_for_everyone()
        return concatenate_datasets([Dataset.from_file(str(f)) for f in files])


def to_dataset(records, row_fn):
    """The ``datasets.Dataset`` of ``row_fn(r)`` for each record. In-process (a list):
    ``Dataset.from_list``. In a launched job (:class:`Records`): mapped from the memory-mapped table
    (:meth:`Records.map_rows`), never a list of every record in each rank (real-path reading 3,
    item 18). Both give the same rows in the same order."""
    if isinstance(records, Records):
        return records.map_rows(row_fn)
    from datasets import Dataset

    return Dataset.from_list([row_fn(r) for r in records])


def _spill(x, folder: Path, maps: Path | None = None):
    """A long list of records as an Arrow table named by its content under ``folder``; written once
    (a relaunch of the same job reuses it), atomically (a cut write leaves no table, a concurrent
    writer's finished table is kept)."""
    if not (isinstance(x, list) and len(x) > SPILL_RECORDS and all(isinstance(r, dict) for r in x)):
        return x
    from datasets import Dataset

    digest = records_digest(x)
    path = folder / f"records-{digest}"
    if not (path / "dataset_info.json").exists():
        tmp = folder / f".tmp-records-{digest}-{os.getpid()}"
        shutil.rmtree(tmp, ignore_errors=True)
        Dataset.from_dict({"record": [json.dumps(r, ensure_ascii=False) for r in x]}).save_to_disk(str(tmp))
        try:
            os.replace(tmp, path)
        except OSError:  # another launch wrote the same records first: keep its table
            shutil.rmtree(tmp, ignore_errors=True)
            if not (path / "dataset_info.json").exists():
                raise
    return {_SPILLED: str(path), "records": len(x), "digest": digest, "maps": str(maps or folder / "maps")}


def _unspill(x):
    if isinstance(x, dict) and set(x) == {_SPILLED, "records", "digest", "maps"}:
        r = Records(x[_SPILLED], x["digest"], x["maps"])
        if len(r) != x["records"]:
            raise ValueError(f"{x[_SPILLED]}: {len(r)} records, the job says {x['records']}")
        return r
    return x


def _prune_spills(folder: Path, keep: list) -> None:
    """Remove what earlier launches left in ``folder``: record tables this job does not read, cut
    writes, and mapped rows (a launch's own are removed when it ends)."""
    keep = {Path(a[_SPILLED]).name for a in keep if isinstance(a, dict) and _SPILLED in a}
    for p in folder.glob("*") if folder.is_dir() else []:
        if p.is_dir() and p.name not in keep:
            shutil.rmtree(p, ignore_errors=True)


def run_launched(target: str, args, kw, config_file: str, out_dir: Path) -> dict:
    """Write the job, run it under accelerate, return the main process's result."""
    out_dir.mkdir(parents=True, exist_ok=True)
    job = out_dir / "launch_job.json"
    res = out_dir / "launch_result.json"
    res.unlink(missing_ok=True)
    data = out_dir / "launch_data"
    maps = data / f"maps-{uuid.uuid4().hex[:12]}"  # this launch's mapped rows (Records.map_rows)
    args = [_spill(a, data, maps) for a in args]
    kw = {k: _spill(v, data, maps) for k, v in kw.items()}
    _prune_spills(data, [*args, *kw.values()])
    job.write_text(
        json.dumps(
            {
                "target": target,
                "args": _jsonable(list(args), target),
                "kwargs": _jsonable(kw, target),
                "result": str(res),
            }
        )
    )
    nodes = int(os.environ.get(ENV_NODES, "1") or 1)
    n = world_size(config_file) if (nodes > 1 or os.environ.get(ENV_PROCS)) else None
    cmd = command(
        config_file,
        job,
        n,
        nodes=nodes,
        main_address=main_address() if nodes > 1 else "",
        main_port=int(os.environ.get(ENV_MAIN_PORT, 29500)),
    )
    print("[launch]", " ".join(cmd), flush=True)
    t0 = time.time()
    env = {**os.environ, ENV_CHILD: "1"}
    # Stream the children's output line by line, so a notebook cell shows training progress.
    try:
        with subprocess.Popen(
            cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, bufsize=1
        ) as proc:
            for line in proc.stdout:
                print(line, end="", flush=True)
    finally:
        shutil.rmtree(maps, ignore_errors=True)  # the ranks' mapped rows end with the launch
    if proc.returncode != 0 or not res.exists():
        raise RuntimeError(f"launched job {target} failed (exit {proc.returncode}); job file {job}")
    out = json.loads(res.read_text())
    print(f"[launch] {target} done in {time.time() - t0:.0f} s", flush=True)
    return out


def _is_main() -> bool:
    return int(os.environ.get("RANK", "0")) == 0


def main(argv: list[str] | None = None) -> None:
    """Entry point of a launched process: ``python -m stepwiser_lib.engines.launch job.json``."""
    argv = sys.argv[1:] if argv is None else argv
    if len(argv) != 1:
        raise SystemExit("usage: accelerate launch ... -m stepwiser_lib.engines.launch <job.json>")
    job = json.loads(Path(argv[0]).read_text())
    mod, name = job["target"].split(":")
    fn = getattr(importlib.import_module(mod), name)
    fn = getattr(fn, "__wrapped__", fn)  # the undecorated function: never launch again
    os.environ[ENV_CHILD] = "1"
    result = fn(*map(_unspill, job["args"]), **{k: _unspill(v) for k, v in job["kwargs"].items()})
    if _is_main():
        Path(job["result"]).write_text(json.dumps(result, default=str))


if __name__ == "__main__":
    main()
