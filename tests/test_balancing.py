import pytest

from stepwiser_lib import balancing as B


def _recs(n_pos, n_neg, n_problems=10):
    out = []
    for i in range(n_pos + n_neg):
        out.append({"problem_id": f"p{i % n_problems}", "problem": "x", "traj_id": f"t{i}",
                    "chunk_index": 0, "history": ["h" * (i % 5)], "chunk": "c" * (1 + i % 7),
                    "is_final": i % 3 == 0, "q": 0.5, "q_prev": 0.5,
                    "label_abs_q": i < n_pos, "label_rel_ratio": i % 2 == 0, "label_rel_effective": True})
    return out


def test_balance_is_exact_and_keeps_minority_whole():
    ex = B.judge_examples(_recs(70, 30), "abs_q")
    bal = B.balance(ex, seed=0)
    st = B.class_stats(bal)
    assert st["positive"] == st["negative"] == 30
    assert [e for e in ex if not e["label"]] == [e for e in bal if not e["label"]]  # minority whole
    assert B.balance(ex, seed=0) == bal  # deterministic
    assert B.balance(ex, seed=1) != bal
    assert B.balance(B.judge_examples(_recs(20, 50), "abs_q"), seed=0) and \
        B.class_stats(B.balance(B.judge_examples(_recs(20, 50), "abs_q")))["negative"] == 20
    assert B.balance([], seed=0) == []


def test_length_filter_and_rules():
    ex = B.judge_examples(_recs(10, 10), "rel_ratio", min_chars=3, max_chars=8, drop_final=True)
    assert all(3 <= len(e["history"][0]) + len(e["chunk"]) <= 8 for e in ex)
    assert all(e["rule"] == "rel_ratio" for e in ex)
    with pytest.raises(ValueError, match="unknown rule"):
        B.judge_examples(_recs(1, 1), "abs")


def test_split_by_problem_has_no_shared_problem():
    ex = B.judge_examples(_recs(200, 200, n_problems=40), "abs_q")
    tr, va = B.split_by_problem(ex, 0.25, seed=0)
    assert len(tr) + len(va) == len(ex)
    assert not {e["problem_id"] for e in tr} & {e["problem_id"] for e in va}
    assert 0.1 < len({e["problem_id"] for e in va}) / 40 < 0.45
    assert B.split_by_problem(ex, 0.25, seed=0) == (tr, va)
