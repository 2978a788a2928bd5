"""make docs: the reader's executed copies (stepwiser_lib.tools.docs)."""

import json

import pytest

from stepwiser_lib.tools import docs


def _executed(root: str, exception=False, end="2026-01-01T00:00:01"):
    return {
        "metadata": {
            "kernelspec": {"name": "python3"},
            "papermill": {
                "input_path": f"{root}/notebooks/01_x.ipynb",
                "output_path": f"{root}/runs/tiny/01_x.ipynb",
                "parameters": {"PROFILE": "tiny"},
                "duration": 90.0,
                "exception": exception,
                "start_time": "2026-01-01T00:00:00",
                "end_time": end,
            },
            "widgets": {"state": {}},
        },
        "cells": [
            {"cell_type": "markdown", "id": "a", "metadata": {}, "source": ["# 01 · X\n", "[map](../README.md#m)"]},
            {
                "cell_type": "code",
                "id": "b",
                "execution_count": 1,
                "metadata": {"execution": {"iopub.status.idle": "2026"}, "papermill": {"duration": 1.0}, "tags": ["t"]},
                "source": ["print(1)"],
                "outputs": [
                    {"output_type": "stream", "name": "stderr", "text": ["sample: 100%|####|\r"]},
                    {"output_type": "stream", "name": "stdout", "text": [f"wrote {root}/results/tiny/x.json\n"]},
                    {
                        "output_type": "display_data",
                        "metadata": {},
                        "data": {"application/vnd.jupyter.widget-view+json": {"model_id": "m"}},
                    },
                    {
                        "output_type": "display_data",
                        "metadata": {},  # a trainer's live progress table
                        "data": {
                            "text/plain": ["<IPython.core.display.HTML object>"],
                            "text/html": ["<div><progress value='76' max='76'></progress> [76/76]</div>"],
                        },
                    },
                    {
                        "output_type": "display_data",
                        "metadata": {},
                        "data": {"text/plain": [f"{root}"], "image/png": "iVBOR"},
                    },
                ],
            },
        ],
        "nbformat": 4,
        "nbformat_minor": 5,
    }


def test_clean_keeps_what_a_reader_needs_and_nothing_of_the_machine():
    ex = _executed("/x/repo")
    ex["cells"].insert(
        1,
        {
            "cell_type": "code",
            "id": "e14a8d0b",
            "metadata": {"tags": ["injected-parameters"]},
            "source": ["PROFILE = 'tiny'"],
            "outputs": [],
            "execution_count": 1,
        },
    )
    ex["cells"].insert(
        1,
        {
            "cell_type": "code",
            "id": "p",
            "metadata": {"tags": ["parameters"]},
            "outputs": [],
            "execution_count": 1,
            "source": ["PROFILE: str = 'tiny'  # which\n", "# --- a group ---\n", "N: int = 3  # how many\n"],
        },
    )
    nb = docs.clean(ex, "/x/repo", "notebooks/01_x.ipynb", "tiny")
    params = nb["cells"].pop(2)
    assert params["source"] == [
        "# The parameters cell of notebooks/01_x.ipynb: 2 typed, commented settings (the config line says what changed)"
    ]
    injected = nb["cells"].pop(2)
    assert injected["id"] == "injected-parameters"  # papermill's random id, made stable
    assert injected["source"] == ["PROFILE = 'tiny'  # set by papermill for this run"]
    text = json.dumps(nb)
    assert "/x/repo" not in text and "iopub" not in text and "widget" not in text and "100%" not in text
    assert "<progress" not in text  # the trainer's progress table is gone (issue 36)
    assert nb["metadata"]["stepwiser_docs"] == {
        "profile": "tiny",
        "source": "notebooks/01_x.ipynb",
        "parameters": {"PROFILE": "tiny"},
        "minutes": 1.5,
    }
    assert nb["cells"][0]["id"] == "docs-banner" and "Executed copy" in nb["cells"][0]["source"][0]
    assert nb["cells"][1]["source"][1] == "[map](../../README.md#m)"  # one folder deeper
    outs = nb["cells"][2]["outputs"]
    assert [o["output_type"] for o in outs] == ["stream", "display_data"]
    assert outs[0]["text"] == ["wrote results/tiny/x.json\n"] and outs[1]["data"]["text/plain"] == ["."]
    assert nb["cells"][2]["metadata"] == {"tags": ["t"]}


