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
  into its base, and the adapter itself in ``adapter/``), with ``stepwiser_judge.json``, the judge's
  contract (:func:`stepwiser_lib.method.judge.judge_contract`: prompt template, history rule,
  decoding settings, verdict pattern or token ids; ``data/README.md``, "Exported judges"), and a
  model card with its test numbers and their 95% intervals and a plain-transformers quick start.
  ``Judge.load(<folder>)`` reads it back.

The cards are ``huggingface_hub``'s (:mod:`stepwiser_lib.core.cards`); nothing exported names a
folder of this machine (model folders are named relative to the output root, or by hub id).
``--push-to-hub ORG`` uploads each folder to ``ORG/stepwiser-<profile>-<folder>`` with
``huggingface_hub``, private unless ``--public``; ``--dry-run`` only plans: it prints the folders
and files the export would write (and the repos a push would create) and writes nothing.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import sys
from collections.abc import Callable
from pathlib import Path

from ..core import cards, io, paths
from ..core.config import ConfigError, check_profile_name, for_notebook
from ..core.vocab import RULES, variant_slug
from ..method.discriminative import VERDICT_TOKEN, verdict_ids
from ..method.judge import EXPORTED_JUDGE, judge_contract

#: The stages whose per-item predictions ``results/<profile>/`` holds, by file stem.
PREDICTIONS = {
    "self_segmentation_predictions": "notebook 01: one record per sampled held-out solution (Table 4)",
    "judge_predictions": "notebook 04: one record per judged test and dev chunk (step accuracy)",
    "processbench_predictions": "notebook 05: one record per toy-ProcessBench solution and judge",
    "chunk_reset_predictions": "notebook 06: one record per held-out problem, judge and seed (Table 7)",
    "rsft_predictions": "notebook 07: one record per held-out problem, selection and SFT seed (Table 8)",
}
SPLITS = ("train", "dev", "test")


class Writer:
    """Where an export writes its files, or, in a dry run (``dry``), only the list of what it would
    write (``files``: path -> bytes): a plan touches nothing on disk."""

    def __init__(self, dry: bool = False):
        self.dry = dry
        self.files: dict[Path, int] = {}

    def fresh(self, d: Path) -> Path:
        """An export folder emptied of an earlier export's files (whose hashed names would linger)."""
        if not self.dry and d.exists():
            shutil.rmtree(d)
        return d

    def copy(self, src: Path, dest: Path, hashed: bool = False) -> str:
        """Copy ``src`` to ``dest``; ``hashed``: as ``<stem>-<sha8><suffix>``, so that the card's
        ``data_files`` change with the data and ``datasets.load_dataset`` cannot serve the rows an
        earlier export left in its cache (issue 49). Returns the name written."""
        if hashed:
            dest = dest.with_name(f"{dest.stem}-{io.file_sha256(src)[:8]}{dest.suffix}")
        self.files[dest] = src.stat().st_size
        if not self.dry:
            dest.parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(src, dest)
        return dest.name

    def text(self, dest: Path, make: str | Callable[[], str]) -> None:
        """Write ``make`` (a text, or what makes it: not called in a dry run) to ``dest``."""
        if self.dry:
            self.files[dest] = len(make.encode()) if isinstance(make, str) else 0
            return
        text = make if isinstance(make, str) else make()
        dest.parent.mkdir(parents=True, exist_ok=True)
        dest.write_text(text)
        self.files[dest] = len(text.encode())

    def json(self, dest: Path, obj: dict) -> None:
        self.text(dest, json.dumps(obj, indent=2) + "\n")

    def tree(self, src: Path, dest: Path, skip: tuple[str, ...] = ()) -> None:
        """Copy the folder ``src`` to ``dest`` but lock files, hidden files and ``skip`` (glob patterns)."""
        ignore = shutil.ignore_patterns("*.lock", ".*", *skip)
        for top, dirs, files in os.walk(src):
            left = ignore(top, dirs + files)
            dirs[:] = sorted(x for x in dirs if x not in left)
            for f in sorted(files):
                if f not in left:
                    self.files[dest / Path(top).relative_to(src) / f] = (Path(top) / f).stat().st_size
        if not self.dry:
            shutil.copytree(src, dest, ignore=ignore)

    def listing(self, folder: Path) -> dict[str, int]:
        """The files written (or planned) under ``folder``: relative name -> bytes."""
        return {str(p.relative_to(folder)): n for p, n in sorted(self.files.items()) if folder in p.parents}


