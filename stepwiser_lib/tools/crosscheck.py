"""Settings that are each valid but do not fit together, found before any kernel starts
(``--check``, ``--dry-run`` and every run; reliability review 2, section A): each problem names the
notebook, the settings and the fix. The single-value checks live in the parameters cells
(:mod:`stepwiser_lib.core.checks`); these need two or more values at once.
"""

from __future__ import annotations

from types import SimpleNamespace

from ..core.checks import ConfigError
from ..engines.trainers import GRPOSettings, SFTSettings


def _cfg(params: dict):
    """A notebook's parameter values as the settings classes read them (attributes and ``as_dict``)."""
    return SimpleNamespace(**params, as_dict=lambda: dict(params))


def problems(params: dict[str, dict]) -> list[str]:
    """What does not fit, per notebook (``params``: notebook -> every parameter with its default)."""
    out = []
    for nb, p in params.items():
        # A01/A02: batch divisions, checked as the trainers will do them (one process; a launcher
        # with more processes is checked again at training time)
        if {"PROMPTS_PER_STEP", "GROUP_SIZE", "UPDATES_PER_STEP"} <= set(p):
            try:
                GRPOSettings.from_config(_cfg(p)).batches(1)
            except ConfigError as e:
                out.append(f"{nb}: {e}")
        for key in sorted(k for k in p if k.endswith("_MICRO_BATCH") and k != "GRPO_MICRO_BATCH"):
            prefix = key[: -len("_MICRO_BATCH")]
            if f"{prefix}_BATCH" in p:
                try:
                    SFTSettings(global_batch=p[f"{prefix}_BATCH"], micro_batch=p[key], name=prefix).batches(1)
                except ConfigError as e:
                    out.append(f"{nb}: {e}")
        # A08: 0 is neither "epochs" (-1) nor any training: TRL would run one step
        out += [f"{nb}: {k} = 0 would train one step (TRL); use -1 for the epochs setting or a count >= 1"
                for k, v in p.items() if k.endswith("_MAX_STEPS") and v == 0]
        # A04: a length window that keeps nothing
        if "MIN_CHARS" in p and "MAX_CHARS" in p and p["MIN_CHARS"] > p["MAX_CHARS"]:
            out.append(f"{nb}: MIN_CHARS = {p['MIN_CHARS']} > MAX_CHARS = {p['MAX_CHARS']} keeps no judge example; "
                       "lower MIN_CHARS or raise MAX_CHARS")
        # A15: one solution per split is an erroneous one only, and every judge then scores F1 0
        if p.get("LIMIT") == 1:
            out.append(f"{nb}: LIMIT = 1 keeps no correct solution per split, so every judge's F1 is 0; "
                       "use 0 (all) or at least 2")
    return out


def check(params: dict[str, dict]) -> None:
    """Raise :class:`ConfigError` listing every problem of :func:`problems`."""
    found = problems(params)
    if found:
        raise ConfigError("settings that do not fit together:\n  " + "\n  ".join(found))
