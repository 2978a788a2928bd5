"""The fault-injection review's cases (79 cases), kept
as regression tests: each bad input must give a clear error (the message names what is wrong),
never a bare traceback or a silent acceptance. Case ids are the review's. The interruption and
resume cases (S1-S9) and determinism (X1-X3) live in test_labelling.py, test_inputs.py and the
notebook tests; the table of all 79 with their new verdicts is in LAB_LOG.md."""

import json
import math
import shutil
from pathlib import Path

import pytest

from stepwiser_lib.core import config, io, paths, vocab
from stepwiser_lib.core.config import ConfigError
from stepwiser_lib.engines import checkpoints
from stepwiser_lib.method import balancing, judge, labelling, processbench, tasks
from stepwiser_lib.tools import runner

#: The real ProcessBench: data/full's after `make data`, else the committed fixture (whose first five
#: gsm8k records are the full split's first five).
REAL_PB = paths.real_data_dir() / "processbench"


@pytest.fixture
def prof(tmp_path):
    """Write a profile file ``name.yaml`` into a scratch profiles folder and check it as the
    runner does (every notebook of the repository)."""

    def check(text: str, name: str = "bad"):
        (tmp_path / f"{name}.yaml").write_text(text)
        return config.checked_parameters(name, config.list_notebooks(), profiles_dir=tmp_path)

    check.dir = tmp_path
    return check


# ----------------------------------------------------------------------------- runner and profiles


@pytest.mark.parametrize(
    "case, text, match",
    [
        ("R2", "notebooks:\n  01_self_segmentation:\n    N_PROBLEM: 40\n", r"unknown parameter\(s\) \['N_PROBLEM'\]"),
        ("R3", "notebooks:\n  01_self_segmentation:\n    N_PROBLEMS: '40'\n", "N_PROBLEMS = '40' is not a int"),
        ("R4", "notebooks:\n  01_self_segmentation:\n    N_PROBLEMS: 40.0\n", "N_PROBLEMS = 40.0 is not a int"),
        ("R5", "notebooks:\n  01_self_segmentaton: {}\n", "sections for unknown notebooks"),
        ("R6", "shared:\n  SEEED: 1\n", r"shared key\(s\) \['SEEED'\]"),
        (
            "R8",
            "notebooks:\n  01_self_segmentation:\n    N_PROBLEMS: [40\n",
            r"bad.yaml, line \d+ column \d+: not valid YAML",
        ),
        ("R9", "notebooks:\n  - a\n  - b\n", "'notebooks' must be a mapping"),
        ("R10", "shared:\n  - SEED\n", "'shared' must be a mapping"),
        ("R9b", "notebooks:\n  01_self_segmentation: [1, 2]\n", "notebooks.01_self_segmentation must be a mapping"),
        ("R11", "- just\n- a list\n", "a profile is a mapping"),
        ("R12", "shared:\n  SEED: 1\n  SEED: 7\n", r"bad.yaml, line 3: 'SEED' is given twice"),
        (
            "R13",
            "notebooks:\n  04_judge_grpo:\n    WARMUP_LR: 3e-3\n",
            r"WARMUP_LR = '3e-3' is not a float \(YAML reads 3e-3 as a string: write 3.0e-3\)",
        ),
        ("R14", "notebooks:\n  03_balancing:\n    TEST_FRACTION:\n", "TEST_FRACTION = None is not a float"),
        (
            "R16",
            "notebooks:\n  02_rollout_labelling:\n    SHARD_SIZE: 0\n",
            r"SHARD_SIZE = 0 is not allowed \(want in \[1, inf\)\)",
        ),
        (
            "R17",
            "notebooks:\n  03_balancing:\n    TEST_FRACTION: 1.5\n",
            r"TEST_FRACTION = 1.5 is not allowed \(want in \[0, 1\)\)",
        ),
        (
            "R18",
            "notebooks:\n  02_rollout_labelling:\n    ADAPTIVE_RULE: rel_ration\n",
            "ADAPTIVE_RULE = 'rel_ration' is not allowed .want one of abs_q, rel_effective, rel_ratio, all",
        ),
        (
            "R19",
            "notebooks:\n  04_judge_grpo:\n    VARIANTS: [stepwizer:rel_ratio]\n",
            r"VARIANTS = \['stepwizer:rel_ratio'\] element 0 \('stepwizer:rel_ratio'\) is not a judge variant: use KIND:RULE",
        ),
        (
            "R19b",
            "notebooks:\n  04_judge_grpo:\n    VARIANTS: [stepwiser:rel_ratio, 7]\n",
            r"element 1 \(7\) is not a judge variant",
        ),
        ("R20", "shared:\n  TASK: toyy\n", "TASK = 'toyy' is not allowed .want one of toy, numina, math500, gsm8k"),
        (
            "T5",
            "notebooks:\n  06_chunk_reset:\n    N_PROBLEMS: -5\n",
            r"N_PROBLEMS = -5 is not allowed \(want in \[1, inf\)\)",
        ),
    ],
)
def test_bad_profiles_are_configuration_errors_naming_the_setting(prof, case, text, match):
    with pytest.raises(ConfigError, match=match):
        prof(text)


