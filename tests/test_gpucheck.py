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


def test_data_overrides_point_colab_smoke_at_another_copy_of_the_data(tmp_path, monkeypatch):
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
    (tmp_path / "standin" / "numina_gsm8k.jsonl").unlink()  # a bare machine: made from the profile's own data
    assert gpucheck.data_overrides(None) == {} and (tmp_path / "standin" / "numina_gsm8k.jsonl").exists()
    # the runner accepts them (type-checked like profile values) for every notebook declaring them
    runner.run("colab-smoke", check_only=True, overrides={"BACKEND": "vllm", **o})
    with pytest.raises(Exception, match="is not a"):
        runner.run("colab-smoke", check_only=True, overrides={"VLLM_TP": "two"})


def test_the_gpu_probes_run_their_code_paths_on_the_cpu(tmp_path):
    """Issue 48: ``make gpu-check``'s probes (stepwiser_lib.tools.gpuprobe), run here with CUDA's
    attention rule simulated, so none is first found broken on a lent GPU: each writes what held
    into one JSON; the ones that need CUDA or packages absent here say so (null)."""
    import json

    from stepwiser_lib.tools import gpuprobe

    rep = gpuprobe.run(tmp_path / "probes.json", cpu=True)
    assert json.loads((tmp_path / "probes.json").read_text()) == rep
    held = {k: v["held"] for k, v in rep["probes"].items()}
    assert held == {
        "attention": True,
        "sampling_loop": True,
        "half_precision": True,
        "workers": None,
        "reward": True,
        "vllm_seeds": None,
        "trl_colocate": None,
    }, {k: v["detail"] for k, v in rep["probes"].items()}
    assert "decode steps on the cache's 2 heads" in rep["probes"]["sampling_loop"]["detail"]


@pytest.mark.real
def test_the_vllm_seeds_probe_runs_on_the_cpu_engine():
    """Issue 48 (N11): the probe that times vLLM's per-request seeds, run on the CPU build (``make
    test-real``), so it is not first run on a lent GPU. The timing itself is the GPU's question."""
    from stepwiser_lib.tools import gpuprobe

    res = gpuprobe.probe_vllm_seeds("cpu")
    assert res["held"] is True and res["unseeded_s"] > 0 and res["seeded_s"] > 0, res
