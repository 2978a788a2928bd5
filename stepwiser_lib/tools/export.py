"""Export a profile's data sets and trained judges the Hugging Face way (issue 37).

    python -m stepwiser_lib.export --profile tiny --to exports/tiny
    python -m stepwiser_lib.export --profile tiny --to exports/tiny --push-to-hub my-org [--dry-run]

Writes one folder per artefact, each a copy (the resumable files under ``runs/`` stay the source
of truth) with a card (:mod:`stepwiser_lib.core.cards`):

* ``toy-processbench/``: the committed toy benchmark, its four test splits and, as a second
  config, the dev split; ``labels/``: notebook 02's labelled chunks; ``judge-splits/``: notebook
  03's train / dev / test sets, one config per rule and balancing; ``predictions/``: the per-item
  predictions behind every reported number, one config per stage. Each loads with
  ``datasets.load_dataset(<folder>)`` (or ``load_dataset(<folder>, "<config>")``). Their files are
  named with their content's hash (``labels-<sha8>.jsonl``), so an export rewritten in the same
  folder is never served from the datasets cache of an earlier one.
* ``judges/<name>/``: every trained judge of notebook 04 as a full model (a LoRA adapter merged
  into its base), with ``stepwiser_judge.json`` (style, prompt family, output limit) and a model
  card with its test numbers and their 95% intervals. ``Judge.load(<folder>)`` reads it back.

``--push-to-hub ORG`` uploads each folder to ``ORG/stepwiser-<profile>-<folder>`` with
``huggingface_hub``; ``--dry-run`` uploads nothing and writes what would be uploaded, folder by
folder, under ``<to>/.hub-dry-run/`` (the tested path: this machine has no hub access).
"""

from __future__ import annotations

import argparse
import re
import shutil
import sys
from pathlib import Path

from ..core import cards, io, paths
from ..core.config import ConfigError, check_profile_name, for_notebook
from ..core.vocab import RULES, variant_slug

#: The stages whose per-item predictions ``results/<profile>/`` holds, by file stem.
PREDICTIONS = {
    "self_segmentation_predictions": "notebook 01: one record per sampled held-out solution (Table 4)",
    "judge_predictions": "notebook 04: one record per judged test and dev chunk (step accuracy)",
    "processbench_predictions": "notebook 05: one record per toy-ProcessBench solution and judge",
    "chunk_reset_predictions": "notebook 06: one record per held-out problem, judge and seed (Table 7)",
    "rsft_predictions": "notebook 07: one record per held-out problem, selection and SFT seed (Table 8)",
}
SPLITS = ("train", "dev", "test")


def _copy(src: Path, dest: Path, hashed: bool = False) -> str:
    """Copy ``src`` to ``dest``; ``hashed``: as ``<stem>-<sha8><suffix>``, so that the card's
    ``data_files`` change with the data and ``datasets.load_dataset`` cannot serve the rows an
    earlier export left in its cache (issue 49). Returns the name written."""
    if hashed:
        dest = dest.with_name(f"{dest.stem}-{io.file_sha256(src)[:8]}{dest.suffix}")
    dest.parent.mkdir(parents=True, exist_ok=True)
    shutil.copyfile(src, dest)
    return dest.name


def _fresh(d: Path) -> Path:
    """An export folder emptied of an earlier export's files (whose hashed names would linger)."""
    if d.exists():
        shutil.rmtree(d)
    return d


def toy_processbench_card(folder: Path) -> str:
    """The card of a toy-ProcessBench folder: config ``default`` (the four test splits) and ``dev``.
    ``data/toy_processbench/README.md`` is this card, so the committed folder loads too."""
    configs = {"default": {p.stem: p.name for p in sorted(folder.glob("toy_*step.jsonl"))}}
    if (folder / "toy_dev.jsonl").exists():
        configs["dev"] = {"dev": "toy_dev.jsonl"}
    return cards.dataset_card("Toy-ProcessBench", configs, TOY_PROCESSBENCH_BODY)


def export_toy_processbench(out: Path, root: Path = paths.ROOT) -> Path:
    """A copy of ``data/toy_processbench`` with its card."""
    src = root / "data" / "toy_processbench"
    d = out / "toy-processbench"
    for p in sorted(src.glob("*.jsonl")) + [src / "manifest.json"]:
        if p.exists():
            _copy(p, d / p.name)
    (d / "README.md").write_text(toy_processbench_card(d))
    return d