def test_an_empty_profile_is_the_cell_defaults_R15(prof):
    assert prof("")["01_self_segmentation"]["PROFILE"] == "bad"


def test_profile_names_follow_one_rule_R1_R22_R23(prof, tmp_path):
    with pytest.raises(ConfigError, match="unknown profile 'smokey'; valid profiles: "):
        config.checked_parameters("smokey", config.list_notebooks())
    with pytest.raises(ConfigError, match=r"unknown profile '../../../evil'"):
        config.checked_parameters("../../../evil", config.list_notebooks())
    # an extra profile file is valid for the runner and for a notebook's config cell alike
    prof("shared:\n  SEED: 3\n", name="extra")
    ns = {"__annotations__": {"PROFILE": "str", "SEED": "int in [0, inf)"}, "PROFILE": "extra", "SEED": 0}
    cfg = config.resolve(ns, "01_self_segmentation", profiles_dir=prof.dir, verbose=False)
    assert cfg.SEED == 3


def test_runner_exit_codes_for_selection_and_interrupt_R7_R21_S8(monkeypatch, capsys):
    assert runner.main(["--profile", "smoke", "--only", "99", "--check"]) == 2
    assert runner.main(["--profile", "smoke", "--only", "", "--check"]) == 2
    assert "--only needs notebook number prefixes" in capsys.readouterr().err
    with pytest.raises(ConfigError):
        config.list_notebooks(only=[])

    def stop(*a, **k):
        raise KeyboardInterrupt("02_rollout_labelling.ipynb")

    monkeypatch.setattr(runner, "run", stop)
    assert runner.main(["--profile", "smoke"]) == 130
    err = capsys.readouterr().err.strip().splitlines()
    assert err == [
        "[runner] interrupted in 02_rollout_labelling.ipynb; the next run resumes from what is on "
        "disk (runs/smoke/artifacts)"
    ]


def test_dry_run_checks_every_model_and_the_launcher_D1_D4(prof, monkeypatch, tmp_path):
    from stepwiser_lib.tools import plan

    assert plan.describe_model("Qwen/Qwen2.5 1.5B Instruct!", "base")["ok"] is False  # D1
    assert (
        "its form is checked, not its existence" in plan.describe_model("meta-llama/Llama-3.1-70B-Instrct", "t")["note"]
    )  # D2
    bad = plan.describe_model(str(tmp_path / "not_a_model"), "chunk policy (06)")  # D3: a local path
    assert bad["ok"] is False and "without a saved model" in bad["note"]
    nbs = config.list_notebooks()
    params = config.with_defaults(nbs, config.checked_parameters("paper", nbs))
    params["06_chunk_reset"]["POLICY_MODEL"] = "not a model!!"
    roles = {m["role"]: m for m in plan.dry_run("paper", params)["models"]}
    assert roles["chunk policy (06)"]["ok"] is False and roles["chunk policy (02)"]["ok"] is True
    monkeypatch.setenv("STEPWISER_LAUNCHER", str(tmp_path / "missing.yaml"))  # D4
    with pytest.raises(ConfigError, match="no such accelerate config"):
        plan.dry_run("paper", params)


def test_the_labelling_cli_checks_the_whole_profile_L1_L2(prof, capsys):
    assert labelling.main(["--profile", "smokey"]) == 2
    assert "configuration error: unknown profile 'smokey'" in capsys.readouterr().err
    (prof.dir / "seeed.yaml").write_text("shared:\n  SEEED: 1\n")
    assert labelling.main(["--profile", "seeed"], profiles_dir=prof.dir) == 2
    assert "shared key(s) ['SEEED'] are declared by no notebook" in capsys.readouterr().err


