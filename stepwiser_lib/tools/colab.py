"""Open-in-Colab support: the badge and the bootstrap cell every notebook carries (a test checks).

The bootstrap cell (:func:`bootstrap_source`, the first code cell of every notebook) does nothing
outside Colab. On Colab it clones the repository at :data:`REPO_URL`, then :func:`bootstrap`:

* installs the companion **without replacing what Colab has** (:func:`install_plan`): a package
  already there whose version lies in ``pyproject.toml``'s range is kept; one that is missing or
  outside its range is installed at the tested pin of ``constraints.txt``. Colab's torch and its
  Jupyter stack (:data:`PROTECTED`) are never replaced: pip is handed their installed versions as
  constraints, so it keeps them or stops with a conflict instead of downloading a new torch. The
  notebook tooling (papermill, JupyterLab) is an extra that is not installed.
* reports what it kept, what it installed and how long that took;
* mounts Google Drive and points ``$STEPWISER_OUTPUT_ROOT`` (read by :mod:`stepwiser_lib.core.paths`)
  at ``MyDrive/stepwiser-companion``: each notebook opened from its badge runs in a fresh VM, and
  this is how notebook N finds what notebooks 1..N-1 wrote. Without Drive it says that outputs go
  with the VM and how to run every stage in one VM instead.

This module uses the standard library only: it runs before anything is installed.

To point the badges and the bootstrap at a fork::

    python -m stepwiser_lib.tools.colab set-repo https://github.com/<you>/stepwiser-companion
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
import tomllib
from collections.abc import Callable
from dataclasses import dataclass, field
from importlib.metadata import distributions
from pathlib import Path

#: The one place the repository's address lives: the badges, the bootstrap cell and the README's
#: badge table are generated from it (``set-repo`` rewrites all of them).
REPO_URL = "https://github.com/stepwiser-companion/stepwiser-companion"
#: Where the bootstrap clones the repository on Colab (every VM has the same path).
COLAB_REPO_DIR = "/content/stepwiser-companion"
DRIVE_MOUNT = "/content/drive"
#: The Drive folder that holds runs/, results/ and figures/ across VMs.
DRIVE_FOLDER = "MyDrive/stepwiser-companion"
#: Drive space a run's checkpoints may take at once (of a free Drive's 15 GB, which also holds the
#: profile's models and data); larger ones go to :data:`LOCAL_CHECKPOINTS` on the VM.
DRIVE_CHECKPOINT_GB = 3.0
LOCAL_CHECKPOINTS = "/content/stepwiser-checkpoints"
#: stepwiser_lib.engines.trainers' names for them (this module runs before the project's
#: dependencies are installed, so it imports nothing of the library's; a test ties the two)
ENV_CHECKPOINT_GB, ENV_LOCAL_CHECKPOINTS = "STEPWISER_CHECKPOINT_GB", "STEPWISER_LOCAL_CHECKPOINTS"
ENV_SAVE_DTYPE = "STEPWISER_SAVE_DTYPE"  # stepwiser_lib.engines.models' (a test ties them)
OUTPUT_ROOT_ENV = "STEPWISER_OUTPUT_ROOT"  # the same name as paths.OUTPUT_ROOT_ENV (a test checks)
#: What the Colab runtime itself runs on: kept at their installed versions, never replaced (a new
#: torch is a multi-GB download that breaks torchvision/torchaudio; a new Jupyter stack breaks the
#: kernel at the next restart).
PROTECTED = (
    "torch",
    "torchvision",
    "torchaudio",
    "triton",
    "ipykernel",
    "ipython",
    "jupyter-client",
    "jupyter-core",
    "jupyter-server",
    "notebook",
    "tornado",
    "traitlets",
    "google-colab",
)
#: Import names that differ from distribution names (for the "restart the session" check).
IMPORT_NAMES = {"pyyaml": "yaml", "math-verify": "math_verify", "scikit-learn": "sklearn"}


def _canon(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def _requirement(req: str):
    try:
        from packaging.requirements import Requirement
    except ImportError:  # a bare interpreter: pip vendors the same library
        from pip._vendor.packaging.requirements import Requirement
    return Requirement(req)


def repo_path(url: str = REPO_URL) -> str:
    """``https://github.com/owner/name`` -> ``owner/name``."""
    m = re.fullmatch(r"https://github\.com/([\w.-]+/[\w.-]+?)(?:\.git)?/?", url)
    if not m:
        raise ValueError(f"not a GitHub repository address: {url!r} (want https://github.com/<owner>/<name>)")
    return m.group(1)


