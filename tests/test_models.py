import pytest

from stepwiser_lib.core import prompts
from stepwiser_lib.engines import models
from stepwiser_lib.toy import toyworld


@pytest.fixture(scope="module", params=["generate", "loop"])
def gen(toy_model, request):
    """The generator contract below holds for both sampling engines."""
    model, tok = toy_model
    return models.HFGenerator(model, tok, batch_size=16, engine=request.param)


def _prompts(k=4):
    return [prompts.TOY_BASE_POLICY.format(problem=p.text) for p in toyworld.generate_problems("eval", k, seed=5)]


def test_n_samples_shape_and_seed_determinism(gen):
    ps = _prompts(3)
    a = gen.generate(ps, n=4, temperature=1.0, max_new_tokens=40, seed=1)
    b = gen.generate(ps, n=4, temperature=1.0, max_new_tokens=40, seed=1)
    c = gen.generate(ps, n=4, temperature=1.0, max_new_tokens=40, seed=2)
    assert [len(x) for x in a] == [4, 4, 4]
    assert [[y.text for y in x] for x in a] == [[y.text for y in x] for x in b]
    assert [[y.text for y in x] for x in a] != [[y.text for y in x] for x in c]


def test_max_new_tokens_and_multi_token_stop_string(gen):
    ps = _prompts(4)
    short = gen.generate(ps, n=1, temperature=0, max_new_tokens=5)
    assert all(o[0].n_tokens <= 5 and not o[0].finished for o in short)
    first_par = gen.generate(ps, n=1, temperature=0, max_new_tokens=120, stop=["\n\n"])
    full = gen.generate(ps, n=1, temperature=0, max_new_tokens=120)
    for s, f in zip(first_par, full):
        assert s[0].text.endswith("\n\n") and s[0].finished
        assert f[0].text.startswith(s[0].text)  # greedy: the stop only truncates
        assert s[0].text.count("\n\n") == 1


def test_prefix_continuation(gen):
    p = toyworld.generate_problems("eval", 1, seed=9)[0]
    prompt = prompts.TOY_BASE_POLICY.format(problem=p.text)
    d = p.definition(p.needed[0])
    prefix = toyworld.statement(d, p.values) + "\n\n"
    out = gen.generate([prompt], n=2, temperature=0, max_new_tokens=120, prefixes=[prefix])[0]
    # the continuation does not repeat the given prefix; prefix + continuation is a solution
    assert not out[0].text.startswith(prefix)
    assert toyworld.last_boxed(prefix + out[0].text) is not None
    with pytest.raises(ValueError, match="one to one"):
        gen.generate([prompt], prefixes=["a", "b"])


def test_single_token_stop_is_an_end_id(gen):
    ids, rest = gen._stop_ids(["</chunk>", "\n\n"])
    assert len(ids) == 1 and rest == ["\n\n"]


def test_load_model_errors_clearly(tmp_path):
    with pytest.raises(FileNotFoundError, match="neither a local directory nor a hub id"):
        models.load_model("no_such_model_dir")


def test_vllm_backend_without_vllm_says_how_to_get_it():
    try:
        import vllm  # noqa: F401
    except ImportError:
        with pytest.raises(ImportError, match="make venv-vllm"):
            models.make_generator("some/model", backend="vllm", kv_cache_gb=1.0)
    else:
        pytest.skip("vllm is installed here: tests/test_vllm_engine.py runs the real engine")


def test_request_limits_skip_and_clip_instead_of_failing_the_call():
    """The response budget counts what a request has used already; the context clips; a request
    with no room is skipped (limit <= 0) and counted, the others run."""
    lim, c = models.request_limits([10, 90, 120, 50], 40, used=[0, 5, 0, 38], max_len=100)
    assert lim == [40, 10, -20, 2] and c == {"requests": 4, "skipped": 1, "context_clipped": 1}
    assert models.request_limits([10], 40)[0] == [40]


