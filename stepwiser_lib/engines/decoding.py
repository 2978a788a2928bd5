"""A sampling loop that does not idle: shared prefixes, finished rows leave, new rows come in.

``model.generate`` on a batch keeps decoding every row until the longest one ends, prefills the
same prompt once per sample, and its step cost is that of the whole batch to the end. On 2 CPU
cores that made batching all of a shard's rollouts *slower* than one ``generate`` call per
prefix (``results/bench/labelling.json``). This loop, over the model's own forward pass and its
``DynamicCache``:

* **prefills each prompt once** and copies its cache to its ``n`` samples;
* **drops finished rows** from the batch at once (their cache rows go with them);
* **admits new prompts** as slots free up (continuous batching): their caches are left-padded to
  the live cache's length and joined on the batch axis, so the per-step cost follows the live rows;
* trims the left padding every row shares, so attention does not read columns nobody needs.

It samples from the same distribution as ``generate`` with ``do_sample=True, top_k=0`` (softmax
of logits / temperature, optional nucleus ``top_p``; greedy when ``temperature == 0``); a test
compares success rates of many rollouts of one prefix between the two within a binomial
interval. It is deterministic for a fixed ``seed`` and the same inputs and ``batch_size`` (one
``torch.Generator``, rows drawn in a fixed order), but it does not reproduce ``generate``'s tokens:
the random streams differ. With ``seeds`` (one per prompt) every sample draws from a generator of
its own, so what one prompt samples does not depend on which other prompts share the batch
(common random numbers: chunk-reset's arms, :mod:`stepwiser_lib.method.chunk_reset`).
"""

from __future__ import annotations

import contextlib
from dataclasses import dataclass, field

import torch


@dataclass
class _Row:
    prompt: int
    sample: int
    tokens: list[int] = field(default_factory=list)
    finished: bool = False  # ended by an end token or a stop
    done: bool = False  # finished or at max_new_tokens: decodes idle until the batch is compacted
    gen: torch.Generator | None = None  # this sample's own random stream (``seeds``), else the shared one


#: The multiplier that spreads a prompt's seed over its samples (an odd prime, so that on the CPU,
#: where torch's generator keeps only the low 32 bits of a seed, distinct samples of one prompt
#: still get distinct seeds).
SAMPLE_STRIDE = 1_000_003


def sample_seed(prompt_seed: int, sample: int) -> int:
    """The seed of sample ``sample`` of a prompt whose seed is ``prompt_seed``: every (prompt,
    sample) pair has a random stream of its own, the same on both backends (the HF loop's
    per-sample generators, vLLM's per-request seeds). Reduced to 63 bits, as both accept."""
    return (int(prompt_seed) * SAMPLE_STRIDE + int(sample)) % 2**63


def prompt_seed(call_seed: int, index: int) -> int:
    """The seed of prompt ``index`` of a call seeded ``call_seed`` (vLLM, where no per-prompt
    seeds are given: it has no shared generator whose draws would not depend on scheduling)."""
    return sample_seed(call_seed, index)


#: Overrides the half-precision type on a GPU (issue 48; read by ``models.half_dtype``):
#: ``float32`` where a model overflows in fp16 on a T4 (its activations pass 65,504; sampling then
#: stops with ``FloatingPointError``), ``bfloat16`` or ``float16`` to choose one.
ENV_DTYPE = "STEPWISER_DTYPE"


def non_finite_message(logits) -> str:
    """What to do about non-finite logits (rows of one forward), for every place that reads them."""
    bad = int((~torch.isfinite(logits)).any(-1).sum())
    return (
        f"{bad} of {logits.shape[0]} rows have non-finite logits ({logits.dtype}): a half-precision overflow "
        f"(Qwen2 in fp16 on a T4 is a known case); run with {ENV_DTYPE}=float32 (or bfloat16 on a GPU that has it)"
    )


