"""One resolver for model names (stepwiser_lib/engines/checkpoints.py): every alias a profile may use."""

import pytest

from stepwiser_lib.core import paths
from stepwiser_lib.engines import checkpoints


def test_aliases_and_names_passed_through():
    assert checkpoints.resolve_model("toy_base") == str(paths.TOY_BASE_DIR)
    assert checkpoints.resolve_model("Qwen/Qwen2.5-1.5B-Instruct") == "Qwen/Qwen2.5-1.5B-Instruct"
    assert checkpoints.resolve_model("some/local/folder") == "some/local/folder"


def test_the_chunk_policy_aliases_need_a_finished_notebook_01(tmp_path, monkeypatch):
    monkeypatch.setattr(paths, "chunk_policy", lambda profile: tmp_path / profile / "model")
    for alias in checkpoints.CHUNK_POLICY_ALIASES:
        with pytest.raises(ValueError, match="say which profile"):
            checkpoints.resolve_model(alias)
        with pytest.raises(FileNotFoundError, match="no chunk policy at .*run notebook 01 at profile 'p'"):
            checkpoints.resolve_model(alias, "p")
    d = tmp_path / "p" / "model"
    d.mkdir(parents=True)
    (d / "config.json").write_text("{}")
    with pytest.raises(FileNotFoundError, match="an incomplete chunk policy"):
        checkpoints.resolve_model("artifact", "p")
    (d / "model.safetensors").write_bytes(b"x")
    assert checkpoints.resolve_model("artifact", "p") == checkpoints.resolve_model("chunk_policy", "p") == str(d)


def test_smollm2_needs_make_smollm2(tmp_path, monkeypatch):
    monkeypatch.setattr(paths, "SMOLLM2_DIR", tmp_path / "none")
    with pytest.raises(FileNotFoundError, match="run `make smollm2`"):
        checkpoints.resolve_model(paths.SMOLLM2_MODEL)
