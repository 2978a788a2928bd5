"""Chunk-Reset Reasoning with scripted policy and judge fakes (paper §4.4, Table 7)."""

import pytest

from stepwiser_lib.engines.models import Completion
from stepwiser_lib.method.chunk_reset import ResetConfig, chunk_reset, summarize


class ScriptedPolicy:
    """Returns the next scripted chunk for each problem; ``n_tokens`` = words + 1."""

    def __init__(self, scripts):
        self.scripts = {p: list(xs) for p, xs in scripts.items()}
        self.calls = []

    def generate(self, prompts, n=1, temperature=1.0, max_new_tokens=96, stop=None, seed=0, prefixes=None, **kw):
        assert stop == ["</chunk>"] and n == 1
        self.calls.append(list(zip(prompts, prefixes)))
        out = []
        for p in prompts:
            prob = p.split("::")[1]
            text = self.scripts[prob].pop(0) if self.scripts[prob] else ""
            out.append([Completion(text=text, n_tokens=len(text.split()) + 1 if text else 1, finished=True)])
        return out


class ScriptedJudge:
    """Negative iff the chunk contains "BAD"; records every call."""

    def __init__(self):
        self.calls = []

    def judge(self, triples, k=1, seed=0, **kw):
        self.calls.append(triples)
        return [
            {
                "verdict": "Negative" if "BAD" in c else "Positive",
                "score": 0.0 if "BAD" in c else 1.0,
                "analysis": f"saw {c}",
            }
            for _, _, c in triples
        ]


T = "solve::{problem}"
C = lambda s: f"<chunk>{s}</chunk>"  # noqa: E731


def test_accept_path_counts_lengths():
    pol = ScriptedPolicy({"p": [C("a one"), "\n" + C("b two"), "\n" + C("so \\boxed{3}")]})
    j = ScriptedJudge()
    [r] = chunk_reset(pol, j, ["p"], T, ResetConfig(), progress=False)
    assert r["response"] == C("a one") + "\n" + C("b two") + "\n" + C("so \\boxed{3}")
    assert r["chunks"] == 3 and r["resets"] == 0 and r["rejected_tokens"] == 0
    assert r["accepted_tokens"] == 3 + 3 + 3 and r["judge_calls"] == 3
    # the judge saw the accepted history each time, and the prefix grew
    assert [h for _, h, _ in (c[0] for c in j.calls)] == [[], ["a one"], ["a one", "b two"]]
    assert [pref for (_, pref) in (c[0] for c in pol.calls)] == ["", C("a one"), C("a one") + "\n" + C("b two")]


def test_reject_then_accept():
    pol = ScriptedPolicy({"p": [C("BAD x"), C("BAD yy z"), C("good"), "\n" + C("\\boxed{1}")]})
    [r] = chunk_reset(pol, ScriptedJudge(), ["p"], T, ResetConfig(), progress=False)
    assert r["response"] == C("good") + "\n" + C("\\boxed{1}")
    assert r["resets"] == 2 and r["exhausted"] == 0
    assert r["rejected_tokens"] == 3 + 4  # both discarded chunks
    assert r["accepted_tokens"] == 2 + 2
    t = r["trace"][0]
    assert t["accepted"] == 2 and [a["verdict"] for a in t["attempts"]] == ["Negative", "Negative", "Positive"]
    # every retry started from the same (empty) prefix
    assert [c[0][1] for c in pol.calls[:3]] == ["", "", ""]


@pytest.mark.parametrize("rule,expected", [("best_score", 4), ("last", 4), ("first", 0)])
def test_five_rejections_fall_back(rule, expected):
    chunks = [C(f"BAD {i}") for i in range(5)] + ["\n" + C("\\boxed{2}")]
    pol = ScriptedPolicy({"p": chunks})
    [r] = chunk_reset(pol, ScriptedJudge(), ["p"], T, ResetConfig(on_exhausted=rule), progress=False)
    t = r["trace"][0]
    assert len(t["attempts"]) == 5 and t["exhausted"] and t["accepted"] == expected
    assert r["response"].startswith(C(f"BAD {expected}"))
    assert r["rejected_tokens"] == 4 * 3 and r["exhausted"] == 1 and r["resets"] == 4


