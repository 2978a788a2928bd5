import pytest

from stepwiser_lib import sampling, tasks


def test_chunk_format_ok():
    ok = "<chunk>b = a + 1 = 2 + 1 = 3</chunk>\n\n<chunk>So the answer is \\boxed{3}.</chunk>"
    assert sampling.chunk_format_ok(ok)
    assert not sampling.chunk_format_ok("b = 3\n\n\\boxed{3}")  # no chunks
    assert not sampling.chunk_format_ok(ok + "\nextra")  # text outside chunks
    assert not sampling.chunk_format_ok("<chunk>b = 3</chunk>")  # no boxed answer
    assert not sampling.chunk_format_ok("<chunk>\\boxed{3}</chunk><chunk>b = 3</chunk>")


def test_summarize_counts_steps_tokens_accuracy():
    recs = [{"response": "<chunk>x</chunk>\n\n<chunk>\\boxed{1}</chunk>", "correct": True,
             "n_tokens": 10, "finished": True},
            {"response": "<chunk>\\boxed{2}</chunk>", "correct": False, "n_tokens": 4, "finished": False}]
    s = sampling.summarize(recs, chunked=True)
    assert (s["avg_acc"], s["steps"], s["tokens"], s["finished"], s["format_ok"]) == (50.0, 1.5, 7.0, 50.0, 100.0)
    raw = sampling.summarize([{"response": "a\n\nb\n\n\n\nc", "correct": True, "n_tokens": 3,
                               "finished": True}], chunked=False)
    assert raw["steps"] == 3 and "format_ok" not in raw


def test_toy_task_items_and_checking():
    items = tasks.load_problems("toy", "eval", 5, seed=0)
    it = items[0]
    assert set(it) >= {"id", "problem", "answer", "toy"}
    assert tasks.is_correct(it, f"so \\boxed{{{it['answer']}}}.")
    assert not tasks.is_correct(it, "no answer")
    with pytest.raises(ValueError, match="unknown task"):
        tasks.load_problems("mmlu", "eval", 1, 0)


@pytest.mark.parametrize("gold,response,ok", [
    ("\\frac{1}{2}", "The answer is \\boxed{0.5}", True),
    ("\\frac{1}{2}", "so \\boxed{\\dfrac{1}{2}}", True),
    ("3", "Thus $x = \\boxed{3}$.", True),
    ("3", "\\boxed{4}", False),
    ("\\sqrt{2}", "\\boxed{2^{1/2}}", True),
    ("(1, 2)", "\\boxed{(1,2)}", True),
    ("5", "I cannot solve it.", False),
])
def test_math_verify_literal_cases(gold, response, ok):
    assert tasks.math_verify_correct(gold, response) is ok
