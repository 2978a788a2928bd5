"""Labelling on K worker processes under ``N_KEPT``, measured (issue 48): the shards each K labels,
its wall time, and whether the merged labels are byte for byte one worker's.

Runs notebook 02's labelling CLI (the one ``make workers STAGE=02`` starts) as K processes at once,
each with a share of the cores (one process per core is the CPU's version of one per GPU), on a
profile's chunk policy with ``N_KEPT`` set, then merges with one process as notebook 02 does::

    python -m stepwiser_lib.tools.scaling --profile tiny --workers 1 2 4

writes ``results/bench/labelling_scaling.json``, which the paper plan's wall time for notebook 02
reads (``plan.labelling_speedup``) instead of assuming K workers are K times as fast.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import yaml

from ..core import paths
from ..core.config import PROFILES_DIR
from ..core.io import atomic_write_text

OUT = paths.ROOT / "results" / "bench" / "labelling_scaling.json"


def profile_with(base: str, folder: Path, **values) -> str:
    """A copy of profile ``base`` in ``folder`` with notebook 02's ``values`` set; its name."""
    y = yaml.safe_load((PROFILES_DIR / f"{base}.yaml").read_text())
    y.setdefault("notebooks", {}).setdefault("02_rollout_labelling", {}).update(values)
    name = f"{base}-scaling"
    (folder / f"{name}.yaml").write_text(yaml.safe_dump(y))
    return name


def _child(profile: str, profiles_dir: Path, out: Path, worker: int, workers: int) -> list[str]:
    code = (
        "import sys; from stepwiser_lib.method import labelling; "
        f"sys.exit(labelling.main({['--profile', profile, '--out', str(out), '--worker', str(worker), '--workers', str(workers)]!r}, "
        f"profiles_dir={str(profiles_dir)!r}))"
    )
    return [sys.executable, "-c", code]


def measure(base: str = "tiny", workers: tuple[int, ...] = (1, 2, 4), n_kept: int = 40, shard_size: int = 4) -> dict:
    """Label with each K in ``workers`` from scratch; one row per K."""
    rows, digests = [], {}
    cpus = os.cpu_count() or 1
    with tempfile.TemporaryDirectory() as td:
        pdir = Path(td)
        # the rest of the profile's pool stays unsampled once N_KEPT prompts pass the pre-filter
        profile = profile_with(
            base, pdir, N_KEPT=n_kept, SHARD_SIZE=shard_size, POLICY_MODEL=str(paths.chunk_policy(base))
        )
        for k in workers:
            out = paths.run_dir(base) / "scaling" / f"k{k}"
            shutil.rmtree(out, ignore_errors=True)
            out.mkdir(parents=True)
            env = {**os.environ, "OMP_NUM_THREADS": str(max(1, cpus // k))}
            t0 = time.time()
            procs = [
                subprocess.Popen(
                    _child(profile, pdir, out, w, k) if k > 1 else _child(profile, pdir, out, 0, 1),
                    cwd=paths.ROOT,
                    env=env,
                    stdout=subprocess.DEVNULL,
                    stderr=subprocess.PIPE,
                    text=True,
                )
                for w in range(k)
            ]
            errs = [p.communicate()[1] for p in procs]
            wall = time.time() - t0
            if any(p.returncode for p in procs):
                raise RuntimeError(f"a labelling worker failed at K={k}: {[e[-400:] for e in errs if e]}")
            labelled = len(list((out / "shards").glob("shard_*.jsonl")))
            if k > 1:  # the merge: one process, as notebook 02 (it labels any shard the workers skipped)
                merge = subprocess.run(_child(profile, pdir, out, 0, 1), cwd=paths.ROOT, capture_output=True, text=True)
                if merge.returncode:
                    raise RuntimeError(f"the merge failed at K={k}: {merge.stderr[-400:]}")
            used = len(list((out / "shards").glob("shard_*.jsonl")))
            digests[k] = hashlib.sha256((out / "labels.jsonl").read_bytes()).hexdigest()
            rows.append(
                {
                    "workers": k,
                    "shards_labelled_by_workers": labelled,
                    "shards_after_merge": used,
                    "wall_s": round(wall, 1),
                    "labels_sha256": digests[k][:16],
                }
            )
            print(f"[scaling] K={k}: {labelled} shards in {wall:.1f} s ({used} after the merge)", flush=True)
    one = next(r for r in rows if r["workers"] == min(workers))
    for r in rows:
        r["speedup"] = round(one["wall_s"] / r["wall_s"], 2)
        r["same_labels_as_one_worker"] = r["labels_sha256"] == one["labels_sha256"]
    return {
        "profile": base,
        "n_kept": n_kept,
        "shard_size": shard_size,
        "cpus": cpus,
        "note": "K processes on this machine's cores, each with a share of them (OMP_NUM_THREADS = cpus // K); "
        "where K exceeds the cores the processes share them, so the speed-up there measures the work split, "
        "not K devices",
        "rows": rows,
    }


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description="labelling on K worker processes under N_KEPT, measured")
    ap.add_argument("--profile", default="tiny", help="whose notebook-01 chunk policy labels")
    ap.add_argument("--workers", type=int, nargs="+", default=[1, 2, 4])
    ap.add_argument("--n-kept", type=int, default=40)
    ap.add_argument("--shard-size", type=int, default=4)
    a = ap.parse_args(argv)
    res = measure(a.profile, tuple(a.workers), a.n_kept, a.shard_size)
    OUT.parent.mkdir(parents=True, exist_ok=True)
    atomic_write_text(OUT, json.dumps(res, indent=1) + "\n")
    print(json.dumps(res["rows"], indent=1))


if __name__ == "__main__":
    main()
