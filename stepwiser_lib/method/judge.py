"""Stage 4: the stepwise judges (paper §3.3, §4.1, §4.3; Tables 5 and 6), notebook 04.

The generative judge reads (problem, history, new chunk) with the Table 3 prompt, writes an
analysis, and ends with ``\\boxed{Positive}`` or ``\\boxed{Negative}``. The RL reward is 1 if the
boxed verdict matches the Monte-Carlo label and 0 otherwise (no format bonus for the CoT judge).
This module holds the output contract and rewards, the :class:`Judge` (HF or vLLM) and its loading
from notebook 04's registry (:func:`load_judge`, :func:`loader`), the warm-up's input chunks
(:func:`policy_chunks`) and the evaluation of a judge on labelled chunks. Training and the variants of
Tables 5/6 are in :mod:`stepwiser_lib.method.judge_train`; the discriminative baseline in
:mod:`stepwiser_lib.method.discriminative`.
"""

from __future__ import annotations

import json
import os
import warnings
from dataclasses import dataclass

from ..core import paths
from ..core.chunks import parse_chunks
from ..core.prompts import EMPTY_HISTORY, HISTORY_JOIN, fill_judge, get, judge_prompt, judge_template

# The verdict format and the one rule for an output without one (stepwiser_lib.core.verdicts.RULE)
from ..core.verdicts import (  # noqa: F401  (judge.parse_verdict: what a judge's output is read with)
    RULE,
    VERDICT_FLAGS,
    VERDICT_PATTERN,
    VERDICTS,
    parse_verdict,
)
from . import tasks
from .discriminative import FIRST_TURN, LATER_TURN, VERDICT_TOKEN, DiscJudge


def verdict_reward(completions: list, label: list | None = None, labels: list | None = None, **kwargs) -> list[float]:
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

    def direct_reward(
        completions: list, label: list | None = None, labels: list | None = None, **kwargs
    ) -> list[float]:
        base = verdict_reward(completions, label=label, labels=labels)
        texts = [c[-1]["content"] if isinstance(c, list) else c for c in completions]
        return [r if is_direct_format(t) else format_penalty for r, t in zip(base, texts)]

    return direct_reward


