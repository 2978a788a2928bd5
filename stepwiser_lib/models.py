"""One loader and one generation interface for every stage (policy, rollouts, judge).

* :func:`load_model` takes a hub id or a local directory (the toy models are saved with
  ``save_pretrained`` and come back through exactly the same ``from_pretrained`` path), plus an
  optional PEFT LoRA adapter.
* :class:`HFGenerator` batches ``model.generate`` (left padding, KV cache, sorted by length) on
  CPU or GPU. :class:`VLLMGenerator` offers the same call on vLLM, imported only when installed
  (the ``gpu`` extra), with prefix caching so nested prefixes of one trajectory share work.
* Both return, for each prompt, ``n`` :class:`Completion` objects, truncated after the first stop
  string (kept in the text, so a chunk ends with ``</chunk>``).
"""

from __future__ import annotations

import os
from dataclasses import dataclass

import torch


@dataclass
class Completion:
    text: str
    n_tokens: int  # generated tokens up to and including the stop string / end token
    finished: bool  # ended by a stop string or the end token (not by max_new_tokens)


def set_threads(n: int | None = None) -> int:
    """Use every core, but no more (two torch jobs on 2 cores slow each other tenfold)."""
    n = n or os.cpu_count() or 1
    torch.set_num_threads(n)
    return n


def pick_device(device: str = "auto") -> str:
    if device == "auto":
        return "cuda" if torch.cuda.is_available() else "cpu"
    return device


def load_tokenizer(name_or_path: str):
    from transformers import AutoTokenizer

    tok = AutoTokenizer.from_pretrained(name_or_path)
    tok.padding_side = "left"  # decoder-only generation pads on the left
    if tok.pad_token is None:
        tok.pad_token = tok.eos_token
    return tok


def load_model(name_or_path: str, adapter: str | None = None, device: str = "auto",
               dtype: str = "auto", trainable: bool = False):
    """``(model, tokenizer)`` from a hub id or a local directory, with an optional LoRA adapter.

    ``dtype="auto"`` is float32 on CPU (fp16 matmuls are slow or missing there; the committed toy
    checkpoints are stored in fp16 only to halve the repository) and bfloat16 on GPU.
    """
    from transformers import AutoModelForCausalLM

    device = pick_device(device)
    if dtype == "auto":
        torch_dtype = torch.float32 if device == "cpu" else torch.bfloat16
    else:
        torch_dtype = getattr(torch, dtype)
    if not (os.path.isdir(name_or_path) or "/" in name_or_path):
        raise FileNotFoundError(
            f"model {name_or_path!r} is neither a local directory nor a hub id (owner/name)")
    tok = load_tokenizer(name_or_path)
    model = AutoModelForCausalLM.from_pretrained(name_or_path, dtype=torch_dtype)
    if adapter:
        from peft import PeftModel

        model = PeftModel.from_pretrained(model, adapter, is_trainable=trainable)
    model.to(device)
    if not trainable:
        model.eval()
    return model, tok


def render_prompt(tokenizer, prompt: str, chat: bool = True) -> str:
    """The text actually fed to the model: the chat template around a user message."""
    if not chat:
        return prompt
    return tokenizer.apply_chat_template([{"role": "user", "content": prompt}], tokenize=False,
                                         add_generation_prompt=True)


def _truncate(text: str, stops: list[str]) -> tuple[str, bool]:
    cut = None
    for s in stops:
        i = text.find(s)
        if i >= 0 and (cut is None or i + len(s) < cut):
            cut = i + len(s)
    return (text, False) if cut is None else (text[:cut], True)


