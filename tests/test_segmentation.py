import pytest

from stepwiser_lib.core import prompts
from stepwiser_lib.method import segmentation as sg
from stepwiser_lib.toy import toyworld as tw

RAW = "We need c.\n\nb = a + 7 = 12 + 7 = 19\n\nSo the answer is \\boxed{19}."


def test_valid_segmentation_accepted():
    seg = tw.teacher_segment(RAW)
    assert sg.segmentation_problems(RAW, seg) == []
    assert sg.reconstructs(RAW, seg)


def test_rejections_name_the_problem():
    seg = tw.teacher_segment(RAW)
    assert "does not reconstruct the original text" in sg.segmentation_problems(RAW, seg.replace("19", "18", 1))
    assert any("outside" in e for e in sg.segmentation_problems(RAW, "Chunks:\n" + seg))
    assert "no chunk" in sg.segmentation_problems(RAW, RAW)
    assert any("empty" in e for e in sg.segmentation_problems(RAW, "<chunk></chunk>" + seg))
    assert any("unbalanced" in e or "nested" in e for e in sg.segmentation_problems(RAW, "<chunk>" + seg))
    # a title in the chunk (as in the paper's appendix figures) changes the text: rejected
    assert not sg.reconstructs(RAW, seg.replace("<chunk>", "<chunk>chunk 1: ", 1))


def test_build_sft_records_caps_and_filters():
    items = []
    for k in range(6):
        items.append({"problem_id": "p1", "problem": "P1", "response": RAW + " " * k, "correct": True})
    items.append({"problem_id": "p1", "problem": "P1", "response": "wrong", "correct": False})
    items.append({"problem_id": "p2", "problem": "P2", "response": RAW, "correct": True})
    items.append({"problem_id": "p2", "problem": "P2", "response": RAW, "correct": True})  # duplicate

    def teacher(rs):  # a teacher that breaks one response
        return [tw.teacher_segment(r) if i else tw.teacher_segment(r).replace("c.", "d.") for i, r in enumerate(rs)]

    recs, st = sg.build_sft_records(items, teacher, max_per_problem=4, policy_prompt=prompts.TOY_CHUNK_POLICY, seed=0)
    assert st.sampled == 9 and st.correct == 8
    assert st.kept == 5  # 4 for p1 (cap), 1 for p2 (duplicate removed)
    assert st.accepted == 4 and sum(st.rejected_reasons.values()) == 1
    assert all(r["prompt"].endswith("Problem: " + ("P1" if r["problem_id"] == "p1" else "P2")) for r in recs)
    assert all(tw.strip_tags(r["completion"]) == r["raw"] for r in recs)
    again, _ = sg.build_sft_records(items, teacher, 4, prompts.TOY_CHUNK_POLICY, seed=0)
    assert again == recs  # deterministic for a seed


def test_table4_comparisons_pair_steps_and_accuracy_by_problem():
    from stepwiser_lib.method import sampling

    base_recs = [
        {"problem_id": f"q{i}", "sample": s, "correct": s == 0, "response": "a\n\nb\n\nc\n\n\\boxed{1}"}
        for i in range(10)
        for s in range(2)
    ]  # 4 paragraphs, right on one sample of two
    chunk_recs = [
        {
            "problem_id": f"q{i}",
            "sample": s,
            "correct": True,
            "response": "<chunk>a b</chunk><chunk>c \\boxed{1}</chunk>",
        }
        for i in range(10)
        for s in range(2)
    ]
    base = sampling.solution_predictions("base", "toy", 1, base_recs, chunked=False)
    chunk = sampling.solution_predictions("chunk", "toy", 1, chunk_recs, chunked=True)
    assert base[0] == {
        "method": "base",
        "task": "toy",
        "seed": 1,
        "problem_id": "q0",
        "sample": 0,
        "correct": True,
        "steps": 4,
    }
    assert chunk[0]["steps"] == 2
    steps, acc = sg.table4_comparisons(chunk, base, n_boot=200)
    assert (steps["claim"], steps["field"], steps["diff"], steps["low"], steps["high"]) == (
        "self-segmentation gives fewer steps per solution",
        "steps",
        -2.0,
        -2.0,
        -2.0,
    )
    assert (acc["field"], acc["diff"], acc["low"], acc["high"], acc["verdict"]) == (
        "correct",
        50.0,
        50.0,
        50.0,
        "a higher",
    )


