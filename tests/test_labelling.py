import pytest
from fakes import FakeToyPolicy, fake_items

from stepwiser_lib.core import vocab
from stepwiser_lib.engines.models import Completion
from stepwiser_lib.method import labelling as L

TEMPLATE = "Solve.\nProblem: {problem}"


# ----------------------------------------------------------------------------- label rules


def test_abs_q_hand_cases():
    assert L.abs_q_labels([0.5, 0.0, 0.0625, 1.0]) == [True, False, True, True]
    assert L.abs_q_labels([]) == []


def test_rel_ratio_hand_cases():
    q0 = 0.5
    # first chunk compares with q0: 0.5/0.5 = 1 > 0.8 ; 0.25/0.5 = 0.5 ; 0/0.25 ; then q_prev = 0
    assert L.rel_ratio_labels([0.5, 0.25, 0.0, 0.0, 0.125], q0, 0.8) == [True, False, False, False, True]
    # ties are negative (strict >): 0.75 / 0.9375 == 0.8 exactly
    assert L.rel_ratio_labels([0.75], 0.9375, 0.8) == [False]
    assert L.rel_ratio_labels([0.8125], 0.9375, 0.8) == [True]
    # the final chunk's Q is its correctness (1.0 or 0.0)
    assert L.rel_ratio_labels([0.25, 1.0], 0.5, 0.8) == [False, True]
    assert L.rel_ratio_labels([0.75, 0.0], 0.5, 0.8) == [True, False]


def test_rel_effective_hand_cases():
    mu = lambda x: 1 - (1 - x) ** 4
    assert L.mu(0.5) == pytest.approx(0.9375)
    # q=0.25 after q0=0.5: 0.25 + 0.4*(mu(.25)-mu(.5)) = 0.25 + 0.4*(0.68359375-0.9375) = 0.1484 > 0
    assert L.rel_effective_labels([0.25], 0.5, alpha=0.4) == [True]
    # with alpha 1.0: 0.25 + (0.68359375-0.9375) = -0.0039 <= 0 -> negative
    assert 0.25 + (mu(0.25) - mu(0.5)) < 0
    assert L.rel_effective_labels([0.25], 0.5, alpha=1.0) == [False]
    # Q = 0 is always negative; a jump up is positive
    assert L.rel_effective_labels([0.0, 0.5, 1.0], 0.25, alpha=0.8) == [False, True, True]
    # n matters: best-of-1 is pi itself
    assert L.rel_effective_labels([0.25], 0.5, alpha=1.0, n=1) == [False]  # 0.25 + (0.25-0.5) = 0


def test_settled_matches_every_completion():
    """Exhaustive check of the interval rule: settled => every completion gives one label."""
    M = 8
    for rule in vocab.RULES:
        for d in range(M + 1):
            for s in range(d + 1):
                for prev in [0.0, 0.125, 0.5, 0.875, 1.0]:
                    lo, hi = s / M, (s + M - d) / M
                    outs = {L.rule_label(rule, (s + k) / M, prev, 0.4, 0.8) for k in range(M - d + 1)}
                    if L.label_settled(rule, lo, hi, prev, prev, 0.4, 0.8):
                        assert len(outs) == 1, (rule, s, d, prev)
                    if d == M:
                        assert L.label_settled(rule, lo, hi, prev, prev, 0.4, 0.8)


def test_settled_for_all_rules_is_settled_for_each():
    # "all" is settled exactly when every single rule is
    for lo, hi, lp, hp in [(0.5, 1.0, 0.5, 0.5), (0.0, 0.0, 0.5, 0.5), (0.9, 1.0, 0.1, 0.2), (0.2, 0.6, 0.4, 0.4)]:
        each = [L.label_settled(r, lo, hi, lp, hp, 0.4, 0.8) for r in vocab.RULES]
        assert L.label_settled("all", lo, hi, lp, hp, 0.4, 0.8) == all(each)
    assert L.label_settled("all", 0.9, 1.0, 0.1, 0.2, 0.4, 0.8)  # settled positive under every rule
    assert not L.label_settled("all", 0.2, 0.6, 0.4, 0.4, 0.4, 0.8)  # Rel-Ratio: 0.2/0.4 < 0.8 < 0.6/0.4


# ----------------------------------------------------------------------------- pipeline


def _cfg(**kw):
    base = dict(n_prefilter=8, m_rollouts=8, traj_per_prompt=2, shard_size=3, seed=1)
    base.update(kw)
    return L.LabelConfig(**base)


def test_chunk_ends_and_prefixes():
    r = "<chunk>a</chunk>\n\n<chunk>b</chunk>\n\n<chunk>\\boxed{1}</chunk>"
    ends = L.chunk_ends(r)
    assert [r[:e] for e in ends] == ["<chunk>a</chunk>", "<chunk>a</chunk>\n\n<chunk>b</chunk>", r]


