"""Stage 4: the stepwise judges (paper §3.3, §4.1, §4.3; Tables 5 and 6), notebook 04.

The generative judge reads (problem, history, new chunk) with the Table 3 prompt, writes an
analysis, and ends with ``\\boxed{Positive}`` or ``\\boxed{Negative}``. The RL reward is 1 if the
boxed verdict matches the Monte-Carlo label and 0 otherwise (no format bonus for the CoT judge).
This module holds the output contract and rewards, the toy format warm-up, GRPO training (TRL +
PEFT), batched inference, and the variants of Tables 5/6 (:func:`train_variant`); the
discriminative baseline is in :mod:`stepwiser_lib.method.discriminative`.
"""

from __future__ import annotations

from ..core.chunks import parse_chunks
from ..engines.launch import launchable
# The verdict format and the one rule for an output without one (stepwiser_lib.core.verdicts.RULE)
from ..core.verdicts import VERDICTS, parse_verdict  # noqa: F401  (judge.parse_verdict: the notebooks' name)


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
    if len(labels) != len(completions):
        raise ValueError(f"verdict_reward: {len(completions)} completions but {len(labels)} labels")
    bad = next((y for y in labels if not isinstance(y, bool)), None)
    if bad is not None:  # "False" is truthy: a string label would reward the wrong verdict
        raise ValueError(f"verdict_reward: labels must be True/False, got {bad!r} ({type(bad).__name__})")
    out = []
    for c, y in zip(completions, labels):
        text = c[-1]["content"] if isinstance(c, list) else c
        v = parse_verdict(text) if isinstance(text, str) else None
        out.append(1.0 if v is not None and (v == "Positive") == y else 0.0)
    return out


def is_direct_format(text: str) -> bool:
    """The no-CoT contract: the completion is exactly one boxed verdict (whitespace aside)."""
    t = (text or "").strip()
    return t in ("\\boxed{Positive}", "\\boxed{Negative}")


def make_direct_reward(format_penalty: float = -1.0):
    """Reward for the "ablate CoT" judge (paper App. A.4): the verdict reward, or
    ``format_penalty`` (paper: -1.0) when the completion is not just ``\\boxed{verdict}``."""
    def direct_reward(completions: list, label: list | None = None, labels: list | None = None,
                      **kwargs) -> list[float]:
        base = verdict_reward(completions, label=label, labels=labels)
        texts = [c[-1]["content"] if isinstance(c, list) else c for c in completions]
        return [r if is_direct_format(t) else format_penalty for r, t in zip(base, texts)]
    return direct_reward


# ----------------------------------------------------------------------------- toy analysis

def toy_analysis(problem_text: str, chunk: str) -> str:
    """The toy judge's analysis of a chunk (:func:`stepwiser_lib.toy.toyworld.derive_text`): the
    correct derivation of every value the chunk states, then a subtraction per stated value.
    It is what the format warm-up shows; which verdict follows from it is left to RL."""
    from ..toy.toyworld import derive_text, parse_problem

    return derive_text(parse_problem(problem_text), chunk)


def analysis_implied(text: str) -> bool | None:
    """The verdict a toy analysis implies (all differences 0 -> Positive); None if unreadable.
    Used to measure how faithful a judge's own analyses are (notebook 04), never as a reward."""
    from ..toy.toyworld import derive_implied_ok

    return derive_implied_ok(text.split("\\boxed")[0])


def policy_chunks(policy_dir: str, items: list[dict], samples: int, family: str = "toy",
                  seed: int = 0, max_new_tokens: int = 160, batch_size: int = 128) -> list[dict]:
    """(problem, history, chunk) triples from the chunk policy's own samples on ``items``.

    Input text for the judge's format warm-up (notebook 04): chunks written the way the judge
    will see them, on problems disjoint from the labelled ones, with no label attached. [not in paper]
    """
    from ..engines.models import HFGenerator, load_model
    from ..core.prompts import get

    model, tok = load_model(policy_dir)
    gen = HFGenerator(model, tok, batch_size=batch_size)
    tmpl = get(family, "chunk_policy")
    outs = gen.generate([tmpl.format(problem=it["problem"]) for it in items], n=samples,
                        temperature=1.0, max_new_tokens=max_new_tokens, seed=seed)
    out = []
    for it, cands in zip(items, outs):
        for c in cands:
            ch = parse_chunks(c.text)
            out += [{"problem": it["problem"], "history": ch[:i], "chunk": ch[i]} for i in range(len(ch))]
    return out