TOY_PROCESSBENCH_BODY = """
ProcessBench's schema (`id`, `generator`, `problem`, `steps`, `final_answer_correct`, `label`) on the
companion's toy arithmetic problems: four splits of rising chain length, solutions written by the
toy base model at three temperatures, and `label` the index of the first wrong step by an exact
step checker (-1: every step right). Erroneous and correct solutions alternate. The `dev` config
holds 200 solutions on other problems, used only to choose judges' thresholds.

Built by `make toy-processbench` (`stepwiser_lib.toy.processbench_build`); `manifest.json` gives
the seed, generator and per-split sha256. Schema: `data/README.md`, "Toy-ProcessBench". Licence:
Apache-2.0 (made by this repository's code).
"""


def export_labels(profile: str, out: Path) -> Path | None:
    """Notebook 02's ``labels.jsonl`` (one record per labelled chunk), or None when not run."""
    src = paths.run_dir(profile) / "artifacts" / "02_rollout_labelling" / "labels.jsonl"
    if not src.exists():
        return None
    d = _fresh(out / "labels")
    configs = {"default": {"train": _copy(src, d / "labels.jsonl", hashed=True)}}
    body = (
        f"Monte-Carlo step labels of the `{profile}` profile (notebook 02): one record per chunk of each "
        "labelled trajectory, with Q after the chunk, Q before it, and the three rules' labels "
        '(Abs-Q, Rel-Effective, Rel-Ratio; the paper\'s §3.2, Eq. 2). Schema: `data/README.md`, "Stage 02". '
        + _licence(profile)
    )
    (d / "README.md").write_text(
        cards.dataset_card(
            f"StepWiser step labels ({profile})", configs, body, license=teacher_licence(profile)["meta"]
        )
    )
    return d


def export_judge_splits(profile: str, out: Path) -> Path | None:
    """Notebook 03's judge sets: one config per rule and balancing (``rel_ratio-balanced``, ...)."""
    src = paths.run_dir(profile) / "artifacts" / "03_balancing"
    d = _fresh(out / "judge-splits")
    configs = {}
    for rule in RULES:
        for kind in ("balanced", "unbalanced"):
            files = {s: src / rule / f"{s}_{kind}.jsonl" for s in SPLITS}
            if all(f.exists() for f in files.values()):
                configs[f"{rule}-{kind}"] = {
                    s: f"{rule}/{_copy(f, d / rule / f.name, hashed=True)}" for s, f in files.items()
                }
    if not configs:
        return None
    body = (
        f"Judge examples of the `{profile}` profile (notebook 03): problem, history, new chunk and the "
        "rule's label, split by problem into train / dev / test (no problem on two sides); `balanced` sets "
        "hold as many Positive as Negative examples (the paper's §3.3), `unbalanced` ones every example. "
        'Schema: `data/README.md`, "Stage 03". ' + _licence(profile)
    )
    (d / "README.md").write_text(
        cards.dataset_card(
            f"StepWiser judge splits ({profile})", configs, body, license=teacher_licence(profile)["meta"]
        )
    )
    return d


def export_predictions(profile: str, out: Path) -> Path | None:
    """The per-item predictions of ``results/<profile>/``: one config per stage."""
    src = paths.results_dir(profile, create=False)
    d = _fresh(out / "predictions")
    configs = {
        stem.removesuffix("_predictions"): {"records": _copy(src / f"{stem}.jsonl", d / f"{stem}.jsonl", hashed=True)}
        for stem in PREDICTIONS
        if (src / f"{stem}.jsonl").exists()
    }
    if not configs:
        return None
    lines = "\n".join(
        f"- `{stem.removesuffix('_predictions')}`: {what}"
        for stem, what in PREDICTIONS.items()
        if stem.removesuffix("_predictions") in configs
    )
    body = (
        f"The per-item predictions behind every number the `{profile}` profile reports; the claims table "
        f"(`results/{profile}/claims.json`) is recomputed from them.\n\n{lines}\n\nSchemas: `data/README.md`. "
        + _licence(profile)
    )
    (d / "README.md").write_text(
        cards.dataset_card(
            f"StepWiser predictions ({profile})", configs, body, license=teacher_licence(profile)["meta"]
        )
    )
    return d


