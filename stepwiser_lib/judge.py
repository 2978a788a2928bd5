"""Stage 4 (groundwork): the generative judge's output contract and its GRPO reward (paper §3.3).

The judge reads (problem, history, new chunk) with the Table 3 prompt, writes an analysis, and
ends with ``\\boxed{Positive}`` or ``\\boxed{Negative}``. The RL reward is 1 if the boxed verdict
matches the Monte-Carlo label and 0 otherwise (no format bonus for the CoT judge).
"""

from __future__ import annotations

VERDICTS = ("Positive", "Negative")


def _boxed_contents(text: str) -> list[str]:
    """Contents of every ``\\boxed{...}``, with balanced nested braces."""
    out, i = [], 0
    key = "\\boxed{"
    while True:
        j = text.find(key, i)
        if j < 0:
            return out
        k, depth = j + len(key), 1
        while k < len(text) and depth:
            depth += {"{": 1, "}": -1}.get(text[k], 0)
            k += 1
        if depth:  # unclosed box: nothing more to read
            return out
        out.append(text[j + len(key):k - 1])
        i = k


def parse_verdict(text: str) -> str | None:
    """``"Positive"``/``"Negative"`` from the content of the **last** ``\\boxed{...}``
    (whitespace-stripped, case-insensitive); None if there is no box or another word."""
    boxes = _boxed_contents(text or "")
    if not boxes:
        return None
    v = boxes[-1].strip().lower()
    for name in VERDICTS:
        if v == name.lower():
            return name
    return None


def verdict_reward(completions: list, label: list | None = None, labels: list | None = None,
                   **kwargs) -> list[float]:
    """GRPO reward (paper §3.3): 1.0 iff the parsed verdict equals the label (True = Positive).

    Works with TRL's ``reward_funcs`` calling convention (``prompts``, ``completions``, dataset
    columns as keyword lists, ``trainer_state``...): the label column is ``label``. Completions may
    be strings or conversational message lists.
    """
    labels = label if label is not None else labels
    if labels is None:
        raise ValueError("verdict_reward needs the label column")
    out = []
    for c, y in zip(completions, labels):
        text = c[-1]["content"] if isinstance(c, list) else c
        v = parse_verdict(text)
        out.append(1.0 if v is not None and (v == "Positive") == bool(y) else 0.0)
    return out


# ----------------------------------------------------------------------------- toy analysis

def toy_analysis(problem_text: str, chunk: str) -> str:
    """The toy judge's analysis of a chunk: re-derive each stated result and subtract (the
    generic checking text the toy base model was pre-trained on, toyworld.check_text)."""
    from .toyworld import check_text, parse_problem

    return check_text(parse_problem(problem_text), chunk)


def warmup_records(examples: list[dict], family: str = "toy", seed: int = 0) -> list[dict]:
    """Format warm-up SFT data for a tiny judge (notebook 04).

    It teaches the output *contract* only: the analysis (re-derivation) followed by a boxed
    verdict. The verdict is drawn at random (50/50, seeded), independent of the chunk and of any
    label, so the warm-up cannot teach which verdict is right; that is left to RL.
    """
    import random

    from .prompts import judge_prompt

    rng = random.Random(f"warmup:{seed}")
    out = []
    for e in examples:
        verdict = rng.choice(("Positive", "Negative"))
        out.append({"prompt": judge_prompt(family, e["problem"], e["history"], e["chunk"]),
                    "completion": f"{toy_analysis(e['problem'], e['chunk'])}\n\\boxed{{{verdict}}}"})
    return out


# ----------------------------------------------------------------------------- inference

class Judge:
    """Batched stepwise judging: ``judge(triples, k)`` for (problem, history, chunk) triples.

    Returns, per triple, the majority ``verdict`` ("Positive"/"Negative"/None when no sample
    parsed), the first sample's ``analysis`` text, and ``score`` = fraction of the ``k`` samples
    judged Positive (k > 1 with temperature > 0 gives Maj@k, paper Table 5).
    """

    def __init__(self, model, tokenizer, family: str = "toy", max_new_tokens: int = 96,
                 batch_size: int = 128):
        from .models import HFGenerator

        self.gen = HFGenerator(model, tokenizer, batch_size=batch_size)
        self.family, self.max_new_tokens = family, max_new_tokens

    @classmethod
    def load(cls, base: str, adapter: str | None = None, **kw) -> "Judge":
        from .models import load_model

        model, tok = load_model(base, adapter=adapter)
        return cls(model, tok, **kw)

    def judge(self, triples: list[tuple[str, list[str], str]], k: int = 1,
              temperature: float | None = None, seed: int = 0, progress: bool | str = False) -> list[dict]:
        from .prompts import judge_prompt

        temperature = (0.0 if k == 1 else 1.0) if temperature is None else temperature
        ps = [judge_prompt(self.family, p, h, c) for p, h, c in triples]
        was_training = self.gen.model.training
        self.gen.model.eval()
        outs = self.gen.generate(ps, n=k, temperature=temperature, max_new_tokens=self.max_new_tokens,
                                 seed=seed, progress=progress)
        if was_training:
            self.gen.model.train()
        res = []
        for cands in outs:
            vs = [parse_verdict(c.text) for c in cands]
            pos, neg = vs.count("Positive"), vs.count("Negative")
            verdict = None if pos + neg == 0 else ("Positive" if pos > neg else "Negative" if neg > pos
                                                   else vs[next(i for i, v in enumerate(vs) if v)])
            res.append({"verdict": verdict, "analysis": cands[0].text, "score": pos / len(vs),
                        "n_unparsed": len(vs) - pos - neg})
        return res