def warmup_records(examples: list[dict], family: str = "toy", seed: int = 0,
                   style: str = "cot") -> list[dict]:
    """Format warm-up SFT data for a tiny judge (notebook 04). [not in paper]

    It teaches the output *contract* only: for ``style="cot"`` the analysis (the re-derivation of
    :func:`toy_analysis`) followed by a boxed verdict; for ``"direct"`` the boxed verdict alone;
    for ``"restate"`` (the ``restate_rl`` ablation) an analysis that only restates the chunk
    (:func:`stepwiser_lib.toy.toyworld.restate_text`), in the CoT judge prompt.
    The verdict is drawn at random (50/50, seeded by the example's text), independent of the chunk and of any label (the ``label`` field
    is never read), so the warm-up cannot teach which verdict is right; that is left to RL.
    """
    import random

    from ..core.prompts import judge_prompt

    out = []
    for e in examples:
        rng = random.Random(f"warmup:{seed}:{e['problem']}:{e['chunk']}")
        verdict = rng.choice(("Positive", "Negative"))
        box = f"\\boxed{{{verdict}}}"
        if style == "direct":
            completion = box
        elif style == "restate":
            from ..toy.toyworld import restate_text

            completion = f"{restate_text(e['chunk'])}\n{box}"
        else:
            completion = f"{toy_analysis(e['problem'], e['chunk'])}\n{box}"
        out.append({"prompt": judge_prompt(family, e["problem"], e["history"], e["chunk"],
                                           "cot" if style == "restate" else style),
                    "completion": completion})
    return out


def rsft_select(examples: list[dict], samples: list[list[str]], per_example: int = 1,
                family: str = "toy", style: str = "cot") -> list[dict]:
    """Rejection-sampling fine-tuning data for the "ablate RL" judge (paper §4.3): keep sampled
    judge outputs whose verdict matches the label; at most ``per_example`` distinct ones per
    example, in sample order (deterministic). Returns prompt/completion SFT records."""
    from ..core.prompts import judge_prompt

    out = []
    for e, cands in zip(examples, samples, strict=True):
        kept: list[str] = []
        for c in cands:
            v = parse_verdict(c)
            if v is not None and (v == "Positive") == bool(e["label"]) and c not in kept:
                kept.append(c)
            if len(kept) == per_example:
                break
        out += [{"prompt": judge_prompt(family, e["problem"], e["history"], e["chunk"], style),
                 "completion": c.strip()} for c in kept]
    return out


# ----------------------------------------------------------------------------- inference