def test_best_score_fallback_prefers_highest_score():
    class Graded(ScriptedJudge):
        def judge(self, triples, k=1, seed=0, **kw):
            return [{"verdict": "Negative", "score": float(c.split()[1]) / 10, "analysis": ""} for _, _, c in triples]

    pol = ScriptedPolicy({"p": [C("BAD 3"), C("BAD 7"), C("BAD 7"), C("BAD 1"), C("BAD 2 \\boxed{1}")]})
    [r] = chunk_reset(pol, Graded(), ["p"], T, ResetConfig(max_chunks=1), progress=False)
    assert r["trace"][0]["accepted"] == 2  # highest score 0.7, tie -> the latest


def test_judge_final_off_and_no_judge_baseline():
    pol = ScriptedPolicy({"p": [C("BAD \\boxed{9}")]})
    j = ScriptedJudge()
    [r] = chunk_reset(pol, j, ["p"], T, ResetConfig(judge_final=False), progress=False)
    assert r["judge_calls"] == 0 and r["response"] == C("BAD \\boxed{9}") and not j.calls
    pol = ScriptedPolicy({"p": [C("BAD a"), "\n" + C("BAD \\boxed{9}")]})
    [r] = chunk_reset(pol, None, ["p"], T, ResetConfig(), progress=False)  # the plain chunk policy
    assert r["chunks"] == 2 and r["resets"] == 0 and r["judge_calls"] == 0


def test_batched_problems_advance_together_and_end_on_format_break():
    pol = ScriptedPolicy(
        {"p": [C("BAD"), C("ok"), "\n" + C("\\boxed{1}")], "q": [C("fine \\boxed{5}")], "r": ["no chunk tags at all"]}
    )
    res = chunk_reset(pol, ScriptedJudge(), ["p", "q", "r"], T, ResetConfig(), progress=False)
    assert [x["chunks"] for x in res] == [2, 1, 0]
    assert len(pol.calls[0]) == 3 and len(pol.calls[1]) == 1  # one batched call per round
    assert res[2]["response"] == "no chunk tags at all" and res[2]["judge_calls"] == 0
    s = summarize(res, [True, True, False], seconds=1.234)
    assert s["n"] == 3 and s["accuracy"] == pytest.approx(66.67) and s["seconds"] == 1.2
    assert s["rejected_length"] == pytest.approx(2 / 3, abs=0.05)


def test_max_chunks_bound_and_bad_config():
    pol = ScriptedPolicy({"p": [C(f"step {i}") for i in range(10)]})
    [r] = chunk_reset(pol, ScriptedJudge(), ["p"], T, ResetConfig(max_chunks=3), progress=False)
    assert r["chunks"] == 3
    with pytest.raises(ValueError, match="on_exhausted"):
        ResetConfig(on_exhausted="random")


class SeededChunkPolicy:
    """Writes random chunks like a sampler: with ``seeds`` each prompt draws from its own seed;
    without, from the call's shared ``seed`` and its place in the batch (as a batched sampler's
    shared stream does). Three chunks, then a boxed answer; a chunk is BAD with probability 0.3."""

    def generate(self, prompts, n=1, temperature=1.0, max_new_tokens=96, stop=None, seed=0, prefixes=None, seeds=None):
        import random

        out = []
        for i, (_p, pre) in enumerate(zip(prompts, prefixes)):
            rng = random.Random(seeds[i] if seeds is not None else f"{seed}|{i}")
            k = pre.count("<chunk>")
            body = (
                f"\\boxed{{{rng.randint(0, 9)}}}"
                if k == 3
                else f"v{rng.randint(0, 999)}{' BAD' if rng.random() < 0.3 else ''}"
            )
            out.append([Completion(text=("\n" if pre else "") + C(body), n_tokens=2, finished=True)])
        return out


