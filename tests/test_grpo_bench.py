"""make bench-grpo: the step's parts add up to the step, the arms' switches set and restore what
they name, and the docs table is the result file's."""

import pytest

from stepwiser_lib.method import judge_train
from stepwiser_lib.tools import grpo_bench


def test_switches_set_and_restore_and_refuse_unknown_names():
    before = judge_train.SHARE_PROMPT_PASSES
    with grpo_bench.switches({"method.judge_train.SHARE_PROMPT_PASSES": not before}):
        assert judge_train.SHARE_PROMPT_PASSES is (not before)
    assert judge_train.SHARE_PROMPT_PASSES is before
    with pytest.raises(AttributeError, match="has no NOPE"), grpo_bench.switches({"method.judge_train.NOPE": 1}):
        pass
    assert set(grpo_bench.ARMS) == {"before", "after"}


def test_summary_takes_medians_after_the_skipped_steps():
    steps = [{**dict.fromkeys(grpo_bench.PARTS, 0.0), "sampling": s, "total": s + 1.0} for s in (9.0, 1.0, 2.0, 3.0)]
    for r in steps:
        r["optimizer_and_rest"] = 1.0
    out = grpo_bench._summary(steps, skip=1)
    assert out["seconds_per_step"] == 3.0 and out["parts_seconds"]["sampling"] == 2.0
    assert out["parts_share"]["sampling"] == pytest.approx(2 / 3, abs=1e-3) and out["steps_timed"] == 3


def test_timed_steps_on_the_toy_base_add_up(toy_base_dir, tmp_path):
    """Two GRPO steps through the timed trainer: every part measured, parts sum to the step."""
    from test_judge_training import make_examples

    from stepwiser_lib.engines.trainers import GRPOSettings

    s = GRPOSettings(steps=2, prompts_per_step=2, group_size=4, max_completion=24, eval_every=0)
    out = grpo_bench.grpo_steps(toy_base_dir, make_examples()[:8], s, tmp_path, skip=0)
    assert out["steps_timed"] == 2 and len(out["rewards"]) == 2
    parts = out["parts_seconds"]
    assert parts["sampling"] > 0 and parts["reference_logprobs"] > 0 and parts["loss_forward"] > 0
    assert sum(parts.values()) == pytest.approx(out["seconds_per_step"], abs=0.01)
    assert 0 < out["new_tokens_per_step"] <= 2 * 4 * 24


def test_the_docs_table_is_the_result_files():
    from stepwiser_lib.core import io

    res = io.read_json("results/bench/grpo_step.json")
    table = grpo_bench.readme_table(res)
    assert f"**{res['before']['seconds_per_step']}**" in table and f"**{res['after']['seconds_per_step']}**" in table
    assert table in open("docs/results_toy_full.md").read()