class Judge:
    """Batched stepwise judging: ``judge(triples, k)`` for (problem, history, chunk) triples.

    Returns, per triple, the majority ``verdict`` ("Positive"/"Negative"/None when no sample
    parsed), the first sample's ``analysis`` text, and ``score`` = fraction of the ``k`` samples
    judged Positive (k > 1 with temperature > 0 gives Maj@k, paper Table 5).

    It runs on any generator of :mod:`stepwiser_lib.engines.models` (``HFGenerator``, ``VLLMGenerator``):
    :meth:`load` picks the backend. The verdict readout (:meth:`verdict_probs`) needs next-token
    probabilities, which only the HF backend gives; on vLLM it returns None for every output.
    """

    def __init__(self, generator, family: str = "toy", max_new_tokens: int = 96, style: str = "cot"):
        self.gen = generator
        self.family, self.max_new_tokens, self.style = family, max_new_tokens, style

    @classmethod
    def from_model(cls, model, tokenizer, batch_size: int = 128, **kw) -> "Judge":
        """A judge on a model already in memory (e.g. the live model inside GRPO training)."""
        from ..engines.models import HFGenerator

        return cls(HFGenerator(model, tokenizer, batch_size=batch_size), **kw)

    @classmethod
    def load(cls, base: str, adapter: str | None = None, backend: str = "hf", batch_size: int = 128,
             engine: dict | None = None, **kw) -> "Judge":
        """A judge from disk on ``backend`` ("hf" or "vllm"; ``engine``: vLLM's
        :func:`~stepwiser_lib.engines.models.engine_settings`). A LoRA adapter is folded into the weights
        (on vLLM from a merged copy written once beside the adapter)."""
        from ..engines.models import load_model, make_generator, merged_model_dir

        if backend == "vllm":
            path = merged_model_dir(base, adapter) if adapter else base
            return cls(make_generator(path, backend="vllm", **(engine or {})), **kw)
        model, tok = load_model(base, adapter=adapter)
        if adapter:  # inference only: fold LoRA into the weights (faster generation)
            model = model.merge_and_unload()
        return cls.from_model(model, tok, batch_size=batch_size, **kw)

    def close(self) -> None:
        if hasattr(self.gen, "close"):
            self.gen.close()

    def judge(self, triples: list[tuple[str, list[str], str]], k: int = 1,
              temperature: float | None = None, seed: int = 0, progress: bool | str = False,
              seeds: list[int] | None = None) -> list[dict]:
        """``seeds``: one per triple instead of ``seed`` (each triple's samples then depend on it alone)."""
        from ..core.prompts import judge_prompt

        temperature = (0.0 if k == 1 else 1.0) if temperature is None else temperature
        ps = [judge_prompt(self.family, p, h, c, self.style) for p, h, c in triples]
        with _eval_mode(getattr(self.gen, "model", None)):
            outs = self.gen.generate(ps, n=k, temperature=temperature,
                                     max_new_tokens=self.max_new_tokens, seed=seed, progress=progress,
                                     **({"seeds": seeds} if seeds is not None else {}))
        res = []
        for cands in outs:
            vs = [parse_verdict(c.text) for c in cands]
            pos, neg = vs.count("Positive"), vs.count("Negative")
            verdict = None if pos + neg == 0 else ("Positive" if pos > neg else "Negative" if neg > pos
                                                   else vs[next(i for i, v in enumerate(vs) if v)])
            res.append({"verdict": verdict, "analysis": cands[0].text, "score": pos / len(vs),
                        "n_unparsed": len(vs) - pos - neg})
        return res

    def verdict_probs(self, triples: list[tuple[str, list[str], str]], outputs: list[str]) -> list[float | None]:
        """For each judge output, p(Positive) / (p(Positive) + p(Negative)) of the verdict's first
        token right after its last ``\\boxed{``, with the judge's own analysis as context (one
        forward pass, no sampling); None for an output without a box. Shows whether the verdict
        follows the analysis, and gives a score that needs no sampling. [not in paper]"""
        from ..core.prompts import judge_prompt

        res: list[float | None] = [None] * len(outputs)
        if not hasattr(self.gen, "next_token_probs"):  # vLLM: no next-token probabilities here
            return res
        ids = [self.gen.tok.encode(v, add_special_tokens=False)[0] for v in VERDICTS]
        keep = [i for i, o in enumerate(outputs) if "\\boxed{" in o]
        if not keep:
            return res
        ps = [judge_prompt(self.family, *triples[i], self.style) for i in keep]
        cut = [outputs[i][: outputs[i].rfind("\\boxed{") + len("\\boxed{")] for i in keep]
        with _eval_mode(self.gen.model):
            probs = self.gen.next_token_probs(ps, cut, ids)
        for i, (p_pos, p_neg) in zip(keep, probs):
            res[i] = p_pos / (p_pos + p_neg) if p_pos + p_neg > 0 else 0.5
        return res


def _triple(e: dict) -> tuple[str, list[str], str]:
    """The (problem, history, chunk) a judge reads, from a stage-03 judge example."""
    return e["problem"], e["history"], e["chunk"]


class _eval_mode:
    """``model.eval()`` for a block, then the training flag back as it was (a judge may run on the
    live model inside GRPO training); a no-op without a model (vLLM)."""

    def __init__(self, model):
        self.model = model

    def __enter__(self):
        self.was = bool(self.model is not None and self.model.training)
        if self.model is not None:
            self.model.eval()

    def __exit__(self, *exc):
        if self.was:
            self.model.train()


def self_check_yield(judge: "Judge", examples: list[dict], k: int = 4, seed: int = 0) -> dict:
    """What a self-taught warm-up could train on (issue 17, item 5): the judge's own check texts,
    ``k`` sampled per chunk at temperature 1 with the judge prompt, counted by whether they end in
    a parsable verdict and whether that verdict agrees with the Monte-Carlo label. Kept
    STaR-style, the agreeing ones would be a warm-up whose analysis nobody computed from the true
    values. [not in paper: the paper's judges start from instruct models that follow the prompt]"""
    res = judge.judge([_triple(e) for e in examples], k=k, temperature=1.0, seed=seed)
    parsable = agree = 0
    for e, r in zip(examples, res):
        pos = round(r["score"] * k)
        neg = k - r["n_unparsed"] - pos
        parsable += pos + neg
        agree += pos if e["label"] else neg
    return {"chunks": len(examples), "samples": k * len(examples), "parsable": parsable,
            "label_matching": agree, "example": res[0]["analysis"] if res else None}


