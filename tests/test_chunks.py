"""The chunk format and balanced \\boxed{} reading (stepwiser_lib.core.chunks): literal cases."""

import json

import pytest

from stepwiser_lib.core import chunks, paths


@pytest.mark.parametrize(
    "text,expected",
    [
        (r"So the answer is \boxed{57}.", "57"),
        (r"\boxed{\frac{1}{2}}", r"\frac{1}{2}"),  # braces inside an answer: the old flat regex gave None
        (r"\boxed{1} then \boxed{2}", "2"),  # the last box is the answer
        (r"(1) \boxed{2} (2) \boxed{\frac{1}{2}}", r"\frac{1}{2}"),  # not the earlier flat box
        (r"\boxed{3\sqrt{2}} and \boxed{unclosed", r"3\sqrt{2}"),  # an unclosed box ends the scan
        (r"\boxed{ x^{2} }", "x^{2}"),
        ("no box at all", None),
        ("", None),
    ],
)
def test_last_boxed(text, expected):
    assert chunks.last_boxed(text) == expected


def test_boxed_contents_in_order():
    assert chunks.boxed_contents(r"\boxed{a}\boxed{\text{b}}") == ["a", r"\text{b}"]


def test_chunk_ends_and_prefix_ends():
    t = "<chunk>a</chunk>\n\n<chunk>b</chunk>"
    assert chunks.chunk_ends(t) == [16, 34]
    assert t[:16] == "<chunk>a</chunk>"
    # the separator after a chunk goes with the prefix; the last chunk has none
    assert chunks.prefix_ends(t) == [18, 34]
    assert t[:18] == "<chunk>a</chunk>\n\n"


def test_parse_strip_first_and_format():
    t = "<chunk> x = 1 </chunk>\n\n<chunk>So \\boxed{\\frac{1}{2}}.</chunk>"
    assert chunks.parse_chunks(t) == ["x = 1", "So \\boxed{\\frac{1}{2}}."]
    assert chunks.strip_tags(t) == " x = 1 \n\nSo \\boxed{\\frac{1}{2}}."
    assert chunks.first_chunk("\n<chunk> x = 1 </chunk>") == "x = 1"
    assert chunks.first_chunk("<chunk> unfinished") is None and chunks.first_chunk("") is None
    assert chunks.format_ok(t)  # a nested answer is a well-formed final chunk
    assert not chunks.format_ok("<chunk>x</chunk> stray text")
    assert not chunks.format_ok("<chunk>no answer</chunk>")
    assert chunks.split_paragraphs("a\n\n\n\nb\n\n") == ["a", "b"]


def test_math500_reference_answers_all_read(math500_path):
    """Every MATH-500 reference solution's last balanced box is its answer field's box."""
    rows = [json.loads(x) for x in open(math500_path)]
    braced = [r for r in rows if "{" in r["answer"]]
    assert len(braced) > 0.1 * len(rows)  # the cases a flat regex loses (103 of the 500; 7 of the fixture's 40)
    got = [chunks.last_boxed(r["solution"]) for r in rows]
    assert sum(g is None for g in got) == 0
    assert sum(g == r["answer"] for g, r in zip(got, rows)) >= 0.95 * len(rows)


@pytest.fixture(scope="module")
def math500_path():
    """The real MATH-500: data/full's after `make data`, else the committed fixture's 40 records."""
    return paths.real_data_dir() / "math500" / "test.jsonl"


# Which modules may import the toy world: tests/test_layers.py (in the method, only tasks.py).
