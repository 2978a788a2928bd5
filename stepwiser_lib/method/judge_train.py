"""Stage 4, training: the judge variants of paper Tables 5 and 6 (§3.3, §4.1, §4.3), notebook 04.

GRPO on step labels with TRL's ``GRPOTrainer`` and PEFT LoRA (:func:`train_grpo_judge`), with the
toy-scale options (verdict-only loss, balanced steps, the group sampling loop), rejection-sampling
fine-tuning data for the "ablate RL" judge (:func:`rsft_select`), the typed recipe of every variant
(:func:`recipe_from_config`) and the dispatch over judge kinds (:func:`train_variant`, the kinds in
:data:`stepwiser_lib.core.vocab.JUDGE_KINDS`). Inference and evaluation are in
:mod:`stepwiser_lib.method.judge`; the discriminative judge in :mod:`stepwiser_lib.method.discriminative`.
"""

from __future__ import annotations

import dataclasses
import random
import time
from pathlib import Path

from ..core import io, paths
from ..core.prompts import judge_prompt
from ..core.verdicts import VERDICTS, parse_verdict
from ..core.vocab import JUDGE_KINDS, KINDS, STYLE, WARMUP_OF, parse_variant
from ..engines.launch import launchable, to_dataset
from ..engines.sft import sft
from ..engines.trainers import (
    GRPOSettings,
    SFTSettings,
    checkpoint_bytes,
    drop_checkpoints,
    last_checkpoint,
    world_size,
)
from . import tasks
from .discriminative import train_disc_judge
from .judge import Judge, judge_prompt_of, make_direct_reward, step_accuracy, triple, verdict_reward


def rsft_select(
    examples: list[dict],
    samples: list[list[str]],
    per_example: int = 1,
    family: str = "toy",
    style: str = "cot",
    loss_tokens: str = "all",
) -> list[dict]:
    """Rejection-sampling fine-tuning data for the "ablate RL" judge (paper §4.3): keep sampled
    judge outputs whose verdict matches the label; at most ``per_example`` distinct ones per
    example, in sample order (deterministic). Returns prompt/completion SFT records.

    ``loss_tokens="verdict"`` moves the analysis up to the last ``\\boxed{`` into the prompt, so
    that only the verdict and what follows are trained on, as the GRPO judge's toy loss does.
    [not in paper] Tried for issue 35 (the toy-full RS-FT judge kept its warm-up's verdicts on
    every test chunk) and not used: on tiny's dev chunks it left the judge with no parsable
    verdict at all (``LAB_LOG.md``, "Verdicts that survive a rerun, part 2"); notebook 04 trains on
    every token (``recipe["rsft_loss_tokens"]``, "all")."""
    out = []
    for e, cands in zip(examples, samples, strict=True):
        kept: list[str] = []
        for c in cands:
            v = parse_verdict(c)
            if v is not None and (v == "Positive") == bool(e["label"]) and c not in kept:
                kept.append(c)
            if len(kept) == per_example:
                break
        prompt = judge_prompt(family, e["problem"], e["history"], e["chunk"], style)
        for c in (c.strip() for c in kept):
            cut = c.rfind("\\boxed{") + len("\\boxed{") if loss_tokens == "verdict" and "\\boxed{" in c else 0
            out.append({"prompt": prompt + c[:cut], "completion": c[cut:]})
    return out


# ----------------------------------------------------------------------------- GRPO training


def grpo_dataset(examples: list[dict], family: str = "toy", style: str = "cot"):
    """TRL dataset: conversational ``prompt`` (so the chat template is applied) and ``label``."""
    return to_dataset(
        examples,
        lambda e: {
            "prompt": [
                {"role": "user", "content": judge_prompt(family, e["problem"], e["history"], e["chunk"], style)}
            ],
            "label": bool(e["label"]),
        },
    )