def toy_processbench_card(folder: Path) -> str:
    """The card of a toy-ProcessBench folder: config ``default`` (the four test splits) and ``dev``,
    with their features and sizes. ``data/toy_processbench/README.md`` is this card, so the
    committed folder loads too."""
    configs = {"default": {p.stem: p.name for p in sorted(folder.glob("toy_*step.jsonl"))}}
    if (folder / "toy_dev.jsonl").exists():
        configs["dev"] = {"dev": "toy_dev.jsonl"}
    sources = {c: {s: folder / f for s, f in splits.items()} for c, splits in configs.items()}
    return cards.dataset_card("Toy-ProcessBench", configs, TOY_PROCESSBENCH_BODY, sources=sources)


def export_toy_processbench(out: Path, root: Path = paths.ROOT, w: Writer | None = None) -> Path:
    """A copy of ``data/toy_processbench`` with its card."""
    w = w or Writer()
    src = root / "data" / "toy_processbench"
    d = out / "toy-processbench"
    for p in sorted(src.glob("*.jsonl")) + [src / "manifest.json"]:
        if p.exists():
            w.copy(p, d / p.name)
    w.text(d / "README.md", lambda: toy_processbench_card(src))
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


#: The one split of the labels data set: every labelled problem's chunks, before notebook 03 splits
#: the problems into train, dev and test (so it holds the judges' test problems too).
LABELS_SPLIT = "all_problems"


def export_labels(profile: str, out: Path, w: Writer | None = None) -> Path | None:
    """Notebook 02's ``labels.jsonl`` (one record per labelled chunk), or None when not run."""
    w = w or Writer()
    src = paths.run_dir(profile) / "artifacts" / "02_rollout_labelling" / "labels.jsonl"
    if not src.exists():
        return None
    d = w.fresh(out / "labels")
    configs = {"default": {LABELS_SPLIT: w.copy(src, d / "labels.jsonl", hashed=True)}}
    body = (
        f"Monte-Carlo step labels of the `{profile}` profile (notebook 02): one record per chunk of each "
        "labelled trajectory, with Q after the chunk, Q before it, and the three rules' labels "
        "(Abs-Q, Rel-Effective, Rel-Ratio; the paper's §3.2, Eq. 2). One split, "
        f"`{LABELS_SPLIT}`: the chunks of every labelled problem, the judges' train, dev and test problems "
        "alike (notebook 03 splits them by problem: the `judge-splits` data set). "
        'Schema: `data/README.md`, "Stage 02". ' + _licence(profile)
    )
    w.text(
        d / "README.md",
        lambda: cards.dataset_card(
            f"StepWiser step labels ({profile})",
            configs,
            body,
            license=teacher_licence(profile)["meta"],
            sources={"default": {LABELS_SPLIT: src}},
        ),
    )
    return d


def export_judge_splits(profile: str, out: Path, w: Writer | None = None) -> Path | None:
    """Notebook 03's judge sets: one config per rule and balancing (``rel_ratio-balanced``, ...)."""
    w = w or Writer()
    src = paths.run_dir(profile) / "artifacts" / "03_balancing"
    d = w.fresh(out / "judge-splits")
    configs, sources = {}, {}
    for rule in RULES:
        for kind in ("balanced", "unbalanced"):
            files = {s: src / rule / f"{s}_{kind}.jsonl" for s in SPLITS}
            if all(f.exists() for f in files.values()):
                configs[f"{rule}-{kind}"] = {
                    s: f"{rule}/{w.copy(f, d / rule / f.name, hashed=True)}" for s, f in files.items()
                }
                sources[f"{rule}-{kind}"] = files
    if not configs:
        return None
    body = (
        f"Judge examples of the `{profile}` profile (notebook 03): problem, history, new chunk and the "
        "rule's label, split by problem into train / dev / test (no problem on two sides); `balanced` sets "
        "hold as many Positive as Negative examples (the paper's §3.3), `unbalanced` ones every example. "
        'Schema: `data/README.md`, "Stage 03". ' + _licence(profile)
    )
    w.text(
        d / "README.md",
        lambda: cards.dataset_card(
            f"StepWiser judge splits ({profile})",
            configs,
            body,
            license=teacher_licence(profile)["meta"],
            sources=sources,
        ),
    )
    return d