def test_label_shard_records_and_batching(tmp_path):
    gen = FakeToyPolicy()
    recs, st = L.label_shard(gen, fake_items(6), TEMPLATE, _cfg(), shard_id=0)
    assert st.kept_prompts > 0 and st.trajectories > 0
    # one generate call for the pre-filter and ONE for all rollouts of the shard (batched)
    assert len(gen.calls) == 2 and gen.calls[1] == (st.prefixes, 8)
    assert st.rollouts == st.prefixes * 8 == st.rollouts_full
    for r in recs:
        assert 0 < r["q0"] < 1
        assert r["n_rollouts"] == (0 if r["is_final"] else 8)
        if r["is_final"]:
            assert r["q"] == (1.0 if r["traj_correct"] else 0.0)
        if "WRONG" in r["chunk"] or any("WRONG" in h for h in r["history"]):
            assert r["q"] == 0 and not r["label_abs_q"]
    by_traj = {}
    for r in recs:
        by_traj.setdefault(r["traj_id"], []).append(r)
    for rs in by_traj.values():
        rs.sort(key=lambda r: r["chunk_index"])
        q = [r["q"] for r in rs]
        assert [r["label_rel_ratio"] for r in rs] == L.rel_ratio_labels(q, rs[0]["q0"], 0.8)
        assert all(r["q_prev"] == (rs[i - 1]["q"] if i else r["q0"]) for i, r in enumerate(rs))
        assert [r["history"] for r in rs][-1] == [x["chunk"] for x in rs[:-1]]


def test_adaptive_keeps_abs_q_labels_and_saves_rollouts():
    items = fake_items(12)
    full, st_full = L.label_shard(FakeToyPolicy(), items, TEMPLATE, _cfg(m_rollouts=16), 0)
    ad, st_ad = L.label_shard(
        FakeToyPolicy(), items, TEMPLATE, _cfg(m_rollouts=16, adaptive=True, adaptive_rule="abs_q", adaptive_round=4), 0
    )
    assert st_ad.rollouts < st_full.rollouts
    # the fake's outcomes do not depend on the round, so labels must agree exactly
    assert [r["label_abs_q"] for r in full] == [r["label_abs_q"] for r in ad]


def test_resume_after_interruption_gives_identical_labels(tmp_path):
    items = fake_items(10)
    ref = L.label_prompts(FakeToyPolicy(), items, TEMPLATE, _cfg(), tmp_path / "ref", "m", progress=False)
    gen = FakeToyPolicy()
    with pytest.raises(KeyboardInterrupt):
        L.label_prompts(gen, items, TEMPLATE, _cfg(), tmp_path / "run", "m", progress=False, stop_after=2)
    calls_before = len(gen.calls)
    res = L.label_prompts(gen, items, TEMPLATE, _cfg(), tmp_path / "run", "m", progress=False)
    assert res["resumed"] == 2 and res["redone"] == []
    assert len(gen.calls) - calls_before == 2 * 2  # only the 2 remaining shards were generated
    assert res["records"] == ref["records"]


