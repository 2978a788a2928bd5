"""The discriminative "+"/"-" judge: the paper's Discriminative + SFT baseline (App. A.1).

Following RLHFlow (Xiong et al. 2024b), a judge example is a **multi-turn conversation**: the
first user turn is the problem and the first step, each later user turn is one more step, and
each assistant turn is a single verdict token, ``+`` (correct) or ``-`` (wrong). Training is
plain SFT with TRL's ``SFTTrainer`` where **only verdict tokens carry loss**; we build the token
ids and the loss mask ourselves (``input_ids`` + ``completion_mask``, a pre-tokenized dataset) so
the mask is exact and tested, rather than relying on a chat template's generation markers.

Per judge example (problem, history, chunk, label) we build one conversation whose history
steps are answered ``+`` and whose last step is answered with the label; the loss is on that last
verdict token only. History verdicts are ``+`` because that is what a judge sees at inference
under the first-error protocol: it stops at the first ``-`` (ProcessBench's RLHFlow script
does the same). [not in paper: the paper trains on its own conversations; this per-example form
keeps the baseline on exactly the balanced examples the generative judges use.]

Inference reads the next-token distribution after the last user turn: the score is
``P(+) / (P(+) + P(-))`` and the verdict is Positive when the score is at least ``threshold``.
"""

from __future__ import annotations

from ..engines.launch import launchable, to_dataset
from ..engines.sft import train_sft

VERDICT_TOKEN = {True: "+", False: "-"}
#: The user turns of the conversation: the first step's (with the problem) and each later one's.
FIRST_TURN = "{problem}\n\n{chunk}"
LATER_TURN = "{chunk}"


def conversation(problem: str, history: list[str], chunk: str, label: bool | None = None) -> list[dict]:
    """RLHFlow-style messages: one user turn per step (the first with the problem), ``+`` after
    every history step, and the label's token after the new chunk when ``label`` is given."""
    steps = list(history) + [chunk]
    msgs: list[dict] = []
    for i, step in enumerate(steps):
        msgs.append(
            {"role": "user", "content": (FIRST_TURN if i == 0 else LATER_TURN).format(problem=problem, chunk=step)}
        )
        if i < len(steps) - 1:
            msgs.append({"role": "assistant", "content": VERDICT_TOKEN[True]})
    if label is not None:
        msgs.append({"role": "assistant", "content": VERDICT_TOKEN[bool(label)]})
    return msgs


def verdict_ids(tok) -> dict[bool, int]:
    """Token ids of ``+`` and ``-``; each must be exactly one token."""
    ids = {}
    for lab, sym in VERDICT_TOKEN.items():
        enc = tok(sym, add_special_tokens=False)["input_ids"]
        if len(enc) != 1:
            raise ValueError(
                f"verdict {sym!r} is {len(enc)} tokens for this tokenizer; the "
                "discriminative judge needs single-token verdicts"
            )
        ids[lab] = enc[0]
    return ids


def _prefix_ids(tok, problem: str, history: list[str], chunk: str) -> list[int]:
    text = tok.apply_chat_template(conversation(problem, history, chunk), tokenize=False, add_generation_prompt=True)
    return tok(text, add_special_tokens=False)["input_ids"]


def encode(tok, problem: str, history: list[str], chunk: str, label: bool) -> dict:
    """``{"input_ids", "completion_mask"}`` for one example; the mask is 1 on the final verdict
    token only. Raises if the chat template does not put the verdict as one token right after
    the generation prompt (then the mask would be wrong)."""
    full_text = tok.apply_chat_template(conversation(problem, history, chunk, label), tokenize=False)
    full = tok(full_text, add_special_tokens=False)["input_ids"]
    prefix = _prefix_ids(tok, problem, history, chunk)
    vid = verdict_ids(tok)[bool(label)]
    if full[: len(prefix)] != prefix or len(full) <= len(prefix) or full[len(prefix)] != vid:
        raise ValueError(
            "the chat template does not tokenize the verdict as one token right "
            "after the assistant header; cannot build the verdict-only loss mask"
        )
    mask = [0] * len(full)
    mask[len(prefix)] = 1
    return {"input_ids": full, "completion_mask": mask}


@launchable
def train_disc_judge(model_dir: str, examples: list[dict], out_dir, settings: dict, progress: bool = True) -> dict:
    """SFT of the discriminative judge with TRL's ``SFTTrainer`` (paper App. A.1: user turns
    masked, lr 1e-5, global batch 32; data packing is not used here) and
    :class:`stepwiser_lib.engines.trainers.SFTSettings` (``DISC_*`` parameters). The dataset is
    pre-tokenized with the verdict-only loss mask of :func:`encode`. Saves a full model to
    ``out_dir/model`` (a LoRA adapter is merged)."""
    from ..engines.models import load_tokenizer  # lazy: torch

    if not examples:
        raise ValueError("no examples for the discriminative judge")
    tok = load_tokenizer(model_dir)
    rows = to_dataset(examples, lambda e: encode(tok, e["problem"], e["history"], e["chunk"], bool(e["label"])))
    r = train_sft(model_dir, rows, out_dir, settings, progress=progress)
    return {**r, "seconds": r["train_seconds"]}


class DiscJudge:
    """Batched inference for the "+"/"-" judge with the same result format as
    :class:`stepwiser_lib.method.judge.Judge` (``verdict``, ``analysis`` (empty), ``score``)."""

    def __init__(self, model, tokenizer, threshold: float = 0.5, batch_size: int = 64):
        self.model, self.tok = model, tokenizer
        self.threshold, self.batch_size = threshold, batch_size
        self.ids = verdict_ids(tokenizer)

    @classmethod
    def load(cls, path: str, device: str = "auto", **kw) -> DiscJudge:
        from ..engines.models import load_model  # lazy: torch

        model, tok = load_model(path, device=device)
        return cls(model, tok, **kw)

    def close(self) -> None:
        """Drop the model, so :func:`stepwiser_lib.engines.models.release` can return its GPU memory."""
        self.model = None

    def scores(self, triples: list[tuple[str, list[str], str]]) -> list[float]:
        """``P(+) / (P(+) + P(-))`` after each (problem, history, chunk) conversation; only the
        last position's logits are computed (:func:`stepwiser_lib.engines.models.last_token_rows`)."""
        import torch

        from ..engines.models import last_token_rows  # lazy: torch

        ids = [self.ids[True], self.ids[False]]
        seqs = [_prefix_ids(self.tok, p, h, c) for p, h, c in triples]
        return last_token_rows(
            self.model,
            seqs,
            self.tok.pad_token_id,
            self.batch_size,
            lambda lg: torch.softmax(lg[:, ids], dim=1)[:, 0].tolist(),
        )

    def judge(self, triples, k: int = 1, temperature=None, seed: int = 0, progress=False, seeds=None) -> list[dict]:
        """``k``/``temperature``/``seed``/``seeds`` are accepted for interface compatibility: the
        discriminative judge is read deterministically from its next-token probabilities."""
        return [
            {"verdict": "Positive" if s >= self.threshold else "Negative", "analysis": "", "score": s, "n_unparsed": 0}
            for s in self.scores(triples)
        ]