#: The attention the loop runs with: transformers' SDPA path, except that on the CPU grouped-query
#: attention is left to the kernel (``enable_gqa``) instead of copying every key/value head per
#: query group at every step. transformers does that only without a padding mask; with one (always,
#: here) ``repeat_kv`` was 30% of the loop's time on the toy model, and the CPU kernel is 7x faster
#: at a 128-row decode step (measured; LAB_LOG.md). The numbers are the same.
ATTENTION = "stepwiser_sdpa_gqa"


def gqa_in_kernel(device_type: str, masked: bool) -> bool:
    """Whether SDPA gets grouped-query attention itself (``enable_gqa=True``) or the key/value
    heads repeated per group. transformers' rule (``sdpa_attention.use_gqa_in_sdpa``): on CUDA only
    without a mask, because torch 2.13 serves masked GQA there with the math kernel alone, whose
    fp32 score matrix is O(batch x heads x L^2) (measured:
    +23.5 GiB at colab's first GRPO validation). The CPU kernel takes both, and faster."""
    return device_type == "cpu" or not masked


def _sdpa_gqa(module, query, key, value, attention_mask, dropout=0.0, scaling=None, is_causal=None, **kwargs):
    groups = getattr(module, "num_key_value_groups", 1)
    causal = query.shape[2] > 1 and attention_mask is None and getattr(module, "is_causal", True)
    mask = (
        attention_mask[:, :, :, : key.shape[-2]]
        if attention_mask is not None and attention_mask.dim() == 4
        else attention_mask
    )
    if query.dtype != key.dtype:  # a half-precision cache (sample's ``half``): RoPE left q in fp32
        query = query.to(key.dtype)
    in_kernel = groups > 1 and gqa_in_kernel(query.device.type, mask is not None)
    if groups > 1 and not in_kernel and query.shape[2] == 1 and (mask is None or mask.shape[1] == 1):
        # A decode step (one query per row) on CUDA with a padding mask: the G query heads of a
        # key/value head become G query rows of that head, (B, Hkv, G, d), and the row's mask
        # broadcasts over them. No copy of the cache (repeating it moved (1 + 2G) x the cache per
        # layer and step, 13x for Qwen2.5-1.5B: issue 48) and no math kernel; the same numbers.
        b, h, _, d = query.shape
        out = torch.nn.functional.scaled_dot_product_attention(
            query.reshape(b, key.shape[1], groups, d), key, value, attn_mask=mask, dropout_p=0.0, scale=scaling
        )
        return out.reshape(b, h, 1, d).transpose(1, 2).contiguous(), None
    if groups > 1 and not in_kernel:
        key, value = key.repeat_interleave(groups, dim=1), value.repeat_interleave(groups, dim=1)
    out = torch.nn.functional.scaled_dot_product_attention(
        query, key, value, attn_mask=mask, dropout_p=0.0, scale=scaling, is_causal=causal, enable_gqa=in_kernel
    )
    return out.transpose(1, 2).contiguous(), None


def _register() -> None:
    from transformers import AttentionInterface
    from transformers.masking_utils import AttentionMaskInterface, sdpa_mask

    AttentionInterface.register(ATTENTION, _sdpa_gqa)
    AttentionMaskInterface.register(ATTENTION, sdpa_mask)


class _attention:
    """Run ``model`` with :data:`ATTENTION` inside the block (sdpa models only; others unchanged)."""

    def __init__(self, model):
        self.config = model.config
        self.old = getattr(self.config, "_attn_implementation", None)

    def __enter__(self):
        if self.old == "sdpa":
            _register()
            self.config._attn_implementation = ATTENTION

    def __exit__(self, *exc):
        if self.old == "sdpa":
            self.config._attn_implementation = self.old


GROW = 64  # cache columns allocated at a time