def badge_markdown(stem: str, url: str = REPO_URL) -> str:
    """The Open-in-Colab badge for ``notebooks/<stem>.ipynb``."""
    target = f"https://colab.research.google.com/github/{repo_path(url)}/blob/main/notebooks/{stem}.ipynb"
    return f"[![Open In Colab](https://colab.research.google.com/assets/colab-badge.svg)]({target})"


def bootstrap_source(url: str = REPO_URL) -> str:
    """The first code cell of every notebook. Lower-case names only: upper-case ones are
    parameters to :func:`stepwiser_lib.core.config.resolve`."""
    return f'''# Colab bootstrap (identical in every notebook; stepwiser_lib/tools/colab.py writes it). On Google Colab:
# fetch the companion, install only what Colab lacks (Colab's torch and Jupyter are kept), and keep
# runs/, results/ and figures/ on Google Drive, so the next notebook (a fresh VM) finds them.
# Everywhere else (JupyterLab, papermill, CI) this cell does nothing.
use_drive = True  # False: outputs stay in this VM and are lost when it goes (docs/colab.md)
import os
import subprocess
import sys

if "google.colab" in sys.modules:
    repo = os.environ.get("STEPWISER_COLAB_DIR", "{COLAB_REPO_DIR}")
    if not os.path.isdir(repo):
        subprocess.run(["git", "clone", "-q", "--depth", "1", "{url}", repo], check=True)
    os.chdir(repo)
    if repo not in sys.path:
        sys.path.insert(0, repo)
    from stepwiser_lib.tools import colab
    colab.bootstrap(repo, use_drive=use_drive)'''


BOOTSTRAP_SOURCE = bootstrap_source()


# ----------------------------------------------------------------------------- what to install


@dataclass
class InstallPlan:
    """What :func:`bootstrap` keeps and installs. ``install``: requirement strings at the tested
    pins; ``ranges``: the same packages as pyproject ranges (the fallback when the pins conflict
    with what is kept); ``hold``: protected packages pinned at their installed versions."""

    keep: dict[str, str] = field(default_factory=dict)
    install: list[str] = field(default_factory=list)
    ranges: list[str] = field(default_factory=list)
    hold: dict[str, str] = field(default_factory=dict)
    warnings: list[str] = field(default_factory=list)


def project_requirements(repo: str | Path) -> list[str]:
    """The core dependency ranges of ``pyproject.toml`` (no extras: the notebook tooling, the GPU
    extra and the test tools are not what a Colab notebook needs)."""
    return tomllib.loads((Path(repo) / "pyproject.toml").read_text())["project"]["dependencies"]


def tested_pins(repo: str | Path) -> dict[str, str]:
    """``constraints.txt`` as ``{canonical name: "name==version"}``."""
    out = {}
    for line in (Path(repo) / "constraints.txt").read_text().splitlines():
        line = line.split("#")[0].strip()
        if line:
            out[_canon(line.split("==")[0])] = line
    return out


def installed_versions() -> dict[str, str]:
    """Every distribution of this interpreter, ``{canonical name: version}``."""
    return {_canon(d.metadata["Name"]): d.version for d in distributions() if d.metadata["Name"]}


def install_plan(
    requirements: list[str], pins: dict[str, str], installed: dict[str, str], protected: tuple[str, ...] = PROTECTED
) -> InstallPlan:
    """Keep what satisfies its range, install the rest at the tested pin, never touch
    ``protected`` packages that are there (a protected package outside its range is kept with
    a warning: replacing Colab's torch costs more than it can fix)."""
    plan = InstallPlan(hold={p: installed[_canon(p)] for p in protected if _canon(p) in installed})
    for text in requirements:
        req = _requirement(text)
        name = _canon(req.name)
        have = installed.get(name)
        if have is not None and req.specifier.contains(have, prereleases=True):
            plan.keep[name] = have
        elif have is not None and name in plan.hold:
            plan.keep[name] = have
            plan.warnings.append(
                f"{name} {have} is outside the tested range {req.specifier} and is kept "
                f"(it is Colab's own); if a stage fails on it, open a fresh runtime"
            )
        else:
            plan.install.append(pins.get(name, text))
            plan.ranges.append(text)
    return plan


