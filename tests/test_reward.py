"""Issue 37: a trained judge as a TRL reward function (stepwiser_lib.reward.StepwiserReward)."""

import pytest

from stepwiser_lib.reward import StepwiserReward, aggregate


class _Judge:
    """Judges a chunk Positive unless it contains 'wrong'; records what it was asked."""

    def __init__(self):
        self.asked = []

    def judge(self, triples, k=1, seed=0):
        self.asked += triples
        return [
            {
                "verdict": "Negative" if "wrong" in c else "Positive",
                "analysis": "",
                "score": 0.0 if "wrong" in c else 1.0,
            }
            for _, _, c in triples
        ]


def test_aggregates_are_the_documented_ones():
    s, v = [1.0, 0.5, 0.0, 1.0], ["Positive", "Positive", "Negative", "Positive"]
    assert aggregate(s, v, "min") == 0.0
    assert aggregate(s, v, "mean") == 0.625
    assert aggregate(s, v, "first_negative") == 0.5  # two of four chunks before the first Negative
    assert aggregate([1.0, 1.0], ["Positive", "Positive"], "first_negative") == 1.0
    assert aggregate([None, None], [None, None], "min") == 0.0  # nothing judged: no reward
    with pytest.raises(ValueError, match="aggregate must be one of"):
        aggregate(s, v, "max")


def test_each_chunk_is_judged_with_the_problem_and_the_chunks_before_it():
    j = _Judge()
    r = StepwiserReward(j, aggregate="mean")
    assert r.__name__ == "stepwiser_mean"
    done = r(
        prompts=["Q1", "Q2", "Q3"],
        completions=[
            "<chunk>b = 5</chunk><chunk>c = 7 wrong</chunk>",
            "b = 5\n\nc = 8",
            [{"role": "assistant", "content": ""}],
        ],
        problem=["a = 2. Find c.", "a = 3. Find c.", "a = 4. Find c."],
    )
    assert done == [0.5, 1.0, 0.0]  # one of two chunks Positive; paragraphs as chunks; no chunk: 0
    assert j.asked == [
        ("a = 2. Find c.", [], "b = 5"),
        ("a = 2. Find c.", ["b = 5"], "c = 7 wrong"),
        ("a = 3. Find c.", [], "b = 5"),
        ("a = 3. Find c.", ["b = 5"], "c = 8"),
    ]
    conv = StepwiserReward(_Judge(), problem_column="question")
    assert conv(
        prompts=[[{"role": "user", "content": "what is b?"}]], completions=[[{"role": "assistant", "content": "b = 5"}]]
    ) == [1.0]
    with pytest.raises(ValueError, match="2 problems for 1 completions"):
        r(prompts=["a", "b"], completions=["x"])


@pytest.mark.notebook
def test_a_toy_policy_trains_a_few_grpo_steps_with_the_judge_as_its_reward(tmp_path):
    """The seam with TRL: GRPOTrainer(reward_funcs=[StepwiserReward(judge)]) trains (2 steps, CPU)."""
    datasets = pytest.importorskip("datasets")
    from trl import GRPOConfig, GRPOTrainer

    from stepwiser_lib.core import paths, prompts
    from stepwiser_lib.method import tasks
    from stepwiser_lib.method.judge import Judge

    base = str(paths.ROOT / "data" / "toy_base")
    judge = Judge.load(base, family="toy", max_new_tokens=16)
    reward = StepwiserReward(judge, aggregate="mean")
    problems = [it["problem"] for it in tasks.load_problems("toy", "rsft", 4, seed=0)]
    ds = datasets.Dataset.from_dict(
        {"prompt": [prompts.TOY_CHUNK_POLICY.format(problem=p) for p in problems], "problem": problems}
    )
    args = GRPOConfig(
        output_dir=str(tmp_path),
        max_steps=2,
        per_device_train_batch_size=4,
        num_generations=4,
        max_completion_length=24,
        logging_steps=1,
        report_to=[],
        use_cpu=True,
        save_strategy="no",
        learning_rate=1e-4,
        seed=0,
    )
    trainer = GRPOTrainer(model=base, reward_funcs=[reward], args=args, train_dataset=ds)
    trainer.train()
    logs = [h for h in trainer.state.log_history if "reward" in h or "rewards/stepwiser_mean/mean" in h]
    assert trainer.state.global_step == 2 and logs
    assert any("rewards/stepwiser_mean/mean" in h for h in trainer.state.log_history)
