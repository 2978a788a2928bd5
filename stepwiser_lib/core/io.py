"""Small, careful file helpers: atomic writes, and JSONL reads that name the bad line."""

from __future__ import annotations

import contextlib
import errno
import hashlib
import json
import os
import socket
import sys
import tempfile
import warnings
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from .paths import ROOT, model_complete, output_root

try:  # advisory file locks (POSIX); see artifact_lock
    import fcntl
except ImportError:  # pragma: no cover - Windows
    fcntl = None


class RecordError(ValueError):
    """A malformed record in a data file (the message names file, line and field)."""


def _umask_mode() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return 0o666 & ~mask


_FILE_MODE = _umask_mode()  # what open() would give: 0644 under the usual umask


def atomic_write_text(path: str | Path, text: str) -> None:
    """Write to a temporary file and rename: a reader never sees half a file."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            f.write(text)
            f.flush()
            os.fsync(f.fileno())
        os.chmod(tmp, _FILE_MODE)  # mkstemp makes 0600; outputs are read by others (shared or mounted folders)
        os.replace(tmp, path)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise


class ArtifactBusy(RuntimeError):
    """Another process is writing the same artifact right now."""


#: ``flock`` errors that mean "this filesystem has no locks" (Lustre mounted ``noflock``, some NFS
#: setups), not "someone else holds it": the block then runs unlocked, as on Windows (issue 48).
NO_LOCKS = {errno.ENOSYS, errno.ENOLCK, errno.EOPNOTSUPP, errno.ENOTSUP}
_warned_no_locks: set[str] = set()


@contextlib.contextmanager
def artifact_lock(path: str | Path, wait: bool = False):
    """Hold an exclusive lock on artifact ``path`` (a file ``.<name>.lock`` beside it) for a block.

    Two runs of one profile (a terminal ``make reproduce`` and the same notebook in JupyterLab)
    must not write one model folder at once: the second gets :class:`ArtifactBusy`, naming the
    folder and the other process, instead of racing. The lock is advisory (``flock``) and goes with
    its process, so a killed run never leaves it held. ``wait``: block until the holder is done
    instead (for work that the second process should reuse, not redo). Where ``fcntl`` is missing
    (Windows) or the filesystem has no locks (:data:`NO_LOCKS`), the block runs unlocked."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    lock = path.with_name(f".{path.name}.lock")
    with open(lock, "a+", encoding="utf-8") as f:
        locked = fcntl is not None
        if locked:
            try:
                fcntl.flock(f, fcntl.LOCK_EX | (0 if wait else fcntl.LOCK_NB))
            except BlockingIOError:
                f.seek(0)
                other = f.read().strip() or "another process"
                raise ArtifactBusy(
                    f"{path} is being written by {other} right now (lock {lock.name}): "
                    "run one copy of a stage at a time, or give the second its own "
                    "STEPWISER_OUTPUT_ROOT"
                ) from None
            except OSError as e:
                if e.errno not in NO_LOCKS:
                    raise
                locked = False
                if str(lock.parent) not in _warned_no_locks:
                    _warned_no_locks.add(str(lock.parent))
                    print(
                        f"[io] {lock.parent}: this filesystem has no file locks ({errno.errorcode.get(e.errno, e.errno)}); "
                        "artifacts are written unlocked: run one copy of a stage at a time",
                        file=sys.stderr,
                    )
        f.seek(0)
        f.truncate()
        f.write(f"process {os.getpid()} on {socket.gethostname()}")
        f.flush()
        try:
            yield
        finally:
            if locked:
                fcntl.flock(f, fcntl.LOCK_UN)


def restore_aside(dest: str | Path) -> bool:
    """Put back a model folder a save moved aside and never replaced: a save killed between its
    two renames (:func:`stepwiser_lib.engines.models.save_atomically`) leaves the previous, whole
    model as ``.<name>.old`` and no ``<name>``. Done under the folder's lock, so a save in progress
    is never undone. Returns whether it put one back."""
    dest = Path(dest)
    old = dest.with_name(f".{dest.name}.old")
    if dest.exists() or not model_complete(old):
        return False
    try:
        with artifact_lock(dest):
            if dest.exists() or not model_complete(old):
                return False
            old.rename(dest)
    except ArtifactBusy:  # a live save is between its renames: it puts its own model in place
        return False
    warnings.warn(
        f"{dest}: put back the model a save interrupted between its two renames had moved aside", stacklevel=2
    )
    return True


def write_json(path: str | Path, obj: Any) -> None:
    atomic_write_text(path, json.dumps(obj, indent=2, sort_keys=False, default=str) + "\n")


