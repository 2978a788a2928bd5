"""Every notebook, executed headless by papermill at the smoke profile (as `make test` does)."""
import json

import pytest

from stepwiser_lib import paths, runner

NOTEBOOKS = [p.stem for p in runner.list_notebooks()]

# What each notebook must leave behind (results/smoke/...), checked beyond "it ran".
EXPECTED = {
    "01_self_segmentation": ("self_segmentation.json", ["table4", "data", "sft"]),
}


@pytest.mark.notebook
@pytest.mark.parametrize("stem", NOTEBOOKS)
def test_notebook_runs_at_smoke(stem):
    out = runner.run("smoke", only=[stem[:2]])
    assert stem in out
    executed = json.loads((paths.run_dir("smoke") / f"{stem}.ipynb").read_text())
    assert executed["cells"][2]["outputs"], "the config cell printed nothing"
    if stem in EXPECTED:
        fname, keys = EXPECTED[stem]
        res = json.loads((paths.results_dir("smoke") / fname).read_text())
        assert res["profile"] == "smoke"
        for k in keys:
            assert k in res, k


def test_every_notebook_has_expectations():
    assert set(NOTEBOOKS) <= set(EXPECTED), "add the outputs of new notebooks to EXPECTED"