def _grow_layer_class():
    from transformers.cache_utils import DynamicLayer

    class GrowLayer(DynamicLayer):
        """A cache layer with room to grow: a decode step writes its column into spare capacity
        instead of ``torch.cat``-ing a new copy of the whole cache (26% of the loop's time)."""

        def __init__(self, keys: torch.Tensor, values: torch.Tensor):
            super().__init__()
            self.is_initialized, self.dtype, self.device = True, keys.dtype, keys.device
            self.set(keys, values)

        def set(self, keys: torch.Tensor, values: torch.Tensor) -> None:
            b, h, t, d = keys.shape
            self._k, self._v = keys.new_empty(b, h, t + GROW, d), values.new_empty(b, h, t + GROW, values.shape[-1])
            self._k[:, :, :t], self._v[:, :, :t] = keys, values
            self._n = t
            self.keys, self.values = self._k[:, :, :t], self._v[:, :, :t]

        def update(self, key_states, value_states, *args, **kwargs):
            n = key_states.shape[-2]
            if self._n + n > self._k.shape[2]:
                self.set(self.keys, self.values)  # fresh capacity (one copy per GROW steps)
            self._k[:, :, self._n : self._n + n], self._v[:, :, self._n : self._n + n] = key_states, value_states
            self._n += n
            self.keys, self.values = self._k[:, :, : self._n], self._v[:, :, : self._n]
            return self.keys, self.values

    return GrowLayer


def _pad_left(t: torch.Tensor, width: int, dim: int) -> torch.Tensor:
    """``t`` with zeros prepended along ``dim`` up to ``width``."""
    extra = width - t.shape[dim]
    if extra <= 0:
        return t
    shape = list(t.shape)
    shape[dim] = extra
    return torch.cat([t.new_zeros(shape), t], dim=dim)


class _Batch:
    """The live rows: their cache (one tensor pair per layer), mask, next positions and last tokens."""

    def __init__(self):
        self.cache = None  # transformers DynamicCache
        self.mask = None  # [B, T] long, 0 on left padding
        self.pos = None  # [B] next position id of each row
        self.last = None  # [B] last token (the next input)
        self.rows: list[_Row] = []

    def __len__(self) -> int:
        return len(self.rows)

    def join(self, cache, mask, pos, last, rows) -> None:
        """Add rows (their own cache, left-padded) to the batch, padding whichever side is shorter."""
        if self.cache is None:
            self.cache, self.mask, self.pos, self.last, self.rows = cache, mask, pos, last, list(rows)
            return
        width = max(self.mask.shape[1], mask.shape[1])
        for mine, theirs in zip(self.cache.layers, cache.layers):
            mine.set(
                torch.cat([_pad_left(mine.keys, width, 2), _pad_left(theirs.keys, width, 2)], 0),
                torch.cat([_pad_left(mine.values, width, 2), _pad_left(theirs.values, width, 2)], 0),
            )
        self.mask = torch.cat([_pad_left(self.mask, width, 1), _pad_left(mask, width, 1)], 0)
        self.pos = torch.cat([self.pos, pos])
        self.last = torch.cat([self.last, last])
        self.rows += list(rows)

    def keep(self, idx: list[int]) -> None:
        """Keep only rows ``idx`` (finished rows leave), then trim shared left padding."""
        if len(idx) == len(self.rows):
            return
        if not idx:
            self.cache = self.mask = self.pos = self.last = None
            self.rows = []
            return
        sel = torch.tensor(idx, device=self.mask.device)
        self.mask, self.pos, self.last = self.mask.index_select(0, sel), self.pos[sel], self.last[sel]
        self.rows = [self.rows[i] for i in idx]
        lead = int((self.mask.cumsum(1) == 0).sum(1).min())  # padding columns every row has
        for layer in self.cache.layers:
            layer.set(layer.keys.index_select(0, sel)[:, :, lead:], layer.values.index_select(0, sel)[:, :, lead:])
        self.mask = self.mask[:, lead:]


