"""What each notebook reads from the notebooks before it, checked in its config cell.

Every stage hands files to the next (schemas: ``data/README.md``). A notebook opened on its own
(above all from its Colab badge, in a fresh VM) should fail at once, saying which notebook to run
first and at which profile, not twenty minutes in with a bare ``FileNotFoundError``::

    from stepwiser_lib.core import inputs
    inputs.check(cfg)  # raises MissingInputs naming the notebook to run first

What is needed follows the config: notebook 02 needs notebook 01's chunk policy only when
``POLICY_MODEL`` is ``"artifact"``; notebook 04 needs notebook 03's data for the label rules its
``VARIANTS`` use; notebooks 05-07 need notebook 04's registry and the judge folders it lists.

Present is not enough: a hand-off must also be *current*: a split, a label file or a
prompt family replaced since was read silently.
Notebook 03 records in each rule folder which ``labels.jsonl`` it read (``sources.json``: its
sha256); notebook 04 records in each registry entry the prompt family and the sha256 of the splits
it trained on. :func:`check` compares them with the files there now and fails with
:class:`StaleInputs`, naming the notebook to re-run (or the setting to change)::

    04_judge_grpo cannot start at profile 'tiny': what it reads is out of date:
      - 03_balancing/rel_ratio: built from another labels.jsonl (sha256 9f2c41d0e3a1 then, 77b0e5c2aa10 now) ...
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from pathlib import Path

from . import io, paths
from .schemas import JUDGE_SPLITS
from .vocab import parse_variant

STAGES = (
    "01_self_segmentation",
    "02_rollout_labelling",
    "03_balancing",
    "04_judge_grpo",
    "05_processbench",
    "06_chunk_reset",
    "07_rsft",
)
#: Which notebooks each one reads from (at their default settings), and the output of each
#: producer that tells whether it has run: the chain to suggest when something is missing.
UPSTREAM = {
    STAGES[1]: (STAGES[0],),
    STAGES[2]: (STAGES[1],),
    STAGES[3]: (STAGES[0], STAGES[2]),
    STAGES[4]: (STAGES[3],),
    STAGES[5]: (STAGES[0], STAGES[3]),
    STAGES[6]: (STAGES[0], STAGES[3]),
}
PRODUCES = {STAGES[0]: "chunk_policy/model", STAGES[1]: "labels.jsonl", STAGES[2]: "", STAGES[3]: "judges.json"}


@dataclass(frozen=True)
class Need:
    """One input: the file or folder, the notebook that writes it (or how else it is made),
    what it is, and its section of ``data/README.md``."""

    path: Path
    producer: str
    what: str
    schema: str
    model: bool = False  # a saved model or adapter folder: needs its config and its weights
    readable: bool = True  # False: the file is there but cannot be read (damaged)

    def present(self) -> bool:
        if not self.readable:
            return False
        if self.model:
            io.restore_aside(self.path)  # a save killed between its two renames left the previous model aside
            return paths.model_complete(self.path)
        return self.path.exists()


class MissingInputs(FileNotFoundError):
    """A notebook's inputs are not there; the message names the notebook to run first."""


class StaleInputs(RuntimeError):
    """A notebook's inputs are there but were made from other inputs, or other settings, than the
    ones there now; the message names the notebook to re-run or the setting to change."""


@dataclass(frozen=True)
class Stale:
    """One input that is out of date: what, why, and the fix."""

    what: str
    why: str
    fix: str


#: The file in which a stage records the inputs it read (notebook 03: in each rule folder).
SOURCES = "sources.json"


def record_sources(folder, files: dict, **settings) -> dict:
    """Write ``folder/sources.json``: each input file (name -> path) with its stored path and
    sha256, and ``settings``; returns the record. Written after the outputs it vouches for, so an
    interrupted stage leaves outputs without it (stale: rebuilt), never a record without outputs."""
    rec = {
        "inputs": {name: {"path": paths.stored_path(f), "sha256": io.file_sha256(f)} for name, f in files.items()},
        **settings,
    }
    io.write_json(Path(folder) / SOURCES, rec)
    return rec


def recorded_sha256(folder, name: str) -> str | None:
    """The sha256 ``folder/sources.json`` records for input ``name``; None when there is no
    record or it cannot be read (written before records existed, or damaged)."""
    try:
        return json.loads((Path(folder) / SOURCES).read_text())["inputs"][name]["sha256"]
    except (OSError, ValueError, KeyError, TypeError):
        return None


