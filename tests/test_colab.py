"""The Colab bootstrap in a simulated Colab: a fake ``google.colab`` module, a temporary folder as
Google Drive, pip replaced by a recorder (one slow test asks the real pip, in a fresh venv)."""

import json
import os
import subprocess
import sys
import types
from pathlib import Path

import pytest

from stepwiser_lib.core import paths
from stepwiser_lib.tools import colab

ROOT = paths.ROOT
#: What a Colab VM might have: its own CUDA torch and Jupyter stack, an older transformers (outside
#: our range), a pandas inside it, no trl, peft, math-verify, ...
COLAB = {
    "torch": "2.8.0+cu126",
    "torchvision": "0.23.0+cu126",
    "ipykernel": "6.17.1",
    "ipython": "7.34.0",
    "jupyter-server": "2.14.0",
    "tornado": "6.4.2",
    "google-colab": "1.0.0",
    "transformers": "4.57.1",
    "pandas": "2.2.2",
    "matplotlib": "3.10.0",
    "tqdm": "4.67.1",
    "numpy": "2.0.2",
    "scipy": "1.16.3",
}


class FakeVM:
    """Installed packages and a pip that "installs" by updating them (and records each call
    with the constraints file it was given)."""

    def __init__(self, installed, fail_first=0):
        self.installed, self.calls, self.fail = dict(installed), [], fail_first

    def versions(self):
        return dict(self.installed)

    def pip(self, args):
        hold = Path(args[args.index("-c") + 1]).read_text() if "-c" in args else None
        self.calls.append({"args": args, "hold": hold})
        if self.fail > 0 and hold is not None:  # only the dependency installs fail
            self.fail -= 1
            return subprocess.CompletedProcess(args, 1, "", "ResolutionImpossible: conflict")
        if "--dry-run" not in args:
            for a in args:
                if "==" in a:
                    n, v = a.split("==")
                    self.installed[colab._canon(n)] = v
                elif a[:1].isalpha() and any(op in a for op in "<>"):
                    self.installed[colab._canon(a.split(">")[0].split("<")[0])] = "9.9"
            if "-e" in args:
                self.installed["stepwiser-companion"] = "0.1.0"
        return subprocess.CompletedProcess(args, 0, "", "")


@pytest.fixture
def fake_colab(tmp_path, monkeypatch):
    """``google.colab`` importable (so the cell takes its Colab branch), Drive a temporary folder."""
    drive = types.ModuleType("google.colab.drive")
    drive.mounted = []
    drive.mount = lambda p: (drive.mounted.append(p), Path(p, "MyDrive").mkdir(parents=True, exist_ok=True))
    pkg = types.ModuleType("google.colab")
    pkg.drive = drive
    monkeypatch.setitem(sys.modules, "google", types.ModuleType("google"))
    monkeypatch.setitem(sys.modules, "google.colab", pkg)
    monkeypatch.setitem(sys.modules, "google.colab.drive", drive)
    monkeypatch.setattr(colab, "DRIVE_MOUNT", str(tmp_path / "drive"))
    # unset, and unset again after the test although the bootstrap sets it (setenv records the
    # original state; a delenv of an absent variable alone would record nothing and leak it)
    for name in (paths.OUTPUT_ROOT_ENV, colab.ENV_CHECKPOINT_GB, colab.ENV_LOCAL_CHECKPOINTS, colab.ENV_SAVE_DTYPE):
        monkeypatch.setenv(name, "")
        monkeypatch.delenv(name)
    monkeypatch.setattr(colab, "_installed_from", lambda repo: False)  # a fresh VM
    return drive


