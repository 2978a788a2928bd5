"""Supervised fine-tuning with TRL's ``SFTTrainer`` on prompt/completion records."""

from __future__ import annotations

import time
from pathlib import Path

from .launch import launchable


def train_sft(base_model: str, dataset, out_dir: str | Path, *, epochs: float = 2.0,
              max_steps: int = -1, lr: float = 5e-4, batch_size: int = 16, grad_accum: int = 1,
              max_length: int = 512, use_lora: bool = False, lora_r: int = 16, lora_alpha: int = 32,
              seed: int = 0, warmup_ratio: float = 0.05, bf16: bool = False,
              progress: bool = True) -> dict:
    """Run TRL's ``SFTTrainer`` on a prepared ``datasets.Dataset`` (conversational
    prompt/completion pairs, or pre-tokenized ``input_ids`` + ``completion_mask``), with the loss
    on completion tokens only. With ``use_lora`` a PEFT LoRA adapter is trained and merged, so
    ``out_dir/model`` always holds a full model that later stages load with ``from_pretrained``."""
    import datasets
    import torch
    from transformers import AutoModelForCausalLM
    from trl import SFTConfig, SFTTrainer

    from .models import load_tokenizer, lora_config

    datasets.disable_progress_bars()  # keep notebook output readable
    t0 = time.time()
    out_dir = Path(out_dir)
    tok = load_tokenizer(base_model)
    tok.padding_side = "right"  # training pads on the right
    cpu = not torch.cuda.is_available()
    model = AutoModelForCausalLM.from_pretrained(
        base_model, dtype=torch.float32 if cpu or not bf16 else torch.bfloat16)
    args = SFTConfig(
        output_dir=str(out_dir / "trainer"), num_train_epochs=epochs, max_steps=max_steps,
        learning_rate=lr, per_device_train_batch_size=batch_size,
        gradient_accumulation_steps=grad_accum, lr_scheduler_type="cosine",
        warmup_steps=warmup_ratio, max_length=max_length, packing=False,
        completion_only_loss=True,
        logging_steps=1 if 0 < max_steps <= 20 else 5, save_strategy="no", report_to=[],
        seed=seed, data_seed=seed, use_cpu=cpu, bf16=bf16 and not cpu,
        gradient_checkpointing=False, dataloader_num_workers=0, disable_tqdm=not progress)
    trainer = SFTTrainer(model=model, args=args, train_dataset=dataset, processing_class=tok,
                         peft_config=lora_config(lora_r, lora_alpha) if use_lora else None)
    trainer.train()
    model = trainer.model.merge_and_unload() if use_lora else trainer.model
    model_dir = out_dir / "model"
    tok.padding_side = "left"
    if trainer.accelerator.is_main_process:  # one writer under accelerate launch (DDP, ZeRO-2)
        model.save_pretrained(model_dir)
        tok.save_pretrained(model_dir)
    trainer.accelerator.wait_for_everyone()
    logs = [h for h in trainer.state.log_history if "loss" in h]
    return {"model_dir": str(model_dir), "train_seconds": round(time.time() - t0, 1),
            "steps": trainer.state.global_step, "records": len(dataset),
            "loss_curve": [(h["step"], h["loss"]) for h in logs]}


@launchable
def sft(base_model: str, records: list[dict], out_dir: str | Path, **kw) -> dict:
    """Supervised fine-tuning on ``{"prompt", "completion"}`` records (keyword arguments as
    :func:`train_sft`).

    Used for the chunk policy (notebook 01), the judge's format warm-up and RS-FT ablation (04)
    and stepwise RS-FT (07). Records become conversational prompt/completion pairs, so TRL applies
    the model's chat template and puts the loss on the completion only.
    """
    from datasets import Dataset

    if not records:
        raise ValueError("no SFT records")
    ds = Dataset.from_list([{"prompt": [{"role": "user", "content": r["prompt"]}],
                             "completion": [{"role": "assistant", "content": r["completion"]}]}
                            for r in records])
    return train_sft(base_model, ds, out_dir, **kw)