def _choose(
    logits: torch.Tensor, temperature: float, top_p: float, gen: torch.Generator | list[torch.Generator]
) -> torch.Tensor:
    """Next tokens for each row: greedy at temperature 0, else a draw from softmax(logits / T),
    restricted to the nucleus ``top_p`` when it is below 1. ``gen``: one generator for the batch,
    or one per row (each row's draw then depends on its own stream only). Non-finite logits are
    an error: greedy decoding would pick token 0 for NaN without a word (the "!!!!" of Qwen2 run
    in fp16 on a T4, whose activations overflow)."""
    if not torch.isfinite(logits).all():
        raise FloatingPointError(non_finite_message(logits))
    if temperature <= 0:
        return logits.argmax(-1)
    probs = torch.softmax(logits.float() / temperature, -1)
    if top_p < 1.0:
        sp, si = probs.sort(-1, descending=True)
        drop = sp.cumsum(-1) - sp >= top_p  # keep the smallest set whose mass reaches top_p
        sp = sp.masked_fill(drop, 0.0)
        probs = torch.zeros_like(probs).scatter(-1, si, sp)
    if isinstance(gen, list):
        return torch.stack([torch.multinomial(p, 1, generator=g)[0] for p, g in zip(probs, gen)])
    return torch.multinomial(probs, 1, generator=gen).squeeze(-1)


def sample(model, prompts: list[list[int]], n: int, half: torch.dtype | None = None, **kw) -> list[list[_Row]]:
    """``n`` samples of each token-id prompt (see :func:`_sample` for the arguments).

    ``half``: a model kept in fp32 (a trainer's master weights: GRPO's group sampling and its
    validation) is run under autocast in this dtype, and its KV cache is kept in it. Without it,
    RoPE promotes the keys to fp32 and the cache's first tensor sets the values' dtype too: twice
    the memory the plan assumes (measured: a 43.7 GiB cache at the paper profile's validation)."""
    device = next(model.parameters()).device
    ctx = torch.autocast(device.type, dtype=half) if half is not None else contextlib.nullcontext()
    with _attention(model), ctx:
        return _sample(model, prompts, n, cache_dtype=half, **kw)


