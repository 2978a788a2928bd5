"""Hugging Face dataset and model cards (issue 37): the ``README.md`` whose YAML front matter lets
``datasets.load_dataset(<folder>)`` find a folder's configs and splits, and lets the hub show a
model's base, licence and tags.

The cards say where a file came from (the profile and the stage that wrote it), its schema (the
section of ``data/README.md``), and its licence (``data/README.md``, "Licences of the data").
"""

from __future__ import annotations

import yaml

#: The licence of everything the toy world and the companion's code produce (LICENSE).
LICENSE = "apache-2.0"
PAPER = "arXiv 2508.19229"
REPO = "https://github.com/stepwiser-companion/stepwiser-companion"


#: The licences that follow a segmentation teacher into what is trained on its output (issue 48):
#: notebook 01's chunk policy learns from the teacher's segmentations, and every judge starts from
#: that policy. Keyed by the start of the teacher's hub id.
TEACHER_LICENCES = {
    "meta-llama/Llama-3.1-": {
        "meta": {"license": "llama3.1"},
        "prefix": "Llama-",  # the licence: a model trained on Llama 3.1 output is named "Llama..."
        "note": "Built with Llama. The chunk policy behind this model was fine-tuned on segmentations written "
        "by Llama 3.1 (Llama 3.1 Community License), whose terms follow it: the licence asks that such a "
        'model\'s name begin with "Llama" and that it show "Built with Llama".',
    },
    "Qwen/Qwen2.5-3B-Instruct": {
        "meta": {
            "license": "other",
            "license_name": "qwen-research",
            "license_link": "https://huggingface.co/Qwen/Qwen2.5-3B-Instruct/blob/main/LICENSE",
        },
        "prefix": "",
        "note": "The chunk policy behind this model was fine-tuned on segmentations written by "
        "Qwen2.5-3B-Instruct, which is under the Qwen Research License (non-commercial), not Apache-2.0.",
    },
}


def teacher_licence(teacher: str | None) -> dict:
    """What the cards of a profile whose notebook 01 ``TEACHER`` is ``teacher`` say about licences:
    ``meta`` (front-matter keys), ``prefix`` (of every repo name) and ``note`` (a sentence for the
    body). A rule or paragraph teacher (no model) leaves the repository's Apache-2.0; a teacher
    model not in :data:`TEACHER_LICENCES` gets licence ``other`` and a note to check its terms."""
    if not teacher or "/" not in teacher:
        return {"meta": {"license": LICENSE}, "prefix": "", "note": ""}
    for start, lic in TEACHER_LICENCES.items():
        if teacher.startswith(start):
            return lic
    return {
        "meta": {"license": "other"},
        "prefix": "",
        "note": f"Trained on segmentations written by {teacher}: its licence's terms follow this model; "
        "check them before redistributing.",
    }


def front_matter(meta: dict) -> str:
    """``meta`` as a card's YAML front matter block (keys in the order given)."""
    return "---\n" + yaml.safe_dump(meta, sort_keys=False, allow_unicode=True, width=1000) + "---\n"


def dataset_card(
    title: str,
    configs: dict[str, dict[str, str]],
    body: str,
    *,
    license: str | dict = LICENSE,
    tags: list[str] | None = None,
) -> str:
    """A dataset card: ``configs`` maps a config name to its splits (split -> file path relative
    to the folder); the first config is the default one ``load_dataset(folder)`` reads."""
    if not configs or not all(configs.values()):
        raise ValueError("a dataset card needs at least one config with at least one split")
    meta = {
        **_licence_meta(license),
        "tags": ["stepwiser", "process-reward-model", *(tags or [])],
        "configs": [
            {
                "config_name": name,
                **({"default": True} if i == 0 else {}),
                "data_files": [{"split": s, "path": p} for s, p in splits.items()],
            }
            for i, (name, splits) in enumerate(configs.items())
        ],
    }
    return front_matter(meta) + f"\n# {title}\n\n{body.strip()}\n\n{_cite()}"


def model_card(
    title: str, *, base_model: str | None, body: str, license: str | dict = LICENSE, tags: list[str] | None = None
) -> str:
    """A model card for a trained judge: ``base_model`` (a hub id, or None for a model this
    repository built), the library, and ``body``: what it is, how it was trained, its test numbers."""
    meta = {
        **_licence_meta(license),
        "library_name": "transformers",
        "tags": ["stepwiser", "process-reward-model", "judge", *(tags or [])],
    }
    if base_model:
        meta["base_model"] = base_model
    return front_matter(meta) + f"\n# {title}\n\n{body.strip()}\n\n{_cite()}"


def _licence_meta(license: str | dict) -> dict:
    """``license`` as front-matter keys: an id, or a dict of them (``license``, ``license_name``,
    ``license_link``: the Hub's fields for a licence it has no id for)."""
    return dict(license) if isinstance(license, dict) else {"license": license}


def _cite() -> str:
    return (
        f"Made by [stepwiser-companion]({REPO}), a runnable companion to *StepWiser: Stepwise Generative "
        f"Judges for Wiser Reasoning* ({PAPER}); not the authors' code. Cite both (`CITATION.cff`).\n"
    )
