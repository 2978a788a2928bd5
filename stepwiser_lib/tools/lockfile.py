"""``environment.yml`` from the lock: the conda environment installs exactly the pins of
``requirements-lock.txt`` (every transitive package, as ``make`` does), not a hand-kept subset.
``make lock`` rewrites both; ``tests/test_packaging.py`` checks that they agree.

    python -m stepwiser_lib.tools.lockfile            # rewrite environment.yml from the lock
"""

from __future__ import annotations

import argparse
import re
from pathlib import Path

from ..core.paths import ROOT

LOCK, ENV = ROOT / "requirements-lock.txt", ROOT / "environment.yml"
PIN = re.compile(r"^([A-Za-z0-9][A-Za-z0-9._-]*)==([^\s#;]+)")

HEADER = """\
# Conda environment with every exact pin of requirements-lock.txt (the lock `make` installs).
# Written by `make lock` (python -m stepwiser_lib.tools.lockfile); do not edit by hand.
#   conda env create -f environment.yml && conda activate stepwiser
# Without an NVIDIA GPU, take torch's CPU build first (pip would fetch the CUDA one, several GB):
#   pip install torch==2.13.0 --extra-index-url https://download.pytorch.org/whl/cpu
# GPU boxes: afterwards `pip install -e ".[gpu]"` adds vllm==0.32.0 (which pins the same torch).
"""


def pins(lock_text: str) -> list[str]:
    """The ``name==version`` lines of a uv-compiled lock, in its order (comments, hashes and
    markers dropped)."""
    out = []
    for line in lock_text.splitlines():
        m = PIN.match(line.strip())
        if m:
            out.append(f"{m.group(1)}=={m.group(2)}")
    return out


def environment_yml(lock_text: str, python: str = "3.11") -> str:
    """The text of ``environment.yml`` for the lock's pins."""
    body = [HEADER, "name: stepwiser", "channels:", "  - conda-forge", "dependencies:", f"  - python={python}"]
    body += ["  - pip", "  - pip:"] + [f"      - {p}" for p in pins(lock_text)]
    return "\n".join(body) + "\n"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m stepwiser_lib.tools.lockfile", description=__doc__.split("\n")[0])
    ap.add_argument("--lock", default=str(LOCK), help="the lock to read (default: requirements-lock.txt)")
    ap.add_argument("--out", default=str(ENV), help="the file to write (default: environment.yml)")
    a = ap.parse_args(argv)
    text = environment_yml(Path(a.lock).read_text())
    Path(a.out).write_text(text)
    print(f"[lockfile] {Path(a.out).name}: {len(pins(Path(a.lock).read_text()))} pins from {Path(a.lock).name}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
