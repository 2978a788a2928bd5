"""The shared names (stepwiser_lib/core/vocab.py): one registry of judge kinds, and the grammar of
variant and judge names every notebook and the parameter checks use."""

import pytest

from stepwiser_lib.core import vocab


def test_registry_views_agree_with_the_registry():
    assert list(vocab.KINDS) == list(vocab.JUDGE_KINDS)
    assert vocab.RL_KINDS == ("stepwiser", "no_cot_rl", "no_balance_rl", "exact_rl", "oracle_rl", "restate_rl")
    assert vocab.STYLE == {
        "stepwiser": "cot",
        "disc_sft": "disc",
        "no_cot_rl": "direct",
        "no_balance_rl": "cot",
        "rsft": "cot",
        "exact_rl": "cot",
        "oracle_rl": "cot",
        "disc_warmup_sft": "disc",
        "restate_rl": "cot",
    }
    assert vocab.WARMUP_OF["disc_sft"] is None and vocab.WARMUP_OF["disc_warmup_sft"] == "cot"
    assert {k for k, v in vocab.JUDGE_KINDS.items() if v.toy_only} == {
        "exact_rl",
        "oracle_rl",
        "disc_warmup_sft",
        "restate_rl",
    }
    assert set(vocab.WARMUP_OF.values()) - {None} <= set(vocab.WARMUP_STYLES) == set(vocab.START_NAME)
    # the paper's rows of Tables 5 and 6 (paper_results) name the non-diagnostic kinds
    from stepwiser_lib.evals import paper_results as P

    for k, v in vocab.JUDGE_KINDS.items():
        assert v.toy_only or P.paper_row(v.row, "rel_ratio", "1.5B") or P.paper_row(v.row, "rel_ratio", "7B"), k


def test_every_kind_is_trained_by_a_known_trainer_in_a_known_style():
    assert {v.trainer for v in vocab.JUDGE_KINDS.values()} == {"grpo", "disc", "rsft"}
    assert all(v.style in ("cot", "direct", "disc") for v in vocab.JUDGE_KINDS.values())
    assert all((v.style == "disc") == (v.trainer == "disc") for v in vocab.JUDGE_KINDS.values())


def test_names_parse_or_fail_clearly():
    assert vocab.parse_variant("no_cot_rl:abs_q") == ("no_cot_rl", "abs_q")
    assert vocab.parse_judge_name("rsft:rel_ratio@seed3") == "rsft:rel_ratio@seed3"
    assert vocab.parse_judge_name(vocab.WARMUP_NAME) == vocab.WARMUP_NAME
    with pytest.raises(ValueError, match="KIND:RULE with KIND in stepwiser, disc_sft"):
        vocab.parse_variant("stepwiser")
    with pytest.raises(ValueError, match="VARIANT@seedN"):
        vocab.parse_judge_name("stepwiser:rel_ratio@seed")
    assert vocab.variant_slug("stepwiser:rel_ratio@seed1") == "stepwiser__rel_ratio@seed1"
    assert vocab.ADAPTIVE_RULES == (*vocab.RULES, "all")


def test_uses_oracle_follows_what_each_kind_trains_on():
    """Issue 59: anything computed from the problems' true values in a judge's training is an
    oracle (docs/research_protocol.md): exact-checker labels, the derived warm-up, and the main
    warm-up when WARMUP_ANALYSIS is derived (which the RS-FT and disc_warmup_sft judges inherit)."""
    own = {k: vocab.uses_oracle(k, "own") for k in vocab.KINDS}
    assert {k for k, v in own.items() if v} == {"exact_rl", "oracle_rl"}
    derived = {k for k in vocab.KINDS if vocab.uses_oracle(k, "derived")}
    assert derived == {"stepwiser", "no_balance_rl", "rsft", "exact_rl", "oracle_rl", "disc_warmup_sft"}
    assert {k for k in vocab.KINDS if vocab.uses_oracle(k, "derived", warmed=False)} == {"exact_rl"}
    assert vocab.start_of("no_cot_rl") == "no-CoT warm-up (before RL)" and vocab.start_of("disc_sft") is None
    assert vocab.start_of("stepwiser") == vocab.WARMUP_NAME
    assert vocab.rule_name(vocab.START_NAME["derived"]) == "oracle warm-up analysis read by a rule (no RL)"