def balanced_order(examples: list[dict], block: int, seed: int = 0) -> list[dict]:
    """Examples reordered so that every run of ``block`` consecutive ones holds as many Positive
    as Negative labels (up to one when ``block`` is odd), for GRPO steps of ``block`` prompts.
    [not in paper]

    The paper balances the training *set* (§3.3). With a few prompts per step, as at toy scale,
    a step's labels are still lopsided by chance (8 prompts: about 1.4 off on average), and a judge
    that cannot tell steps apart yet answers that imbalance by moving its overall Positive rate:
    notebook 04 measured the greedy positive rate swinging between 4% and 100% within ten
    steps. Balanced steps take that push away. Leftovers of the larger class go last.
    """
    return [examples[i] for i in balanced_indices([bool(e["label"]) for e in examples], block, seed)]


def balanced_indices(labels: list[bool], block: int, seed: int = 0) -> list[int]:
    """The positions :func:`balanced_order` puts in order, from the labels alone (a launched job
    reorders its memory-mapped training set by them)."""
    rng = random.Random(f"balanced:{seed}")
    pos = [i for i, y in enumerate(labels) if y]
    neg = [i for i, y in enumerate(labels) if not y]
    rng.shuffle(pos)
    rng.shuffle(neg)
    out: list[int] = []
    half = block // 2
    while True:
        n_pos = half + (block % 2 if rng.random() < 0.5 else 0)  # odd blocks: the extra one at random
        if len(pos) < n_pos or len(neg) < block - n_pos:
            break
        chunk = [pos.pop() for _ in range(n_pos)] + [neg.pop() for _ in range(block - n_pos)]
        rng.shuffle(chunk)
        out += chunk
    rest = pos + neg
    rng.shuffle(rest)
    return out + rest


def verdict_token_ids(tok) -> set[int]:
    """Token ids of the two verdict words (each must be one token: true of the toy tokenizer)."""
    ids = set()
    for v in VERDICTS:
        t = tok.encode(v, add_special_tokens=False)
        if len(t) != 1:
            raise ValueError(
                f"verdict {v!r} is {len(t)} tokens in this tokenizer; loss_tokens='verdict' needs single-token verdicts"
            )
        ids.add(t[0])
    return ids


def verdict_loss_mask(completion_ids, verdict_ids: set[int]):
    """Per-token loss mask (same shape as ``completion_ids``): 1 from each completion's last
    verdict token to its end; all ones for a completion with no verdict token."""
    import torch

    keep = torch.zeros_like(completion_ids)
    for i, row in enumerate(completion_ids.tolist()):
        pos = [j for j, t in enumerate(row) if t in verdict_ids]
        if pos:  # the verdict and what follows it (closing brace, end of text)
            keep[i, pos[-1] :] = 1
        else:  # no verdict: the whole output stays in the loss, so it is pushed away
            keep[i] = 1
    return keep


def verdict_loss_trainer(tok):
    """A TRL ``GRPOTrainer`` whose loss sees only each completion's verdict (its last verdict
    token and the tokens after it).
    [not in paper]

    The paper's GRPO updates every token of the judge's output. At toy scale the analysis is
    about 55 tokens of arithmetic whose policy-gradient terms, given a reward that only the
    verdict decides, are noise; on a 3M-parameter LoRA judge that noise swamps the single verdict
    token (notebook 04 measured flat rewards with all tokens in the loss, also with TRL's
    ``top_entropy_quantile``). This trainer puts the analysis tokens out of the loss with
    TRL's own per-token loss mask (``tool_mask``, which ``_compute_loss`` multiplies in), so RL
    learns which verdict the analysis supports. A completion without a verdict keeps all its
    tokens in the loss, and the tokens after the verdict stay in: with the verdict token alone
    the closing brace vanished within 15 steps and no verdict parsed any more (measured).
    """
    ids = verdict_token_ids(tok)

    class VerdictLossGRPOTrainer(loop_generation_trainer()):
        def _generate_and_score_completions(self, inputs):
            out = super()._generate_and_score_completions(inputs)
            keep = verdict_loss_mask(out["completion_ids"], ids)
            out["tool_mask"] = keep if out.get("tool_mask") is None else keep * out["tool_mask"]
            return out

    return VerdictLossGRPOTrainer


