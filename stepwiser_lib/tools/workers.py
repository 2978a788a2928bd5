"""Data-parallel generation on one machine (issue 34): ``WORKERS`` processes of a stage's worker
CLI, one per GPU, each with its own engine and its share of the work, all writing one folder; the
notebook (``make reproduce``) then finds the shards on disk and joins them. The paper's labelling
(about 14 days on 8 A100) runs one engine per GPU this way instead of one engine on GPU 0::

    make workers STAGE=02 PROFILE=paper WORKERS=8     # then: make reproduce PROFILE=paper

The stages and their CLIs (:data:`STAGES`): 02 labelling (``stepwiser_lib.method.labelling``), 05
ProcessBench judging (``processbench``), 06 chunk-reset runs (``chunk_reset``) and 07 RS-FT
sampling and judge scoring (``rsft``, two rounds: the judges score once every sample is on disk).
On a cluster, ``configs/slurm/reproduce.sbatch`` starts the same workers as SLURM tasks over every
node. The results do not depend on the number of workers (tests compare 1 and 2 processes for
02, 05 and 06, and 1 and 2 in-process workers for 07).
"""

from __future__ import annotations

import argparse
import os
import signal
import subprocess
import sys
import time

from ..core import paths
from ..core.config import ConfigError

#: stage -> (its worker CLI module, how many rounds of workers it takes). 07's judges score the
#: samples of every worker, so its workers run twice: the first round samples, the second scores.
STAGES = {
    "02": ("stepwiser_lib.method.labelling", 1),
    "05": ("stepwiser_lib.method.processbench", 1),
    "06": ("stepwiser_lib.method.chunk_reset", 1),
    "07": ("stepwiser_lib.method.rsft", 2),
}


def worker_command(profile: str, worker: int, workers: int, out: str | None = None, stage: str = "02") -> list[str]:
    """One worker: the stage's CLI with its index (:data:`STAGES`); ``out`` (02 only): its folder."""
    if stage not in STAGES:
        raise SystemExit(f"[workers] no data-parallel stage {stage!r}; stages: {', '.join(STAGES)}")
    if out and stage != "02":
        raise SystemExit("[workers] --out is for stage 02 only (the others write notebook folders)")
    cmd = [
        sys.executable,
        "-m",
        STAGES[stage][0],
        "--profile",
        profile,
        "--worker",
        str(worker),
        "--workers",
        str(workers),
    ]
    return cmd + (["--out", str(out)] if out else [])


def run_workers(
    profile: str, workers: int, gpus: list[str] | None = None, out: str | None = None, stage: str = "02"
) -> int:
    """Start ``workers`` processes of ``stage``'s worker CLI (worker ``i`` sees GPU ``gpus[i]``
    when given), each logging to ``runs/<profile>/workers/<stage>_worker_<i>.log``; wait for all
    (twice for a stage of two rounds). Returns 0 when every one finished, else 1 after naming the
    failed workers and their logs (the shards they finished stay; a rerun computes only what is
    missing)."""
    for r in range(STAGES[stage][1] if stage in STAGES else 1):
        rc = _round(profile, workers, gpus, out, stage, r)
        if rc:
            return rc
    print(f"[workers] stage {stage}: make reproduce PROFILE={profile} now joins the shards", flush=True)
    return 0


#: Exit status of a worker CLI that refused its configuration before any work (a rerun cannot help).
CONFIG_ERROR = 2
#: Lines of a failed worker's log shown on the terminal.
LOG_TAIL = 6