def test_tag_rows_start_from_the_separator_and_stay_apart():
    """The toy base never read the chunk tags: their rows sit at a random start of about twice a
    trained row's norm; TAG_INIT separator starts them at the newline's row (noise apart)."""
    import torch

    from stepwiser_lib.engines.models import load_model

    model, tok = load_model("data/toy_base")
    emb = model.get_input_embeddings().weight.detach()
    nl, op, cl = (tok.encode(s, add_special_tokens=False)[0] for s in ("\n", "<chunk>", "</chunk>"))
    assert emb[op].norm() > 1.5 * emb[nl].norm()  # the random start
    changed = sg.init_tag_embeddings(model, tok, seed=0)
    assert (
        set(changed) == {"<chunk>", "</chunk>"} and changed["<chunk>"]["norm_before"] > changed["<chunk>"]["norm_after"]
    )
    for t in (op, cl):
        assert torch.nn.functional.cosine_similarity(emb[t], emb[nl], dim=0) > 0.99
        assert float((emb[t] - emb[nl]).norm()) == pytest.approx(0.1 * float(emb[nl].norm()), rel=0.2)
    assert not torch.equal(emb[op], emb[cl])
    assert model.get_output_embeddings().weight.detach()[op].equal(emb[op])  # tied: the output row moved too


def test_plain_records_rehearse_the_same_solutions_untagged():
    from stepwiser_lib.tools.toy_trials import plain_records

    recs = [{"problem_id": f"p{i}", "raw": f"x = {i}", "completion": f"<chunk>x = {i}</chunk>"} for i in range(10)]
    texts = {f"p{i}": f"problem {i}" for i in range(10)}
    got = plain_records(recs, texts, "Solve: {problem}", 0.5, seed=1)
    assert len(got) == 5 and all(g["completion"] == f"x = {g['problem_id'][1:]}" for g in got)
    assert got[0]["prompt"] == f"Solve: problem {got[0]['problem_id'][1:]}"
    assert (
        got
        == plain_records(recs, texts, "Solve: {problem}", 0.5, seed=1)
        != plain_records(recs, texts, "Solve: {problem}", 0.5, seed=2)
    )
    assert len(plain_records(recs, texts, "{problem}", 3.0)) == 10  # at most one per record


def test_trials_table_reads_a_trial_record():
    from stepwiser_lib.tools.toy_trials import markdown

    rec = {
        "name": "t5",
        "settings": {
            "lr": 2e-4,
            "epochs": 2.0,
            "use_lora": False,
            "tag_init": "random",
            "mix_plain": 0.0,
            "problems": 1000,
            "samples_per_problem": 4,
        },
        "data": {"chunk_records": 2516, "plain_records": 0},
        "sft_steps": 316,
        "seconds": 266.3,
        "dev": {
            "base": {"avg_acc": 72.12},
            "chunk": {"avg_acc": 65.12, "greedy_acc": 82.0, "steps": 3.674, "format_ok": 92.75},
        },
        "comparisons": [
            {"field": "steps", "diff": -1.4, "low": -1.5, "high": -1.3},
            {"field": "correct", "diff": -7.0, "low": -11.25, "high": -3.0},
        ],
    }
    lines = markdown([rec]).splitlines()
    assert len(lines) == 3 and lines[1].count("|---") == 19
    # a record without "base" or "global_batch" predates them: the two-phase base, batch 16
    assert lines[2] == (
        "| t5 | 2 | 0.0002 | 2 | 16 | no | random | 0 | 1000 × 4 | 2516 | 316 | 72.12 | – | 65.12 | 82.0 | 3.674 "
        "| 92.75 | -7.0 [-11.2, -3.0] | 266 |"
    )
    rec = {
        **rec,
        "base": {"phases": 3, "last_phase": {"max_steps": 500, "chunk_fraction": 0.8}},
        "settings": {**rec["settings"], "global_batch": 8},
    }
    assert markdown([rec]).splitlines()[2].startswith("| t5 | 3 (500 steps, chunk 0.8) | 0.0002 | 2 | 8 |")