# ----------------------------------------------------------------------------- the bootstrap


def _pip(args: list[str]) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "pip", *args], capture_output=True, text=True)


def _gpu_name() -> str | None:
    if not shutil.which("nvidia-smi"):
        return None
    r = subprocess.run(["nvidia-smi", "--query-gpu=name", "--format=csv,noheader"], capture_output=True, text=True)
    return r.stdout.strip().splitlines()[0] if r.returncode == 0 and r.stdout.strip() else None


def _imported(names: list[str]) -> list[str]:
    """Which of these distributions already have a module imported in this kernel."""
    return [n for n in names if IMPORT_NAMES.get(n, n.replace("-", "_")) in sys.modules]


def _installed_from(repo: Path) -> bool:
    """Whether stepwiser-companion is pip-installed from ``repo`` (an in-tree ``*.egg-info`` on
    ``sys.path`` is not an install: subprocesses elsewhere would not find the package)."""
    want = str(Path(repo).resolve()).rstrip("/")
    for d in distributions(name="stepwiser-companion"):
        try:
            url = json.loads(d.read_text("direct_url.json") or "{}").get("url", "")
        except json.JSONDecodeError:
            continue
        if url.removeprefix("file://").rstrip("/") == want:
            return True
    return False


def mount_drive(mount_point: str | None = None) -> Path:
    """Mount Google Drive (Colab asks for permission) and return ``MyDrive/stepwiser-companion``."""
    from google.colab import drive  # only on Colab

    mount_point = mount_point or DRIVE_MOUNT
    drive.mount(mount_point)
    out = Path(mount_point) / DRIVE_FOLDER
    out.mkdir(parents=True, exist_ok=True)
    return out