def test_one_seed_scheme_gives_every_prompt_and_sample_its_own_stream():
    """sample_seed over a grid of call seeds, prompts and samples: no two coincide, not even in the
    low 32 bits torch's CPU generator keeps (its mt19937 ignores the rest, checked here too)."""
    import torch

    grid = [models.sample_seed(models.prompt_seed(s, i), j) for s in range(3) for i in range(300) for j in range(16)]
    assert len(set(grid)) == len(grid) and len({g % 2**32 for g in grid}) == len(grid)
    per_prompt = [models.sample_seed(p, j) for p in (7, 8, 9, 2**31 - 1) for j in range(16)]  # chunk-reset's seeds
    assert len(set(per_prompt)) == len(per_prompt)
    assert models.sample_seed(5, 3) == 5 * 1_000_003 + 3 and 0 <= models.sample_seed(2**62, 9) < 2**63
    a = torch.Generator().manual_seed(5)
    b = torch.Generator().manual_seed(5 + 2**32)
    assert torch.equal(torch.rand(4, generator=a), torch.rand(4, generator=b))  # why the low bits must differ


def test_next_token_probs_match_an_unpadded_forward_pass(gen):
    """Batched with left padding (prompts of different lengths), the next-token probabilities
    equal those of each prompt alone, and sum to one over the whole vocabulary."""
    import torch

    ps = _prompts(3)
    prefixes = ["a = ", "", "b = 1"]
    vocab = list(range(len(gen.tok)))
    batched = gen.next_token_probs(ps, prefixes, vocab)
    for p, x, row in zip(ps, prefixes, batched):
        ids = gen.tok(
            models.render_prompt(gen.tok, p, gen.chat) + x, return_tensors="pt", add_special_tokens=False
        ).input_ids
        with torch.no_grad():
            alone = torch.softmax(gen.model(ids).logits[0, -1].float(), -1)[: len(vocab)]
        assert torch.allclose(torch.tensor(row), alone, atol=1e-4)
        assert abs(sum(row) - 1) < 1e-3
    with pytest.raises(ValueError, match="one to one"):
        gen.next_token_probs(ps, prefixes[:1], vocab)


def test_models_can_be_saved_in_half_precision_and_train_again_in_fp32_S7(tmp_path, monkeypatch):
    """Issue 48 (S7): on Drive the profile's fp32 models took about 12 GB of a free 15; with
    ``STEPWISER_SAVE_DTYPE=float16`` (the Colab bootstrap's, outputs on Drive) a saved model is half
    the size, its config says so, and it loads back in fp32 for training. The model in memory
    keeps its fp32 master weights."""
    import torch
    from safetensors import safe_open
    from transformers import AutoModelForCausalLM, Qwen2Config, Qwen2ForCausalLM

    from stepwiser_lib.engines import models

    torch.manual_seed(0)
    m = Qwen2ForCausalLM(
        Qwen2Config(
            vocab_size=64,
            hidden_size=32,
            intermediate_size=64,
            num_hidden_layers=1,
            num_attention_heads=4,
            num_key_value_heads=2,
        )
    )
    models.save_atomically(m, None, tmp_path / "fp32")
    monkeypatch.setenv(models.ENV_SAVE_DTYPE, "float16")
    models.save_atomically(m, None, tmp_path / "fp16")
    assert next(m.parameters()).dtype == torch.float32
    full, half = ((tmp_path / d / "model.safetensors").stat().st_size for d in ("fp32", "fp16"))
    assert half < 0.6 * full
    with safe_open(str(tmp_path / "fp16" / "model.safetensors"), "pt") as f:
        assert {f.get_tensor(k).dtype for k in f.keys()} == {torch.float16}
    back = AutoModelForCausalLM.from_pretrained(tmp_path / "fp16", dtype=torch.float32)
    w = dict(m.named_parameters())["model.embed_tokens.weight"]
    assert torch.allclose(dict(back.named_parameters())["model.embed_tokens.weight"], w, atol=1e-3)
    monkeypatch.setenv(models.ENV_SAVE_DTYPE, "int8")
    with pytest.raises(ValueError, match="use float16 or bfloat16"):
        models.save_atomically(m, None, tmp_path / "bad")