def test_rsft_and_reset_trial_tables_read_their_records():
    from stepwiser_lib.tools.toy_trials import reset_markdown, rsft_markdown

    rec = {
        "name": "r1",
        "settings": {"lr": 1e-4, "epochs": 2.0, "use_lora": False, "mix_sft": 1.0, "prompts": 100, "samples": 4},
        "data": {"records": 90, "sft_records": 90},
        "sft_steps": 24,
        "seconds": 61.2,
        "dev": {"policy_greedy_acc": 85.0, "rsft_greedy_acc": 84.0},
        "comparison": {"diff": -1.0, "low": -3.5, "high": 1.5},
    }
    lines = rsft_markdown([rec]).splitlines()
    assert lines[1].count("|---") == 12
    assert lines[2] == "| r1 | 0.0001 | 2 | no | 1 | 100 × 4 | 180 | 24 | 85.0 | 84.0 | -1.0 [-3.5, +1.5] | 61 |"
    arm = {
        "accuracy": 80.0,
        "ci95": {"low": 74.0, "high": 86.0},
        "accepted_length": 70.1,
        "rejected_length": 12.5,
        "judge_calls": 4.2,
    }
    rr = {
        "name": "c1",
        "settings": {"problems": 128, "judge": "stepwiser:rel_ratio"},
        "seconds": 99.0,
        "dev": {"greedy": arm},
        "comparisons": [{"a": "x", "b": "greedy", "diff": 1.0, "low": -2.0, "high": 4.0, "verdict": "undetermined"}],
    }
    md = reset_markdown([rr]).splitlines()
    assert md[0] == "**c1** (128 dev problems, judge stepwiser:rel_ratio, 99 s)"
    assert "| greedy | 80.0 [74.0, 86.0] | 70.1 | 12.5 | 4.2 |" in md
    assert "| x − greedy | +1.0 [-2.0, +4.0] | undetermined |" in md


def test_judge_trials_table_reads_a_judge_trial_record():
    """issue 47's judge trials: one row per trial, every seed's dev numbers in seed order."""
    from stepwiser_lib.tools.toy_trials import judge_markdown

    run = {"balanced_acc": 77.1, "positive_rate": 65.4, "analysis_exact": 74.3, "seconds_per_step": 3.87}
    rec = {
        "name": "nd",
        "note": "defaults",
        "settings": {"GRPO_STEPS": 120},
        "start": {"balanced_acc": 51.4, "analysis_exact": 78.0},
        "runs": [run, {**run, "balanced_acc": 78.9, "positive_rate": 64.3, "analysis_exact": None}],
    }
    lines = judge_markdown([rec]).splitlines()
    assert lines[1].count("|---") == 7
    assert lines[2] == "| nd | defaults | 51.4 / 78.0 | 77.1 78.9 | 65.4 64.3 | 74.3 – | 3.87 |"
    one = {"balanced_acc": 50.0, "positive_rate": 0.0, "seconds_per_step": 1.35}
    no_cot = {**rec, "note": "", "start": {"balanced_acc": 48.6}, "runs": [one]}
    assert judge_markdown([no_cot]).splitlines()[2] == "| nd | GRPO_STEPS=120 | 48.6 / – | 50.0 | 0.0 | – | 1.35 |"
    # issue 59: a trial that pairs each run with its start gets a second table
    paired = {
        **run,
        "minus_start_rule": {"diff": 0.57, "low": -2.78, "high": 3.93},
        "analysis_change": {"exact_before": 68.0, "exact_after": 66.0, "lost": 19, "gained": 12, "p": 0.281},
    }
    of = {**rec, "start": {**rec["start"], "analysis_rule_balanced_acc": 71.7}, "runs": [paired]}
    assert judge_markdown([rec, of]).splitlines()[-1] == (
        "| nd | 71.7 | +0.57 [-2.78, +3.93] | 68.0 → 66.0 (−19 +12, p 0.28) |"
    )