def test_on_drive_full_fine_tuning_checkpoints_go_to_the_vm_and_lora_ones_stay_N4(fake_colab, tmp_path):
    """Issue 48 (N4): with outputs on Drive, a fully fine-tuned 0.5B run's checkpoints (about 5.9 GB
    each, three at once) filled a free 15 GB Drive; they now go to the VM's disk, while LoRA runs
    (adapter checkpoints) keep resuming from Drive. Without the bootstrap nothing moves."""
    import os

    from stepwiser_lib.engines import models, trainers

    assert (colab.ENV_CHECKPOINT_GB, colab.ENV_LOCAL_CHECKPOINTS, colab.ENV_SAVE_DTYPE) == (
        trainers.ENV_CHECKPOINT_GB,
        trainers.ENV_LOCAL_CHECKPOINTS,
        models.ENV_SAVE_DTYPE,
    )
    out = tmp_path / "drive" / "runs" / "colab" / "artifacts" / "04_judge_grpo"
    size = 12 * 494_000_000  # Qwen2.5-0.5B: fp32 weights + AdamW's two states
    assert trainers.checkpoint_dir(out, "k", size) == out / "trainer" / "k"  # no bootstrap: where it was
    colab.outputs(tmp_path, True, lambda: tmp_path / "drive", lambda s: None)  # the bootstrap's Drive step
    assert float(os.environ[colab.ENV_CHECKPOINT_GB]) == colab.DRIVE_CHECKPOINT_GB
    assert os.environ[colab.ENV_SAVE_DTYPE] == "float16"  # S7: saved models at half the size on Drive
    assert trainers.checkpoint_dir(out, "k", size) == Path(colab.LOCAL_CHECKPOINTS) / out.name / "trainer" / "k"
    assert trainers.checkpoint_dir(out, "k", 0) == out / "trainer" / "k"  # LoRA: on Drive, resumable


def test_install_plan_keeps_what_satisfies_the_ranges_and_never_touches_torch():
    reqs = ["torch>=2.4,<3", "transformers>=5.19,<6", "pandas>=2.2,<4", "trl>=1.16,<2"]
    pins = {
        "torch": "torch==2.13.0",
        "transformers": "transformers==5.19.0",
        "pandas": "pandas==3.1.1",
        "trl": "trl==1.16.0",
    }
    plan = colab.install_plan(reqs, pins, COLAB)
    assert plan.keep == {"torch": "2.8.0+cu126", "pandas": "2.2.2"}
    assert plan.install == ["transformers==5.19.0", "trl==1.16.0"]  # missing or outside the range
    assert plan.ranges == ["transformers>=5.19,<6", "trl>=1.16,<2"]
    assert plan.hold["torch"] == "2.8.0+cu126" and plan.hold["ipykernel"] == "6.17.1"
    assert not plan.warnings
    old = colab.install_plan(reqs, pins, {**COLAB, "torch": "2.3.1+cu121"})  # outside the range: kept
    assert "torch" in old.keep and not any(r.startswith("torch") for r in old.install)
    assert "outside the tested range" in old.warnings[0]


def test_the_real_requirements_and_pins_agree():
    plan = colab.install_plan(colab.project_requirements(ROOT), colab.tested_pins(ROOT), {})
    assert len(plan.install) == len(colab.project_requirements(ROOT))
    assert all("==" in r for r in plan.install)  # every core dependency has a tested pin
    assert not {"papermill", "jupyterlab", "ipykernel", "nbclient"} & {r.split("==")[0] for r in plan.install}


