"""Numbers in the notebooks' prose against what their cells print (stepwiser_lib.tools.prose, issue 36)."""

import json

import pytest

from stepwiser_lib.core.paths import ROOT
from stepwiser_lib.tools import prose


def _nb(markdown: str, printed: str, params: str = "N: int = 200  # prompts") -> dict:
    return {
        "cells": [
            {"cell_type": "code", "metadata": {"tags": ["parameters"]}, "source": [params], "outputs": []},
            {"cell_type": "markdown", "metadata": {}, "source": [markdown]},
            {
                "cell_type": "code",
                "metadata": {},
                "source": ["x = 1  # kept 94 problems\ncolor = '#888'"],
                "outputs": [{"output_type": "stream", "name": "stdout", "text": [printed]}],
            },
        ]
    }


def test_a_number_no_cell_prints_is_stray_and_known_ones_are_not():
    nb = _nb(
        "The judge scores **65.3** on test and 12.1 in the paper (Table 5, §4.1); its 95% interval; "
        "200 prompts, four splits, `x = 3.14`, $\\gamma = 0.8$.",
        "balanced accuracy 65.28\n",
    )
    assert [(s["cell"], s["number"]) for s in prose.stray_numbers(nb)] == [(2, "94")]  # the comment, not '#888'
    nb = _nb("The judge scores 57.7 on test.", "balanced accuracy 65.28\nkept 94\n")
    assert [s["number"] for s in prose.stray_numbers(nb)] == ["57.7"]
    nb = _nb("69.3% of the samples are right.", "accuracy 0.6934\nkept 94\n")  # a rate printed as a fraction
    assert prose.stray_numbers(nb) == []


@pytest.mark.parametrize("name", sorted(p.name for p in (ROOT / "docs" / "tiny").glob("*.ipynb")))
def test_the_executed_notebooks_state_no_number_their_cells_do_not_print(name):
    """Every number in docs/tiny's markdown and code comments is printed by a cell of the same
    notebook, is a parameter, or is the paper's (issue 36: the review found 12 that were not)."""
    nb = json.loads((ROOT / "docs" / "tiny" / name).read_text())
    assert prose.stray_numbers(nb) == []
