import pytest

from stepwiser_lib.method import judge_train
from stepwiser_lib.method.judge import parse_verdict, verdict_reward


@pytest.mark.parametrize(
    "text,expected",
    [
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
    ],
)
def test_parse_verdict(text, expected):
    assert parse_verdict(text) == expected


def test_verdict_reward_literal_cases():
    comps = ["\\boxed{Positive}", "\\boxed{Positive}", "\\boxed{Negative}", "no verdict", "\\boxed{negative}"]
    labels = [True, False, False, True, False]
    assert verdict_reward(comps, label=labels) == [1.0, 0.0, 1.0, 0.0, 1.0]


def test_verdict_reward_trl_calling_convention():
    # TRL calls reward functions with prompts, completions, completion_ids, every dataset column
    # as a keyword list and the trainer state; conversational completions are message lists.
    comps = [
        [{"role": "assistant", "content": "ok \\boxed{Positive}"}],
        [{"role": "assistant", "content": "bad \\boxed{Positive}"}],
    ]
    r = verdict_reward(
        prompts=["p", "q"],
        completions=comps,
        completion_ids=[[1], [2]],
        label=[True, False],
        problem=["x", "y"],
        trainer_state=None,
    )
    assert r == [1.0, 0.0]
    with pytest.raises(ValueError, match="label"):
        verdict_reward(["\\boxed{Positive}"])


def _examples(n=200):
    import random

    from stepwiser_lib.toy import toyworld as tw

    rng = random.Random(0)
    out = []
    for p in tw.generate_problems("label", n, seed=4):
        hist, step, _ = tw.check_example(p, rng)
        out.append(
            {"problem": p.text, "history": [hist] if hist else [], "chunk": step, "label": tw.check_step(p, step).ok}
        )
    return out


def test_warmup_teaches_format_not_labels():
    from stepwiser_lib.toy.judge_text import analysis_implied, toy_analysis, warmup_records

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
    implied = [analysis_implied(r["completion"]) for r in recs]
    assert implied == [e["label"] for e in ex]
    assert all(r["completion"].startswith(toy_analysis(e["problem"], e["chunk"])) for r, e in zip(recs, ex))
    assert recs == warmup_records(ex, seed=0)
    assert recs[0]["prompt"].startswith("Judge the new chunk")


def test_warmup_on_the_models_own_analyses_keeps_them_as_they_are():
    """WARMUP_ANALYSIS: own (issue 47): the CoT warm-up's analysis is whatever the initial model
    wrote for the chunk under the checking prompt, then the same coin-flip box."""
    from stepwiser_lib.core.prompts import EMPTY_HISTORY, check_prompt
    from stepwiser_lib.toy.judge_text import warmup_records

    ex = _examples(6)
    own = [f"my check {i}\n" for i in range(6)]
    recs = warmup_records(ex, seed=0, analyses=own)
    assert [r["completion"].split("\n")[0] for r in recs] == [f"my check {i}" for i in range(6)]
    assert [parse_verdict(r["completion"]) for r in recs] == [
        parse_verdict(r["completion"]) for r in warmup_records(ex)
    ]
    with pytest.raises(ValueError, match="5 analyses for 6"):
        warmup_records(ex, analyses=own[:5])
    assert check_prompt("a = 1. Find a.", [], "a = 1") == (
        f"Recompute the new step.\nProblem: a = 1. Find a.\nHistory: {EMPTY_HISTORY}\nNew step: a = 1"
    )
    assert "History: x\n\ny\n" in check_prompt("p", ["x", "y"], "z")