def test_bootstrap_cell_in_a_simulated_colab(fake_colab, monkeypatch, capsys):
    """The committed first cell, executed as Colab would: installs only what is missing, hands pip
    Colab's torch and Jupyter versions as constraints, and moves runs/ to Drive."""
    vm = FakeVM(COLAB)
    monkeypatch.setattr(colab, "_pip", vm.pip)
    monkeypatch.setattr(colab, "installed_versions", vm.versions)
    monkeypatch.setenv("STEPWISER_COLAB_DIR", str(ROOT))  # the clone is already there
    monkeypatch.setenv(
        paths.OUTPUT_ROOT_ENV, ""
    )  # the bootstrap sets it: undone after the test, not leaked to the next
    monkeypatch.chdir(ROOT)
    monkeypatch.setattr(sys, "path", list(sys.path))
    cells = json.loads((ROOT / "notebooks" / "02_rollout_labelling.ipynb").read_text())["cells"]
    exec(compile("".join(cells[1]["source"]), "bootstrap", "exec"), {})

    first, deps = vm.calls
    assert first["args"] == ["install", "-q", "--no-deps", "-e", str(ROOT)]
    names = [a.split("==")[0] for a in deps["args"] if "==" in a]
    assert "torch" not in names and "pandas" not in names and "ipykernel" not in names
    assert {"transformers", "trl", "peft", "math-verify"} <= set(names)
    assert not {"papermill", "jupyterlab", "nbclient"} & set(names)  # Colab's notebook server stays
    assert "torch==2.8.0+cu126" in deps["hold"] and "ipykernel==6.17.1" in deps["hold"]
    assert vm.installed["torch"] == "2.8.0+cu126"

    drive_dir = Path(colab.DRIVE_MOUNT) / "MyDrive" / "stepwiser-companion"
    assert os.environ[paths.OUTPUT_ROOT_ENV] == str(drive_dir) and drive_dir.is_dir()
    assert paths.run_dir("colab") == drive_dir / "runs" / "colab"
    assert paths.artifacts("colab", "01_self_segmentation").is_relative_to(drive_dir)
    assert paths.results_dir("colab").parent.parent == drive_dir
    out = capsys.readouterr().out
    assert "kept 5 of 17 dependencies" in out  # torch, pandas, tqdm, numpy, scipy (matplotlib 3.10 is below 3.11)
    assert "installed 13 package(s) in" in out and "trl==1.16.0" in out
    assert f"kept on Google Drive: {drive_dir}" in out and "no GPU" in out

    vm.calls.clear()  # running the cell again in the same VM installs nothing
    monkeypatch.setattr(colab, "_installed_from", lambda repo: True)
    report = colab.bootstrap(ROOT, say=lambda s: None)
    assert vm.calls == [] and report["installed"] == []


def test_without_drive_outputs_stay_in_the_vm_and_it_says_so(fake_colab, monkeypatch, capsys, tmp_path):
    vm = FakeVM(COLAB)

    def refuse(p):
        raise PermissionError("mount refused by the user")

    monkeypatch.setattr(fake_colab, "mount", refuse)
    for f in ("pyproject.toml", "constraints.txt"):
        (tmp_path / f).write_text((ROOT / f).read_text())
    report = colab.bootstrap(tmp_path, pip=vm.pip, installed=vm.versions, say=print)
    out = capsys.readouterr().out
    assert paths.OUTPUT_ROOT_ENV not in os.environ and paths.run_dir("colab") == ROOT / "runs" / "colab"
    assert "could not be mounted (PermissionError: mount refused by the user)" in out
    assert "LOST when the VM goes" in out and "python -m stepwiser_lib.tools.runner --profile colab" in out
    assert report["output_root"] == str(tmp_path)
    colab.bootstrap(tmp_path, use_drive=False, pip=vm.pip, installed=vm.versions, say=print)
    assert "use_drive = False in this cell" in capsys.readouterr().out


def test_conflicting_pins_fall_back_to_the_ranges_and_a_failure_is_explained(fake_colab, tmp_path):
    for f in ("pyproject.toml", "constraints.txt"):
        (tmp_path / f).write_text((ROOT / f).read_text())
    vm = FakeVM(COLAB, fail_first=1)
    colab.bootstrap(tmp_path, pip=vm.pip, installed=vm.versions, mount=lambda: tmp_path, say=lambda s: None)
    pinned, ranged = vm.calls[1]["args"], vm.calls[2]["args"]
    assert "trl==1.16.0" in pinned and "trl>=1.16,<2" in ranged and vm.calls[2]["hold"] == vm.calls[1]["hold"]
    vm = FakeVM(COLAB, fail_first=2)
    with pytest.raises(RuntimeError, match="Colab's own packages were not replaced"):
        colab.bootstrap(tmp_path, pip=vm.pip, installed=vm.versions, mount=lambda: tmp_path, say=lambda s: None)


