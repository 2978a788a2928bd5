"""Hugging Face dataset and model cards (issues 37 and 50): the ``README.md`` whose YAML front matter
lets ``datasets.load_dataset(<folder>)`` find a folder's configs and splits, and lets the hub show a
model's base, licence, evaluation results and tags.

The cards are built with ``huggingface_hub``'s card classes (:class:`~huggingface_hub.DatasetCard`,
:class:`~huggingface_hub.ModelCard`, their ``*CardData`` and
:class:`~huggingface_hub.EvalResult`), not hand-written YAML, so their metadata is what the Hub
parses: a model card's ``model-index`` comes from ``EvalResult``\\ s, a dataset card's
``dataset_info`` (features and split sizes) from the files themselves. They say where a file came
from (the profile and the stage that wrote it), its schema (the section of ``data/README.md``), its
licence (``data/README.md``, "Licences of the data"), and how to cite the paper (BibTeX).
"""

from __future__ import annotations

from importlib import metadata
from pathlib import Path

#: The licence of everything the toy world and the companion's code produce (LICENSE).
LICENSE = "apache-2.0"
PAPER = "arXiv 2508.19229"
REPO = "https://github.com/stepwiser-companion/stepwiser-companion"
#: The StepWiser paper, as BibTeX (the authors of CITATION.cff's ``preferred-citation``; a test
#: keeps the two the same).
BIBTEX = """@article{xiong2025stepwiser,
  title   = {StepWiser: Stepwise Generative Judges for Wiser Reasoning},
  author  = {Xiong, Wei and Zhao, Wenting and Yuan, Weizhe and Golovneva, Olga and Zhang, Tong and Weston, Jason and Sukhbaatar, Sainbayar},
  journal = {arXiv preprint arXiv:2508.19229},
  year    = {2025},
  url     = {https://arxiv.org/abs/2508.19229}
}"""
#: The packages a judge's card names the versions of (installed when it was exported).
FRAMEWORKS = {"transformers": "Transformers", "torch": "PyTorch", "peft": "PEFT", "trl": "TRL", "datasets": "Datasets"}
#: The Hub's size categories, by their upper bound in examples.
SIZES = ((1_000, "n<1K"), (10_000, "1K<n<10K"), (100_000, "10K<n<100K"), (1_000_000, "100K<n<1M"), (10**7, "1M<n<10M"))


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


def size_category(n: int) -> str:
    """The Hub's ``size_categories`` value for a data set of ``n`` examples."""
    return next((name for bound, name in SIZES if n < bound), "n>10M")


def split_info(path: str | Path) -> dict:
    """``{"features": [...], "num_examples": n, "num_bytes": b}`` of a JSON Lines file, the features
    as ``datasets`` infers them (pyarrow's JSON reader, :meth:`datasets.Features.from_arrow_schema`)
    in the card's YAML form; ``features`` is None where they cannot be read (an empty file)."""
    import pyarrow as pa
    import pyarrow.json as paj
    from datasets import Features

    path = Path(path)
    size = path.stat().st_size
    if not size:
        return {"features": None, "num_examples": 0, "num_bytes": 0}
    try:
        table = paj.read_json(path)
    except pa.ArrowInvalid:  # a column whose type a later block changes: read the file as one block
        table = paj.read_json(path, read_options=paj.ReadOptions(block_size=size + 1))
    return {
        "features": Features.from_arrow_schema(table.schema)._to_yaml_list(),
        "num_examples": table.num_rows,
        "num_bytes": table.nbytes,
    }


def dataset_info(sources: dict[str, dict[str, str | Path]]) -> list[dict]:
    """The card's ``dataset_info``: per config (``sources`` maps config -> split -> file), its
    features (those of its splits; left out where the splits disagree, e.g. a column null in one)
    and each split's ``num_examples`` (which ``datasets.load_dataset`` checks) and ``num_bytes``."""
    out = []
    for config, splits in sources.items():
        infos = {s: split_info(p) for s, p in splits.items()}
        feats = [i["features"] for i in infos.values() if i["features"] is not None]
        entry: dict = {"config_name": config}
        if feats and all(f == feats[0] for f in feats):
            entry["features"] = feats[0]
        entry["splits"] = [
            {"name": s, "num_bytes": i["num_bytes"], "num_examples": i["num_examples"]} for s, i in infos.items()
        ]
        entry["dataset_size"] = sum(i["num_bytes"] for i in infos.values())
        out.append(entry)
    return out


