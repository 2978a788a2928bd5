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
        "comparisons": [{"a": "x", "b": "greedy", "diff": 1.0, "low": -2.0, "high": 4.0, "verdict": "within noise"}],
    }
    md = reset_markdown([rr]).splitlines()
    assert md[0] == "**c1** (128 dev problems, judge stepwiser:rel_ratio, 99 s)"
    assert "| greedy | 80.0 [74.0, 86.0] | 70.1 | 12.5 | 4.2 |" in md
    assert "| x − greedy | +1.0 [-2.0, +4.0] | within noise |" in md


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
    c = [{"claim": "x", "diff": 1.0, "low": -1.0, "high": 3.0, "test": "paired bootstrap", "verdict": "within noise"}]
    md = sg.results_markdown("toy", "smoke", 2, 5, "toy", s, {**s, "avg_acc": 51.0}, c)
    lines = md.splitlines()
    assert lines[0].startswith("Table 4 analogue (smoke): Avg@2 on 5 held-out toy problems")
    assert "| toy base (smoke) | Split by \\n\\n | 3.00 | 40.0 | 50.0 | [40.0, 60.0] |" in lines
    assert "| toy chunk (smoke) | Self-segmentation | 3.00 | 40.0 | 51.0 | [40.0, 60.0] |" in lines
    assert [line.split(" | ")[0] for line in lines if "(paper) |" in line] == [
        f"| {p['generator']} (paper)" for p in TABLE4
    ]
    assert "| x | +1.00 [-1.00, +3.00] | paired bootstrap | within noise |" in lines


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
    assert lines[0].startswith("base policy: 12 held-out samples") and lines[2].startswith(
        "Accuracy change from self-segmentation: +50.0 points (paper: +0.5 at 1.5B, 0.0 at 7B)"
    )