def repo_relative(obj: Any, root: str | Path | None = None) -> Any:
    """``obj`` with every string that is a path inside the repository made relative to it
    (``/home/u/stepwiser-companion/runs/tiny/x`` -> ``runs/tiny/x``), so committed results hold
    no machine's absolute paths. With no ``root``, paths under ``$STEPWISER_OUTPUT_ROOT`` (the
    Colab bootstrap's Drive folder) are made relative to it the same way."""
    if root is None:
        roots = sorted({str(ROOT), str(output_root())}, key=len, reverse=True)
    else:
        roots = [str(root)]
    prefixes = [r.rstrip("/") + "/" for r in roots]

    def rel(v):
        if isinstance(v, str):
            return next((v[len(p) :] for p in prefixes if v.startswith(p)), v)
        if isinstance(v, dict):
            return {k: rel(x) for k, x in v.items()}
        if isinstance(v, (list, tuple)):
            return [rel(x) for x in v]
        if isinstance(v, Path):
            return rel(str(v))
        return v

    return rel(obj)


def is_timing(key: str) -> bool:
    """A wall-clock measurement (``seconds``, ``train_seconds``, ``rollouts_per_s``): it differs
    on every run, so results keep it apart."""
    return key == "seconds" or key.endswith("_seconds") or key.endswith("_per_s")


def split_timings(obj: Any) -> tuple[Any, dict[str, Any]]:
    """``obj`` without its timing leaves, and those leaves by dotted path
    (``{"stats": {"seconds": 3}}`` -> ``({"stats": {}}, {"stats.seconds": 3})``)."""
    timings: dict[str, Any] = {}

    def strip(v, path):
        if isinstance(v, dict):
            out = {}
            for k, x in v.items():
                here = f"{path}.{k}" if path else str(k)
                number = isinstance(x, (int, float)) and not isinstance(x, bool)
                if is_timing(str(k)) and (
                    number
                    or isinstance(x, dict)
                    and x
                    and all(isinstance(y, (int, float)) and not isinstance(y, bool) for y in x.values())
                ):
                    timings[here] = x
                else:
                    out[k] = strip(x, here)
            return out
        if isinstance(v, list):
            return [strip(x, f"{path}.{i}") for i, x in enumerate(v)]
        return v

    return strip(obj, ""), timings


def save_metrics(result: str | Path, artifacts: str | Path, metrics: dict) -> None:
    """A stage's metrics, written twice: the committed ``results/<profile>/<name>.json``
    (:func:`write_result`) and ``<artifacts>/metrics.json`` for later stages."""
    write_result(result, metrics)
    write_json(Path(artifacts) / "metrics.json", metrics)


def write_result(path: str | Path, obj: Any) -> None:
    """:func:`write_json` for the committed outputs (``results/``, ``data/`` manifests): paths
    inside the repository are written relative to it (:func:`repo_relative`), and every timing
    goes to one ``timings`` object at the end, so that two runs' results differ only there
    (``diff`` of everything but ``timings`` answers "did anything change?")."""
    clean, timings = split_timings(repo_relative(obj))
    if isinstance(clean, dict) and timings:
        clean = {
            **{k: v for k, v in clean.items() if k != "timings"},
            "timings": {**clean.get("timings", {}), **timings},
        }
    write_json(path, clean)


def read_json(path: str | Path) -> Any:
    return json.loads(Path(path).read_text())