def policy_chunks(
    policy_dir: str,
    items: list[dict],
    samples: int,
    family: str = "toy",
    seed: int = 0,
    max_new_tokens: int = 160,
    batch_size: int = 128,
) -> list[dict]:
    """(problem, history, chunk) triples from the chunk policy's own samples on ``items``.

    Input text for the judge's format warm-up (notebook 04): chunks written the way the judge
    will see them, on problems disjoint from the labelled ones, with no label attached. [not in paper]
    """
    from ..engines.models import HFGenerator, load_model  # lazy: torch

    model, tok = load_model(policy_dir)
    gen = HFGenerator(model, tok, batch_size=batch_size)
    tmpl = get(family, "chunk_policy")
    outs = gen.generate(
        [tmpl.format(problem=it["problem"]) for it in items],
        n=samples,
        temperature=1.0,
        max_new_tokens=max_new_tokens,
        seed=seed,
    )
    out = []
    for it, cands in zip(items, outs):
        for c in cands:
            ch = parse_chunks(c.text)
            out += [{"problem": it["problem"], "history": ch[:i], "chunk": ch[i]} for i in range(len(ch))]
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

    def __init__(
        self, generator, family: str = "toy", max_new_tokens: int = 96, style: str = "cot", template: str | None = None
    ):
        """``template``: the judge prompt with its three slots (an exported judge's own, from its
        ``stepwiser_judge.json``); None: the library's template of ``family`` and ``style``."""
        self.gen = generator
        self.family, self.max_new_tokens, self.style = family, max_new_tokens, style
        self.template = template or judge_template(family, style)

    def prompt(self, problem: str, history: list[str], chunk: str) -> str:
        """The judge's prompt for one step (:func:`stepwiser_lib.core.prompts.fill_judge`)."""
        return fill_judge(self.template, problem, history, chunk)

    @classmethod
    def from_model(cls, model, tokenizer, batch_size: int = 128, **kw) -> Judge:
        """A judge on a model already in memory (e.g. the live model inside GRPO training)."""
        from ..engines.models import HFGenerator  # lazy: torch

        return cls(HFGenerator(model, tokenizer, batch_size=batch_size), **kw)

    @classmethod
    def load(
        cls,
        base: str,
        adapter: str | None = None,
        backend: str = "hf",
        batch_size: int = 128,
        engine: dict | None = None,
        device: str = "auto",
        **kw,
    ) -> Judge:
        """A judge from disk on ``backend`` ("hf" or "vllm"; ``engine``: vLLM's
        :func:`~stepwiser_lib.engines.models.engine_settings`). A LoRA adapter is folded into the weights
        (on vLLM from a merged copy written once beside the adapter). ``device``: where an HF judge's
        weights go ("auto": the GPU when there is one, else the CPU; "cuda:1" under a launcher's rank 1);
        vLLM places its engine itself.

        ``base`` may be a judge exported by ``python -m stepwiser_lib.export`` (a folder or hub id
        with ``stepwiser_judge.json``, its contract: :func:`judge_contract`): its prompt template,
        output style and output limit then come from that file unless given here (a ``family`` or
        ``style`` given here prompts with the library's template of them), and a discriminative
        judge loads as :class:`~stepwiser_lib.method.discriminative.DiscJudge` (the same ``judge``
        call)::

            j = Judge.load("exports/tiny/judges/stepwiser__rel_ratio")
            j.judge([(problem, previous_chunks, new_chunk)])  # [{"verdict": "Positive", "analysis": ..., "score": 1.0}]

        An export made before the contract (no ``contract_version``) is prompted with the library's
        copy of its prompt family's template, with a warning that says so. A ``base`` that cannot be
        read fails with the reason: a missing folder, an unreadable ``stepwiser_judge.json``, a hub
        id the hub does not answer for (:func:`exported_judge`).
        """
        from ..engines.models import load_model, make_generator, merged_model_dir  # lazy: torch

        meta = exported_judge(base) if adapter is None else None
        if meta:
            if meta["style"] == "disc":
                j = DiscJudge.load(base, batch_size=batch_size, device=device)
                _check_token_ids(meta, j.ids, base)
                return j
            own = not ({"family", "style"} & set(kw))  # the judge's own prompt, unless the call names another
            kw = {
                "family": meta["prompt_family"],
                "max_new_tokens": meta["max_new_tokens"],
                "style": meta["style"],
                **({"template": contract_template(meta, base)} if own else {}),
                **kw,
            }

        if backend == "vllm":
            path = merged_model_dir(base, adapter) if adapter else base
            return cls(make_generator(path, backend="vllm", **(engine or {})), **kw)
        model, tok = load_model(base, adapter=adapter, device=device)
        if adapter:  # inference only: fold LoRA into the weights (faster generation)
            model = model.merge_and_unload()
        return cls.from_model(model, tok, batch_size=batch_size, **kw)

    def close(self) -> None:
        if hasattr(self.gen, "close"):
            self.gen.close()

    def judge(
        self,
        triples: list[tuple[str, list[str], str]],
        k: int = 1,
        temperature: float | None = None,
        seed: int = 0,
        progress: bool | str = False,
        seeds: list[int] | None = None,
        samples: bool = False,
    ) -> list[dict]:
        """``seeds``: one per triple instead of ``seed`` (each triple's samples then depend on it alone).
        ``samples``: each result also keeps every sampled output (``samples``, ``k`` texts), not only
        the first (``analysis``).
        Prompts longer than the judge's context (its ``max_position_embeddings`` less the output
        limit) are judged, with a warning that says how many: their verdicts are unreliable."""
        if not isinstance(k, int) or isinstance(k, bool) or k < 1:
            raise ValueError(f"k = {k!r}: the samples per chunk, at least 1")
        temperature = (0.0 if k == 1 else 1.0) if temperature is None else temperature
        ps = [self.prompt(p, h, c) for p, h, c in triples]
        self._warn_context(ps)
        with _eval_mode(getattr(self.gen, "model", None)):
            outs = self.gen.generate(
                ps,
                n=k,
                temperature=temperature,
                max_new_tokens=self.max_new_tokens,
                seed=seed,
                progress=progress,
                **({"seeds": seeds} if seeds is not None else {}),
            )
        res = []
        for cands in outs:
            vs = [parse_verdict(c.text) for c in cands]
            pos, neg = vs.count("Positive"), vs.count("Negative")
            verdict = (
                None
                if pos + neg == 0
                else (
                    "Positive" if pos > neg else "Negative" if neg > pos else vs[next(i for i, v in enumerate(vs) if v)]
                )
            )
            res.append(
                {
                    "verdict": verdict,
                    "analysis": cands[0].text,
                    "score": pos / len(vs),
                    "n_unparsed": len(vs) - pos - neg,
                    **({"samples": [c.text for c in cands]} if samples else {}),
                }
            )
        return res

    def _warn_context(self, prompts: list[str]) -> None:
        """Warn, with the count, when prompts (plus the output limit) pass the judge's context
        (issue 49: a 60-chunk completion was judged silently past a 512-position model)."""
        model, tok = getattr(self.gen, "model", None), getattr(self.gen, "tok", None)
        limit = getattr(getattr(model, "config", None), "max_position_embeddings", None)
        if not limit or tok is None or not prompts:
            return
        lengths = [len(x) for x in tok(prompts, add_special_tokens=False)["input_ids"]]
        over = sum(n + self.max_new_tokens > limit for n in lengths)
        if over:
            warnings.warn(
                f"{over} of {len(prompts)} judge prompts (longest {max(lengths)} tokens) plus the output limit "
                f"({self.max_new_tokens}) pass the judge's context of {limit} positions: their verdicts are "
                "unreliable (long histories: judge shorter solutions, or a judge with a longer context)",
                stacklevel=3,
            )

    def verdict_probs(self, triples: list[tuple[str, list[str], str]], outputs: list[str]) -> list[float | None]:
        """For each judge output, p(Positive) / (p(Positive) + p(Negative)) of the verdict's first
        token right after its last ``\\boxed{``, with the judge's own analysis as context (one
        forward pass, no sampling); None for an output without a box. Shows whether the verdict
        follows the analysis, and gives a score that needs no sampling. [not in paper]"""
        res: list[float | None] = [None] * len(outputs)
        if not hasattr(self.gen, "next_token_probs"):  # vLLM: no next-token probabilities here
            return res
        ids = [self.gen.tok.encode(v, add_special_tokens=False)[0] for v in VERDICTS]
        keep = [i for i, o in enumerate(outputs) if "\\boxed{" in o]
        if not keep:
            return res
        ps = [self.prompt(*triples[i]) for i in keep]
        cut = [outputs[i][: outputs[i].rfind("\\boxed{") + len("\\boxed{")] for i in keep]
        with _eval_mode(self.gen.model):
            probs = self.gen.next_token_probs(ps, cut, ids)
        for i, (p_pos, p_neg) in zip(keep, probs):
            res[i] = p_pos / (p_pos + p_neg) if p_pos + p_neg > 0 else 0.5
        return res


