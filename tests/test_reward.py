"""Issue 37: a trained judge as a TRL reward function (stepwiser_lib.reward.StepwiserReward); issue 50,
item 5: a reward for real GRPO jobs (a device per rank, None when unjudgeable, a dotted path for TRL's CLI)."""

import importlib

import pytest

from stepwiser_lib.method import reward as reward_module
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
    assert aggregate([None, None], [None, None], "min") is None  # nothing judged: the reward does not apply
    assert aggregate([], [], "mean") is None  # no chunk: likewise
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
    assert done == [0.5, 1.0, None]  # one of two chunks Positive; paragraphs as chunks; no chunk: None
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


class _ByText:
    """A judge whose verdicts follow the chunk's text (its character codes), so a GRPO group of
    different completions gets different rewards (with the toy base as the judge, cut at 16 tokens,
    the reward was always 0, and GRPO's advantages, hence its gradients, were 0)."""

    def judge(self, triples, k=1, seed=0):
        out = []
        for _, _, c in triples:
            s = (sum(map(ord, c)) % 5) / 4
            out.append({"verdict": "Positive" if s >= 0.5 else "Negative", "analysis": "", "score": s})
        return out


@pytest.mark.notebook
def test_a_toy_policy_trains_a_few_grpo_steps_with_the_judge_as_its_reward(tmp_path):
    """The seam with TRL: GRPOTrainer(reward_funcs=[StepwiserReward(judge)]) trains (2 steps, CPU),
    with a reward that varies within a group (issue 50: the logged reward's spread is above 0)."""
    datasets = pytest.importorskip("datasets")
    from trl import GRPOConfig, GRPOTrainer

    from stepwiser_lib.core import paths, prompts
    from stepwiser_lib.method import tasks

    base = str(paths.ROOT / "data" / "toy_base")
    reward = StepwiserReward(_ByText(), aggregate="mean")
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
    logs = [h for h in trainer.state.log_history if "rewards/stepwiser_mean/mean" in h]
    assert trainer.state.global_step == 2 and logs
    assert any(h.get("reward_std", 0) > 0 for h in logs), [
        (h.get("reward"), h.get("reward_std")) for h in logs
    ]  # the group's rewards differ: GRPO has an advantage to follow


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


def test_a_completion_the_judge_cannot_judge_gets_none_and_an_unjudged_chunk_never_earns_issue_50():
    """Issue 50, item 5: TRL's GRPOTrainer reads None as "this reward does not apply" (NaN, left out
    of the group's mean and spread). A completion with no chunk, or with no verdict on any chunk, gets
    None; one with some verdicts gets a number in which an unjudged chunk never earns credit."""
    comps = ["", "garbage one\n\ngarbage two", "b = 5\n\ngarbage c = 6", "b = 5\n\nc = 6"]
    for how, mixed in (("min", 0.0), ("mean", 0.5), ("first_negative", 0.5)):
        got = StepwiserReward(_Unread(), aggregate=how)(completions=comps, problem=["p"] * 4)
        assert got[:2] == [None, None], how
        assert got[2] == mixed and got[3] == 1.0, how  # the unjudged chunk costs what a Negative costs
        assert all(x is None or isinstance(x, float) for x in got)