def _licence(profile: str) -> str:
    note = teacher_licence(profile)["note"]
    if profile in ("colab", "paper", "colab-smoke", "real-smoke"):
        return (
            "Licence: derived from the profile's problems (NuminaMath-CoT, MATH-500, GSM8K): see `data/README.md`, "
            '"Licences of the data", before redistributing.' + (f" {note}" if note else "")
        )
    return "Licence: Apache-2.0 (toy problems made by this repository's code)." + (f" {note}" if note else "")


def teacher_licence(profile: str) -> dict:
    """:func:`stepwiser_lib.core.cards.teacher_licence` of the profile's segmentation teacher
    (notebook 01's ``TEACHER``): the licence that follows the teacher's output into every model and
    data set the profile trains (issue 48)."""
    try:
        teacher = for_notebook(profile, "01_self_segmentation").TEACHER
    except ConfigError:
        teacher = None
    return cards.teacher_licence(teacher)


#: The notebook 04 settings a judge card lists as its recipe, by how the judge was trained.
RECIPE = {
    "rl": (
        "GRPO_STEPS",
        "PROMPTS_PER_STEP",
        "GROUP_SIZE",
        "GRPO_LR",
        "BETA",
        "EPSILON_LOW",
        "EPSILON_HIGH",
        "TEMPERATURE",
        "MAX_COMPLETION",
        "LOSS_TOKENS",
        "BALANCED_STEPS",
        "USE_LORA",
        "LORA_R",
        "LORA_ALPHA",
        "WARMUP",
        "WARMUP_STEPS",
        "SEED",
    ),
    "disc": ("DISC_EPOCHS", "DISC_LR", "DISC_BATCH", "JUDGE_MAX_LENGTH", "SEED"),
    "rsft": (
        "RSFT_SAMPLES",
        "RSFT_PER_EXAMPLE",
        "RSFT_EPOCHS",
        "RSFT_LR",
        "RSFT_BATCH",
        "USE_LORA",
        "LORA_R",
        "WARMUP",
        "WARMUP_STEPS",
        "SEED",
    ),
}


def recipe(entry: dict, config: dict) -> dict:
    """The settings that trained ``entry`` (notebook 04's parameters at its profile)."""
    how = "disc" if entry["style"] == "disc" else "rsft" if entry["kind"] == "rsft" else "rl"
    return {k: config[k] for k in RECIPE[how] if k in config}


def judge_card(
    entry: dict, result: dict | None, profile: str, base_model: str | None, config: dict | None = None
) -> str:
    """A trained judge's model card: what it is, how it was trained, its test numbers."""
    lines = [
        f"A stepwise judge of the StepWiser companion, `{entry['name']}`, trained at the `{profile}` profile "
        f"(notebook 04): {entry.get('row', entry['kind'])}, on `{entry['rule']}` labels.",
        "",
    ]
    lines += [
        "| | |",
        "|---|---|",
        f"| kind | `{entry['kind']}` (output style `{entry['style']}`) |",
        f"| label rule | `{entry['rule']}` |",
        f"| prompt family | `{entry.get('prompt_family', 'toy')}` |",
        f"| trained from | `{base_model or 'a model this repository built'}` |",
    ]
    if config:
        seed = entry["name"].split("@seed")[1] if "@seed" in entry["name"] else None
        rec = {**recipe(entry, config), **({"SEED": int(seed)} if seed else {})}
        lines += [f"| recipe (notebook 04) | {', '.join(f'`{k}` {v}' for k, v in rec.items())} |"]
    if result:
        t = result.get("test", {})
        ci = t.get("ci95", {})
        lines += [
            f"| test balanced accuracy | {t.get('balanced_acc')} [{ci.get('low')}, {ci.get('high')}] "
            f"(95% interval over {ci.get('problems')} problems, {ci.get('n')} chunks) |"
        ]
        if t.get("truth_balanced_acc") is not None:
            lines += [f"| against the exact step checker | {t['truth_balanced_acc']} |"]
        lines += [f"| says Positive | {t.get('positive_rate')}% of test chunks |"]
    lines += [
        "",
        "Use it:",
        "",
        "```python",
        "from stepwiser_lib.method.judge import Judge",
        'j = Judge.load("<this folder or hub id>")',
        "j.judge([(problem, previous_chunks, new_chunk)])  # [{'verdict': 'Positive' | 'Negative' | None, ...}]",
        "```",
        "",
        "Its numbers are the toy world's unless the profile is colab or paper; the claims table "
        "(`docs/results_toy_full.md`) says which paper claims they bear on. " + _licence(profile),
    ]
    return cards.model_card(
        f"StepWiser judge: {entry['name']} ({profile})",
        base_model=base_model,
        body="\n".join(lines),
        license=teacher_licence(profile)["meta"],
        tags=[entry["kind"], entry["rule"]],
    )