def triple(e: dict) -> tuple[str, list[str], str]:
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


def self_check_yield(judge: Judge, examples: list[dict], k: int = 4, seed: int = 0) -> dict:
    """What a self-taught warm-up could train on (issue 17, item 5): the judge's own check texts,
    ``k`` sampled per chunk at temperature 1 with the judge prompt, counted by whether they end in
    a parsable verdict and whether that verdict agrees with the Monte-Carlo label. Kept
    STaR-style, the agreeing ones would be a warm-up whose analysis nobody computed from the true
    values. [not in paper: the paper's judges start from instruct models that follow the prompt]"""
    res = judge.judge([triple(e) for e in examples], k=k, temperature=1.0, seed=seed)
    parsable = agree = 0
    for e, r in zip(examples, res):
        pos = round(r["score"] * k)
        neg = k - r["n_unparsed"] - pos
        parsable += pos + neg
        agree += pos if e["label"] else neg
    return {
        "chunks": len(examples),
        "samples": k * len(examples),
        "parsable": parsable,
        "label_matching": agree,
        "example": res[0]["analysis"] if res else None,
    }


def verdict_readout(judge: Judge, examples: list[dict], judged: list[dict]) -> dict:
    """Does the verdict follow the judge's own analysis? (notebook 04) [not in paper]

    Adds ``p_positive`` (see :meth:`Judge.verdict_probs`) to each ``judged`` record and returns
    ``verdict_prob_auc`` (AUC of p_positive against the labels: a sampling-free score) and, for
    toy analyses whose implied verdict is readable (:func:`stepwiser_lib.method.tasks.analysis_verdict`):
    ``analysis_faithful`` (% of analyses implying the label), ``readout_auc`` (AUC of p_positive
    against the analysis' own implied verdict: 0.5 means the verdict ignores the analysis, 1.0
    that it reads it perfectly) and the mean p_positive after analyses that imply right/wrong.
    """
    triples = [triple(e) for e in examples]
    probs = judge.verdict_probs(triples, [j["analysis"] for j in judged])
    for j, p in zip(judged, probs):
        j["p_positive"] = p
    rows = [
        (p, tasks.analysis_verdict(j["analysis"]), bool(e["label"]))
        for p, j, e in zip(probs, judged, examples)
        if p is not None
    ]
    res: dict = {"verdict_prob_auc": score_auc([r[0] for r in rows], [r[2] for r in rows])}
    imp = [r for r in rows if r[1] is not None]
    if imp:
        right = [r[0] for r in imp if r[1]]
        wrong = [r[0] for r in imp if not r[1]]
        res.update(
            analysis_faithful=round(100 * sum(r[1] == r[2] for r in imp) / len(imp), 2),
            readout_auc=score_auc([r[0] for r in imp], [r[1] for r in imp]),
            p_pos_if_analysis_right=round(sum(right) / len(right), 4) if right else None,
            p_pos_if_analysis_wrong=round(sum(wrong) / len(wrong), 4) if wrong else None,
        )
    return res