def test_badges_and_bootstrap_follow_repo_url_and_set_repo_points_them_at_a_fork(tmp_path):
    assert colab.sync(ROOT, write=False) == []  # the committed files match REPO_URL
    assert len(colab.BADGE_RE.findall((ROOT / "README.md").read_text())) == 7  # the README's notebook table
    for page in (ROOT / "docs").glob("*.md"):  # sync rewrites README.md and the notebooks, no other page
        assert not colab.BADGE_RE.search(page.read_text()), f"{page.name}: a Colab badge set-repo would not rewrite"
    assert colab.OUTPUT_ROOT_ENV == paths.OUTPUT_ROOT_ENV
    for d in ("notebooks", "stepwiser_lib/tools"):
        (tmp_path / d).mkdir(parents=True)
    for nb in (ROOT / "notebooks").glob("*.ipynb"):
        (tmp_path / "notebooks" / nb.name).write_text(nb.read_text())
    (tmp_path / "README.md").write_text((ROOT / "README.md").read_text())
    (tmp_path / "stepwiser_lib" / "tools" / "colab.py").write_text(
        (ROOT / "stepwiser_lib" / "tools" / "colab.py").read_text()
    )
    fork = "https://github.com/someone/my-fork"
    changed = colab.set_repo(fork, tmp_path)
    assert "stepwiser_lib/tools/colab.py" in changed and "README.md" in changed and len(changed) == 9
    assert f'REPO_URL = "{fork}"' in (tmp_path / "stepwiser_lib" / "tools" / "colab.py").read_text()
    readme = (tmp_path / "README.md").read_text()
    assert "github/someone/my-fork/blob/main/notebooks/01_self_segmentation.ipynb" in readme
    assert colab.REPO_URL.split("github.com/")[1] + "/blob" not in readme
    cells = json.loads((tmp_path / "notebooks" / "04_judge_grpo.ipynb").read_text())["cells"]
    assert colab.badge_markdown("04_judge_grpo", fork) in "".join(cells[0]["source"])
    assert "".join(cells[1]["source"]) == colab.bootstrap_source(fork)
    assert colab.sync(tmp_path, fork, write=False) == []
    with pytest.raises(ValueError, match="not a GitHub repository"):
        colab.set_repo("git@github.com:someone/x.git", tmp_path)


@pytest.mark.slow
def test_real_pip_in_a_python_3_12_venv_keeps_colab_torch(tmp_path):
    """The real pip, asked (--dry-run) by the bootstrap in a fresh venv of Colab's Python 3.12
    where a torch and a Jupyter kernel are registered as installed (metadata only, as Colab's
    own): it would install the companion's other dependencies at the tested pins, and not torch.
    Needs a python3.12 (pyenv's, or PYTHON312) and the package index; skipped without them."""
    import glob
    import shutil

    cands = [
        os.environ.get("PYTHON312"),
        *sorted(glob.glob(str(Path.home() / ".pyenv/versions/3.12*/bin/python"))),
        shutil.which("python3.12"),
    ]
    py = next((c for c in cands if c and subprocess.run([c, "--version"], capture_output=True).returncode == 0), None)
    if py is None:
        pytest.skip("no working python3.12 here")
    venv = tmp_path / "v"
    subprocess.run([py, "-m", "venv", str(venv)], check=True)
    vpy = venv / "bin" / "python"
    site = subprocess.run(
        [vpy, "-c", "import site; print(site.getsitepackages()[0])"], capture_output=True, text=True, check=True
    ).stdout.strip()
    for name, version in [("torch", "2.8.0+cu126"), ("ipykernel", "6.17.1"), ("pandas", "2.2.2")]:
        d = Path(site) / f"{name}-{version}.dist-info"
        d.mkdir()
        (d / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {name}\nVersion: {version}\n")
        (d / "RECORD").write_text("")
    code = (
        "import json, sys; sys.path.insert(0, sys.argv[1]); from stepwiser_lib.tools import colab; "
        "r = colab.bootstrap(sys.argv[1], use_drive=False, dry_run=True, say=lambda s: None); "
        "print(json.dumps(r))"
    )
    r = subprocess.run([vpy, "-c", code, str(ROOT)], capture_output=True, text=True, cwd=tmp_path, timeout=600)
    if r.returncode != 0 and "No matching distribution" in r.stderr + r.stdout:
        pytest.skip("package index not reachable")
    assert r.returncode == 0, r.stderr[-2000:]
    report = json.loads(r.stdout.strip().splitlines()[-1])
    assert report["python"].startswith("3.12")
    would = {w.rsplit("-", 1)[0].lower().replace("_", "-"): w.rsplit("-", 1)[1] for w in report["would_install"]}
    assert "torch" not in would and "ipykernel" not in would and "pandas" not in would
    assert would["trl"] == "1.16.0" and would["transformers"] == "5.19.0" and would["math-verify"] == "0.9.0"