@torch.no_grad()
def _sample(
    model,
    prompts: list[list[int]],
    n: int,
    *,
    max_new_tokens: int | list[int],
    temperature: float = 1.0,
    top_p: float = 1.0,
    eos: list[int],
    seed: int = 0,
    batch_size: int = 128,
    stop_check=None,
    on_done=None,
    seeds: list[int] | None = None,
    cache_dtype: torch.dtype | None = None,
) -> list[list[_Row]]:
    """``n`` samples of each token-id prompt: ``out[i][j].tokens`` (up to and including an end
    token) and ``.finished``. ``stop_check(tokens) -> bool`` ends a row early (stop strings);
    ``on_done(k)`` reports progress (rows finished). At most ``batch_size`` rows decode at once;
    a prompt's samples join the batch together when there is room (one prefill, shared).
    ``seeds`` (one per prompt): sample ``j`` of prompt ``i`` draws from its own generator seeded
    :func:`sample_seed` ``(seeds[i], j)`` instead of the batch's shared one (seeded ``seed``).
    ``max_new_tokens``: one limit for every prompt, or one per prompt (each at least 1)."""
    from transformers import DynamicCache

    device = next(model.parameters()).device
    # generators live on the model's device: torch refuses a CPU generator for CUDA probabilities
    gen = torch.Generator(device=device).manual_seed(int(seed))
    eos = set(eos)
    limit = [max_new_tokens] * len(prompts) if isinstance(max_new_tokens, int) else list(max_new_tokens)
    if len(limit) != len(prompts) or min(limit, default=1) < 1:
        raise ValueError(f"max_new_tokens: one limit of at least 1 per prompt, got {max_new_tokens!r}")
    if seeds is not None and len(seeds) != len(prompts):
        raise ValueError(f"seeds: {len(seeds)} for {len(prompts)} prompts; want one per prompt")
    out = [
        [
            _Row(
                i,
                j,
                gen=None if seeds is None else torch.Generator(device=device).manual_seed(sample_seed(seeds[i], j)),
            )
            for j in range(n)
        ]
        for i in range(len(prompts))
    ]
    # admission units: (prompt, its samples), at most batch_size samples each; longest prompts first
    units = [(i, list(range(s, min(s + batch_size, n)))) for i in range(len(prompts)) for s in range(0, n, batch_size)]
    units.sort(key=lambda u: (-len(prompts[u[0]]), u[0], u[1][0]))
    live, nxt = _Batch(), 0
    while nxt < len(units) or len(live):
        # admit whole units while they fit, prefilled together
        take = []
        room = batch_size - len(live)
        while nxt < len(units) and len(units[nxt][1]) <= room:
            take.append(units[nxt])
            room -= len(units[nxt][1])
            nxt += 1
        if take:
            seqs = [prompts[i] for i, _ in take]
            width = max(map(len, seqs))
            ids = torch.tensor([[0] * (width - len(s)) + s for s in seqs], device=device)
            mask = torch.tensor([[0] * (width - len(s)) + [1] * len(s) for s in seqs], device=device)
            pos = (mask.cumsum(-1) - 1).clamp(min=0)
            cache = DynamicCache()
            logits = model(
                input_ids=ids,
                attention_mask=mask,
                position_ids=pos,
                past_key_values=cache,
                use_cache=True,
                logits_to_keep=1,
            ).logits[:, -1]
            reps = torch.tensor([len(js) for _, js in take], device=device)  # each prompt's cache to its samples
            sel = torch.repeat_interleave(torch.arange(len(take), device=device), reps)
            grow = _grow_layer_class()
            cache.layers = [
                grow(
                    layer.keys.index_select(0, sel).to(cache_dtype or layer.keys.dtype),
                    layer.values.index_select(0, sel).to(cache_dtype or layer.values.dtype),
                )
                for layer in cache.layers
            ]
            rows = [out[i][j] for i, js in take for j in js]
            first = _choose(
                logits.index_select(0, sel), temperature, top_p, gen if seeds is None else [r.gen for r in rows]
            )
            lengths = torch.tensor([len(prompts[i]) for i, js in take for _ in js], device=device)
            live.join(cache, mask.index_select(0, sel), lengths, first, rows)
            for r, t in zip(rows, first.tolist()):
                r.tokens.append(t)
        # which rows are done after their last token
        newly = 0
        for r in live.rows:
            if r.done:
                continue
            if r.tokens[-1] in eos or (stop_check is not None and stop_check(r.tokens)):
                r.finished = True
            if r.finished or len(r.tokens) >= limit[r.prompt]:
                r.done = True
                newly += 1
        if on_done and newly:
            on_done(newly)
        # Compact (a copy of the whole cache) only when it pays: when enough rows are done to
        # admit the next prompt, or a quarter of the batch is; done rows decode idle till then.
        # Small units (n = 1 to 4: judge calls, adaptive rounds) would otherwise compact every
        # few steps, so admission waits for an eighth of the batch to be done.
        dead = sum(r.done for r in live.rows)
        need = len(units[nxt][1]) - (batch_size - len(live)) if nxt < len(units) else None
        if need is not None:
            need = max(need, batch_size // 8)
        if dead and (dead == len(live) or dead * 4 >= len(live) or (need is not None and dead >= need)):
            live.keep([k for k, r in enumerate(live.rows) if not r.done])
            continue  # admit before the next step
        # one decode step for every row in the batch
        step_mask = torch.cat([live.mask, live.mask.new_ones(len(live), 1)], 1)
        logits = model(
            input_ids=live.last[:, None],
            attention_mask=step_mask,
            position_ids=live.pos[:, None],
            past_key_values=live.cache,
            use_cache=True,
        ).logits[:, -1]
        live.mask = step_mask
        live.pos = live.pos + 1
        live.last = _choose(logits, temperature, top_p, gen if seeds is None else [r.gen for r in live.rows])
        for r, t in zip(live.rows, live.last.tolist()):
            if not r.done:
                r.tokens.append(t)
    return out