def _round(profile, workers, gpus, out, stage, r) -> int:
    if gpus and len(gpus) < workers:
        raise SystemExit(f"[workers] {workers} workers but only GPUs {gpus}: give one GPU per worker")
    cmds = [worker_command(profile, i, workers, out, stage) for i in range(workers)]
    logs = paths.run_dir(profile) / "workers"
    logs.mkdir(parents=True, exist_ok=True)
    procs = []
    t0 = time.time()
    stopping = []

    def stop(signum, frame):  # a kill of the launcher (kill, timeout, a scheduler) stops its workers too
        stopping.append(signum)
        for _, p, _ in procs:
            if p.poll() is None:
                p.send_signal(signum)

    old = {s: signal.signal(s, stop) for s in (signal.SIGTERM, signal.SIGINT)}
    try:
        for i in range(workers):
            # one GPU each; on a CPU machine a share of the cores each (oversubscribed threads slow all of them)
            share = {"OMP_NUM_THREADS": str(max(1, (os.cpu_count() or 1) // workers))}
            env = {**os.environ, **({"CUDA_VISIBLE_DEVICES": gpus[i]} if gpus else share)}
            log = open(logs / f"{stage}_worker_{i}.log", "a" if r else "w")  # noqa: SIM115 - closed below
            procs.append(
                (i, subprocess.Popen(cmds[i], cwd=paths.ROOT, env=env, stdout=log, stderr=subprocess.STDOUT), log)
            )
            if stopping:  # the signal came while this one was starting
                procs[-1][1].send_signal(stopping[0])
            print(
                f"[workers] stage {stage}, round {r + 1}: worker {i} of {workers} started (pid {procs[-1][1].pid})"
                + (f" on GPU {gpus[i]}" if gpus else ""),
                flush=True,
            )
        failed = {}
        for i, p, log in procs:
            p.wait()
            log.close()
            if p.returncode != 0:
                failed[i] = p.returncode
            print(f"[workers] worker {i} exited {p.returncode} after {time.time() - t0:.0f} s", flush=True)
    finally:
        for s_, h in old.items():
            signal.signal(s_, h)
    if stopping:
        print(
            f"[workers] stopped by signal {stopping[0]}: every worker was stopped too; their finished shards are "
            "kept, and the same command computes the rest",
            file=sys.stderr,
        )
        return 128 + stopping[0]
    if failed:
        for i in failed:  # why, on the terminal (the cause was only in the logs)
            tail = (logs / f"{stage}_worker_{i}.log").read_text(errors="replace").strip().splitlines()[-LOG_TAIL:]
            print(f"[workers] worker {i} (exit {failed[i]}), the end of its log:", file=sys.stderr)
            for line in tail:
                print(f"    {line}", file=sys.stderr)
        if all(c == CONFIG_ERROR for c in failed.values()) and len(failed) == workers:
            print(
                f"[workers] every worker refused its configuration (above): fix it; a rerun as it is cannot help "
                f"(logs: {logs}/{stage}_worker_<i>.log)",
                file=sys.stderr,
            )
            return CONFIG_ERROR
        print(
            f"[workers] FAILED: worker(s) {sorted(failed)}; see {logs}/{stage}_worker_<i>.log. Their finished shards are "
            "kept: run the same command again to compute the rest",
            file=sys.stderr,
        )
        return 1
    print(f"[workers] stage {stage}, round {r + 1}: all {workers} done in {time.time() - t0:.0f} s", flush=True)
    return 0


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(
        description="Data-parallel generation: one process per GPU for notebook 02, 05, 06 or 07"
    )
    ap.add_argument("--stage", default="02", choices=sorted(STAGES), help="the notebook whose generation to run")
    ap.add_argument("--profile", default="tiny")
    ap.add_argument("--workers", type=int, default=1, help="processes, one per GPU")
    ap.add_argument(
        "--gpus",
        default="",
        help="comma-separated GPU ids, one per worker (default: CUDA_VISIBLE_DEVICES split, else every CUDA device here, else none: a CPU machine)",
    )
    ap.add_argument("--out", default=None, help="stage 02 only: output folder (default: notebook 02's artifact folder)")
    a = ap.parse_args(argv)
    if a.workers < 1:
        print("[workers] --workers must be at least 1", file=sys.stderr)
        return 2
    try:  # the workers start in the checkout: a relative output root must mean this folder's (issue 49)
        paths.pin_output_root()
    except ConfigError as e:
        print(f"[workers] configuration error: {e}", file=sys.stderr)
        return 2
    gpus = visible_gpus(a.gpus)
    return run_workers(a.profile, a.workers, gpus[: a.workers] if gpus else None, a.out, a.stage)


def visible_gpus(given: str = "") -> list[str]:
    """The GPUs the workers are placed on, one each (issue 48): ``--gpus`` when
    given; else ``CUDA_VISIBLE_DEVICES`` split (a scheduler's binding, kept as it is); else every
    device CUDA counts on this machine (an ordinary 8-GPU box leaves the variable unset, and a
    worker that sees all eight puts its engine on the first). Empty on a machine without CUDA:
    each worker then gets a share of the cores instead."""
    listed = given or os.environ.get("CUDA_VISIBLE_DEVICES")
    if listed is not None:
        return [g.strip() for g in listed.split(",") if g.strip()]
    try:
        import torch
    except ImportError:  # a machine without torch has no CUDA device for the workers either
        return []
    return [str(i) for i in range(torch.cuda.device_count())] if torch.cuda.is_available() else []


if __name__ == "__main__":
    raise SystemExit(main())
