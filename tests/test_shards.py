"""Fixed-size shards shared by data-parallel workers (issue 34): stepwiser_lib.core.shards."""

import json

import pytest

from stepwiser_lib.core import shards


def test_shard_seed_keeps_shard_zero_and_separates_the_others():
    assert shards.shard_seed(7, 0) == 7  # a job of one shard samples as before it was sharded
    assert shards.shard_seed(7, 1) == 7 + 1_000_003 and shards.shard_seed(7, 2) == 7 + 2_000_006
    assert shards.n_shards(5, 2) == 3 and shards.n_shards(4, 2) == 2 and shards.n_shards(0, 2) == 0
    assert shards.layout(256, 256) == [] and shards.layout(257, 256) == ["shards of", 256]
    with pytest.raises(ValueError, match="shard size 0"):
        shards.n_shards(3, 0)


def _compute(calls):
    def compute(part, sid):
        calls.append(sid)
        return [f"{u}@{shards.shard_seed(0, sid)}" for u in part]

    return compute


def test_two_workers_give_what_one_gives_and_the_join_computes_nothing(tmp_path):
    units = list("abcde")
    one, calls = shards.run(units, 2, _compute([]), tmp_path / "one", "k")[0], []
    w0, _ = shards.run(units, 2, _compute(calls), tmp_path / "two", "k", worker=0, workers=2)
    assert w0 is None and calls == [0, 2]  # worker 0 of 2: shards 0 and 2; shard 1 is not there yet
    w1, _ = shards.run(units, 2, _compute(calls), tmp_path / "two", "k", worker=1, workers=2)
    assert w1 == one and calls == [0, 2, 1]  # the last worker finds every shard
    joined, seconds = shards.run(units, 2, _compute(calls), tmp_path / "two", "k")
    assert joined == one == ["a@0", "b@0", "c@1000003", "d@1000003", "e@2000006"] and calls == [0, 2, 1]
    assert seconds >= 0 and sorted(p.name for p in (tmp_path / "two").iterdir()) == [
        "shard_00000.json",
        "shard_00001.json",
        "shard_00002.json",
    ]
    with pytest.raises(ValueError, match="worker 2 of 2"):
        shards.run(units, 2, _compute(calls), tmp_path, "k", worker=2, workers=2)


def test_a_dead_worker_loses_only_its_shard_and_a_new_key_recomputes(tmp_path):
    calls = []

    def dies_on_shard_1(part, sid):
        if sid == 1:
            raise KeyboardInterrupt
        return _compute(calls)(part, sid)

    with pytest.raises(KeyboardInterrupt):
        shards.run(list("abcde"), 2, dies_on_shard_1, tmp_path, "k")
    assert calls == [0] and [p.name for p in tmp_path.iterdir()] == ["shard_00000.json"]
    out, _ = shards.run(list("abcde"), 2, _compute(calls), tmp_path, "k")
    assert calls == [0, 1, 2] and len(out) == 5  # shard 0 from disk
    shards.run(list("abcde"), 2, _compute(calls), tmp_path, "other settings")
    assert calls == [0, 1, 2, 0, 1, 2]  # another key: nothing reused
    (tmp_path / "shard_00001.json").write_text("{broken")
    with pytest.warns(UserWarning, match="damaged"):
        shards.run(list("abcde"), 2, _compute(calls), tmp_path, "other settings")
    assert calls[-1] == 1 and json.loads((tmp_path / "shard_00001.json").read_text())["rows"] == [
        "c@1000003",
        "d@1000003",
    ]


def test_a_compute_that_drops_units_is_an_error(tmp_path):
    with pytest.raises(ValueError, match="shard 0: 1 results for 2 units"):
        shards.run(["a", "b"], 2, lambda part, sid: part[:1], tmp_path, "k")


def test_the_worker_clis_stop_on_a_bad_index_or_shard_size(capsys):
    """``python -m stepwiser_lib.method.processbench|rsft``: exit 2 with one line, before any model loads."""
    from stepwiser_lib.method import processbench, rsft

    assert processbench.main(["--profile", "smoke", "--worker", "2", "--workers", "2"]) == 2
    assert "--worker 2 --workers 2: want 0 <= worker < workers" in capsys.readouterr().err
    assert rsft.main(["--profile", "smoke", "--shard-size", "0"]) == 2
    assert "--shard-size 0: want at least 1" in capsys.readouterr().err
    assert rsft.main(["--profile", "no-such-profile"]) == 2
    assert "configuration error" in capsys.readouterr().err
