"""Stepwise RS-FT data selection (paper §4.4, Table 8)."""

import pytest

from stepwiser_lib.method import rsft


def test_select_best_picks_max_average_correct_response():
    cands = [
        {"correct": False, "score": 1.0},
        {"correct": True, "score": 0.5},
        {"correct": True, "score": 0.75},
        {"correct": True, "score": 0.25},
    ]
    assert rsft.select_best(cands) == 2
    assert rsft.select_best([{"correct": False, "score": 1.0}]) is None  # never an incorrect one


def test_ties_are_broken_deterministically():
    cands = [{"correct": True, "score": 0.5}, {"correct": False, "score": 0.9}, {"correct": True, "score": 0.5}]
    assert rsft.select_best(cands) == 0


def test_outcome_selection_is_a_seeded_random_correct_response():
    cands = [{"correct": i % 2 == 0} for i in range(10)]
    picks = {rsft.select_best(cands, "outcome", seed=0, key=f"p{i}") for i in range(40)}
    assert picks <= {0, 2, 4, 6, 8} and len(picks) > 1
    assert rsft.select_best(cands, "outcome", seed=3, key="x") == rsft.select_best(cands, "outcome", seed=3, key="x")
    with pytest.raises(ValueError):
        rsft.select_best(cands, "magic")


def test_response_score_and_scoring_batch():
    assert rsft.response_score([1, 0, 1, 1]) == 0.75 and rsft.response_score([]) is None

    class J:
        def __init__(self):
            self.n = 0

        def judge(self, triples, k=1, seed=0, progress=False):
            self.n += 1
            return [{"score": 0.0 if "x" in c else 1.0} for _, _, c in triples]

    items = [
        {"problem": "P", "responses": ["<chunk>a</chunk>\n<chunk>x</chunk>", "<chunk>b</chunk>"]},
        {"problem": "Q", "responses": ["no chunks"]},
    ]
    j = J()
    s = rsft.score_responses(j, items)
    assert s == [[[1.0, 0.0], [1.0]], [[]]] and j.n == 1


def test_sft_records_cut_after_last_chunk():
    items = [
        {"problem": "P", "responses": ["<chunk>a</chunk>\n<chunk>\\boxed{1}</chunk> trailing", "x"]},
        {"problem": "Q", "responses": ["y"]},
    ]
    recs = rsft.sft_records(items, [0, None], "Solve {problem}")
    assert recs == [{"prompt": "Solve P", "completion": "<chunk>a</chunk>\n<chunk>\\boxed{1}</chunk>"}]


def _items():
    return [
        {
            "problem": "P",
            "id": "p",
            "responses": ["<chunk>a</chunk>\n<chunk>b</chunk>", "<chunk>c</chunk>", "<chunk>d</chunk>"],
            "correct": [True, True, False],
        },
        {"problem": "Q", "id": "q", "responses": ["<chunk>e</chunk>"], "correct": [False]},
    ]


def test_group_items_keeps_prompt_order():
    rows = [
        {"problem_id": "q", "response": "x", "correct": False},
        {"problem_id": "p", "response": "y", "correct": True},
        {"problem_id": "p", "response": "z", "correct": False},
    ]
    got = rsft.group_items([{"problem": "P", "id": "p"}, {"problem": "Q", "id": "q"}], rows)
    assert got == [
        {"problem": "P", "id": "p", "responses": ["y", "z"], "correct": [True, False]},
        {"problem": "Q", "id": "q", "responses": ["x"], "correct": [False]},
    ]