def test_exploration_table_reads_an_exploration_record():
    from stepwiser_lib.tools.toy_trials import EXPLORE_COLUMNS, explore_markdown

    rate = {"rate": 54.3, "low": 52.5, "high": 56.1, "n": 2800}
    rec = {
        "name": "ex",
        "greedy_exact": {"rate": 68.0, "low": 63.0, "high": 72.6, "n": 350},
        "temperatures": {"1.0": {"k": 8, "group": 4, **{c: rate for c in EXPLORE_COLUMNS}}},
    }
    lines = explore_markdown([rec]).splitlines()
    assert len(lines) == 3 and lines[2].startswith("| ex (k 8, groups of 4) | 1.0 | 68.0 [63.0, 72.6] (n 350) |")
    assert lines[2].count("54.3 [52.5, 56.1] (n 2800)") == len(EXPLORE_COLUMNS)


def test_grpo_log_summary_means_the_first_and_last_fifth():
    from stepwiser_lib.tools.toy_trials import grpo_log_summary

    logs = [{"reward": str(r), "entropy": "0.1", "frac_reward_zero_std": str(z)} for r, z in zip(range(10), [0.5] * 10)]
    s = grpo_log_summary([*logs, {"train_runtime": 1.0}])
    assert s["steps_logged"] == 10 and (s["first_reward"], s["last_reward"]) == (0.5, 8.5)
    assert s["last_entropy"] == 0.1 and s["first_kl"] is None
    assert grpo_log_summary([{"loss": 1.0}]) == {}


def test_text_teachers_segment_without_a_model():
    """The rule teacher (toy world, through tasks) and the paragraph teacher; an LLM name is not theirs."""
    assert sg.text_teacher("rule", "toy")([RAW]) == [tw.teacher_segment(RAW)]
    para = sg.text_teacher("paragraphs", "gsm8k")([RAW])[0]
    assert sg.reconstructs(RAW, para) and para.count("<chunk>") == 3
    with pytest.raises(ValueError, match="only knows the toy world"):
        sg.text_teacher("rule", "gsm8k")
    with pytest.raises(ValueError, match="not a text teacher"):
        sg.text_teacher("meta-llama/Llama-3.1-70B-Instruct", "numina")


def test_results_markdown_is_table4_beside_the_paper_with_the_claims():
    from stepwiser_lib.evals.paper_results import TABLE4

    s = {"steps": 3.0, "tokens": 40.0, "avg_acc": 50.0, "ci95": {"low": 40.0, "high": 60.0}}
    c = [{"claim": "x", "diff": 1.0, "low": -1.0, "high": 3.0, "test": "paired bootstrap", "verdict": "undetermined"}]
    md = sg.results_markdown("toy", "smoke", 2, 5, "toy", s, {**s, "avg_acc": 51.0}, c)
    lines = md.splitlines()
    assert lines[0].startswith("Table 4 analogue (smoke): Avg@2 on 5 held-out toy problems")
    assert "| toy base (smoke) | Split by \\n\\n | 3.00 | 40.0 | 50.0 | [40.0, 60.0] |" in lines
    assert "| toy chunk (smoke) | Self-segmentation | 3.00 | 40.0 | 51.0 | [40.0, 60.0] |" in lines
    assert [line.split(" | ")[0] for line in lines if "(paper) |" in line] == [
        f"| {p['generator']} (paper)" for p in TABLE4
    ]
    assert "| x | +1.00 [-1.00, +3.00] | paired bootstrap | undetermined |" in lines
    table_only = sg.results_markdown("toy", "smoke", 2, 5, "toy", s, s, []).splitlines()
    assert "claim (chunk − base)" not in "\n".join(table_only) and table_only[-1].startswith("| Qwen2.5-7B-chunk")


