"""A trained stepwise judge as a reward function for someone else's RL (issue 37).

    from trl import GRPOTrainer
    from stepwiser_lib.reward import StepwiserReward

    reward = StepwiserReward("exports/tiny/judges/stepwiser__rel_ratio", aggregate="min")
    trainer = GRPOTrainer(model=policy, reward_funcs=[accuracy_reward, reward], train_dataset=ds, ...)

Each completion is split into chunks (``<chunk>`` tags, else blank-line paragraphs), every chunk
is judged with the problem and the chunks before it (the judge's prompt, as in training), and the
chunk scores are aggregated into one number per completion. The paper uses its judge to select
data (RS-FT, §4.4, the mean chunk score) and to reset chunks at inference (§4.4), not as an RL
reward; how to aggregate chunk scores into a reward is ``[not in paper]``:

* ``min``: the weakest chunk (a solution is as good as its worst step; 0 as soon as one chunk is
  judged Negative by every sample);
* ``mean``: the average chunk score (the paper's RS-FT selection score);
* ``first_negative``: the share of chunks before the first Negative verdict (1.0 when none).

A chunk the judge gave no verdict on (no sample parsed: an output cut at the judge's token limit,
or text it cannot read) scores 0 and counts as a Negative for ``first_negative``, as everywhere in
this library (``stepwiser_lib.core.verdicts``): a policy must not gain by writing steps its judge
cannot read.

A chunk's score is the judge's ``score``: the share of ``k`` sampled verdicts that are Positive
(a generative judge; 0 or 1 at ``k = 1``), or p(+) (a discriminative judge). A completion with no
chunk, or whose chunks no sample judged, gets 0.0. Judging every chunk of every completion costs
one judge generation per chunk: at real scale use the vLLM backend (``Judge.load(..., backend="vllm")``).
"""

from __future__ import annotations

import os

from ..core.chunks import parse_chunks, split_paragraphs
from .judge import Judge

AGGREGATES = ("min", "mean", "first_negative")


def text_of(x) -> str:
    """A prompt or completion as text: TRL passes a string, or (conversational data) a list of
    messages, whose last message holds the completion or the user's question."""
    if isinstance(x, str):
        return x
    if isinstance(x, list) and x and isinstance(x[-1], dict):
        return str(x[-1].get("content", ""))
    raise TypeError(f"expected a string or a list of chat messages, not {type(x).__name__}")


def chunks_of(text: str) -> list[str]:
    """The steps of a completion: its ``<chunk>`` units, else its blank-line paragraphs."""
    return parse_chunks(text) or split_paragraphs(text)


def aggregate(scores: list[float | None], verdicts: list[str | None], how: str) -> float:
    """One completion's reward from its chunks' scores and verdicts (see the module docstring)."""
    if how not in AGGREGATES:
        raise ValueError(f"aggregate must be one of {AGGREGATES}, not {how!r}")
    if not scores:
        return 0.0
    judged = [0.0 if s is None else s for s in scores]  # no verdict earns nothing (issue 49)
    if how == "min":
        return float(min(judged))
    if how == "mean":
        return float(sum(judged) / len(judged))
    first = next((i for i, v in enumerate(verdicts) if v != "Positive"), len(verdicts))
    return first / len(verdicts)


class StepwiserReward:
    """A stepwise judge as a TRL reward function: ``reward(prompts, completions, **columns)``
    returns one float per completion (TRL's ``reward_funcs`` convention).

    ``judge``: a loaded judge (anything with ``judge(triples, k=...)``, e.g.
    :class:`~stepwiser_lib.method.judge.Judge`) or a path / hub id for :meth:`Judge.load`.
    ``problem_column``: the dataset column holding the bare problem, which the judge's prompt
    quotes; without it the prompt's text is used. ``k``: verdicts sampled per chunk.
    """

    def __init__(self, judge, aggregate: str = "min", k: int = 1, problem_column: str = "problem", seed: int = 0):
        if aggregate not in AGGREGATES:
            raise ValueError(f"aggregate must be one of {AGGREGATES}, not {aggregate!r}")
        if not isinstance(k, int) or isinstance(k, bool) or k < 1:
            raise ValueError(f"k = {k!r}: the verdicts sampled per chunk, at least 1")
        if isinstance(judge, (str, os.PathLike)):
            judge = Judge.load(os.fspath(judge))
        elif not callable(getattr(judge, "judge", None)):
            raise TypeError(
                f"judge: a path or hub id of a judge, or a loaded one (with a judge(triples, k=...) method), "
                f"not a {type(judge).__name__}"
            )
        self.judge = judge
        self.how, self.k, self.problem_column, self.seed = aggregate, k, problem_column, seed
        self.__name__ = f"stepwiser_{aggregate}"  # TRL logs each reward function by its __name__

    def __call__(self, prompts=None, completions=None, **kwargs) -> list[float]:
        if completions is None:
            raise TypeError("StepwiserReward needs completions (TRL passes prompts=, completions=)")
        problems = kwargs.get(self.problem_column) or [text_of(p) for p in (prompts or [])]
        if not problems and completions:
            raise ValueError(
                f"no problems for {len(completions)} completions: TRL passes prompts=, or give the dataset a "
                f"{self.problem_column!r} column (problem_column= names another)"
            )
        if len(problems) != len(completions):
            raise ValueError(f"{len(problems)} problems for {len(completions)} completions")
        bad = [i for i, p in enumerate(problems) if not isinstance(p, str) or not p.strip()]
        if bad:
            raise ValueError(
                f"row {bad[0] + 1} of {len(problems)} (index {bad[0]}) of column {self.problem_column!r} holds no "
                f"problem text ({problems[bad[0]]!r}){f', and {len(bad) - 1} more' if len(bad) > 1 else ''}: "
                "the judge would be asked about nothing"
            )
        steps = [chunks_of(text_of(c)) for c in completions]
        triples = [(p, ch[:i], ch[i]) for p, ch in zip(problems, steps) for i in range(len(ch))]
        judged = self.judge.judge(triples, k=self.k, seed=self.seed) if triples else []
        out, at = [], 0
        for ch in steps:
            res = judged[at : at + len(ch)]
            at += len(ch)
            scores = [None if r["verdict"] is None else r["score"] for r in res]
            out.append(aggregate(scores, [r["verdict"] for r in res], self.how))
        return out