def test_warmup_verdict_implied_reads_the_records_own_analysis_only():
    """WARMUP_VERDICT: implied (issue 59): the verdict is the one the record's own analysis
    implies (every difference 0 -> Positive), a coin flip where the analysis is unreadable, and
    labels are never read; coin (the default) keeps the old records byte for byte."""
    from stepwiser_lib.toy.judge_text import warmup_records

    ex = _examples(6)
    own = [
        "stated c = 5\ncheck c: c = 5; stated 5; 5 - 5 = 0",
        "stated c = 6\ncheck c: c = 5; stated 6; 6 - 5 = 1",
        "check: no new value",
        "check d: not defined",
        "garbled text",
        "stated c = 5\ncheck c: c = 5; stated 5; 5 - 5 = 0\ncheck answer: c = 5; stated 7; 7 - 5 = 2",
    ]
    recs = warmup_records(ex, seed=0, analyses=own, verdict="implied")
    coin = [parse_verdict(r["completion"]) for r in warmup_records(ex, seed=0, analyses=own)]
    got = [parse_verdict(r["completion"]) for r in recs]
    assert got[:4] == ["Positive", "Negative", "Positive", "Negative"]
    assert got[4] == coin[4]  # unreadable: the same coin flip as the coin warm-up
    assert got[5] == "Negative"
    flipped = [{**e, "label": not e["label"]} for e in ex]
    assert recs == warmup_records(flipped, seed=0, analyses=own, verdict="implied")
    assert warmup_records(ex, seed=0, analyses=own, verdict="coin") == warmup_records(ex, seed=0, analyses=own)
    with pytest.raises(ValueError, match="warm-up verdict 'label'"):
        warmup_records(ex, analyses=own, verdict="label")


def test_analysis_change_is_paired_by_chunk():
    """The analysis before and after RL on the same chunks (issue 59): counts of chunks that lost
    and gained an exact analysis, and the exact McNemar test on them."""
    from stepwiser_lib.method.judge_runs import analysis_change
    from stepwiser_lib.toy.judge_text import toy_analysis

    ex = _examples(8)
    exact = [{"analysis": toy_analysis(e["problem"], e["chunk"]) + "\n\\boxed{Positive}"} for e in ex]
    wrong = [{"analysis": "check z: not defined"} for _ in ex]
    before = exact[:6] + wrong[6:]  # 6 exact
    after = wrong[:1] + exact[1:]  # lost chunk 0, gained 6 and 7
    r = analysis_change(before, after, ex)
    assert (r["n"], r["lost"], r["gained"], r["exact_before"], r["exact_after"]) == (8, 1, 2, 75.0, 87.5)
    assert r["diff"] == 12.5
    assert r["p"] == 1.0  # 1 against 2 discordant pairs: twice the smaller tail, capped
    assert analysis_change(exact, exact, ex)["p"] == 1.0
    with pytest.raises(ValueError, match="7 and 8 judged chunks for 8"):
        analysis_change(exact[:7], exact, ex)


