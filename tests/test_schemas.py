"""The stage-file schemas (stepwiser_lib/core/schemas.py) agree with data/README.md, where each file
is documented: every field a reader requires is named in its stage's section."""

import re
from pathlib import Path

import pytest

from stepwiser_lib.core import schemas

DOC = (Path(__file__).resolve().parents[1] / "data" / "README.md").read_text()


def section(heading: str) -> str:
    """The text of the ``## <heading>...`` section of data/README.md."""
    m = re.search(rf"^## {re.escape(heading)}.*?(?=^## |\Z)", DOC, re.M | re.S)
    assert m, f"data/README.md has no section starting '## {heading}'"
    return m.group(0)


@pytest.mark.parametrize(
    "schema, heading",
    [
        (schemas.LABEL_RECORD, "Stage 02"),
        (schemas.BALANCING_INPUT, "Stage 02"),  # what notebook 03 reads of each label record
        (schemas.JUDGE_EXAMPLE, "Stage 03"),
        (schemas.PREDICTION_FIELDS, "Stage 04"),
        (schemas.PROCESSBENCH_FIELDS, "Toy-ProcessBench"),
        (schemas.STEPWISE_SUPERVISION, "Formats of the field"),
        (schemas.LABEL_RECORD, "Formats of the field"),  # what a stepwise row becomes
        (schemas.PROCESSBENCH_FIELDS, "Formats of the field"),  # ProcessBench's official files
    ],
)
def test_every_required_field_is_documented_in_its_stage(schema, heading):
    words = set(re.findall(r"[A-Za-z_][A-Za-z0-9_]*", section(heading)))
    missing = [f for f in schema if f not in words]
    assert not missing, f"data/README.md, '{heading}': fields {missing} are required but not documented"


def test_judge_splits_and_toy_splits_are_the_documented_files():
    stage3 = section("Stage 03")
    assert "{train,dev,test}_{balanced,unbalanced}.jsonl" in stage3
    assert {f"{s}_{b}" for s in ("train", "dev", "test") for b in ("balanced", "unbalanced")} >= set(
        schemas.JUDGE_SPLITS
    )
    toy = section("Toy-ProcessBench")
    assert "{" + ",".join(schemas.TOY_SPLITS) + "}.jsonl" in toy


def test_processbench_record_validation_names_split_line_and_field():
    ok = {"id": "a", "generator": "g", "problem": "p", "steps": ["s1", "s2"], "final_answer_correct": False, "label": 1}
    assert schemas.validate_record(dict(ok), "gsm8k", 1) == ok
    with pytest.raises(schemas.ProcessBenchError, match="gsm8k, line 3: missing field 'label'"):
        schemas.validate_record({k: v for k, v in ok.items() if k != "label"}, "gsm8k", 3)
    with pytest.raises(schemas.ProcessBenchError, match="field 'label' should be int, got bool"):
        schemas.validate_record({**ok, "label": True}, "math", 1)
    # issue 49 (review 3, DF03): a lone surrogate is valid JSON but no text; it failed inside the tokenizer
    with pytest.raises(schemas.ProcessBenchError, match=r"gsm8k, line 4: field 'steps\[0\]' is not valid Unicode"):
        schemas.validate_record({**ok, "steps": ["x \ud835", "s2"]}, "gsm8k", 4)
    with pytest.raises(schemas.ProcessBenchError, match="field 'problem' is not valid Unicode"):
        schemas.validate_record({**ok, "problem": "\udc80"}, "gsm8k", 4)