def step_accuracy(judged: list[dict], examples: list[dict]) -> dict:
    """Validation step accuracy against the labels; on a balanced set this is balanced accuracy.
    An unparsed verdict counts as wrong."""
    n = len(examples)
    if not n:
        return {"n": 0}
    hit = [(j["verdict"] == "Positive") == bool(e["label"]) and j["verdict"] is not None
           for j, e in zip(judged, examples)]
    pos = [e for e in examples if e["label"]]
    acc_pos = sum(h for h, e in zip(hit, examples) if e["label"]) / max(1, len(pos))
    acc_neg = sum(h for h, e in zip(hit, examples) if not e["label"]) / max(1, n - len(pos))
    return {"n": n, "acc": round(100 * sum(hit) / n, 2),
            "balanced_acc": round(50 * (acc_pos + acc_neg), 2),
            "positive_rate": round(100 * sum(j["verdict"] == "Positive" for j in judged) / n, 2),
            "unparsed": round(100 * sum(j["verdict"] is None for j in judged) / n, 2)}


# ----------------------------------------------------------------------------- GRPO training

def grpo_dataset(examples: list[dict], family: str = "toy"):
    """TRL dataset: conversational ``prompt`` (so the chat template is applied) and ``label``."""
    from datasets import Dataset

    from .prompts import judge_prompt

    return Dataset.from_list([{"prompt": [{"role": "user", "content": judge_prompt(
        family, e["problem"], e["history"], e["chunk"])}], "label": bool(e["label"])} for e in examples])


def train_grpo_judge(model_dir: str, train: list[dict], out_dir, *, val: list[dict] | None = None,
                     family: str = "toy", max_steps: int = 60, prompts_per_step: int = 8,
                     group_size: int = 8, lr: float = 1e-3, beta: float = 0.2, use_lora: bool = True,
                     lora_r: int = 16, lora_alpha: int = 32, epsilon_low: float = 0.2,
                     epsilon_high: float = 0.28, max_completion_length: int = 64,
                     temperature: float = 1.0, eval_every: int = 10, seed: int = 0,
                     reward_funcs=None, lr_scheduler: str = "constant") -> dict:
    """GRPO on step labels with TRL's ``GRPOTrainer`` (+ PEFT LoRA), paper §3.3/§4.1.

    TRL argument <- paper setting: ``num_generations`` <- group size 4; ``epsilon``/``epsilon_high``
    <- clip-higher 0.2/0.28; ``per_device_train_batch_size`` counts completions, so prompts per step
    = batch / num_generations (paper: 1024 prompts per step); ``beta`` is the KL anchor to the
    reference (the paper does not state one; toy judges need it, engineering notes).
    """
    import time
    from pathlib import Path

    import torch
    from transformers import AutoModelForCausalLM, TrainerCallback
    from trl import GRPOConfig, GRPOTrainer

    from .models import load_tokenizer, lora_config

    t0 = time.time()
    out_dir = Path(out_dir)
    tok = load_tokenizer(model_dir)
    model = AutoModelForCausalLM.from_pretrained(model_dir, dtype=torch.float32)
    cpu = not torch.cuda.is_available()
    peft_config = lora_config(lora_r, lora_alpha) if use_lora else None
    args = GRPOConfig(
        output_dir=str(out_dir / "trainer"), max_steps=max_steps, learning_rate=lr,
        lr_scheduler_type=lr_scheduler, per_device_train_batch_size=prompts_per_step * group_size,
        num_generations=group_size, beta=beta, epsilon=epsilon_low, epsilon_high=epsilon_high,
        max_completion_length=max_completion_length, temperature=temperature, logging_steps=1,
        save_strategy="no", report_to=[], seed=seed, data_seed=seed, use_cpu=cpu, bf16=not cpu,
        gradient_checkpointing=False, disable_tqdm=False, dataloader_num_workers=0)
    curve: list[dict] = []

    class _Val(TrainerCallback):
        def __init__(self):
            self.trainer = None

        def on_step_end(self, a, state, control, **kw):
            if val and eval_every and state.global_step % eval_every == 0:
                j = Judge(self.trainer.model, tok, family, max_new_tokens=max_completion_length)
                r = step_accuracy(j.judge([(e["problem"], e["history"], e["chunk"]) for e in val]), val)
                curve.append({"step": state.global_step, **r})

    cb = _Val()
    trainer = GRPOTrainer(model=model, reward_funcs=reward_funcs or [verdict_reward], args=args,
                          train_dataset=grpo_dataset(train, family), processing_class=tok,
                          peft_config=peft_config, callbacks=[cb])
    cb.trainer = trainer
    if val:
        j = Judge(trainer.model, tok, family, max_new_tokens=max_completion_length)
        curve.append({"step": 0, **step_accuracy(
            j.judge([(e["problem"], e["history"], e["chunk"]) for e in val]), val)})
    trainer.train()
    save_dir = out_dir / ("adapter" if use_lora else "model")
    trainer.model.save_pretrained(save_dir)
    tok.save_pretrained(save_dir)
    return {"dir": str(save_dir), "log_history": trainer.state.log_history, "val_curve": curve,
            "seconds": round(time.time() - t0, 1), "steps": trainer.state.global_step}