def test_exploration_counts_what_a_group_can_find():
    """issue 59's exploration diagnostic: exact analyses among k samples, chunks whose greedy
    analysis is inexact but a sample is exact, groups with differing rewards, and the reward rate
    of exact against inexact samples; each a Wilson interval with its count."""
    from stepwiser_lib.method.judge_runs import exploration
    from stepwiser_lib.toy.judge_text import toy_analysis

    ex = _examples(3)
    right = ["Positive" if e["label"] else "Negative" for e in ex]
    wrongv = ["Negative" if e["label"] else "Positive" for e in ex]

    def exact(i, v):
        return toy_analysis(ex[i]["problem"], ex[i]["chunk"]) + f"\n\\boxed{{{v}}}"

    def bad(v):
        return f"check z: not defined\n\\boxed{{{v}}}"

    greedy = [{"analysis": exact(0, right[0])}, {"analysis": bad(right[1])}, {"analysis": bad(right[2])}]
    samples = [
        [exact(0, right[0])] * 4,  # all exact, all rewarded: a group with nothing to learn
        [exact(1, right[1]), bad(wrongv[1]), bad(wrongv[1]), "no verdict"],  # one exact sample, mixed
        [bad(right[2])] * 4,  # greedy inexact, no exact sample
    ]
    r = exploration(ex, greedy, samples, group=4)
    assert r["k"] == 4 and r["group"] == 4
    assert (r["sample_exact"]["rate"], r["sample_exact"]["n"]) == (41.7, 12)  # 5 of 12
    assert (r["sample_rewarded"]["rate"], r["sample_rewarded"]["n"]) == (75.0, 12)  # 4 + 1 + 4
    assert (r["any_exact"]["rate"], r["any_exact"]["n"]) == (66.7, 3)
    assert (r["any_exact_where_greedy_inexact"]["rate"], r["any_exact_where_greedy_inexact"]["n"]) == (50.0, 2)
    assert (r["mixed_group"]["rate"], r["mixed_group"]["n"]) == (33.3, 3)
    assert (r["rewarded_if_exact"]["rate"], r["rewarded_if_exact"]["n"]) == (100.0, 5)
    assert (r["rewarded_if_inexact"]["rate"], r["rewarded_if_inexact"]["n"]) == (57.1, 7)  # 4 of 7
    assert r["mixed_group"]["low"] < 33.3 < r["mixed_group"]["high"]
    with pytest.raises(ValueError, match="3 examples, 2 greedy outputs, 3 sample lists"):
        exploration(ex, greedy[:2], samples)


def test_step_accuracy():
    from stepwiser_lib.method.judge import step_accuracy

    ex = [{"label": True}, {"label": True}, {"label": False}, {"label": False}]
    js = [{"verdict": "Positive"}, {"verdict": None}, {"verdict": "Negative"}, {"verdict": "Positive"}]
    r = step_accuracy(js, ex)
    assert (r["acc"], r["balanced_acc"], r["positive_rate"], r["unparsed"]) == (50.0, 50.0, 50.0, 25.0)


def test_direct_reward_format_penalty():
    from stepwiser_lib.method.judge import is_direct_format, make_direct_reward

    f = make_direct_reward(-1.0)
    comps = [
        "\\boxed{Positive}",
        " \\boxed{Negative}\n",
        "\\boxed{Positive}",
        "so \\boxed{Negative}",
        "\\boxed{maybe}",
        "",
    ]
    labels = [True, False, False, False, True, True]
    assert f(comps, label=labels) == [1.0, 1.0, 0.0, -1.0, -1.0, -1.0]
    assert f(
        completions=[[{"role": "assistant", "content": "\\boxed{Negative}"}]],
        label=[False],
        prompts=["p"],
        trainer_state=None,
    ) == [1.0]
    assert f.__name__ == "direct_reward"  # TRL logs rewards under the function's name
    assert not is_direct_format("\\boxed{Positive} \\boxed{Negative}")


def test_warmup_direct_style_and_label_blindness():
    from stepwiser_lib.toy.judge_text import warmup_records

    ex = _examples(40)
    flipped = [{**e, "label": not e["label"]} for e in ex]
    assert warmup_records(ex, style="direct") == warmup_records(flipped, style="direct")
    assert warmup_records(ex) == warmup_records(flipped)  # labels are never read
    recs = warmup_records(ex, style="direct")
    assert all(r["completion"] in ("\\boxed{Positive}", "\\boxed{Negative}") for r in recs)
    assert recs[0]["prompt"].startswith("Judge the new chunk: answer only")


