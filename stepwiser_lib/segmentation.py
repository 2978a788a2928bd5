"""Stage 1: self-segmentation into chunks-of-thought (paper §3.1, §4.1, Tables 1, 4, 11).

Pipeline (notebook ``01_self_segmentation``):

1. sample responses from the base policy and keep at most ``max_per_problem`` correct ones per
   prompt (paper: 16 samples, at most 4 correct);
2. segment each with a teacher: the rule teacher of the toy world
   (:func:`stepwiser_lib.toyworld.teacher_segment`) or an instruct LLM prompted with the paper's
   Table 1 rules (:func:`llm_teacher`, paper: Llama-3.1-70B-it, 8 segmentations per response);
3. keep a segmentation only if it follows the format and removing the tags reconstructs the
   response exactly (:func:`segmentation_problems`);
4. SFT the base policy on (chunk-policy prompt, segmented response) with TRL's ``SFTTrainer``
   (:func:`sft_chunk_policy`), which gives the chunk policy every later stage starts from.
"""

from __future__ import annotations

import random
import re
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

from . import prompts
from .toyworld import CHUNK_CLOSE, CHUNK_OPEN, parse_chunks, strip_tags

_UNIT_RE = re.compile(r"<chunk>(.*?)</chunk>", re.S)


def segmentation_problems(original: str, segmented: str) -> list[str]:
    """Why a teacher's segmentation is rejected (empty list = accepted), paper §3.2 step 5.

    Format (Table 1): only ``<chunk>...</chunk>`` units, nothing outside them but the blank-line
    separators that were in the text, no nesting, no empty chunk. Content: removing the tags
    gives back the original response byte for byte.
    """
    errs = []
    outside = _UNIT_RE.sub("", segmented)
    if outside.strip():
        errs.append(f"text outside chunks: {outside.strip()[:40]!r}")
    units = _UNIT_RE.findall(segmented)
    if not units:
        errs.append("no chunk")
    if any(CHUNK_OPEN in u or CHUNK_CLOSE in u for u in units):
        errs.append("nested or unbalanced chunk tags")
    if segmented.count(CHUNK_OPEN) != segmented.count(CHUNK_CLOSE):
        errs.append("unbalanced chunk tags")
    if any(not u.strip() for u in units):
        errs.append("empty chunk")
    if strip_tags(segmented) != original:
        errs.append("does not reconstruct the original text")
    return errs


def reconstructs(original: str, segmented: str) -> bool:
    return not segmentation_problems(original, segmented)


def llm_teacher(generator, n_segmentations: int = 8, temperature: float = 0.7,
                max_new_tokens: int = 4096, seed: int = 0) -> Callable[[list[str]], list[str | None]]:
    """A segmentation teacher backed by an instruct LLM with the paper's Table 1 rules.

    Returns a function mapping responses to their first valid segmentation among
    ``n_segmentations`` samples (paper: 8), or None when none reconstructs the response.
    """
    def segment(responses: list[str]) -> list[str | None]:
        ps = [prompts.PAPER_SEGMENTATION_TEACHER.format(solution=r) for r in responses]
        outs = generator.generate(ps, n=n_segmentations, temperature=temperature,
                                  max_new_tokens=max_new_tokens, seed=seed, progress="teacher")
        res: list[str | None] = []
        for r, cands in zip(responses, outs):
            ok = [c.text.strip() for c in cands if reconstructs(r, c.text.strip())]
            res.append(ok[0] if ok else None)
        return res
    return segment


@dataclass
class SegmentationStats:
    sampled: int
    correct: int
    kept: int  # after the per-prompt cap
    accepted: int  # after the reconstruction filter
    rejected_reasons: dict


def build_sft_records(items: list[dict], teacher: Callable[[list[str]], list[str | None]],
                      max_per_problem: int, policy_prompt: str, seed: int = 0
                      ) -> tuple[list[dict], SegmentationStats]:
    """SFT records from sampled responses.

    ``items``: ``{"problem_id", "problem", "response", "correct"}`` dicts. Keeps at most
    ``max_per_problem`` correct responses per problem (random, seeded), segments them, filters by
    exact reconstruction. Records: ``{"problem_id", "prompt", "completion", "raw"}`` with the
    chunk-policy prompt (Table 11 or its toy version) and the segmented response.
    """
    rng = random.Random(seed)
    by_pid: dict[str, list[dict]] = {}
    for it in items:
        if it["correct"]:
            by_pid.setdefault(it["problem_id"], []).append(it)
    kept = []
    for pid in sorted(by_pid):
        xs = by_pid[pid]
        # identical responses add nothing: keep distinct texts first
        seen, uniq = set(), []
        for x in xs:
            if x["response"] not in seen:
                seen.add(x["response"])
                uniq.append(x)
        rng.shuffle(uniq)
        kept.extend(uniq[:max_per_problem])
    segs = teacher([k["response"] for k in kept])
    records, reasons = [], {}
    for k, s in zip(kept, segs):
        errs = ["teacher gave no valid segmentation"] if s is None else segmentation_problems(k["response"], s)
        if errs:
            for e in errs:
                reasons[e.split(":")[0]] = reasons.get(e.split(":")[0], 0) + 1
            continue
        records.append({"problem_id": k["problem_id"],
                        "prompt": policy_prompt.format(problem=k["problem"]),
                        "completion": s, "raw": k["response"]})
    stats = SegmentationStats(sampled=len(items), correct=sum(bool(i["correct"]) for i in items),
                              kept=len(kept), accepted=len(records), rejected_reasons=reasons)
    return records, stats