def test_a_judge_given_by_path_loads_on_the_ranks_device_issue_50(monkeypatch):
    """Under accelerate launch each rank loads its judge on cuda:LOCAL_RANK (no model moves here:
    Judge.load is replaced by a recorder; CUDA is only pretended)."""
    import torch

    asked = []
    monkeypatch.setattr(reward_module.Judge, "load", lambda path, device="auto": asked.append(device) or _Judge())
    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    monkeypatch.setattr(torch.cuda, "device_count", lambda: 4)
    monkeypatch.setenv("LOCAL_RANK", "2")
    assert StepwiserReward("exports/judge").device == "cuda:2" and asked[-1] == "cuda:2"
    assert StepwiserReward("exports/judge", device="cpu").device == "cpu" and asked[-1] == "cpu"  # given: kept
    monkeypatch.setattr(torch.cuda, "device_count", lambda: 1)  # a launcher that shows each rank one GPU
    assert reward_module.rank_device() == "cuda"
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    assert StepwiserReward("exports/judge").device == "auto"  # no CUDA: what a judge loads on today
    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    monkeypatch.delenv("LOCAL_RANK")
    assert StepwiserReward("exports/judge").device == "auto" and asked[-1] == "auto"  # no launcher
    monkeypatch.setenv("LOCAL_RANK", "one")
    with pytest.raises(ValueError, match="LOCAL_RANK='one'"):
        reward_module.rank_device()

    class Model:
        def __init__(self):
            self.at = "cpu"

        def parameters(self):
            return iter(())

        def to(self, device):
            self.at = device

    loaded = _Judge()
    loaded.gen = type("Gen", (), {"model": Model()})()
    assert StepwiserReward(loaded).device is None and loaded.gen.model.at == "cpu"  # a loaded judge stays
    StepwiserReward(loaded, device="cuda:3")
    assert loaded.gen.model.at == "cuda:3"  # unless a device is given
    monkeypatch.setenv("LOCAL_RANK", "1")
    monkeypatch.setattr(torch.cuda, "device_count", lambda: 2)
    StepwiserReward(loaded, device="auto")
    assert loaded.gen.model.at == "cuda:1"  # auto: this rank's GPU
    with pytest.raises(ValueError, match="a torch device name"):
        StepwiserReward(_Judge(), device="")


def test_trl_imports_the_reward_by_its_dotted_path_and_it_reads_the_environment_issue_50(monkeypatch):
    """``trl grpo --reward_funcs stepwiser_lib.method.reward.stepwiser_reward``: TRL's script
    (trl/scripts/grpo.py) splits the name at its last dot, imports the module and takes the attribute.
    The reward is built from STEPWISER_REWARD_* on its first call, once."""
    loads = []

    def load(path, device="auto"):
        loads.append((path, device))
        return _Judge()

    monkeypatch.setattr(reward_module.Judge, "load", load)
    monkeypatch.delenv("LOCAL_RANK", raising=False)
    monkeypatch.setattr(reward_module, "_BUILT", {})
    for name in ("stepwiser_lib.method.reward.stepwiser_reward", "stepwiser_lib.reward.stepwiser_reward"):
        module_path, func_name = name.rsplit(".", 1)  # as TRL's grpo script does
        func = getattr(importlib.import_module(module_path), func_name)
        assert func is reward_module.stepwiser_reward and func.__name__ == "stepwiser_reward"

    monkeypatch.delenv("STEPWISER_REWARD_JUDGE", raising=False)
    with pytest.raises(ValueError, match="STEPWISER_REWARD_JUDGE is not set"):
        func(completions=["b = 5"], problem=["p"])
    monkeypatch.setenv("STEPWISER_REWARD_JUDGE", "exports/tiny/judges/stepwiser__rel_ratio")
    monkeypatch.setenv("STEPWISER_REWARD_AGGREGATE", "mean")
    monkeypatch.setenv("STEPWISER_REWARD_K", "3")
    monkeypatch.setenv("STEPWISER_REWARD_DEVICE", "cpu")
    comps = ["b = 5\n\nc = 6 wrong", "", "b = 5"]
    assert func(prompts=["q"] * 3, completions=comps, problem=["p"] * 3, trainer_state=None) == [0.5, None, 1.0]
    assert func(completions=comps, problem=["p"] * 3) == [0.5, None, 1.0]
    assert loads == [("exports/tiny/judges/stepwiser__rel_ratio", "cpu")]  # loaded once, on the device named
    built = reward_module.reward_from_env()
    assert (built.k, built.how, built.device) == (3, "mean", "cpu")
    monkeypatch.setenv("STEPWISER_REWARD_K", "many")
    with pytest.raises(ValueError, match="STEPWISER_REWARD_K='many': an integer"):
        func(completions=comps, problem=["p"] * 3)
