"""A judge's verdict, and the one rule for an output that has none (every stage: 04, 05, 06, 07, RS-FT).

The generative judge ends its output with ``\\boxed{Positive}`` or ``\\boxed{Negative}`` (paper
Table 3); :func:`parse_verdict` reads the content of the **last** box. A real model often writes
none: SmolLM2-135M-Instruct wrote 0 parsable verdicts in 48 tries
on real ProcessBench steps, and the stages used to treat that four ways (05 as
Positive, 06 as a rejection, 07 as a score of 0, 04 as wrong). Now one rule, :data:`RULE`, holds
everywhere:

**An output without a parsable verdict is no verdict, and no verdict earns nothing.** It never
matches a label (04's accuracy and the GRPO reward count it wrong; RS-FT never keeps it), never
accepts a chunk by itself (06 samples the chunk again; once every attempt is spent, the fallback
picks by score, where it counts 0), counts 0 wherever a score is read (07's chunk score, a
Positive counting 1), casts no vote in a Maj@k majority, and leaves a ProcessBench solution without
a prediction (05: the solution stops there and matches neither an error index nor "no error", as
ProcessBench scores an unparsable critic; under a threshold, a step none of whose samples parsed
does the same). Every stage counts its
unparsed outputs and prints the count beside the result it touches (:func:`tally`), and a result
whose judge was never asked, or never gave a parsable verdict, is reported as
:data:`UNINFORMATIVE`, not as a number (:func:`informative`).
"""

from __future__ import annotations

import re

from .chunks import boxed_contents

VERDICTS = ("Positive", "Negative")
RULE = (
    "an output without a parsable verdict is no verdict, and no verdict earns nothing: it never matches "
    "a label, never accepts a chunk by itself, counts 0 in a score, casts no vote in a majority, and leaves a "
    "ProcessBench solution without a prediction"
)
#: Part of the cache keys of every stage that applies :data:`RULE` (05, 06, 07): a run cached under an
#: older rule is redone, not read back with the old semantics.
RULE_VERSION = 2
#: The verdict of a comparison (and the value of a table cell) that rests on a judge that was never
#: asked or never parsed: no number would mean anything.
UNINFORMATIVE = "uninformative"


#: The verdict as one regular expression, for code outside this library (an exported judge carries
#: it in ``stepwiser_judge.json``): ``re.search(VERDICT_PATTERN, output, re.IGNORECASE | re.DOTALL)``,
#: group 1 capitalised. It finds a ``\boxed{Positive}`` or ``\boxed{Negative}`` (whitespace
#: inside, any case) after which no other ``\boxed{`` opens: the last box, which
#: :func:`parse_verdict` reads. The two read alike on every output but two kinds no judge here is
#: trained to write: a verdict box inside another box, and a verdict followed by an unclosed box
#: (which :func:`parse_verdict` skips and the pattern reads as no verdict).
VERDICT_PATTERN = r"\\boxed\{\s*(Positive|Negative)\s*\}(?!.*\\boxed\{)"
#: The flags :data:`VERDICT_PATTERN` is read with, by their ``re`` names.
VERDICT_FLAGS = ("IGNORECASE", "DOTALL")


def match_verdict(text: str | None) -> str | None:
    """``"Positive"``/``"Negative"`` as :data:`VERDICT_PATTERN` reads ``text`` (None: no match)."""
    m = re.search(VERDICT_PATTERN, text or "", re.IGNORECASE | re.DOTALL)
    return m.group(1).capitalize() if m else None


def parse_verdict(text: str) -> str | None:
    """``"Positive"``/``"Negative"`` from the content of the **last** ``\\boxed{...}``
    (whitespace-stripped, case-insensitive); None if there is no box or another word (or no text)."""
    if text is not None and not isinstance(text, str):
        raise TypeError(f"parse_verdict reads a judge's output text, not a {type(text).__name__}")
    boxes = boxed_contents(text or "")
    if not boxes:
        return None
    v = boxes[-1].strip().lower()
    for name in VERDICTS:
        if v == name.lower():
            return name
    return None


def tally(judged: list[dict], k: int | None = None) -> dict:
    """How a stage's judge calls went: ``asked`` (judgements), ``samples`` (outputs read),
    ``unparsed`` (outputs without a verdict), ``no_verdict`` (judgements none of whose samples
    parsed) and ``unparsed_pct``. ``judged``: :meth:`stepwiser_lib.method.judge.Judge.judge` records
    (``n_unparsed`` of ``k`` samples each; a discriminative judge's always parse), or per-chunk
    predictions of one greedy verdict each (``verdict`` None when it did not parse)."""
    asked = len(judged)
    unparsed = sum(int(j["n_unparsed"]) if "n_unparsed" in j else int(j.get("verdict") is None) for j in judged)
    samples = asked * (k or 1)
    return {
        "asked": asked,
        "samples": samples,
        "unparsed": unparsed,
        "no_verdict": sum(j.get("verdict") is None for j in judged),
        "unparsed_pct": round(100 * unparsed / samples, 2) if samples else None,
    }


def merge(*tallies: dict) -> dict:
    """The sum of several :func:`tally` counts (a judge over many calls)."""
    out = {"asked": 0, "samples": 0, "unparsed": 0, "no_verdict": 0}
    for t in tallies:
        for key in out:
            out[key] += t.get(key, 0)
    out["unparsed_pct"] = round(100 * out["unparsed"] / out["samples"], 2) if out["samples"] else None
    return out


def informative(t: dict | None) -> bool:
    """Whether a result built on these judge calls means anything: the judge was asked at least
    once and gave at least one parsable verdict."""
    return bool(t) and t["asked"] > 0 and t["unparsed"] < t["samples"]


def describe(t: dict | None, label: bool = True) -> str:
    """``"12 judgements, 3 of 12 outputs unparsed (25.0%)"``, or why the result is uninformative
    (``label``: prefixed with the word itself)."""
    if not t or not t["asked"]:
        line, ok = "the judge was never asked", False
    else:
        line = f"{t['asked']} judgements, {t['unparsed']} of {t['samples']} outputs unparsed ({t['unparsed_pct']}%)"
        ok = informative(t)
    return line if ok or not label else f"{UNINFORMATIVE}: {line}"


def mask(row: dict, t: dict | None, fields: list[str]) -> dict:
    """``row`` with ``fields`` replaced by :data:`UNINFORMATIVE` when ``t`` is not
    :func:`informative`, and a ``verdicts`` column saying how the judge's outputs parsed."""
    out = {**row, "verdicts": describe(t)}
    if not informative(t):
        out.update({f: UNINFORMATIVE for f in fields if f in out})
    return out


def uninformative_comparison(base: dict, why: str) -> dict:
    """A paired comparison that was not made because one side's judge said nothing: its names
    kept, no numbers, the verdict :data:`UNINFORMATIVE` and why."""
    return {**base, "diff": None, "low": None, "high": None, "p_bootstrap": None, "test": why, "verdict": UNINFORMATIVE}