def test_table4_summarises_both_policies_and_pairs_them_by_problem():
    base = [
        {
            "problem_id": f"q{i}",
            "sample": s,
            "correct": s == 0,
            "response": "a\n\nb\n\n\\boxed{1}",
            "n_tokens": 9,
            "finished": True,
        }
        for i in range(6)
        for s in range(2)
    ]
    chunk = [
        {
            "problem_id": f"q{i}",
            "sample": s,
            "correct": True,
            "response": "<chunk>a b \\boxed{1}</chunk>",
            "n_tokens": 7,
            "finished": True,
        }
        for i in range(6)
        for s in range(2)
    ]
    t4 = sg.table4(base, chunk, "toy", 1)
    assert (t4["base"]["avg_acc"], t4["chunk"]["avg_acc"], t4["base"]["steps"], t4["chunk"]["steps"]) == (
        50.0,
        100.0,
        3,
        1,
    )
    assert t4["base"]["ci95"]["acc"] == 50.0 and t4["chunk"]["ci95"]["low"] == 100.0
    assert [c["field"] for c in t4["comparisons"]] == ["steps", "correct"] and t4["comparisons"][1]["diff"] == 50.0
    assert len(t4["predictions"]["chunk"]) == 12 and t4["rates"]["base"]["n"] == 12
    lines = sg.table4_lines(t4)
    assert len(lines) == 2 and lines[0].startswith("base policy: 12 held-out samples")
    zero = {**t4, "base": {**t4["base"], "avg_acc": 0.0}, "chunk": {**t4["chunk"], "avg_acc": 0.0}}
    assert sg.table4_lines(zero)[2].startswith("Accuracy change from self-segmentation: uninformative")


class _Scripted:
    """A generator that answers prompt ``p``'s sample ``j`` with ``answer(p, j)``, recording its calls."""

    def __init__(self, answer, name="gen"):
        self.answer, self.name, self.calls = answer, name, []

    def generate(self, prompts, n=1, temperature=1.0, max_new_tokens=8, seed=0, progress=False):
        from stepwiser_lib.engines.models import Completion

        self.calls.append({"prompts": len(prompts), "n": n, "max_new_tokens": max_new_tokens, "seed": seed})
        return [[Completion(text=self.answer(p, j), n_tokens=5, finished=True) for j in range(n)] for p in prompts]


def _engines(monkeypatch, answer):
    """make_generator and release replaced by scripted engines; returns the log of both, in order."""
    from stepwiser_lib.engines import models

    log = []

    def make(path, **kw):
        log.append(f"make {path}")
        return _Scripted(answer, path)

    monkeypatch.setattr(models, "make_generator", make)
    monkeypatch.setattr(models, "release", lambda *gens: log.extend(f"release {g.name}" for g in gens))
    return log


def test_sample_base_writes_the_samples_and_counts_the_solved_prompts(tmp_path):
    from stepwiser_lib.core import io
    from stepwiser_lib.method import tasks

    items = tasks.load_problems("toy", "sft", 3, seed=0)
    answers = {it["problem"]: it["answer"] for it in items}
    right = [it["problem"] for it in items[:2]]  # the first two prompts: right on their first sample only

    def answer(prompt, j):
        p = next(q for q in answers if q in prompt)
        return f"x = 1\n\nSo \\boxed{{{answers[p] if p in right and j == 0 else -1}}}."

    gen = _Scripted(answer)
    samples, info = sg.sample_base(
        gen, items, "Solve: {problem}", tmp_path / "s.jsonl", n=2, temperature=1.0, max_new_tokens=9, seed=3
    )
    assert [r["correct"] for r in samples] == [True, False, True, False, False, False]
    assert io.read_jsonl(tmp_path / "s.jsonl") == samples and gen.calls == [
        {"prompts": 3, "n": 2, "max_new_tokens": 9, "seed": 3}
    ]
    assert (info["solved"], info["prompts"], info["references"], info["rates"]["n"]) == (2, 3, 0, 6)
    lines = sg.sample_lines({**info, "seconds": 4.2})
    assert lines == [
        "6 base-policy samples of the model's own: 100.0% boxed an answer, 33.3% correct, "
        "0.0% wrote a <chunk> tag (0.0% in the chunk format), 0.0% cut at the token limit (4 s)",
        "2/3 prompts have a correct sample (section 2 prints one sample, raw and segmented)",
    ]
    # the shortcut: each reference solution one more sample, left out of the rates
    items = [{**it, "solution": f"So \\boxed{{{it['answer']}}}."} for it in items]
    samples, info = sg.sample_base(
        gen,
        items,
        "Solve: {problem}",
        tmp_path / "s.jsonl",
        n=2,
        temperature=1.0,
        max_new_tokens=9,
        seed=3,
        references=True,
    )
    assert (
        len(samples) == len(io.read_jsonl(tmp_path / "s.jsonl")) == 9
        and [r["sample"] for r in samples[6:]] == ["ref"] * 3
    )
    assert (info["solved"], info["references"], info["rates"]["n"]) == (3, 3, 6)
    assert sg.sample_lines(info)[1] == (
        "+ 3 reference solutions [shortcut: REFERENCE_SAMPLES], so that the later stages get correct text"
    )