def test_select_all_scores_once_and_picks_the_best_correct_response(tmp_path, capsys):
    class ByText:  # a chunk "c" scores 1, every other 0.5
        def judge(self, triples, k=1, seed=0, **kw):
            return [{"score": 1.0 if c == "c" else 0.5, "verdict": "Positive", "n_unparsed": 0} for _, _, c in triples]

    loads = []
    picks, scores, tallies = rsft.select_all(
        _items(),
        {"stepwiser:rel_ratio": {"name": "s"}},
        lambda e: loads.append(e) or ByText(),
        tmp_path,
        "key",
        judge_k=1,
        max_completion=8,
        seed=0,
    )
    assert picks["stepwiser:rel_ratio"] == [1, None] and picks["outcome"][1] is None and picks["outcome"][0] in (0, 1)
    assert scores["stepwiser:rel_ratio"][0] == [[0.5, 0.5], [1.0], [0.5]]
    assert tallies["stepwiser:rel_ratio"]["asked"] == sum(len(s) for r in scores["stepwiser:rel_ratio"] for s in r)
    rsft.select_all(
        _items(),
        {"stepwiser:rel_ratio": {"name": "s"}},
        lambda e: loads.append(e) or ByText(),
        tmp_path,
        "key",
        judge_k=1,
        max_completion=8,
        seed=0,
    )
    assert len(loads) == 1  # the scores came from disk
    # section 5: the two correct responses side by side, chunk by chunk, each chunk after its score
    assert rsft.preference_pair(_items(), scores, ["stepwiser:rel_ratio"]) == (
        "JUDGE: stepwiser:rel_ratio; PROBLEM: P",
        [
            {"preferred: response 1 (average 1.00)": "[1.0] c", "not preferred: response 0 (average 0.50)": "[0.5] a"},
            {"preferred: response 1 (average 1.00)": "", "not preferred: response 0 (average 0.50)": "[0.5] b"},
        ],
    )
    assert rsft.preference_pair(_items(), scores, ["stepwiser:rel_ratio"], skip={0}) == (
        "no other prompt has two correct responses a judge scores differently",
        [],
    )  # the prompt the notebook worked by hand is skipped; no other has two correct responses
    toy = [
        {
            "problem": "a = 2. b = a + 3. Find b.",
            "responses": ["<chunk>b = a + 3 = 2 + 3 = 5</chunk>", "<chunk>b = a + 3 = 2 + 3 = 6</chunk>"],
            "correct": [True, True],
        }
    ]
    _, rows = rsft.preference_pair(toy, {"j": [[[1.0], [0.0]]]}, ["j"])
    assert list(rows[0].values()) == ["[1.0; right] b = a + 3 = 2 + 3 = 5", "[0.0; wrong] b = a + 3 = 2 + 3 = 6"]


def test_table_predictions_and_comparisons_of_table_8():
    ev = lambda c: {"acc": {"toy": 100 * sum(c) / len(c)}, "correct": {"toy": c}, "records": 2}  # noqa: E731
    results = {
        ("outcome", 0): ev([True, False]),
        ("outcome", 1): ev([True, True]),
        ("stepwiser:rel_ratio", 0): ev([True, True]),
        ("stepwiser:rel_ratio", 1): ev([True, True]),
    }
    base = ev([False, False])
    rows = rsft.table(base["acc"], results, ["outcome", "stepwiser:rel_ratio"], 2)
    assert [r["method"] for r in rows] == [rsft.BASE, rsft.OUTCOME, "stepwiser:rel_ratio"]
    assert (rows[1]["avg"], rows[1]["std"], rows[1]["records"]) == (75.0, 35.36, 2) and rows[0]["std"] == 0.0
    eval_items = {"toy": [{"id": "1"}, {"id": "2"}]}
    preds = rsft.predictions(base, results, ["outcome", "stepwiser:rel_ratio"], eval_items, 2, 0)
    assert list(preds) == [rsft.BASE, rsft.OUTCOME, "stepwiser:rel_ratio"] and len(preds[rsft.OUTCOME]) == 4
    comps = rsft.comparisons(preds)
    assert [(c["a"], c["b"]) for c in comps] == [(rsft.OUTCOME, rsft.BASE), ("stepwiser:rel_ratio", rsft.OUTCOME)]
    silent = {"stepwiser:rel_ratio": {"asked": 6, "samples": 6, "unparsed": 6, "no_verdict": 6, "unparsed_pct": 100.0}}
    comps = rsft.comparisons(preds, silent)  # a judge that parsed nothing picked by tie-breaking alone
    assert comps[1]["verdict"] == "uninformative" and comps[1]["diff"] is None and "6 of 6" in comps[1]["test"]
    assert comps[0]["verdict"] != "uninformative"  # outcome selection needs no judge
    md = rsft.results_markdown(rows, comps, rsft.paper_rows(), 2)
    assert "mean over 2 SFT seeds" in md and "PAPER 7B" in md
    rep = rsft.report(
        base, results, ["outcome", "stepwiser:rel_ratio"], eval_items, 2, 0, silent
    )  # the same, in one call
    assert [c["verdict"] for c in rep["comparisons"]] == [c["verdict"] for c in comps]
    assert rep["rows"][2]["avg 95% interval"] == "[100.0, 100.0]" and rep["ci"][rsft.BASE] == (0.0, 0.0)
    assert rep["rows"][2]["avg"] == rows[2]["avg"] and "verdicts" in rep["rows"][2]