def group_runs(prompt_ids: list[list[int]]) -> tuple[list[list[int]], int] | None:
    """``(distinct prompts, n)`` when ``prompt_ids`` is each prompt repeated ``n`` times in a row
    (how TRL's ``RepeatSampler`` lays out a GRPO group), else None."""
    if not prompt_ids:
        return None
    n = 1
    while n < len(prompt_ids) and prompt_ids[n] == prompt_ids[0]:
        n += 1
    if len(prompt_ids) % n:
        return None
    heads = prompt_ids[::n]
    if any(prompt_ids[k] != heads[k // n] for k in range(len(prompt_ids))):
        return None
    return heads, n


def group_seeds(seed: int, step: int, heads: list[list[int]]) -> list[int]:
    """One sampling seed per GRPO group (issue 34): a hash of the run's ``seed``, the optimizer
    ``step`` the group is generated for, the group's prompt token ids and how many identical
    prompts came before it in this batch. It does not depend on which process samples the group
    or on the other groups beside it, so 2 processes draw the completions 1 process draws, and a
    run resumed from a checkpoint draws the groups it would have drawn."""
    seen: dict[tuple, int] = {}
    out = []
    for h in heads:
        t = tuple(int(x) for x in h)
        seen[t] = seen.get(t, -1) + 1
        out.append(int(io.digest("grpo group", int(seed), int(step), list(t), seen[t]), 16) % 2**63)
    return out


def loop_generation_trainer():
    """TRL's ``GRPOTrainer`` whose group sampling goes through :mod:`stepwiser_lib.engines.decoding`
    instead of ``model.generate`` (issue 16): each prompt is prefilled once for its group, and a
    finished completion leaves the batch. Same distribution (softmax of logits / temperature,
    TRL's ``top_p``, no top-k) and the same output as TRL's path: the completion ids up to and
    including the first end token. vLLM, TRL's continuous batching and multimodal inputs keep
    TRL's own path. A GRPO step's generation was 3.7 of its 7 s at tiny (LAB_LOG.md)."""
    import torch
    from trl import GRPOTrainer
    from trl.models import unwrap_model_for_generation

    from ..engines import decoding  # lazy: torch
    from ..engines.models import for_sampling, sampling_half  # lazy: torch

    class LoopGenerationGRPOTrainer(GRPOTrainer):
        _loop_calls = 0
        _shared_prompt_passes = 0

        def _get_per_token_logps_and_entropies(
            self,
            model,
            input_ids,
            attention_mask,
            logits_to_keep,
            batch_size=None,
            compute_entropy=False,
            compute_aux_loss=False,
            **extra,
        ):
            # A group's completions share their prompt: its forward pass runs once per distinct
            # prompt, not once per completion (issue 61). TRL shuffles the rows before the loss,
            # so the groups are found by content, not by position.
            if (
                not SHARE_PROMPT_PASSES
                or compute_aux_loss
                or any(v is not None for v in extra.values())
                # gradient checkpointing turns the cache off in training: the completions would run
                # without their prompt (real models on a GPU); TRL's one pass per row serves them
                or getattr(self.accelerator.unwrap_model(model), "is_gradient_checkpointing", False)
            ):
                return super()._get_per_token_logps_and_entropies(
                    model,
                    input_ids,
                    attention_mask,
                    logits_to_keep,
                    batch_size=batch_size,
                    compute_entropy=compute_entropy,
                    compute_aux_loss=compute_aux_loss,
                    **extra,
                )
            self._shared_prompt_passes += 1
            step = batch_size or input_ids.size(0)
            logps, ents = [], []
            for start in range(0, input_ids.size(0), step):
                with self.accelerator.autocast():
                    lp, ent = shared_prompt_logps(
                        model,
                        input_ids[start : start + step],
                        attention_mask[start : start + step],
                        logits_to_keep,
                        self.temperature,
                        compute_entropy,
                    )
                logps.append(lp)
                ents.append(ent)
            return torch.cat(logps), (torch.cat(ents) if compute_entropy else None), None

        def _generate_single_turn(self, prompt_ids, images, multimodal_fields, num_generations, has_tool_images=False):
            runs = group_runs(prompt_ids)
            if (
                self.use_vllm
                or self.use_transformers_continuous_batching
                or images
                or multimodal_fields
                or runs is None
            ):
                return super()._generate_single_turn(
                    prompt_ids, images, multimodal_fields, num_generations, has_tool_images
                )
            heads, n = runs
            # each group its own random stream, fixed by the run's seed, the optimizer step it
            # generates for and its prompt (group_seeds): a run resumed from a checkpoint draws the
            # same groups, and so does a run whose groups are spread over more processes
            seeds = group_seeds(self.args.seed, self.state.global_step, heads)
            self._loop_calls += 1
            with (
                unwrap_model_for_generation(
                    self.model_wrapped,
                    self.accelerator,
                    gather_deepspeed3_params=self.args.ds3_gather_for_generation,
                    gradient_checkpointing_kwargs=self.args.gradient_checkpointing_kwargs,
                ) as model,
                torch.no_grad(),
                self._dist.summon_full_params(self.model_wrapped, recurse=False),
            ):
                rows = decoding.sample(
                    for_sampling(model),
                    heads,
                    n,
                    half=sampling_half(model),
                    max_new_tokens=self.max_completion_length,
                    temperature=self.temperature,
                    top_p=self.top_p if self.top_p is not None else 1.0,
                    eos=list(self.eos_token_ids),
                    seeds=seeds,
                    batch_size=len(prompt_ids),
                )
            return [r.tokens for group in rows for r in group], None

    return LoopGenerationGRPOTrainer


#: Run the training log-probability passes (the KL reference's and the loss's) once per group's
#: prompt (:func:`shared_prompt_logps`). The same numbers up to float rounding as TRL's one pass
#: over prompt + completion per row (a test checks log-probabilities and gradients); off, TRL's
#: own pass (``make bench-grpo``'s "before" arm).
SHARE_PROMPT_PASSES = True

#: :func:`shared_prompt_logps` runs the completions in this many bands of similar length, each as
#: wide as its longest (1: one pass as wide as the longest completion of all).
LENGTH_BANDS = 4


def shared_prompt_logps(model, input_ids, attention_mask, logits_to_keep: int, temperature: float, entropy: bool):
    """Per-token log-probabilities (and entropies) of the completions, as TRL's
    ``_get_per_token_logps_and_entropies`` computes them, with each distinct prompt's forward pass
    run once: rows whose prompt part (tokens and padding) is the same, in any order (a GRPO group),
    share one pass whose key/value cache is repeated for their completions, which run on it, inside
    the gradient where the caller is (what it saves is measured in ``LAB_LOG.md``, "Speed: a GRPO
    step by parts"). Positions run 0..P+C-1 over the padded width as in TRL's pass."""
    import torch
    from transformers import DynamicCache
    from transformers.cache_utils import DynamicLayer
    from trl.trainer.utils import entropy_from_logits, selective_log_softmax

    p = input_ids.size(1) - logits_to_keep
    rows = input_ids.size(0)
    key = input_ids[:, :p].masked_fill(attention_mask[:, :p] == 0, -1)
    uniq, sel = torch.unique(key, dim=0, return_inverse=True)  # sel: each row's distinct prompt
    firsts = torch.full((uniq.size(0),), rows, device=input_ids.device).scatter_reduce(
        0, sel, torch.arange(rows, device=input_ids.device), "amin"
    )
    heads, head_mask = input_ids[firsts, :p], attention_mask[firsts, :p]
    cache = DynamicCache()
    first = model(
        input_ids=heads, attention_mask=head_mask, past_key_values=cache, use_cache=True, logits_to_keep=1
    ).logits[:, -1:]
    if cache.get_seq_length() != p:  # the model kept no cache (gradient checkpointing in training)
        raise RuntimeError(
            f"shared_prompt_logps: the prompt pass cached {cache.get_seq_length()} of {p} positions; "
            "run with SHARE_PROMPT_PASSES = False (TRL's pass) for this model"
        )
    comp, comp_mask = input_ids[:, p:], attention_mask[:, p:]
    # Completions are right-padded to the longest; in length bands each band runs only as wide as
    # its own longest completion (the padding's logits are masked out by the caller anyway).
    order = torch.argsort(comp_mask.sum(1), stable=True)
    bands = [b for b in torch.tensor_split(order, min(LENGTH_BANDS, rows)) if len(b)]
    parts_lp, parts_ent, rows_done = [], [], []
    for idx in bands:
        w = max(1, int(comp_mask[idx].sum(1).max()))
        band = DynamicCache()
        band.layers = []
        for layer in cache.layers:  # the band's prompts' keys and values, once per completion
            new = DynamicLayer()
            new.is_initialized, new.dtype, new.device = True, layer.keys.dtype, layer.keys.device
            new.keys, new.values = layer.keys.index_select(0, sel[idx]), layer.values.index_select(0, sel[idx])
            band.layers.append(new)
        mask = torch.cat([attention_mask[idx, :p], comp_mask[idx, :w]], 1)
        rest = model(input_ids=comp[idx, :w], attention_mask=mask, past_key_values=band, use_cache=True).logits
        # the logits that predict completion token t: the prompt's last for t = 0, else completion t - 1
        logits = torch.cat([first.index_select(0, sel[idx]), rest[:, :-1]], 1).float() / temperature
        lp = selective_log_softmax(logits, comp[idx, :w])
        parts_lp.append(torch.nn.functional.pad(lp, (0, logits_to_keep - w)))
        if entropy:
            with torch.no_grad():  # the entropy is logged and masks tokens; no gradient flows through it
                parts_ent.append(torch.nn.functional.pad(entropy_from_logits(logits), (0, logits_to_keep - w)))
        rows_done.append(idx)
    back = torch.argsort(torch.cat(rows_done))  # the caller's row order
    logps = torch.cat(parts_lp).index_select(0, back)
    return logps, (torch.cat(parts_ent).index_select(0, back) if entropy else None)


def reward_function(f):
    """A GRPO reward: a function as it is, or a ``"module:function"`` name imported here (what a
    launched job can carry: :func:`stepwiser_lib.engines.launch.launchable` passes JSON only)."""
    if callable(f):
        return f
    if not isinstance(f, str) or f.count(":") != 1:
        raise ValueError(f"reward {f!r}: want a function or a 'module:function' name")
    import importlib

    mod, name = f.split(":")
    fn = getattr(importlib.import_module(mod), name, None)
    if not callable(fn):
        raise ValueError(f"reward {f!r}: {mod} has no function {name}")
    return fn


@launchable
def train_grpo_judge(
    model_dir: str,
    train: list[dict],
    out_dir,
    settings: dict,
    *,
    val: list[dict] | None = None,
    family: str = "toy",
    style: str = "cot",
    format_penalty: float = -1.0,
    reward_funcs=None,
    progress: bool = True,
) -> dict:
    """GRPO on step labels with TRL's ``GRPOTrainer`` (+ PEFT LoRA), paper §3.3/§4.1.

    ``settings`` is a :class:`stepwiser_lib.engines.trainers.GRPOSettings` (or its dict): its
    ``grpo_args`` is the only mapping to TRL's names, and its docstring states the batch
    semantics. Toy-scale options, off in the paper profile: ``loss_tokens="verdict"``
    (:func:`verdict_loss_trainer`), ``balanced_steps`` (:func:`balanced_order`).
    Validation inside training judges the first ``val_limit`` chunks of ``val`` every
    ``eval_every`` GRPO steps on the live model; it is skipped under a multi-process launch,
    where the other ranks would wait in the next collective until the NCCL timeout.
    """
    import torch
    from transformers import AutoModelForCausalLM, TrainerCallback

    from ..engines.models import (
        for_sampling,
        load_tokenizer,
        lora_config,
        neutral_generation_config,
        release,
        save_atomically,  # lazy: torch
    )

    s = settings if isinstance(settings, GRPOSettings) else GRPOSettings(**settings)
    t0 = time.time()
    out_dir = Path(out_dir)
    tok = load_tokenizer(model_dir)
    model = AutoModelForCausalLM.from_pretrained(model_dir, dtype=torch.float32)  # fp32 master weights
    neutral_generation_config(model, tok)
    world = world_size()
    # checkpoints of this exact run (settings, start model, data, processes) live under its key
    run_key = io.digest(
        dataclasses.asdict(s.with_(report_to="none", save_every=0)),
        world,
        paths.model_fingerprint(model_dir),
        io.records_digest(train),
        family,
        style,
        format_penalty,
        [getattr(f, "__name__", str(f)) for f in reward_funcs or []],
    )
    args = s.grpo_args(
        out_dir, world, progress=progress, run_key=run_key, checkpoint_size=checkpoint_bytes(model, s.use_lora)
    )
    val = (val or [])[: s.val_limit or None] if world == 1 else []

    def validate(model_, step: int) -> None:
        # JUDGE_BATCH chunks at once, and on a GPU under autocast with a half-precision cache
        # (models.sampling_half): the fp32 master weights would otherwise keep an fp32 cache.
        # Logged through the trainer, so the curve is in its state and survives a resume.
        j = Judge.from_model(
            for_sampling(model_),
            tok,
            batch_size=s.val_batch,
            family=family,
            max_new_tokens=s.max_completion,
            style=style,
        )
        acc = step_accuracy(j.judge([triple(e) for e in val]), val)
        rec = {"val_step": step, **{f"val_{k}": v for k, v in acc.items()}}
        # into the state's history (saved with each checkpoint) and to the reporters (REPORT_TO); not
        # through trainer.log, whose TRL override would take the step's training metrics with it
        trainer.state.log_history.append({**rec, "step": trainer.state.global_step})
        trainer.control = trainer.callback_handler.on_log(trainer.args, trainer.state, trainer.control, rec)

    class _Val(TrainerCallback):
        def on_train_begin(self, a, state, control, **kw):  # the starting point (not again on a resume)
            if val and s.eval_every and state.global_step == 0:
                validate(trainer.model, 0)

        def on_step_end(self, a, state, control, **kw):  # state.global_step counts optimizer updates
            if val and s.eval_every and state.global_step % (s.eval_every * s.updates_per_step) == 0:
                validate(trainer.model, state.global_step // s.updates_per_step)

    # A direct-verdict ("no CoT") judge gets the paper's format penalty (§4.3); a CoT judge the
    # plain verdict reward. ``reward_funcs`` overrides both: functions in-process, or
    # "module:function" names, which also travel to launched processes.
    rewards = (
        [reward_function(f) for f in reward_funcs]
        if reward_funcs
        else ([make_direct_reward(format_penalty)] if style == "direct" else [verdict_reward])
    )
    if not s.balanced_steps:
        dataset = grpo_dataset(train, family, style)
    elif isinstance(train, list):  # in-process: the reordered list itself
        dataset = grpo_dataset(balanced_order(train, s.prompts_per_step, s.seed), family, style)
    else:  # a launch's spilled records: the mapped set reordered by position, from its label column
        dataset = grpo_dataset(train, family, style)
        dataset = dataset.select(balanced_indices(dataset["label"], s.prompts_per_step, s.seed))
    trainer_cls = loop_generation_trainer() if s.loss_tokens == "all" else verdict_loss_trainer(tok)
    trainer = trainer_cls(
        model=model,
        reward_funcs=rewards,
        args=args,
        train_dataset=dataset,
        processing_class=tok,
        peft_config=lora_config(s.lora_r, s.lora_alpha) if s.use_lora else None,
        callbacks=[_Val()],
    )
    resume = last_checkpoint(args.output_dir) if s.save_every else None
    if resume:
        print(f"[grpo] resuming from {Path(resume).name} (SAVE_EVERY = {s.save_every})", flush=True)
    trainer.train(resume_from_checkpoint=resume)
    save_dir = out_dir / ("adapter" if s.use_lora else "model")
    if trainer.accelerator.is_main_process:  # one writer under accelerate launch (DDP, ZeRO-2)
        save_atomically(trainer.model, tok, save_dir)
        drop_checkpoints(args.output_dir)
    trainer.accelerator.wait_for_everyone()
    logs = [h for h in trainer.state.log_history if "val_step" not in h]
    curve = [
        {"step": h["val_step"], **{k[4:]: v for k, v in h.items() if k.startswith("val_") and k != "val_step"}}
        for h in trainer.state.log_history
        if "val_step" in h
    ]
    out = {
        "dir": str(save_dir),
        "log_history": logs,
        "val_curve": curve,
        "resumed_from": resume and Path(resume).name,
        "seconds": round(time.time() - t0, 1),
        "steps": trainer.state.global_step // s.updates_per_step,
        "processes": world,
        "batches": s.batches(world),
    }
    # The trainer (model, optimizer state, at paper scale TRL's colocated vLLM engine) sits in a
    # reference cycle through the validation callback's closure: drop it here, so the next training
    # run of the same notebook kernel finds the GPU memory.
    trainer = model = None  # (not `del`: the closures above name trainer)
    release()
    return out


# ----------------------------------------------------------------------------- variants (nb 04)


# ----------------------------------------------------------------------------- variants (nb 04)


def recipe_from_config(cfg) -> dict:
    """Every training setting of notebook 04's judge variants, typed, from its config: the GRPO
    judges (:class:`~stepwiser_lib.engines.trainers.GRPOSettings`), the discriminative judge and the RS-FT
    judge (:class:`~stepwiser_lib.engines.trainers.SFTSettings`, ``DISC_*`` and ``RSFT_*``; both read
    ``JUDGE_MAX_LENGTH``), and the few per-kind values. Fails on a missing parameter."""
    return {
        "rl": GRPOSettings.from_config(cfg),
        "disc": SFTSettings.from_config(cfg, "DISC", use_lora=False, max_length=cfg.JUDGE_MAX_LENGTH),
        "rsft": SFTSettings.from_config(cfg, "RSFT", max_length=cfg.JUDGE_MAX_LENGTH),
        "rsft_samples": cfg.RSFT_SAMPLES,
        "rsft_per_example": cfg.RSFT_PER_EXAMPLE,
        "direct_max_completion": cfg.DIRECT_MAX_COMPLETION,
        "format_penalty": cfg.FORMAT_PENALTY,
    }


def recipe_key(kind: str, recipe: dict) -> dict:
    """The part of :func:`recipe_from_config`'s recipe that ``kind`` trains with: what its cache
    key hashes (notebook 04), so that changing the discriminative judge's settings does not
    retrain the GRPO judges, and the other way round."""
    if STYLE[kind] == "disc":
        return {"disc": recipe["disc"]}
    if kind == "rsft":  # samples from the warm-up with the RL judge's temperature and output limit
        key = {k: recipe[k] for k in ("rl", "rsft", "rsft_samples", "rsft_per_example")}
        return (
            key
            if recipe.get("rsft_loss_tokens", "all") == "all"
            else {**key, "loss_tokens": recipe["rsft_loss_tokens"]}
        )
    return {**{k: recipe[k] for k in ("rl", "direct_max_completion", "format_penalty")}, "sampling": GRPO_SAMPLING}


#: How a GRPO judge's groups are sampled, in its cache key: a judge trained before a change is
#: retrained. "group seeds": one random stream per group (:func:`group_seeds`, issue 34).
GRPO_SAMPLING = "group seeds"


def train_variant(
    name: str,
    data: dict,
    out_dir,
    *,
    base_model: str,
    warmups: dict,
    recipe: dict,
    family: str = "toy",
    seed: int = 0,
    progress: bool = True,
) -> dict:
    """Train one judge variant (notebook 04) and return its registry entry + training record.

    ``data[rule]`` holds ``train_balanced``, ``train_unbalanced`` and ``dev_balanced`` example
    lists (stage 03); ``warmups[style]`` is the format-warm-up model for ``"cot"``/``"direct"``
    (the toy path; None for real models that already follow instructions); ``recipe`` is
    :func:`recipe_from_config`'s. GRPO's validation curve reads the dev split; neither dev nor
    test is trained on. The discriminative judge starts from ``base_model``, as the paper's does
    (judge and policy share the init); ``disc_warmup_sft`` from the CoT warm-up the generative
    judge starts from, so the warm-up's effect on a discriminative judge is measured on its own
    (:data:`WARMUP_OF`).
    """
    kind, rule = parse_variant(name)
    out_dir = Path(out_dir)
    d = data[rule]
    val = d["dev_balanced"]
    style = STYLE[kind]
    entry = {"name": name, "kind": kind, "rule": rule, "style": style, "row": KINDS[kind]}
    rl = recipe["rl"].with_(
        seed=seed,
        # the no-balancing ablation keeps its lopsided label mix in every step too
        balanced_steps=recipe["rl"].balanced_steps and kind != "no_balance_rl",
    )
    trainer = JUDGE_KINDS[kind].trainer
    if trainer == "grpo":
        start = warmups.get(WARMUP_OF[kind]) or base_model
        train = d["train_unbalanced"] if kind == "no_balance_rl" else d["train_balanced"]
        if kind == "exact_rl":  # the same chunks, labelled by the exact step checker instead of MC
            train = [{**e, "label": tasks.step_truth(e)} for e in train]
            if any(e["label"] is None for e in train):
                raise ValueError("exact_rl needs toy-world problems (an exact step checker)")
        if kind == "no_cot_rl":
            rl = rl.with_(max_completion=recipe["direct_max_completion"])
        entry["max_new_tokens"] = rl.max_completion  # what later notebooks judge with (direct: a box)
        r = train_grpo_judge(
            start,
            train,
            out_dir,
            rl,
            val=val,
            family=family,
            style=style,
            format_penalty=recipe["format_penalty"],
            progress=progress,
        )
        entry.update(base=start if rl.use_lora else r["dir"], adapter=r["dir"] if rl.use_lora else None)
        rec = {
            "seconds": r["seconds"],
            "steps": r["steps"],
            "train_examples": len(train),
            "log_history": r["log_history"],
            "val_curve": r["val_curve"],
            "batches": r["batches"],
        }
    elif trainer == "disc":
        start = warmups.get(WARMUP_OF[kind]) or base_model
        r = train_disc_judge(start, d["train_balanced"], out_dir, recipe["disc"].with_(seed=seed), progress=progress)
        entry.update(base=r["model_dir"], adapter=None)
        rec = {
            "seconds": r["seconds"],
            "steps": r["steps"],
            "train_examples": r["records"],
            "loss_curve": r["loss_curve"],
        }
    else:  # rsft: sample analyses from the warm-up judge, keep label-matching ones, SFT
        from ..engines.models import load_model, release  # lazy: torch

        t0 = time.time()
        start = warmups.get("cot") or base_model
        train = d["train_balanced"]
        model, tok = load_model(start)
        j = Judge.from_model(model, tok, family=family, max_new_tokens=rl.max_completion, style="cot")
        ps = [judge_prompt_of(e, family, "cot") for e in train]
        outs = j.gen.generate(
            ps,
            n=recipe["rsft_samples"],
            temperature=rl.temperature,
            max_new_tokens=rl.max_completion,
            seed=seed,
            progress=progress,
        )
        del model
        release(j.gen)  # the sampling judge's weights leave the GPU before SFT (finding 23)
        recs = rsft_select(
            train,
            [[c.text for c in o] for o in outs],
            recipe["rsft_per_example"],
            family,
            "cot",
            loss_tokens=recipe.get("rsft_loss_tokens", "all"),
        )
        unparsed = sum(parse_verdict(c.text) is None for o in outs for c in o)  # never kept (verdicts.RULE)
        if not recs:
            raise RuntimeError(
                f"{name}: no sampled judge output matched a label ({unparsed} of "
                f"{len(train) * recipe['rsft_samples']} had no parsable verdict); nothing to fine-tune on"
            )
        r = sft(start, recs, out_dir, recipe["rsft"].with_(seed=seed), progress=progress)
        entry.update(base=r["model_dir"], adapter=None)
        rec = {
            "seconds": round(time.time() - t0, 1),
            "steps": r["steps"],
            "train_examples": len(train),
            "rsft_kept": len(recs),
            "rsft_sampled": len(train) * recipe["rsft_samples"],
            "rsft_unparsed": unparsed,
            "loss_curve": r["loss_curve"],
        }
    return {"entry": entry, "train": rec}
