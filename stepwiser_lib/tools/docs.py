"""``make docs``: read-only executed copies of the notebooks, for a reader who runs nothing.

    python -m stepwiser_lib.tools.docs                 # run every notebook at tiny (reusing runs/tiny/), then export
    python -m stepwiser_lib.tools.docs --no-run        # export what the last run left in runs/tiny/
    python -m stepwiser_lib.tools.docs --only 07       # rerun one notebook, export all

The runner executes the notebooks into ``runs/<profile>/`` (:mod:`stepwiser_lib.tools.runner`); every
stage resumes from its artifacts there, so after a ``make reproduce`` this costs minutes, not the
whole run. The export then writes ``docs/<profile>/NN_stage.ipynb`` with the outputs a reader needs
(printed examples, tables, figures) and without what only the machine that ran them needs:

* stderr (progress bars and library warnings) and widget outputs are dropped, and so are the
  trainers' live HTML progress tables (a progress bar and a loss row per logging step, which the
  notebook plots as a curve anyway);
* execution timestamps and papermill's per-cell timings are dropped, and so are its absolute paths
  and the random id of its injected parameters cell;
* the repository's absolute path, wherever an output prints it, becomes a relative one;
* the parameters cell (up to 58 lines of typed, commented settings) becomes a pointer to it in
  the source notebook (:func:`parameters_pointer`); the config line under it says what this run's
  profile changed, and the injected cell holds the values papermill set; cells tagged
  :data:`BOOKKEEPING` (imports, paths, results files) and the Colab bootstrap become one-line
  pointers too, with their outputs kept (:func:`reader_source`);
* links to ``../README.md`` are rewritten for the deeper folder, and a first cell says the copy
  is generated (edit ``notebooks/`` instead).

GitHub renders ``.ipynb`` files with their outputs, so no HTML copy is written: it would show the
same thing twice. ``docs/<profile>/README.md`` lists the copies with each one's run time.
"""

from __future__ import annotations

import argparse
import copy
import json
import re
import sys
from pathlib import Path

from ..core.config import ConfigError
from ..core.io import atomic_write_text
from ..core.paths import ROOT, run_dir
from .runner import run

DOCS_DIR = ROOT / "docs"
#: Output MIME types kept (everything else, e.g. widget views, is dropped).
KEEP_MIME = ("text/plain", "text/html", "text/markdown", "image/png", "image/svg+xml")


def deeper(markdown: str) -> str:
    """A notebook's markdown with its links to the repository made valid one folder deeper
    (``notebooks/`` -> ``docs/<profile>/``); a link into ``docs/`` becomes a sibling link."""
    return (
        markdown.replace("](../README.md", "](../../README.md")
        .replace("](../LAB_LOG.md", "](../../LAB_LOG.md")
        .replace("](../docs/", "](../")
    )


def _relative(text: str, root: str) -> str:
    """``text`` with the repository's absolute path made relative (``/x/repo/runs`` -> ``runs``)."""
    return text.replace(root + "/", "").replace(root, ".")


def _fix(value, root: str):
    if isinstance(value, str):
        return _relative(value, root)
    if isinstance(value, list):
        return [_fix(v, root) for v in value]
    return value


