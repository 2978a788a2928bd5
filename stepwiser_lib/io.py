"""Small, careful file helpers: atomic writes, and JSONL reads that name the bad line."""

from __future__ import annotations

import json
import os
import tempfile
from pathlib import Path
from typing import Any, Iterable


class RecordError(ValueError):
    """A malformed record in a data file (the message names file, line and field)."""


def atomic_write_text(path: str | Path, text: str) -> None:
    """Write to a temporary file and rename: a reader never sees half a file."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "w") as f:
            f.write(text)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise


def write_json(path: str | Path, obj: Any) -> None:
    atomic_write_text(path, json.dumps(obj, indent=2, sort_keys=False, default=str) + "\n")


def repo_relative(obj: Any, root: str | Path | None = None) -> Any:
    """``obj`` with every string that is a path inside the repository made relative to it
    (``/home/u/stepwiser-companion/runs/tiny/x`` -> ``runs/tiny/x``), so committed results hold
    no machine's absolute paths. With no ``root``, paths under ``$STEPWISER_OUTPUT_ROOT`` (the
    Colab bootstrap's Drive folder) are made relative to it the same way."""
    if root is None:
        from .paths import ROOT, output_root

        roots = sorted({str(ROOT), str(output_root())}, key=len, reverse=True)
    else:
        roots = [str(root)]
    prefixes = [r.rstrip("/") + "/" for r in roots]

    def rel(v):
        if isinstance(v, str):
            return next((v[len(p):] for p in prefixes if v.startswith(p)), v)
        if isinstance(v, dict):
            return {k: rel(x) for k, x in v.items()}
        if isinstance(v, (list, tuple)):
            return [rel(x) for x in v]
        if isinstance(v, Path):
            return rel(str(v))
        return v

    return rel(obj)


def write_result(path: str | Path, obj: Any) -> None:
    """:func:`write_json` for the committed outputs (``results/``, ``data/`` manifests): paths
    inside the repository are written relative to it (:func:`repo_relative`)."""
    write_json(path, repo_relative(obj))


def read_json(path: str | Path) -> Any:
    return json.loads(Path(path).read_text())


def write_jsonl(path: str | Path, records: Iterable[dict]) -> None:
    atomic_write_text(path, "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in records))


def iter_jsonl(path: str | Path, where: str | None = None):
    """``(line number, object)`` for each non-blank line; a bad line raises :class:`RecordError`
    naming ``where`` (default: the path) and the line."""
    path = Path(path)
    where = where or str(path)
    with path.open() as f:
        for n, line in enumerate(f, 1):
            if not line.strip():
                continue
            try:
                rec = json.loads(line)
            except json.JSONDecodeError as e:
                raise RecordError(f"{where}, line {n}: bad JSON ({e.msg})") from None
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
                raise RecordError(f"{path}, line {n}: field {k!r} has type "
                                  f"{type(rec[k]).__name__}, expected {t}")
        out.append(rec)
    return out


def digest(*parts: Any) -> str:
    """A short, stable hash of JSON-able parts (configs, file hashes) that names a result."""
    import hashlib

    blob = json.dumps(parts, sort_keys=True, default=str)
    return hashlib.sha256(blob.encode()).hexdigest()[:16]


def file_sha256(path: str | Path) -> str:
    import hashlib

    return hashlib.sha256(Path(path).read_bytes()).hexdigest()


def has_cached(path: str | Path, key: str) -> bool:
    """True if :func:`cached_json` would return the record at ``path`` without computing."""
    try:
        return json.loads(Path(path).read_text()).get("_key") == key
    except (OSError, json.JSONDecodeError, AttributeError):
        return False


def cached_json(path: str | Path, key: str, compute) -> dict:
    """Resume helper for long jobs: return the record at ``path`` if it was written for the same
    ``key`` (e.g. :func:`digest` of the config and inputs); otherwise run ``compute()``, write its
    result with the key (atomically, so an interrupted job leaves nothing half-written) and
    return it."""
    path = Path(path)
    if path.exists():
        try:
            old = json.loads(path.read_text())
        except json.JSONDecodeError:
            old = None
        if isinstance(old, dict) and old.get("_key") == key:
            return old
    rec = compute()
    rec = {**rec, "_key": key}
    write_json(path, rec)
    return rec


def markdown_table(rows: list[dict], columns: list[str]) -> str:
    """A GitHub Markdown table of ``rows`` (missing or None cells are blank; floats to 1 dp,
    fractions strictly between -1 and 1 such as AUCs to 2 dp)."""
    def cell(v):
        if v is None or (isinstance(v, float) and v != v):
            return ""
        if isinstance(v, float):
            return f"{v:.2f}" if 0 < abs(v) < 1 else f"{v:.1f}"
        return str(v)
    lines = ["| " + " | ".join(columns) + " |", "|" + "---|" * len(columns)]
    lines += ["| " + " | ".join(cell(r.get(c)) for c in columns) + " |" for r in rows]
    return "\n".join(lines)
