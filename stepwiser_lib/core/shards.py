"""A long generation job in fixed-size shards that K data-parallel workers share (issue 34).

Notebooks 05 (ProcessBench judging) and 07 (RS-FT sampling and judge scoring) cut their work into
shards of a fixed number of units (solutions, prompts). Each shard is computed once, by the worker
``sid % K`` when K processes run (one per GPU or node, all writing one folder on shared storage),
and saved atomically under a key; the notebook (one process) then finds every shard on disk,
computes any that is missing, and joins them. A shard's result depends only on its own units and
:func:`shard_seed`, never on K or on which process ran it, so the joined result is the same for
any number of workers; a worker that dies loses only the shard it was computing. Notebook 02
keeps its own shard format (:mod:`stepwiser_lib.method.labelling`), notebook 06 its runs
(:func:`stepwiser_lib.method.chunk_reset.run_grid`).
"""

from __future__ import annotations

import argparse
import shutil
import time
from collections.abc import Callable, Sequence
from pathlib import Path

from . import config, inputs, io
from .checks import ConfigError


def shard_seed(seed: int, sid: int) -> int:
    """The sampling seed of shard ``sid``: ``seed`` itself for shard 0 (a job of one shard samples
    as it did before it was sharded), and a seed of its own for every other shard."""
    return seed if sid == 0 else seed + 1_000_003 * sid


def n_shards(n: int, size: int) -> int:
    """How many shards of ``size`` units ``n`` units make (the last may be shorter)."""
    if size < 1:
        raise ValueError(f"shard size {size}: want at least 1")
    return -(-n // size)


def layout(n: int, size: int) -> list:
    """What a cache key of the joined result must add for shards: nothing for a job of one shard
    (it is computed exactly as an unsharded one), else the shard size, which decides the seeds."""
    return [] if n <= size else ["shards of", size]


def _where(folder: str | Path, key: str, sid: int, size: int) -> tuple[Path, str]:
    """Shard ``sid``'s file and its cache key."""
    return Path(folder) / f"shard_{sid:05d}.json", io.digest(key, sid, size)


def run(
    units: Sequence,
    size: int,
    compute: Callable[[list, int], list],
    folder: str | Path,
    key: str,
    *,
    worker: int = 0,
    workers: int = 1,
) -> tuple[list | None, float]:
    """``compute(units[sid*size:(sid+1)*size], sid)`` for every shard ``sid``, one result per unit,
    each shard cached in ``folder/shard_<sid>.json`` under ``key`` (the caller's digest of the
    units and settings). With ``workers`` K > 1 this process computes only the shards
    ``sid % K == worker``; another worker's shard is read when it is on disk. Returns the results
    of every unit in order and the seconds all shards took to compute (in any process), or None
    (and those seconds) while a shard is still missing."""
    if not 0 <= worker < workers:
        raise ValueError(f"worker {worker} of {workers}: want 0 <= worker < workers")
    folder = Path(folder)
    out: list | None = []
    seconds = 0.0
    for sid in range(n_shards(len(units), size)):
        path, skey = _where(folder, key, sid, size)
        part = list(units[sid * size : (sid + 1) * size])
        if sid % workers != worker and not io.has_cached(path, skey):
            out = None  # another worker's, not done yet
            continue

        def one(part=part, sid=sid):
            t = time.time()
            rows = compute(part, sid)
            if len(rows) != len(part):
                raise ValueError(f"shard {sid}: {len(rows)} results for {len(part)} units")
            return {"rows": rows, "seconds": round(time.time() - t, 3)}

        folder.mkdir(parents=True, exist_ok=True)
        rec = io.cached_json(path, skey, one)
        seconds += rec["seconds"]
        if out is not None:
            out.extend(rec["rows"])
    return out, round(seconds, 1)


def todo(n: int, size: int, folder: str | Path, key: str, *, worker: int = 0, workers: int = 1) -> list[int]:
    """The shards :func:`run` would compute in this process: this worker's that are not on disk."""
    return [
        sid
        for sid in range(n_shards(n, size))
        if sid % workers == worker and not io.has_cached(*_where(folder, key, sid, size))
    ]


def clear(folder: str | Path) -> None:
    """Remove a finished job's shards (its joined result is cached on its own)."""
    shutil.rmtree(folder, ignore_errors=True)


def worker_args(
    description: str, argv: list[str] | None, shard_size: int, unit: str, notebook: str
) -> argparse.Namespace:
    """The command line of a stage's worker CLI (``--profile``, ``--worker``, ``--workers``,
    ``--shard-size``), parsed; :func:`worker_config` checks it."""
    ap = argparse.ArgumentParser(description=description)
    ap.add_argument("--profile", default="tiny")
    ap.add_argument("--worker", type=int, default=0)
    ap.add_argument("--workers", type=int, default=1)
    ap.add_argument(
        "--shard-size",
        type=int,
        default=shard_size,
        help=f"{unit} per shard (a test's; notebook {notebook} joins shards of the default size only)",
    )
    return ap.parse_args(argv)


def worker_config(a: argparse.Namespace, notebook: str, profiles_dir=None):
    """The checked config of a worker (:func:`worker_args`) for ``notebook`` (its stem): a
    :class:`ConfigError` for a worker index outside ``0 .. workers-1`` or an empty shard, then
    :func:`stepwiser_lib.core.config.for_notebook` and the notebook's input check."""
    if not 0 <= a.worker < a.workers:
        raise ConfigError(f"--worker {a.worker} --workers {a.workers}: want 0 <= worker < workers")
    if a.shard_size < 1:
        raise ConfigError(f"--shard-size {a.shard_size}: want at least 1")
    cfg = config.for_notebook(a.profile, notebook, **({"profiles_dir": profiles_dir} if profiles_dir else {}))
    inputs.check(cfg)
    return cfg