def test_rsft_select_keeps_label_matching_outputs():
    from stepwiser_lib.method.judge_train import rsft_select

    ex = [
        {"problem": "a = 1. Find a.", "history": [], "chunk": "c", "label": True},
        {"problem": "a = 1. Find a.", "history": [], "chunk": "d", "label": False},
        {"problem": "a = 1. Find a.", "history": [], "chunk": "e", "label": True},
    ]
    samples = [
        ["x \\boxed{Negative}", "y \\boxed{Positive}", "z \\boxed{Positive}"],
        ["\\boxed{Positive}", "no verdict"],
        ["w \\boxed{Positive}", "w \\boxed{Positive}", "v \\boxed{Positive}"],
    ]
    one = rsft_select(ex, samples, per_example=1)
    assert [r["completion"] for r in one] == ["y \\boxed{Positive}", "w \\boxed{Positive}"]
    two = rsft_select(ex, samples, per_example=2)
    assert [r["completion"] for r in two] == [
        "y \\boxed{Positive}",
        "z \\boxed{Positive}",
        "w \\boxed{Positive}",
        "v \\boxed{Positive}",
    ]  # duplicates dropped
    with pytest.raises(ValueError):
        rsft_select(ex, samples[:2])
    # with the RL judge's verdict-only loss, the analysis moves into the prompt: only the verdict is trained on
    v = rsft_select(ex, samples, per_example=1, loss_tokens="verdict")
    assert [r["completion"] for r in v] == ["Positive}", "Positive}"]
    assert (
        v[0]["prompt"] == one[0]["prompt"] + "y \\boxed{"
        and v[0]["prompt"] + v[0]["completion"] == one[0]["prompt"] + one[0]["completion"]
    )


def test_parse_variant_and_truth():
    from stepwiser_lib.core.vocab import KINDS, parse_variant, variant_slug
    from stepwiser_lib.toy.judge_text import chunk_truth

    assert parse_variant("stepwiser:rel_ratio") == ("stepwiser", "rel_ratio")
    assert set(KINDS) == {
        "stepwiser",
        "disc_sft",
        "no_cot_rl",
        "no_balance_rl",
        "rsft",
        "exact_rl",
        "oracle_rl",
        "disc_warmup_sft",
        "restate_rl",
    }
    for bad in ["stepwiser", "magic:rel_ratio", "stepwiser:q", ""]:
        with pytest.raises(ValueError, match="KIND:RULE"):
            parse_variant(bad)
    assert variant_slug("rsft:abs_q") == "rsft__abs_q"
    ex = _examples(60)
    assert all(chunk_truth(e) == e["label"] for e in ex)
    assert chunk_truth({"problem": "What is 2+2?", "chunk": "4"}) is None  # not a toy problem


def test_judge_prompt_styles():
    from stepwiser_lib.core import prompts

    cot = prompts.judge_prompt("paper", "P", ["h1", "h2"], "c")
    direct = prompts.judge_prompt("paper", "P", ["h1", "h2"], "c", style="direct")
    assert "step-by-step chain of thought" in cot and "without any analysis" in direct
    assert "h1\n\nh2" in direct and "New Reasoning Chunk: c" in direct
    with pytest.raises(ValueError, match="style"):
        prompts.judge_prompt("toy", "P", [], "c", style="verbose")


def test_balanced_order_balances_every_step():
    from stepwiser_lib.method.judge_train import balanced_order

    ex = [{"label": i % 3 == 0, "i": i} for i in range(30)]  # 10 positive, 20 negative
    o = balanced_order(ex, 4, seed=0)
    assert sorted(e["i"] for e in o) == list(range(30))  # a permutation: nothing lost
    blocks = [sum(e["label"] for e in o[k : k + 4]) for k in range(0, 20, 4)]
    assert blocks == [2] * 5  # all 10 positives in balanced steps, leftovers last
    assert o == balanced_order(ex, 4, seed=0) and o != balanced_order(ex, 4, seed=1)
    odd = balanced_order([{"label": i % 2 == 0} for i in range(40)], 5, seed=0)
    assert all(sum(e["label"] for e in odd[k : k + 5]) in (2, 3) for k in range(0, 35, 5))


def test_verdict_loss_mask():
    import torch

    from stepwiser_lib.method.judge_train import verdict_loss_mask

    ids = torch.tensor([[5, 6, 9, 7, 0], [9, 5, 8, 7, 7], [1, 2, 3, 4, 0]])
    m = verdict_loss_mask(ids, {8, 9})
    assert m.tolist() == [
        [0, 0, 1, 1, 1],  # from the verdict to the end
        [0, 0, 1, 1, 1],  # the LAST verdict token counts
        [1, 1, 1, 1, 1],
    ]  # no verdict: everything stays in the loss