def test_truncated_or_corrupt_shards_are_redone(tmp_path):
    items = fake_items(6)
    ref = L.label_prompts(FakeToyPolicy(), items, TEMPLATE, _cfg(), tmp_path, "m", progress=False)
    shards = sorted((tmp_path / "shards").glob("shard_*.jsonl"))
    text = shards[0].read_text()
    shards[0].write_text(text[: len(text) // 2])  # truncated mid-record
    shards[1].write_text(text.replace('"q": 0', '"q": 9'))  # corrupt body, old footer
    res = L.label_prompts(FakeToyPolicy(), items, TEMPLATE, _cfg(), tmp_path, "m", progress=False)
    assert len(res["redone"]) == 2 and res["resumed"] == 0
    assert any("truncated" in x for x in res["redone"])
    assert res["records"] == ref["records"]
    # a different configuration does not silently reuse shards
    res2 = L.label_prompts(FakeToyPolicy(), items, TEMPLATE, _cfg(m_rollouts=4), tmp_path, "m", progress=False)
    assert res2["resumed"] == 0 and all("another configuration" in x for x in res2["redone"])


def test_label_summary():
    recs = [
        {"traj_id": "t", "problem_id": "p", "q": 0.5, **{f"label_{r}": True for r in vocab.RULES}},
        {"traj_id": "t", "problem_id": "p", "q": 0.0, **{f"label_{r}": False for r in vocab.RULES}},
    ]
    s = L.label_summary(recs)
    assert s["chunks"] == 2 and s["positive_abs_q"] == 50.0 and s["mean_q"] == 0.25


def test_confidence_bound_uses_fewer_rollouts_than_exact():
    items = fake_items(12)
    _, exact = L.label_shard(FakeToyPolicy(), items, TEMPLATE, _cfg(m_rollouts=16, adaptive=True, adaptive_round=4), 0)
    _, conf = L.label_shard(
        FakeToyPolicy(), items, TEMPLATE, _cfg(m_rollouts=16, adaptive=True, adaptive_round=4, adaptive_z=1.0), 0
    )
    assert conf.rollouts <= exact.rollouts < exact.rollouts_full


def test_shard_config_hash_follows_the_policy_weights(tmp_path):
    """A retrained policy at the same path must not reuse old shards."""
    from stepwiser_lib.method.labelling import LabelConfig

    d = tmp_path / "policy"
    d.mkdir()
    (d / "config.json").write_text("{}")
    (d / "model.safetensors").write_bytes(b"old weights")
    cfg = LabelConfig()
    h1 = cfg.digest(str(d))
    assert cfg.digest(str(d)) == h1
    (d / "model.safetensors").write_bytes(b"new weights")
    assert cfg.digest(str(d)) != h1


def _shards(d):
    return sorted((d / "shards").glob("shard_*.jsonl"))


def test_every_detectable_corruption_is_named_set_aside_and_redone(tmp_path):
    """Bad bytes, a footer that is not an object, a malformed record behind a valid checksum,
    a leftover temporary file: each shard is named, moved aside (never overwritten) and redone."""
    import hashlib
    import json
    import os
    import time

    items = fake_items(12)
    ref = L.label_prompts(FakeToyPolicy(), items, TEMPLATE, _cfg(), tmp_path, "m", progress=False)
    s0, s1, s2, s3 = _shards(tmp_path)
    raw = s0.read_bytes()
    s0.write_bytes(raw[:100] + b"\xff\xfe\xff" + raw[103:])  # invalid UTF-8
    lines = s1.read_text().splitlines(keepends=True)
    s1.write_text("".join(lines[:-1]) + json.dumps({"_footer": 5}) + "\n")
    body = lines and s2.read_text().splitlines(keepends=True)
    rec = json.loads(body[0])
    rec["q"] = "0.5"  # a record of the wrong type, checksum recomputed so only validation can see it
    new_body = json.dumps(rec) + "\n" + "".join(body[1:-1])
    footer = json.loads(body[-1])
    footer["_footer"]["sha256"] = hashlib.sha256(new_body.encode()).hexdigest()
    s2.write_text(new_body + json.dumps(footer) + "\n")
    left = s3.parent / ".shard_00003.jsonl.abc.tmp"  # a killed writer's, an hour old
    left.write_text("half")
    os.utime(left, (time.time() - 3600, time.time() - 3600))
    live = s3.parent / ".shard_00002.jsonl.def.tmp"  # another live run's write in progress (review 2, C01)
    live.write_text("half")
    res = L.label_prompts(FakeToyPolicy(), items, TEMPLATE, _cfg(), tmp_path, "m", progress=False)
    assert res["resumed"] == 1 and len(res["redone"]) == 3
    assert (
        "shard_00000.jsonl: not UTF-8 at byte 100 (corrupt) -> set aside as shard_00000.jsonl.corrupt" in res["redone"]
    )
    assert any("shard_00001.jsonl: corrupt footer (not an object)" in r for r in res["redone"])
    assert any("shard_00002.jsonl, line 1: malformed record (field 'q')" in r for r in res["redone"])
    assert res["records"] == ref["records"]
    assert (s1.parent / "shard_00001.jsonl.corrupt").read_text().endswith('{"_footer": 5}\n')
    assert list(s3.parent.glob(".shard_*.tmp")) == [live]


def test_a_threshold_change_relabels_the_stored_q_without_a_rollout(tmp_path):
    """GAMMA, ALPHA or MU_N alone (full-M sampling, the paper profile): no generate call, every
    label equals the rule applied to the stored Q, and nothing is set aside."""
    items = fake_items(6)
    L.label_prompts(FakeToyPolicy(), items, TEMPLATE, _cfg(), tmp_path, "m", progress=False)
    gen = FakeToyPolicy()
    new = _cfg(gamma=0.5, alpha=0.1, mu_n=2)
    res = L.label_prompts(gen, items, TEMPLATE, new, tmp_path, "m", progress=False)
    assert gen.calls == [] and res["resumed"] == len(_shards(tmp_path)) and res["redone"] == []
    for r in res["records"]:
        assert r["label_rel_ratio"] == L.rel_ratio_label(r["q"], r["q_prev"], 0.5)
        assert r["label_rel_effective"] == L.rel_effective_label(r["q"], r["q_prev"], 0.1, 2)
        assert r["label_abs_q"] == (r["q"] > 0)
    fresh = L.label_prompts(FakeToyPolicy(), items, TEMPLATE, new, tmp_path / "fresh", "m", progress=False)
    assert res["records"] == fresh["records"]  # the same as labelling from scratch with the new thresholds
    # a rollout setting does change the shards: the old ones are moved aside, not overwritten
    res2 = L.label_prompts(FakeToyPolicy(), items, TEMPLATE, _cfg(m_rollouts=4), tmp_path, "m", progress=False)
    assert res2["resumed"] == 0 and all("set aside as" in r and ".other-config" in r for r in res2["redone"])
    assert len(list((tmp_path / "shards").glob("shard_*.jsonl.other-config"))) == len(_shards(tmp_path))


def test_the_shard_key_covers_exactly_what_the_rollouts_depend_on():
    base = L.LabelConfig()
    assert base.digest("m") == L.LabelConfig(gamma=0.5, alpha=0.9, mu_n=2, adaptive_rule="abs_q").digest("m")
    for change in (
        {"m_rollouts": 8},
        {"temperature": 0.7},
        {"seed": 1},
        {"n_prefilter": 8},
        {"max_new_tokens": 10},
        {"traj_per_prompt": 2},
        {"shard_size": 4},
    ):
        assert L.LabelConfig(**change).digest("m") != base.digest("m"), change
    ad = L.LabelConfig(adaptive=True, adaptive_rule="rel_ratio")
    assert ad.digest("m") != base.digest("m")
    assert L.LabelConfig(adaptive=True, adaptive_rule="rel_ratio", gamma=0.7).digest("m") != ad.digest("m")
    assert L.LabelConfig(adaptive=True, adaptive_rule="rel_ratio", alpha=0.9).digest("m") == ad.digest("m")


def test_a_prefix_without_room_is_a_counted_failure_never_a_failed_shard():
    """A rollout completes the response its prefix began: its budget is MAX_NEW_TOKENS less the
    prefix (the paper's 8,192 are a response's). One with no room left used to raise for the
    whole shard, again on every resume; now it is a failure, counted."""
    from stepwiser_lib.engines.models import Completion

    class Budgeted(FakeToyPolicy):
        def generate(self, prompts, n=1, prefixes=None, count_prefix=False, max_new_tokens=256, **kw):
            out = super().generate(prompts, n=n, prefixes=prefixes, max_new_tokens=max_new_tokens, **kw)
            if prefixes and count_prefix:  # the rollout round: the longest prefix has no room
                longest = max(range(len(prefixes)), key=lambda i: len(prefixes[i]))
                out[longest] = [Completion("", 0, False, skipped=True) for _ in range(n)]
                out[0] = [Completion(c.text[:3], 3, False) for c in out[0]]  # cut at the budget
            return out

    recs, st = L.label_shard(Budgeted(), fake_items(6), TEMPLATE, _cfg(), shard_id=0)
    assert st.skipped_rollouts == 8 and st.truncated_rollouts >= 8 and recs
    assert st.prefilter_samples == 6 * 8 and 0 < st.prefilter_correct < st.prefilter_samples
    rates = L.prefilter_rates(st.__dict__)
    assert rates["n"] == 48 and rates["chunk_format"] == 100.0 and rates["truncated"] == 0.0


def test_n_kept_counts_prompts_that_pass_the_pre_filter(tmp_path):
    """The paper's 40k are prompts *kept* by the pass@16 filter: with N_KEPT the pool is labelled
    shard by shard until that many pass, and the rest is never sampled (review W2)."""
    gen = FakeToyPolicy()
    items = fake_items(40)
    cfg = L.LabelConfig(n_prefilter=16, m_rollouts=4, traj_per_prompt=1, shard_size=4, n_kept=6)
    res = L.label_prompts(gen, items, TEMPLATE, cfg, tmp_path, "fake", progress=False)
    assert res["stats"]["kept_prompts"] >= 6 and res["shards"] < 10
    assert (
        res["stats"]["kept_prompts"] - min(4, res["stats"]["kept_prompts"]) < 6
    )  # stopped after the shard that reached it
    assert L.LabelConfig(n_kept=6).digest("m") == L.LabelConfig().digest("m")  # not a rollout setting
    full = L.label_prompts(
        gen,
        items,
        TEMPLATE,
        L.LabelConfig(n_prefilter=16, m_rollouts=4, traj_per_prompt=1, shard_size=4),
        tmp_path / "all",
        "fake",
        progress=False,
    )
    assert full["shards"] == 10


def test_rollouts_state_q_interval_and_the_adaptive_stop():
    """labelling.Rollouts, the Monte-Carlo state the labelling loop and the bench share: Q values,
    the range Q_i can still reach, and when a prefix may stop sampling (adaptive)."""
    cfg = L.LabelConfig(m_rollouts=8, adaptive=True, adaptive_rule="abs_q", adaptive_round=2)
    mc = L.Rollouts.start(0.5, True, 1)
    assert (mc.succ, mc.done) == ([0], [0])
    mc.succ[0], mc.done[0] = 1, 2
    assert mc.q() == [0.5, 1.0]
    assert mc.interval(-1, 8) == (0.5, 0.5) and mc.interval(1, 8) == (1.0, 1.0)
    assert mc.interval(0, 8) == (1 / 8, 7 / 8)  # 6 rollouts to go: anything from 0 to 6 more successes
    assert mc.settled(0, cfg)  # Q_0 > 0 already, and the final chunk's label needs only Q_1 = 1
    assert not L.Rollouts(0.5, True, [0], [2]).settled(0, cfg)  # Q_0 may still end at 0 or above
    lo, hi = L.Rollouts(0.5, True, [1], [2]).interval(0, 8, z=1.0)  # a Wilson bound is tighter
    assert 1 / 8 < lo < hi < 7 / 8
    assert L.Rollouts(0.5, False, [8], [8]).settled(0, L.LabelConfig(m_rollouts=8, adaptive=True, adaptive_rule="all"))


def test_results_markdown_puts_each_rule_beside_the_paper():
    m = {
        "summary": {
            "chunks": 10,
            "trajectories": 3,
            "positive_abs_q": 70.0,
            "positive_rel_effective": 60.0,
            "positive_rel_ratio": 50.0,
        },
        "stats": {"kept_prompts": 2, "prompts": 4, "rollouts": 40, "rollouts_full": 64},
        "paper_positive_rates": {"abs_q": 70.2, "rel_ratio_gamma0.8": 56.5},
    }
    md = L.results_markdown(m)
    assert md.startswith(
        "10 chunks of 3 trajectories (2/4 prompts kept by the pre-filter); 40 rollouts of 64 at full M."
    )
    assert md.splitlines()[-3:] == [
        "| abs_q | 70.0 | 70.2 |",
        "| rel_effective | 60.0 |  |",
        "| rel_ratio | 50.0 | 56.5 |",
    ]


@pytest.mark.parametrize("n_kept", [0, 5])
def test_workers_label_their_shards_and_the_merge_equals_one_process(tmp_path, n_kept):
    """Issue 34: K workers over one folder, each its shards (sid % K); a run with one worker then
    resumes every shard and generates nothing; the labels equal one process's, whatever K."""
    items = fake_items(12)  # 4 shards of 3
    one = L.label_prompts(FakeToyPolicy(), items, TEMPLATE, _cfg(n_kept=n_kept), tmp_path / "one", "m", progress=False)
    for k in (2, 3):
        out = tmp_path / f"k{k}"
        written = []
        for w in reversed(range(k)):  # the last worker first: it cannot count on the others' shards
            before = set((out / "shards").glob("shard_*.jsonl")) if (out / "shards").exists() else set()
            L.label_prompts(
                FakeToyPolicy(), items, TEMPLATE, _cfg(n_kept=n_kept), out, "m", progress=False, worker=w, workers=k
            )
            new = {int(p.name[6:11]) for p in set((out / "shards").glob("shard_*.jsonl")) - before}
            assert all(sid % k == w for sid in new)  # only its own shards
            written += new
        assert len(written) == len(set(written))  # each shard once
        if not n_kept:
            assert set(range(one["shards"])) <= set(written)  # every shard, so the merge labels nothing
        # (with N_KEPT a worker skips a shard the earlier ones are expected to make unnecessary; an
        # estimate that was wrong leaves the merge that shard to label: slower, never other labels)
        gen = FakeToyPolicy()
        merged = L.label_prompts(gen, items, TEMPLATE, _cfg(n_kept=n_kept), out, "m", progress=False)
        assert merged["resumed"] + merged["written"] == one["shards"]
        assert merged["resumed"] == len(set(written) & set(range(one["shards"])))
        assert (gen.calls == []) == (merged["written"] == 0)
        timeless = lambda st: {x: v for x, v in st.items() if "seconds" not in x}  # noqa: E731
        assert merged["records"] == one["records"] and timeless(merged["stats"]) == timeless(one["stats"])
    with pytest.raises(ValueError, match="want 0 <= worker < workers"):
        L.label_prompts(FakeToyPolicy(), items, TEMPLATE, _cfg(), tmp_path / "bad", "m", worker=2, workers=2)


def test_a_slow_run_prints_its_rate_not_zero_per_second():
    """Issue 48 (the third real-path reading's A4, regressed): a real model on a CPU labels about
    0.1 rollouts per second; the stats line printed 0."""
    st = {
        "prompts": 2,
        "kept_prompts": 1,
        "trajectories": 2,
        "prefixes": 4,
        "rollouts": 12,
        "rollouts_full": 16,
        "seconds": 130.0,
        "prefilter_seconds": 10.0,
    }
    s = {"chunks": 4, "problems": 1, "mean_q": 0.5, **{f"positive_{r}": 50.0 for r in L.RULES}}
    assert "0.1 per second" in L.stats_lines(st, s)[1]
    assert [L.per_second(x) for x in (0.1234, 5.0, 52.4, 1234.5)] == ["0.123", "5", "52.4", "1,234"]


def test_stats_lines_say_the_run_in_words():
    st = {
        "prompts": 112,
        "kept_prompts": 96,
        "trajectories": 288,
        "prefixes": 813,
        "rollouts": 7450,
        "rollouts_full": 13008,
        "seconds": 93.6,
        "prefilter_seconds": 17.8,
    }
    s = {
        "chunks": 1101,
        "problems": 96,
        "positive_abs_q": 68.94,
        "positive_rel_effective": 67.57,
        "positive_rel_ratio": 63.12,
        "mean_q": 0.5524,
    }
    lines = L.stats_lines(st, s)
    assert (
        len(lines) == 3
        and "96 kept by the pre-filter" in lines[0]
        and "1101 chunks labelled on 96 problems" in lines[0]
    )
    assert "7,450 of the 13,008" in lines[1] and "(57%)" in lines[1] and "98.3 per second" in lines[1]  # 7450 / 75.8 s
    assert lines[2] == "Positive labels: Abs-Q 68.9%, Rel-Effective 67.6%, Rel-Ratio 63.1%; mean Q 0.55"


# ----------------------------------------------------------------------------- notebook 02's cells


class _RecordingPolicy(FakeToyPolicy):
    """FakeToyPolicy that also keeps each generate call's keyword arguments."""

    def __init__(self, **kw):
        super().__init__(**kw)
        self.kwargs = []

    def generate(self, prompts, **kw):
        self.kwargs.append(dict(kw))
        return super().generate(prompts, **kw)


def test_rollout_demo_samples_a_trajectory_then_rolls_out_its_first_chunk():
    pol = _RecordingPolicy()
    cfg = L.LabelConfig(seed=3, temperature=0.7, max_new_tokens=64)
    d = L.rollout_demo(pol, fake_items(2)[1], TEMPLATE, cfg)
    # the notebook's two calls: 4 samples at the seed, then 8 rollouts of the first chunk's prefix at seed + 1
    assert pol.kwargs == [
        {"n": 4, "seed": 3, "temperature": 0.7, "max_new_tokens": 64},
        {"n": 8, "seed": 4, "prefixes": ["<chunk>step 0</chunk>"], "temperature": 0.7, "max_new_tokens": 64},
    ]
    assert d["chunks"] == ["step 0", "So the answer is \\boxed{7}."]
    assert d["correct"] == [False, True, False, True, False, False, True, False]
    assert L.rollout_demo_lines(d) == [  # the first wrong and the first right rollout, in the order sampled
        "PROBLEM: fake problem 1 | answer 7",
        "  chunk 0: 'step 0'",
        "  chunk 1: 'So the answer is \\\\boxed{7}.'",
        "--- rollout (wrong): ...'\\n\\n<chunk>So the answer is \\\\boxed{8}.</chunk>'",
        "--- rollout (correct): ...'\\n\\n<chunk>So the answer is \\\\boxed{7}.</chunk>'",
        "Q after chunk 0 from these 8 rollouts = 3/8 = 0.375",
    ]


def test_rollout_demo_without_a_second_chunk_rolls_nothing_out():
    class OneChunk(_RecordingPolicy):
        def generate(self, prompts, **kw):
            self.kwargs.append(kw)
            return [[Completion(text="<chunk>So \\boxed{7}.</chunk>", n_tokens=5, finished=True)] * kw["n"]]

    pol = OneChunk()
    d = L.rollout_demo(pol, fake_items(1)[0], TEMPLATE, L.LabelConfig())
    assert len(pol.kwargs) == 1 and d["prefix"] is None and d["rollouts"] == d["correct"] == []
    assert L.rollout_demo_lines(d) == ["PROBLEM: fake problem 0 | answer 7", "  chunk 0: 'So \\\\boxed{7}.'"]


def test_labelled_records_name_the_likeliest_cause_when_there_are_none():
    assert L.labelled_records({"records": [{"q": 1.0}], "stats": {}}, 160) == [{"q": 1.0}]
    st = {"prompts": 4, "kept_prompts": 0, "prefilter_samples": 8, "prefilter_truncated": 8, "prefilter_correct": 0}
    with pytest.raises(RuntimeError, match="8 of 8 pre-filter samples were cut at MAX_NEW_TOKENS = 160"):
        L.labelled_records({"records": [], "stats": st}, 160)


def test_run_lines_add_resumed_shards_the_pre_filter_and_the_cut_rollouts():
    st = {
        "prompts": 4,
        "kept_prompts": 2,
        "trajectories": 6,
        "prefixes": 10,
        "rollouts": 80,
        "rollouts_full": 160,
        "seconds": 12.0,
        "prefilter_seconds": 2.0,
        "truncated_rollouts": 3,
        "skipped_rollouts": 1,
        "prefilter_samples": 64,
        "prefilter_boxed": 64,
        "prefilter_correct": 32,
        "prefilter_chunk_tags": 64,
        "prefilter_chunk_format": 48,
        "prefilter_truncated": 0,
    }
    s = {"chunks": 20, "problems": 2, "mean_q": 0.5, **{f"positive_{r}": 50.0 for r in vocab.RULES}}
    lines = L.run_lines({"stats": st, "resumed": 1, "redone": ["shard_00001"]}, s)
    assert lines[:3] == L.stats_lines(st, s)
    assert lines[3:] == [
        "(1 shard(s) read from an earlier run's files, 1 redone)",
        "pre-filter: 64 samples of the model's own: 100.0% boxed an answer, 50.0% correct, 100.0% wrote a <chunk> "
        "tag (75.0% in the chunk format), 0.0% cut at the token limit",
        "rollouts: 3 of 80 cut at the response budget (counted as failures), 1 with no room left at all "
        "(failures, never an error)",
    ]
    assert len(L.run_lines({"stats": st, "resumed": 0, "redone": []}, s)) == 5  # no resumed line


def test_rate_lines_put_each_rule_beside_the_paper():
    paper = {"abs_q": 70.2, "rel_ratio_gamma0.8": 56.5}
    ci = {"rate": 68.9, "low": 66.4, "high": 71.6, "chunks": 1101, "problems": 96}
    assert L.rate_lines({"abs_q": ci, "rel_effective": {**ci, "rate": 67.6}, "rel_ratio": None}, paper) == [
        "- **abs_q**: 68.9% positive [66.4, 71.6] over 1101 chunks of 96 problems; paper: 70.2%",
        "- **rel_effective**: 67.6% positive [66.4, 71.6] over 1101 chunks of 96 problems; paper: not reported",
    ]


def test_disagreement_lines_show_chunks_abs_q_keeps_and_rel_ratio_drops():
    def rec(q_prev, q, abs_q, rel_ratio, final=False, chunk="b = 2"):
        return {
            "problem": "a = 1. Find b.",
            "chunk": chunk,
            "q_prev": q_prev,
            "q": q,
            "is_final": final,
            "label_abs_q": abs_q,
            "label_rel_ratio": rel_ratio,
        }

    recs = [
        rec(0.5, 0.25, True, False, chunk="b = 2"),
        rec(0.5, 0.5, True, True),
        rec(0.5, 0.0, False, False),
        rec(0.75, 0.25, True, False, final=True),  # the final chunk: its Q is its correctness, not a drop
        rec(0.4375, 0.2, True, False, chunk="b = 3"),
    ]
    truth = {"b = 2": True, "b = 3": False}
    assert L.disagreement_lines(recs, checker=lambda r: truth[r["chunk"]]) == [
        "2 of 5 chunks are Abs-Q positive but Rel-Ratio negative",
        "--- PROBLEM: a = 1. Find b.\n    Q went 0.500 -> 0.250, exact checker: True (label noise: the chunk is "
        "right): chunk 'b = 2'",
        "--- PROBLEM: a = 1. Find b.\n    Q went 0.438 -> 0.200, exact checker: False (the chunk is wrong: "
        "Rel-Ratio is right here): chunk 'b = 3'",
    ]
    assert L.disagreement_lines(recs, show=1)[1].endswith(
        "exact checker: None: chunk 'b = 2'"
    )  # real maths: no checker
    assert L.disagreement_lines([]) == []


def test_labelling_on_k_workers_with_n_kept_labels_about_the_needed_shards_in_1_over_k_the_time_N10(
    tmp_path, monkeypatch
):
    """Issue 48 (N10): with ``N_KEPT`` a worker decided once, from what was finished when it passed
    a shard, and stopped on its own view: 4 workers labelled 2.9x the needed shards and took as
    long as one. The real driver (``label_prompts``) on K threads, each shard a fake that sleeps
    (the reading's probe): now at most the needed shards plus K, each once, about 1/K of the time,
    and the merge's labels are one process's."""
    import threading
    import time as _time

    size, tick = 4, 0.05
    kept_of = lambda sid: 1 + (sid * 5) % 3  # noqa: E731 - 1 to 3 kept of 4, a function of the shard only

    def fake_shard(generator, shard, template, cfg, shard_id):
        _time.sleep(tick)
        return [], L.ShardStats(prompts=len(shard), kept_prompts=kept_of(shard_id))

    monkeypatch.setattr(L, "label_shard", fake_shard)
    items = fake_items(size * 400)
    needed = 40
    cfg = _cfg(n_kept=sum(kept_of(s) for s in range(needed)), shard_size=size)
    assert sum(kept_of(s) for s in range(needed - 1)) < cfg.n_kept  # the prefix the merge uses: 40 shards
    rows = {}
    for k in (1, 2, 4):
        out = tmp_path / f"k{k}"
        t0 = _time.time()
        threads = [
            threading.Thread(
                target=L.label_prompts,
                args=(None, items, TEMPLATE, cfg, out, "m"),
                kwargs=dict(progress=False, worker=w, workers=k),
            )
            for w in range(k)
        ]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        wall = _time.time() - t0
        labelled = len(list((out / "shards").glob("shard_*.jsonl")))
        merged = L.label_prompts(None, items, TEMPLATE, cfg, out, "m", progress=False)
        rows[k] = (labelled, wall, merged["shards"], merged["written"])
    print("workers: (shards labelled, wall s, shards the merge uses, shards the merge labelled)", rows)
    for k, (labelled, wall, used, extra) in rows.items():
        assert used == needed and labelled <= needed + k and extra <= 1
        assert wall < (needed / k + 2) * tick * 1.8 + 0.2  # about needed / K shards each, not needed
    assert rows[4][1] < rows[1][1] / 2  # 4 workers: less than half one worker's time (was about the same)


def test_the_plan_divides_labelling_by_the_measured_speed_up_not_k(tmp_path):
    """Issue 48 (N10): the paper plan's wall time for 02 on K workers uses the speed-up measured by
    ``python -m stepwiser_lib.tools.scaling`` (efficiency at the most workers that had a core each),
    never more than K; without a measurement, K."""
    import json

    from stepwiser_lib.tools.plan import labelling_speedup

    f = tmp_path / "s.json"
    assert labelling_speedup(8, f) == 8.0 and labelling_speedup(1, f) == 1.0
    rows = [{"workers": 1, "speedup": 1.0}, {"workers": 2, "speedup": 1.8}, {"workers": 4, "speedup": 1.9}]
    f.write_text(json.dumps({"cpus": 2, "rows": rows}))
    assert labelling_speedup(8, f) == pytest.approx(8 * 0.9)  # K = 4 shared 2 cores: not an efficiency
    f.write_text(json.dumps({"cpus": 2, "rows": [{"workers": 2, "speedup": 2.3}]}))
    assert labelling_speedup(8, f) == 8.0  # never above K


def test_the_scaling_measurement_labels_with_a_copy_of_the_profile_and_the_workers_cli(tmp_path):
    """``python -m stepwiser_lib.tools.scaling`` (issue 48): the profile it labels with is the base
    profile plus ``N_KEPT``, the shard size and the base's chunk policy, checked like any profile;
    each process is notebook 02's worker CLI."""
    from stepwiser_lib.core import config, paths
    from stepwiser_lib.tools import scaling

    name = scaling.profile_with(
        "smoke", tmp_path, N_KEPT=7, SHARD_SIZE=2, POLICY_MODEL=str(paths.chunk_policy("smoke"))
    )
    p = config.checked_parameters(name, config.list_notebooks(only=["02"]), tmp_path)["02_rollout_labelling"]
    assert (p["N_KEPT"], p["SHARD_SIZE"], p["N_PROMPTS"]) == (7, 2, 24)  # smoke's pool stays
    cmd = scaling._child(name, tmp_path, tmp_path / "o", 1, 2)
    assert (
        "labelling.main(['--profile', 'smoke-scaling', '--out'" in cmd[-1]
        and "'--worker', '1', '--workers', '2'" in cmd[-1]
    )


def test_a_shard_whose_text_holds_unicode_line_separators_resumes_DF01(tmp_path):
    """Issue 49 (review 3, DF01): a problem holding U+2028 (valid inside a JSON string) made
    ``str.splitlines`` break a record in two, so the shard was set aside and labelled again on
    every resume. Records end in "\\n" only; every reader of JSONL now splits there."""
    from stepwiser_lib.core import io
    from stepwiser_lib.method import tasks

    items = fake_items(8)
    items[5]["problem"] = "fake problem 5\u2028with a line separator\u0085and a next-line"
    first = L.label_prompts(FakeToyPolicy(), items, TEMPLATE, _cfg(shard_size=4), tmp_path, "m", progress=False)
    again = L.label_prompts(FakeToyPolicy(), items, TEMPLATE, _cfg(shard_size=4), tmp_path, "m", progress=False)
    assert (
        first["written"] == 2
        and again["resumed"] == 2
        and again["redone"] == []
        and again["records"] == first["records"]
    )
    assert not list((tmp_path / "shards").glob("*.corrupt*"))
    f = tmp_path / "data.jsonl"
    io.write_jsonl(f, items)
    assert tasks.read_records(f) == items


def test_the_labelling_cli_checks_its_data_file_and_output_root_before_the_model_A12_E01(tmp_path, monkeypatch, capsys):
    """Issue 49 (review 2's A12 and E01, left in the labelling CLI that ``make workers STAGE=02``
    runs): a DATA_FILES entry naming a folder ended in a raw IsADirectoryError; a relative output
    root was read from the checkout (the "run notebook 01 first" of another folder). Both now stop
    as configuration errors (exit 2) before any model loads."""
    import yaml

    from stepwiser_lib.core import paths

    y = yaml.safe_load((paths.ROOT / "configs" / "profiles" / "smoke.yaml").read_text())
    y["notebooks"]["02_rollout_labelling"].update(TASK="gsm8k", DATA_FILES={"gsm8k": str(tmp_path)})
    (tmp_path / "dirdata.yaml").write_text(yaml.safe_dump(y))
    assert L.main(["--profile", "dirdata"], profiles_dir=tmp_path) == 2
    assert "is a folder" in capsys.readouterr().err
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv(paths.OUTPUT_ROOT_ENV, "elsewhere")
    (tmp_path / "elsewhere").write_text("a file, not a folder")
    assert L.main(["--profile", "smoke"]) == 2
    assert "is a file, not a folder" in capsys.readouterr().err