def step_accuracy(judged: list[dict], examples: list[dict]) -> dict:
    """Validation step accuracy against the labels; on a balanced set this is balanced accuracy.
    An unparsed verdict counts as wrong."""
    n = len(examples)
    if not n:
        return {"n": 0}
    hit = [
        (j["verdict"] == "Positive") == bool(e["label"]) and j["verdict"] is not None for j, e in zip(judged, examples)
    ]
    pos = [e for e in examples if e["label"]]
    acc_pos = sum(h for h, e in zip(hit, examples) if e["label"]) / max(1, len(pos))
    acc_neg = sum(h for h, e in zip(hit, examples) if not e["label"]) / max(1, n - len(pos))
    return {
        "n": n,
        "acc": round(100 * sum(hit) / n, 2),
        "balanced_acc": round(50 * (acc_pos + acc_neg), 2),
        "positive_rate": round(100 * sum(j["verdict"] == "Positive" for j in judged) / n, 2),
        "unparsed": round(100 * sum(j["verdict"] is None for j in judged) / n, 2),
    }


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


def evaluate_judge(
    judge, examples: list[dict], k: int = 1, seed: int = 0, auc_k: int = 0, readout: bool = False
) -> tuple[dict, list[dict]]:
    """Validation metrics of a judge on labelled examples (balanced set -> balanced accuracy),
    plus, where the exact step checker applies, balanced accuracy against arithmetic truth.
    With ``auc_k`` > 0 also ``score_auc`` (and ``truth_score_auc``): the AUC of the fraction of
    ``auc_k`` sampled verdicts that are Positive (Maj@k score, paper Table 5), a measure of how
    well the judge tells steps apart whatever its Positive rate. With ``readout`` (generative
    judges only) also :func:`verdict_readout`'s metrics. [not in paper]"""
    triples = [triple(e) for e in examples]
    judged = judge.judge(triples, k=k, seed=seed)
    res = step_accuracy(judged, examples)
    truth = [tasks.step_truth(e) for e in examples]
    has_truth = bool(examples) and all(t is not None for t in truth)
    if has_truth:
        res["truth_balanced_acc"] = step_accuracy(judged, [{**e, "label": t} for e, t in zip(examples, truth)])[
            "balanced_acc"
        ]
    if auc_k and examples:
        scores = [j["score"] for j in judge.judge(triples, k=auc_k, temperature=1.0, seed=seed)]
        res["score_auc"] = score_auc(scores, [bool(e["label"]) for e in examples])
        if has_truth:
            res["truth_score_auc"] = score_auc(scores, truth)
    if readout and hasattr(judge, "verdict_probs") and examples:
        res.update(verdict_readout(judge, examples, judged))
    return res, judged