def write_jsonl(path: str | Path, records: Iterable[dict]) -> None:
    atomic_write_text(path, "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in records))


def _no_constant(name: str):
    raise ValueError(f"{name} is not JSON")


def loads_strict(text: str) -> Any:
    """``json.loads`` that refuses ``NaN`` and ``Infinity`` (Python writes them, JSON has no such
    values, and a NaN label or Q silently becomes a negative)."""
    return json.loads(text, parse_constant=_no_constant)


def iter_jsonl(path: str | Path, where: str | None = None):
    """``(line number, object)`` for each non-blank line; a bad line (bad JSON, bad UTF-8, NaN
    or Infinity) raises :class:`RecordError` naming ``where`` (default: the path) and the line."""
    path = Path(path)
    where = where or str(path)
    with path.open("rb") as f:
        for n, raw in enumerate(f, 1):
            try:
                line = raw.decode("utf-8")
            except UnicodeDecodeError as e:
                raise RecordError(
                    f"{where}, line {n}: not UTF-8 (byte {raw[e.start]:#04x} at column {e.start + 1})"
                ) from None
            if not line.strip():
                continue
            try:
                rec = loads_strict(line)
            except json.JSONDecodeError as e:
                raise RecordError(f"{where}, line {n}: bad JSON ({e.msg})") from None
            except ValueError as e:
                raise RecordError(f"{where}, line {n}: {e}") from None
            yield n, rec


def read_jsonl(path: str | Path, required: dict[str, type | tuple] | None = None) -> list[dict]:
    """Records of a JSONL file; with ``required`` ({field: type}) each record is validated."""
    out = []
    for n, rec in iter_jsonl(path):
        if not isinstance(rec, dict):
            raise RecordError(f"{path}, line {n}: expected a JSON object")
        for k, t in (required or {}).items():
            if k not in rec:
                raise RecordError(f"{path}, line {n}: missing field {k!r}")
            if not isinstance(rec[k], t) or (t in (int, float) and isinstance(rec[k], bool)):
                raise RecordError(f"{path}, line {n}: field {k!r} has type {type(rec[k]).__name__}, expected {t}")
        out.append(rec)
    return out


def digest(*parts: Any) -> str:
    """A short, stable hash of JSON-able parts (configs, file hashes) that names a result."""
    blob = json.dumps(parts, sort_keys=True, default=str)
    return hashlib.sha256(blob.encode()).hexdigest()[:16]


def records_digest(records: Iterable) -> str:
    """:func:`digest` of a long sequence of JSON-able records, hashed one at a time (a training set
    of a million records is never one string). Records that carry their digest (a launch's spilled
    records, :class:`stepwiser_lib.engines.launch.Records`) are not read again."""
    known = getattr(records, "digest", None)
    if isinstance(known, str):
        return known
    h = hashlib.sha256()
    for r in records:
        h.update(json.dumps(r, sort_keys=True, default=str).encode())
        h.update(b"\n")
    return h.hexdigest()[:16]


def file_sha256(path: str | Path) -> str:
    return hashlib.sha256(Path(path).read_bytes()).hexdigest()


def _read_cached(path: Path) -> Any:
    """A cache record, or None when it cannot be read back (missing, truncated, not UTF-8, not
    JSON): the caller recomputes it rather than crashing on a damaged file."""
    try:
        return loads_strict(Path(path).read_bytes().decode("utf-8"))
    except (OSError, ValueError):  # JSONDecodeError and UnicodeDecodeError are ValueErrors
        return None


def set_aside(path: str | Path, why: str) -> Path:
    """Move ``path`` to ``<name>.<why>`` beside it (numbered if that exists), never overwriting."""
    path = Path(path)
    dest = path.with_name(f"{path.name}.{why}")
    k = 2
    while dest.exists():
        dest = path.with_name(f"{path.name}.{why}-{k}")
        k += 1
    path.rename(dest)
    return dest


def has_cached(path: str | Path, key: str) -> bool:
    """True if :func:`cached_json` would return the record at ``path`` without computing."""
    old = _read_cached(path)
    return isinstance(old, dict) and old.get("_key") == key


def cached_json(path: str | Path, key: str, compute, valid=None) -> dict:
    """Resume helper for long jobs: return the record at ``path`` if it was written for the same
    ``key`` (e.g. :func:`digest` of the config and inputs) and, with ``valid``, ``valid(record)``
    holds (the model folder it names is whole); otherwise run
    ``compute()``, write its result with the key (atomically, so an interrupted job leaves nothing
    half-written) and return it. A record that cannot be read back is recomputed."""
    path = Path(path)
    old = _read_cached(path) if path.exists() else None
    if isinstance(old, dict) and old.get("_key") == key:
        if valid is None or valid(old):
            return old
        warnings.warn(
            f"{path}: what it records is no longer on disk (a model folder missing or incomplete); recomputed",
            stacklevel=2,
        )
    if path.exists() and not isinstance(old, dict):  # damaged: kept for a look, then recomputed
        aside = set_aside(path, "corrupt")
        warnings.warn(f"{path} could not be read back (damaged); moved to {aside.name} and recomputed", stacklevel=2)
    rec = compute()
    rec = {**rec, "_key": key}
    write_json(path, rec)
    return rec


def cached_jsonl(path: str | Path, key: str, compute) -> list[dict]:
    """:func:`cached_json` for a list of records kept as JSONL (a documented artifact such as
    notebook 07's ``samples.jsonl``): the records at ``path`` if ``path.meta.json`` (beside it,
    ``samples.meta.json`` for ``samples.jsonl``) holds the same ``key``; otherwise ``compute()``'s,
    written first, then the key (an interrupted write leaves no key, so it is recomputed)."""
    rows = cached_rows(path, key)
    if rows is not None:
        return rows
    rows = compute()
    write_jsonl(path, rows)
    write_json(Path(path).with_suffix(".meta.json"), {"key": key})
    return rows


def cached_rows(path: str | Path, key: str) -> list[dict] | None:
    """The records :func:`cached_jsonl` would return from disk for ``key``, else None."""
    path = Path(path)
    meta = path.with_suffix(".meta.json")
    if path.exists() and meta.exists():
        try:
            if read_json(meta).get("key") == key:
                return read_jsonl(path)
        except (OSError, ValueError):  # damaged: recomputed
            pass
    return None


def markdown_table(rows: list[dict], columns: list[str]) -> str:
    """A GitHub Markdown table of ``rows`` (missing or None cells are blank; floats to 1 dp,
    fractions strictly between -1 and 1 such as AUCs to 2 dp, and below 0.01 (small p-values) to
    2 significant figures, so they do not print as 0)."""

    def cell(v):
        if v is None or (isinstance(v, float) and v != v):
            return ""
        if isinstance(v, float):
            return f"{v:.2g}" if 0 < abs(v) < 0.01 else f"{v:.2f}" if 0 < abs(v) < 1 else f"{v:.1f}"
        return str(v)

    lines = ["| " + " | ".join(columns) + " |", "|" + "---|" * len(columns)]
    lines += ["| " + " | ".join(cell(r.get(c)) for c in columns) + " |" for r in rows]
    return "\n".join(lines)
