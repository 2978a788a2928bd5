"""Supervised fine-tuning with TRL's ``SFTTrainer`` on prompt/completion records."""

from __future__ import annotations

import dataclasses
import time
from pathlib import Path

from ..core import io
from ..core.paths import model_fingerprint
from .launch import launchable, to_dataset
from .trainers import (
    SFTSettings,
    check_lengths,
    checkpoint_bytes,
    drop_checkpoints,
    last_checkpoint,
    seeded_sampler_trainer,
    world_size,
)


def _lengths(tok, dataset) -> list[int]:
    """Tokens per record as TRL will see them: pre-tokenized ``input_ids``, or the chat template
    around a conversational prompt/completion pair."""
    if "input_ids" in dataset.column_names:
        return [len(x) for x in dataset["input_ids"]]
    texts = [tok.apply_chat_template(r["prompt"] + r["completion"], tokenize=False) for r in dataset]
    return [len(ids) for ids in tok(texts, add_special_tokens=False)["input_ids"]]  # one batched call


def train_sft(
    base_model: str, dataset, out_dir: str | Path, settings: SFTSettings | dict, progress: bool = True
) -> dict:
    """Run TRL's ``SFTTrainer`` on a prepared ``datasets.Dataset`` (conversational
    prompt/completion pairs, or pre-tokenized ``input_ids`` + ``completion_mask``), with the loss
    on completion tokens only. With ``use_lora`` a PEFT LoRA adapter is trained and merged, so
    ``out_dir/model`` always holds a full model that later stages load with ``from_pretrained``.
    Weights are loaded in float32 (master weights) whatever the device; a GPU trains them under
    bf16 or fp16 mixed precision (:func:`stepwiser_lib.engines.models.precision`)."""
    import datasets
    import torch
    from transformers import AutoModelForCausalLM
    from trl import SFTTrainer

    from .models import load_tokenizer, lora_config, neutral_generation_config, release, save_atomically  # lazy: torch

    s = settings if isinstance(settings, SFTSettings) else SFTSettings(**settings)
    datasets.disable_progress_bars()  # keep notebook output readable
    t0 = time.time()
    out_dir = Path(out_dir)
    tok = load_tokenizer(base_model)
    tok.padding_side = "right"  # training pads on the right
    lengths = check_lengths(_lengths(tok, dataset), s.max_length, f"{s.name}_MAX_LENGTH", s.max_truncated)
    model = AutoModelForCausalLM.from_pretrained(base_model, dtype=torch.float32)
    neutral_generation_config(model, tok)
    # checkpoints of this exact run (settings, start model, data, processes) live under its key
    run_key = io.digest(
        dataclasses.asdict(s.with_(report_to="none", save_every=0)),
        world_size(),
        model_fingerprint(base_model),
        io.records_digest(dataset),
    )
    args = s.sft_args(
        out_dir, world_size(), progress=progress, run_key=run_key, checkpoint_size=checkpoint_bytes(model, s.use_lora)
    )
    trainer = seeded_sampler_trainer(SFTTrainer)(
        model=model,
        args=args,
        train_dataset=dataset,
        processing_class=tok,
        peft_config=lora_config(s.lora_r, s.lora_alpha) if s.use_lora else None,
    )
    resume = last_checkpoint(args.output_dir) if s.save_every else None
    if resume:
        print(f"[sft] resuming from {Path(resume).name} ({s.name} SAVE_EVERY = {s.save_every})", flush=True)
    trainer.train(resume_from_checkpoint=resume)
    model = trainer.model.merge_and_unload() if s.use_lora else trainer.model
    model_dir = out_dir / "model"
    tok.padding_side = "left"
    if trainer.accelerator.is_main_process:  # one writer under accelerate launch (DDP, ZeRO-2)
        save_atomically(model, tok, model_dir)
        drop_checkpoints(args.output_dir)
    trainer.accelerator.wait_for_everyone()
    logs = [h for h in trainer.state.log_history if "loss" in h]
    out = {
        "model_dir": str(model_dir),
        "train_seconds": round(time.time() - t0, 1),
        "resumed_from": resume and Path(resume).name,
        "steps": trainer.state.global_step,
        "records": len(dataset),
        "lengths": lengths,
        "processes": world_size(),
        "loss_curve": [(h["step"], h["loss"]) for h in logs],
    }
    del trainer, model  # the next training run of the kernel needs the GPU memory
    release()
    return out


@launchable
def sft(
    base_model: str, records: list[dict], out_dir: str | Path, settings: dict | SFTSettings, progress: bool = True
) -> dict:
    """Supervised fine-tuning on ``{"prompt", "completion"}`` records with
    :class:`stepwiser_lib.engines.trainers.SFTSettings`.

    Used for the chunk policy (notebook 01), the judge's format warm-up and RS-FT ablation (04)
    and stepwise RS-FT (07). Records become conversational prompt/completion pairs, so TRL applies
    the model's chat template and puts the loss on the completion only.
    """
    if not records:
        raise ValueError("no SFT records")
    ds = to_dataset(
        records,
        lambda r: {
            "prompt": [{"role": "user", "content": r["prompt"]}],
            "completion": [{"role": "assistant", "content": r["completion"]}],
        },
    )
    return train_sft(base_model, ds, out_dir, settings, progress=progress)
