import pytest

from stepwiser_lib import models, prompts, toyworld


@pytest.fixture(scope="module", params=["generate", "loop"])
def gen(toy_model, request):
    """The generator contract below holds for both sampling engines."""
    model, tok = toy_model
    return models.HFGenerator(model, tok, batch_size=16, engine=request.param)


def _prompts(k=4):
    return [prompts.TOY_BASE_POLICY.format(problem=p.text)
            for p in toyworld.generate_problems("eval", k, seed=5)]


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


def test_vllm_backend_is_optional():
    pytest.importorskip("vllm", reason="vllm is the gpu extra; not installed on CPU machines")


def test_next_token_probs_match_an_unpadded_forward_pass(gen):
    """Batched with left padding (prompts of different lengths), the next-token probabilities
    equal those of each prompt alone, and sum to one over the whole vocabulary."""
    import torch

    ps = _prompts(3)
    prefixes = ["a = ", "", "b = 1"]
    vocab = list(range(len(gen.tok)))
    batched = gen.next_token_probs(ps, prefixes, vocab)
    for p, x, row in zip(ps, prefixes, batched):
        ids = gen.tok(models.render_prompt(gen.tok, p, gen.chat) + x, return_tensors="pt",
                      add_special_tokens=False).input_ids
        with torch.no_grad():
            alone = torch.softmax(gen.model(ids).logits[0, -1].float(), -1)[: len(vocab)]
        assert torch.allclose(torch.tensor(row), alone, atol=1e-4)
        assert abs(sum(row) - 1) < 1e-3
    with pytest.raises(ValueError, match="one to one"):
        gen.next_token_probs(ps, prefixes[:1], vocab)