def test_export_writes_the_copies_and_an_index_and_refuses_an_unfinished_run(tmp_path):
    src, out = tmp_path / "runs", tmp_path / "docs"
    src.mkdir()
    with pytest.raises(FileNotFoundError, match="make reproduce"):
        docs.export("tiny", src, out, root="/x/repo")
    (src / "01_x.ipynb").write_text(json.dumps(_executed("/x/repo")))
    assert [p.name for p in docs.export("tiny", src, out, root="/x/repo")] == ["01_x.ipynb"]
    index = (out / "README.md").read_text()
    sc = docs.screens(json.loads((out / "01_x.ipynb").read_text()))
    assert f"| [01 · X](01_x.ipynb) | [`notebooks/01_x.ipynb`](../../notebooks/01_x.ipynb) | {sc} | 1.5 |" in index
    assert f"{sc:.1f} screens in all" in index
    (src / "02_y.ipynb").write_text(json.dumps(_executed("/x/repo", end=None)))
    with pytest.raises(RuntimeError, match="did not finish"):
        docs.export("tiny", src, out, root="/x/repo")
    (src / "02_y.ipynb").write_text(json.dumps(_executed("/x/repo", exception=True)))
    with pytest.raises(RuntimeError, match="stopped with an error"):
        docs.export("tiny", src, out, root="/x/repo")
    # issue 49 (reliability review 3, MK03): a failed later notebook leaves every earlier copy as it was
    before = {p.name: p.read_bytes() for p in out.iterdir()}
    newer = _executed("/x/repo")
    newer["metadata"]["papermill"]["duration"] = 300.0  # another run's copy: its minutes differ
    (src / "01_x.ipynb").write_text(json.dumps(newer))
    with pytest.raises(
        RuntimeError, match=r"02_y.ipynb stopped with an error: rerun before exporting \(docs/tiny/ left"
    ):
        docs.export("tiny", src, out, root="/x/repo")
    assert {p.name: p.read_bytes() for p in out.iterdir()} == before


def test_screens_count_a_link_as_its_text():
    url = "https://colab.research.google.com/github/o/r/blob/main/notebooks/01_x.ipynb"
    badge = f"[![Open In Colab](https://colab.research.google.com/assets/colab-badge.svg)]({url}) The [map](../README.md#m)."
    assert docs._link_text(badge) == "Open In Colab The map."
    assert docs._link_text("f(x) [x] (y)") == "f(x) [x] (y)"  # not a link
    nb = {"cells": [{"cell_type": "markdown", "source": [badge + " " + "x" * 60]}]}  # 83 rendered characters
    assert docs.screens(nb) == round((1 + 1) / docs.SCREEN_LINES, 1) and len(badge) > 110


def test_screens_count_rendered_lines():
    nb = {
        "cells": [
            {"cell_type": "markdown", "source": ["# T\n", "x" * 230]},  # 1 + 3 wrapped lines + 1
            {
                "cell_type": "code",
                "metadata": {},
                "source": ["a = 1\n", "b = 2"],  # 2 + 1
                "outputs": [
                    {"output_type": "stream", "text": ["1\n2\n3\n"]},  # 3
                    {"output_type": "display_data", "data": {"image/png": "x"}},  # a figure
                    {"output_type": "display_data", "data": {"text/html": "<table><tr><tr><tr></table>"}},
                ],
            },
        ]
    }  # 3 rows
    assert docs.screens(nb) == round((5 + 3 + 3 + docs.FIGURE_LINES + 3) / docs.SCREEN_LINES, 1)
    folded = {
        "cells": [
            {
                "cell_type": "markdown",
                "source": [
                    "# T\n",
                    "<details><summary>Try this</summary>\n",
                    "\n",
                    "| a |\n",
                    "|---|\n",
                    "| 1 |\n",
                    "</details>\n",
                    "after",
                ],
            }
        ]
    }
    assert docs.screens(folded) == round((3 + 1) / docs.SCREEN_LINES, 1)  # title, summary line, "after", + 1


def test_a_paragraph_reflows_as_rendered_and_blocks_keep_their_lines():
    para = [
        "# T\n",
        "a" * 40 + "\n",
        "b" * 40 + "\n",
        "c" * 40 + "\n",
        "\n",
        "- item\n",
        "  more\n",
        "| x |\n",
        "| y |",
    ]
    # the title; the paragraph's three source lines as one of 122 characters (2 at 110); the blank;
    # the list item with its continuation; two table rows; + 1 for the cell
    assert docs.screens({"cells": [{"cell_type": "markdown", "source": para}]}) == round(8 / docs.SCREEN_LINES, 1)
    formula = ["$$a\n", "b$$\n", "after"]  # a display formula keeps its lines
    assert docs._reflowed(["$$a", "b$$", "after", "more"]) == ["$$a", "b$$", "after more"]
    assert docs.screens({"cells": [{"cell_type": "markdown", "source": formula}]}) == round(4 / docs.SCREEN_LINES, 1)