def test_segment_samples_by_a_text_teacher_or_an_llm_one_engine_at_a_time(monkeypatch):
    from stepwiser_lib.core.chunks import paragraph_chunks

    samples = [{"problem_id": "p1", "problem": "P1", "response": RAW, "correct": True}]
    log = _engines(monkeypatch, None)
    recs, st = sg.segment_samples(samples, "rule", "toy", 4, "Q: {problem}", 0, max_new_tokens=100, free=["base"])
    assert [r["completion"] for r in recs] == [tw.teacher_segment(RAW)] and st.accepted == 1 and log == []

    def answer(prompt, j):  # the first try adds a title (rejected), the second keeps the text
        tagged = paragraph_chunks(prompt.split("Solution:\n", 1)[1])
        return ("Title\n" if j == 0 else "") + tagged

    teacher = _Scripted(answer, "llm")
    from stepwiser_lib.engines import models

    class Named:
        name = "base"

    monkeypatch.setattr(models, "make_generator", lambda path, **kw: log.append(f"make {path} {kw}") or teacher)
    recs, st = sg.segment_samples(
        samples,
        "llm",
        "numina",
        4,
        "Q: {problem}",
        0,
        max_new_tokens=100,
        n_segmentations=2,
        batch_size=8,
        engine={"tensor_parallel_size": 8},
        free=[Named()],
    )
    assert log == [
        "release base",
        "make llm {'backend': 'hf', 'batch_size': 8, 'tensor_parallel_size': 8}",
        "release llm",
    ]
    assert teacher.calls == [{"prompts": 1, "n": 2, "max_new_tokens": 381, "seed": 0}]  # teacher_budget(100)
    assert [r["completion"] for r in recs] == [paragraph_chunks(RAW)] and recs[0]["prompt"] == "Q: P1"
    assert (st.kept, st.accepted, st.rejected_reasons) == (1, 1, {})


def test_changed_example_is_the_first_record_the_teacher_changed():
    same = {"raw": "a = 1\n\nb = 2", "completion": "<chunk>a = 1</chunk>\n\n<chunk>b = 2</chunk>"}
    merged = {"raw": "We need b.\n\nb = 2", "completion": "<chunk>We need b.\n\nb = 2</chunk>"}
    assert sg.changed_example([same, merged, same]) == [
        "1 of the first 3 records are segmented differently from their paragraphs; the first:",
        "",
        "| # | split by blank lines: 2 steps | the teacher's chunks: 1 |",
        "|---|---|---|",
        "| 0 | We need b. | We need b.<br><br>b = 2 |",
        "| 1 | b = 2 |  |",
    ]
    assert sg.changed_example([same, merged], first=1)[0].startswith("0 of the first 1 records")
    assert (
        sg.changed_example([same, merged], first=1)[2]
        == "| # | split by blank lines: 2 steps | the teacher's chunks: 2 |"
    )
    assert sg.changed_example([]) == [
        "0 of the first 0 records are segmented differently from their paragraphs; the first:"
    ]
    assert sg._md_cell("c = a * 4 | x_1 <b> $5 \\boxed{1}") == "c = a \\* 4 \\| x\\_1 \\<b> \\$5 \\\\boxed{1}"