def split_digests(profile: str, rule: str) -> dict[str, str] | None:
    """sha256 of notebook 03's judge data for ``rule`` per split (what notebook 04 trains and
    evaluates on); None when a split file is missing."""
    files = {s: paths.balanced(profile, rule, s) for s in JUDGE_SPLITS}
    if not all(f.exists() for f in files.values()):
        return None
    return {s: io.file_sha256(f) for s, f in files.items()}


def _stale_splits(profile: str, rules: list[str]) -> list[Stale]:
    """Notebook 03's rule folders against the ``labels.jsonl`` there now."""
    labels = _art(profile, STAGES[1]) / "labels.jsonl"
    now = io.file_sha256(labels) if labels.exists() else None  # gone: nothing to compare with
    out = []
    for rule in rules:
        then = recorded_sha256(_art(profile, STAGES[2]) / rule, "labels.jsonl")
        where = f"{STAGES[2]}/{rule}"
        if then is None:
            out.append(
                Stale(
                    where,
                    f"written before notebook 03 recorded which labels.jsonl it read (no readable {SOURCES})",
                    f"re-run notebook {STAGES[2]}.ipynb (seconds)",
                )
            )
        elif now is not None and then != now:
            out.append(
                Stale(
                    where,
                    f"built from another labels.jsonl (sha256 {then[:12]} then, {now[:12]} now): "
                    f"notebook {STAGES[1]} has run since",
                    f"re-run notebook {STAGES[2]}.ipynb",
                )
            )
    return out


def _stale_judges(profile: str, cfg, entries: list[dict]) -> list[Stale]:
    """Notebook 04's registry entries against this notebook's prompt family and notebook 03's
    splits there now: judges trained on other data, or prompted another way, are stale."""
    out, digests = [], {}
    family = getattr(cfg, "PROMPT_FAMILY", None)
    for e in entries:
        what = f"judge {e.get('name')!r}"
        if "prompt_family" not in e or "splits" not in e:
            out.append(
                Stale(
                    what,
                    "the registry predates provenance records (no prompt_family / splits)",
                    f"re-run notebook {STAGES[3]}.ipynb (it resumes its trained judges from disk)",
                )
            )
            continue
        if family is not None and e["prompt_family"] != family:
            out.append(
                Stale(
                    what,
                    f"trained with PROMPT_FAMILY = {e['prompt_family']!r}; this notebook prompts it with {family!r}",
                    f"set PROMPT_FAMILY = {e['prompt_family']!r} here, or re-run "
                    f"{STAGES[3]} with PROMPT_FAMILY = {family!r}",
                )
            )
        for rule, then in (e["splits"] or {}).items():
            if rule not in digests:
                digests[rule] = split_digests(profile, rule)
            now = digests[rule]
            if now is None:
                out.append(
                    Stale(
                        what,
                        f"trained on notebook 03's {rule} splits, which are no longer there "
                        f"(notebook {STAGES[2]} has run since without {rule!r} in RULES)",
                        f"re-run notebook {STAGES[2]}.ipynb with {rule!r} in RULES, then {STAGES[3]}",
                    )
                )
            elif now != then:
                changed = sorted(s for s in then if then[s] != now.get(s))
                out.append(
                    Stale(
                        what,
                        f"trained on notebook 03's {rule} splits as they were; {', '.join(changed)} "
                        f"changed since (notebook {STAGES[2]} has run since)",
                        f"re-run notebook {STAGES[3]}.ipynb",
                    )
                )
    return out


def _entries(profile: str, judges: list[str]) -> list[dict]:
    """The registry entries ``judges`` select (``"all"``: every one); [] when unreadable (named
    by :func:`_registry`'s check)."""
    try:
        entries = json.loads(paths.judge_registry(profile).read_text())
    except (OSError, ValueError):
        return []
    if not isinstance(entries, list):
        return []
    return [e for e in entries if isinstance(e, dict) and ("all" in judges or e.get("name") in judges)]


def stale(notebook: str, cfg) -> list[Stale]:
    """What ``notebook`` reads that is present but out of date under ``cfg``."""
    if notebook == STAGES[3]:
        return _stale_splits(cfg.PROFILE, _rules(cfg.VARIANTS))
    if notebook in STAGES[4:]:
        return _stale_judges(cfg.PROFILE, cfg, _entries(cfg.PROFILE, cfg.JUDGES))
    return []