def test_train_all_one_sft_per_method_and_seed_cached(tmp_path, monkeypatch, capsys):
    from stepwiser_lib.core import paths
    from stepwiser_lib.engines.trainers import SFTSettings

    runs = []
    monkeypatch.setattr(
        rsft,
        "sft",
        lambda policy, recs, d, ss: (
            runs.append((d.name, len(recs))) or {"model_dir": str(d), "steps": 1, "train_seconds": 0.1}
        ),
    )
    monkeypatch.setattr(paths, "model_fingerprint", lambda p: "fp")
    evaluate = lambda d: {"acc": {"toy": 50.0}, "correct": {"toy": [True, False]}}  # noqa: E731
    settings = lambda k: SFTSettings(epochs=1, lr=1e-4, global_batch=2, seed=k, name="SFT")  # noqa: E731
    picks = {"outcome": [0, None], "stepwiser:rel_ratio": [1, None]}
    res = rsft.train_all(picks, _items(), "{problem}", "pol", tmp_path, settings, evaluate, "bk", 2)
    assert capsys.readouterr().out.splitlines() == [
        "outcome                    1 records; greedy accuracy by SFT seed: {'toy': 50.0}, {'toy': 50.0}",
        "stepwiser:rel_ratio        1 records; greedy accuracy by SFT seed: {'toy': 50.0}, {'toy': 50.0}",
    ]  # one line per method
    assert runs == [
        ("outcome__seed0", 1),
        ("outcome__seed1", 1),
        ("stepwiser__rel_ratio__seed0", 1),
        ("stepwiser__rel_ratio__seed1", 1),
    ]
    assert res[("outcome", 1)]["records"] == 1 and res[("outcome", 1)]["acc"] == {"toy": 50.0}
    rsft.train_all(picks, _items(), "{problem}", "pol", tmp_path, settings, evaluate, "bk", 2)
    assert len(runs) == 4  # from disk


def test_sample_responses_samples_once_and_keys_the_later_caches(tmp_path, monkeypatch):
    from stepwiser_lib.core import paths
    from stepwiser_lib.engines import models
    from stepwiser_lib.method import rsft as R
    from stepwiser_lib.method import sampling

    calls = []
    monkeypatch.setattr(models, "make_generator", lambda *a, **k: "gen")
    monkeypatch.setattr(models, "release", lambda *a: None)
    monkeypatch.setattr(paths, "model_fingerprint", lambda p: "fp")
    monkeypatch.setattr(
        sampling,
        "sample_solutions",
        lambda g, items, *a, **k: (
            calls.append(1) or [{"problem_id": i["id"], "response": "r", "correct": True} for i in items]
        ),
    )
    items = [{"id": "a", "problem": "P"}]
    kw = dict(samples=2, temperature=1.0, max_new_tokens=8, seed=0)
    rows, key = R.sample_responses("pol", items, "{problem}", tmp_path, **kw)
    rows2, key2 = R.sample_responses("pol", items, "{problem}", tmp_path, **kw)
    assert rows == rows2 == [{"problem_id": "a", "response": "r", "correct": True}] and key == key2 and calls == [1]
    _, key3 = R.sample_responses("pol", items, "{problem}", tmp_path, **{**kw, "seed": 1})
    assert key3 != key and calls == [1, 1]


def test_select_all_releases_each_judge_after_scoring(tmp_path):
    """Notebook 07 kept every judge it loaded (tens of GB at paper scale) while the policy's vLLM
    engine started next: each judge is closed once it has scored."""

    class Closable:
        closed = False

        def judge(self, triples, k=1, seed=0, **kw):
            return [{"score": 1.0, "verdict": "Positive", "n_unparsed": 0} for _ in triples]

        def close(self):
            self.closed = True

    made = []
    rsft.select_all(
        _items(),
        {"stepwiser:rel_ratio": {"name": "s"}, "disc_sft:rel_ratio": {"name": "d"}},
        lambda e: made.append(Closable()) or made[-1],
        tmp_path,
        "key",
        judge_k=1,
        max_completion=8,
        seed=0,
    )
    assert len(made) == 2 and all(j.closed for j in made)
    from stepwiser_lib.method.discriminative import DiscJudge

    d = DiscJudge.__new__(DiscJudge)
    d.model = object()
    d.close()
    assert d.model is None  # models.release can now free a discriminative judge too


