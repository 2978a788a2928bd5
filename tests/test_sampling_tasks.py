import pytest

from stepwiser_lib.core import paths
from stepwiser_lib.method import sampling, tasks
from stepwiser_lib.tools import data


def test_chunk_format_ok():
    ok = "<chunk>b = a + 1 = 2 + 1 = 3</chunk>\n\n<chunk>So the answer is \\boxed{3}.</chunk>"
    assert sampling.chunk_format_ok(ok)
    assert not sampling.chunk_format_ok("b = 3\n\n\\boxed{3}")  # no chunks
    assert not sampling.chunk_format_ok(ok + "\nextra")  # text outside chunks
    assert not sampling.chunk_format_ok("<chunk>b = 3</chunk>")  # no boxed answer
    assert not sampling.chunk_format_ok("<chunk>\\boxed{3}</chunk><chunk>b = 3</chunk>")


def test_summarize_counts_steps_tokens_accuracy():
    recs = [
        {
            "response": "<chunk>x</chunk>\n\n<chunk>\\boxed{1}</chunk>",
            "correct": True,
            "n_tokens": 10,
            "finished": True,
        },
        {"response": "<chunk>\\boxed{2}</chunk>", "correct": False, "n_tokens": 4, "finished": False},
    ]
    s = sampling.summarize(recs, chunked=True)
    assert (s["avg_acc"], s["steps"], s["tokens"], s["finished"], s["format_ok"]) == (50.0, 1.5, 7.0, 50.0, 100.0)
    raw = sampling.summarize(
        [{"response": "a\n\nb\n\n\n\nc", "correct": True, "n_tokens": 3, "finished": True}], chunked=False
    )
    assert raw["steps"] == 3 and "format_ok" not in raw


def test_toy_task_items_and_checking():
    items = tasks.load_problems("toy", "eval", 5, seed=0)
    it = items[0]
    assert set(it) >= {"id", "problem", "answer", "toy"}
    assert tasks.is_correct(it, f"so \\boxed{{{it['answer']}}}.")
    assert not tasks.is_correct(it, "no answer")
    with pytest.raises(ValueError, match="unknown task"):
        tasks.load_problems("mmlu", "eval", 1, 0)


@pytest.mark.parametrize(
    "gold,response,ok",
    [
        ("\\frac{1}{2}", "The answer is \\boxed{0.5}", True),
        ("\\frac{1}{2}", "so \\boxed{\\dfrac{1}{2}}", True),
        ("3", "Thus $x = \\boxed{3}$.", True),
        ("3", "\\boxed{4}", False),
        ("\\sqrt{2}", "\\boxed{2^{1/2}}", True),
        ("(1, 2)", "\\boxed{(1,2)}", True),
        ("5", "I cannot solve it.", False),
    ],
)
def test_math_verify_literal_cases(gold, response, ok):
    assert tasks.math_verify_correct(gold, response) is ok


@pytest.mark.parametrize(
    "gold,response,ok",
    [
        # an unfinished response whose last number equals the gold is wrong: no box, no answer
        ("72", "... 9 * 8 = 72 dollars per day, and then we need to", False),
        ("72", "so 9 * 8 = 72 dollars \\boxed{72}", True),
        # MATH-500 golds with escaped dollars parse once the \$ is dropped
        ("\\$32,\\!348", "\\boxed{\\$32,\\!348}", True),
        ("\\$18.90", "\\boxed{18.90}", True),
        ("\\$36", "the total is \\boxed{36}", True),
        # the last balanced box decides, nested braces included
        ("\\frac{1}{2}", "(1) \\boxed{2} (2) \\boxed{\\frac{1}{2}}", True),
        ("2", "(1) \\boxed{2} (2) \\boxed{\\frac{1}{2}}", False),
        # a boxed gold (a NuminaMath reference solution) reads its last box
        ("so \\boxed{3\\sqrt{2}}", "\\boxed{\\sqrt{18}}", True),
    ],
)
def test_math_verify_box_rules(gold, response, ok):
    assert tasks.math_verify_correct(gold, response) is ok


def _real(name):
    """A real data file: data/full's after `make data`, else the committed fixture's."""
    return str(paths.real_data_dir() / name)