def verdict_readout(judge: "Judge", examples: list[dict], judged: list[dict]) -> dict:
    """Does the verdict follow the judge's own analysis? (notebook 04) [not in paper]

    Adds ``p_positive`` (see :meth:`Judge.verdict_probs`) to each ``judged`` record and returns
    ``verdict_prob_auc`` (AUC of p_positive against the labels: a sampling-free score) and, for
    toy analyses whose implied verdict is readable (:func:`analysis_implied`):
    ``analysis_faithful`` (% of analyses implying the label), ``readout_auc`` (AUC of p_positive
    against the analysis' own implied verdict: 0.5 means the verdict ignores the analysis, 1.0
    that it reads it perfectly) and the mean p_positive after analyses that imply right/wrong.
    """
    triples = [_triple(e) for e in examples]
    probs = judge.verdict_probs(triples, [j["analysis"] for j in judged])
    for j, p in zip(judged, probs):
        j["p_positive"] = p
    rows = [(p, analysis_implied(j["analysis"]), bool(e["label"]))
            for p, j, e in zip(probs, judged, examples) if p is not None]
    res: dict = {"verdict_prob_auc": score_auc([r[0] for r in rows], [r[2] for r in rows])}
    imp = [r for r in rows if r[1] is not None]
    if imp:
        right = [r[0] for r in imp if r[1]]
        wrong = [r[0] for r in imp if not r[1]]
        res.update(
            analysis_faithful=round(100 * sum(r[1] == r[2] for r in imp) / len(imp), 2),
            readout_auc=score_auc([r[0] for r in imp], [r[1] for r in imp]),
            p_pos_if_analysis_right=round(sum(right) / len(right), 4) if right else None,
            p_pos_if_analysis_wrong=round(sum(wrong) / len(wrong), 4) if wrong else None)
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

def grpo_dataset(examples: list[dict], family: str = "toy", style: str = "cot"):
    """TRL dataset: conversational ``prompt`` (so the chat template is applied) and ``label``."""
    from datasets import Dataset

    from ..core.prompts import judge_prompt

    return Dataset.from_list([{"prompt": [{"role": "user", "content": judge_prompt(
        family, e["problem"], e["history"], e["chunk"], style)}], "label": bool(e["label"])}
        for e in examples])


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
    import random

    rng = random.Random(f"balanced:{seed}")
    pos = [e for e in examples if e["label"]]
    neg = [e for e in examples if not e["label"]]
    rng.shuffle(pos)
    rng.shuffle(neg)
    out: list[dict] = []
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
            raise ValueError(f"verdict {v!r} is {len(t)} tokens in this tokenizer; "
                             "loss_tokens='verdict' needs single-token verdicts")
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
            keep[i, pos[-1]:] = 1
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

    from ..engines import decoding
    from ..engines.models import for_sampling, sampling_half

    class LoopGenerationGRPOTrainer(GRPOTrainer):
        _loop_calls = 0

        def _generate_single_turn(self, prompt_ids, images, multimodal_fields, num_generations, has_tool_images=False):
            runs = group_runs(prompt_ids)
            if self.use_vllm or self.use_transformers_continuous_batching or images or multimodal_fields or runs is None:
                return super()._generate_single_turn(prompt_ids, images, multimodal_fields, num_generations,
                                                     has_tool_images)
            heads, n = runs
            # a fresh stream per call and process, fixed by the run's seed
            seed = (self.args.seed * 1_000_003 + self._loop_calls) * 64 + self.accelerator.process_index
            self._loop_calls += 1
            with (unwrap_model_for_generation(self.model_wrapped, self.accelerator,
                                              gather_deepspeed3_params=self.args.ds3_gather_for_generation,
                                              gradient_checkpointing_kwargs=self.args.gradient_checkpointing_kwargs)
                  as model, torch.no_grad(), self._dist.summon_full_params(self.model_wrapped, recurse=False)):
                rows = decoding.sample(for_sampling(model), heads, n, half=sampling_half(model),
                                       max_new_tokens=self.max_completion_length,
                                       temperature=self.temperature, top_p=self.top_p if self.top_p is not None else 1.0,
                                       eos=list(self.eos_token_ids), seed=seed, batch_size=len(prompt_ids))
            return [r.tokens for group in rows for r in group], None

    return LoopGenerationGRPOTrainer


