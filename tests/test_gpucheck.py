"""`make gpu-check` (stepwiser_lib/tools/gpucheck.py): what can be checked without a GPU."""

import pytest

from stepwiser_lib.core import paths
from stepwiser_lib.tools import gpucheck, runner


def test_refuses_a_machine_without_cuda_clearly():
    import torch

    if torch.cuda.is_available():
        pytest.skip("a CUDA device is present: run `make gpu-check` itself")
    with pytest.raises(SystemExit, match="needs a CUDA device"):
        gpucheck.device()


def test_data_overrides_point_colab_smoke_at_a_copy_of_shared(tmp_path, monkeypatch):
    import json

    (tmp_path / "gsm8k").mkdir()
    (tmp_path / "gsm8k" / "test.jsonl").write_text(json.dumps({"question": "1+1?", "answer": "1+1=2\n#### 2"}) + "\n")
    monkeypatch.setattr(paths, "STANDIN_DIR", tmp_path / "standin")
    o = gpucheck.data_overrides(str(tmp_path))
    assert o["DATA_FILES"]["math500"] == str(tmp_path / "math500" / "test.jsonl")
    assert o["PROCESSBENCH_DIR"] == str(tmp_path / "processbench")
    row = json.loads((tmp_path / "standin" / "numina_gsm8k.jsonl").read_text())
    assert row["solution"].endswith("$\\boxed{2}$.") and row["source"] == "gsm8k"
    assert gpucheck.data_overrides(None) == {}
    # the runner accepts them (type-checked like profile values) for every notebook declaring them
    runner.run("colab-smoke", check_only=True, overrides={"BACKEND": "vllm", **o})
    with pytest.raises(Exception, match="is not a"):
        runner.run("colab-smoke", check_only=True, overrides={"VLLM_TP": "two"})
