"""The project's shared names, in one place: the label rules (paper §3.2, Eq. 2), the judge kinds
of Tables 5 and 6 with their per-kind facts, and the grammar of judge names that notebooks 04-07
and the checked parameter language (``variant``, ``judge``: :mod:`stepwiser_lib.core.checks`) use.

A *variant* is ``KIND:RULE`` (``"stepwiser:rel_ratio"``); a *judge name* (a registry entry of
notebook 04) is a variant, a repeat seed of one (``"stepwiser:rel_ratio@seed1"``), the warm-up
judge (:data:`WARMUP_NAME`) or ``"all"``. Nothing here imports anything of the library.
"""

from __future__ import annotations

from dataclasses import dataclass

#: The three step-label rules of paper §3.2 (Eq. 2): Abs-Q, Rel-Effective, Rel-Ratio.
RULES = ("abs_q", "rel_effective", "rel_ratio")
#: What adaptive sampling can preserve: one rule's labels, or ``all`` three (notebook 02 labels
#: every chunk by every rule from the same rollouts).
ADAPTIVE_RULES = (*RULES, "all")


@dataclass(frozen=True)
class JudgeKind:
    """One judge kind of paper Tables 5 and 6 (or a toy-only diagnostic).

    ``row``: the paper's row name; ``style``: the output format (``"cot"`` analysis + boxed
    verdict, ``"direct"`` the boxed verdict alone, ``"disc"`` a "+"/"-" token); ``trainer``:
    ``"grpo"``, ``"disc"`` (SFT of the discriminative judge) or ``"rsft"`` (rejection-sampling
    fine-tuning); ``warmup``: the format warm-up it starts from on the toy path (None: the
    initial model itself, as the paper's discriminative baseline does; one of
    :data:`WARMUP_STYLES`); ``oracle_labels``: it trains on the exact checker's verdicts instead
    of the Monte-Carlo labels (toy only; ``docs/research_protocol.md``: an oracle)."""

    name: str
    row: str
    style: str
    trainer: str
    warmup: str | None
    toy_only: bool = False
    oracle_labels: bool = False


#: The format warm-ups of the toy path, each -> the output style it teaches: ``cot`` (the main
#: CoT warm-up, its analyses as ``WARMUP_ANALYSIS`` says), ``derived`` (the CoT warm-up on exact
#: re-derivations with coin-flip verdicts: the oracle ablation's start, issue 59), ``direct`` (a
#: boxed verdict alone) and ``restate`` (an analysis that only restates the chunk).
WARMUP_STYLES = {"cot": "cot", "derived": "cot", "direct": "direct", "restate": "cot"}


#: Every judge kind notebook 04 can train, in the order of the paper's tables.
JUDGE_KINDS = {
    k.name: k
    for k in (
        JudgeKind("stepwiser", "Generative CoT + RL (StepWiser)", "cot", "grpo", "cot"),
        JudgeKind("disc_sft", "Discriminative + SFT", "disc", "disc", None),
        JudgeKind("no_cot_rl", "Ablate CoT (discriminative format + RL)", "direct", "grpo", "direct"),
        JudgeKind("no_balance_rl", "Ablate prompt balancing (generative + RL)", "cot", "grpo", "cot"),
        JudgeKind("rsft", "Ablate RL (use RS-FT)", "cot", "rsft", "cot"),
        # the same chunks labelled by the exact step checker instead of Monte-Carlo rollouts
        JudgeKind(
            "exact_rl",
            "Diagnostic: generative + RL on exact-checker labels (toy only)",
            "cot",
            "grpo",
            "cot",
            toy_only=True,
            oracle_labels=True,
        ),
        # issue 59: the issue-47 recipe, kept as an ablation: RL from a warm-up on the exact
        # re-derivations (an oracle), beside the main judge whose warm-up trains on its own text
        JudgeKind(
            "oracle_rl",
            "[not in paper] oracle warm-up: generative + RL from a warm-up on exact re-derivations (toy only)",
            "cot",
            "grpo",
            "derived",
            toy_only=True,
        ),
        # the discriminative judge from the generative judge's CoT warm-up: the warm-up's own effect
        JudgeKind(
            "disc_warmup_sft",
            "Diagnostic: discriminative + SFT from the generative judge's warm-up (toy only)",
            "disc",
            "disc",
            "cot",
            toy_only=True,
        ),
        # RL from a warm-up whose analysis computes nothing (it only restates the chunk)
        JudgeKind(
            "restate_rl",
            "Diagnostic: generative + RL from a warm-up whose analysis only restates the chunk (toy only)",
            "cot",
            "grpo",
            "restate",
            toy_only=True,
        ),
    )
}
#: ``kind`` -> the paper's row name.
KINDS = {k: v.row for k, v in JUDGE_KINDS.items()}
#: The kinds trained by GRPO (the dry-run plan counts their runs).
RL_KINDS = tuple(k for k, v in JUDGE_KINDS.items() if v.trainer == "grpo")
#: Output format of each kind.
STYLE = {k: v.style for k, v in JUDGE_KINDS.items()}
#: The format warm-up each kind starts from on the toy path.
WARMUP_OF = {k: v.warmup for k, v in JUDGE_KINDS.items()}