class HFGenerator:
    """Batched sampling with ``transformers`` ``generate``.

    ``prefixes`` (optional, one per prompt) is text the assistant has already written: it is
    appended after the chat template so that generation continues it (rollouts from a partial
    solution, chunk-by-chunk generation).
    """

    backend = "hf"

    def __init__(self, model, tokenizer, batch_size: int = 128, chat: bool = True):
        self.model, self.tok, self.batch_size, self.chat = model, tokenizer, batch_size, chat

    def _stop_ids(self, stops: list[str]) -> tuple[list[int], list[str]]:
        """Stop strings that are single tokens become extra end ids (free to check)."""
        ids, rest = [], []
        vocab = self.tok.get_vocab()
        for s in stops:
            if s in vocab:
                ids.append(vocab[s])
            else:
                rest.append(s)
        return ids, rest

    @torch.no_grad()
    def generate(self, prompts: list[str], n: int = 1, temperature: float = 1.0,
                 top_p: float = 1.0, max_new_tokens: int = 256, stop: list[str] | None = None,
                 seed: int = 0, prefixes: list[str] | None = None,
                 progress: bool | str = False) -> list[list[Completion]]:
        from tqdm.auto import tqdm

        stop = list(stop or [])
        prefixes = prefixes or [""] * len(prompts)
        if len(prefixes) != len(prompts):
            raise ValueError("prefixes must match prompts one to one")
        texts = [render_prompt(self.tok, p, self.chat) + x for p, x in zip(prompts, prefixes)]
        # One row per sample; sort by length so each batch pads little.
        rows = [(i, j) for i in range(len(texts)) for j in range(n)]
        enc = [self.tok(t, add_special_tokens=False)["input_ids"] for t in texts]
        rows.sort(key=lambda r: (len(enc[r[0]]), r))
        stop_ids, stop_rest = self._stop_ids(stop)
        eos = [self.tok.eos_token_id] + stop_ids
        out: list[list[Completion | None]] = [[None] * n for _ in prompts]
        device = self.model.device
        bar = tqdm(total=len(rows), desc=progress if isinstance(progress, str) else "generate",
                   unit="seq", disable=not progress)
        for b in range(0, len(rows), self.batch_size):
            batch = rows[b:b + self.batch_size]
            ids = [enc[i] for i, _ in batch]
            width = max(map(len, ids))
            pad = self.tok.pad_token_id
            input_ids = torch.tensor([[pad] * (width - len(x)) + x for x in ids], device=device)
            attn = torch.tensor([[0] * (width - len(x)) + [1] * len(x) for x in ids], device=device)
            torch.manual_seed(seed * 1_000_003 + b)
            kw = dict(do_sample=temperature > 0, max_new_tokens=max_new_tokens,
                      eos_token_id=eos, pad_token_id=pad)
            if temperature > 0:
                kw.update(temperature=temperature, top_p=top_p, top_k=0)
            if stop_rest:
                kw.update(stop_strings=stop_rest, tokenizer=self.tok)
            gen = self.model.generate(input_ids=input_ids, attention_mask=attn, **kw)
            gen = gen[:, width:]
            for (i, j), g in zip(batch, gen.tolist()):
                toks = []
                ended = False
                for t in g:
                    if t in eos:
                        toks.append(t)
                        ended = True
                        break
                    if t == pad:
                        break
                    toks.append(t)
                text = self.tok.decode([t for t in toks if t != self.tok.eos_token_id],
                                       skip_special_tokens=False)
                text, hit = _truncate(text, stop)
                out[i][j] = Completion(text=text, n_tokens=len(toks), finished=ended or hit)
            bar.update(len(batch))
        bar.close()
        return out  # type: ignore[return-value]

    @torch.no_grad()
    def next_token_probs(self, prompts: list[str], prefixes: list[str],
                         token_ids: list[int]) -> list[list[float]]:
        """Probabilities of ``token_ids`` as the next token after prompt + prefix (one forward
        pass per batch, no sampling). Notebook 04 uses it to read the probability a judge gives
        each verdict right after its own analysis."""
        if len(prefixes) != len(prompts):
            raise ValueError("prefixes must match prompts one to one")
        enc = [self.tok(render_prompt(self.tok, p, self.chat) + x, add_special_tokens=False)["input_ids"]
               for p, x in zip(prompts, prefixes)]
        order = sorted(range(len(enc)), key=lambda i: len(enc[i]))
        out: list[list[float]] = [[] for _ in enc]
        pad, device = self.tok.pad_token_id, self.model.device
        for b in range(0, len(order), self.batch_size):
            batch = order[b:b + self.batch_size]
            width = max(len(enc[i]) for i in batch)
            input_ids = torch.tensor([[pad] * (width - len(enc[i])) + enc[i] for i in batch], device=device)
            attn = torch.tensor([[0] * (width - len(enc[i])) + [1] * len(enc[i]) for i in batch],
                                device=device)
            pos = (attn.cumsum(-1) - 1).clamp(min=0)  # left padding: positions as in generate
            logits = self.model(input_ids=input_ids, attention_mask=attn,
                                position_ids=pos).logits[:, -1].float()
            probs = torch.softmax(logits, -1)[:, token_ids].tolist()
            for i, row in zip(batch, probs):
                out[i] = row
        return out