def test_sampling_and_scoring_in_shards_by_two_workers_equal_one_process(tmp_path, monkeypatch):
    """Issue 34: notebook 07's sampling and judge scoring in shards of 2 prompts. Two workers (each
    its shards; the scoring once every sample is on disk) then the notebook's join give the
    records and scores of one process; the join loads no policy and no judge. One shard samples
    with the run's own seed, as before sharding."""
    from fakes import FakeToyPolicy, fake_items

    from stepwiser_lib.core import paths, shards
    from stepwiser_lib.engines import models

    gens = []
    monkeypatch.setattr(models, "make_generator", lambda *a, **k: gens.append(FakeToyPolicy()) or gens[-1])
    monkeypatch.setattr(models, "release", lambda *a: None)
    monkeypatch.setattr(paths, "model_fingerprint", lambda p: "fp")
    items = fake_items(5)
    kw = dict(samples=3, temperature=1.0, max_new_tokens=8, seed=4, shard_size=2)

    class Seeded:  # a chunk's score depends on the seed it was judged with
        def judge(self, triples, k=1, seed=0, **kw):
            return [
                {
                    "score": (hash((c, seed)) % 7) / 7,
                    "verdict": None if "WRONG" in c else "Positive",
                    "n_unparsed": int("WRONG" in c),
                }
                for _, _, c in triples
            ]

    loads = []
    score = dict(judge_k=1, max_completion=8, seed=4, shard_size=2)
    one, key = rsft.sample_responses("pol", items, "{problem}", tmp_path / "one", **kw)
    assert gens[0].calls == [(2, 3), (2, 3), (1, 3)] and [r["problem_id"] for r in one[:3]] == ["fake-0"] * 3
    s1 = rsft.score_judge(
        "j",
        {"name": "j"},
        rsft.group_items(items, one),
        tmp_path / "one",
        key,
        lambda e: loads.append(e) or Seeded(),
        **score,
    )
    two = tmp_path / "two"
    assert rsft.sample_responses("pol", items, "{problem}", two, worker=0, workers=2, **kw)[0] is None
    rows, key2 = rsft.sample_responses("pol", items, "{problem}", two, worker=1, workers=2, **kw)
    assert rows == one and key2 == key and not (two / "samples.jsonl").exists()  # a worker never joins
    grouped = rsft.group_items(items, rows)
    assert (
        rsft.score_judge(
            "j", {"name": "j"}, grouped, two, key, lambda e: loads.append(e) or Seeded(), worker=1, workers=2, **score
        )
        is None
    )
    rsft.score_judge(
        "j", {"name": "j"}, grouped, two, key, lambda e: loads.append(e) or Seeded(), worker=0, workers=2, **score
    )
    n_gens, n_loads = len(gens), len(loads)
    joined, _ = rsft.sample_responses("pol", items, "{problem}", two, **kw)
    s2 = rsft.score_judge("j", {"name": "j"}, grouped, two, key, lambda e: loads.append(e) or Seeded(), **score)
    assert joined == one and (len(gens), len(loads)) == (n_gens, n_loads)  # the join computed nothing
    assert (
        s2["chunk_scores"] == s1["chunk_scores"] and s2["verdicts"] == s1["verdicts"] and s1["verdicts"]["unparsed"] > 0
    )
    assert not (two / "samples.shards").exists() and not (two / "scores__j.shards").exists()
    # one shard: the run's own seed, the key of an unsharded run
    alone, key1 = rsft.sample_responses("pol", items[:2], "{problem}", tmp_path / "alone", **kw)
    assert alone == [r for r in one if r["problem_id"] in ("fake-0", "fake-1")] and shards.layout(2, 2) == []


def test_worked_example_rule_and_what_kind_of_example_it_is():
    items = [
        {"correct": [True, False]},
        {"correct": [True, True, False]},  # two correct, scored the same
        {"correct": [True, True, False]},  # two correct, scored differently: the pick
    ]
    scores = [[[1.0], [0.0]], [[1.0], [1.0], [0.0]], [[1.0, 0.0], [1.0], [1.0, 1.0]]]
    assert rsft.worked_example(items, scores) == 2
    assert rsft.worked_example(items[:2], scores[:2]) == 1  # else the first with two correct ones
    assert rsft.worked_example(items[:1], scores[:1]) is None
    line = rsft.score_context(scores, items, 2, best=1)
    assert line == (
        "How to read it: over all 10 sampled chunks this judge's mean chunk score is 0.70; here 1 wrong "
        "response(s) (never selectable) score at least as high as the chosen one: [2]."
    )