class AcceptAll:
    def judge(self, triples, k=1, seed=0, **kw):
        return [{"verdict": "Positive", "score": 1.0, "analysis": ""} for _ in triples]


class RejectOne(ScriptedJudge):
    """Rejects the BAD chunks of one problem only; accepts everything elsewhere."""

    def __init__(self, problem):
        super().__init__()
        self.problem = problem

    def judge(self, triples, k=1, seed=0, **kw):
        return [
            {"verdict": "Negative", "score": 0.0, "analysis": ""}
            if p == self.problem and "BAD" in c
            else {"verdict": "Positive", "score": 1.0, "analysis": ""}
            for p, _, c in triples
        ]


def test_common_random_numbers_accept_all_reproduces_no_judge():
    """A judge that accepts every chunk gives exactly the plain policy's responses (paired arms)."""
    probs = [f"p{i}" for i in range(8)]
    base = chunk_reset(SeededChunkPolicy(), None, probs, T, ResetConfig(seed=3), progress=False)
    acc = chunk_reset(SeededChunkPolicy(), AcceptAll(), probs, T, ResetConfig(seed=3), progress=False)
    assert [r["response"] for r in acc] == [r["response"] for r in base]
    assert all(r["judge_calls"] == 4 for r in acc) and all(r["judge_calls"] == 0 for r in base)
    other = chunk_reset(SeededChunkPolicy(), None, probs, T, ResetConfig(seed=4), progress=False)
    assert [r["response"] for r in other] != [r["response"] for r in base]  # the seed still matters


def test_common_random_numbers_one_problems_resets_leave_the_others_alone():
    """Rejections on p0 change its batch position history, not what p1..p7 draw. (Under a shared
    per-round stream they would: the fake's draws depend on batch position then.)"""
    probs = [f"p{i}" for i in range(8)]
    base = chunk_reset(SeededChunkPolicy(), None, probs, T, ResetConfig(seed=1), progress=False)
    assert "BAD" in base[0]["response"]  # p0 has something to reject at this seed
    rej = chunk_reset(SeededChunkPolicy(), RejectOne("p0"), probs, T, ResetConfig(seed=1), progress=False)
    assert rej[0]["resets"] > 0 and rej[0]["response"] != base[0]["response"]
    assert [r["response"] for r in rej[1:]] == [r["response"] for r in base[1:]]
    # a reset draws a fresh chunk: the attempt index is part of the seed
    t = next(t for t in rej[0]["trace"] if len(t["attempts"]) > 1)
    assert len({a["content"] for a in t["attempts"]}) > 1


def test_draw_seed_is_stable():
    from stepwiser_lib.method.chunk_reset import draw_seed

    assert draw_seed(0, "p", 1, 2) == draw_seed(0, "p", 1, 2) != draw_seed(0, "p", 1, 3)
    assert 0 <= draw_seed("judge", 0, "p", 0, 0) < 2**31


def test_run_arm_checks_each_response_and_summarizes():
    from stepwiser_lib.method.chunk_reset import run_arm

    pol = ScriptedPolicy({"p": [C("BAD a"), C("ok \\boxed{9}")], "q": [C("\\boxed{8}")]})
    items = [{"problem": "p", "answer": "9"}, {"problem": "q", "answer": "9"}]
    rec = run_arm(pol, ScriptedJudge(), items, T, ResetConfig(), lambda it, resp: f"\\boxed{{{it['answer']}}}" in resp)
    assert rec["correct"] == [True, False]
    assert rec["summary"]["accuracy"] == 50.0 and rec["summary"]["resets"] == 0.5 and "seconds" in rec["summary"]
    assert [r["response"] for r in rec["results"]] == [C("ok \\boxed{9}"), C("\\boxed{8}")]


