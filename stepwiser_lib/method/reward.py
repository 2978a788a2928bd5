"""A trained stepwise judge as a reward function for someone else's RL (issue 37).

    from trl import GRPOTrainer
    from stepwiser_lib.reward import StepwiserReward

    reward = StepwiserReward("exports/tiny/judges/stepwiser__rel_ratio", aggregate="min")
    trainer = GRPOTrainer(model=policy, reward_funcs=[accuracy_reward, reward], train_dataset=ds, ...)

or, from TRL's command line, by its dotted path (:func:`stepwiser_reward`, built from environment
variables on its first call)::

    STEPWISER_REWARD_JUDGE=exports/tiny/judges/stepwiser__rel_ratio \
        accelerate launch -m trl.scripts.grpo ... --reward_funcs stepwiser_lib.method.reward.stepwiser_reward

Each completion is split into chunks (``<chunk>`` tags, else blank-line paragraphs),
every chunk is judged with the problem and the chunks before it (the judge's prompt, as in training), and the
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
(a generative judge; 0 or 1 at ``k = 1``), or p(+) (a discriminative judge). A completion the judge
cannot judge at all (no chunk, or no verdict on any of its chunks) gets ``None``: TRL's GRPOTrainer
reads None as "this reward does not apply" (NaN, left out of the group's mean and spread by its
nan-aware sums; a completion every reward function skips gets no advantage), so an unjudgeable
completion neither earns nor loses, and another reward function (accuracy, format) still scores it.
Judging every chunk of every completion costs one judge generation per chunk: at real scale use the
vLLM backend (``Judge.load(..., backend="vllm")``).

Under ``accelerate launch`` every rank is a process with its own copy of the reward: a judge given
by path is loaded on the rank's own GPU (:func:`rank_device`: ``cuda:$LOCAL_RANK``), not all on GPU 0.
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


def aggregate(scores: list[float | None], verdicts: list[str | None], how: str) -> float | None:
    """One completion's reward from its chunks' scores and verdicts (see the module docstring):
    None when there is no chunk or no chunk has a verdict (nothing was judged)."""
    if how not in AGGREGATES:
        raise ValueError(f"aggregate must be one of {AGGREGATES}, not {how!r}")
    if not scores or all(v is None for v in verdicts):
        return None  # unjudgeable: TRL leaves this reward out for this completion
    judged = [0.0 if s is None else s for s in scores]  # no verdict earns nothing (issue 49)
    if how == "min":
        return float(min(judged))
    if how == "mean":
        return float(sum(judged) / len(judged))
    first = next((i for i, v in enumerate(verdicts) if v != "Positive"), len(verdicts))
    return first / len(verdicts)


def rank_device() -> str:
    """The device of this process's rank: ``cuda:$LOCAL_RANK`` when CUDA is available and the
    launcher set ``LOCAL_RANK`` (``accelerate launch``, ``torchrun``), or plain ``cuda`` when that
    rank's GPU is the only one it sees (a launcher that sets ``CUDA_VISIBLE_DEVICES`` per rank);
    else ``"auto"``, what a judge loads on by default (the GPU when there is one, else the CPU)."""
    rank = os.environ.get("LOCAL_RANK", "").strip()
    if not rank:
        return "auto"
    import torch  # a launcher's rank: torch is there, and only this case needs it

    if not torch.cuda.is_available():
        return "auto"
    try:
        r = int(rank)
    except ValueError:
        raise ValueError(f"LOCAL_RANK={rank!r}: a launcher sets it to the process's rank, an integer") from None
    return f"cuda:{r}" if r < torch.cuda.device_count() else "cuda"


def place(judge, device: str) -> None:
    """Move a loaded judge's model to ``device`` (an HF :class:`Judge` or a discriminative one;
    anything else, e.g. a vLLM engine, stays where it is). ``"auto"``: this rank's GPU under a
    launcher (:func:`rank_device`), else where it is."""
    device = rank_device() if device == "auto" else device
    if device == "auto":
        return
    model = getattr(getattr(judge, "gen", None), "model", None) or getattr(judge, "model", None)
    if model is not None and callable(getattr(model, "parameters", None)) and callable(getattr(model, "to", None)):
        model.to(device)


class StepwiserReward:
    """A stepwise judge as a TRL reward function: ``reward(prompts, completions, **columns)``
    returns one float per completion, or None for a completion it cannot judge (TRL's
    ``reward_funcs`` convention).

    ``judge``: a loaded judge (anything with ``judge(triples, k=...)``, e.g.
    :class:`~stepwiser_lib.method.judge.Judge`) or a path / hub id for :meth:`Judge.load`.
    ``problem_column``: the dataset column holding the bare problem, which the judge's prompt
    quotes; without it the prompt's text is used. ``k``: verdicts sampled per chunk.
    ``device``: where the judge runs. By default a judge given by path loads on this rank's device
    (:func:`rank_device`), and a loaded judge stays where it is; a device given here moves it.
    """

    def __init__(
        self,
        judge,
        aggregate: str = "min",
        k: int = 1,
        problem_column: str = "problem",
        seed: int = 0,
        device: str | None = None,
    ):
        if aggregate not in AGGREGATES:
            raise ValueError(f"aggregate must be one of {AGGREGATES}, not {aggregate!r}")
        if not isinstance(k, int) or isinstance(k, bool) or k < 1:
            raise ValueError(f"k = {k!r}: the verdicts sampled per chunk, at least 1")
        if device is not None and (not isinstance(device, str) or not device.strip()):
            raise ValueError(f"device = {device!r}: a torch device name (cpu, cuda, cuda:1) or auto")
        if isinstance(judge, (str, os.PathLike)):
            device = device or rank_device()
            judge = Judge.load(os.fspath(judge), device=device)
        elif not callable(getattr(judge, "judge", None)):
            raise TypeError(
                f"judge: a path or hub id of a judge, or a loaded one (with a judge(triples, k=...) method), "
                f"not a {type(judge).__name__}"
            )
        elif device is not None:
            place(judge, device)
        self.judge, self.device = judge, device
        self.how, self.k, self.problem_column, self.seed = aggregate, k, problem_column, seed
        self.__name__ = f"stepwiser_{aggregate}"  # TRL logs each reward function by its __name__

    def __call__(self, prompts=None, completions=None, **kwargs) -> list[float | None]:
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


# ----------------------------------------------------------------------------- TRL's command line

#: The environment variables :func:`stepwiser_reward` reads: the judge (a folder or hub id, required)
#: and :class:`StepwiserReward`'s settings (unset: its defaults; the device: this rank's).
ENV = {
    "judge": "STEPWISER_REWARD_JUDGE",
    "aggregate": "STEPWISER_REWARD_AGGREGATE",
    "k": "STEPWISER_REWARD_K",
    "problem_column": "STEPWISER_REWARD_PROBLEM_COLUMN",
    "seed": "STEPWISER_REWARD_SEED",
    "device": "STEPWISER_REWARD_DEVICE",
}
_BUILT: dict[tuple, StepwiserReward] = {}  # the reward of this process, by its settings


def settings_from_env(env=None) -> dict:
    """:class:`StepwiserReward`'s arguments from :data:`ENV` (``env``: a mapping, else ``os.environ``),
    each checked with an error that names the variable."""
    env = os.environ if env is None else env
    get = {k: (env.get(v) or "").strip() for k, v in ENV.items()}
    if not get["judge"]:
        raise ValueError(
            f"{ENV['judge']} is not set: name the judge (a folder or hub id, e.g. "
            "exports/tiny/judges/stepwiser__rel_ratio) for stepwiser_reward"
        )
    out: dict = {"judge": get["judge"]}
    for key in ("k", "seed"):
        if get[key]:
            try:
                out[key] = int(get[key])
            except ValueError:
                raise ValueError(f"{ENV[key]}={get[key]!r}: an integer") from None
    for key in ("aggregate", "problem_column", "device"):
        if get[key]:
            out[key] = get[key]
    return out


def reward_from_env(env=None) -> StepwiserReward:
    """The :class:`StepwiserReward` of :func:`settings_from_env`, built on the first call and kept
    (the judge is loaded once per process; other settings build it anew)."""
    s = settings_from_env(env)
    key = tuple(sorted(s.items()))
    if key not in _BUILT:
        _BUILT.clear()  # one judge per process: drop the old one before loading another
        _BUILT[key] = StepwiserReward(**s)
    return _BUILT[key]


def stepwiser_reward(prompts=None, completions=None, **kwargs) -> list[float | None]:
    """The judge as a reward function by dotted path, for TRL's command line, which imports
    ``module.function`` from ``--reward_funcs`` (``trl grpo ... --reward_funcs
    stepwiser_lib.method.reward.stepwiser_reward``; ``stepwiser_lib.reward.stepwiser_reward`` is the
    same function). The judge and settings come from :data:`ENV` (``STEPWISER_REWARD_JUDGE``,
    ``STEPWISER_REWARD_K``, ...), read on the first call: each rank of ``accelerate launch`` loads
    the judge once, on its own GPU. Returns what :class:`StepwiserReward` returns (None for a
    completion it cannot judge); TRL logs it as ``rewards/stepwiser_reward/mean``."""
    return reward_from_env()(prompts=prompts, completions=completions, **kwargs)