def stale_message(notebook: str, profile: str, found: list[Stale]) -> str:
    lines = [f"{notebook} cannot start at profile {profile!r}: what it reads is out of date:"]
    lines += [f"  - {s.what}: {s.why}; {s.fix}" for s in found]
    lines.append(f"(or `make reproduce PROFILE={profile}`, which runs every notebook in order)")
    return "\n".join(lines)


def _art(profile: str, stage: str) -> Path:
    return paths.run_dir(profile) / "artifacts" / stage


def _policy(profile: str, key: str, value: str) -> list[Need]:
    """Notebook 01's chunk policy when ``key`` asks for it, else the model ``key`` names."""
    if (key, value) not in (("POLICY_MODEL", "artifact"), ("JUDGE_INIT", "chunk_policy")):
        return _local_model(value, key)
    return [
        Need(
            _art(profile, STAGES[0]) / "chunk_policy" / "model",
            STAGES[0],
            f"the chunk policy ({key} = {value!r})",
            "Stage 01",
            model=True,
        )
    ]


def _local_model(name: str, key: str) -> list[Need]:
    """A model named by a local path must exist; a hub id is downloaded by the notebook."""
    if name == "toy_base":
        return [
            Need(
                paths.TOY_BASE_DIR,
                "the repository (data/toy_base is committed; rebuild it with make toy-base)",
                f"the toy base model ({key})",
                "Committed inputs",
                model=True,
            )
        ]
    if name.startswith(("/", "./", "../", "~")) or (paths.ROOT / name).exists():
        p = Path(name).expanduser()
        p = p if p.is_absolute() else paths.ROOT / p
        return [Need(p, f"you ({key} names a local folder)", f"the model of {key}", "", model=True)]
    return []


def _rules(variants: list[str]) -> list[str]:
    return sorted({parse_variant(v)[1] for v in variants})


def _registry(profile: str, judges: list[str]) -> list[Need]:
    reg = paths.judge_registry(profile)
    needs = [Need(reg, STAGES[3], "the judge registry", "Stage 04")]
    if reg.exists():  # the folders it lists (a partial copy of runs/ loses them)
        if not _readable_registry(reg):  # damaged (a copy cut short): named, and rebuilt by 04
            return [
                Need(
                    reg,
                    STAGES[3],
                    "the judge registry (damaged: not a JSON list of entries; notebook 04 "
                    "rewrites it from its cached runs)",
                    "Stage 04",
                    readable=False,
                )
            ]
        for e in _entries(profile, judges):
            for key in ("base", "adapter"):
                v = e.get(key)
                if v and (os.path.isabs(v) or v.startswith(("runs/", "data/"))):
                    needs.append(
                        Need(
                            Path(paths.resolve_stored(v)),
                            STAGES[3],
                            f"judge {e.get('name')!r} ({key})",
                            "Stage 04",
                            model=True,
                        )
                    )
    return needs


def _readable_registry(reg: Path) -> bool:
    try:
        return isinstance(json.loads(reg.read_text()), list)
    except (OSError, ValueError):
        return False


def needs(notebook: str, cfg) -> list[Need]:
    """Everything ``notebook`` reads from earlier stages under ``cfg``."""
    p = cfg.PROFILE
    if notebook == STAGES[0]:
        return _local_model(cfg.BASE_MODEL, "BASE_MODEL")
    if notebook == STAGES[1]:
        return _policy(p, "POLICY_MODEL", cfg.POLICY_MODEL)
    if notebook == STAGES[2]:
        return [Need(_art(p, STAGES[1]) / "labels.jsonl", STAGES[1], "the Monte-Carlo step labels", "Stage 02")]
    if notebook == STAGES[3]:
        out = [
            Need(
                _art(p, STAGES[2]) / rule / f"{split}.jsonl",
                STAGES[2],
                f"balanced judge data for rule {rule!r} (RULES must include it)",
                "Stage 03",
            )
            for rule in _rules(cfg.VARIANTS)
            for split in JUDGE_SPLITS
        ]
        return _policy(p, "JUDGE_INIT", cfg.JUDGE_INIT) + out
    if notebook == STAGES[4]:
        return _registry(p, cfg.JUDGES)
    if notebook in STAGES[5:]:
        return _policy(p, "POLICY_MODEL", cfg.POLICY_MODEL) + _registry(p, cfg.JUDGES)
    raise ValueError(f"unknown notebook {notebook!r}; notebooks: {', '.join(STAGES)}")


