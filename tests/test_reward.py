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


class _Unread(_Judge):
    """As _Judge, but no verdict (what an unparsable or cut output gives) on chunks holding 'garbage'."""

    def judge(self, triples, k=1, seed=0):
        out = super().judge(triples, k, seed)
        return [
            {"verdict": None, "analysis": "", "score": 0.0} if "garbage" in c else r
            for r, (_, _, c) in zip(out, triples)
        ]


def test_chunks_the_judge_could_not_read_cost_reward_and_bad_inputs_are_named_RW02_to_RW05():
    """Issue 49 (reliability review 3, RW02-RW05; the real-path reading's N9): a completion whose
    wrong steps the judge could not read scored 1.0 under every aggregate, above one whose wrong
    step was judged Negative. An unjudged chunk now scores 0 and stops ``first_negative``; k, the
    judge and the problems are checked before the judge runs."""
    import pathlib

    read, unread = "b = 5\n\nc = 6 wrong", "b = 5\n\ngarbage c = 6 wrong\n\ngarbage d = 1 wrong"
    for how, want in (("min", [0.0, 0.0]), ("mean", [0.5, 1 / 3]), ("first_negative", [0.5, 1 / 3])):
        got = StepwiserReward(_Unread(), aggregate=how)(completions=[read, unread], problem=["p", "p"])
        assert got == pytest.approx(want), how
        assert got[1] <= got[0]  # never more reward for steps the judge could not read
    for k in (0, -1, 1.5, True):
        with pytest.raises(ValueError, match="at least 1"):
            StepwiserReward(_Judge(), k=k)
    with pytest.raises(TypeError, match="not a int"):
        StepwiserReward(3)
    with pytest.raises(ValueError, match=r"row 2 of 2 \(index 1\) of column 'problem' holds no problem text \(None\)"):
        StepwiserReward(_Judge())(completions=["a", "b"], problem=["p", None])
    with pytest.raises(ValueError, match="TRL passes prompts=, or give the dataset a 'problem' column"):
        StepwiserReward(_Judge())(completions=["a", "b"])
    r = StepwiserReward(pathlib.Path("data/toy_base"))  # a Path loads like a str
    assert callable(r.judge.judge)


def test_judge_load_names_a_missing_folder_and_a_broken_export_and_warns_past_the_context_EX10_RW06(tmp_path):
    """Issue 49 (EX10, RW06): Judge.load on a missing folder spoke of hub repo ids, on a cut or
    incomplete ``stepwiser_judge.json`` raised a bare JSONDecodeError or KeyError; a prompt past the
    judge's context (the toy base has 512 positions) was judged without a word."""
    import json
    import warnings

    from stepwiser_lib.method.judge import Judge

    with pytest.raises(FileNotFoundError, match="no such model folder: ../nope/judge"):
        Judge.load("../nope/judge")
    (tmp_path / "j").mkdir()
    (tmp_path / "j" / "stepwiser_judge.json").write_text('{"style": "cot", "prompt_fam')
    with pytest.raises(ValueError, match="stepwiser_judge.json: not a whole JSON file"):
        Judge.load(str(tmp_path / "j"))
    (tmp_path / "j" / "stepwiser_judge.json").write_text(json.dumps({"prompt_family": "toy", "max_new_tokens": 8}))
    with pytest.raises(ValueError, match="stepwiser_judge.json: missing style"):
        Judge.load(str(tmp_path / "j"))
    j = Judge.load("data/toy_base", max_new_tokens=4)
    with pytest.raises(ValueError, match="at least 1"):
        j.judge([("a = 2. Find a.", [], "a = 2")], k=0)
    long = ("a = 2. b = a + 3. Find b.", ["b = a + 3 = 5"] * 80, "b = 5")
    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        j.judge([("a = 2. Find a.", [], "a = 2"), long])
    assert any("1 of 2 judge prompts" in str(x.message) and "512 positions" in str(x.message) for x in w)