def step_stats(texts: list[str], chunked: bool) -> list[int]:
    """Steps per solution: chunks for chunked text, ``\\n\\n`` paragraphs otherwise (Table 4)."""
    from .toyworld import split_paragraphs

    if chunked:
        return [len(parse_chunks(t)) for t in texts]
    return [len(split_paragraphs(strip_tags(t))) for t in texts]


def sft_chunk_policy(base_model: str, records: list[dict], out_dir: str | Path, *,
                     epochs: float = 2.0, max_steps: int = -1, lr: float = 5e-4, batch_size: int = 16,
                     grad_accum: int = 1, max_length: int = 512, use_lora: bool = False,
                     lora_r: int = 16, lora_alpha: int = 32, seed: int = 0,
                     warmup_ratio: float = 0.05, bf16: bool = False) -> dict:
    """SFT the base policy on chunked responses with TRL's ``SFTTrainer`` (paper §3.3 recipe:
    lr 1e-5, global batch 32, packing 8192 at paper scale).

    Data are conversational prompt/completion pairs, so TRL applies the model's chat template
    and puts the loss on the completion only. With ``use_lora`` a PEFT LoRA adapter is trained
    and merged, so that ``out_dir`` always holds a full model that later stages load with
    ``from_pretrained``.
    """
    import torch
    from datasets import Dataset
    from transformers import AutoModelForCausalLM
    from trl import SFTConfig, SFTTrainer

    from .models import load_tokenizer

    if not records:
        raise ValueError("no SFT records: the base policy produced no correct, segmentable response "
                         "(sample more prompts or responses)")
    t0 = time.time()
    out_dir = Path(out_dir)
    tok = load_tokenizer(base_model)
    tok.padding_side = "right"  # training pads on the right
    ds = Dataset.from_list([{"prompt": [{"role": "user", "content": r["prompt"]}],
                             "completion": [{"role": "assistant", "content": r["completion"]}]}
                            for r in records])
    cpu = not torch.cuda.is_available()
    model = AutoModelForCausalLM.from_pretrained(
        base_model, dtype=torch.float32 if cpu or not bf16 else torch.bfloat16)
    peft_config = None
    if use_lora:
        from peft import LoraConfig

        peft_config = LoraConfig(r=lora_r, lora_alpha=lora_alpha, target_modules="all-linear",
                                 task_type="CAUSAL_LM")
    args = SFTConfig(
        output_dir=str(out_dir / "trainer"), num_train_epochs=epochs, max_steps=max_steps,
        learning_rate=lr, per_device_train_batch_size=batch_size,
        gradient_accumulation_steps=grad_accum, lr_scheduler_type="cosine",
        warmup_steps=warmup_ratio, max_length=max_length, packing=False,
        completion_only_loss=True, logging_steps=5, save_strategy="no", report_to=[],
        seed=seed, data_seed=seed, use_cpu=cpu, bf16=bf16 and not cpu,
        gradient_checkpointing=False, dataloader_num_workers=0, disable_tqdm=False)
    trainer = SFTTrainer(model=model, args=args, train_dataset=ds, processing_class=tok,
                         peft_config=peft_config)
    trainer.train()
    model = trainer.model
    if use_lora:
        model = model.merge_and_unload()
    policy_dir = out_dir / "model"
    model.save_pretrained(policy_dir)
    tok.padding_side = "left"
    tok.save_pretrained(policy_dir)
    logs = [h for h in trainer.state.log_history if "loss" in h]
    return {"model_dir": str(policy_dir), "train_seconds": round(time.time() - t0, 1),
            "steps": trainer.state.global_step, "records": len(records),
            "loss_curve": [(h["step"], h["loss"]) for h in logs]}
