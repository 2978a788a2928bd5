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


def test_a_cut_checkpoint_is_named_and_the_older_one_resumed_N6_CK01(tmp_path, capsys):
    """Issue 48 (N6; reliability review 3, CK01): a newest checkpoint whose ``optimizer.pt`` or
    weights were cut (a Drive sync after a disconnect), or whose ``trainer_state.json`` was cut
    mid-write, made every rerun fail (``torch.load``, a bare ``JSONDecodeError``); the older one
    ``save_total_limit`` 2 keeps for this case was never tried."""
    import json

    import torch
    from safetensors.torch import save_file

    from stepwiser_lib.engines.trainers import checkpoint_problem, last_checkpoint

    def make(step):
        c = tmp_path / f"checkpoint-{step}"
        c.mkdir()
        save_file({"w": torch.zeros(64, 64)}, str(c / "model.safetensors"))
        torch.save({"state": {0: torch.zeros(64, 64)}}, c / "optimizer.pt")
        (c / "trainer_state.json").write_text(json.dumps({"global_step": step}))
        return c

    old, new = make(10), make(20)
    assert last_checkpoint(tmp_path) == str(new)
    raw = (new / "optimizer.pt").read_bytes()
    (new / "optimizer.pt").write_bytes(raw[: len(raw) // 2])
    assert last_checkpoint(tmp_path) == str(old)
    assert "not resuming from checkpoint-20: optimizer.pt is not a whole torch file" in capsys.readouterr().out
    (new / "optimizer.pt").write_bytes(raw)
    w = (new / "model.safetensors").read_bytes()
    (new / "model.safetensors").write_bytes(w[:-100])
    assert "model.safetensors is cut short" in checkpoint_problem(new)
    (new / "model.safetensors").write_bytes(w)
    (new / "trainer_state.json").write_text('{"global_step": 2')
    assert last_checkpoint(tmp_path) == str(old) and "does not parse" in checkpoint_problem(new)
    (old / "trainer_state.json").unlink()
    assert last_checkpoint(tmp_path) is None  # none whole: the run starts over, saying why
    assert checkpoint_problem(old) == "no trainer_state.json (the save did not finish)"