def test_math500_and_gsm8k_load_from_a_path():
    m = tasks.load_problems("math500", "eval", 0, seed=0, path=_real("math500/test.jsonl"))
    g = tasks.load_problems("gsm8k", "eval", 10, seed=0, path=_real("gsm8k/test.jsonl"))
    fixture = paths.real_data_dir() == paths.FIXTURES_DIR
    n = data.FIXTURE_LINES["math500/test.jsonl"] if fixture else data.SOURCES["math500/test.jsonl"]["records"]
    assert len(m) == n and len(g) == 10 and m[0]["id"].startswith("test/")  # every one, in order (n = 0)
    # every MATH-500 reference answer verifies against its own reference solution
    rows = tasks.read_records(_real("math500/test.jsonl"))
    ok = [tasks.math_verify_correct(r["answer"], r["solution"]) for r in rows]
    assert sum(ok) >= 0.97 * len(rows), sum(ok)
    assert all(it["answer"].replace(".", "").isdigit() for it in g)


def test_numina_pool_from_a_local_file(tmp_path):
    """The hub path's filter on a local file in NuminaMath-CoT's schema: dedupe, disjoint hash
    pools, nested boxed answers kept, unparsable ones dropped; the filtered pool is cached."""
    import json

    rows = [
        {"source": "t", "problem": f"Problem {i}?", "solution": f"so \\boxed{{\\frac{{{i}}}{{2}}}}", "messages": []}
        for i in range(300)
    ]
    rows += [
        {"source": "t", "problem": "Problem 1?", "solution": "dup \\boxed{9}", "messages": []},
        {"source": "t", "problem": "No box?", "solution": "it is 3", "messages": []},
    ]
    f = tmp_path / "numina.jsonl"
    f.write_text("".join(json.dumps(r) + "\n" for r in rows))
    pools = {s: tasks.numina_pool(s, path=str(f), cache_dir=tmp_path / "cache") for s in tasks.NUMINA_BUCKETS}
    ids = [set(x["id"] for x in p) for p in pools.values()]
    assert sum(map(len, ids)) == 300 and len(set().union(*ids)) == 300  # disjoint, all kept
    assert all(x["answer"].startswith("\\frac{") for p in pools.values() for x in p)
    assert len(list((tmp_path / "cache").glob("*.jsonl"))) == 4
    a = tasks.load_problems("numina", "sft", 5, seed=1, path=str(f), cache_dir=tmp_path / "cache")
    assert a == tasks.load_problems("numina", "sft", 5, seed=1, path=str(f), cache_dir=tmp_path / "cache")
    assert len(a) == 5 and {x["id"] for x in a} <= ids[0]
    f.write_text(f.read_text() + json.dumps({"source": "t", "problem": "New?", "solution": "\\boxed{1}"}) + "\n")
    tasks.numina_pool("sft", path=str(f), cache_dir=tmp_path / "cache")  # a changed file: a new key
    assert len(list((tmp_path / "cache").glob("sft-*.jsonl"))) == 2


def test_check_many_answers_as_is_correct_in_a_process_pool(monkeypatch):
    """Issue 34: real-math answer checks go to a process pool (``STEPWISER_CHECK_WORKERS``) and
    give exactly :func:`is_correct`'s answers, in order; toy checks and short lists stay here."""
    from stepwiser_lib.method import tasks

    gold = {"id": "g", "problem": "?", "answer": "\\frac{1}{2}"}
    toy = tasks.load_problems("toy", "eval", 2, seed=0)[0]
    pairs = [
        (gold, "so \\boxed{0.5}"),
        (gold, "\\boxed{1/2}"),
        (gold, "\\boxed{2}"),
        (gold, None),
        (gold, "no box 1/2"),
        (toy, f"\\boxed{{{toy['answer']}}}"),
    ] * 50
    want = [tasks.is_correct(it, r) for it, r in pairs]
    assert want[:6] == [True, True, False, False, False, True]
    monkeypatch.setattr(tasks, "POOL_MIN_CHECKS", 10)
    assert tasks.check_many(pairs, workers=2) == want and tasks._POOL["workers"] == 2  # through the pool
    assert tasks.check_many(pairs, workers=1) == want
    monkeypatch.setenv(tasks.ENV_CHECK_WORKERS, "3")
    assert tasks.check_workers() == 3
    monkeypatch.setenv(tasks.ENV_CHECK_WORKERS, "many")
    with pytest.raises(ValueError, match="STEPWISER_CHECK_WORKERS='many'"):
        tasks.check_workers()
    tasks._POOL["pool"].shutdown()
    tasks._POOL.clear()
