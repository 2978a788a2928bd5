"""Issue 37: a profile's data sets load with `datasets.load_dataset(<folder>)`, its judges with
`Judge.load(<folder>)`, each with a card; the hub push runs dry against a local folder."""

import json
import shutil

import pytest

from stepwiser_lib.core import io, paths
from stepwiser_lib.tools import export as ex


def _profile(root, name="x"):
    """A small profile's outputs under an output root: labels, one rule's splits, predictions, a registry."""
    art = root / "runs" / name / "artifacts"
    rec = {
        "problem_id": "p0",
        "problem": "a = 2. b = a + 3. Find b.",
        "traj_id": "p0/s0",
        "chunk_index": 0,
        "history": [],
        "chunk": "b = a + 3 = 2 + 3 = 5",
        "label": True,
        "rule": "rel_ratio",
        "q": 1.0,
        "q_prev": 0.5,
    }
    io.write_jsonl(art / "02_rollout_labelling" / "labels.jsonl", [rec, {**rec, "chunk_index": 1}])
    for split in ("train", "dev", "test"):
        for kind in ("balanced", "unbalanced"):
            io.write_jsonl(art / "03_balancing" / "rel_ratio" / f"{split}_{kind}.jsonl", [rec])
    io.write_jsonl(
        root / "results" / name / "judge_predictions.jsonl",
        [
            {
                "judge": "stepwiser:rel_ratio",
                "rule": "rel_ratio",
                "split": "test",
                "problem_id": "p0",
                "chunk_id": "p0/s0/0",
                "label": True,
                "verdict": "Positive",
            }
        ],
    )
    shutil.copytree(paths.ROOT / "data" / "toy_base", art / "04_judge_grpo" / "judge" / "model")
    entry = {
        "name": "stepwiser:rel_ratio",
        "kind": "stepwiser",
        "rule": "rel_ratio",
        "style": "cot",
        "row": "Generative CoT + RL (StepWiser)",
        "max_new_tokens": 24,
        "prompt_family": "toy",
        "base": f"runs/{name}/artifacts/04_judge_grpo/judge/model",
    }
    io.write_json(art / "04_judge_grpo" / "judges.json", [{"name": "warm-up (before RL)", "kind": "warmup"}, entry])
    io.write_json(
        root / "results" / name / "judges.json",
        {
            "config": {"GRPO_STEPS": 60, "BETA": 0.2, "DISC_LR": 1e-3},
            "variants": {
                "stepwiser:rel_ratio": {
                    "test": {
                        "balanced_acc": 61.0,
                        "positive_rate": 55.0,
                        "ci95": {"low": 55.5, "high": 66.9, "problems": 44, "n": 372},
                    }
                }
            },
        },
    )


def test_export_writes_loadable_data_sets_and_judges_with_cards(tmp_path, monkeypatch):
    datasets = pytest.importorskip("datasets")
    monkeypatch.setenv(paths.OUTPUT_ROOT_ENV, str(tmp_path / "out"))
    _profile(tmp_path / "out")
    folders = ex.export("x", tmp_path / "exp")
    assert [f.name for f in folders] == [
        "toy-processbench",
        "labels",
        "judge-splits",
        "predictions",
        "stepwiser__rel_ratio",
    ]
    datasets.disable_progress_bars()
    cache = str(tmp_path / "hf-cache")  # the user's datasets cache may hold an earlier export of the same name
    pb = datasets.load_dataset(str(tmp_path / "exp" / "toy-processbench"), cache_dir=cache)
    assert list(pb) == ["toy_2step", "toy_3step", "toy_4step", "toy_5step"] and len(pb["toy_2step"]) == 200
    assert len(datasets.load_dataset(str(tmp_path / "exp" / "toy-processbench"), "dev", cache_dir=cache)["dev"]) == 200
    assert len(datasets.load_dataset(str(tmp_path / "exp" / "labels"), cache_dir=cache)["train"]) == 2
    splits = datasets.load_dataset(str(tmp_path / "exp" / "judge-splits"), "rel_ratio-balanced", cache_dir=cache)
    assert list(splits) == ["train", "dev", "test"] and splits["test"][0]["chunk"] == "b = a + 3 = 2 + 3 = 5"
    assert (
        datasets.load_dataset(str(tmp_path / "exp" / "predictions"), "judge", cache_dir=cache)["records"][0]["verdict"]
        == "Positive"
    )
    card = (tmp_path / "exp" / "labels" / "README.md").read_text()
    assert card.startswith("---\nlicense: apache-2.0\n") and "Stage 02" in card and "arXiv 2508.19229" in card

    judge_dir = tmp_path / "exp" / "judges" / "stepwiser__rel_ratio"
    meta = json.loads((judge_dir / "stepwiser_judge.json").read_text())
    assert (meta["style"], meta["prompt_family"], meta["max_new_tokens"]) == ("cot", "toy", 24)
    card = (judge_dir / "README.md").read_text()
    assert "| test balanced accuracy | 61.0 [55.5, 66.9] (95% interval over 44 problems, 372 chunks) |" in card
    assert "| recipe (notebook 04) | `GRPO_STEPS` 60, `BETA` 0.2 |" in card
    assert "library_name: transformers" in card and "base_model" not in card  # a model this repository built

    from stepwiser_lib.method.judge import Judge

    j = Judge.load(str(judge_dir))
    assert (j.family, j.max_new_tokens, j.style) == ("toy", 24, "cot")
    (out,) = j.judge([("a = 2. b = a + 3. Find b.", [], "b = a + 3 = 2 + 3 = 5")])
    assert set(out) >= {"verdict", "analysis", "score"} and out["verdict"] in ("Positive", "Negative", None)