#: The file an exported judge carries (:mod:`stepwiser_lib.tools.export`): how to prompt and read it.
EXPORTED_JUDGE = "stepwiser_judge.json"
#: What :meth:`Judge.load` reads from it.
EXPORTED_FIELDS = ("style", "prompt_family", "max_new_tokens")
#: The version of the contract ``stepwiser_judge.json`` carries (:func:`judge_contract`; its schema:
#: ``data/README.md``, "Exported judges"). 1: the prompt template, history rule, decoding settings
#: and verdict pattern (issue 50); an export without the field was made before them.
CONTRACT_VERSION = 1


def judge_contract(
    style: str,
    family: str,
    max_new_tokens: int,
    *,
    verdict_token_ids: dict | None = None,
    end_token_ids: list[int] | None = None,
) -> dict:
    """What a judge needs to be run without this library: the ``prompt`` (the exact template with
    its slots, the history rule, the chat template around it), the ``decoding`` settings (greedy for
    one verdict; ``k`` samples at temperature 1 for Maj@k, majority vote) and the ``verdict``
    (:data:`~stepwiser_lib.core.verdicts.VERDICT_PATTERN`, or, for a discriminative judge
    (``style="disc"``), its ``+``/``-`` token ids, ``verdict_token_ids``); ``end_token_ids``: the
    ids that end an output. ``stepwiser_judge.json`` holds it beside the judge's name, rule and
    profile; :meth:`Judge.load` reads its template."""
    chat = (
        "the prompt is the one user message of the tokenizer's chat template, with its generation "
        "prompt (apply_chat_template(..., add_generation_prompt=True)), tokenized without added special tokens"
    )
    if style == "disc":
        if not verdict_token_ids:
            raise ValueError("a discriminative judge's contract needs its + and - token ids")
        return {
            "contract_version": CONTRACT_VERSION,
            "prompt": {
                "conversation": "RLHFlow's: one user turn per step, the first with the problem; each earlier "
                "step answered by the assistant with history_reply; the verdict is the next token after the "
                "last user turn (the chat template's generation prompt)",
                "first_turn": FIRST_TURN,
                "later_turn": LATER_TURN,
                "history_reply": VERDICT_TOKEN[True],
                "chat_template": chat,
            },
            "decoding": {"reads": "the logits of the next token after the generation prompt; nothing is generated"},
            "verdict": {
                "token_ids": {sym: int(verdict_token_ids[sym]) for sym in VERDICT_TOKEN.values()},
                "score": "softmax over the two tokens' logits: p(+)",
                "threshold": 0.5,
                "rule": "Positive when the score is at least the threshold, else Negative",
            },
        }
    return {
        "contract_version": CONTRACT_VERSION,
        "prompt": {
            "template": judge_template(family, style),
            "slots": ["problem", "history", "chunk"],
            "format": "Python str.format: {problem}, {history} and {chunk} are filled; {{ and }} are literal braces",
            "history_join": HISTORY_JOIN,
            "empty_history": EMPTY_HISTORY,
            "history_rule": "the chunks before the new one, joined by history_join; empty_history when there are none",
            "chat_template": chat,
        },
        "decoding": {
            "k": 1,
            "temperature": 0.0,
            "greedy": True,
            "max_new_tokens": int(max_new_tokens),
            "maj_k_temperature": 1.0,
            "maj_k": "k > 1 samples at maj_k_temperature; the verdict is the majority of the parsed ones (a tie: "
            "the first parsed sample's), the score the share that are Positive",
            "end": "generation_config.json's eos_token_id (every end id of the model); no other sampling default",
            **({"end_token_ids": [int(i) for i in end_token_ids]} if end_token_ids else {}),
        },
        "verdict": {
            "pattern": VERDICT_PATTERN,
            "flags": list(VERDICT_FLAGS),
            "group": 1,
            "values": list(VERDICTS),
            "read": "re.search(pattern, output, flags); group 1 capitalised is the verdict; no match is no verdict",
            "no_verdict": RULE,
        },
    }


