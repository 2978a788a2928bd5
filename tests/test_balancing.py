import pytest

from stepwiser_lib.method import balancing as B


def _recs(n_pos, n_neg, n_problems=10):
    out = []
    for i in range(n_pos + n_neg):
        out.append(
            {
                "problem_id": f"p{i % n_problems}",
                "problem": "x",
                "traj_id": f"t{i}",
                "chunk_index": 0,
                "history": ["h" * (i % 5)],
                "chunk": "c" * (1 + i % 7),
                "is_final": i % 3 == 0,
                "q": 0.5,
                "q_prev": 0.5,
                "label_abs_q": i < n_pos,
                "label_rel_ratio": i % 2 == 0,
                "label_rel_effective": True,
            }
        )
    return out


def test_balance_is_exact_and_keeps_minority_whole():
    ex = B.judge_examples(_recs(70, 30), "abs_q")
    bal = B.balance(ex, seed=0)
    st = B.class_stats(bal)
    assert st["positive"] == st["negative"] == 30
    assert [e for e in ex if not e["label"]] == [e for e in bal if not e["label"]]  # minority whole
    assert B.balance(ex, seed=0) == bal  # deterministic
    assert B.balance(ex, seed=1) != bal
    assert (
        B.balance(B.judge_examples(_recs(20, 50), "abs_q"), seed=0)
        and B.class_stats(B.balance(B.judge_examples(_recs(20, 50), "abs_q")))["negative"] == 20
    )
    assert B.balance([], seed=0) == []


def test_length_filter_and_rules():
    ex = B.judge_examples(_recs(10, 10), "rel_ratio", min_chars=3, max_chars=8, drop_final=True)
    assert all(3 <= len(e["history"][0]) + len(e["chunk"]) <= 8 for e in ex)
    assert all(e["rule"] == "rel_ratio" for e in ex)
    with pytest.raises(ValueError, match="unknown rule"):
        B.judge_examples(_recs(1, 1), "abs")


def test_split_by_problem_has_no_shared_problem():
    ex = B.judge_examples(_recs(200, 200, n_problems=40), "abs_q")
    parts = B.split_by_problem(ex, 0.15, 0.45, seed=0)
    assert list(parts) == ["train", "dev", "test"]
    assert sum(map(len, parts.values())) == len(ex)
    pids = {s: {e["problem_id"] for e in xs} for s, xs in parts.items()}
    assert not pids["train"] & pids["dev"] and not pids["train"] & pids["test"] and not pids["dev"] & pids["test"]
    assert B.split_by_problem(ex, 0.15, 0.45, seed=0) == parts  # deterministic
    # fixed ranges: test holds quantiles >= 1 - 0.45, dev [0.2, 0.35); quantiles below 0.2 (the old
    # validation side) stay in train
    q = {s: sorted(B.problem_quantile(p) for p in ps) for s, ps in pids.items()}
    assert q["test"][0] >= 0.55 and 0.2 <= q["dev"][0] and q["dev"][-1] < 0.35
    assert all(x < 0.2 or 0.35 <= x < 0.55 for x in q["train"])
    assert {s: len(p) for s, p in pids.items()} == {
        "train": 16,
        "dev": 4,
        "test": 20,
    }  # this hash's draw of 40 problems
    assert B.problem_quantile("label-0-3") == 0.8118  # a literal: the hash must not drift
    assert B.split_by_problem(ex, 0.15, 0.45, seed=1) != parts  # the seed draws another split
    # a larger test fraction only moves problems from dev/train into test (the hash order is fixed)
    assert pids["test"] <= {e["problem_id"] for e in B.split_by_problem(ex, 0.1, 0.6, seed=0)["test"]}


def test_split_by_problem_refuses_what_cannot_be_split():
    ex = B.judge_examples(_recs(20, 20, n_problems=3), "abs_q")
    assert {s: len({e["problem_id"] for e in xs}) for s, xs in B.split_by_problem(ex, 0.1, 0.1).items()} == {
        "train": 1,
        "dev": 1,
        "test": 1,
    }  # a non-zero fraction always gets a problem
    with pytest.raises(ValueError, match="cannot fill dev"):
        B.split_by_problem(B.judge_examples(_recs(20, 20, n_problems=2), "abs_q"), 0.1, 0.1)
    with pytest.raises(ValueError, match="leaves no problem to train on"):
        B.split_by_problem(ex, 0.5, 0.5)
    with pytest.raises(ValueError, match=r"test_fraction = 1.5 must be in \[0, 1\)"):
        B.split_by_problem(ex, 0.1, 1.5)
    assert B.split_by_problem(ex, 0.0, 0.5)["dev"] == []  # no dev split asked for


