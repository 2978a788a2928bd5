"""Stepwise RS-FT data selection (paper §4.4, Table 8)."""
import pytest

from stepwiser_lib import rsft


def test_select_best_picks_max_average_correct_response():
    cands = [{"correct": False, "score": 1.0}, {"correct": True, "score": 0.5},
             {"correct": True, "score": 0.75}, {"correct": True, "score": 0.25}]
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
    items = [{"problem": "P", "responses": ["<chunk>a</chunk>\n<chunk>x</chunk>", "<chunk>b</chunk>"]},
             {"problem": "Q", "responses": ["no chunks"]}]
    j = J()
    s = rsft.score_responses(j, items)
    assert s == [[[1.0, 0.0], [1.0]], [[]]] and j.n == 1


def test_sft_records_cut_after_last_chunk():
    items = [{"problem": "P", "responses": ["<chunk>a</chunk>\n<chunk>\\boxed{1}</chunk> trailing", "x"]},
             {"problem": "Q", "responses": ["y"]}]
    recs = rsft.sft_records(items, [0, None], "Solve {problem}")
    assert recs == [{"prompt": "Solve P", "completion": "<chunk>a</chunk>\n<chunk>\\boxed{1}</chunk>"}]