def dataset_card(
    title: str,
    configs: dict[str, dict[str, str]],
    body: str,
    *,
    license: str | dict = LICENSE,
    tags: list[str] | None = None,
    sources: dict[str, dict[str, str | Path]] | None = None,
    task_categories: list[str] | None = None,
) -> str:
    """A dataset card: ``configs`` maps a config name to its splits (split -> file path relative
    to the folder); the first config is the default one ``load_dataset(folder)`` reads.
    ``sources`` (config -> split -> the file as it is now, before a copy renames it) gives the
    card's ``dataset_info`` and ``size_categories``; ``task_categories`` default to
    ``text-classification`` (every data set here labels a step, a solution or a prediction)."""
    from huggingface_hub import DatasetCard, DatasetCardData

    if not configs or not all(configs.values()):
        raise ValueError("a dataset card needs at least one config with at least one split")
    info = dataset_info(sources) if sources else None
    lic = _licence_meta(license)
    data = DatasetCardData(
        **lic,
        language=["en"],
        pretty_name=title,
        task_categories=task_categories or ["text-classification"],
        tags=_unique(["stepwiser", "process-reward-model", *(tags or [])]),
        configs=[
            {
                "config_name": name,
                **({"default": True} if i == 0 else {}),
                "data_files": [{"split": s, "path": p} for s, p in splits.items()],
            }
            for i, (name, splits) in enumerate(configs.items())
        ],
    )
    if info:
        data.size_categories = [size_category(max(sum(s["num_examples"] for s in c["splits"]) for c in info))]
        data.dataset_info = info[0] if len(info) == 1 and info[0]["config_name"] == "default" else info
    order = [*lic, "language", "pretty_name", "size_categories", "task_categories", "tags", "configs", "dataset_info"]
    text = f"# {title}\n\n{body.strip()}\n\n{_cite()}"
    return str(DatasetCard(f"---\n{data.to_yaml(original_order=order)}\n---\n\n{text}"))


def eval_result(
    *,
    value: float,
    metric: str,
    metric_name: str,
    dataset: str,
    dataset_name: str,
    config: str | None = None,
    split: str | None = None,
    task_name: str = "Stepwise judgement of reasoning steps",
):
    """One ``model-index`` result (:class:`huggingface_hub.EvalResult`): a judge's number on a data set."""
    from huggingface_hub import EvalResult

    return EvalResult(
        task_type="text-classification",
        task_name=task_name,
        dataset_type=dataset,
        dataset_name=dataset_name,
        dataset_config=config,
        dataset_split=split,
        metric_type=metric,
        metric_name=metric_name,
        metric_value=value,
        source_name="stepwiser-companion",
        source_url=REPO,
    )


def model_card(
    title: str,
    *,
    base_model: str | None,
    body: str,
    license: str | dict = LICENSE,
    tags: list[str] | None = None,
    model_name: str | None = None,
    datasets: list[str] | None = None,
    eval_results: list | None = None,
    versions: dict[str, str] | None = None,
) -> str:
    """A model card for a trained judge: ``base_model`` (a hub id, or None for a model this
    repository built), the library, the pipeline, the data sets it was trained on (hub ids),
    ``eval_results`` (:func:`eval_result`: the card's ``model-index``, named ``model_name``), and
    ``body``: what it is, how it was trained, its test numbers. ``versions`` (default: those
    installed, :func:`framework_versions`) end the body."""
    from huggingface_hub import ModelCard, ModelCardData

    lic = _licence_meta(license)
    data = ModelCardData(
        **lic,
        base_model=base_model,
        datasets=datasets or None,
        library_name="transformers",
        pipeline_tag="text-generation",
        tags=_unique(["stepwiser", "process-reward-model", "judge", *(tags or [])]),
        model_name=(model_name or title) if eval_results else None,
        eval_results=eval_results or None,
    )
    versions = framework_versions() if versions is None else versions
    frameworks = "\n".join(f"- {FRAMEWORKS.get(k, k)} {v}" for k, v in versions.items())
    text = f"# {title}\n\n{body.strip()}\n\n"
    if frameworks:
        text += f"## Framework versions\n\nInstalled when it was exported:\n\n{frameworks}\n\n"
    order = [*lic, "base_model", "datasets", "library_name", "pipeline_tag", "tags", "model-index"]
    return str(ModelCard(f"---\n{data.to_yaml(original_order=order)}\n---\n\n{text}{_cite()}"))


def framework_versions() -> dict[str, str]:
    """The installed versions of :data:`FRAMEWORKS` (those not installed left out)."""
    out = {}
    for pkg in FRAMEWORKS:
        try:
            out[pkg] = metadata.version(pkg)
        except metadata.PackageNotFoundError:
            continue
    return out


def _unique(items: list[str]) -> list[str]:
    return list(dict.fromkeys(items))


def _licence_meta(license: str | dict) -> dict:
    """``license`` as front-matter keys: an id, or a dict of them (``license``, ``license_name``,
    ``license_link``: the Hub's fields for a licence it has no id for)."""
    return dict(license) if isinstance(license, dict) else {"license": license}


def _cite() -> str:
    return (
        f"## Citation\n\nMade by [stepwiser-companion]({REPO}), a runnable companion to *StepWiser: Stepwise "
        f"Generative Judges for Wiser Reasoning* ({PAPER}); not the authors' code. Cite the paper, and the "
        f"companion (`CITATION.cff`):\n\n```bibtex\n{BIBTEX}\n```\n"
    )
