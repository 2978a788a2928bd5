"""Every notebook's "Try this" knobs (issue 51, review 3 §2.3 item 4): each row states its effect as a
*prediction* (untested unless it cites a trial), and each setting it names is a parameter of that
notebook, or one a profile sets for it. Pure text: no notebook runs, nothing imports torch."""

import json
import re
from pathlib import Path

import pytest
import yaml

ROOT = Path(__file__).resolve().parents[1]
NOTEBOOKS = sorted((ROOT / "notebooks").glob("[0-9][0-9]_*.ipynb"))
#: A row of the knobs table: it starts with the change, a code span such as `SETTING = value`.
ROW = re.compile(r"^\| `")
#: A setting a change names: an upper-case name assigned in a code span (`ALPHA = 0.2`).
SETTING = re.compile(r"`([A-Z][A-Z0-9_]*)\s*=")
#: A parameter the parameters cell assigns (`NAME: type = value` or `NAME = value`).
PARAMETER = re.compile(r"^([A-Z][A-Z0-9_]*)\s*(?::[^=]*)?=", re.M)


def _cells(path: Path) -> list[dict]:
    return json.loads(path.read_text(encoding="utf-8"))["cells"]


def _try_rows(path: Path) -> list[list[str]]:
    """The knob rows of the notebook's "Try this" cell, each split into its table cells."""
    tries = [c for c in _cells(path) if c["cell_type"] == "markdown" and "".join(c["source"]).startswith("## Try this")]
    assert len(tries) == 1, f"{path.name}: {len(tries)} 'Try this' cells"
    rows = [ln for ln in "".join(tries[0]["source"]).splitlines() if ROW.match(ln)]
    assert len(rows) >= 2, f"{path.name}: fewer than two knobs"
    return [[part.strip() for part in ln.strip().strip("|").split("|")] for ln in rows]


def _parameters(path: Path) -> set[str]:
    """The names the notebook's parameters cell assigns, and those any profile sets for it."""
    cells = [c for c in _cells(path) if "parameters" in c.get("metadata", {}).get("tags", [])]
    assert len(cells) == 1, f"{path.name}: {len(cells)} parameters cells"
    names = set(PARAMETER.findall("".join(cells[0]["source"])))
    for profile in sorted((ROOT / "configs" / "profiles").glob("*.yaml")):
        nbs = (yaml.safe_load(profile.read_text(encoding="utf-8")) or {}).get("notebooks") or {}
        names |= set((nbs.get(path.stem) or {}).keys())
    return names


def test_every_notebook_is_found():
    assert len(NOTEBOOKS) == 7, [p.name for p in NOTEBOOKS]


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.stem)
def test_each_try_this_effect_is_marked_as_a_prediction(path):
    for row in _try_rows(path):
        assert len(row) == 3, f"{path.name}: not a (change, prediction, cost) row: {row}"
        assert row[1].startswith("Prediction"), f"{path.name}: {row[0]}: its effect is not marked as a prediction"


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.stem)
def test_each_try_this_setting_is_a_parameter_of_its_notebook(path):
    params = _parameters(path)
    for row in _try_rows(path):
        named = SETTING.findall(row[0])
        assert named, f"{path.name}: the change {row[0]!r} names no setting"
        missing = [n for n in named if n not in params]
        assert not missing, f"{path.name}: {missing} not in the parameters cell or a profile of this notebook"
