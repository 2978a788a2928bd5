"""The chunk-of-thought format (paper Table 11) and ``\\boxed{}`` answers: pure text functions
shared by every stage, for real models and the toy world alike. Nothing here knows the toy world.

* A chunk-policy response is ``<chunk>...</chunk>`` units separated by blank lines, the last
  one holding the final answer in ``\\boxed{}`` (Table 11).
* ``\\boxed{}`` contents are read with **balanced braces**, so real answers such as
  ``\\boxed{\\frac{1}{2}}`` or ``\\boxed{3\\sqrt{2}}`` come back whole; the **last** box of a
  text is its answer (the policy prompt asks for the final answer in a box).
"""

from __future__ import annotations

import re

CHUNK_OPEN, CHUNK_CLOSE = "<chunk>", "</chunk>"
CHUNK_RE = re.compile(r"<chunk>(.*?)</chunk>", re.S)
#: What the policy writes between two chunks. Prefixes are cut after it, not right after
#: ``</chunk>``: byte-level BPEs such as Qwen's merge ``>\n\n`` into one token, so a prefix
#: ending in ``>`` would start a rollout at a token boundary the policy never produces.
SEPARATOR = "\n\n"
_BOX = "\\boxed{"


def parse_chunks(text: str) -> list[str]:
    """Contents of the complete ``<chunk>...</chunk>`` units of ``text`` (stripped)."""
    return [c.strip() for c in CHUNK_RE.findall(text)]


def strip_tags(text: str) -> str:
    """The text with every chunk tag removed (a segmentation must give back the original)."""
    return text.replace(CHUNK_OPEN, "").replace(CHUNK_CLOSE, "")


def outside_chunks(text: str) -> str:
    """What ``text`` holds outside its complete chunks (blank lines only, in a well-formed one)."""
    return CHUNK_RE.sub("", text)


def chunk_ends(text: str) -> list[int]:
    """Offsets just after each ``</chunk>``: ``text[:ends[i]]`` is the prefix including chunk i."""
    ends, i = [], text.find(CHUNK_CLOSE)
    while i >= 0:
        ends.append(i + len(CHUNK_CLOSE))
        i = text.find(CHUNK_CLOSE, ends[-1])
    return ends


def prefix_ends(text: str) -> list[int]:
    """Like :func:`chunk_ends`, but each cut also takes the :data:`SEPARATOR` that follows the
    chunk when there is one, so a prefix ends where the policy's next chunk would begin."""
    out = []
    for e in chunk_ends(text):
        out.append(e + len(SEPARATOR) if text.startswith(SEPARATOR, e) else e)
    return out


def first_chunk(text: str) -> str | None:
    """Content of the first complete ``<chunk>...</chunk>`` of ``text`` (stripped), else None."""
    i = text.find(CHUNK_OPEN)
    j = text.find(CHUNK_CLOSE, i + 1) if i >= 0 else -1
    if i < 0 or j < 0:
        return None
    return text[i + len(CHUNK_OPEN) : j].strip()


def split_paragraphs(text: str) -> list[str]:
    """Split by blank lines, the "split by \\n\\n" step definition of the paper (Table 4)."""
    return [p for p in (x.strip() for x in text.split("\n\n")) if p]


def paragraph_chunks(text: str) -> str:
    """``text`` with every blank-line paragraph wrapped in chunk tags, the separators kept, so
    :func:`strip_tags` gives ``text`` back byte for byte. The paper's "split by \\n\\n" steps
    (Table 4) in the chunk format: a rule teacher for any text, and the format of reference
    solutions used as stand-in trajectories."""
    parts: list[str] = []
    for p in text.split(SEPARATOR):
        if parts and not p.strip():  # an empty piece (three or more newlines) joins its neighbour
            parts[-1] += SEPARATOR + p
        else:
            parts.append(p)
    return SEPARATOR.join(CHUNK_OPEN + p + CHUNK_CLOSE for p in parts)


def boxed_contents(text: str) -> list[str]:
    """Contents of every ``\\boxed{...}`` in order, nested braces balanced; an unclosed box
    ends the scan (nothing after it can be read reliably)."""
    out, i = [], 0
    text = text or ""
    while (j := text.find(_BOX, i)) >= 0:
        k, depth = j + len(_BOX), 1
        while k < len(text) and depth:
            depth += {"{": 1, "}": -1}.get(text[k], 0)
            k += 1
        if depth:
            break
        out.append(text[j + len(_BOX) : k - 1])
        i = k
    return out


def last_boxed(text: str) -> str | None:
    """The answer of a response: the last balanced ``\\boxed{}``'s content (stripped), or None."""
    boxes = boxed_contents(text)
    return boxes[-1].strip() if boxes else None


def format_ok(text: str) -> bool:
    """A chunk-policy response (Table 11 contract): at least one chunk, nothing outside the
    chunks but blank lines, and a boxed answer in the last chunk."""
    chunks = parse_chunks(text)
    if not chunks or outside_chunks(text).strip():
        return False
    return last_boxed(chunks[-1]) is not None