@launchable
def train_grpo_judge(model_dir: str, train: list[dict], out_dir, settings: dict, *,
                     val: list[dict] | None = None, family: str = "toy", style: str = "cot",
                     format_penalty: float = -1.0, reward_funcs=None, progress: bool = True) -> dict:
    """GRPO on step labels with TRL's ``GRPOTrainer`` (+ PEFT LoRA), paper §3.3/§4.1.

    ``settings`` is a :class:`stepwiser_lib.engines.trainers.GRPOSettings` (or its dict): its
    ``grpo_args`` is the only mapping to TRL's names, and its docstring states the batch
    semantics. Toy-scale options, off in the paper profile: ``loss_tokens="verdict"``
    (:func:`verdict_loss_trainer`), ``balanced_steps`` (:func:`balanced_order`).
    Validation inside training judges the first ``val_limit`` chunks of ``val`` every
    ``eval_every`` GRPO steps on the live model; it is skipped under a multi-process launch,
    where the other ranks would wait in the next collective until the NCCL timeout.
    """
    import time
    from pathlib import Path

    import torch
    from transformers import AutoModelForCausalLM, TrainerCallback

    from ..engines.models import (for_sampling, load_tokenizer, lora_config, neutral_generation_config, release,
                         save_atomically)
    from ..engines.trainers import GRPOSettings, world_size

    s = settings if isinstance(settings, GRPOSettings) else GRPOSettings(**settings)
    t0 = time.time()
    out_dir = Path(out_dir)
    tok = load_tokenizer(model_dir)
    model = AutoModelForCausalLM.from_pretrained(model_dir, dtype=torch.float32)  # fp32 master weights
    neutral_generation_config(model, tok)
    world = world_size()
    args = s.grpo_args(out_dir, world, progress=progress)
    if s.balanced_steps:
        train = balanced_order(train, s.prompts_per_step, s.seed)
    val = (val or [])[: s.val_limit or None] if world == 1 else []
    curve: list[dict] = []

    def validate(model_, step: int) -> None:
        # JUDGE_BATCH chunks at once, and on a GPU under autocast with a half-precision cache
        # (models.sampling_half): the fp32 master weights would otherwise keep an fp32 cache
        j = Judge.from_model(for_sampling(model_), tok, batch_size=s.val_batch, family=family,
                             max_new_tokens=s.max_completion, style=style)
        curve.append({"step": step, **step_accuracy(j.judge([_triple(e) for e in val]), val)})

    class _Val(TrainerCallback):
        def on_step_end(self, a, state, control, **kw):  # state.global_step counts optimizer updates
            if val and s.eval_every and state.global_step % (s.eval_every * s.updates_per_step) == 0:
                validate(trainer.model, state.global_step // s.updates_per_step)

    # A direct-verdict ("no CoT") judge gets the paper's format penalty (§4.3); a CoT judge the
    # plain verdict reward. ``reward_funcs`` overrides both (in-process runs only: a launched
    # job cannot carry functions).
    rewards = reward_funcs or ([make_direct_reward(format_penalty)] if style == "direct"
                               else [verdict_reward])
    trainer_cls = loop_generation_trainer() if s.loss_tokens == "all" else verdict_loss_trainer(tok)
    trainer = trainer_cls(model=model, reward_funcs=rewards, args=args,
                          train_dataset=grpo_dataset(train, family, style), processing_class=tok,
                          peft_config=lora_config(s.lora_r, s.lora_alpha) if s.use_lora else None,
                          callbacks=[_Val()])
    if val and s.eval_every:  # 0: no curve at all (the run's dev score is measured after training)
        validate(trainer.model, 0)
    trainer.train()
    save_dir = out_dir / ("adapter" if s.use_lora else "model")
    if trainer.accelerator.is_main_process:  # one writer under accelerate launch (DDP, ZeRO-2)
        save_atomically(trainer.model, tok, save_dir)
    trainer.accelerator.wait_for_everyone()
    out = {"dir": str(save_dir), "log_history": trainer.state.log_history, "val_curve": curve,
           "seconds": round(time.time() - t0, 1), "steps": trainer.state.global_step // s.updates_per_step,
           "batches": s.batches(world)}
    # The trainer (model, optimizer state, at paper scale TRL's colocated vLLM engine) sits in a
    # reference cycle through the validation callback's closure: drop it here, so the next training
    # run of the same notebook kernel finds the GPU memory (real_path_review_2.md C6).
    del trainer, model
    release()
    return out


# ----------------------------------------------------------------------------- variants (nb 04)

#: Judge variants of paper Tables 5 and 6: ``kind`` -> the paper's row name.
KINDS = {
    "stepwiser": "Generative CoT + RL (StepWiser)",
    "disc_sft": "Discriminative + SFT",
    "no_cot_rl": "Ablate CoT (discriminative format + RL)",
    "no_balance_rl": "Ablate prompt balancing (generative + RL)",
    "rsft": "Ablate RL (use RS-FT)",
    "exact_rl": "Diagnostic: generative + RL on exact-checker labels (toy only)",
    "disc_warmup_sft": "Diagnostic: discriminative + SFT from the generative judge's warm-up (toy only)",
    "restate_rl": "Diagnostic: generative + RL from a warm-up whose analysis only restates the chunk (toy only)",
}
#: The kinds trained by GRPO (:func:`train_variant`'s first branch; the plan counts their runs).
RL_KINDS = ("stepwiser", "no_balance_rl", "no_cot_rl", "exact_rl", "restate_rl")
#: Output format of each kind: a CoT judge, a direct boxed verdict, or a "+"/"-" token.
STYLE = {"stepwiser": "cot", "no_balance_rl": "cot", "rsft": "cot", "no_cot_rl": "direct",
         "disc_sft": "disc", "exact_rl": "cot", "disc_warmup_sft": "disc", "restate_rl": "cot"}
#: The format warm-up each kind starts from on the toy path (None: the initial model itself, as
#: the paper's discriminative baseline does). ``disc_warmup_sft`` starts the discriminative judge
#: from the generative judge's CoT warm-up (the same text seen first: review W3b); ``restate_rl``
#: from a warm-up whose analysis computes nothing (``toyworld.restate_text``).
WARMUP_OF = {"stepwiser": "cot", "no_balance_rl": "cot", "rsft": "cot", "exact_rl": "cot", "disc_sft": None,
             "no_cot_rl": "direct", "restate_rl": "restate", "disc_warmup_sft": "cot"}


def parse_variant(name: str) -> tuple[str, str]:
    """``"stepwiser:rel_ratio"`` -> ``("stepwiser", "rel_ratio")``, with clear errors."""
    from .labelling import RULES

    if not isinstance(name, str):
        raise ValueError(f"bad judge variant {name!r}: use KIND:RULE strings, not a {type(name).__name__}")
    kind, sep, rule = name.partition(":")
    if not sep or kind not in KINDS or rule not in RULES:
        raise ValueError(f"bad judge variant {name!r}: use KIND:RULE with KIND in "
                         f"{', '.join(KINDS)} and RULE in {', '.join(RULES)}")
    return kind, rule


#: The registry name of the format-warm-up judge (notebook 04's ``start_entry``).
WARMUP_NAME = "warm-up (before RL)"


def parse_judge_name(name: str) -> str:
    """A notebook 04 registry name as notebooks 05-07 select judges by: ``"all"``, the warm-up
    judge, a variant (``"stepwiser:rel_ratio"``) or a repeat seed of one (``"...@seed1"``)."""
    if name in ("all", WARMUP_NAME):
        return name
    base, at, seed = name.partition("@seed") if isinstance(name, str) else (name, "", "")
    if at and not seed.isdigit():
        raise ValueError(f"bad judge name {name!r}: a repeat seed is written VARIANT@seedN")
    try:
        parse_variant(base)
    except ValueError:
        raise ValueError(f"bad judge name {name!r}: use all, {WARMUP_NAME!r}, KIND:RULE or KIND:RULE@seedN") from None
    return name


def variant_slug(name: str) -> str:
    return name.replace(":", "__")


def chunk_truth(example: dict) -> bool | None:
    """Toy world only: is the chunk's arithmetic actually right (exact step checker)? A yardstick
    independent of the noisy Monte-Carlo labels; None when the problem is not a toy problem."""
    from ..toy.toyworld import check_step, parse_problem

    try:
        return bool(check_step(parse_problem(example["problem"]), example["chunk"]).ok)
    except (ValueError, KeyError):
        return None


def score_auc(scores: list[float], labels: list[bool]) -> float | None:
    """Area under the ROC curve of judge scores against labels (ties count one half): the chance
    that a Positive-labelled step scores above a Negative one. Unlike balanced accuracy at one
    cut-off it does not move with a judge's overall Positive rate. None without both classes."""
    pos = [s for s, lab in zip(scores, labels) if lab]
    neg = [s for s, lab in zip(scores, labels) if not lab]
    if not pos or not neg:
        return None
    wins = sum((p > n) + 0.5 * (p == n) for p in pos for n in neg)
    return round(wins / (len(pos) * len(neg)), 4)


def evaluate_judge(judge, examples: list[dict], k: int = 1, seed: int = 0,
                   auc_k: int = 0, readout: bool = False) -> tuple[dict, list[dict]]:
    """Validation metrics of a judge on labelled examples (balanced set -> balanced accuracy),
    plus, where the exact step checker applies, balanced accuracy against arithmetic truth.
    With ``auc_k`` > 0 also ``score_auc`` (and ``truth_score_auc``): the AUC of the fraction of
    ``auc_k`` sampled verdicts that are Positive (Maj@k score, paper Table 5), a measure of how
    well the judge tells steps apart whatever its Positive rate. With ``readout`` (generative
    judges only) also :func:`verdict_readout`'s metrics. [not in paper]"""
    triples = [_triple(e) for e in examples]
    judged = judge.judge(triples, k=k, seed=seed)
    res = step_accuracy(judged, examples)
    truth = [chunk_truth(e) for e in examples]
    has_truth = bool(examples) and all(t is not None for t in truth)
    if has_truth:
        res["truth_balanced_acc"] = step_accuracy(
            judged, [{**e, "label": t} for e, t in zip(examples, truth)])["balanced_acc"]
    if auc_k and examples:
        scores = [j["score"] for j in judge.judge(triples, k=auc_k, temperature=1.0, seed=seed)]
        res["score_auc"] = score_auc(scores, [bool(e["label"]) for e in examples])
        if has_truth:
            res["truth_score_auc"] = score_auc(scores, truth)
    if readout and hasattr(judge, "verdict_probs") and examples:
        res.update(verdict_readout(judge, examples, judged))
    return res, judged


def load_judge(entry: dict, family: str = "toy", max_new_tokens: int = 64, batch_size: int = 128,
               backend: str = "hf", engine: dict | None = None):
    """A trained judge from its registry entry (``style``, ``base``, optional ``adapter``). A
    direct-verdict judge reads only a box, so it keeps the output limit it was trained with
    (``entry["max_new_tokens"]``) whatever ``max_new_tokens`` says. Generative judges run on
    ``backend`` ("hf" or "vllm", with ``engine`` settings); a discriminative judge reads
    next-token logits and always runs on HF."""
    if entry["style"] == "direct":
        max_new_tokens = entry.get("max_new_tokens", max_new_tokens)
    if entry["style"] == "disc":
        from .discriminative import DiscJudge

        return DiscJudge.load(entry["base"], batch_size=batch_size)
    j = Judge.load(entry["base"], entry.get("adapter"), backend=backend, batch_size=batch_size,
                   engine=engine, family=family, max_new_tokens=max_new_tokens, style=entry["style"])
    return j


def recipe_from_config(cfg) -> dict:
    """Every training setting of notebook 04's judge variants, typed, from its config: the GRPO
    judges (:class:`~stepwiser_lib.engines.trainers.GRPOSettings`), the discriminative judge and the RS-FT
    judge (:class:`~stepwiser_lib.engines.trainers.SFTSettings`, ``DISC_*`` and ``RSFT_*``; both read
    ``JUDGE_MAX_LENGTH``), and the few per-kind values. Fails on a missing parameter."""
    from ..engines.trainers import GRPOSettings, SFTSettings

    return {"rl": GRPOSettings.from_config(cfg),
            "disc": SFTSettings.from_config(cfg, "DISC", use_lora=False, max_length=cfg.JUDGE_MAX_LENGTH),
            "rsft": SFTSettings.from_config(cfg, "RSFT", max_length=cfg.JUDGE_MAX_LENGTH),
            "rsft_samples": cfg.RSFT_SAMPLES, "rsft_per_example": cfg.RSFT_PER_EXAMPLE,
            "direct_max_completion": cfg.DIRECT_MAX_COMPLETION, "format_penalty": cfg.FORMAT_PENALTY}


def recipe_key(kind: str, recipe: dict) -> dict:
    """The part of :func:`recipe_from_config`'s recipe that ``kind`` trains with: what its cache
    key hashes (notebook 04), so that changing the discriminative judge's settings does not
    retrain the GRPO judges, and the other way round."""
    if STYLE[kind] == "disc":
        return {"disc": recipe["disc"]}
    if kind == "rsft":  # samples from the warm-up with the RL judge's temperature and output limit
        return {k: recipe[k] for k in ("rl", "rsft", "rsft_samples", "rsft_per_example")}
    return {k: recipe[k] for k in ("rl", "direct_max_completion", "format_penalty")}


def train_variant(name: str, data: dict, out_dir, *, base_model: str, warmups: dict,
                  recipe: dict, family: str = "toy", seed: int = 0, progress: bool = True) -> dict:
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
    import time
    from pathlib import Path

    kind, rule = parse_variant(name)
    out_dir = Path(out_dir)
    d = data[rule]
    val = d["dev_balanced"]
    style = STYLE[kind]
    entry = {"name": name, "kind": kind, "rule": rule, "style": style, "row": KINDS[kind]}
    rl = recipe["rl"].with_(seed=seed,
                            # the no-balancing ablation keeps its lopsided label mix in every step too
                            balanced_steps=recipe["rl"].balanced_steps and kind != "no_balance_rl")
    if kind in RL_KINDS:
        start = warmups.get(WARMUP_OF[kind]) or base_model
        train = d["train_unbalanced"] if kind == "no_balance_rl" else d["train_balanced"]
        if kind == "exact_rl":  # the same chunks, labelled by the exact step checker instead of MC
            train = [{**e, "label": chunk_truth(e)} for e in train]
            if any(e["label"] is None for e in train):
                raise ValueError("exact_rl needs toy-world problems (an exact step checker)")
        if kind == "no_cot_rl":
            rl = rl.with_(max_completion=recipe["direct_max_completion"])
        entry["max_new_tokens"] = rl.max_completion  # what later notebooks judge with (direct: a box)
        r = train_grpo_judge(start, train, out_dir, rl, val=val, family=family, style=style,
                             format_penalty=recipe["format_penalty"], progress=progress)
        entry.update(base=start if rl.use_lora else r["dir"], adapter=r["dir"] if rl.use_lora else None)
        rec = {"seconds": r["seconds"], "steps": r["steps"], "train_examples": len(train),
               "log_history": r["log_history"], "val_curve": r["val_curve"], "batches": r["batches"]}
    elif kind in ("disc_sft", "disc_warmup_sft"):
        from .discriminative import train_disc_judge

        start = warmups.get(WARMUP_OF[kind]) or base_model
        r = train_disc_judge(start, d["train_balanced"], out_dir, recipe["disc"].with_(seed=seed),
                             progress=progress)
        entry.update(base=r["model_dir"], adapter=None)
        rec = {"seconds": r["seconds"], "steps": r["steps"], "train_examples": r["records"],
               "loss_curve": r["loss_curve"]}
    else:  # rsft: sample analyses from the warm-up judge, keep label-matching ones, SFT
        from ..engines.models import load_model, release
        from ..engines.sft import sft

        t0 = time.time()
        start = warmups.get("cot") or base_model
        train = d["train_balanced"]
        model, tok = load_model(start)
        j = Judge.from_model(model, tok, family=family, max_new_tokens=rl.max_completion, style="cot")
        ps = [judge_prompt_of(e, family, "cot") for e in train]
        outs = j.gen.generate(ps, n=recipe["rsft_samples"], temperature=rl.temperature,
                              max_new_tokens=rl.max_completion, seed=seed, progress=progress)
        del model
        release(j.gen)  # the sampling judge's weights leave the GPU before SFT (finding 23)
        recs = rsft_select(train, [[c.text for c in o] for o in outs], recipe["rsft_per_example"],
                           family, "cot")
        unparsed = sum(parse_verdict(c.text) is None for o in outs for c in o)  # never kept (verdicts.RULE)
        if not recs:
            raise RuntimeError(f"{name}: no sampled judge output matched a label ({unparsed} of "
                               f"{len(train) * recipe['rsft_samples']} had no parsable verdict); nothing to fine-tune on")
        r = sft(start, recs, out_dir, recipe["rsft"].with_(seed=seed), progress=progress)
        entry.update(base=r["model_dir"], adapter=None)
        rec = {"seconds": round(time.time() - t0, 1), "steps": r["steps"],
               "train_examples": len(train), "rsft_kept": len(recs),
               "rsft_sampled": len(train) * recipe["rsft_samples"], "rsft_unparsed": unparsed,
               "loss_curve": r["loss_curve"]}
    return {"entry": entry, "train": rec}


def judge_prompt_of(example: dict, family: str = "toy", style: str = "cot") -> str:
    from ..core.prompts import judge_prompt

    return judge_prompt(family, example["problem"], example["history"], example["chunk"], style)
