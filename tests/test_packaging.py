import re
import tomllib
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[1]


def _pins():
    deps = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["dependencies"]
    return {re.split(r"[=<>]", d)[0]: d for d in deps}


def test_environment_yml_mirrors_pyproject_pins():
    env = yaml.safe_load((ROOT / "environment.yml").read_text())
    pip = next(d["pip"] for d in env["dependencies"] if isinstance(d, dict))
    env_pins = {re.split(r"[=<>]", d)[0]: d for d in pip if not d.startswith("-")}
    for name, spec in _pins().items():
        assert env_pins.get(name) == spec, name


def test_gpu_pins_are_compatible():
    pins = _pins()
    assert pins["torch"] == "torch==2.13.0"  # vllm 0.32.0 pins exactly this torch
    v = tuple(int(x) for x in pins["transformers"].split("==")[1].split("."))
    assert (5, 16, 1) <= v < (5, 20, 0)  # vllm 0.32.0: transformers>=5.16.1,<5.20
    extras = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["optional-dependencies"]
    assert extras["gpu"] == ["vllm==0.32.0"]


def test_ci_runs_the_readme_test_command():
    assert "make test" in (ROOT / ".ci" / "run").read_text()
    assert "make test" in (ROOT / "README.md").read_text()
