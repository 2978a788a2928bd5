"""Issue 37: a profile's data sets load with `datasets.load_dataset(<folder>)`, its judges with
`Judge.load(<folder>)`, each with a card; the hub push runs dry against a local folder."""

import json
import shutil

import pytest

from stepwiser_lib.core import io, paths
from stepwiser_lib.core.prompts import TOY_JUDGE
from stepwiser_lib.core.verdicts import VERDICT_PATTERN
from stepwiser_lib.tools import export as ex


def _profile(root, name="x", extra_judges=()):
    """A small profile's outputs under an output root: labels, one rule's splits, predictions, a registry
    (a generative judge on a copy of the toy base, and ``extra_judges``' registry entries)."""
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
    io.write_json(
        art / "04_judge_grpo" / "judges.json",
        [{"name": "warm-up (before RL)", "kind": "warmup"}, entry, *extra_judges],
    )
    io.write_json(
        root / "results" / name / "judges.json",
        {
            "config": {"GRPO_STEPS": 60, "BETA": 0.2, "DISC_LR": 1e-3, "MAX_COMPLETION": 24},
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
    assert len(datasets.load_dataset(str(tmp_path / "exp" / "labels"), cache_dir=cache)["all_problems"]) == 2
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
    assert meta["contract_version"] == 1 and meta["prompt"]["template"] == TOY_JUDGE  # issue 50: the contract
    assert (meta["prompt"]["history_join"], meta["prompt"]["empty_history"]) == ("\n\n", "(none)")
    assert meta["decoding"]["max_new_tokens"] == 24 and meta["decoding"]["end_token_ids"] == [0]
    assert meta["verdict"]["pattern"] == VERDICT_PATTERN
    card = (judge_dir / "README.md").read_text()
    assert "| test balanced accuracy | 61.0 [55.5, 66.9] (95% interval over 44 problems, 372 chunks) |" in card
    assert "| recipe (notebook 04) | `GRPO_STEPS` 60, `BETA` 0.2, `MAX_COMPLETION` 24 |" in card
    assert "library_name: transformers" in card and "base_model" not in card  # a model this repository built

    from stepwiser_lib.method.judge import Judge

    j = Judge.load(str(judge_dir))
    assert (j.family, j.max_new_tokens, j.style, j.template) == ("toy", 24, "cot", TOY_JUDGE)
    (out,) = j.judge([("a = 2. b = a + 3. Find b.", [], "b = a + 3 = 2 + 3 = 5")])
    assert set(out) >= {"verdict", "analysis", "score"} and out["verdict"] in ("Positive", "Negative", None)


def test_the_hub_push_runs_dry_against_a_local_folder(tmp_path, monkeypatch):
    """A dry push plans the uploads and writes nothing (issue 50: it copied every folder again)."""
    monkeypatch.setenv(paths.OUTPUT_ROOT_ENV, str(tmp_path / "out"))
    _profile(tmp_path / "out")
    folders = ex.export("x", tmp_path / "exp", judges=False)
    before = sorted(p for p in (tmp_path / "exp").rglob("*"))
    plan = ex.push(folders, "my-org", "x", dry_run=True, out=tmp_path / "exp")
    assert [(p["repo_type"], p["repo_id"]) for p in plan] == [
        ("dataset", "my-org/stepwiser-x-toy-processbench"),
        ("dataset", "my-org/stepwiser-x-labels"),
        ("dataset", "my-org/stepwiser-x-judge-splits"),
        ("dataset", "my-org/stepwiser-x-predictions"),
    ]
    files = plan[1]["files"]
    assert files[0] == "README.md" and files[1].startswith("labels-") and len(files) == 2
    assert sorted(p for p in (tmp_path / "exp").rglob("*")) == before  # nothing written


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
    assert len(datasets.load_dataset(str(tmp_path / "exp" / "labels"), cache_dir=cache)["all_problems"]) == 2
    labels = tmp_path / "out" / "runs" / "x" / "artifacts" / "02_rollout_labelling" / "labels.jsonl"
    rec = io.read_jsonl(labels)[0]
    io.write_jsonl(labels, [{**rec, "chunk_index": i} for i in range(5)])  # a rerun of 02
    ex.export("x", tmp_path / "exp", judges=False)
    assert len(datasets.load_dataset(str(tmp_path / "exp" / "labels"), cache_dir=cache)["all_problems"]) == 5
    assert len(list((tmp_path / "exp" / "labels").glob("labels-*.jsonl"))) == 1  # the old copy is gone
    (tmp_path / "out" / "runs" / "x" / "artifacts" / "04_judge_grpo" / "judge" / "model" / "model.safetensors").unlink()
    with pytest.raises(ex.ExportError, match="judge stepwiser:rel_ratio: its model in .* is incomplete"):
        ex.export("x", tmp_path / "exp2")


def test_the_export_cli_checks_its_profile_flags_and_hub_ids_and_says_what_is_missing_EX01_EX04_EX05_EX06(
    tmp_path, monkeypatch, capsys
):
    """Issue 49: EX01, a misspelt profile exported toy-ProcessBench and exit 0, and a profile that
    had not run said nothing of what was missing (and a results folder was created by reading);
    EX04, --dry-run without --push-to-hub wrote a full export (now it plans, issue 50); EX05, an org the hub refuses passed
    the dry run; EX06, a push without hub access ended in a 34-line traceback."""
    monkeypatch.setenv(paths.OUTPUT_ROOT_ENV, str(tmp_path / "out"))
    assert ex.main(["--profile", "smokey", "--to", str(tmp_path / "e"), "--no-judges"]) == 2
    assert "unknown profile 'smokey'" in capsys.readouterr().err and not (tmp_path / "e").exists()
    assert ex.main(["--profile", "tiny", "--to", str(tmp_path / "e"), "--no-judges"]) == 0
    err = capsys.readouterr().out
    assert "has not made them yet: labels (notebook 02), judge-splits (notebook 03), predictions" in err
    assert not (tmp_path / "out" / "results" / "tiny").exists()  # reading made no folder
    assert ex.main(["--profile", "tiny", "--to", str(tmp_path / "dry"), "--dry-run"]) == 0  # issue 50: plans only
    assert "would write" in capsys.readouterr().out and not (tmp_path / "dry").exists()
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


#: A few chunks for the quick start to judge: right and wrong, with and without a history.
CHUNKS = [
    ("a = 25. b = a + 30. c = b + 6. Find c.", [], "b = a + 30 = 25 + 30 = 55"),
    ("a = 25. b = a + 30. c = b + 6. Find c.", ["b = a + 30 = 25 + 30 = 55"], "c = b + 6 = 55 + 6 = 62"),
    ("a = 2. b = a + 3. Find b.", [], "b = a + 3 = 2 + 3 = 6"),
    ("a = 7. b = a * 2. c = b - 3. Find c.", ["b = a * 2 = 7 * 2 = 14"], "c = b - 3 = 14 - 3 = 11"),
]
DISC = {
    "name": "disc_sft:rel_ratio",
    "kind": "disc_sft",
    "rule": "rel_ratio",
    "style": "disc",
    "row": "Discriminative + SFT",
    "prompt_family": "toy",
    "base": "runs/x/artifacts/04_judge_grpo/judge/model",
}


def _quick_start(card: str, folder) -> dict:
    """Run the card's plain-transformers quick start against ``folder``; its namespace."""
    import re

    code = card.split("## Quick start with plain transformers", 1)[1].split("```python\n", 1)[1].split("```", 1)[0]
    assert code.count("\n") <= 30 and "stepwiser_lib" not in code  # short, and the library is not needed
    code = re.sub(r'^JUDGE = ".*"$', f"JUDGE = {str(folder)!r}", code, count=1, flags=re.M)
    ns: dict = {}
    exec(compile(code, "quick_start", "exec"), ns)
    return ns


def test_the_judges_contract_travels_and_the_cards_quick_start_judges_as_the_library_does(tmp_path, monkeypatch):
    """Issue 50, item 2: ``stepwiser_judge.json`` carries the prompt template, the history rule, the
    decoding and the verdict pattern (a discriminative judge: its + and - token ids); the card's
    plain-transformers quick start, built from that file alone, gives ``Judge.judge``'s outputs and
    verdicts. The toy base writes no box, so the generative judge's verdicts are None on both sides:
    its outputs are compared whole (the same text reads to the same verdict), and
    ``test_the_verdict_pattern_reads_what_parse_verdict_reads`` checks the pattern on verdicts.
    ``Judge.load`` prompts with the file's template, and an export from before the contract with the
    library's, saying so."""
    import warnings

    from stepwiser_lib.method.discriminative import DiscJudge
    from stepwiser_lib.method.judge import Judge

    monkeypatch.setenv(paths.OUTPUT_ROOT_ENV, str(tmp_path / "out"))
    _profile(tmp_path / "out", extra_judges=[DISC])
    ex.export("x", tmp_path / "exp", org="my-org")
    gen, disc = (
        tmp_path / "exp" / "judges" / "stepwiser__rel_ratio",
        tmp_path / "exp" / "judges" / "disc_sft__rel_ratio",
    )

    j = Judge.load(str(gen))
    ns = _quick_start((gen / "README.md").read_text(), gen)
    for t, r in zip(CHUNKS, j.judge(CHUNKS)):
        assert ns["judge"](*t) == (r["verdict"], r["analysis"])

    meta = json.loads((disc / "stepwiser_judge.json").read_text())
    assert meta["contract_version"] == 1 and meta["verdict"]["token_ids"] == {
        s: j.gen.tok(s, add_special_tokens=False)["input_ids"][0] for s in "+-"
    }
    dj = Judge.load(str(disc))
    assert isinstance(dj, DiscJudge)
    ns = _quick_start((disc / "README.md").read_text(), disc)
    for t, r in zip(CHUNKS, dj.judge(CHUNKS)):
        verdict, p = ns["judge"](*t)
        assert abs(p - r["score"]) < 0.01 and (verdict == r["verdict"] or abs(r["score"] - 0.5) < 0.01)

    contract = json.loads((gen / "stepwiser_judge.json").read_text())
    own = "Is this new chunk right? \\boxed{{Positive}} or \\boxed{{Negative}}.\n{problem} | {history} | {chunk}"
    io.write_json(gen / "stepwiser_judge.json", {**contract, "prompt": {**contract["prompt"], "template": own}})
    j = Judge.load(str(gen))
    assert j.template == own and j.prompt("p", ["h1", "h2"], "c") == own.format(
        problem="p", history="h1\n\nh2", chunk="c"
    )
    assert Judge.load(str(gen), style="direct").template != own  # a style named in the call: the library's prompt
    old = {k: contract[k] for k in ("name", "kind", "rule", "style", "prompt_family", "max_new_tokens", "profile")}
    io.write_json(gen / "stepwiser_judge.json", old)  # an export from before the contract
    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        j = Judge.load(str(gen))
    assert j.template == TOY_JUDGE
    assert any("exported before contract_version 1" in str(x.message) and "library's copy" in str(x.message) for x in w)
    io.write_json(gen / "stepwiser_judge.json", {**contract, "contract_version": 7})
    with pytest.raises(ValueError, match="contract_version 7, newer than this library's 1"):
        Judge.load(str(gen))
    io.write_json(gen / "stepwiser_judge.json", {**contract, "prompt": {"template": "{problem} {chunk}"}})
    with pytest.raises(ValueError, match=r"prompt.template must hold the slots \{problem\}, \{history\}"):
        Judge.load(str(gen))


def test_the_verdict_pattern_reads_what_parse_verdict_reads():
    """The contract's regex (what a user without the library reads a verdict with) against the
    library's parser, on the parser's own cases; the one kind of output where they part is named."""
    from stepwiser_lib.core.verdicts import match_verdict, parse_verdict

    outputs = [
        "analysis... \\boxed{Positive}",
        "\\boxed{Negative}",
        "\\boxed{ positive }",
        "\\boxed{NEGATIVE}.",
        "first \\boxed{Positive} then \\boxed{Negative}",
        "\\boxed{Negative} and finally \\boxed{Positive}",
        "check b: b = 5; stated 6\n\\boxed{Negative}\nmore text",
        "\\boxed{\\text{Positive}}",
        "\\boxed{{Positive}}",
        "the answer is \\boxed{42}",
        "\\boxed{}",
        "Positive",
        "\\boxed{Positive",
        "\\boxed{Positive} \\boxed{maybe}",
        "",
    ]
    assert [match_verdict(o) for o in outputs] == [parse_verdict(o) for o in outputs]
    assert parse_verdict("\\boxed{Negative} then \\boxed{Pos") == "Negative"  # an unclosed last box:
    assert match_verdict("\\boxed{Negative} then \\boxed{Pos") is None  # the pattern reads no verdict


def test_judge_load_of_a_hub_id_fails_with_the_reason(monkeypatch, tmp_path):
    """Issue 50: ``Judge.load(<hub id>)`` fell back to a plain model with the toy prompt on any hub error."""
    import warnings

    import huggingface_hub
    from huggingface_hub.errors import EntryNotFoundError, LocalEntryNotFoundError

    from stepwiser_lib.method import judge

    def fails(e):
        def download(*a, **k):
            raise e

        return download

    monkeypatch.setattr(huggingface_hub, "hf_hub_download", fails(ConnectionError("Connection refused")))
    with pytest.raises(
        OSError, match=r"cannot load the judge 'org/nope': .* hub answered ConnectionError: Connection refused"
    ):
        judge.Judge.load("org/nope")
    monkeypatch.setattr(huggingface_hub, "hf_hub_download", fails(EntryNotFoundError("no such file")))
    assert judge.exported_judge("org/plain-model") is None  # a repository without the file: a plain model
    monkeypatch.setattr(huggingface_hub, "hf_hub_download", fails(LocalEntryNotFoundError("offline")))
    monkeypatch.setattr(huggingface_hub, "try_to_load_from_cache", lambda *a, **k: None)
    with pytest.raises(OSError, match="the hub cannot be reached and the cache does not hold it"):
        judge.exported_judge("org/nope")
    monkeypatch.setattr(
        huggingface_hub, "try_to_load_from_cache", lambda repo, f: "/cache/config.json" if f == "config.json" else None
    )
    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        assert judge.exported_judge("org/cached-model") is None
    assert any("loading it as a plain model" in str(x.message) for x in w)
    good = tmp_path / "stepwiser_judge.json"
    good.write_text(json.dumps({"style": "cot", "prompt_family": "toy", "max_new_tokens": 8}))
    monkeypatch.setattr(huggingface_hub, "hf_hub_download", lambda *a, **k: str(good))
    assert judge.exported_judge("org/old-judge")["max_new_tokens"] == 8


def _card(path, kind):
    """A card read back by huggingface_hub's own classes, and its raw front matter."""
    import yaml
    from huggingface_hub import DatasetCard, ModelCard

    card = (ModelCard if kind == "model" else DatasetCard).load(path)
    return card, yaml.safe_load(path.read_text().split("---\n")[1])


def test_cards_are_hub_cards_and_nothing_exported_names_a_local_folder(tmp_path, monkeypatch):
    """Issue 50, item 3. The cards are huggingface_hub's: read back by ``ModelCard.load`` /
    ``DatasetCard.load``, a model card's ``model-index`` parses to its results
    (``model_index_to_eval_results``). ``RepoCard.validate`` posts the card to the hub, which this
    machine cannot reach, so the metadata is checked locally this way. A judge trained with LoRA
    carries its adapter, naming its base relative to the output root; no exported file holds a
    folder of this machine (``merged_from.json`` held the base's absolute path)."""
    pytest.importorskip("peft")
    from huggingface_hub.repocard_data import model_index_to_eval_results
    from peft import LoraConfig, get_peft_model
    from transformers import AutoModelForCausalLM, AutoTokenizer

    monkeypatch.setenv(paths.OUTPUT_ROOT_ENV, str(tmp_path / "out"))
    art = tmp_path / "out" / "runs" / "x" / "artifacts" / "04_judge_grpo"
    lora = {
        "name": "stepwiser:abs_q",
        "kind": "stepwiser",
        "rule": "abs_q",
        "style": "cot",
        "max_new_tokens": 24,
        "prompt_family": "toy",
        "base": "runs/x/artifacts/04_judge_grpo/judge/model",
        "adapter": "runs/x/artifacts/04_judge_grpo/stepwiser__abs_q/adapter",
    }
    _profile(tmp_path / "out", extra_judges=[lora])
    model = AutoModelForCausalLM.from_pretrained(paths.ROOT / "data" / "toy_base")
    peft = get_peft_model(model, LoraConfig(r=2, lora_alpha=4, target_modules=["q_proj", "v_proj"]))
    peft.save_pretrained(art / "stepwiser__abs_q" / "adapter")  # names its base by this machine's path
    AutoTokenizer.from_pretrained(paths.ROOT / "data" / "toy_base").save_pretrained(
        art / "stepwiser__abs_q" / "adapter"
    )
    io.write_json(
        tmp_path / "out" / "results" / "x" / "processbench.json",
        {"bench": "toy", "judges": {"stepwiser:rel_ratio": {"avg_f1": 34.32}}},
    )
    ex.export("x", tmp_path / "exp", org="my-org")

    d = tmp_path / "exp" / "judges" / "stepwiser__rel_ratio"
    card, front = _card(d / "README.md", "model")
    assert (card.data.pipeline_tag, card.data.library_name) == ("text-generation", "transformers")
    assert card.data.datasets == ["my-org/stepwiser-x-judge-splits"] and card.data.license == "apache-2.0"
    tags = front["tags"]
    assert len(tags) == len(set(tags)) and tags[:3] == ["stepwiser", "process-reward-model", "judge"]
    name, results = model_index_to_eval_results(front["model-index"])
    assert name == "stepwiser-x-stepwiser__rel_ratio"
    assert [(r.metric_type, r.metric_value, r.dataset_type, r.dataset_split) for r in results] == [
        ("balanced_accuracy", 61.0, "my-org/stepwiser-x-judge-splits", "test"),
        ("f1", 34.32, "my-org/stepwiser-x-toy-processbench", None),
    ]
    assert "## Framework versions" in card.text and "- Transformers " in card.text and "- PyTorch " in card.text
    assert (
        "@article{xiong2025stepwiser," in card.text
        and 'Judge.load("my-org/stepwiser-x-stepwiser-rel-ratio")' in card.text
    )
    based = ex.judge_card({**lora, "row": "r"}, None, "x", "Qwen/Qwen2.5-1.5B", org="my-org")
    assert _card_text_meta(based)["base_model"] == "Qwen/Qwen2.5-1.5B"

    for folder, config in (("labels", "default"), ("judge-splits", "rel_ratio-balanced"), ("toy-processbench", "dev")):
        card, front = _card(tmp_path / "exp" / folder / "README.md", "dataset")
        assert card.data.language == ["en"] and card.data.task_categories == ["text-classification"]
        assert card.data.size_categories == ["n<1K"] and "@article{xiong2025stepwiser," in card.text
        infos = front["dataset_info"] if isinstance(front["dataset_info"], list) else [front["dataset_info"]]
        info = next(i for i in infos if i["config_name"] == config)
        assert info["features"] and all(s["num_examples"] > 0 for s in info["splits"])
    assert [
        s["name"] for s in _card(tmp_path / "exp" / "labels" / "README.md", "dataset")[1]["dataset_info"]["splits"]
    ] == ["all_problems"]

    a = tmp_path / "exp" / "judges" / "stepwiser__abs_q"
    assert (a / "adapter" / "adapter_model.safetensors").exists() and not (a / "adapter" / "README.md").exists()
    base = "runs/x/artifacts/04_judge_grpo/judge/model"
    assert json.loads((a / "adapter" / "adapter_config.json").read_text())["base_model_name_or_path"] == base
    assert json.loads((a / "merged_from.json").read_text()) == {"base": base, "adapter": "adapter/"}
    assert "- `adapter/`: the PEFT LoRA adapter" in (a / "README.md").read_text()
    for f in (tmp_path / "exp").rglob("*"):
        if f.is_file() and f.suffix in (".json", ".jsonl", ".md", ".jinja", ".txt"):
            text = f.read_text()
            assert str(tmp_path) not in text and str(paths.ROOT) not in text, f


def _card_text_meta(text: str) -> dict:
    import yaml

    return yaml.safe_load(text.split("---\n")[1])


def test_the_bibtex_names_the_papers_authors_as_citation_cff_does():
    import yaml

    from stepwiser_lib.core import cards

    cff = yaml.safe_load((paths.ROOT / "CITATION.cff").read_text())["preferred-citation"]
    authors = " and ".join(f"{a['family-names']}, {a['given-names']}" for a in cff["authors"])
    assert f"author  = {{{authors}}}" in cards.BIBTEX and cff["title"] in cards.BIBTEX


def test_a_dry_run_plans_the_export_and_the_push_and_writes_nothing(tmp_path, monkeypatch, capsys):
    """Issue 50: ``--dry-run`` wrote the whole export (176 MB at tiny) before it planned the push."""
    monkeypatch.setenv(paths.OUTPUT_ROOT_ENV, str(tmp_path / "out"))
    _profile(tmp_path / "out", name="tiny")
    assert ex.main(["--profile", "tiny", "--to", str(tmp_path / "exp"), "--dry-run", "--push-to-hub", "my-org"]) == 0
    out = capsys.readouterr().out
    assert not (tmp_path / "exp").exists()
    assert f"would write {tmp_path / 'exp' / 'judges' / 'stepwiser__rel_ratio'}/ (" in out
    assert "    model.safetensors" in out and "    stepwiser_judge.json" in out
    assert "would push it to the private model my-org/stepwiser-tiny-stepwiser-rel-ratio" in out
    assert "would push it to the private dataset my-org/stepwiser-tiny-labels" in out
    assert out.strip().endswith("dry run: nothing written or pushed")
    plan = ex.export_plan("tiny", tmp_path / "exp")
    assert [p["folder"].name for p in plan][-1] == "stepwiser__rel_ratio" and not (tmp_path / "exp").exists()
    assert (
        ex.main(["--profile", "tiny", "--to", str(tmp_path / "exp"), "--dry-run", "--push-to-hub", "o", "--public"])
        == 0
    )
    assert "to the public dataset o/stepwiser-tiny-labels" in capsys.readouterr().out


@pytest.mark.hub  # needs huggingface.co: `make test-hub` on a machine that reaches it
def test_exported_cards_pass_the_hubs_own_validation(tmp_path, monkeypatch):
    """Issue 50, done means: every exported card passes ``RepoCard.validate``, which posts the card's
    metadata to the hub's validator (``/api/validate-yaml``) and raises on what the hub would refuse
    at push time. The local checks above run everywhere; this one needs the network."""
    from huggingface_hub import DatasetCard, ModelCard

    monkeypatch.setenv(paths.OUTPUT_ROOT_ENV, str(tmp_path / "out"))
    _profile(tmp_path / "out")
    ex.export("x", tmp_path / "exp", org="my-org")
    cards = sorted((tmp_path / "exp").rglob("README.md"))
    assert any("judges" in c.parts for c in cards) and any("judges" not in c.parts for c in cards)
    for path in cards:
        kind = "model" if "judges" in path.parts else "dataset"
        card = (ModelCard if kind == "model" else DatasetCard).load(path)
        try:
            card.validate(repo_type=kind)  # raises ValueError naming what the hub refuses
        except ValueError:
            raise
        except Exception as e:  # httpx / requests connection errors: no network here
            pytest.fail(f"make test-hub needs huggingface.co, which this machine cannot reach: {type(e).__name__}: {e}")


def test_an_exported_judge_keeps_the_output_limit_notebook_04_judged_it_with_EX12():
    """A GRPO judge records its limit; a judge SFT made (RS-FT) does not, and is exported with the
    ``MAX_COMPLETION`` notebook 04 judged it at (smoke: 96), not a fixed 128 that would finish
    outputs notebook 04 cut and so change verdicts."""
    rsft = {"name": "rsft:rel_ratio", "kind": "rsft", "style": "cot"}
    assert ex.judged_with({**rsft, "max_new_tokens": 24}, {"MAX_COMPLETION": 96}, "smoke") == 24
    assert ex.judged_with(rsft, {"MAX_COMPLETION": 96}, "smoke") == 96
    from stepwiser_lib.core.config import for_notebook

    assert ex.judged_with(rsft, None, "tiny") == for_notebook("tiny", "04_judge_grpo").MAX_COMPLETION