def bootstrap(
    repo: str | Path = COLAB_REPO_DIR,
    use_drive: bool = True,
    *,
    dry_run: bool = False,
    pip: Callable[[list[str]], subprocess.CompletedProcess] | None = None,
    installed: Callable[[], dict[str, str]] | None = None,
    mount: Callable[[], Path] | None = None,
    say: Callable[[str], None] = print,
) -> dict:
    """Install what Colab lacks, then put the outputs on Drive. Returns what it did (for tests
    and for the notebook's record); ``dry_run`` asks pip what it would do and changes nothing.
    ``pip``, ``installed`` and ``mount`` default to this module's :func:`_pip`,
    :func:`installed_versions` and :func:`mount_drive`, looked up when called."""
    t0 = time.time()
    pip, installed, mount = pip or _pip, installed or installed_versions, mount or mount_drive
    repo = Path(repo)
    before = installed()
    plan = install_plan(project_requirements(repo), tested_pins(repo), before)
    report = {
        "python": sys.version.split()[0],
        "kept": plan.keep,
        "held": plan.hold,
        "installed": [],
        "pip": [],
        "warnings": list(plan.warnings),
        "dry_run": dry_run,
    }
    say(
        f"[bootstrap] Python {report['python']}; kept {len(plan.keep)} of {len(plan.keep) + len(plan.install)} "
        f"dependencies already here ("
        + ", ".join(f"{k} {v}" for k, v in sorted(plan.keep.items())[:6])
        + (", ..." if len(plan.keep) > 6 else "")
        + ")"
    )
    steps = []  # (pip arguments, the fallback when they fail)
    if not _installed_from(repo):  # the package itself; its dependencies are handled below
        steps.append((["install", "-q", "--no-deps", "-e", str(repo)], None))
    hold_file = None
    if plan.install:
        hold_file = tempfile.NamedTemporaryFile("w", suffix="-colab-keep.txt", delete=False)
        hold_file.write("".join(f"{k}=={v}\n" for k, v in sorted(plan.hold.items())))
        hold_file.close()
        # the tested pins first; if they conflict with a kept package, pip picks within the ranges
        steps.append(
            (
                ["install", "-q", "-c", hold_file.name, *plan.install],
                ["install", "-q", "-c", hold_file.name, *plan.ranges],
            )
        )
    extra = ["--dry-run"] if dry_run else []
    if dry_run:  # pip's "Would install ..." line is what a dry run is for
        steps = [([a for a in args if a != "-q"], fb and [a for a in fb if a != "-q"]) for args, fb in steps]
    for args, fallback in steps:
        r = pip(args + extra)
        report["pip"].append(" ".join(args + extra))
        if r.returncode != 0 and fallback:
            say("[bootstrap] the tested pins conflict with what Colab has; resolving within pyproject's ranges")
            args = fallback
            r = pip(args + extra)
            report["pip"].append(" ".join(args + extra))
        if r.returncode != 0:
            tail = "\n".join((r.stderr or r.stdout or "").strip().splitlines()[-15:])
            raise RuntimeError(
                f"pip {' '.join(args)} failed (exit {r.returncode}):\n{tail}\n"
                "Colab's own packages were not replaced. Open a fresh runtime "
                "(Runtime > Disconnect and delete runtime) and run this cell again."
            )
        if dry_run:
            would = [
                w
                for line in (r.stdout or "").splitlines()
                if line.startswith("Would install")
                for w in line.split()[2:]
            ]
            report.setdefault("would_install", []).extend(would)
            say(f"[bootstrap] pip would install: {' '.join(would) or 'nothing'}")
    after = before if dry_run else installed()
    changed = sorted(k for k in after if after[k] != before.get(k))
    report["installed"] = [f"{k}=={after[k]}" for k in changed]
    report["seconds"] = round(time.time() - t0, 1)
    if hold_file:
        os.unlink(hold_file.name)
    moved = [k for k in plan.hold if after.get(k) != plan.hold[k]]
    if moved:  # cannot happen through the constraints; said loudly if it ever does
        report["warnings"].append(f"protected package(s) changed: {moved}")
    if dry_run:
        say(f"[bootstrap] dry run, nothing changed; pip commands: {report['pip']}")
    elif changed:
        say(
            f"[bootstrap] installed {len(changed)} package(s) in {report['seconds']:.0f} s: "
            + ", ".join(report["installed"])
        )
    else:
        say(f"[bootstrap] nothing to install ({report['seconds']:.0f} s)")
    upgraded = _imported([k for k in changed if k in before])
    if upgraded:
        report["warnings"].append(
            f"already imported and upgraded: {upgraded}; restart the session "
            "(Runtime > Restart session) and run this cell again"
        )
    for w in report["warnings"]:
        say(f"[bootstrap] WARNING: {w}")
    gpu = _gpu_name()
    report["gpu"] = gpu
    say(
        f"[bootstrap] GPU: {gpu}"
        if gpu
        else "[bootstrap] no GPU: the colab profile needs one (Runtime > "
        "Change runtime type > T4 GPU); the toy profiles (smoke, tiny) run on the CPU"
    )
    report["output_root"] = str(outputs(repo, use_drive, mount, say))
    say('[bootstrap] now set PROFILE in the parameters cell below ("colab": Qwen2.5 on the GPU; "tiny": the toy world)')
    return report


def outputs(repo: Path, use_drive: bool, mount: Callable[[], Path], say: Callable[[str], None]) -> Path:
    """Point ``$STEPWISER_OUTPUT_ROOT`` at Drive when it can; say where outputs go either way."""
    if os.environ.get(OUTPUT_ROOT_ENV):
        say(f"[bootstrap] outputs go to ${OUTPUT_ROOT_ENV} = {os.environ[OUTPUT_ROOT_ENV]} (set before this cell)")
        return Path(os.environ[OUTPUT_ROOT_ENV])
    why = "use_drive = False in this cell"
    if use_drive:
        try:
            root = mount()
            os.environ[OUTPUT_ROOT_ENV] = str(root)
            # full fine-tuning checkpoints (about 5.9 GB each for 0.5B, three at once) would fill a
            # free 15 GB Drive: those go to the VM's disk, LoRA ones stay on Drive (issue 48)
            os.environ.setdefault(ENV_CHECKPOINT_GB, str(DRIVE_CHECKPOINT_GB))
            os.environ.setdefault(ENV_LOCAL_CHECKPOINTS, str(LOCAL_CHECKPOINTS))
            os.environ.setdefault(ENV_SAVE_DTYPE, "float16")  # saved models at half the size of fp32
            say(
                f"[bootstrap] runs/, results/ and figures/ are kept on Google Drive: {root} (models saved in "
                f"float16; checkpoints over {DRIVE_CHECKPOINT_GB} GB at once go to {LOCAL_CHECKPOINTS}, on this VM)"
            )
            return root
        except Exception as e:  # noqa: BLE001 - refused permission, no Drive: explained below
            why = f"Google Drive could not be mounted ({type(e).__name__}: {e})"
    say(
        f"[bootstrap] {why}: outputs go to {repo}/runs, results and figures, inside this VM, and are LOST "
        "when the VM goes (idle or closed). A notebook opened from its badge runs in a new VM and will not "
        "find them. Either mount Drive in every notebook (use_drive = True), or run every stage here, in "
        f"this VM: !cd {repo} && pip install -q -c constraints.txt papermill && "
        "python -m stepwiser_lib.tools.runner --profile colab"
    )
    return repo


