import pytest

from stepwiser_lib.judge import parse_verdict, verdict_reward


@pytest.mark.parametrize("text,expected", [
    ("analysis... \\boxed{Positive}", "Positive"),
    ("\\boxed{Negative}", "Negative"),
    ("\\boxed{ positive }", "Positive"),  # whitespace, case
    ("\\boxed{NEGATIVE}.", "Negative"),
    ("first \\boxed{Positive} then \\boxed{Negative}", "Negative"),  # the last box counts
    ("\\boxed{Negative} and finally \\boxed{Positive}", "Positive"),
    ("\\boxed{\\text{Positive}}", None),  # nested braces: content is \text{Positive}
    ("\\boxed{{Positive}}", None),
    ("the answer is \\boxed{42}", None),  # another word
    ("\\boxed{}", None),  # empty
    ("Positive", None),  # no box
    ("\\boxed{Positive", None),  # unclosed
    ("\\boxed{Positive} \\boxed{maybe}", None),  # last box is not a verdict
    ("", None),
    (None, None),
])
def test_parse_verdict(text, expected):
    assert parse_verdict(text) == expected


def test_verdict_reward_literal_cases():
    comps = ["\\boxed{Positive}", "\\boxed{Positive}", "\\boxed{Negative}", "no verdict", "\\boxed{negative}"]
    labels = [True, False, False, True, False]
    assert verdict_reward(comps, label=labels) == [1.0, 0.0, 1.0, 0.0, 1.0]


def test_verdict_reward_trl_calling_convention():
    # TRL calls reward functions with prompts, completions, completion_ids, every dataset column
    # as a keyword list and the trainer state; conversational completions are message lists.
    comps = [[{"role": "assistant", "content": "ok \\boxed{Positive}"}],
             [{"role": "assistant", "content": "bad \\boxed{Positive}"}]]
    r = verdict_reward(prompts=["p", "q"], completions=comps, completion_ids=[[1], [2]],
                       label=[True, False], problem=["x", "y"], trainer_state=None)
    assert r == [1.0, 0.0]
    with pytest.raises(ValueError, match="label"):
        verdict_reward(["\\boxed{Positive}"])
