"""The toy judge's text (notebook 04 on the toy world) [not in paper]: the analysis a format warm-up
shows (the exact re-derivation of a chunk's values), the verdict such an analysis implies, the
warm-up's SFT records, and the exact step checker as a yardstick. The method reaches these only
through :mod:`stepwiser_lib.method.tasks` (``step_truth``, ``analysis_verdict``, ``warmup_records``).
"""

from __future__ import annotations

import random
import re

from ..core.prompts import judge_prompt
from .toyworld import check_step, derive_implied_ok, derive_text, parse_problem, restate_text


def toy_analysis(problem_text: str, chunk: str) -> str:
    """The toy judge's analysis of a chunk (:func:`stepwiser_lib.toy.toyworld.derive_text`): the
    correct derivation of every value the chunk states, then a subtraction per stated value.
    It is what the format warm-up shows; which verdict follows from it is left to RL."""
    return derive_text(parse_problem(problem_text), chunk)


def analysis_implied(text: str) -> bool | None:
    """The verdict a toy analysis implies (all differences 0 -> Positive); None if unreadable.
    Used to measure how faithful a judge's own analyses are (notebook 04), never as a reward."""
    return derive_implied_ok(text.split("\\boxed")[0])


#: ``A op B = C`` inside an analysis line (``25 + 30 = 55``, ``62 - 61 = 1``).
_ARITH = re.compile(r"(-?\d+)\s*([-+*])\s*(-?\d+)\s*=\s*(-?\d+)")


def analysis_checks(problem_text: str, chunk: str, analysis: str) -> dict:
    """How a judge's own toy analysis compares with the truth (issue 36: what the printed
    analyses do): ``exact`` (it is the exact re-derivation :func:`toy_analysis` writes),
    ``arithmetic_ok`` (every ``A op B = C`` in it holds; None without one) and ``implied`` (the
    verdict it implies, :func:`analysis_implied`). [not in paper]"""
    text = analysis.split("\\boxed")[0].strip()
    sums = _ARITH.findall(text)
    ops = {"+": lambda a, b: a + b, "-": lambda a, b: a - b, "*": lambda a, b: a * b}
    return {
        "exact": text == toy_analysis(problem_text, chunk).strip(),
        "arithmetic_ok": all(ops[o](int(a), int(b)) == int(c) for a, o, b, c in sums) if sums else None,
        "implied": analysis_implied(analysis),
    }


#: How a CoT warm-up record's verdict is chosen (``WARMUP_VERDICT``).
WARMUP_VERDICTS = ("coin", "implied")


def warmup_records(
    examples: list[dict],
    family: str = "toy",
    seed: int = 0,
    style: str = "cot",
    analyses: list[str] | None = None,
    verdict: str = "coin",
) -> list[dict]:
    """Format warm-up SFT data for a tiny judge (notebook 04). [not in paper]

    It teaches the output *contract*: for ``style="cot"`` an analysis followed by a boxed
    verdict, the analysis being ``analyses[i]`` when given (the initial model's own checking text
    of the chunk: ``WARMUP_ANALYSIS: own``) and else the exact re-derivation of
    :func:`toy_analysis` (``derived``); for ``"derived"`` (the ``oracle_rl`` ablation's start,
    issue 59) always the exact re-derivation and a coin-flip verdict, whatever ``analyses`` and
    ``verdict`` say: the issue-47 recipe; for ``"direct"`` the boxed verdict alone; for
    ``"restate"`` (the ``restate_rl`` ablation) an analysis that only restates the chunk
    (:func:`stepwiser_lib.toy.toyworld.restate_text`), in the CoT judge prompt.
    ``verdict="coin"``: the verdict is drawn at random (50/50, seeded by the example's text),
    independent of the chunk and of any label (the ``label`` field is never read), so the warm-up
    cannot teach which verdict is right; that is left to RL. ``verdict="implied"`` (CoT only):
    the verdict the record's own analysis implies, read by the fixed rule
    (:func:`analysis_implied`: every difference 0 -> Positive; a coin flip where the analysis is
    unreadable). The warm-up then teaches the readout convention as well as the format, and RL
    starts from a judge whose verdict follows its analysis, so whatever RL adds beyond a fixed rule
    reading that analysis it adds to the analysis itself (issue 59). With ``own`` analyses this
    reads only text the model wrote; with derived ones it is the exact checker's verdict (an
    oracle).
    """
    if analyses is not None and len(analyses) != len(examples):
        raise ValueError(f"{len(analyses)} analyses for {len(examples)} warm-up examples")
    if verdict not in WARMUP_VERDICTS:
        raise ValueError(f"warm-up verdict {verdict!r}: want one of {WARMUP_VERDICTS}")
    out = []
    for i, e in enumerate(examples):
        rng = random.Random(f"warmup:{seed}:{e['problem']}:{e['chunk']}")
        coin = rng.choice(("Positive", "Negative"))
        if style == "direct":
            completion = f"\\boxed{{{coin}}}"
        elif style == "restate":
            completion = f"{restate_text(e['chunk'])}\n\\boxed{{{coin}}}"
        elif style == "derived":
            completion = f"{toy_analysis(e['problem'], e['chunk'])}\n\\boxed{{{coin}}}"
        else:
            analysis = analyses[i].strip() if analyses is not None else toy_analysis(e["problem"], e["chunk"])
            implied = analysis_implied(analysis) if verdict == "implied" else None
            v = coin if implied is None else ("Positive" if implied else "Negative")
            completion = f"{analysis}\n\\boxed{{{v}}}"
        out.append(
            {
                "prompt": judge_prompt(
                    family, e["problem"], e["history"], e["chunk"], "cot" if style in ("restate", "derived") else style
                ),
                "completion": completion,
            }
        )
    return out


def chunk_truth(example: dict) -> bool | None:
    """Toy world only: is the chunk's arithmetic actually right (exact step checker)? A yardstick
    independent of the noisy Monte-Carlo labels; None when the problem is not a toy problem."""
    try:
        return bool(check_step(parse_problem(example["problem"]), example["chunk"]).ok)
    except (ValueError, KeyError):
        return None