def test_run_grid_table_and_comparisons_pair_every_arm(tmp_path, capsys):
    """Notebook 06's driver end to end on the seeded fake: the accept-all judge equals the no-judge
    row (common random numbers), the judge is loaded once and only when a run is not on disk."""
    from stepwiser_lib.method import chunk_reset as cr

    items = {"toy": [{"id": str(i), "problem": f"p{i}", "answer": "3"} for i in range(6)]}
    loads = []

    def load(entry):
        loads.append(entry["name"])
        return AcceptAll()

    correct = lambda it, resp: "\\boxed{3}" in resp  # noqa: E731
    kw = dict(policy_fingerprint="fp", max_completion=8, is_correct=correct)
    reg = {"stepwiser:rel_ratio": {"name": "stepwiser:rel_ratio"}}
    runs = cr.run_grid(SeededChunkPolicy(), reg, load, items, T, ResetConfig(seed=2), 2, tmp_path, **kw)
    assert list(runs) == [
        (cr.NO_JUDGE, "toy", 0),
        (cr.NO_JUDGE, "toy", 1),
        ("stepwiser:rel_ratio", "toy", 0),
        ("stepwiser:rel_ratio", "toy", 1),
        (cr.GREEDY, "toy", 0),
    ]
    assert loads == ["stepwiser:rel_ratio"]
    assert runs[("stepwiser:rel_ratio", "toy", 1)]["correct"] == runs[(cr.NO_JUDGE, "toy", 1)]["correct"]
    cr.run_grid(SeededChunkPolicy(), reg, load, items, T, ResetConfig(seed=2), 2, tmp_path, **kw)
    assert loads == ["stepwiser:rel_ratio"]  # everything from disk: no judge loaded
    rows, seeds = cr.table(runs, ["toy"])
    assert [r["method"] for r in rows] == [cr.NO_JUDGE, "stepwiser:rel_ratio", cr.GREEDY]
    assert seeds[cr.GREEDY] == [0] and rows[0]["runs"] == 2 and rows[0]["toy acc"] == rows[1]["toy acc"]
    preds = cr.predictions(runs, items, seeds, 2)
    assert len(preds[cr.NO_JUDGE]) == 12 and {p["seed"] for p in preds[cr.NO_JUDGE]} == {2, 3}
    comps = cr.comparisons(preds)
    assert [c["claim"] for c in comps] == [
        "the judge helps chunk-reset (Table 7)",
        "greedy decoding beats sampling (no judge)",
    ]
    assert comps[0]["diff"] == 0 and comps[0]["b"] == cr.NO_JUDGE
    assert cr.reset_example(runs, items, list(reg)) is None  # accept-all never resets
    rep = cr.report(runs, items, judge_k=1, max_chunk_tokens=64, seed=2)  # the same, in one call
    assert [r["method"] for r in rep["rows"]] == [r["method"] for r in rows] and rep["seeds_of"] == seeds
    assert rep["comparisons"] == comps and rep["cut"] == cr.cut_note(rep["rows"], 64)
    lo, hi = rep["ci"][cr.NO_JUDGE]
    assert rep["rows"][0]["avg acc 95% interval"] == f"[{lo}, {hi}]" and lo <= rows[0]["avg acc"] <= hi
    md = cr.results_markdown(rows, comps, cr.paper_rows("1.5B"), 2)
    assert md.startswith("Chunk-Reset Reasoning on held-out problems (ours; mean over 2 seeds):") and "PAPER 1.5B" in md