def clean(nb: dict, root: str | Path, source: str, profile: str) -> dict:
    """The reader's copy of one executed notebook (see the module docstring)."""
    root = str(root).rstrip("/")
    nb = copy.deepcopy(nb)
    meta = nb.get("metadata", {})
    pm = meta.pop("papermill", {}) or {}
    meta.pop("widgets", None)
    meta["stepwiser_docs"] = {
        "profile": profile,
        "source": source,
        "parameters": pm.get("parameters", {}),
        "minutes": round(pm["duration"] / 60, 1) if pm.get("duration") else None,
    }
    cells = []
    for c in nb["cells"]:
        c["metadata"].pop("execution", None)
        c["metadata"].pop("papermill", None)
        if "injected-parameters" in c["metadata"].get("tags", []):
            c["id"] = "injected-parameters"  # papermill draws a random id: the same run twice gives the same file
            c["source"] = injected_source(c["source"])
        c["source"] = reader_source(c, source)
        if c["cell_type"] == "markdown":
            c["source"] = [deeper(s) for s in c["source"]]
        if c["cell_type"] == "code":
            outs = []
            for o in c.get("outputs", []):
                if o["output_type"] == "stream":
                    if o.get("name") == "stderr":
                        continue
                    o["text"] = _fix(o["text"], root)
                elif o["output_type"] in ("display_data", "execute_result"):
                    o["data"] = {k: _fix(v, root) for k, v in o.get("data", {}).items() if k in KEEP_MIME}
                    o["metadata"] = {k: v for k, v in o.get("metadata", {}).items() if k in KEEP_MIME}
                    if not o["data"] or is_progress_table(o["data"]):
                        continue
                elif o["output_type"] == "error":
                    o["traceback"] = _fix(o.get("traceback", []), root)
                outs.append(o)
            c["outputs"] = outs
        cells.append(c)
    banner = {
        "cell_type": "markdown",
        "id": "docs-banner",
        "metadata": {},
        "source": [
            f"> **Executed copy** of [`{source}`](../../{source}) (`{profile}`): edit the source. "
            "[What it leaves out](README.md)."
        ],
    }
    nb["cells"] = [banner] + cells
    return nb


#: A code cell's tag for machinery a reader of the executed copy can skip (imports and paths,
#: writing results files): the copy shows a one-line pointer to it, and keeps its outputs.
BOOKKEEPING = "bookkeeping"
#: The tag of the cell that checks the config and the earlier notebooks' files (the same five lines
#: in every notebook): the copy shows a one-line pointer and keeps what it prints.
INPUTS = "inputs"


def reader_source(cell: dict, source: str) -> list[str]:
    """What a reader's copy shows as ``cell``'s source: the parameters cell, the config and input
    check (tagged :data:`INPUTS`; its printed lines stay) and cells tagged :data:`BOOKKEEPING`
    become pointers to the source notebook, the hidden Colab bootstrap one line
    (issue 36: a reader met up to 2.5 screens of machinery before the first idea); every other cell
    as it is."""
    tags = cell.get("metadata", {}).get("tags", [])
    if "parameters" in tags:
        return parameters_pointer(cell["source"], source)
    lines = "".join(cell["source"]).splitlines()
    if cell["cell_type"] == "code" and lines and lines[0].startswith("# Colab bootstrap"):
        return [f"# Colab bootstrap ({len(lines)} lines; it runs only on Colab): see {source}"]
    if cell["cell_type"] == "code" and INPUTS in tags:
        return [f"# The config check and the input check ({len(lines)} lines, in {source}); their lines:"]
    if cell["cell_type"] == "code" and BOOKKEEPING in tags:
        what = cell.get("metadata", {}).get("stepwiser", {}).get("bookkeeping", "bookkeeping")
        return [f"# {what[0].upper() + what[1:]}: {len(lines)} lines of bookkeeping, in {source}"]
    return cell["source"]


def parameters_pointer(cell_source, source: str) -> list[str]:
    """What a reader's copy shows of the parameters cell: where the cell is and how long, instead
    of the cell (issue 36: it and its echo took up to 2.5 screens before the first idea)."""
    lines = "".join(cell_source).splitlines()
    n = sum(1 for ln in lines if ln.strip() and not ln.lstrip().startswith("#"))
    return [f"# The parameters cell of {source}: {n} typed, commented settings (the config line says what changed)"]


def injected_source(cell_source) -> list[str]:
    """papermill's injected cell as one line per value it set, saying where it came from."""
    values = [ln for ln in "".join(cell_source).splitlines() if ln.strip() and not ln.startswith("#")]
    if not values:
        return []
    text = "\n".join([values[0] + "  # set by papermill for this run", *values[1:]])
    return [ln + "\n" for ln in text.split("\n")[:-1]] + [text.split("\n")[-1]]


def is_progress_table(data: dict) -> bool:
    """A trainer's live progress display (transformers' notebook callback: an HTML ``<progress>`` bar
    over a table of logged losses): machine output, not something a reader of the copy needs."""
    html = data.get("text/html", "")
    return "<progress" in ("".join(html) if isinstance(html, list) else html)


#: Rendered lines one screen holds (a laptop browser on GitHub's notebook view), and the lines a
#: figure takes: the unit :func:`screens` counts reading length in (issue 36).
SCREEN_LINES, FIGURE_LINES = 45, 20