def test_a_folded_markdown_output_counts_its_summary_line():
    out = "<details><summary>4 examples</summary>\n\n```\n" + "line\n" * 40 + "```\n</details>"
    nb = {
        "cells": [
            {
                "cell_type": "code",
                "metadata": {},
                "source": ["show()"],  # 1 + 1
                "outputs": [{"output_type": "display_data", "data": {"text/markdown": out}}],  # 1
            }
        ]
    }
    assert docs.screens(nb) == round(3 / docs.SCREEN_LINES, 1)


def test_injected_values_and_links_one_folder_deeper():
    assert docs.injected_source(["# Parameters\n", 'PROFILE = "tiny"\n', "N = 3\n"]) == [
        'PROFILE = "tiny"  # set by papermill for this run\n',
        "N = 3",
    ]
    assert docs.injected_source(["# Parameters\n"]) == []
    md = "[a](../README.md#x) [b](../LAB_LOG.md) [c](../docs/results_tiny.md) [d](02_y.ipynb)"
    assert docs.deeper(md) == "[a](../../README.md#x) [b](../../LAB_LOG.md) [c](../results_tiny.md) [d](02_y.ipynb)"


def test_reader_source_points_to_machinery_and_keeps_the_rest():
    src = "notebooks/01_x.ipynb"
    book = {
        "cell_type": "code",
        "metadata": {"tags": ["bookkeeping"], "stepwiser": {"bookkeeping": "imports and paths"}},
        "source": ["import x\n", "y = 1\n", "z = 2"],
    }
    assert docs.reader_source(book, src) == ["# Imports and paths: 3 lines of bookkeeping, in notebooks/01_x.ipynb"]
    colab = {
        "cell_type": "code",
        "metadata": {"jupyter": {"source_hidden": True}},
        "source": ["# Colab bootstrap (x)\n", "a\n", "b"],
    }
    assert docs.reader_source(colab, src) == [
        "# Colab bootstrap (3 lines; it runs only on Colab): see notebooks/01_x.ipynb"
    ]
    checks = {"cell_type": "code", "metadata": {"tags": ["inputs"]}, "source": ["cfg = 1\n", "inputs.check(cfg)"]}
    assert docs.reader_source(checks, src) == [
        "# The config check and the input check (2 lines, in notebooks/01_x.ipynb); their lines:"
    ]
    plain = {"cell_type": "code", "metadata": {}, "source": ["print(1)"]}
    assert docs.reader_source(plain, src) is plain["source"]
    md = {
        "cell_type": "markdown",
        "metadata": {"tags": ["bookkeeping"]},
        "source": ["# Colab bootstrap is a heading here"],
    }
    assert docs.reader_source(md, src) is md["source"]  # only code cells fold


def test_committed_docs_are_clean_copies_of_the_current_notebooks():
    """docs/tiny holds one executed copy per notebook, with outputs, no machine paths, and the
    source notebook's cells in the same order (a stale copy fails: rerun `make docs`)."""
    from stepwiser_lib.core.config import list_notebooks
    from stepwiser_lib.core.paths import ROOT

    d = ROOT / "docs" / "tiny"
    if not d.exists():
        pytest.skip("no docs/tiny yet")
    for src in list_notebooks():
        copy = json.loads((d / src.name).read_text())
        text = json.dumps(copy)
        assert str(ROOT) not in text and "/work/" not in text and "/home/" not in text, src.name
        cells = [c for c in copy["cells"][1:] if c["id"] != "injected-parameters"]
        source = json.loads(src.read_text())["cells"]
        assert [c["id"] for c in cells] == [c["id"] for c in source], f"{src.name}: stale copy (run make docs)"
        for a, b in zip(cells, source):
            want = docs.deeper("".join(b["source"]))
            if (
                docs.reader_source(b, f"notebooks/{src.name}") is not b["source"]
            ):  # the copy points to the cell (issue 36)
                want = "".join(docs.reader_source(b, f"notebooks/{src.name}"))
            assert "".join(a["source"]) == want, f"{src.name}, cell {b['id']}: stale copy (run make docs)"
        assert any(c.get("outputs") for c in cells), f"{src.name}: no outputs"