def ok_lines(want: list[Need]) -> list[str]:
    """What :func:`check` prints: a line per input, or one per earlier notebook's folder when it
    gives several (issue 36: five lines of paths told a reader less than one)."""
    by_dir: dict[str, list[Need]] = {}
    for n in want:
        parts = Path(_show(n.path)).parts
        key = str(Path(*parts[:4])) if len(parts) > 4 and parts[2] == "artifacts" else _show(n.path)
        by_dir.setdefault(key, []).append(n)
    out = []
    for key, group in by_dir.items():
        if len(group) == 1:
            out.append(f"input ok: {_show(group[0].path)} ({group[0].what})")
        else:
            rest = ", ".join(str(Path(_show(n.path)).relative_to(key)) for n in group)
            out.append(f"input ok: {len(group)} paths in {key}/: {rest}")
    return out


def _show(path: Path) -> str:
    for root in (paths.output_root(), paths.ROOT):
        if path.is_relative_to(root):
            return str(path.relative_to(root))
    return str(path)


def _has_run(stage: str, profile: str) -> bool:
    out = _art(profile, stage) / PRODUCES[stage]
    if stage == STAGES[0]:
        return paths.model_complete(out)
    return out.exists() and (out.is_file() or any(out.iterdir()))


def to_run(missing: list[Need], profile: str) -> list[str]:
    """The notebooks to run, in order, to make ``missing``: their producers, and every notebook
    upstream of those whose own output is not there either."""
    todo: set[str] = set()

    def add(stage: str) -> None:
        if stage not in todo:
            todo.add(stage)
            for up in UPSTREAM.get(stage, ()):
                if not _has_run(up, profile):
                    add(up)

    for n in missing:
        if n.producer in STAGES:
            add(n.producer)
    return sorted(todo, key=STAGES.index)


def message(notebook: str, profile: str, missing: list[Need]) -> str:
    """The error a notebook gives when ``missing`` are not there."""
    lines = [f"{notebook} cannot start at profile {profile!r}: what earlier notebooks write is missing:"]
    for n in missing:
        schema = f'; schema: data/README.md, "{n.schema}"' if n.schema else ""
        half = (
            " (incomplete: config or weights missing, as when a run stops while saving)"
            if n.path.exists() and n.readable
            else ""
        )
        lines.append(f"  - {_show(n.path)}: {n.what}{half}; written by {n.producer}{schema}")
    chain = to_run(missing, profile)
    if chain:
        lines.append(
            f"Run notebook {chain[0]}.ipynb first, at PROFILE = {profile!r}"
            + (f", then {', '.join(chain[1:])}" if chain[1:] else "")
            + ", then this one "
            f"(or `make reproduce PROFILE={profile}`, which runs every notebook in order)."
        )
    else:
        lines.append("Fix the setting named above.")
    where = paths.output_root()
    if os.environ.get(paths.OUTPUT_ROOT_ENV):
        lines.append(f"Outputs are looked for under ${paths.OUTPUT_ROOT_ENV} = {where}.")
    lines.append(
        "On Colab each notebook runs in a fresh VM: outputs reach the next notebook only through "
        "Google Drive (use_drive = True in the first code cell of both notebooks)."
    )
    return "\n".join(lines)


def check(cfg) -> list[Need]:
    """Fail with :class:`MissingInputs` unless everything the notebook reads is there, and with
    :class:`StaleInputs` when some of it is out of date (:func:`stale`); returns what was checked. ``cfg`` is the notebook's :class:`~stepwiser_lib.core.config.Config`."""
    notebook = cfg.notebook
    want = needs(notebook, cfg)
    want = list({n.path: n for n in want}.values())  # one line per path
    missing = [n for n in want if not n.present()]
    if missing:
        raise MissingInputs(message(notebook, cfg.PROFILE, missing))
    found = stale(notebook, cfg)
    if found:
        raise StaleInputs(stale_message(notebook, cfg.PROFILE, found))
    for line in ok_lines(want):
        print(line)
    if not want:
        print(f"{notebook} reads nothing from earlier notebooks")
    return want
