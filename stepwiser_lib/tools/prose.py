"""Numbers in the notebooks' prose against what their cells print (issue 36).

A number a notebook's markdown or a code comment states about *this* run goes stale the moment the
run changes, unless a cell prints it. :func:`stray_numbers` lists every number in the prose of an
executed notebook that none of these accounts for:

* the notebook's outputs (printed text, tables, markdown a cell displays);
* its parameter values (what the parameters cell sets);
* the paper: every number of Tables 4-8 and their row differences, the settings of
  :data:`stepwiser_lib.evals.paper_results.PAPER_CONSTANTS`;
* small counts (an integer up to 10: "four splits", "two seeds"), and what is not a claim about
  a result: LaTeX, code spans, links, and references (§4.1, Table 5, issue 35, section 3, notebook 02).

A stray number is either a result typed by hand (print it from a cell, or drop it) or a fact the
list above should know; the test over ``docs/tiny/`` allows none.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

from ..core.paths import ROOT
from ..evals import paper_results as P

#: A number as prose writes it: 65.0, −3.6, +12.1, 3,400, 45%, 1e-6.
NUMBER = re.compile(r"(?<![\w.§$\\/-])[−+-]?\d[\d,]*(?:\.\d+)?(?:e-?\d+)?%?(?![\w/])")

_DROP = [
    re.compile(p, re.S)
    for p in (
        r"\$\$.*?\$\$",
        r"\$[^$\n]*\$",
        r"`[^`]*`",
        r"\]\([^)]*\)",
        r"https?://\S+",
        r"<[^>]+>",
        r"(?:§|Tables?|Figures?|Fig\.|Eq\.|issues?|sections?|Sections?|notebooks?|stages?|arXiv|App\.|Appendix|part)"
        r"\s*[\d.]+(?:\s*(?:,|and|or|–|-|to)\s*[\d.]+)*",
        r"\b\d{2}_[a-z_]+",  # notebook names (04_judge_grpo)
        r"\b(?:19|20)\d{2}-\d{2}-\d{2}\b",  # dates
    )
]


def _value(text: str) -> float | None:
    t = text.replace("−", "-").replace(",", "").rstrip("%").lstrip("+")
    try:
        return float(t)
    except ValueError:
        return None


def _strip(text: str) -> str:
    for pat in _DROP:
        text = pat.sub(" ", text)
    return text


def prose(nb: dict) -> list[tuple[int, str]]:
    """(cell index, text) of every markdown cell and every code comment of ``nb``."""
    out = []
    for i, c in enumerate(nb["cells"]):
        src = "".join(c["source"])
        if c["cell_type"] == "markdown":
            out.append((i, src))
        elif c["cell_type"] == "code":
            comments = _comments(src)
            if comments:
                out.append((i, "\n".join(comments)))
    return out


def _comments(src: str) -> list[str]:
    """The comments of a code cell (``tokenize``: a ``#`` inside a string is not one); a cell that
    does not tokenize (IPython magics) falls back to the text after each line's ``#``."""
    import io
    import tokenize

    try:
        return [t.string[1:] for t in tokenize.generate_tokens(io.StringIO(src).readline) if t.type == tokenize.COMMENT]
    except (tokenize.TokenError, IndentationError, SyntaxError):
        return [ln.split("#", 1)[1] for ln in src.splitlines() if "#" in ln]


def _outputs(nb: dict) -> str:
    parts = []
    for c in nb["cells"]:
        for o in c.get("outputs", []):
            parts.append("".join(o.get("text", "")))
            for k in ("text/plain", "text/markdown", "text/html"):
                v = o.get("data", {}).get(k)
                if v:
                    parts.append("".join(v))
    return "\n".join(parts)


def _parameters(nb: dict) -> set[float]:
    """Every number a parameters cell assigns: the notebook's own, the injected one, and for a
    reader's copy (whose parameters cell is a pointer, ``stepwiser_lib.tools.docs``) its source's."""
    cells = [
        c
        for c in nb["cells"]
        if "parameters" in c.get("metadata", {}).get("tags", [])
        or "injected-parameters" in c.get("metadata", {}).get("tags", [])
    ]
    source = ROOT / nb.get("metadata", {}).get("stepwiser_docs", {}).get("source", "-")
    if source.is_file():
        cells += [
            c for c in json.loads(source.read_text())["cells"] if "parameters" in c.get("metadata", {}).get("tags", [])
        ]
    vals = set()
    for c in cells:
        for ln in "".join(c["source"]).splitlines():
            code = ln.split("#", 1)[0]
            if "=" in code:
                vals |= {v for v in map(_value, NUMBER.findall(code.split("=", 1)[1])) if v is not None}
    return vals


def known_numbers(nb: dict) -> set[float]:
    """The numbers a notebook's prose may state: its outputs, its parameters and the paper's."""
    known = {v for v in map(_value, NUMBER.findall(_outputs(nb))) if v is not None}
    known |= _parameters(nb)
    for tab in (P.TABLE4, P.TABLE5_6, P.TABLE7, P.TABLE8):
        known |= {float(v) for r in tab for v in r.values() if isinstance(v, (int, float))}
    known |= {float(v) for v in P.POSITIVE_RATES_1P5B.values()} | {float(v) for v in P.PAPER_CONSTANTS.values()}
    known |= P.paper_differences()
    return known


#: Conventions, not results: the level of every interval.
CONVENTIONS = {95.0}


def _matches(v: float, known: set[float]) -> bool:
    if (abs(v) <= 10 and v.is_integer()) or abs(v) in CONVENTIONS:
        return True
    for k in known:
        if (
            abs(abs(v) - abs(k)) < 1e-9
            or round(abs(k), 1) == round(abs(v), 1)
            or round(abs(k)) == abs(v)
            or round(100 * abs(k), 1) == round(abs(v), 1)
        ):  # 0.6934 printed, 69.3% written
            return True
    return False


def stray_numbers(nb: dict) -> list[dict]:
    """Every number in ``nb``'s prose (:func:`prose`) that :func:`known_numbers` does not account
    for: ``cell``, ``number`` and a stretch of ``context``."""
    known = known_numbers(nb)
    out = []
    for i, text in prose(nb):
        t = _strip(text)
        for m in NUMBER.finditer(t):
            v = _value(m.group())
            if v is not None and not _matches(v, known):
                out.append(
                    {
                        "cell": i,
                        "number": m.group(),
                        "context": " ".join(t[max(0, m.start() - 70) : m.end() + 30].split()),
                    }
                )
    return out


def main(argv: list[str] | None = None) -> int:
    """``python -m stepwiser_lib.tools.prose docs/tiny/*.ipynb``: the stray numbers of each."""
    import sys

    paths = argv if argv is not None else sys.argv[1:]
    n = 0
    for p in paths:
        for s in stray_numbers(json.loads(Path(p).read_text())):
            print(f"{Path(p).name} cell {s['cell']}: {s['number']}  | {s['context']}")
            n += 1
    print(f"{n} stray number(s)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
