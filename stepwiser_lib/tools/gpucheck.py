"""``make gpu-check``: the ``colab-smoke`` world on a CUDA device, stage by stage, with each
stage's wall time and peak GPU memory.

It runs the same seven notebooks as ``make test``'s colab-smoke check (random-weight Qwen2
stand-in, real vocabulary, the paper's prompts, Math-Verify, LoRA, TRL), but on the GPU, so the
CUDA-only code paths run: fp16/bf16 choice by compute capability, mixed-precision training with
gradient checkpointing, engine release between stages, and vLLM generation where vLLM is
installed (``--backend vllm``). It verifies that the real-model path *runs* on a GPU; it says
nothing about memory or time at Qwen2.5 sizes (for those, ``make reproduce PROFILE=colab
DRY_RUN=1`` prints the estimates).

Peak memory is read from ``nvidia-smi`` every 0.2 s while a stage runs (the notebooks run in
their own kernel processes, so the whole device is what counts). Written for a bare CUDA
machine: the interpreter it is started with (Python 3.11-3.13 with a CUDA torch already
installed) runs the notebooks; nothing here installs torch.

    python -m stepwiser_lib.tools.gpucheck [--backend hf|vllm] [--data DIR] [--out FILE]
"""

from __future__ import annotations

import argparse
import json
import shutil
import subprocess
import sys
import threading
import time
from pathlib import Path

from ..core import paths
from ..core.config import list_notebooks
from ..core.io import atomic_write_text
from ..method.tasks import write_numina_standin
from .runner import run as run_notebooks

PROFILE = "colab-smoke"


class PeakMemory:
    """Highest ``memory.used`` (MiB) of GPU 0 seen by polling ``nvidia-smi`` in a thread."""

    def __init__(self, every: float = 0.2):
        self.every, self.peak, self._stop = every, 0, threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    @staticmethod
    def used_mib() -> int:
        out = subprocess.run(
            ["nvidia-smi", "--query-gpu=memory.used", "--format=csv,noheader,nounits", "-i", "0"],
            capture_output=True,
            text=True,
            check=True,
        ).stdout
        return int(out.split()[0])

    def _run(self):
        while not self._stop.is_set():
            self.peak = max(self.peak, self.used_mib())
            self._stop.wait(self.every)

    def __enter__(self):
        self.base = self.used_mib()
        self._thread.start()
        return self

    def __exit__(self, *exc):
        self._stop.set()
        self._thread.join()


def device() -> dict:
    """The CUDA device this check runs on, or a clear error where there is none."""
    import torch

    if not torch.cuda.is_available() or not shutil.which("nvidia-smi"):
        raise SystemExit(
            "gpu-check needs a CUDA device and nvidia-smi; this machine has neither "
            "(the CPU version of this check is `make test`'s colab-smoke notebooks)"
        )
    from ..engines.models import precision  # lazy: torch

    cap = torch.cuda.get_device_capability()
    return {
        "name": torch.cuda.get_device_name(),
        "capability": list(cap),
        "torch": torch.__version__,
        "python": sys.version.split()[0],
        "precision": precision("cuda"),
    }


def data_overrides(data_dir: str | None) -> dict:
    """Parameters that point colab-smoke at ``data_dir`` (a folder in the layout of ``data/full``,
    e.g. a copy of it carried to the GPU machine) instead of the committed fixtures its profile
    names, and build the NuminaMath-schema stand-in from its GSM8K. Without ``data_dir``: no
    parameters, and the stand-in, when missing, from the GSM8K of ``paths.real_data_dir()`` (the
    committed fixture on a bare machine), as ``make standin`` builds it."""
    numina = paths.STANDIN_DIR / "numina_gsm8k.jsonl"
    if not data_dir:
        if not numina.exists():
            write_numina_standin(paths.real_data_dir() / "gsm8k" / "test.jsonl", numina)
        return {}
    d = Path(data_dir).resolve()
    write_numina_standin(d / "gsm8k" / "test.jsonl", numina)  # from this folder's GSM8K, not an older one's
    return {
        "DATA_FILES": {
            "numina": str(numina),
            "math500": str(d / "math500" / "test.jsonl"),
            "gsm8k": str(d / "gsm8k" / "test.jsonl"),
        },
        "PROCESSBENCH_DIR": str(d / "processbench"),
    }


def run(backend: str = "hf", out: Path | None = None, data_dir: str | None = None) -> dict:
    info = {"device": device(), "backend": backend, "stages": {}}
    overrides = {"BACKEND": backend, **data_overrides(data_dir)}
    print(f"[gpu-check] {info['device']}", flush=True)
    for nb in list_notebooks():
        with PeakMemory() as mem:
            t0 = time.time()
            run_notebooks(PROFILE, only=[nb.stem[:2]], overrides=overrides)
            seconds = round(time.time() - t0, 1)
        info["stages"][nb.stem] = {"seconds": seconds, "peak_gpu_mib": mem.peak, "gpu_mib_before": mem.base}
        print(
            f"[gpu-check] {nb.stem:22s} {seconds:7.1f} s   peak GPU memory {mem.peak:6d} MiB (before: {mem.base} MiB)",
            flush=True,
        )
    info["seconds"] = round(sum(s["seconds"] for s in info["stages"].values()), 1)
    out = Path(out or paths.run_dir(PROFILE) / "gpu_check.json")
    out.parent.mkdir(parents=True, exist_ok=True)
    atomic_write_text(out, json.dumps(info, indent=1) + "\n")
    print(f"[gpu-check] all stages in {info['seconds']} s; wrote {out}", flush=True)
    return info


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description="the colab-smoke world on a CUDA device")
    ap.add_argument("--backend", default="hf", choices=["hf", "vllm"])
    ap.add_argument("--out", default=None)
    ap.add_argument(
        "--data", default=None, help="a folder in the layout of data/full (default: the profile's committed fixtures)"
    )
    a = ap.parse_args(argv)
    run(a.backend, Path(a.out) if a.out else None, a.data)


if __name__ == "__main__":
    main()