def test_the_hub_push_runs_dry_against_a_local_folder(tmp_path, monkeypatch):
    monkeypatch.setenv(paths.OUTPUT_ROOT_ENV, str(tmp_path / "out"))
    _profile(tmp_path / "out")
    folders = ex.export("x", tmp_path / "exp", judges=False)
    plan = ex.push(folders, "my-org", "x", dry_run=True, out=tmp_path / "exp")
    assert [(p["repo_type"], p["repo_id"]) for p in plan] == [
        ("dataset", "my-org/stepwiser-x-toy-processbench"),
        ("dataset", "my-org/stepwiser-x-labels"),
        ("dataset", "my-org/stepwiser-x-judge-splits"),
        ("dataset", "my-org/stepwiser-x-predictions"),
    ]
    hub = tmp_path / "exp" / ".hub-dry-run"
    assert (hub / "dataset" / "my-org" / "stepwiser-x-labels" / "README.md").exists()
    files = json.loads((hub / "plan.json").read_text())[1]["files"]
    assert files[0] == "README.md" and files[1].startswith("labels-") and len(files) == 2


def test_the_committed_toy_processbench_carries_its_card():
    """`load_dataset("data/toy_processbench")` reads the four splits (it mixed in manifest.json before)."""
    d = paths.ROOT / "data" / "toy_processbench"
    assert (d / "README.md").read_text() == ex.toy_processbench_card(d)


def test_cards_carry_the_segmentation_teachers_licence_and_pushes_are_private_N15(tmp_path):
    """Issue 48 (N15): every exported model and data set said Apache-2.0. At colab and paper the chunk
    policy, and every judge from it, is trained on a teacher's segmentations: Qwen2.5-3B-Instruct
    (Qwen Research License) and Llama-3.1-70B-Instruct (whose licence asks for "Llama" first in the
    name and "Built with Llama"). The toy world stays Apache-2.0; pushes are private by default."""
    import yaml

    from stepwiser_lib.core import cards
    from stepwiser_lib.tools import export as ex

    def meta(card):
        return yaml.safe_load(card.split("---\n")[1])

    assert ex.teacher_licence("tiny")["meta"] == {"license": "apache-2.0"}
    colab, paper = ex.teacher_licence("colab"), ex.teacher_licence("paper")
    assert colab["meta"]["license_name"] == "qwen-research" and "Qwen Research License" in colab["note"]
    assert (
        paper["meta"] == {"license": "llama3.1"} and paper["prefix"] == "Llama-" and "Built with Llama" in paper["note"]
    )
    card = cards.model_card("t", base_model="Qwen/Qwen2.5-1.5B", body="b", license=colab["meta"])
    assert meta(card)["license"] == "other" and meta(card)["license_link"].endswith("/LICENSE")
    assert "Built with Llama" in ex._licence("paper") and ex._licence("tiny").startswith("Licence: Apache-2.0")
    assert cards.teacher_licence("someone/Other-7B")["meta"] == {"license": "other"}
    d = tmp_path / "judges" / "stepwiser-rel_ratio"
    d.mkdir(parents=True)
    (d / "README.md").write_text("x")
    plan = ex.push([d], "org", "paper", dry_run=True, out=tmp_path / "exp")
    assert plan[0]["repo_id"] == "org/Llama-stepwiser-paper-stepwiser-rel-ratio" and plan[0]["private"] is True
    assert ex.push([d], "org", "tiny", dry_run=True, out=tmp_path / "exp", public=True)[0]["private"] is False