def test_reset_example_shows_the_rejected_and_the_accepted_attempt():
    from stepwiser_lib.method import chunk_reset as cr

    pol = ScriptedPolicy({"p": [C("BAD x"), C("good"), "\n" + C("\\boxed{1}")]})
    rec = cr.run_arm(pol, ScriptedJudge(), [{"problem": "p", "answer": "1"}], T, ResetConfig(), lambda it, r: True)
    text = cr.reset_example(
        {("stepwiser:rel_ratio", "toy", 0): rec}, {"toy": [{"problem": "p", "answer": "1"}]}, ["stepwiser:rel_ratio"]
    )
    assert "attempt 0 [REJECTED, judge Negative]" in text and "attempt 1 [ACCEPTED, judge Positive]" in text
    assert "judge analysis: saw BAD x" in text and "ACCEPTED HISTORY: (none)" in text
    assert text.endswith("WHAT THIS RESET DID: the exact checker cannot judge these chunks (not a toy problem)")


def test_reset_effect_says_whether_a_reset_helped_by_the_exact_checker():
    from stepwiser_lib.method import chunk_reset as cr

    p = "a = 49. b = a + 11. c = b + 11. Find c."
    right, wrong = "b = a + 11 = 49 + 11 = 60", "b = a + 11 = 49 + 11 = 50"
    step = lambda contents, k: {"attempts": [{"content": c} for c in contents], "accepted": k}  # noqa: E731
    assert (
        cr.reset_effect(p, step([right, wrong], 1))
        == "it rejected a right chunk and accepted a wrong one: a reset that hurt"
    )
    assert (
        cr.reset_effect(p, step([wrong, right], 1))
        == "it rejected a wrong chunk and accepted a right one: a reset that helped"
    )
    assert cr.reset_effect(p, step([right, right], 1)).endswith("tokens spent, nothing gained")
    assert cr.reset_effect(p, step([wrong, right, wrong], 2)) == (
        "by the exact checker, attempt 0 wrong, attempt 1 right, attempt 2 wrong; attempt 2 kept"
    )


def test_summary_line_says_a_run_in_words():
    from stepwiser_lib.method import chunk_reset as cr

    sm = {"n": 64, "accuracy": 85.94, "judge_calls": 11.66, "resets": 7.14, "exhausted": 1.719, "cut_at_limit": 0.0}
    assert cr.summary_line(sm) == (
        "accuracy 85.9% on 64 problems; per problem 11.7 judge calls, 7.1 resets, "
        "1.7 chunks exhausted (every attempt rejected)"
    )
    assert cr.summary_line({"n": 64, "accuracy": 87.5, "judge_calls": 0.0}) == "accuracy 87.5% on 64 problems"


def test_paper_rows_keep_the_rules_a_run_trained():
    from stepwiser_lib.method import chunk_reset as cr

    assert len(cr.paper_rows("1.5B")) == 7
    rows = cr.paper_rows("1.5B", rules={"rel_ratio"})
    assert [r["method"] for r in rows] == [
        "PAPER 1.5B: Qwen2.5-1.5B-chunk (no judge) -",
        "PAPER 1.5B: Discriminative + SFT rel_ratio",
        "PAPER 1.5B: Generative CoT + RL (StepWiser) rel_ratio",
    ]


def test_rejection_lines_compare_the_judges_cost_with_the_papers():
    from stepwiser_lib.method import chunk_reset as cr

    rows = [
        {"method": "chunk policy (no judge)", "rejected_length": 0.0},
        {"method": "stepwiser:rel_ratio", "rejected_length": 61.7},
        {"method": "disc_sft:rel_ratio", "rejected_length": 108.9},
        {"method": "stepwiser:abs_q", "rejected_length": 90.0},
    ]
    assert cr.rejection_lines(rows) == [
        "Rejected tokens per solution (rel_ratio): generative 61.7, discriminative 108.9: the discriminative judge "
        "rejects more here, the reverse of the paper's, where the generative judges reject more (Table 7)."
    ]  # abs_q has no discriminative judge: no line
    rows[1]["rejected_length"] = 120.0
    assert cr.rejection_lines(rows)[0].endswith("the generative judge rejects more here, as in the paper (Table 7).")