def test_verdict_tokens_are_single_tokens(toy_model):
    from stepwiser_lib.method.judge_train import verdict_token_ids

    _, tok = toy_model
    ids = verdict_token_ids(tok)
    assert len(ids) == 2
    assert {tok.decode([i]) for i in ids} == {"Positive", "Negative"}


def test_score_auc():
    from stepwiser_lib.method.judge import score_auc

    assert score_auc([0.9, 0.8, 0.1, 0.2], [True, True, False, False]) == 1.0
    assert score_auc([0.1, 0.2, 0.9, 0.8], [True, True, False, False]) == 0.0
    assert score_auc([0.5, 0.5, 0.5, 0.5], [True, False, True, False]) == 0.5  # ties count one half
    assert score_auc([1.0, 0.5, 0.5], [True, True, False]) == 0.75
    # a shift of every score (a judge that says Positive more often) leaves the AUC unchanged
    assert score_auc([0.6, 0.4, 0.2], [True, False, False]) == score_auc([0.9, 0.7, 0.5], [True, False, False])
    assert score_auc([0.3, 0.4], [True, True]) is None


@pytest.mark.parametrize("kind, start", [("disc_sft", "BASE"), ("disc_warmup_sft", "WARMUP")])
def test_discriminative_judges_start_where_they_say(monkeypatch, tmp_path, kind, start):
    """disc_sft trains from the initial model, as the paper's baseline does; disc_warmup_sft from
    the CoT warm-up the generative judge starts from (review W3b), the warm-up's effect on its own."""
    seen = {}

    def fake_train(model_dir, examples, out_dir, settings, progress=True):
        seen["start"] = model_dir
        return {"model_dir": str(out_dir), "seconds": 0.0, "steps": 1, "records": len(examples), "loss_curve": []}

    monkeypatch.setattr(judge_train, "train_disc_judge", fake_train)
    ex = [{"problem": "p", "history": [], "chunk": "c", "label": True, "problem_id": "a"}]
    data = {"rel_ratio": {"train_balanced": ex, "train_unbalanced": ex, "dev_balanced": ex}}
    from stepwiser_lib.engines.trainers import GRPOSettings, SFTSettings

    recipe = {"rl": GRPOSettings(), "disc": SFTSettings()}
    r = judge_train.train_variant(
        f"{kind}:rel_ratio", data, tmp_path, base_model="BASE", warmups={"cot": "WARMUP"}, recipe=recipe
    )
    assert seen["start"] == start and r["entry"]["style"] == "disc" and r["entry"]["base"] == str(tmp_path)


def test_restate_warmup_computes_nothing():
    """The restate_rl ablation's warm-up (review W3d): the analysis restates stated values only,
    so it is the same for a right and a wrong chunk stating the same numbers, and implies no verdict."""
    from stepwiser_lib.core.vocab import WARMUP_OF
    from stepwiser_lib.toy import toyworld as tw
    from stepwiser_lib.toy.judge_text import analysis_implied, warmup_records

    assert tw.restate_text("We have c = b + 6 = 55 + 6 = 62. So \\boxed{62}") == "stated c = 62\nstated answer = 62"
    assert tw.restate_text("Nothing new here.") == "stated: no new value"
    ex = _examples(20)
    recs = warmup_records(ex, style="restate")
    assert [r["prompt"] for r in recs] == [r["prompt"] for r in warmup_records(ex)]  # the CoT judge prompt
    assert all(r["completion"].startswith(tw.restate_text(e["chunk"])) for r, e in zip(recs, ex))
    assert all(analysis_implied(r["completion"]) is None for r in recs)  # nothing to read a verdict from
    assert (
        WARMUP_OF["restate_rl"] == "restate" and WARMUP_OF["disc_sft"] is None and WARMUP_OF["disc_warmup_sft"] == "cot"
    )