def screens(nb: dict, width: int = 110) -> float:
    """About how many screens an executed copy takes to read: markdown, code and printed output
    lines (a markdown paragraph's lines join as they render, a link as its text, then wrap at
    ``width`` characters; code does not wrap), a table row a line, a figure :data:`FIGURE_LINES`, a folded ``<details>``
    section (in markdown or in a markdown output) its summary line. A measure to compare copies
    by, not a precise one."""
    lines = 0
    for c in nb["cells"]:
        src = "".join(c["source"]).splitlines()
        if c["cell_type"] == "markdown":
            lines += sum(max(1, -(-len(_link_text(ln)) // width)) for ln in _reflowed(_unfolded(src))) + 1
            continue
        if not c.get("metadata", {}).get("jupyter", {}).get("source_hidden"):
            lines += len(src) + 1
        for o in c.get("outputs", []):
            data = o.get("data", {})
            if "image/png" in data or "image/svg+xml" in data:
                lines += FIGURE_LINES
            elif "text" in o:
                lines += len("".join(o["text"]).splitlines())
            elif "text/markdown" in data:  # a folded <details> output counts its summary line
                lines += len(_unfolded("".join(data["text/markdown"]).splitlines()))
            elif "text/html" in data:  # a table: a row a line
                lines += "".join(data["text/html"]).count("<tr")
            elif "text/plain" in data:
                lines += len("".join(data["text/plain"]).splitlines())
    return round(lines / SCREEN_LINES, 1)


#: A markdown line that starts its own rendered line (a heading, list item, table row, quote,
#: display formula, fence or HTML tag); any other line continues the paragraph above it.
_BLOCK_START = ("#", "|", "- ", "* ", "> ", "$$", "```", "~~~", "<", "    ")


def _reflowed(lines: list[str]) -> list[str]:
    """Markdown source lines as rendered lines before wrapping: a paragraph's soft line breaks do
    not render, so its lines join into one (wrapped later at the screen's width); a blank line,
    a block element and every line inside a fence or a display formula stay as they are."""
    out: list[str] = []
    joinable, fence = False, None
    for ln in lines:
        s = ln.strip()
        if fence:  # inside a fenced block or a display formula: every line as it is
            out.append(ln)
            if s.startswith(fence) or (fence == "$$" and s.endswith("$$")):
                fence = None
            continue
        if s.startswith(("```", "~~~")) or (s.startswith("$$") and not (len(s) > 2 and s.endswith("$$"))):
            fence, joinable = s[:3] if s[0] != "$" else "$$", False
            out.append(ln)
            continue
        if not s:
            out.append(ln)
            joinable = False
            continue
        if joinable and not ln.startswith(_BLOCK_START) and not re.match(r"\d+\. ", s):
            out[-1] = out[-1].rstrip() + " " + s
            continue
        out.append(ln)
        joinable = not ln.startswith(("#", "|", "<", "$$"))
    return out


_LINK = re.compile(r"!?\[([^\[\]]*)\]\([^()\s]*\)")


def _link_text(line: str) -> str:
    """A markdown line as it renders its links and images: their text, without the address (a
    badge, a link inside a link's text, included)."""
    while True:
        out = _LINK.sub(r"\1", line)
        if out == line:
            return out
        line = out


def _unfolded(lines: list[str]) -> list[str]:
    """Markdown lines as a reader first sees them: a folded ``<details>`` block is its summary line."""
    out, depth = [], 0
    for ln in lines:
        if ln.strip().startswith("<details"):
            depth += 1
            if depth == 1:
                out.append(ln)
        elif ln.strip().startswith("</details>"):
            depth = max(0, depth - 1)
        elif depth == 0:
            out.append(ln)
    return out


def _title(nb: dict) -> str:
    first = next(
        (c for c in nb["cells"] if c["cell_type"] == "markdown" and "".join(c["source"]).startswith("# ")), None
    )
    return "".join(first["source"]).splitlines()[0][2:].strip() if first else "?"


def export(
    profile: str = "tiny", src: str | Path | None = None, out: str | Path | None = None, root: str | Path = ROOT
) -> list[Path]:
    """Write the reader's copy of every executed notebook in ``src`` (default ``runs/<profile>/``)
    to ``out`` (default ``docs/<profile>/``), and an index; returns the copies written."""
    src = Path(src or run_dir(profile))
    out = Path(out or DOCS_DIR / profile)
    nbs = sorted(src.glob("[0-9][0-9]_*.ipynb"))
    if not nbs:
        raise FileNotFoundError(
            f"no executed notebooks in {src}: run `make reproduce PROFILE={profile}` "
            f"or `python -m stepwiser_lib.tools.docs --profile {profile}` first"
        )
    loaded = {p: json.loads(p.read_text()) for p in nbs}
    bad = [
        f"{p.name} {'stopped with an error' if pm.get('exception') else 'did not finish'}"
        for p, nb in loaded.items()
        for pm in [nb.get("metadata", {}).get("papermill", {})]
        if pm.get("exception") or not pm.get("end_time")
    ]
    if bad:  # every copy checked before any is written: docs/ never mixes two runs (issue 49)
        raise RuntimeError(f"in {src}: {'; '.join(bad)}: rerun before exporting (docs/{profile}/ left as it was)")
    out.mkdir(parents=True, exist_ok=True)
    written, rows, total = [], [], 0.0
    for p, nb in loaded.items():
        doc = clean(nb, root, f"notebooks/{p.name}", profile)
        dest = out / p.name
        atomic_write_text(dest, json.dumps(doc, indent=1, ensure_ascii=False) + "\n")  # never a half-written copy
        written.append(dest)
        m = doc["metadata"]["stepwiser_docs"]["minutes"]
        sc = screens(doc)
        total += sc
        rows.append(
            f"| [{_title(nb)}]({p.name}) | [`notebooks/{p.name}`](../../notebooks/{p.name}) | {sc} | "
            f"{'' if m is None else m} |"
        )
    index = [
        f"# The notebooks, executed at `{profile}`",
        "",
        "Read-only copies with every output (printed examples, tables, figures) of the last "
        f"`make docs` at the `{profile}` profile. GitHub shows them as they are; nothing needs to run. "
        "They are regenerated with the results (`make docs`, or `make reproduce` at tiny); "
        "edit the notebooks in `notebooks/`, never these.",
        "",
        "**What a copy leaves out.** Progress bars, trainers' progress tables and library warnings; the "
        "parameters cell, the config and input check, the Colab bootstrap and cells of bookkeeping "
        "(imports, paths, results files) become one-line pointers to the source notebook, their outputs "
        "kept. Long printed examples, and the numbers behind a figure, are folded under a summary line "
        "that says what each one is. Where the run found an earlier "
        "run's files on disk it read them instead of recomputing, so a time printed in a copy can be an "
        "earlier run's; the run-time table of docs/results_tiny.md gives a fresh run's times.",
        "",
        "| notebook | source | screens to read | minutes in the run that wrote it |",
        "|---|---|---|---|",
        *rows,
        "",
        f"{total:.1f} screens in all (`stepwiser_lib.tools.docs.screens`: {SCREEN_LINES} rendered lines a screen, a "
        f"paragraph's lines joined as rendered, a link as its text, a figure {FIGURE_LINES}, a folded section its "
        "summary line; LAB_LOG.md, issue 36, measures earlier copies the same way).",
        "",
    ]
    atomic_write_text(out / "README.md", "\n".join(index))
    return written


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description="Executed, read-only copies of the notebooks (docs/<profile>/).")
    ap.add_argument("--profile", default="tiny")
    ap.add_argument("--no-run", action="store_true", help="export what runs/<profile>/ holds; run nothing")
    ap.add_argument("--only", nargs="*", help="rerun only these notebooks (number prefixes) before exporting all")
    a = ap.parse_args(argv)
    if not a.no_run:
        try:
            run(
                a.profile, a.only, record=False
            )  # resumes from runs/<profile>/artifacts; the run-time table is left alone
        except (ConfigError, RuntimeError) as e:
            print(f"[docs] FAILED: {e}", file=sys.stderr)
            return 1
    try:
        written = export(a.profile)
    except (FileNotFoundError, RuntimeError) as e:
        print(f"[docs] FAILED: {e}", file=sys.stderr)
        return 1
    for p in written:
        print(f"[docs] wrote {p.relative_to(ROOT) if p.is_relative_to(ROOT) else p}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