def test_a_rewritten_export_loads_its_new_rows_and_a_broken_judge_is_refused_EX07_EX09(tmp_path, monkeypatch):
    """Issue 49 (reliability review 3): EX07, labels rewritten and exported again to the same folder
    loaded the old rows from the datasets cache (the card named the same path); EX09, a judge whose
    weights were lost was exported without them."""
    datasets = pytest.importorskip("datasets")
    monkeypatch.setenv(paths.OUTPUT_ROOT_ENV, str(tmp_path / "out"))
    _profile(tmp_path / "out")
    cache = str(tmp_path / "hf-cache")
    datasets.disable_progress_bars()
    ex.export("x", tmp_path / "exp", judges=False)
    assert len(datasets.load_dataset(str(tmp_path / "exp" / "labels"), cache_dir=cache)["train"]) == 2
    labels = tmp_path / "out" / "runs" / "x" / "artifacts" / "02_rollout_labelling" / "labels.jsonl"
    rec = io.read_jsonl(labels)[0]
    io.write_jsonl(labels, [{**rec, "chunk_index": i} for i in range(5)])  # a rerun of 02
    ex.export("x", tmp_path / "exp", judges=False)
    assert len(datasets.load_dataset(str(tmp_path / "exp" / "labels"), cache_dir=cache)["train"]) == 5
    assert len(list((tmp_path / "exp" / "labels").glob("labels-*.jsonl"))) == 1  # the old copy is gone
    (tmp_path / "out" / "runs" / "x" / "artifacts" / "04_judge_grpo" / "judge" / "model" / "model.safetensors").unlink()
    with pytest.raises(ex.ExportError, match="judge stepwiser:rel_ratio: its model in .* is incomplete"):
        ex.export("x", tmp_path / "exp2")


def test_the_export_cli_checks_its_profile_flags_and_hub_ids_and_says_what_is_missing_EX01_EX04_EX05_EX06(
    tmp_path, monkeypatch, capsys
):
    """Issue 49: EX01, a misspelt profile exported toy-ProcessBench and exit 0, and a profile that
    had not run said nothing of what was missing (and a results folder was created by reading);
    EX04, --dry-run without --push-to-hub wrote a full export; EX05, an org the hub refuses passed
    the dry run; EX06, a push without hub access ended in a 34-line traceback."""
    monkeypatch.setenv(paths.OUTPUT_ROOT_ENV, str(tmp_path / "out"))
    assert ex.main(["--profile", "smokey", "--to", str(tmp_path / "e"), "--no-judges"]) == 2
    assert "unknown profile 'smokey'" in capsys.readouterr().err and not (tmp_path / "e").exists()
    assert ex.main(["--profile", "tiny", "--to", str(tmp_path / "e"), "--no-judges"]) == 0
    err = capsys.readouterr().out
    assert "has not made them yet: labels (notebook 02), judge-splits (notebook 03), predictions" in err
    assert not (tmp_path / "out" / "results" / "tiny").exists()  # reading made no folder
    with pytest.raises(SystemExit):
        ex.main(["--profile", "tiny", "--to", str(tmp_path / "e"), "--dry-run"])
    assert "--dry-run is for --push-to-hub" in capsys.readouterr().err
    assert ex.main(["--profile", "tiny", "--to", str(tmp_path / "e"), "--push-to-hub", "my org/", "--dry-run"]) == 2
    assert "is not a hub repo id" in capsys.readouterr().err
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    import huggingface_hub

    def offline(*a, **k):
        raise huggingface_hub.errors.OfflineModeIsEnabled(
            "Cannot reach https://huggingface.co/api/repos/create: offline mode is enabled."
        )

    monkeypatch.setattr(huggingface_hub.HfApi, "create_repo", offline)
    assert ex.main(["--profile", "tiny", "--to", str(tmp_path / "e"), "--no-judges", "--push-to-hub", "my-org"]) == 1
    err = capsys.readouterr().err.strip().splitlines()
    assert err[-1].startswith(
        "[export] the push of my-org/stepwiser-tiny-toy-processbench failed (OfflineModeIsEnabled"
    )
    assert err[-1].endswith(f"the export is in {tmp_path / 'e'}")