def test_recipe_key_holds_only_what_a_kind_trains_with():
    from stepwiser_lib.core.vocab import KINDS
    from stepwiser_lib.engines.trainers import GRPOSettings, SFTSettings
    from stepwiser_lib.method.judge_train import recipe_key

    r = {
        "rl": GRPOSettings(),
        "disc": SFTSettings(lr=5e-4),
        "rsft": SFTSettings(),
        "rsft_samples": 4,
        "rsft_per_example": 1,
        "direct_max_completion": 8,
        "format_penalty": -1.0,
    }
    new_disc = {**r, "disc": SFTSettings(lr=1e-3)}
    assert recipe_key("stepwiser", r) == recipe_key("stepwiser", new_disc)  # no GRPO judge retrained
    assert recipe_key("disc_sft", r) != recipe_key("disc_sft", new_disc)
    assert recipe_key("rsft", {**r, "rl": GRPOSettings(temperature=0.7)}) != recipe_key("rsft", r)  # it samples with rl
    assert all(recipe_key(k, r) for k in KINDS)


def test_self_check_yield_counts_parsable_and_label_matching_samples():
    from stepwiser_lib.engines.models import Completion
    from stepwiser_lib.method.judge import Judge, self_check_yield

    class Scripted:  # chunk "p": two Positive, one Negative, one unparsable; chunk "q": nothing parsable
        def generate(self, prompts, n=1, **kw):
            texts = {
                True: ["\\boxed{Positive}", "x \\boxed{Positive}", "\\boxed{Negative}", "the answer is 7"],
                False: ["7", "8", "9", "10"],
            }
            return [[Completion(t, 1, True) for t in texts["CHUNK-p" in p][:n]] for p in prompts]

    ex = [
        {"problem": "P", "history": [], "chunk": "CHUNK-p", "label": True},
        {"problem": "P", "history": [], "chunk": "CHUNK-p", "label": False},
        {"problem": "Q", "history": [], "chunk": "CHUNK-q", "label": True},
    ]
    r = self_check_yield(Judge(Scripted()), ex, k=4)
    assert (r["chunks"], r["samples"], r["parsable"], r["label_matching"]) == (3, 12, 6, 3)  # 2 + 1


def test_loader_reads_the_notebooks_judge_settings(monkeypatch):
    """Notebooks 05-07 load judges through judge.loader(cfg): one place for the settings they pass."""
    from types import SimpleNamespace

    from stepwiser_lib.method import judge

    calls = []
    monkeypatch.setattr(
        judge,
        "load_judge",
        lambda entry, family, max_new, batch, backend, engine: (
            calls.append((entry["name"], family, max_new, batch, backend, engine)) or "J"
        ),
    )
    v = dict(
        PROMPT_FAMILY="paper",
        MAX_COMPLETION=256,
        JUDGE_BATCH=8,
        JUDGE_BACKEND="hf",
        VLLM_GPU_MEMORY=0.5,
        VLLM_TP=2,
        TEACHER_VLLM_TP=8,
        VLLM_KV_CACHE_GB=0,
        VLLM_EAGER=False,
        VLLM_MAX_MODEL_LEN=4096,
    )
    cfg = SimpleNamespace(**v, as_dict=lambda: v)
    load = judge.loader(cfg)
    assert calls == []  # nothing loads until a judge is asked for
    assert load({"name": "stepwiser:rel_ratio"}) == "J"
    name, family, max_new, batch, backend, engine = calls[0]
    assert (name, family, max_new, batch, backend) == ("stepwiser:rel_ratio", "paper", 256, 8, "hf")
    from stepwiser_lib.engines.models import engine_settings

    assert engine == engine_settings(cfg)