#: The registry name of the format-warm-up judge (notebook 04's ``start_entry``).
WARMUP_NAME = "warm-up (before RL)"

#: The name of each warm-up's judge in notebook 04's predictions: the main CoT warm-up keeps
#: :data:`WARMUP_NAME` (the judge notebooks 05-07 read as the start); every other start is
#: evaluated too, so that each arm is compared with its own start (issue 59).
START_NAME = {
    "cot": WARMUP_NAME,
    "derived": "oracle warm-up (before RL)",
    "direct": "no-CoT warm-up (before RL)",
    "restate": "restating warm-up (before RL)",
}


def rule_name(start: str) -> str:
    """The predictions' name of a fixed rule reading a start's own analysis (every difference 0 ->
    Positive): the yardstick RL from that start must beat (issue 59)."""
    return f"{start.replace(' (before RL)', '')} analysis read by a rule (no RL)"


def start_of(kind: str) -> str | None:
    """The predictions' name of the start a judge ``kind`` trains from (:data:`START_NAME`; None
    for a kind that starts from the initial model itself)."""
    w = JUDGE_KINDS[kind].warmup
    return START_NAME[w] if w else None


def uses_oracle(kind: str, warmup_analysis: str = "derived", warmed: bool = True) -> bool:
    """Whether anything in a judge ``kind``'s training was computed from the true values of the
    problems it trains on (``docs/research_protocol.md``): labels from the exact checker, or a
    warm-up on exact re-derivations (the ``derived`` warm-up; the main ``cot`` warm-up when
    ``WARMUP_ANALYSIS`` is ``derived``), which the RS-FT judge samples from and the
    ``disc_warmup_sft`` judge starts from. ``warmed``: False when there is no warm-up (instruct
    models, ``WARMUP: false``). The toy base's pretraining is world knowledge, not an oracle."""
    k = JUDGE_KINDS[kind]
    if k.oracle_labels:
        return True
    if not warmed:
        return False
    return k.warmup == "derived" or (k.warmup == "cot" and warmup_analysis == "derived")


def parse_variant(name: str) -> tuple[str, str]:
    """``"stepwiser:rel_ratio"`` -> ``("stepwiser", "rel_ratio")``, with clear errors."""
    if not isinstance(name, str):
        raise ValueError(f"bad judge variant {name!r}: use KIND:RULE strings, not a {type(name).__name__}")
    kind, sep, rule = name.partition(":")
    if not sep or kind not in KINDS or rule not in RULES:
        raise ValueError(
            f"bad judge variant {name!r}: use KIND:RULE with KIND in {', '.join(KINDS)} and RULE in {', '.join(RULES)}"
        )
    return kind, rule


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
    """A judge name as a file or folder name (``"rsft:abs_q"`` -> ``"rsft__abs_q"``)."""
    return name.replace(":", "__")