def export_predictions(profile: str, out: Path, w: Writer | None = None) -> Path | None:
    """The per-item predictions of ``results/<profile>/``: one config per stage."""
    w = w or Writer()
    src = paths.results_dir(profile, create=False)
    d = w.fresh(out / "predictions")
    configs = {
        stem.removesuffix("_predictions"): {"records": w.copy(src / f"{stem}.jsonl", d / f"{stem}.jsonl", hashed=True)}
        for stem in PREDICTIONS
        if (src / f"{stem}.jsonl").exists()
    }
    sources = {
        stem.removesuffix("_predictions"): {"records": src / f"{stem}.jsonl"}
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
    w.text(
        d / "README.md",
        lambda: cards.dataset_card(
            f"StepWiser predictions ({profile})",
            configs,
            body,
            license=teacher_licence(profile)["meta"],
            sources=sources,
        ),
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


def repo_id(org: str, profile: str, name: str) -> str:
    """The hub id of the export folder ``name`` (``labels``, a judge's slug, ...) under ``org``:
    ``org/stepwiser-<profile>-<name>``, with the teacher's prefix where its licence asks for one."""
    prefix = teacher_licence(profile)["prefix"]
    return f"{org}/" + re.sub(r"[^A-Za-z0-9.]+", "-", f"{prefix}stepwiser-{profile}-{name}")


def processbench_f1(profile: str) -> tuple[str | None, dict[str, float]]:
    """Notebook 05's benchmark (``toy`` or a real one) and each judge's average F1 on it, by name
    (``results/<profile>/processbench.json``; empty when notebook 05 has not run)."""
    f = paths.results_dir(profile, create=False) / "processbench.json"
    if not f.exists():
        return None, {}
    pb = io.read_json(f)
    return pb.get("bench"), {
        name: r["avg_f1"] for name, r in (pb.get("judges") or {}).items() if r.get("avg_f1") is not None
    }


#: The quick start of a generative judge's card: plain transformers, the prompt from the contract,
#: greedy decoding, the verdict by the contract's pattern (a test runs it against ``Judge.judge``).
QUICK_START = """import json, os, re
from huggingface_hub import hf_hub_download
from transformers import AutoModelForCausalLM, AutoTokenizer

JUDGE = "{judge}"
tok, model = AutoTokenizer.from_pretrained(JUDGE), AutoModelForCausalLM.from_pretrained(JUDGE)
local = os.path.join(JUDGE, "stepwiser_judge.json")
c = json.load(open(local if os.path.isdir(JUDGE) else hf_hub_download(JUDGE, "stepwiser_judge.json")))

def judge(problem, history, chunk):
    \"\"\"(verdict, output) for a new chunk after the chunks `history`: greedy, as the contract says.\"\"\"
    p = c["prompt"]
    text = p["template"].format(problem=problem, chunk=chunk,
                                history=p["history_join"].join(history) if history else p["empty_history"])
    text = tok.apply_chat_template([{{"role": "user", "content": text}}], tokenize=False, add_generation_prompt=True)
    ids = tok(text, add_special_tokens=False, return_tensors="pt").input_ids
    out = model.generate(ids, do_sample=False, max_new_tokens=c["decoding"]["max_new_tokens"])[0, ids.shape[1]:]
    output = tok.decode([t for t in out.tolist() if t not in c["decoding"]["end_token_ids"]])
    m = re.search(c["verdict"]["pattern"], output, re.IGNORECASE | re.DOTALL)
    return (m.group(1).capitalize() if m else None), output

print(judge("a = 25. b = a + 30. c = b + 6. Find c.", [], "b = a + 30 = 25 + 30 = 55"))
"""
#: The same for a discriminative judge: RLHFlow's conversation, p(+) from the next token's logits.
QUICK_START_DISC = """import json, os
import torch
from huggingface_hub import hf_hub_download
from transformers import AutoModelForCausalLM, AutoTokenizer

JUDGE = "{judge}"
tok, model = AutoTokenizer.from_pretrained(JUDGE), AutoModelForCausalLM.from_pretrained(JUDGE)
local = os.path.join(JUDGE, "stepwiser_judge.json")
c = json.load(open(local if os.path.isdir(JUDGE) else hf_hub_download(JUDGE, "stepwiser_judge.json")))

def judge(problem, history, chunk):
    \"\"\"(verdict, p(+)) for a new chunk after the chunks `history`: one user turn per step.\"\"\"
    p, v, msgs = c["prompt"], c["verdict"], []
    for i, step in enumerate([*history, chunk]):
        turn = p["first_turn"] if i == 0 else p["later_turn"]
        msgs.append({{"role": "user", "content": turn.format(problem=problem, chunk=step)}})
        if i < len(history):
            msgs.append({{"role": "assistant", "content": p["history_reply"]}})
    text = tok.apply_chat_template(msgs, tokenize=False, add_generation_prompt=True)
    with torch.no_grad():
        logits = model(tok(text, add_special_tokens=False, return_tensors="pt").input_ids).logits[0, -1]
    p_plus = torch.softmax(logits[[v["token_ids"]["+"], v["token_ids"]["-"]]].float(), 0)[0].item()
    return ("Positive" if p_plus >= v["threshold"] else "Negative"), p_plus

print(judge("a = 25. b = a + 30. c = b + 6. Find c.", [], "b = a + 30 = 25 + 30 = 55"))
"""


def quick_start(style: str, judge: str) -> str:
    """The card's plain-transformers quick start for a judge at ``judge`` (a hub id or folder)."""
    return (QUICK_START_DISC if style == "disc" else QUICK_START).format(judge=judge)


def judge_card(
    entry: dict,
    result: dict | None,
    profile: str,
    base_model: str | None,
    config: dict | None = None,
    *,
    org: str | None = None,
    processbench: tuple[str | None, float | None] = (None, None),
    adapter: bool = False,
) -> str:
    """A trained judge's model card: what it is, how it was trained, its test numbers (also as the
    card's ``model-index``: test balanced accuracy, and ProcessBench F1 where notebook 05 has it),
    the data sets it was trained on (hub ids, when the export knows its ``org``), how to use it with
    this library and with plain transformers."""
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
    splits_id = repo_id(org, profile, "judge-splits") if org else f"stepwiser-{profile}-judge-splits"
    results = []
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
        if t.get("balanced_acc") is not None:
            results.append(
                cards.eval_result(
                    value=t["balanced_acc"],
                    metric="balanced_accuracy",
                    metric_name="Test balanced accuracy (%)",
                    dataset=splits_id,
                    dataset_name=f"StepWiser judge splits ({profile})",
                    config=f"{entry['rule']}-balanced",
                    split="test",
                )
            )
    bench, f1 = processbench
    if f1 is not None:
        toy = bench == "toy"
        lines += [f"| ProcessBench F1 ({'toy' if toy else bench}, notebook 05) | {f1} (average over its splits) |"]
        results.append(
            cards.eval_result(
                value=f1,
                metric="f1",
                metric_name="ProcessBench F1, average over its splits",
                dataset=(repo_id(org, profile, "toy-processbench") if org else "toy-processbench")
                if toy
                else "Qwen/ProcessBench",
                dataset_name="Toy-ProcessBench" if toy else "ProcessBench",
                task_name="First erroneous step of a solution",
            )
        )
    here = repo_id(org, profile, variant_slug(entry["name"])) if org else "path/to/this/folder"
    lines += [
        "",
        "## Files",
        "",
        "- the model: a full `transformers` checkpoint"
        + (" (its LoRA adapter merged into the model it was trained from)" if adapter else "")
        + "; `generation_config.json` holds only its token ids (no sampling default)",
        f"- `{EXPORTED_JUDGE}`: its contract (`contract_version`): the prompt template with its slots, the "
        "history rule, the decoding settings and "
        + ("the `+`/`-` token ids it is read with" if entry["style"] == "disc" else "the verdict pattern")
        + '; schema in `data/README.md`, "Exported judges"',
    ]
    if adapter:
        lines += [
            "- `adapter/`: the PEFT LoRA adapter as trained; `adapter_config.json` names the model it applies to "
            "(a hub id, or a model of this repository's run, relative to its output folder)"
        ]
    lines += [
        "",
        "## Use it with the companion",
        "",
        "```python",
        "from stepwiser_lib.method.judge import Judge",
        f'j = Judge.load("{here}")',
        "j.judge([(problem, previous_chunks, new_chunk)])  # [{'verdict': 'Positive' | 'Negative' | None, ...}]",
        "```",
        "",
        "## Quick start with plain transformers",
        "",
        "The prompt, the decoding and the verdict all come from its contract, "
        f"`{EXPORTED_JUDGE}`; greedy, as `Judge.judge` with `k=1`:",
        "",
        "```python",
        quick_start(entry["style"], here).rstrip(),
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
        model_name=f"stepwiser-{profile}-{variant_slug(entry['name'])}",
        datasets=[splits_id] if org else None,
        eval_results=results,
    )


def hub_base(profile: str) -> str | None:
    """The hub model every judge of ``profile`` descends from (notebook 01's ``BASE_MODEL``, through
    the chunk policy), or None when the profile's base is one this repository built."""
    try:
        base = for_notebook(profile, "01_self_segmentation").BASE_MODEL
    except ConfigError:
        return None
    return base if "/" in base and not Path(base).exists() and not base.startswith(("data/", "runs/")) else None


def portable(model: str) -> str:
    """A model folder as an export may name it: a hub id as it is, a folder of this repository's
    runs or data relative (``runs/...`` to the output root, ``data/...``), any other by its name."""
    stored = paths.stored_path(model)
    return Path(stored).name if Path(stored).is_absolute() else stored


def _model_files(d: Path, style: str) -> dict:
    """After a judge's model is copied to ``d``: its ``generation_config.json`` rewritten to hold
    only token ids (every end id, pad, bos: as :meth:`Judge.load` runs it, so that a plain
    ``generate`` adds no sampling default of the checkpoint), and what its contract needs from its
    tokenizer (the end ids; a discriminative judge's ``+``/``-`` ids)."""
    from transformers import AutoTokenizer, GenerationConfig  # lazy: only an export of judges needs transformers

    tok = AutoTokenizer.from_pretrained(d)
    old = GenerationConfig.from_pretrained(d) if (d / "generation_config.json").exists() else None
    eos = getattr(old, "eos_token_id", None)
    ends = [*([] if eos is None else [eos] if isinstance(eos, int) else eos), tok.eos_token_id]
    ends = [int(i) for i in dict.fromkeys(ends) if i is not None]  # as engines.models.end_ids
    pad = tok.pad_token_id if tok.pad_token_id is not None else tok.eos_token_id
    GenerationConfig(
        eos_token_id=ends, pad_token_id=pad, bos_token_id=getattr(old, "bos_token_id", None)
    ).save_pretrained(d)
    out: dict = {"end_token_ids": ends}
    if style == "disc":
        out["verdict_token_ids"] = {VERDICT_TOKEN[lab]: i for lab, i in verdict_ids(tok).items()}
    return out


def judged_with(entry: dict, config: dict | None, profile: str) -> int:
    """The output tokens notebook 04 judged a registry entry with, so that the exported judge is the
    one its card reports on: the limit a GRPO run recorded, else (a judge SFT made: RS-FT) notebook
    04's ``MAX_COMPLETION`` of that run (``results/<profile>/judges.json``), else the profile's. A
    longer limit would finish outputs notebook 04 cut, and so change verdicts (LAB_LOG.md, EX12)."""
    if "max_new_tokens" in entry:
        return int(entry["max_new_tokens"])
    limit = (config or {}).get("MAX_COMPLETION")
    return int(limit if limit is not None else for_notebook(profile, "04_judge_grpo").MAX_COMPLETION)


def export_judges(profile: str, out: Path, w: Writer | None = None, org: str | None = None) -> list[Path]:
    """Every trained judge of the profile's registry as a loadable folder with its contract and a card
    (registry paths are relative to the output root, :func:`stepwiser_lib.core.paths.output_root`); a
    judge trained with LoRA also carries its adapter (``adapter/``). In a dry run (``w.dry``) nothing
    is merged or copied: the plan lists the files of the model it starts from."""
    w = w or Writer()
    reg_path = paths.judge_registry(profile)
    if not reg_path.exists():
        return []
    metrics = (
        io.read_json(paths.results_dir(profile, create=False) / "judges.json")
        if (paths.results_dir(profile, create=False) / "judges.json").exists()
        else {}
    )
    results, config = metrics.get("variants", {}), metrics.get("config")
    bench, f1 = processbench_f1(profile)
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
        d = w.fresh(out / "judges" / variant_slug(entry["name"]))
        ids: dict = {}
        if w.dry:  # the merged copy has the files of the model the adapter applies to
            w.tree(Path(base), d, skip=("merged_from.json",))
            w.files.setdefault(d / "generation_config.json", 0)
        else:
            from ..engines.models import merged_model_dir  # lazy: torch, only when judges are exported

            w.tree(Path(merged_model_dir(base, adapter) if adapter else base), d, skip=("merged_from.json",))
            ids = _model_files(d, entry["style"])
            w.files[d / "generation_config.json"] = (d / "generation_config.json").stat().st_size
        if adapter:
            w.tree(Path(adapter), d / "adapter", skip=("merged", "README.md"))
            cfg = d / "adapter" / "adapter_config.json"
            if not w.dry and cfg.exists():  # PEFT wrote this machine's folder of the base: name it portably
                io.write_json(cfg, {**io.read_json(cfg), "base_model_name_or_path": portable(entry["base"])})
            w.json(d / "merged_from.json", {"base": portable(entry["base"]), "adapter": "adapter/"})
        family, max_new = entry.get("prompt_family", "toy"), judged_with(entry, config, profile)
        meta = {
            "contract_version": None,  # first in the file; set by the contract
            "name": entry["name"],
            "kind": entry["kind"],
            "rule": entry["rule"],
            "style": entry["style"],
            "prompt_family": family,
            "max_new_tokens": max_new,
            "profile": profile,
            "base_model": hub_base(profile),
            **(
                {}
                if w.dry
                else judge_contract(
                    entry["style"],
                    family,
                    max_new,
                    verdict_token_ids=ids.get("verdict_token_ids"),
                    end_token_ids=ids.get("end_token_ids"),
                )
            ),
        }
        w.json(d / EXPORTED_JUDGE, meta)
        w.text(
            d / "README.md",
            lambda entry=entry, adapter=adapter: judge_card(
                entry,
                results.get(entry["name"]),
                profile,
                hub_base(profile),
                config,
                org=org,
                processbench=(bench, f1.get(entry["name"])),
                adapter=bool(adapter),
            ),
        )
        written.append(d)
    return written


def _export(profile: str, out: Path, judges: bool, org: str | None, w: Writer) -> list[Path]:
    if not w.dry:
        out.mkdir(parents=True, exist_ok=True)
    folders = [export_toy_processbench(out, w=w)] if not profile.startswith(("colab", "paper", "real")) else []
    folders += [
        d
        for d in (
            export_labels(profile, out, w),
            export_judge_splits(profile, out, w),
            export_predictions(profile, out, w),
        )
        if d
    ]
    if judges:
        folders += export_judges(profile, out, w, org)
    return folders


def export(profile: str, to: str | Path, judges: bool = True, org: str | None = None) -> list[Path]:
    """Every artefact of ``profile`` under ``to``; returns the folders written. ``org``: the hub
    organisation the export will be pushed to, so that a judge's card names its data sets by hub id."""
    return _export(profile, Path(to), judges, org, Writer())


def export_plan(profile: str, to: str | Path, judges: bool = True, org: str | None = None) -> list[dict]:
    """What :func:`export` would write, and nothing written: per folder, its ``files`` (relative
    name -> bytes; a judge's model files are those of the model it starts from, README.md and
    the contract counted as 0 when their text is made at export)."""
    w = Writer(dry=True)
    return [{"folder": d, "files": w.listing(d)} for d in _export(profile, Path(to), judges, org, w)]


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

    ids = [repo_id(org, profile, d.name) for d in folders]
    for i in ids:
        try:
            validate_repo_id(i)
        except HFValidationError as e:
            raise ExportError(f"--push-to-hub {org!r}: {i!r} is not a hub repo id ({str(e).split('.')[0]})") from None
    return ids


def hub_plan(
    folders: list[Path], org: str, profile: str, public: bool = False, files: list[list[str]] | None = None
) -> list[dict]:
    """One upload per folder: its repo id, type (a model under ``judges/``, else a data set),
    visibility and files (``files``: one list per folder, for folders a dry run has not written)."""
    plan = []
    for i, (d, repo) in enumerate(zip(folders, repo_ids(folders, org, profile))):
        plan.append(
            {
                "repo_id": repo,
                "private": not public,
                "repo_type": "model" if d.parent.name == "judges" else "dataset",
                "folder": str(d),
                "files": files[i] if files else sorted(str(p.relative_to(d)) for p in d.rglob("*") if p.is_file()),
            }
        )
    return plan


def push(
    folders: list[Path], org: str, profile: str, dry_run: bool = False, out: Path | None = None, public: bool = False
) -> list[dict]:
    """Upload each folder to ``org/stepwiser-<profile>-<name>`` (a dataset, or a model under judges/;
    with the teacher's name prefix where its licence asks for one), private unless ``public``
    (issue 48: a teacher's licence may not allow what a public repo offers); with ``dry_run`` only
    the plan (:func:`hub_plan`): nothing is written or uploaded."""
    plan = hub_plan(folders, org, profile, public)
    if dry_run:
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
                f"the push of {p['repo_id']} failed ({type(e).__name__}: {first}); the export is in "
                f"{out or Path(p['folder']).parent}"
            ) from None
    return plan


def _missing(folders: list[Path], profile: str, no_judges: bool) -> str | None:
    made = {d.name for d in folders} | ({"judges"} if any(d.parent.name == "judges" for d in folders) else set())
    missing = [f"{k} ({v})" for k, v in NEEDS.items() if k not in made and not (k == "judges" and no_judges)]
    if missing:
        return f"[export] not exported, because profile {profile!r} has not made them yet: {', '.join(missing)}"
    return None


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
    ap.add_argument(
        "--dry-run",
        action="store_true",
        help="plan only: print the folders and files the export would write (with --push-to-hub, the repos it "
        "would push to); write and upload nothing",
    )
    seen = ap.add_mutually_exclusive_group()
    seen.add_argument(
        "--private", dest="public", action="store_false", help="with --push-to-hub: private repos (the default)"
    )
    seen.add_argument(
        "--public", dest="public", action="store_true", help="with --push-to-hub: public repos (check the licences)"
    )
    ap.set_defaults(public=False)  # private unless --public (--private's store_false would default to True)
    ap.add_argument("--no-judges", action="store_true", help="data sets only (no torch needed)")
    a = ap.parse_args(argv)
    if a.toy_processbench_card:
        (Path(a.toy_processbench_card) / "README.md").write_text(toy_processbench_card(Path(a.toy_processbench_card)))
        return 0
    if not (a.profile and a.to):
        ap.error("--profile and --to are required")
    try:
        check_profile_name(a.profile)
        if a.push_to_hub:
            repo_ids([Path("x")], a.push_to_hub, a.profile)  # the org, before minutes of export
        if a.dry_run:
            plan = export_plan(a.profile, a.to, judges=not a.no_judges, org=a.push_to_hub)
            hub = (
                hub_plan(
                    [p["folder"] for p in plan], a.push_to_hub, a.profile, a.public, [list(p["files"]) for p in plan]
                )
                if a.push_to_hub
                else [None] * len(plan)
            )
        else:
            folders = export(a.profile, a.to, judges=not a.no_judges, org=a.push_to_hub)
    except (ConfigError, ExportError) as e:
        print(f"[export] {e}", file=sys.stderr)
        return 2
    if a.dry_run:
        for p, h in zip(plan, hub):
            size = sum(p["files"].values()) / 2**20
            print(f"[export] would write {p['folder']}/ ({len(p['files'])} files, {size:.1f} MB)")
            for name in p["files"]:
                print(f"[export]     {name}")
            if h:
                print(
                    f"[export]   would push it to the {'private' if h['private'] else 'public'} {h['repo_type']} {h['repo_id']}"
                )
        if line := _missing([p["folder"] for p in plan], a.profile, a.no_judges):
            print(line)
        print("[export] dry run: nothing written" + (" or pushed" if a.push_to_hub else ""))
        return 0
    for d in folders:
        print(f"[export] {d}")
    if line := _missing(folders, a.profile, a.no_judges):
        print(line)
    if a.push_to_hub:
        try:
            plan = push(folders, a.push_to_hub, a.profile, out=Path(a.to), public=a.public)
        except ExportError as e:
            print(f"[export] {e}", file=sys.stderr)
            return 1
        for p in plan:
            print(f"[export] pushed {p['repo_type']} {p['repo_id']} ({len(p['files'])} files)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