def test_sft_repeats_train_and_sample_each_other_seed_one_engine_at_a_time(monkeypatch, tmp_path):
    from dataclasses import dataclass, replace

    from stepwiser_lib.method import tasks

    @dataclass
    class Settings:
        seed: int = 0

        def with_(self, **kw):
            return replace(self, **kw)

    items = tasks.load_problems("toy", "eval", 2, seed=0)
    first = items[0]["problem"]
    log = _engines(monkeypatch, lambda p, j: f"\\boxed{{{items[0]['answer'] if first in p and j == 0 else -1}}}")
    trained = []
    monkeypatch.setattr(
        sg,
        "sft_chunk_policy",
        lambda base, recs, out, settings: trained.append((base, out.name, settings.seed)) or {"model_dir": out.name},
    )
    printed = []
    kw = dict(n=2, temperature=1.0, max_new_tokens=8, seed=1)
    preds = sg.sft_repeats(
        "base",
        [],
        tmp_path,
        Settings(),
        [0, 2, 5],
        items,
        "<chunk>{problem}",
        "toy",
        skip=0,
        report=printed.append,
        **kw,
    )
    assert trained == [("base", "chunk_policy_seed2", 2), ("base", "chunk_policy_seed5", 5)]
    assert log == [
        "make chunk_policy_seed2",
        "release chunk_policy_seed2",
        "make chunk_policy_seed5",
        "release chunk_policy_seed5",
    ]
    assert printed == ["chunk policy, SFT seed 2: Avg@2 25.0", "chunk policy, SFT seed 5: Avg@2 25.0"]
    assert list(preds) == ["chunk@seed2", "chunk@seed5"] and [p["correct"] for p in preds["chunk@seed2"]] == [
        True,
        False,
        False,
        False,
    ]
    assert {(p["method"], p["seed"]) for p in preds["chunk@seed5"]} == {("chunk@seed5", 1)}
    ev = sg.sample_policy("pol", items, "{problem}", progress="eval", **kw)
    assert len(ev) == 4 and ev[0]["correct"] and log[-2:] == ["make pol", "release pol"]


def test_headroom_trial_measures_the_plain_policy_per_slice(monkeypatch):
    """Issue 60's headroom probe: each slice's eval_dev problems (their steps and distractors as
    asked) through notebook 06's plain arm at the given temperature, a rate with its interval."""
    from stepwiser_lib.tools import toy_trials as tt

    monkeypatch.setattr(tt, "make_generator", lambda *a, **k: "policy")
    monkeypatch.setattr(tt, "release", lambda *a: None)
    monkeypatch.setattr(tt, "resolve_model", lambda ref, profile: "model")
    seen = []

    def arm(policy, judge, items, template, cfg, is_correct):
        seen.append((judge, cfg.temperature, max(len(i["toy"]["needed"]) for i in items)))
        return {"correct": [k % 2 == 0 for k in range(len(items))]}

    monkeypatch.setattr(tt.cr, "run_arm", arm)
    rec = tt.headroom_trial("tiny", "h", slices=(((2, 3), (0, 1)), ((5, 5), (1, 2))), n_problems=10, temperature=0.4)
    assert [s[:2] for s in seen] == [(None, 0.4), (None, 0.4)] and seen[1][2] >= 5  # the longer slice
    assert [(r["steps"], r["distractors"], r["n"], r["ci95"]["acc"]) for r in rec["rows"]] == [
        ([2, 3], [0, 1], 10, 50.0),
        ([5, 5], [1, 2], 10, 50.0),
    ]
    table = tt.headroom_markdown([rec]).splitlines()
    assert len(table) == 4 and table[3].startswith("| h | 0.4 | 5-5 | 1-2 | 50.0 [")
    assert tt._slice("5:1-3") == ((5, 5), (1, 3)) and tt._slice("4-6:0") == ((4, 6), (0, 0))  # --headroom, --slice
