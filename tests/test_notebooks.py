"""Every notebook, executed headless by papermill at the smoke profile (as `make test` does)."""
import json

import pytest

from stepwiser_lib import paths, runner

NOTEBOOKS = [p.stem for p in runner.list_notebooks()]

# What each notebook must leave behind (results/smoke/...), checked beyond "it ran".
EXPECTED = {
    "01_self_segmentation": ("self_segmentation.json", ["table4", "data", "sft"]),
    "02_rollout_labelling": ("labelling.json", ["stats", "summary", "rollouts_per_s"]),
    "03_balancing": ("balancing.json", ["stats"]),
}


@pytest.mark.notebook
@pytest.mark.parametrize("stem", NOTEBOOKS)
def test_notebook_runs_at_smoke(stem):
    out = runner.run("smoke", only=[stem[:2]])
    assert stem in out
    executed = json.loads((paths.run_dir("smoke") / f"{stem}.ipynb").read_text())
    config_cell = next(c for c in executed["cells"] if "config.resolve(globals()" in "".join(c["source"]))
    assert config_cell["outputs"], "the config cell printed nothing"
    if stem in EXPECTED:
        fname, keys = EXPECTED[stem]
        res = json.loads((paths.results_dir("smoke") / fname).read_text())
        assert res["profile"] == "smoke"
        for k in keys:
            assert k in res, k
    if stem == "02_rollout_labelling":  # smoke runs two shards, adaptively; a re-run resumes both
        res = json.loads((paths.results_dir("smoke") / "labelling.json").read_text())
        assert res["stats"]["rollouts"] <= res["stats"]["rollouts_full"]
    if stem == "03_balancing":
        res = json.loads((paths.results_dir("smoke") / "balancing.json").read_text())
        for rule, st in res["stats"].items():
            assert st["train_balanced"]["positive"] == st["train_balanced"]["negative"], rule


def test_every_notebook_has_expectations():
    assert set(NOTEBOOKS) <= set(EXPECTED), "add the outputs of new notebooks to EXPECTED"


@pytest.mark.notebook
def test_labelling_cli_matches_and_resumes(tmp_path):
    """`python -m stepwiser_lib.labelling` (needs notebook 01's smoke chunk policy, made above)."""
    import subprocess
    import sys

    if not (paths.run_dir("smoke") / "artifacts/01_self_segmentation/chunk_policy/model").exists():
        runner.run("smoke", only=["01"])
    cmd = [sys.executable, "-m", "stepwiser_lib.labelling", "--profile", "smoke", "--out", str(tmp_path)]
    first = subprocess.run(cmd, capture_output=True, text=True, check=True, cwd=paths.ROOT)
    labels = (tmp_path / "labels.jsonl").read_text()
    (tmp_path / "shards" / "shard_00001.jsonl").write_text("truncated")
    second = subprocess.run(cmd, capture_output=True, text=True, check=True, cwd=paths.ROOT)
    out1 = json.loads(first.stdout[first.stdout.index("{"):])
    out2 = json.loads(second.stdout[second.stdout.index("{"):])
    assert out1["resumed_shards"] == 0 and out2["resumed_shards"] == 1 and len(out2["redone_shards"]) == 1
    assert (tmp_path / "labels.jsonl").read_text() == labels  # identical after the redo
