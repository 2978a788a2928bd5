"""The one place where our training settings meet TRL's names: a typed settings class per trainer
kind, built once from a notebook's config, and the function that turns it into TRL's config.

* :class:`GRPOSettings` → ``trl.GRPOConfig`` (the generative judge, notebook 04, paper §3.3/§4.1);
* :class:`SFTSettings` → ``trl.SFTConfig`` (chunk policy 01, format warm-up / RS-FT / the
  discriminative judge 04, stepwise RS-FT 07).

Each field has one notebook parameter (``PARAMS``; :meth:`from_config` fails on a missing one),
and a test checks that every field reaches TRL. Settings travel to launched processes as plain
dicts (:func:`dataclasses.asdict`), so ``accelerate launch`` sees exactly what the notebook printed.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field, fields, replace
from pathlib import Path

from ..core.checks import check_fields
from ..core.config import ConfigError


def world_size() -> int:
    """Processes training together (``accelerate launch`` sets ``WORLD_SIZE``; in-process: 1)."""
    return int(os.environ.get("WORLD_SIZE", "1"))


def _divide(total: int, by: int, what: str, setting: str) -> int:
    if by <= 0 or total % by:
        raise ConfigError(f"{what}: {total} is not divisible by {by}; change {setting}")
    return total // by


#: Where a trainer's logs can go (``REPORT_TO``), and the package each needs.
REPORTERS = {"tensorboard": "tensorboard", "trackio": "trackio", "wandb": "wandb"}
REPORT_TO_SPEC = "str in {none, tensorboard, trackio, wandb}"


def report_to(name: str) -> list[str]:
    """transformers' ``report_to`` for ``REPORT_TO``: [] for "none"; else the one integration,
    after checking its package is installed (a clear error before training, not a trainer's)."""
    if name == "none":
        return []
    import importlib

    try:  # imported, not only found: a package that is there but fails to import fails the same way later
        importlib.import_module(REPORTERS[name])
    except ModuleNotFoundError as e:
        if e.name != REPORTERS[name]:
            raise ConfigError(f"REPORT_TO = {name!r}: the {REPORTERS[name]!r} package does not import ({e})") from None
        raise ConfigError(
            f"REPORT_TO = {name!r} needs the {REPORTERS[name]!r} package: pip install {REPORTERS[name]}, "
            "or set REPORT_TO: none"
        ) from None
    except ImportError as e:
        raise ConfigError(
            f"REPORT_TO = {name!r}: the {REPORTERS[name]!r} package does not import ({e}); repair it, or set REPORT_TO: none"
        ) from None
    if name == "wandb":
        if not wandb_logged_in():
            raise ConfigError(
                "REPORT_TO = 'wandb' needs a login where the notebooks run, and a kernel, a launched "
                "process or a SLURM task has no terminal to ask for one: set WANDB_API_KEY, or "
                "WANDB_MODE=offline (logs to disk; `wandb sync` later), or run `wandb login` once on this machine"
            )
        os.environ.setdefault("WANDB_PROJECT", "stepwiser-companion")  # not wandb's catch-all default project
    return [name]


def wandb_logged_in() -> bool:
    """Whether wandb can log without asking (issue 48): an API key in the environment, an offline or
    disabled mode, or the netrc entry that ``wandb login`` writes."""
    if os.environ.get("WANDB_API_KEY") or os.environ.get("WANDB_MODE", "").lower() in {"offline", "disabled", "dryrun"}:
        return True
    netrc = Path(os.environ.get("NETRC") or Path.home() / ".netrc")
    try:
        return "api.wandb.ai" in netrc.read_text()
    except OSError:
        return False


def checkpointing(every: int) -> dict:
    """transformers' save settings: a checkpoint every ``every`` optimizer updates (0: none). Two
    are kept, so a run killed while writing the newest still has a whole one to resume from."""
    if not every:
        return {"save_strategy": "no"}
    return {"save_strategy": "steps", "save_steps": every, "save_total_limit": 2}


#: Where checkpoints too large for the output root go, and what "too large" is (issue 48). The
#: Colab bootstrap sets both when outputs go to Drive: a free Drive holds 15 GB, and one checkpoint
#: of a fully fine-tuned Qwen2.5-0.5B (fp32 weights and AdamW's two states) is about 5.9 GB, of
#: which transformers keeps three at its peak (it drops the oldest after writing the newest).
ENV_CHECKPOINT_GB = "STEPWISER_CHECKPOINT_GB"
ENV_LOCAL_CHECKPOINTS = "STEPWISER_LOCAL_CHECKPOINTS"
#: Checkpoints transformers holds at once with ``save_total_limit`` 2 (:func:`checkpointing`).
CHECKPOINTS_AT_PEAK = 3


def checkpoint_bytes(model, use_lora: bool) -> int:
    """One checkpoint of a run: fp32 weights and AdamW's two fp32 states of what it trains (a
    LoRA run saves its adapter only: small next to any budget, so counted as 0)."""
    return 0 if use_lora else 12 * sum(p.numel() for p in model.parameters())


def checkpoint_dir(out_dir: str | Path, run_key: str = "", size: int = 0) -> Path:
    """The trainer's output folder: ``out_dir/trainer/<run_key>`` (checkpoints, logs); or, when
    :data:`CHECKPOINTS_AT_PEAK` checkpoints of ``size`` bytes would pass ``$STEPWISER_CHECKPOINT_GB``,
    the same path under ``$STEPWISER_LOCAL_CHECKPOINTS`` (Colab: the VM's disk, not Drive; a
    session that ends mid-run then restarts that run, while LoRA runs still resume from Drive)."""
    sub = Path("trainer") / run_key if run_key else Path("trainer")
    budget = float(os.environ.get(ENV_CHECKPOINT_GB) or 0)
    local = os.environ.get(ENV_LOCAL_CHECKPOINTS)
    if budget and local and size * CHECKPOINTS_AT_PEAK > budget * 1e9:
        return Path(local) / Path(out_dir).name / sub
    return Path(out_dir) / sub


def checkpoint_problem(c: Path) -> str | None:
    """Why checkpoint folder ``c`` cannot be resumed from, or None when it is whole (issue 48, N6
    and CK01): the trainer state transformers writes last must parse, and every weight and
    optimizer file in it must be complete. A killed save leaves no trainer state; a synced copy
    (Google Drive's mount uploads files in no set order) can hold the state beside a cut
    ``optimizer.pt``, or a state cut mid-write. Checked cheaply, whatever the model's size: a
    safetensors file's header and length, a torch zip's central directory (at its end)."""
    import json
    import struct
    import zipfile

    state = c / "trainer_state.json"
    if not state.exists():
        return "no trainer_state.json (the save did not finish)"
    try:
        json.loads(state.read_text())
    except (ValueError, OSError) as e:
        return f"trainer_state.json does not parse ({type(e).__name__}: cut mid-write?)"
    for f in sorted(c.iterdir()):
        try:
            if f.suffix == ".safetensors":
                with open(f, "rb") as fh:
                    n = struct.unpack("<Q", fh.read(8))[0]
                    header = json.loads(fh.read(n))
                end = max((v["data_offsets"][1] for k, v in header.items() if k != "__metadata__"), default=0)
                if f.stat().st_size < 8 + n + end:
                    return f"{f.name} is cut short ({f.stat().st_size} of {8 + n + end} bytes)"
            elif f.suffix in (".pt", ".pth", ".bin") and not zipfile.is_zipfile(f):
                return f"{f.name} is not a whole torch file (cut short?)"
        except (OSError, ValueError, struct.error, KeyError, TypeError) as e:
            return f"{f.name} is unreadable ({type(e).__name__})"
    return None


def last_checkpoint(folder: str | Path) -> str | None:
    """The newest whole checkpoint in ``folder`` (``checkpoint-<step>``, whole by
    :func:`checkpoint_problem`), or None: what a rerun resumes from. A newer broken one is named
    and passed over, so the older checkpoint that ``save_total_limit`` 2 keeps is used."""
    folder = Path(folder)
    found = sorted(
        (c for c in folder.glob("checkpoint-*") if c.name[11:].isdigit() and c.is_dir()),
        key=lambda c: int(c.name[11:]),
        reverse=True,
    )
    for c in found:
        why = checkpoint_problem(c)
        if why is None:
            return str(c)
        print(f"[checkpoints] not resuming from {c.name}: {why}; trying an older one", flush=True)
    return None


def drop_checkpoints(folder: str | Path) -> None:
    """Remove a finished run's checkpoints (the model is saved on its own; at paper scale each
    checkpoint holds the weights and the optimizer state); its logs stay."""
    import shutil

    for c in Path(folder).glob("checkpoint-*"):
        shutil.rmtree(c, ignore_errors=True)


def _from_config(cls, cfg, params: dict[str, str], **overrides):
    values, kw = cfg.as_dict(), {}
    for f in fields(cls):
        if f.name in overrides:
            kw[f.name] = overrides[f.name]
        elif params.get(f.name) in values:
            kw[f.name] = values[params[f.name]]
        elif f.name in params and f.name not in getattr(cls, "OPTIONAL", ()):
            raise ConfigError(f"{cls.__name__}.{f.name}: the notebook declares no {params[f.name]}")
    return cls(**kw)


@dataclass(frozen=True)
class GRPOSettings:
    """GRPO for the generative judge (paper §3.3, §4.1).

    Batch semantics. One GRPO **step** samples ``prompts_per_step`` prompts, generates
    ``group_size`` completions for each across all processes, and makes ``updates_per_step``
    optimizer updates on that batch (paper: 1,024 prompts × 4, four mini-batches of 256 prompts).
    Each update sees ``prompts_per_step * group_size / updates_per_step`` completions, split over
    the processes and run ``micro_batch`` completions per forward/backward on each device (0: a
    device's whole share in one pass); gradient accumulation makes up the rest. The whole step is
    never one micro-batch unless the numbers say so. ``steps`` counts GRPO steps (paper: 800);
    TRL counts optimizer updates, so it gets ``steps * updates_per_step``.
    """

    steps: int = 60  # paper: 800 steps
    prompts_per_step: int = 8  # paper: 1,024
    group_size: int = 4  # paper: 4 responses per prompt
    updates_per_step: int = 1  # paper: 4 mini-batches of 256 prompts
    micro_batch: int = 0  # completions per device per forward; 0: the whole share
    lr: float = 1e-3  # paper: 1e-6 (full fine-tuning of 1.5B/7B)
    lr_scheduler: str = "constant"
    beta: float = 0.2  # KL anchor [not in paper]
    epsilon_low: float = 0.2  # paper: clip-higher 0.2 / 0.28
    epsilon_high: float = 0.28
    max_completion: int = 128  # paper: 3,096 new tokens
    temperature: float = 1.0
    top_entropy_quantile: float = 1.0
    loss_tokens: str = "all"  # all (paper) | verdict [not in paper]
    balanced_steps: bool = False  # [not in paper]
    use_lora: bool = True
    lora_r: int = 16
    lora_alpha: int = 32
    gradient_checkpointing: bool = False  # on for real models on a GPU (memory), off for toy CPU runs (speed)
    use_vllm: bool = False  # generate the groups with vLLM colocated in the trainer (paper scale)
    vllm_gpu_memory: float = 0.3  # share of each GPU the colocated vLLM engine takes
    eval_every: int = 10  # validation every N GRPO steps (0: never)
    val_limit: int = 0  # validation chunks judged during training (0: all)
    val_batch: int = 128  # validation chunks judged at once (JUDGE_BATCH, as every other judging)
    # How a run is kept and watched, not what it computes: out of the repr, so out of every cache key
    save_every: int = field(default=0, repr=False)  # a checkpoint every N GRPO steps, resumed by a rerun (0: none)
    report_to: str = field(default="none", repr=False)  # where the trainer's logs go: none, tensorboard, trackio, wandb
    seed: int = 0

    PARAMS = {
        "steps": "GRPO_STEPS",
        "prompts_per_step": "PROMPTS_PER_STEP",
        "group_size": "GROUP_SIZE",
        "updates_per_step": "UPDATES_PER_STEP",
        "micro_batch": "GRPO_MICRO_BATCH",
        "lr": "GRPO_LR",
        "beta": "BETA",
        "epsilon_low": "EPSILON_LOW",
        "epsilon_high": "EPSILON_HIGH",
        "max_completion": "MAX_COMPLETION",
        "temperature": "TEMPERATURE",
        "loss_tokens": "LOSS_TOKENS",
        "balanced_steps": "BALANCED_STEPS",
        "use_lora": "USE_LORA",
        "lora_r": "LORA_R",
        "lora_alpha": "LORA_ALPHA",
        "gradient_checkpointing": "GRADIENT_CHECKPOINTING",
        "use_vllm": "GRPO_VLLM",
        "vllm_gpu_memory": "GRPO_VLLM_GPU_MEMORY",
        "eval_every": "EVAL_EVERY",
        "val_limit": "VAL_LIMIT",
        "val_batch": "JUDGE_BATCH",
        "save_every": "SAVE_EVERY",
        "report_to": "REPORT_TO",
        "seed": "SEED",
    }

    #: Fields taken from the notebook only where it declares them (how a run is kept and watched).
    OPTIONAL = ("save_every", "report_to")

    #: What each field allows (stepwiser_lib.core.checks), the same as the notebook parameter it comes
    #: from in PARAMS declares (a test checks), so both give the same message.
    SPECS = {
        "steps": "int in [1, inf)",
        "prompts_per_step": "int in [1, inf)",
        "group_size": "int in [2, inf)",
        "updates_per_step": "int in [1, inf)",
        "micro_batch": "int in [0, inf)",
        "lr": "float in (0, inf)",
        "beta": "float in [0, inf)",
        "epsilon_low": "float in [0, inf)",
        "epsilon_high": "float in [0, inf)",
        "max_completion": "int in [1, inf)",
        "temperature": "float in (0, inf)",
        "loss_tokens": "str in {all, verdict}",
        "lora_r": "int in [1, inf)",
        "lora_alpha": "int in [1, inf)",
        "vllm_gpu_memory": "float in (0, 1]",
        "eval_every": "int in [0, inf)",
        "val_limit": "int in [0, inf)",
        "val_batch": "int in [1, inf)",
        "seed": "int in [0, 4294967295]",  # numpy and torch take 32-bit seeds (issue 49)
        "save_every": "int in [0, inf)",
        "report_to": REPORT_TO_SPEC,
        "top_entropy_quantile": "float in (0, 1]",
    }

    def __post_init__(self):
        check_fields(self, self.SPECS, self.PARAMS)

    @classmethod
    def from_config(cls, cfg, **overrides) -> GRPOSettings:
        """Settings from a notebook config (parameter names in ``PARAMS``)."""
        return _from_config(cls, cfg, cls.PARAMS, **overrides)

    def with_(self, **kw) -> GRPOSettings:
        return replace(self, **kw)

    def batches(self, world: int = 1) -> dict:
        """TRL's batch numbers for ``world`` processes (see the class docstring)."""
        per_update = _divide(
            self.prompts_per_step * self.group_size,
            self.updates_per_step,
            "completions per step / UPDATES_PER_STEP",
            "UPDATES_PER_STEP",
        )
        per_device = _divide(
            per_update, world, "completions per update / processes", "PROMPTS_PER_STEP or the number of GPUs"
        )
        micro = self.micro_batch or per_device
        accum = _divide(per_device, micro, "completions per device per update / GRPO_MICRO_BATCH", "GRPO_MICRO_BATCH")
        return {
            "per_device_train_batch_size": micro,
            "gradient_accumulation_steps": accum,
            "steps_per_generation": accum * self.updates_per_step,
            "max_steps": self.steps * self.updates_per_step,
            "completions_per_step": self.prompts_per_step * self.group_size,
        }

    def grpo_args(
        self,
        out_dir: str | Path,
        world: int = 1,
        precision: dict | None = None,
        progress: bool = True,
        run_key: str = "",
        checkpoint_size: int = 0,
    ):
        """``trl.GRPOConfig``: one line per setting, and nothing else sets these names. Checkpoints
        go to ``out_dir/trainer/<run_key>`` (:func:`checkpoint_dir`), so only a run of the same
        settings and inputs resumes from them."""
        from trl import GRPOConfig

        from .models import precision as device_precision  # lazy: torch

        prec = precision or device_precision()
        b = self.batches(world)
        return GRPOConfig(
            output_dir=str(checkpoint_dir(out_dir, run_key, checkpoint_size if self.save_every else 0)),
            seed=self.seed,
            data_seed=self.seed,
            max_steps=b["max_steps"],
            learning_rate=self.lr,
            lr_scheduler_type=self.lr_scheduler,
            per_device_train_batch_size=b["per_device_train_batch_size"],
            gradient_accumulation_steps=b["gradient_accumulation_steps"],
            steps_per_generation=b["steps_per_generation"],
            num_generations=self.group_size,
            beta=self.beta,
            top_entropy_quantile=self.top_entropy_quantile,
            epsilon=self.epsilon_low,
            epsilon_high=self.epsilon_high,
            max_completion_length=self.max_completion,
            temperature=self.temperature,
            repetition_penalty=1.0,
            top_k=0,
            top_p=1.0,  # the policy's own distribution
            shuffle_dataset=not self.balanced_steps,  # balanced steps: our order (judge_train.balanced_order)
            gradient_checkpointing=self.gradient_checkpointing,
            # The objective, spelled out rather than left to TRL's defaults, so the paper path
            # (colocated vLLM) and the colab path (HF) optimise the same thing: verl's token-mean
            # loss with group-normalised rewards, truncated outputs kept, and no importance-sampling
            # reweighting of vLLM's samples (TRL 1.16 turns it on with vLLM: sequences whose
            # 3,096-token probability ratio exceeds 3 would be zeroed; the paper's run had none).
            loss_type="dapo",
            scale_rewards="group",
            importance_sampling_level="token",
            mask_truncated_completions=False,
            vllm_importance_sampling_correction=False,
            use_vllm=self.use_vllm,
            vllm_mode="colocate",
            vllm_gpu_memory_utilization=self.vllm_gpu_memory,
            use_cpu=not (prec["bf16"] or prec["fp16"]),
            bf16=prec["bf16"],
            fp16=prec["fp16"],
            logging_steps=1,
            **checkpointing(self.save_every * self.updates_per_step),
            report_to=report_to(self.report_to),
            disable_tqdm=not progress,
            dataloader_num_workers=0,
        )


@dataclass(frozen=True)
class SFTSettings:
    """Supervised fine-tuning (paper §4.1: lr 1e-5, **global** batch 32; App. A.1 for the
    discriminative judge). ``global_batch`` sequences per optimizer update across all processes,
    ``micro_batch`` per device per forward (0: the whole per-device share), gradient accumulation
    makes up the rest. ``max_length`` bounds prompt + completion tokens: TRL truncates longer
    records and drops those whose completion is cut away, so :func:`check_lengths` refuses data
    where more than ``max_truncated`` of the records would be cut. ``name`` is the parameter
    prefix, used in messages."""

    epochs: float = 2.0
    max_steps: int = -1
    lr: float = 5e-4
    global_batch: int = 16
    micro_batch: int = 0
    max_length: int = 512
    use_lora: bool = False
    lora_r: int = 16
    lora_alpha: int = 32
    gradient_checkpointing: bool = False
    warmup_ratio: float = 0.05
    max_truncated: float = 0.05
    # [not in paper] how transformers' Trainer draws batches (its ``train_sampling_strategy``).
    # "batch_rebalance" (the default): each optimizer step takes a random ``global_batch`` of
    # records, as "random" does, and splits it by length into its micro-batches (of unequal
    # sizes, their padded tokens balanced), so the gradient is the random batch's with less
    # padding; with one micro-batch per step it is the random batch. The toy notebooks use two:
    # a tiny warm-up step takes 13% less time (LAB_LOG.md). "group_by_length"
    # (LengthGroupedSampler: groups of 50 batches, each visited longest to shortest) made the
    # tiny warm-up judge worse (LAB_LOG.md)
    train_sampling_strategy: str = "batch_rebalance"
    # How a run is kept and watched, not what it computes: out of the repr, so out of every cache key
    save_every: int = field(default=0, repr=False)  # a checkpoint every N optimizer steps, resumed by a rerun (0: none)
    report_to: str = field(default="none", repr=False)  # where the trainer's logs go: none, tensorboard, trackio, wandb
    seed: int = 0
    name: str = "SFT"

    SPECS = {
        "epochs": "float in (0, inf)",
        "max_steps": "int in [-1, inf)",
        "lr": "float in (0, inf)",
        "global_batch": "int in [1, inf)",
        "micro_batch": "int in [0, inf)",
        "max_length": "int in [1, inf)",
        "lora_r": "int in [1, inf)",
        "lora_alpha": "int in [1, inf)",
        "warmup_ratio": "float in [0, 1)",
        "max_truncated": "float in [0, 1]",
        "seed": "int in [0, 4294967295]",  # numpy and torch take 32-bit seeds (issue 49)
        "train_sampling_strategy": "str in {random, batch_rebalance, group_by_length}",
        "save_every": "int in [0, inf)",
        "report_to": REPORT_TO_SPEC,
    }

    def __post_init__(self):
        p = self.name
        check_fields(
            self,
            self.SPECS,
            {
                "epochs": f"{p}_EPOCHS",
                "max_steps": f"{p}_MAX_STEPS",
                "lr": f"{p}_LR",
                "global_batch": f"{p}_BATCH",
                "micro_batch": f"{p}_MICRO_BATCH",
                "max_length": f"{p}_MAX_LENGTH",
                "lora_r": "LORA_R",
                "lora_alpha": "LORA_ALPHA",
                "seed": "SEED",
                "save_every": "SAVE_EVERY",
                "report_to": "REPORT_TO",
            },
        )

    @classmethod
    def from_config(cls, cfg, prefix: str = "SFT", **overrides) -> SFTSettings:
        """Settings from parameters ``{prefix}_EPOCHS``, ``{prefix}_LR``, ``{prefix}_BATCH`` (and,
        where the notebook declares them, ``{prefix}_MAX_STEPS``, ``{prefix}_MICRO_BATCH``,
        ``{prefix}_MAX_LENGTH``), ``USE_LORA``, ``LORA_R``, ``LORA_ALPHA``,
        ``GRADIENT_CHECKPOINTING`` and ``SEED``."""
        values = cfg.as_dict()
        params = {"epochs": f"{prefix}_EPOCHS", "lr": f"{prefix}_LR", "global_batch": f"{prefix}_BATCH", "seed": "SEED"}
        optional = {
            "max_steps": f"{prefix}_MAX_STEPS",
            "micro_batch": f"{prefix}_MICRO_BATCH",
            "max_length": f"{prefix}_MAX_LENGTH",
            "use_lora": "USE_LORA",
            "lora_r": "LORA_R",
            "lora_alpha": "LORA_ALPHA",
            "gradient_checkpointing": "GRADIENT_CHECKPOINTING",
            "save_every": "SAVE_EVERY",
            "report_to": "REPORT_TO",
        }
        params.update({k: v for k, v in optional.items() if v in values})
        return _from_config(cls, cfg, params, name=prefix, **overrides)

    def with_(self, **kw) -> SFTSettings:
        return replace(self, **kw)

    def batches(self, world: int = 1) -> dict:
        per_device = _divide(
            self.global_batch, world, f"{self.name}_BATCH / processes", f"{self.name}_BATCH or the number of GPUs"
        )
        micro = self.micro_batch or per_device
        accum = _divide(per_device, micro, f"per-device batch / {self.name}_MICRO_BATCH", f"{self.name}_MICRO_BATCH")
        return {"per_device_train_batch_size": micro, "gradient_accumulation_steps": accum}

    def sft_args(
        self,
        out_dir: str | Path,
        world: int = 1,
        precision: dict | None = None,
        progress: bool = True,
        run_key: str = "",
        checkpoint_size: int = 0,
    ):
        """``trl.SFTConfig``: one line per setting, and nothing else sets these names (checkpoints:
        as :meth:`GRPOSettings.grpo_args`)."""
        from trl import SFTConfig

        from .models import precision as device_precision  # lazy: torch

        prec = precision or device_precision()
        b = self.batches(world)
        return SFTConfig(
            output_dir=str(checkpoint_dir(out_dir, run_key, checkpoint_size if self.save_every else 0)),
            num_train_epochs=self.epochs,
            max_steps=self.max_steps,
            learning_rate=self.lr,
            per_device_train_batch_size=b["per_device_train_batch_size"],
            gradient_accumulation_steps=b["gradient_accumulation_steps"],
            lr_scheduler_type="cosine",
            warmup_steps=self.warmup_ratio,
            max_length=self.max_length,
            packing=False,
            completion_only_loss=True,
            train_sampling_strategy=self.train_sampling_strategy,
            gradient_checkpointing=self.gradient_checkpointing,
            use_cpu=not (prec["bf16"] or prec["fp16"]),
            bf16=prec["bf16"],
            fp16=prec["fp16"],
            logging_steps=1 if 0 < self.max_steps <= 20 else 5,
            **checkpointing(self.save_every),
            report_to=report_to(self.report_to),
            seed=self.seed,
            data_seed=self.seed,
            dataloader_num_workers=0,  # seeds the sampler too (seeded_sampler_trainer)
            disable_tqdm=not progress,
        )


def check_lengths(lengths: list[int], max_length: int, setting: str, max_share: float = 0.05) -> dict:
    """How many sequences exceed ``max_length`` tokens: prints the share, and raises
    :class:`ConfigError` naming ``setting`` when it is above ``max_share`` (the records would be
    truncated, or dropped whole when nothing of their completion is left)."""
    n = len(lengths)
    over = sum(x > max_length for x in lengths)
    res = {
        "records": n,
        "over_max_length": over,
        "max_length": max_length,
        "longest": max(lengths, default=0),
        "share": round(over / n, 4) if n else 0.0,
    }
    if over:
        print(
            f"[lengths] {over} of {n} records ({100 * over / n:.1f}%) exceed {setting}="
            f"{max_length} tokens (longest {res['longest']}): TRL truncates them"
        )
    if n and over / n > max_share:
        raise ConfigError(
            f"{over} of {n} records ({100 * over / n:.1f}%) exceed {setting}="
            f"{max_length} tokens (longest {res['longest']}); raise {setting}"
        )
    return res


def seeded_sampler_trainer(base):
    """``base`` (a transformers ``Trainer`` class, TRL's ``SFTTrainer`` here) whose
    ``BatchRebalanceSampler`` shuffles with ``data_seed``: transformers 5.19 builds it with its
    own fixed seed (42), so every ``SEED`` would draw the same batches."""
    from transformers.trainer_pt_utils import BatchRebalanceSampler

    class SeededSampler(base):
        def _get_train_sampler(self, train_dataset=None):
            sampler = super()._get_train_sampler(train_dataset)
            if isinstance(sampler, BatchRebalanceSampler):
                sampler.seed = self.args.data_seed if self.args.data_seed is not None else self.args.seed
            return sampler

    SeededSampler.__name__ = SeededSampler.__qualname__ = f"Seeded{base.__name__}"
    return SeededSampler