def test_build_splits_writes_every_split_balanced_and_unbalanced(tmp_path):
    """Notebook 03's whole stage (balancing.build_splits): the files notebook 04 reads, per rule and
    split, each balanced file 50/50 and drawn from its unbalanced one, problems disjoint across splits."""
    from stepwiser_lib.core import io

    recs = _recs(120, 120, n_problems=40)
    stats, example = B.build_splits(recs, ["abs_q", "rel_ratio"], tmp_path, dev_fraction=0.2, test_fraction=0.3, seed=3)
    assert set(stats) == {"abs_q", "rel_ratio"} and example["label"] in (True, False)
    for rule in stats:
        problems = {}
        for split in B.SPLITS:
            bal = io.read_jsonl(tmp_path / rule / f"{split}_balanced.jsonl")
            unb = io.read_jsonl(tmp_path / rule / f"{split}_unbalanced.jsonl")
            assert sum(e["label"] for e in bal) * 2 == len(bal) > 0
            assert all(e in unb for e in bal)
            assert stats[rule][f"{split}_balanced"]["n"] == len(bal) and stats[rule][f"{split}_unbalanced"]["n"] == len(
                unb
            )
            problems[split] = {e["problem_id"] for e in unb}
            assert stats[rule][f"{split}_problems"] == len(problems[split])
        assert not (
            problems["train"] & problems["dev"]
            or problems["train"] & problems["test"]
            or problems["dev"] & problems["test"]
        )
    rows = B.table_rows(stats)
    assert rows["abs_q"]["positive % (all)"] == 50.0
    assert rows["abs_q"]["train/dev/test problems"] == "/".join(str(stats["abs_q"][f"{s}_problems"]) for s in B.SPLITS)
    # the same call writes the same files (seeded)
    again = tmp_path / "again"
    B.build_splits(recs, ["abs_q", "rel_ratio"], again, dev_fraction=0.2, test_fraction=0.3, seed=3)
    assert (again / "abs_q" / "test_balanced.jsonl").read_bytes() == (
        tmp_path / "abs_q" / "test_balanced.jsonl"
    ).read_bytes()


def test_build_splits_fails_when_a_class_is_missing(tmp_path):
    with pytest.raises(RuntimeError, match=r"balanced .* set\(s\) came out empty"):
        B.build_splits(_recs(40, 0), ["abs_q"], tmp_path, dev_fraction=0.2, test_fraction=0.3)


def test_results_markdown_one_row_per_rule(tmp_path):
    stats, _ = B.build_splits(_recs(120, 120, n_problems=40), ["abs_q"], tmp_path, dev_fraction=0.2, test_fraction=0.3)
    lines = B.results_markdown({"stats": stats}).splitlines()
    s = stats["abs_q"]
    assert lines[-1] == (
        f"| abs_q | 50.0 | {s['train_balanced']['n']} | {s['dev_balanced']['n']} | {s['test_balanced']['n']} | "
        f"{s['train_problems']} / {s['dev_problems']} / {s['test_problems']} |"
    )


def test_no_toy_profile_tests_on_another_profiles_dev_problems():
    """Issue 35: tiny's prompts are a prefix of toy-full's, so a problem can sit in both; with the
    fixed quantile ranges, no shipped profile's dev range meets another's test range, and the
    nested prompt sets of tiny (112) and toy-full (160) split accordingly."""
    from stepwiser_lib.core import config

    fr = {p: config.for_notebook(p, "03_balancing") for p in ("smoke", "tiny", "toy-full")}
    ranges = {p: ((B.DEV_FROM, B.DEV_FROM + c.DEV_FRACTION), (1 - c.TEST_FRACTION, 1.0)) for p, c in fr.items()}
    for p, (dev, _) in ranges.items():
        for o, (_, test) in ranges.items():
            assert dev[1] <= test[0], (p, dev, o, test)
    ex = [{"problem_id": f"label-0-{i}", "label": i % 2 == 0} for i in range(160)]
    tiny = B.split_by_problem(ex[:112], fr["tiny"].DEV_FRACTION, fr["tiny"].TEST_FRACTION)
    full = B.split_by_problem(ex, fr["toy-full"].DEV_FRACTION, fr["toy-full"].TEST_FRACTION)
    ids = lambda part: {e["problem_id"] for e in part}  # noqa: E731
    assert not ids(tiny["dev"]) & ids(full["test"]) and not ids(full["dev"]) & ids(tiny["test"])
    assert ids(tiny["test"]) <= ids(full["test"]) and len(ids(full["test"])) > 60


def test_resolution_lines_give_each_rule_its_rate_and_the_test_splits_resolution():
    s = {"all": {"positive_rate": 68.94}, "test_balanced": {"n": 312}}
    lines = B.resolution_lines({"abs_q": s, "rel_effective": {**s, "test_balanced": {"n": 0}}}, {"abs_q": 70.2})
    assert lines[0] == (
        "- **abs_q**: 68.94% positive before balancing (paper, 1.5B: 70.2); "
        "on its 312 balanced test chunks one accuracy is known to about ±5.1 points at best."
    )
    assert "(paper, 1.5B: not reported)" in lines[1] and "±50.0 points" in lines[1]  # no test chunk: no resolution