def contract_template(meta: dict, where: str) -> str | None:
    """The prompt template of an exported judge's ``stepwiser_judge.json`` (``meta``), or None, with a
    warning that names the fallback, for an export made before the contract carried it."""
    template = (meta.get("prompt") or {}).get("template") if meta.get("contract_version") else None
    if template is None:
        warnings.warn(
            f"{where}: its {EXPORTED_JUDGE} carries no prompt template (exported before contract_version "
            f"{CONTRACT_VERSION}): prompting it with this library's copy of the {meta['prompt_family']!r} "
            f"{meta['style']} judge prompt; export it again to carry its own",
            stacklevel=3,
        )
    return template


def _check_token_ids(meta: dict, ids: dict[bool, int], where: str) -> None:
    """A discriminative judge's ``+``/``-`` ids must be the ones its contract names."""
    want = ((meta.get("verdict") or {}).get("token_ids")) if meta.get("contract_version") else None
    have = {VERDICT_TOKEN[lab]: i for lab, i in ids.items()}
    if want and {k: int(v) for k, v in want.items()} != have:
        raise ValueError(
            f"{where}: its tokenizer reads + and - as {have}, but its {EXPORTED_JUDGE} says {want}; export it again"
        )


def exported_judge(path: str) -> dict | None:
    """The ``stepwiser_judge.json`` of an exported judge (a local folder, or a hub id whose repository
    has one), or None for any other model (a folder, or a hub repository, without one).

    Raises with the reason when ``path`` cannot be read: an unreadable or incomplete file, a contract
    newer than this library's, a hub id the hub does not answer for (no such repository, no access,
    no network and nothing in the cache). Offline, a model the cache holds without the file loads as
    a plain model, with a warning."""
    local = os.path.join(path, EXPORTED_JUDGE)
    if os.path.isdir(path):
        return _read_exported(local, local) if os.path.isfile(local) else None
    if path.count("/") != 1 or path.startswith((".", "/", "~")):
        return None  # not a hub id: the model loader names the missing folder
    from huggingface_hub import _CACHED_NO_EXIST, hf_hub_download, try_to_load_from_cache
    from huggingface_hub.errors import EntryNotFoundError, LocalEntryNotFoundError

    try:
        file = hf_hub_download(path, EXPORTED_JUDGE)
    except LocalEntryNotFoundError as e:  # offline or unreachable, and not in the cache
        if try_to_load_from_cache(path, EXPORTED_JUDGE) is _CACHED_NO_EXIST:
            return None  # the hub said before that this repository has none: a plain model
        if isinstance(try_to_load_from_cache(path, "config.json"), str):
            warnings.warn(
                f"{path}: the hub cannot be reached ({_reason(e)}) and the cache holds the model but no "
                f"{EXPORTED_JUDGE}: loading it as a plain model, prompted as the call says",
                stacklevel=3,
            )
            return None
        raise OSError(
            f"cannot load the judge {path!r}: no local folder of that name, and the hub cannot be reached and "
            f"the cache does not hold it ({_reason(e)})"
        ) from None
    except EntryNotFoundError:  # the repository exists and has no such file: a plain model
        return None
    except Exception as e:  # no such repository, gated, no access, a network or hub error
        raise OSError(
            f"cannot load the judge {path!r}: no local folder of that name, and the hub answered {_reason(e)}"
        ) from None
    return _read_exported(file, f"{path}/{EXPORTED_JUDGE}")


def _reason(e: Exception) -> str:
    first = (str(e).strip().splitlines() or [""])[0][:200]
    return f"{type(e).__name__}: {first}" if first else type(e).__name__


