"""Data-parallel labelling on one machine (issue 34): ``WORKERS`` processes of the labelling CLI,
one per GPU, each with its own engine and its share of the shards, all writing one folder; notebook
02 (or the CLI without ``--worker``) then merges them into ``labels.jsonl``. The paper's labelling
(about 14 days on 8 A100) runs one engine per GPU this way instead of one engine on GPU 0::

    make label-workers PROFILE=paper WORKERS=8     # then: make reproduce PROFILE=paper

On a cluster, ``configs/slurm/reproduce.sbatch`` starts the same workers as SLURM tasks over every
node. The labels do not depend on the number of workers (a test compares 1 and 2 processes).
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import time
from pathlib import Path

from ..core import paths


def worker_command(profile: str, worker: int, workers: int, out: str | None = None) -> list[str]:
    """One worker: the labelling CLI with its index (``stepwiser_lib.method.labelling``)."""
    cmd = [sys.executable, "-m", "stepwiser_lib.method.labelling", "--profile", profile,
           "--worker", str(worker), "--workers", str(workers)]
    return cmd + (["--out", str(out)] if out else [])


def run_workers(profile: str, workers: int, gpus: list[str] | None = None, out: str | None = None) -> int:
    """Start ``workers`` labelling processes (worker ``i`` sees GPU ``gpus[i]`` when given), each
    logging to ``runs/<profile>/workers/worker_<i>.log``; wait for all. Returns 0 when every one
    finished, else 1 after naming the failed workers and their logs (the shards they finished
    stay; a rerun labels only what is missing)."""
    if gpus and len(gpus) < workers:
        raise SystemExit(f"[workers] {workers} workers but only GPUs {gpus}: give one GPU per worker")
    logs = paths.run_dir(profile) / "workers"
    logs.mkdir(parents=True, exist_ok=True)
    procs = []
    t0 = time.time()
    for i in range(workers):
        env = {**os.environ, **({"CUDA_VISIBLE_DEVICES": gpus[i]} if gpus else {})}
        log = open(logs / f"worker_{i}.log", "w")  # noqa: SIM115 - closed below, after the process ends
        procs.append((i, subprocess.Popen(worker_command(profile, i, workers, out), cwd=paths.ROOT, env=env,
                                          stdout=log, stderr=subprocess.STDOUT), log))
        print(f"[workers] worker {i} of {workers} started" + (f" on GPU {gpus[i]}" if gpus else ""), flush=True)
    failed = []
    for i, p, log in procs:
        p.wait()
        log.close()
        if p.returncode != 0:
            failed.append(i)
        print(f"[workers] worker {i} exited {p.returncode} after {time.time() - t0:.0f} s", flush=True)
    if failed:
        print(f"[workers] FAILED: worker(s) {failed}; see {logs}/worker_<i>.log. Their finished shards are kept: "
              "run the same command again to label the rest", file=sys.stderr)
        return 1
    print(f"[workers] all {workers} done in {time.time() - t0:.0f} s; notebook 02 (make reproduce PROFILE={profile}) "
          "merges the shards into labels.jsonl", flush=True)
    return 0


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description="Data-parallel labelling: one labelling process per GPU (notebook 02)")
    ap.add_argument("--profile", default="tiny")
    ap.add_argument("--workers", type=int, default=1, help="processes, one per GPU")
    ap.add_argument("--gpus", default="", help="comma-separated GPU ids, one per worker (default: "
                    "CUDA_VISIBLE_DEVICES split, or none on a CPU machine)")
    ap.add_argument("--out", default=None, help="output folder (default: notebook 02's artifact folder)")
    a = ap.parse_args(argv)
    if a.workers < 1:
        print("[workers] --workers must be at least 1", file=sys.stderr)
        return 2
    gpus = [g for g in (a.gpus or os.environ.get("CUDA_VISIBLE_DEVICES", "")).split(",") if g.strip()]
    return run_workers(a.profile, a.workers, gpus[: a.workers] if gpus else None, a.out)


if __name__ == "__main__":
    raise SystemExit(main())
