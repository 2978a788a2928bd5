import json

import pytest

from stepwiser_lib import io


def test_read_jsonl_names_line_and_field(tmp_path):
    p = tmp_path / "x.jsonl"
    p.write_text('{"a": 1}\n\n{"a": 2}\n')
    assert io.read_jsonl(p, required={"a": int}) == [{"a": 1}, {"a": 2}]
    p.write_text('{"a": 1}\n{"a": \n')
    with pytest.raises(io.RecordError, match=r"x.jsonl, line 2: bad JSON"):
        io.read_jsonl(p)
    p.write_text('{"a": 1}\n{"b": 1}\n')
    with pytest.raises(io.RecordError, match=r"line 2: missing field 'a'"):
        io.read_jsonl(p, required={"a": int})
    p.write_text('{"a": true}\n')
    with pytest.raises(io.RecordError, match=r"line 1: field 'a' has type bool"):
        io.read_jsonl(p, required={"a": int})
    p.write_text('[1, 2]\n')
    with pytest.raises(io.RecordError, match="expected a JSON object"):
        io.read_jsonl(p)


def test_atomic_write_leaves_no_partial_file(tmp_path):
    p = tmp_path / "out.json"
    io.write_json(p, {"k": [1, 2]})
    assert json.loads(p.read_text()) == {"k": [1, 2]}
    with pytest.raises(TypeError):
        io.atomic_write_text(p, None)  # fails mid-write
    assert json.loads(p.read_text()) == {"k": [1, 2]}  # the old file is intact
    assert [x.name for x in tmp_path.iterdir()] == ["out.json"]  # no temp file left