def _read_exported(file: str, where: str) -> dict:
    """``stepwiser_judge.json`` read and checked: its fields, and the contract of its version."""
    try:
        with open(file) as f:
            meta = json.load(f)
    except (ValueError, OSError) as e:
        raise ValueError(f"{where}: not a whole JSON file ({e}); export the judge again") from None
    missing = [k for k in EXPORTED_FIELDS if not isinstance(meta, dict) or k not in meta]
    if missing:
        raise ValueError(f"{where}: missing {', '.join(missing)}; export the judge again")
    version = meta.get("contract_version")
    if version is None:
        return meta
    if not isinstance(version, int) or version > CONTRACT_VERSION:
        raise ValueError(
            f"{where}: contract_version {version!r}, newer than this library's {CONTRACT_VERSION}: "
            "update stepwiser-companion to load it"
        )
    if meta["style"] == "disc":
        ids = (meta.get("verdict") or {}).get("token_ids")
        if not isinstance(ids, dict) or set(ids) != set(VERDICT_TOKEN.values()):
            raise ValueError(f"{where}: a discriminative judge's contract needs verdict.token_ids of + and -")
        return meta
    template = (meta.get("prompt") or {}).get("template")
    if not isinstance(template, str) or any(
        "{" + slot + "}" not in template for slot in ("problem", "history", "chunk")
    ):
        raise ValueError(f"{where}: prompt.template must hold the slots {{problem}}, {{history}} and {{chunk}}")
    return meta


def load_judge(
    entry: dict,
    family: str = "toy",
    max_new_tokens: int = 64,
    batch_size: int = 128,
    backend: str = "hf",
    engine: dict | None = None,
):
    """A trained judge from its registry entry (``style``, ``base``, optional ``adapter``). A
    direct-verdict judge reads only a box, so it keeps the output limit it was trained with
    (``entry["max_new_tokens"]``) whatever ``max_new_tokens`` says. Generative judges run on
    ``backend`` ("hf" or "vllm", with ``engine`` settings); a discriminative judge reads
    next-token logits and always runs on HF."""
    if entry["style"] == "direct":
        max_new_tokens = entry.get("max_new_tokens", max_new_tokens)
    if entry["style"] == "disc":
        return DiscJudge.load(entry["base"], batch_size=batch_size)
    j = Judge.load(
        entry["base"],
        entry.get("adapter"),
        backend=backend,
        batch_size=batch_size,
        engine=engine,
        family=family,
        max_new_tokens=max_new_tokens,
        style=entry["style"],
    )
    return j


@dataclass(frozen=True)
class Loader:
    """A registry entry -> its judge (:func:`load_judge`) with a notebook's settings; a plain value,
    so side-by-side processes (notebook 05's ``PROCESSES``) receive it pickled."""

    family: str
    max_completion: int
    batch: int
    backend: str
    engine: dict

    def __call__(self, entry: dict):
        return load_judge(entry, self.family, self.max_completion, self.batch, backend=self.backend, engine=self.engine)


def loader(cfg) -> Loader:
    """Notebooks 05-07's judge loader: a registry entry -> its judge, with the notebook's
    ``PROMPT_FAMILY``, ``MAX_COMPLETION``, ``JUDGE_BATCH``, ``JUDGE_BACKEND`` and vLLM engine settings
    (:func:`load_judge`: a direct judge keeps its own output limit). Loads nothing until called."""
    from ..engines.models import engine_settings  # lazy: torch

    return Loader(cfg.PROMPT_FAMILY, cfg.MAX_COMPLETION, cfg.JUDGE_BATCH, cfg.JUDGE_BACKEND, engine_settings(cfg))


def judge_prompt_of(example: dict, family: str = "toy", style: str = "cot") -> str:
    return judge_prompt(family, example["problem"], example["history"], example["chunk"], style)


# ----------------------------------------------------------------------------- registry entries

#: The fields of a registry entry that name model folders (stored relative: paths.stored_path).
MODEL_FIELDS = ("base", "adapter")


def stored_entry(entry: dict) -> dict:
    """A registry entry as files store it, its model folders relative to the output root. Caches
    of notebooks 05-07 hash this form, so a moved checkout keeps its results."""
    return {**entry, **{k: paths.stored_path(entry[k]) for k in MODEL_FIELDS if entry.get(k)}}


def resolved_entry(entry: dict) -> dict:
    """A stored registry entry with its model folders resolved on this machine (paths.resolve_stored)."""
    return {**entry, **{k: paths.resolve_stored(entry[k]) for k in MODEL_FIELDS if entry.get(k)}}