def hub_base(profile: str) -> str | None:
    """The hub model every judge of ``profile`` descends from (notebook 01's ``BASE_MODEL``, through
    the chunk policy), or None when the profile's base is one this repository built."""
    try:
        base = for_notebook(profile, "01_self_segmentation").BASE_MODEL
    except ConfigError:
        return None
    return base if "/" in base and not Path(base).exists() and not base.startswith(("data/", "runs/")) else None


def export_judges(profile: str, out: Path) -> list[Path]:
    """Every trained judge of the profile's registry as a loadable folder with a card (registry paths
    are relative to the output root, :func:`stepwiser_lib.core.paths.output_root`)."""
    from ..engines.models import merged_model_dir  # lazy: torch, only when judges are exported

    reg_path = paths.judge_registry(profile)
    if not reg_path.exists():
        return []
    metrics = (
        io.read_json(paths.results_dir(profile, create=False) / "judges.json")
        if (paths.results_dir(profile, create=False) / "judges.json").exists()
        else {}
    )
    results, config = metrics.get("variants", {}), metrics.get("config")
    written = []
    for entry in io.read_json(reg_path):
        if entry["kind"] == "warmup" or "base" not in entry:
            continue
        root = paths.output_root()
        base = str(root / entry["base"]) if not Path(entry["base"]).is_absolute() else entry["base"]
        adapter = entry.get("adapter") and (
            str(root / entry["adapter"]) if not Path(entry["adapter"]).is_absolute() else entry["adapter"]
        )
        if not paths.model_complete(Path(base)) or (adapter and not Path(adapter).is_dir()):
            raise ExportError(
                f"judge {entry['name']}: its model in {adapter or base} is incomplete (a save killed, a partial "
                f"copy): run notebook 04 at profile {profile!r} again before exporting"
            )
        src = Path(merged_model_dir(base, adapter) if adapter else base)
        d = out / "judges" / variant_slug(entry["name"])
        if d.exists():
            shutil.rmtree(d)
        shutil.copytree(src, d, ignore=shutil.ignore_patterns("*.lock", ".*"))
        io.write_json(
            d / "stepwiser_judge.json",
            {
                "name": entry["name"],
                "kind": entry["kind"],
                "rule": entry["rule"],
                "style": entry["style"],
                "prompt_family": entry.get("prompt_family", "toy"),
                "max_new_tokens": entry.get("max_new_tokens", 128),
                "profile": profile,
            },
        )
        (d / "README.md").write_text(judge_card(entry, results.get(entry["name"]), profile, hub_base(profile), config))
        written.append(d)
    return written


def export(profile: str, to: str | Path, judges: bool = True) -> list[Path]:
    """Every artefact of ``profile`` under ``to``; returns the folders written."""
    out = Path(to)
    out.mkdir(parents=True, exist_ok=True)
    folders = [export_toy_processbench(out)] if not profile.startswith(("colab", "paper", "real")) else []
    folders += [
        d
        for d in (export_labels(profile, out), export_judge_splits(profile, out), export_predictions(profile, out))
        if d
    ]
    if judges:
        folders += export_judges(profile, out)
    return folders


class ExportError(RuntimeError):
    """What the export cannot write whole or current; the CLI prints it in one line."""


#: What each export folder needs, for the line that says what a profile has not made yet.
NEEDS = {
    "labels": "notebook 02",
    "judge-splits": "notebook 03",
    "predictions": "notebooks 01-07's results",
    "judges": "notebook 04",
}


def repo_ids(folders: list[Path], org: str, profile: str) -> list[str]:
    """The hub id of each folder, checked as the hub checks them (before any upload or dry run)."""
    from huggingface_hub.utils import HFValidationError, validate_repo_id

    prefix = teacher_licence(profile)["prefix"]
    ids = [f"{org}/" + re.sub(r"[^A-Za-z0-9.]+", "-", f"{prefix}stepwiser-{profile}-{d.name}") for d in folders]
    for i in ids:
        try:
            validate_repo_id(i)
        except HFValidationError as e:
            raise ExportError(f"--push-to-hub {org!r}: {i!r} is not a hub repo id ({str(e).split('.')[0]})") from None
    return ids