# ----------------------------------------------------------------------------- pointing at a fork

BADGE_RE = re.compile(
    r"\[!\[Open In Colab\]\(https://colab\.research\.google\.com/assets/colab-badge\.svg\)\]"
    r"\(https://colab\.research\.google\.com/github/[^)]+/blob/main/notebooks/([\w.-]+)\.ipynb\)"
)


def sync(root: str | Path, url: str = REPO_URL, write: bool = True) -> list[str]:
    """Make every badge (notebooks, README) and every bootstrap cell match ``url``; returns the
    files that differed (with ``write=False``: a check that changes nothing)."""
    root = Path(root)
    fix = lambda text: BADGE_RE.sub(lambda m: badge_markdown(m.group(1), url), text)  # noqa: E731
    changed = []
    for nb_path in sorted((root / "notebooks").glob("[0-9][0-9]_*.ipynb")):
        nb = json.loads(nb_path.read_text())
        cells = nb["cells"]
        old = json.dumps(cells)
        cells[0]["source"] = _lines(fix("".join(cells[0]["source"])))
        boot = next(c for c in cells if "bootstrap" in c.get("metadata", {}).get("tags", []))
        boot["source"] = _lines(bootstrap_source(url))
        boot["metadata"].setdefault("jupyter", {})["source_hidden"] = True  # collapsed: a learner need not read it
        if json.dumps(cells) != old:
            changed.append(str(nb_path.relative_to(root)))
            if write:
                nb_path.write_text(json.dumps(nb, indent=1, ensure_ascii=False) + "\n")
    readme = root / "README.md"
    text = readme.read_text()
    if fix(text) != text:
        changed.append("README.md")
        if write:
            readme.write_text(fix(text))
    return changed


def _lines(text: str) -> list[str]:
    """A cell source in the notebook format: lines that keep their newline, the last without."""
    return text.splitlines(keepends=True)


def set_repo(url: str, root: str | Path | None = None) -> list[str]:
    """Point this checkout at ``url``: :data:`REPO_URL` in this file, the badges and the bootstrap cells."""
    repo_path(url)  # validates
    root = Path(root) if root else Path(__file__).resolve().parents[2]
    me = root / "stepwiser_lib" / "tools" / "colab.py"
    text = me.read_text()
    new = re.sub(r'^REPO_URL = "[^"]*"$', f'REPO_URL = "{url}"', text, count=1, flags=re.M)
    changed = ["stepwiser_lib/tools/colab.py"] if new != text else []
    me.write_text(new)
    return changed + sync(root, url)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description="Colab badges and bootstrap of the StepWiser companion.")
    sub = ap.add_subparsers(dest="cmd", required=True)
    s = sub.add_parser("set-repo", help="point REPO_URL, the badges and the bootstrap cells at a repository (a fork)")
    s.add_argument("url", help="https://github.com/<owner>/<name>")
    sub.add_parser("check", help="fail if a badge or bootstrap cell does not match REPO_URL")
    p = sub.add_parser("plan", help="what the bootstrap would keep and install in this interpreter (changes nothing)")
    p.add_argument("--repo", default=str(Path(__file__).resolve().parents[2]))
    a = ap.parse_args(argv)
    if a.cmd == "set-repo":
        for f in set_repo(a.url):
            print("updated", f)
        return 0
    if a.cmd == "check":
        bad = sync(Path(__file__).resolve().parents[2], write=False)
        print("\n".join(f"differs from REPO_URL: {f}" for f in bad) or "badges and bootstrap cells match REPO_URL")
        return 1 if bad else 0
    plan = install_plan(project_requirements(a.repo), tested_pins(a.repo), installed_versions())
    print(json.dumps(plan.__dict__, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