def test_config_dataclasses_give_the_notebooks_message_Q5():
    from stepwiser_lib.engines.trainers import GRPOSettings, SFTSettings

    with pytest.raises(
        ConfigError, match=r"LabelConfig: adaptive_rule \(ADAPTIVE_RULE\) = 'rel_ration' is not allowed"
    ):
        labelling.LabelConfig(adaptive_rule="rel_ration")
    with pytest.raises(ConfigError, match=r"shard_size \(SHARD_SIZE\) = 0 is not allowed \(want in \[1, inf\)\)"):
        labelling.LabelConfig(shard_size=0)
    with pytest.raises(ConfigError, match=r"m_rollouts \(M_ROLLOUTS\) = -3"):
        labelling.LabelConfig(m_rollouts=-3)
    with pytest.raises(
        ConfigError, match=r"GRPOSettings: group_size \(GROUP_SIZE\) = 1 is not allowed \(want in \[2, inf\)\)"
    ):
        GRPOSettings(group_size=1)
    with pytest.raises(ConfigError, match=r"SFTSettings: lr \(SFT_LR\) = 0 is not allowed"):
        SFTSettings(lr=0)


def test_dataclass_specs_match_the_notebook_parameters():
    """One rule per setting: each dataclass field allows what its notebook parameter declares."""
    from stepwiser_lib.engines.trainers import GRPOSettings

    decl = {}
    for nb in config.list_notebooks():
        decl.update(config.notebook_parameters(nb))
    for field, spec in labelling.LabelConfig.SPECS.items():
        assert decl[field.upper()].spec.text == spec, field
    for field, param in GRPOSettings.PARAMS.items():
        if field in GRPOSettings.SPECS and decl[param].spec.text != decl[param].type:
            assert decl[param].spec.text == GRPOSettings.SPECS[field], field


def test_enums_in_the_parameters_cells_match_the_library():
    from stepwiser_lib.core import prompts

    decl = {}
    for nb in config.list_notebooks():
        decl.update(config.notebook_parameters(nb))
    assert decl["TASK"].spec.choices == tasks.TASKS
    assert decl["EVAL_TASKS"].spec.elem.choices == tasks.TASKS
    assert decl["ADAPTIVE_RULE"].spec.choices == vocab.ADAPTIVE_RULES
    assert vocab.RULES == decl["RULES"].spec.elem.choices
    assert set(decl["PROMPT_FAMILY"].spec.choices) == set(prompts._FAMILIES)


# ----------------------------------------------------------------------------- io


@pytest.mark.parametrize(
    "case, data, match",
    [
        ("I1", b'{"a": 1}\n{"a": 2}\n{"a": "x', r"line 3: bad JSON"),
        ("I2", b'{"a": 1}\n{"a": 2}\nnot json\n', r"line 3: bad JSON"),
        ("I3", b'{"a": 1}\n{"a": 2}\n{"b": 1}\n', r"line 3: missing field 'b'|line 3: missing field 'a'"),
        ("I4", b'{"a": 1}\n{"a": 2}\n{"a": true}\n', r"line 3: field 'a' has type bool"),
        ("I5", b'{"a": 1}\n{"a": 2}\n[1, 2]\n', r"line 3: expected a JSON object"),
        ("I6", b'{"a": 1}\n{"a": "\xff"}\n', r"line 2: not UTF-8"),
        ("I7", b'{"a": NaN}\n', r"line 1: NaN is not JSON"),
        ("I7b", b'{"a": Infinity}\n', r"line 1: Infinity is not JSON"),
        ("I8", b'\xef\xbb\xbf{"a": 1}\n', r"line 1: bad JSON \(Unexpected UTF-8 BOM"),
    ],
)
def test_bad_jsonl_names_file_and_line(tmp_path, case, data, match):
    p = tmp_path / "f.jsonl"
    p.write_bytes(data)
    with pytest.raises(io.RecordError, match=match):
        io.read_jsonl(p, required={"a": int})


def test_damaged_caches_are_named_set_aside_and_recomputed_I9_I10(tmp_path):
    for n, data in enumerate((b"\x00\xff\xfe binary", b'{"_key": "k", "v"', b"[1, 2]")):
        c = tmp_path / "c.json"
        c.write_bytes(data)
        assert io.has_cached(c, "k") is False
        with pytest.warns(UserWarning, match=r"c.json could not be read back \(damaged\); moved to c.json.corrupt"):
            assert io.cached_json(c, "k", lambda: {"v": 2}) == {"v": 2, "_key": "k"}
        kept = tmp_path / ("c.json.corrupt" if n == 0 else f"c.json.corrupt-{n + 1}")
        assert kept.read_bytes() == data  # kept, not overwritten
    c.write_text('{"_key": "old", "v": 1}')  # another key is a normal recompute: no warning
    assert io.cached_json(c, "k", lambda: {"v": 3})["v"] == 3