def test_samples_report_prints_what_the_responses_look_like_and_returns_the_metrics(capsys):
    rows = [
        {"problem_id": "p", "response": "<chunk>1 + 1 = 2, so \\boxed{2}</chunk>", "correct": True, "finished": True},
        {"problem_id": "p", "response": "no answer", "correct": False, "finished": False},
        {"problem_id": "q", "response": "Q's reference", "correct": True, "finished": True, "sample": "ref"},
    ]
    items = rsft.group_items([{"problem": "P", "id": "p"}, {"problem": "Q", "id": "q"}], rows)
    got = rsft.samples_report(rows, items, reference=True)
    assert capsys.readouterr().out.splitlines() == [
        "2 responses of the model's own: 50.0% boxed an answer, 50.0% correct, 50.0% wrote a <chunk> tag "
        "(50.0% in the chunk format), 50.0% cut at the token limit",  # the reference left out
        "+ 2 reference solutions [shortcut: REFERENCE_SAMPLES] as candidates",
        "2/2 prompts have a correct response",
    ]
    assert (got["responses"], got["correct_rate"], got["prompts_with_correct"]) == (3, 66.67, 2)
    assert got["output_rates"]["n"] == 2 and got["output_rates"]["truncated"] == 50.0
    rsft.samples_report(rows[:2], items[:1])
    assert capsys.readouterr().out.splitlines()[1:] == ["1/1 prompts have a correct response"]  # no shortcut line


def test_worked_judge_and_the_rows_of_the_selection_by_hand():
    assert rsft.worked_judge(["disc_sft:rel_ratio", "stepwiser:rel_ratio@seed1"]) == "stepwiser:rel_ratio@seed1"
    assert rsft.worked_judge(["disc_sft:rel_ratio"]) == "disc_sft:rel_ratio" and rsft.worked_judge([]) is None
    rows = rsft.hand_rows({"correct": [True, False, True]}, [[1.0, 0.0, 1.0], [1.0], []], [2 / 3, 1.0, None])
    assert rows == [
        {"response": 0, "correct": True, "chunks": 3, "chunk scores": [1.0, 0.0, 1.0], "average (by hand)": 0.667},
        {"response": 1, "correct": False, "chunks": 1, "chunk scores": [1.0], "average (by hand)": 1.0},
        {"response": 2, "correct": True, "chunks": 0, "chunk scores": [], "average (by hand)": None},
    ]


def test_evaluator_releases_its_engine_and_the_base_evaluation_is_cached_under_the_old_key(tmp_path, monkeypatch):
    from stepwiser_lib.core import paths
    from stepwiser_lib.engines import models
    from stepwiser_lib.method import sampling

    events = []
    monkeypatch.setattr(models, "make_generator", lambda d, **kw: events.append(("make", d, kw)) or "gen")
    monkeypatch.setattr(models, "release", lambda g: events.append(("release", g)))
    monkeypatch.setattr(
        sampling,
        "sample_solutions",
        lambda g, its, *a, **k: (
            events.append(("sample", g, a, k)) or [{"correct": i % 2 == 0} for i in range(len(its))]
        ),
    )
    monkeypatch.setattr(paths, "model_fingerprint", lambda p: "fp")
    eval_items = {"toy": [{"id": "1"}, {"id": "2"}]}
    evaluate = rsft.evaluator(eval_items, "{problem}", 8, 3, backend="hf", gen_batch=4, engine={"x": 1})
    assert evaluate("m") == {"acc": {"toy": 50.0}, "correct": {"toy": [True, False]}}
    assert events == [
        ("make", "m", {"backend": "hf", "batch_size": 4, "x": 1}),
        ("sample", "gen", ("{problem}", 1, 0.0, 8), {"seed": 3}),  # greedy: one sample at temperature 0
        ("release", "gen"),  # before the next fine-tuning
    ]
    calls = []
    counted = lambda d: calls.append(d) or {"acc": {"toy": 50.0}}  # noqa: E731
    got, key = rsft.base_evaluation("pol", eval_items, tmp_path, counted, 8)
    assert key == "175866d6d5df3017"  # the notebook's key before issue 36: base_eval.json on disk is reused
    assert rsft.base_evaluation("pol", eval_items, tmp_path, counted, 8) == (got, key) and calls == ["pol"]
    assert (tmp_path / "base_eval.json").exists()


def test_paper_rows_keep_the_rules_a_run_trained():
    assert len(rsft.paper_rows()) == 8
    assert [r["method"] for r in rsft.paper_rows(rules={"rel_ratio"})] == [
        "PAPER 7B: Qwen2.5-7B-chunk (greedy, no RS-FT) -",
        "PAPER 7B: Outcome-based selection -",
        "PAPER 7B: Discriminative + SFT rel_ratio",
        "PAPER 7B: Generative CoT + RL (StepWiser) rel_ratio",
    ]
