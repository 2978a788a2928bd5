"""The library and the docs cite only what is in the repository (issue 50, item 7).

Review files, probe notes and audits lived beside the checkout in the maintainers' workspace; a
user's clone has none of them, so a comment that points there explains nothing. A comment states
the fact (what went wrong, what was measured), or points to something here (``LAB_LOG.md``,
``docs/architecture.md``, a test). Pure text: no torch, no notebook run. Tests and ``LAB_LOG.md``
(a history) may name reviews; ``docs/tiny/`` holds executed notebooks generated from ``notebooks/``.
"""

import re

from stepwiser_lib.core.paths import ROOT

#: A mention of a file outside the repository: its folder, a review file's name, a review by number,
#: or the reading notes on the paper ("notes §4.2"; cite the paper's own section instead).
OUTSIDE = re.compile(
    r"shared/reference"
    r"|_review(?:\.md|_\d)"
    r"|review [23]\b"
    r"|reliability review"
    r"|real[-_ ]path[-_ ]review"
    r"|toy_results_review"
    r"|real_model_probe"
    r"|claims_audit"
    r"|stepwiser_paper_notes"
    r"|notes §"
    r"|paper notes"
    r"|engineering notes",
    re.IGNORECASE,
)


def scanned() -> list:
    files = [
        *sorted((ROOT / "stepwiser_lib").rglob("*.py")),
        *sorted((ROOT / "configs").rglob("*.yaml")),
        ROOT / "README.md",
        *sorted((ROOT / "docs").glob("*.md")),
        *sorted((ROOT / "notebooks").glob("*.ipynb")),
        ROOT / "Makefile",
    ]
    return [f for f in files if f.is_file()]


def test_the_pattern_finds_each_kind_of_outside_citation():
    for text in (
        "(``shared/reference/real_path_review_2.md`` C1)",
        "(real_path_review_2.md C6)",
        "(review 2, A03)",
        "(reliability review 2, K01, K02)",
        "the real-path review's C3",
        "(``toy_results_review_2.md`` §1.4)",
        "(``real_model_probe.md``, B1)",
        "(notes §4.2)",
        "(notes §1.3, §2)",
        "see the paper notes",
        "(engineering notes, toy-judge recipe)",
    ):
        assert OUTSIDE.search(text), text
    for text in (
        "reviewed in LAB_LOG.md",
        "tests/test_reliability_2.py",
        "paper §3.2, Table 7",
        "paper App. A.1",
        "release notes",
    ):
        assert not OUTSIDE.search(text), text


def test_the_library_and_docs_cite_nothing_outside_the_repository():
    assert (ROOT / "stepwiser_lib").is_dir() and (ROOT / "README.md").is_file()
    files = scanned()
    assert len(files) > 20, files
    found = [
        f"{f.relative_to(ROOT)}:{i}: {line.strip()[:160]}"
        for f in files
        for i, line in enumerate(f.read_text(encoding="utf-8").splitlines(), 1)
        if OUTSIDE.search(line)
    ]
    assert not found, (
        "these lines cite a file outside the repository; state the fact instead (what went wrong, what was "
        "measured) or point to LAB_LOG.md, docs/ or a test:\n" + "\n".join(found)
    )