# ----------------------------------------------------------------------------- balancing and labels


def test_balancing_rejects_what_it_cannot_balance_B1_B5():
    assert balancing.balance([]) == []  # B1
    with pytest.warns(UserWarning, match="all 10 examples are positive"):  # B2
        assert balancing.balance([{"label": True}] * 10) == []
    for bad in ("False", None, math.nan):  # B3
        with pytest.raises(ValueError, match=r"example 1 has label = .* want True or False"):
            balancing.balance([{"label": True}, {"label": bad}])
    with pytest.raises(ValueError, match="label = '<missing>'"):  # B4
        balancing.balance([{"x": 1}])
    for f in (1.5, -1, 1, math.nan, True):  # B5
        with pytest.raises(ValueError, match=r"test_fraction = .* must be in \[0, 1\)"):
            balancing.split_by_problem([{"problem_id": "p"}], 0.1, f)


def test_label_rules_take_success_rates_only_Q1_Q4():
    assert labelling.abs_q_labels([]) == [] and labelling.rel_ratio_labels([], 0.5, 0.8) == []  # Q1
    for q, q0 in (([math.nan], 0.5), ([0.5], math.nan), ([1.5, -0.3], 0.5), ([0.5], 2), ([0.5], None), (["0.5"], 0.5)):
        with pytest.raises(ValueError, match=r"(Q|q0) must be a success rate in \[0, 1\]"):
            labelling.rel_ratio_labels(q, q0, 0.8)
        with pytest.raises(ValueError, match="must be a success rate"):
            labelling.rel_effective_labels(q, q0, 0.4)
    with pytest.raises(ConfigError, match="gamma"):
        labelling.LabelConfig(gamma=-5)
    with pytest.raises(ConfigError, match="mu_n"):
        labelling.LabelConfig(mu_n=0)


# ----------------------------------------------------------------------------- judge


def test_verdicts_and_rewards_J2_J6():
    assert judge.parse_verdict("a \\boxed{Negative} then \\boxed{positive }") == "Positive"  # J2
    assert judge.parse_verdict("\\boxed{\\text{Positive}}") is None and judge.parse_verdict(None) is None
    for bad in (5, ["x"], b"\\boxed{Positive}"):  # J4
        with pytest.raises(TypeError, match="reads a judge's output text"):
            judge.parse_verdict(bad)
    with pytest.raises(ValueError, match="2 completions but 1 labels"):  # J5
        judge.verdict_reward(["\\boxed{Positive}", "\\boxed{Negative}"], label=[True])
    with pytest.raises(ValueError, match="labels must be True/False, got 'False'"):
        judge.verdict_reward(["\\boxed{Positive}"], label=["False"])
    assert judge.verdict_reward(["\\boxed{Positive}", "\\boxed{Negative}"], label=[True, True]) == [1.0, 0.0]
    with pytest.raises(ValueError, match="bad judge variant 'stepwizer:rel_ratio'"):  # J6
        vocab.parse_variant("stepwizer:rel_ratio")


# ----------------------------------------------------------------------------- ProcessBench


@pytest.fixture
def pb_dir(tmp_path):
    lines = (REAL_PB / "gsm8k.jsonl").read_text().splitlines()[:5]

    def write(edit):
        recs = [json.loads(x) for x in lines]
        edit(recs)
        (tmp_path / "gsm8k.jsonl").write_text("".join(json.dumps(r) + "\n" for r in recs))
        return str(tmp_path)

    return write


def test_processbench_records_are_checked_P1_P5_P7(pb_dir):
    def load(edit):
        import warnings

        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # the generic count warning of a 5-record split
            return processbench.load_split("gsm8k", pb_dir(edit))

    with pytest.raises(processbench.ProcessBenchError, match="line 1: missing field 'steps'"):  # P1
        load(lambda r: r[0].pop("steps"))
    with pytest.raises(processbench.ProcessBenchError, match=r"line 1: field 'label' = \d+ is outside"):  # P2
        load(lambda r: r[0].update(label=len(r[0]["steps"])))
    with pytest.raises(processbench.ProcessBenchError, match=r"line 1: step\(s\) \[0, 1\] are blank"):  # P5
        load(lambda r: r[0].update(steps=["", "   ", "x"]))
    with pytest.raises(processbench.ProcessBenchError, match="appears twice"):
        load(lambda r: r[1].update(id=r[0]["id"]))
    with pytest.raises(processbench.ProcessBenchError, match="label -1 .* but final_answer_correct is false"):
        load(lambda r: r[0].update(label=-1, final_answer_correct=False))
    assert len(load(lambda r: r[0].update(extra="kept"))) == 5  # an extra field is harmless
    with pytest.raises(ValueError, match="score of no samples is undefined"):  # P7
        processbench.score([], [])


