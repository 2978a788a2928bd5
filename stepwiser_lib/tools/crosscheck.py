"""Settings that are each valid but do not fit together, found before any kernel starts
(``--check``, ``--dry-run`` and every run): each problem names the
notebook, the settings and the fix. The single-value checks live in the parameters cells
(:mod:`stepwiser_lib.core.checks`); these need two or more values at once.
"""

from __future__ import annotations

import os
from pathlib import Path
from types import SimpleNamespace

from ..core import paths
from ..core.checks import ConfigError
from ..core.config import checked_parameters, list_notebooks, with_defaults
from ..core.config import resolve as resolve_one
from ..core.vocab import JUDGE_KINDS, STYLE, WARMUP_NAME, parse_variant
from ..engines.launch import ENV_NODES, launcher, world_size
from ..engines.trainers import GRPOSettings, SFTSettings, report_to
from ..method.tasks import TASKS, reference_problem


def _cfg(params: dict):
    """A notebook's parameter values as the settings classes read them (attributes and ``as_dict``)."""
    return SimpleNamespace(**params, as_dict=lambda: dict(params))


def training_world() -> tuple[int, str]:
    """(processes, in words) that training will divide its batches by: those of the launch that
    ``STEPWISER_LAUNCHER``, ``STEPWISER_NODES`` and ``STEPWISER_NUM_PROCESSES`` make
    (:func:`stepwiser_lib.engines.launch.world_size`, the launch's own count), or 1 in-process."""
    try:
        cfg = launcher()
    except FileNotFoundError as e:
        raise ConfigError(str(e)) from None
    if cfg is None:
        return 1, "in-process"
    nodes = int(os.environ.get(ENV_NODES, "1") or 1)
    n = world_size(cfg)
    return n, f"{n} processes ({Path(cfg).name}{f' on {nodes} nodes' if nodes > 1 else ''})"


def _trainings(p: dict) -> set[str]:
    """The batch-setting prefixes of the trainings a notebook with parameters ``p`` runs: notebook
    04's follow its ``VARIANTS`` (GRPO, DISC, RSFT) and ``WARMUP``; a notebook without variants
    runs its one SFT. A setting no training reads cannot fail a run."""
    if "VARIANTS" not in p:
        return {"GRPO", "SFT"}
    out = set()
    for v in p["VARIANTS"]:
        try:
            out.add(JUDGE_KINDS[parse_variant(v)[0]].trainer.upper())  # GRPO, DISC, RSFT
        except (ValueError, KeyError):  # a bad name fails in the parameters cell's own check
            continue
    return out | ({"WARMUP"} if p.get("WARMUP", True) else set())


