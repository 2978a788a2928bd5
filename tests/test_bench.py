"""make bench's analysis on literal outcome streams, and its docs table in step with its result."""

from stepwiser_lib.core import vocab
from stepwiser_lib.method import labelling
from stepwiser_lib.tools import bench


def _world():
    """Two trajectories; prefix outcomes of two independent full-M (M = 8) streams."""
    trajs = [{"q0": 0.5, "correct": True, "prefixes": ["a", "ab"]}, {"q0": 0.25, "correct": False, "prefixes": ["c"]}]
    first = [[1, 1, 1, 1, 1, 1, 0, 1], [1, 1, 1, 1, 1, 1, 1, 1], [0, 0, 0, 0, 0, 0, 0, 1]]
    second = [[1, 1, 1, 1, 1, 0, 1, 1], [1, 1, 1, 1, 1, 1, 1, 1], [0, 0, 0, 0, 0, 0, 0, 0]]
    return trajs, first, second, labelling.LabelConfig(m_rollouts=8)


def test_labels_from_applies_each_rule():
    trajs, first, _, cfg = _world()
    # Q: traj 1 = [7/8, 1, 1 (correct)], q0 0.5; traj 2 = [1/8, 0 (wrong)], q0 0.25
    assert bench._labels_from(trajs, first, cfg, rule="abs_q") == [True, True, True, True, False]
    assert bench._labels_from(trajs, first, cfg, rule="rel_ratio") == [True, True, True, False, False]
    assert bench._labels_from(trajs, first, cfg, counts=[2, 8, 2], rule="abs_q") == [True, True, True, False, False]


def test_sweep_floor_and_choice():
    trajs, first, second, cfg = _world()
    sw = bench.adaptive_sweep(trajs, first, second, cfg)
    assert sw["chunks"] == 5 and sw["prefixes"] == 3
    assert sw["noise_floor"] == {"abs_q": 0.8, "rel_effective": 0.8, "rel_ratio": 1.0}  # traj 2's 1/8 vs 0
    assert len(sw["rows"]) == len(vocab.ADAPTIVE_RULES) * len(bench.SWEEP_ROUNDS) * len(bench.SWEEP_Z)
    exact = [r for r in sw["rows"] if r["z"] == 0.0]
    # the exact bound gives full M's labels of the rule(s) it preserves: their agreement is the floor
    for r in exact:
        kept = vocab.RULES if r["adaptive_rule"] == "all" else (r["adaptive_rule"],)
        assert all(r["agreement"][k] == sw["noise_floor"][k] for k in kept)
    c = bench.choose_adaptive(sw, strict=True)
    assert c is not None and all(c["agreement"][k] >= sw["noise_floor"][k] for k in vocab.RULES)
    assert c["rollout_fraction"] == min(
        r["rollout_fraction"] for r in sw["rows"] if all(r["agreement"][k] >= sw["noise_floor"][k] for k in vocab.RULES)
    )


def test_choose_returns_none_when_nothing_reaches_the_floor():
    sw = {
        "noise_floor": {"abs_q": 1.0},
        "rows": [{"rollout_fraction": 0.3, "z": 1.0, "agreement": {"abs_q": 0.9}, "p_below_floor": {"abs_q": 0.01}}],
    }
    assert bench.choose_adaptive(sw, ("abs_q",)) is None
    sw["rows"][0]["p_below_floor"]["abs_q"] = 0.2  # below the floor, but not significantly
    assert bench.choose_adaptive(sw, ("abs_q",)) is sw["rows"][0]
    assert bench.choose_adaptive(sw, ("abs_q",), strict=True) is None


def test_sweep_pairs_the_test_by_chunk():
    """p_below_floor is the exact McNemar test on the chunks where exactly one of full M and the
    adaptive labels (both from the second stream) matches the first stream."""
    trajs, first, second, cfg = _world()
    sw = bench.adaptive_sweep(trajs, first, second, cfg)
    for r in sw["rows"]:
        for k, p in r["p_below_floor"].items():
            assert 0 <= p <= 1
            if r["agreement"][k] >= sw["noise_floor"][k]:
                assert p >= 0.5  # at or above the floor: no evidence it is below