# ----------------------------------------------------------------------------- tasks


def test_outcome_checks_treat_missing_answers_alike_T1_T3():
    toy = tasks.load_problems("toy", "label", 1, seed=0)[0]
    assert tasks.is_correct(toy, "") is False and tasks.is_correct({"answer": "3"}, "\\boxed{}") is False  # T1
    assert tasks.is_correct(toy, None) is False and tasks.is_correct({"answer": "3"}, None) is False  # T2
    for item in ({"answer": None}, {}, None):  # T3
        with pytest.raises(ValueError, match="a problem needs a 'toy' spec or a string 'answer'"):
            tasks.is_correct(item, "\\boxed{3}")
    with pytest.raises(ValueError, match="unknown task 'toyy'"):  # T4
        tasks.load_problems("toyy", "label", 3, seed=0)
    with pytest.raises(ValueError, match=r"n = -5 must be a count"):  # T5
        tasks.load_problems("toy", "label", -5, seed=0)


# ----------------------------------------------------------------------------- hand-offs (S9)


def test_a_half_written_chunk_policy_names_notebook_01_S9(tmp_path, monkeypatch):
    monkeypatch.setenv(paths.OUTPUT_ROOT_ENV, str(tmp_path))
    d = tmp_path / "runs" / "smoke" / "artifacts" / "01_self_segmentation" / "chunk_policy" / "model"
    d.mkdir(parents=True)
    (d / "config.json").write_text("{}")  # save_pretrained writes the config before the weights
    with pytest.raises(FileNotFoundError, match="an incomplete chunk policy .* run notebook 01 at profile 'smoke'"):
        checkpoints.resolve_model("artifact", "smoke")


def test_models_are_saved_into_place_in_one_rename(tmp_path):
    from stepwiser_lib.engines.models import save_atomically

    class FakeModel:
        def __init__(self, fail=False):
            self.fail = fail

        def save_pretrained(self, d):
            Path(d).mkdir(parents=True, exist_ok=True)
            (Path(d) / "config.json").write_text("{}")
            if self.fail:
                raise KeyboardInterrupt  # killed between the config and the weights
            (Path(d) / "model.safetensors").write_bytes(b"w")

    dest = tmp_path / "model"
    save_atomically(FakeModel(), None, dest)
    assert paths.model_complete(dest)
    with pytest.raises(KeyboardInterrupt):
        save_atomically(FakeModel(fail=True), None, dest)
    assert paths.model_complete(dest)  # the previous whole model is still where readers look
    shutil.rmtree(dest)
    with pytest.raises(KeyboardInterrupt):
        save_atomically(FakeModel(fail=True), None, dest)
    assert not dest.exists()  # nothing half-written where readers look


def test_a_damaged_checkpoint_names_its_folder_S9(tmp_path):
    """A truncated safetensors file (as a kill mid-save would leave without atomic saves)."""
    from stepwiser_lib.engines.models import load_model

    d = tmp_path / "runs" / "smoke" / "artifacts" / "01_self_segmentation" / "chunk_policy" / "model"
    shutil.copytree(paths.TOY_BASE_DIR, d)
    w = next(d.glob("*.safetensors"))
    w.write_bytes(w.read_bytes()[:100_000])
    with pytest.raises(
        RuntimeError, match=r"cannot load the saved model in .*01_self_segmentation.*re-run the notebook"
    ):
        load_model(str(d), device="cpu")
    with pytest.raises(ValueError, match="use KIND:RULE strings, not a int"):  # J6, an int
        vocab.parse_variant(7)


def test_judges_entries_are_registry_names(prof):
    with pytest.raises(ConfigError, match=r"JUDGES = \['stepwizer:rel_ratio'\] element 0 .* is not a judge name"):
        prof("notebooks:\n  06_chunk_reset:\n    JUDGES: [stepwizer:rel_ratio]\n")
    for ok in ("all", vocab.WARMUP_NAME, "stepwiser:rel_ratio", "stepwiser:rel_ratio@seed2"):
        assert vocab.parse_judge_name(ok) == ok
    with pytest.raises(ValueError, match="VARIANT@seedN"):
        vocab.parse_judge_name("stepwiser:rel_ratio@seedx")