class VLLMGenerator:
    """The same interface on vLLM (GPU). One request per prompt with ``n`` samples; prefix
    caching is on, so the nested prefixes of one trajectory (rollouts) reuse their KV cache."""

    backend = "vllm"

    def __init__(self, model_path: str, tensor_parallel_size: int = 1, gpu_memory_utilization:
                 float = 0.85, max_model_len: int = 8192, chat: bool = True, seed: int = 0,
                 enable_lora: bool = False):
        try:
            from vllm import LLM
        except ImportError as e:  # pragma: no cover - GPU only
            raise ImportError("the vLLM backend needs the gpu extra: pip install -e '.[gpu]'") from e
        self.llm = LLM(model=model_path, tensor_parallel_size=tensor_parallel_size,
                       gpu_memory_utilization=gpu_memory_utilization, enable_prefix_caching=True,
                       max_model_len=max_model_len, seed=seed, enable_lora=enable_lora)
        self.tok = self.llm.get_tokenizer()
        self.chat = chat

    def generate(self, prompts: list[str], n: int = 1, temperature: float = 1.0,
                 top_p: float = 1.0, max_new_tokens: int = 256, stop: list[str] | None = None,
                 seed: int = 0, prefixes: list[str] | None = None,
                 progress: bool | str = False) -> list[list[Completion]]:  # pragma: no cover
        from vllm import SamplingParams

        prefixes = prefixes or [""] * len(prompts)
        texts = [render_prompt(self.tok, p, self.chat) + x for p, x in zip(prompts, prefixes)]
        params = [SamplingParams(n=n, temperature=temperature, top_p=top_p,
                                 max_tokens=max_new_tokens, stop=list(stop or []),
                                 include_stop_str_in_output=True, seed=seed * 1_000_003 + i)
                  for i in range(len(texts))]
        res = self.llm.generate(texts, params, use_tqdm=bool(progress))
        return [[Completion(text=o.text, n_tokens=len(o.token_ids),
                            finished=o.finish_reason == "stop") for o in r.outputs] for r in res]


def make_generator(model_path: str, backend: str = "hf", adapter: str | None = None,
                   batch_size: int = 128, device: str = "auto", **vllm_kw):
    """A generator for ``backend`` in {"hf", "vllm", "auto"}; "auto" is vLLM when importable."""
    if backend == "auto":
        try:
            import vllm  # noqa: F401

            backend = "vllm"
        except ImportError:
            backend = "hf"
    if backend == "vllm":
        if adapter:
            raise NotImplementedError("merge the LoRA adapter before serving it with vLLM")
        return VLLMGenerator(model_path, **vllm_kw)
    if backend != "hf":
        raise ValueError(f"unknown generation backend {backend!r}; valid: hf, vllm, auto")
    model, tok = load_model(model_path, adapter=adapter, device=device)
    return HFGenerator(model, tok, batch_size=batch_size)


def lora_config(r: int = 16, alpha: int = 32):
    """A PEFT LoRA config on every linear layer of a causal LM (used by SFT and GRPO)."""
    from peft import LoraConfig

    return LoraConfig(r=r, lora_alpha=alpha, target_modules="all-linear", task_type="CAUSAL_LM")


def param_count(model) -> int:
    return sum(p.numel() for p in model.parameters())
