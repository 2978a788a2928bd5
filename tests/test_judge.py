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


def _examples(n=200):
    import random

    from stepwiser_lib import toyworld as tw

    rng = random.Random(0)
    out = []
    for p in tw.generate_problems("label", n, seed=4):
        hist, step, _ = tw.check_example(p, rng)
        out.append({"problem": p.text, "history": [hist] if hist else [], "chunk": step,
                    "label": tw.check_step(p, step).ok})
    return out


def test_warmup_teaches_format_not_labels():
    from stepwiser_lib.judge import toy_analysis, warmup_records
    from stepwiser_lib.toybase import check_implied_ok

    ex = _examples()
    recs = warmup_records(ex, seed=0)
    verdicts = [parse_verdict(r["completion"]) for r in recs]
    assert set(verdicts) == {"Positive", "Negative"}
    pos = sum(v == "Positive" for v in verdicts) / len(verdicts)
    assert 0.4 < pos < 0.6
    # verdicts carry no information about the labels (agreement near chance)
    agree = sum((v == "Positive") == e["label"] for v, e in zip(verdicts, ex)) / len(ex)
    assert 0.35 < agree < 0.65
    # ...while the analysis re-derives the chunk and implies the right answer
    implied = [check_implied_ok(toy_analysis(e["problem"], e["chunk"])) for e in ex]
    assert all(i == e["label"] for i, e in zip(implied, ex) if i is not None)
    assert recs == warmup_records(ex, seed=0)
    assert recs[0]["prompt"].startswith("Judge the new chunk")


def test_step_accuracy():
    from stepwiser_lib.judge import step_accuracy

    ex = [{"label": True}, {"label": True}, {"label": False}, {"label": False}]
    js = [{"verdict": "Positive"}, {"verdict": None}, {"verdict": "Negative"}, {"verdict": "Positive"}]
    r = step_accuracy(js, ex)
    assert (r["acc"], r["balanced_acc"], r["positive_rate"], r["unparsed"]) == (50.0, 50.0, 50.0, 25.0)