def problems(params: dict[str, dict], world: tuple[int, str] = (1, "in-process")) -> list[str]:
    """What does not fit, per notebook (``params``: notebook -> every parameter with its default),
    with training launched on ``world`` (processes, in words; :func:`training_world`)."""
    out = []
    n, how = world
    at = f" at {how}" if n > 1 else ""
    for nb, p in params.items():
        # batch divisions (issue 48), checked as the trainers will do them, at the
        # world size the launch will have (a batch that divides on 8 GPUs can fail on 24, after
        # a day of sampling)
        trains = _trainings(p)
        if {"PROMPTS_PER_STEP", "GROUP_SIZE", "UPDATES_PER_STEP"} <= set(p) and "GRPO" in trains:
            try:
                GRPOSettings.from_config(_cfg(p)).batches(n)
            except ConfigError as e:
                out.append(f"{nb}: {e}{at}")
        for key in sorted(k for k in p if k.endswith("_MICRO_BATCH") and k != "GRPO_MICRO_BATCH"):
            prefix = key[: -len("_MICRO_BATCH")]
            if f"{prefix}_BATCH" in p and prefix in trains:
                try:
                    SFTSettings(global_batch=p[f"{prefix}_BATCH"], micro_batch=p[key], name=prefix).batches(n)
                except ConfigError as e:
                    out.append(f"{nb}: {e}{at}")
        # 0 is neither "epochs" (-1) nor any training: TRL would run one step
        out += [
            f"{nb}: {k} = 0 would train one step (TRL); use -1 for the epochs setting or a count >= 1"
            for k, v in p.items()
            if k.endswith("_MAX_STEPS") and v == 0
        ]
        # a length window that keeps nothing
        if "MIN_CHARS" in p and "MAX_CHARS" in p and p["MIN_CHARS"] > p["MAX_CHARS"]:
            out.append(
                f"{nb}: MIN_CHARS = {p['MIN_CHARS']} > MAX_CHARS = {p['MAX_CHARS']} keeps no judge example; "
                "lower MIN_CHARS or raise MAX_CHARS"
            )
        # DATA_FILES names tasks, and files (a missing file fails where it is read, naming it)
        for task, f in (p.get("DATA_FILES") or {}).items():
            if task not in TASKS:
                out.append(
                    f"{nb}: DATA_FILES key {task!r} is not a task ({', '.join(TASKS)}); the hub would be "
                    "read instead of the file"
                )
            elif f and data_file(f).is_dir():
                out.append(f"{nb}: DATA_FILES[{task!r}] = {f!r} is a folder; name the file in the hub's schema")
        # the Maj@k score is a generative judge's; a discriminative one has its p(+) already
        for j in p.get("MAJ_K_SCORE_JUDGES", []):
            base = j.split("@seed")[0]
            if base != WARMUP_NAME and base != "all" and STYLE[parse_variant(base)[0]] == "disc":
                out.append(
                    f"{nb}: MAJ_K_SCORE_JUDGES holds {j!r}, a discriminative judge (its score is p(+) "
                    "already); name generative judges only"
                )
        # the reference-trajectory shortcut labels each problem's reference solution, which
        # only NuminaMath's rows carry (toy, gsm8k and math500 problems come without one)
        if p.get("REFERENCE_TRAJECTORIES") and reference_problem(p.get("TASK")):
            out.append(f"{nb}: {reference_problem(p.get('TASK'))}")
        # REPORT_TO needs its package where the notebooks run (issue 34), known before any training
        if p.get("REPORT_TO", "none") != "none":
            try:
                report_to(p["REPORT_TO"])
            except ConfigError as e:
                out.append(f"{nb}: {e}")
        # one solution per split is an erroneous one only, and every judge then scores F1 0
        if p.get("LIMIT") == 1:
            out.append(
                f"{nb}: LIMIT = 1 keeps no correct solution per split, so every judge's F1 is 0; "
                "use 0 (all) or at least 2"
            )
    # notebook 04 trains on notebook 03's rules
    p3, p4 = params.get("03_balancing"), params.get("04_judge_grpo")
    if p3 and p4:
        missing = sorted({parse_variant(v)[1] for v in p4.get("VARIANTS", [])} - set(p3.get("RULES", [])))
        if missing:
            out.append(
                f"04_judge_grpo: VARIANTS train on rule(s) {missing}, which 03_balancing's RULES "
                f"({p3.get('RULES')}) does not build; add them to RULES"
            )
    # the judges notebooks 05-07 prompt are trained by notebook 04 with its prompt family
    if p4:
        for nb in ("05_processbench", "06_chunk_reset", "07_rsft"):
            fam = params.get(nb, {}).get("PROMPT_FAMILY")
            if fam is not None and fam != p4.get("PROMPT_FAMILY"):
                out.append(
                    f"{nb}: PROMPT_FAMILY = {fam!r}, but notebook 04 trains its judges with "
                    f"{p4.get('PROMPT_FAMILY')!r}; set one PROMPT_FAMILY under shared:"
                )
    return out


def data_file(f: str) -> Path:
    """A ``DATA_FILES`` value as the notebooks read it (repository-relative or absolute)."""
    return Path(f) if Path(f).is_absolute() else paths.ROOT / f


def missing_data_files(params: dict[str, dict]) -> list[str]:
    """``DATA_FILES`` values of ``params`` (notebook -> parameters) that are not files here: what
    a run would fail on after its first stages, and what the dry run used to hide behind hub ids.
    Not part of ``--check``, which checks settings on any machine."""
    return [
        f"{nb}: DATA_FILES[{task!r}] = {f!r}: no such file ({data_file(f)})"
        for nb, p in params.items()
        for task, f in (p.get("DATA_FILES") or {}).items()
        if f and task in read_tasks(p) and not data_file(f).is_file()
    ]


def read_tasks(p: dict) -> set[str]:
    """The tasks a notebook with parameters ``p`` loads problems of (a file for another task is
    never opened, so it need not be there)."""
    return {t for t in (p.get("TASK"), p.get("EVAL_TASK"), *p.get("EVAL_TASKS", [])) if t}


def resolve(namespace: dict, notebook: str, **kw):
    """A notebook's config cell: :func:`stepwiser_lib.core.config.resolve` (types, ranges, the
    profile), then the checks of settings that must fit together, on this run's own values and
    the profile's for the other notebooks: the same checks the runner makes before any kernel
    starts, so a notebook run from JupyterLab or by papermill alone fails here, not after a stage
    of work (issue 49). Returns the checked :class:`~stepwiser_lib.core.config.Config`."""
    cfg = resolve_one(namespace, notebook, **kw)
    every = list_notebooks()
    params = with_defaults(
        every,
        checked_parameters(
            cfg.PROFILE, every, **({"profiles_dir": kw["profiles_dir"]} if "profiles_dir" in kw else {})
        ),
    )
    params[notebook] = cfg.as_dict()
    found = [f for f in problems(params, training_world()) if f.startswith(f"{notebook}:")]
    if found:
        raise ConfigError("settings that do not fit together:\n  " + "\n  ".join(found))
    return cfg


def check(params: dict[str, dict]) -> None:
    """Raise :class:`ConfigError` listing every problem of :func:`problems`."""
    found = problems(params, training_world())
    if found:
        raise ConfigError("settings that do not fit together:\n  " + "\n  ".join(found))
