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


def front_matter(meta: dict) -> str:
    """``meta`` as a card's YAML front matter block (keys in the order given)."""
    return "---\n" + yaml.safe_dump(meta, sort_keys=False, allow_unicode=True, width=1000) + "---\n"


def dataset_card(
    title: str, configs: dict[str, dict[str, str]], body: str, *, license: str = LICENSE, tags: list[str] | None = None
) -> str:
    """A dataset card: ``configs`` maps a config name to its splits (split -> file path relative
    to the folder); the first config is the default one ``load_dataset(folder)`` reads."""
    if not configs or not all(configs.values()):
        raise ValueError("a dataset card needs at least one config with at least one split")
    meta = {
        "license": license,
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
    title: str, *, base_model: str | None, body: str, license: str = LICENSE, tags: list[str] | None = None
) -> str:
    """A model card for a trained judge: ``base_model`` (a hub id, or None for a model this
    repository built), the library, and ``body``: what it is, how it was trained, its test numbers."""
    meta = {
        "license": license,
        "library_name": "transformers",
        "tags": ["stepwiser", "process-reward-model", "judge", *(tags or [])],
    }
    if base_model:
        meta["base_model"] = base_model
    return front_matter(meta) + f"\n# {title}\n\n{body.strip()}\n\n{_cite()}"


def _cite() -> str:
    return (
        f"Made by [stepwiser-companion]({REPO}), a runnable companion to *StepWiser: Stepwise Generative "
        f"Judges for Wiser Reasoning* ({PAPER}); not the authors' code. Cite both (`CITATION.cff`).\n"
    )