def push(folders: list[Path], org: str, profile: str, dry_run: bool, out: Path, public: bool = False) -> list[dict]:
    """Upload each folder to ``org/stepwiser-<profile>-<name>`` (a dataset, or a model under judges/;
    with the teacher's name prefix where its licence asks for one), private unless ``public``
    (issue 48: a teacher's licence may not allow what a public repo offers); with ``dry_run`` write
    the plan and copy each folder under ``out/.hub-dry-run/`` instead."""
    plan = []
    for d, repo in zip(folders, repo_ids(folders, org, profile)):
        is_model = d.parent.name == "judges"
        plan.append(
            {
                "repo_id": repo,
                "private": not public,
                "repo_type": "model" if is_model else "dataset",
                "folder": str(d),
                "files": sorted(str(p.relative_to(d)) for p in d.rglob("*") if p.is_file()),
            }
        )
    if dry_run:
        hub = out / ".hub-dry-run"
        for p in plan:
            dest = hub / p["repo_type"] / p["repo_id"]
            if dest.exists():
                shutil.rmtree(dest)
            shutil.copytree(p["folder"], dest)
        io.write_json(hub / "plan.json", plan)
        return plan
    from huggingface_hub import HfApi  # lazy: only a real upload needs the hub client

    api = HfApi()
    for p in plan:
        try:
            api.create_repo(p["repo_id"], repo_type=p["repo_type"], private=p["private"], exist_ok=True)
            api.upload_folder(repo_id=p["repo_id"], repo_type=p["repo_type"], folder_path=p["folder"])
        except Exception as e:  # offline, no token, no rights: one line, the export stays on disk
            first = (str(e).strip().splitlines() or [""])[0][:200]
            raise ExportError(
                f"the push of {p['repo_id']} failed ({type(e).__name__}: {first}); the export is in {out}"
            ) from None
    return plan


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(
        description="Export a profile's data sets and judges with cards (Hugging Face layout)."
    )
    ap.add_argument("--profile")
    ap.add_argument("--to", help="output folder (one subfolder per data set / judge)")
    ap.add_argument(
        "--toy-processbench-card", metavar="DIR", help="only (re)write DIR/README.md, a toy-ProcessBench card"
    )
    ap.add_argument("--push-to-hub", metavar="ORG", help="upload each folder to ORG/stepwiser-<profile>-<name>")
    ap.add_argument("--dry-run", action="store_true", help="with --push-to-hub: upload nothing, write the plan")
    ap.add_argument(
        "--public", action="store_true", help="with --push-to-hub: public repos (default: private; check the licences)"
    )
    ap.add_argument("--no-judges", action="store_true", help="data sets only (no torch needed)")
    a = ap.parse_args(argv)
    if a.toy_processbench_card:
        (Path(a.toy_processbench_card) / "README.md").write_text(toy_processbench_card(Path(a.toy_processbench_card)))
        return 0
    if not (a.profile and a.to):
        ap.error("--profile and --to are required")
    if a.dry_run and not a.push_to_hub:
        ap.error("--dry-run is for --push-to-hub (a plain export writes its files; it has nothing to dry-run)")
    try:
        check_profile_name(a.profile)
        if a.push_to_hub:
            repo_ids([Path("x")], a.push_to_hub, a.profile)  # the org, before minutes of export
        folders = export(a.profile, a.to, judges=not a.no_judges)
    except (ConfigError, ExportError) as e:
        print(f"[export] {e}", file=sys.stderr)
        return 2
    for d in folders:
        print(f"[export] {d}")
    made = {d.name for d in folders} | ({"judges"} if any(d.parent.name == "judges" for d in folders) else set())
    missing = [f"{k} ({v})" for k, v in NEEDS.items() if k not in made and not (k == "judges" and a.no_judges)]
    if missing:
        print(f"[export] not exported, because profile {a.profile!r} has not made them yet: {', '.join(missing)}")
    if a.push_to_hub:
        try:
            plan = push(folders, a.push_to_hub, a.profile, a.dry_run, Path(a.to), public=a.public)
        except ExportError as e:
            print(f"[export] {e}", file=sys.stderr)
            return 1
        for p in plan:
            print(
                f"[export] {'would push' if a.dry_run else 'pushed'} {p['repo_type']} {p['repo_id']} ({len(p['files'])} files)"
            )
    return 0


if __name__ == "__main__":
    sys.exit(main())
