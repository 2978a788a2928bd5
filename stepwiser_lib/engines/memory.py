"""Estimated peak GPU memory of a stage, from the model's shape alone (pure Python, no torch).

``make reproduce PROFILE=colab|paper DRY_RUN=1`` prints, per stage, the estimated peak memory on
the profile's target device and fails when a stage would not fit. The estimators here are pure
functions of a :class:`ModelShape` and the stage's batch settings; each returns a
:class:`Breakdown` (named byte counts), and :func:`fits` compares one with a :class:`GPU`.

* :func:`inference` -- HF ``generate`` / a scoring forward: weights, KV cache, logits, one layer's
  working activations.
* :func:`training` -- weights (fp32 master + half-precision working copy under mixed precision),
  gradients and Adam states of the trainable parameters (all, or LoRA), activations, logits.
* :func:`vllm_reservation` -- vLLM takes a fixed share of the card, whatever the model.
* :func:`grpo_step` -- TRL ``GRPOTrainer``: generation, then training, in one process.

They are estimates of tensors that must be alive at the peak, not of allocator behaviour
(fragmentation, cuBLAS workspaces, the CUDA context are covered by :data:`CUDA_CONTEXT_GIB`
headroom in :class:`GPU`). Sources are cited where a constant is used. Bytes throughout; GiB only
in messages.
"""

from __future__ import annotations

import json
import math
import os
from dataclasses import dataclass, field
from pathlib import Path

GIB = 2**30
FP32 = 4  # bytes; logits are read in fp32, optimizer states and master weights are fp32
KV = 2  # one K and one V tensor per layer in the KV cache

# --------------------------------------------------------------------------------- model shapes


@dataclass(frozen=True)
class ModelShape:
    """The sizes of a Qwen2 / Llama decoder that memory depends on.

    ``head_dim`` defaults to ``hidden_size // num_heads`` (true of every model in
    :data:`KNOWN_MODELS`). ``qkv_bias``: Qwen2 has biases on the q, k and v projections (and none
    on o or the MLP), Llama has none (``attention_bias: false`` in its config).
    """

    vocab_size: int
    hidden_size: int
    num_layers: int
    num_heads: int
    num_kv_heads: int
    intermediate_size: int
    tie_word_embeddings: bool
    qkv_bias: bool = True
    head_dim: int | None = None

    def __post_init__(self):
        if self.head_dim is None:
            object.__setattr__(self, "head_dim", self.hidden_size // self.num_heads)

    @classmethod
    def from_hf_config(cls, cfg: dict) -> ModelShape:
        """From a Hugging Face ``config.json`` dict (Qwen2 or Llama). Qwen2 configs carry no
        ``attention_bias`` key (the bias is hard-wired in ``modeling_qwen2``); Llama's is
        false."""
        cfg = cfg.get("text_config", cfg)
        return cls(
            vocab_size=cfg["vocab_size"],
            hidden_size=cfg["hidden_size"],
            num_layers=cfg["num_hidden_layers"],
            num_heads=cfg["num_attention_heads"],
            num_kv_heads=cfg.get("num_key_value_heads", cfg["num_attention_heads"]),
            intermediate_size=cfg["intermediate_size"],
            tie_word_embeddings=cfg.get("tie_word_embeddings", False),
            qkv_bias=cfg.get("attention_bias", cfg.get("model_type") == "qwen2"),
            head_dim=cfg.get("head_dim"),
        )

    @property
    def q_dim(self) -> int:
        return self.num_heads * self.head_dim

    @property
    def kv_dim(self) -> int:
        return self.num_kv_heads * self.head_dim

    def layer_params(self) -> int:
        """One decoder layer: q/k/v/o projections (+ q/k/v biases), gated MLP (gate, up, down),
        two RMSNorm weight vectors."""
        h, bias = self.hidden_size, self.qkv_bias
        attn = h * self.q_dim + 2 * h * self.kv_dim + self.q_dim * h
        attn += (self.q_dim + 2 * self.kv_dim) if bias else 0
        mlp = 3 * h * self.intermediate_size
        return attn + mlp + 2 * h

    def params(self) -> int:
        """Exact parameter count: embeddings, layers, final norm, lm_head unless tied."""
        emb = self.vocab_size * self.hidden_size
        head = 0 if self.tie_word_embeddings else emb
        return emb + self.num_layers * self.layer_params() + self.hidden_size + head

    def linear_shapes(self) -> list[tuple[int, int]]:
        """``(in, out)`` of the 7 linear layers of one block (q, k, v, o, gate, up, down)."""
        h, i = self.hidden_size, self.intermediate_size
        return [(h, self.q_dim), (h, self.kv_dim), (h, self.kv_dim), (self.q_dim, h), (h, i), (h, i), (i, h)]

    def lora_params(self, rank: int) -> int:
        """LoRA on every linear layer of every block, as PEFT's ``target_modules="all-linear"``
        does (it leaves out the output layer, ``lm_head``): ``rank * (in + out)`` per linear
        (A is ``rank x in``, B is ``out x rank``; PEFT docs, "LoRA")."""
        return self.num_layers * sum(rank * (a + b) for a, b in self.linear_shapes())


#: Shapes from each model's ``config.json`` on the Hugging Face hub.
KNOWN_MODELS: dict[str, ModelShape] = {
    "Qwen/Qwen2.5-0.5B-Instruct": ModelShape(151936, 896, 24, 14, 2, 4864, True),
    "Qwen/Qwen2.5-1.5B-Instruct": ModelShape(151936, 1536, 28, 12, 2, 8960, True),
    "Qwen/Qwen2.5-3B-Instruct": ModelShape(151936, 2048, 36, 16, 2, 11008, True),
    "Qwen/Qwen2.5-7B-Instruct": ModelShape(152064, 3584, 28, 28, 4, 18944, False),
    "meta-llama/Llama-3.1-70B-Instruct": ModelShape(128256, 8192, 80, 64, 8, 28672, False, qkv_bias=False),
    # make smollm2 (the real-smoke profile); its config.json, as converted from the GGUF
    "HuggingFaceTB/SmolLM2-135M-Instruct": ModelShape(49152, 576, 30, 9, 3, 1536, True, qkv_bias=False),
}


def shape_for(name_or_path: str | os.PathLike) -> ModelShape:
    """A local model directory's ``config.json``, else a hub id in :data:`KNOWN_MODELS`."""
    cfg = Path(name_or_path) / "config.json"
    if cfg.is_file():
        return ModelShape.from_hf_config(json.loads(cfg.read_text()))
    if str(name_or_path) in KNOWN_MODELS:
        return KNOWN_MODELS[str(name_or_path)]
    raise KeyError(
        f"no model shape for {str(name_or_path)!r}: not a directory with a config.json "
        f"and not a known id ({', '.join(KNOWN_MODELS)})"
    )


# ---------------------------------------------------------------------------------- devices

#: Headroom for what torch does not see as tensors: the CUDA context and kernels (about 0.3-0.5
#: GiB with torch 2.x), cuBLAS workspaces, allocator fragmentation.
CUDA_CONTEXT_GIB = 0.5


def _host_gib() -> float:
    try:
        return os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") / GIB
    except (ValueError, OSError, AttributeError):  # not POSIX: an arbitrary, documented guess
        return 16.0


@dataclass(frozen=True)
class GPU:
    """One device. ``total_gib``: what ``torch.cuda.mem_get_info`` reports as total (and
    vLLM's ``gpu_memory_utilization`` multiplies); ``usable_gib``: that minus
    :data:`CUDA_CONTEXT_GIB`. ``compute_capability`` is None for the host CPU.

    Precision rule (kept simple): bf16 from compute capability 8.0 (Ampere, the first with bf16
    tensor cores), fp16 below (a T4 is 7.5), fp32 on the CPU (half-precision matmuls are slow or
    missing there, see :func:`stepwiser_lib.engines.models.load_model`).
    """

    name: str
    total_gib: float
    compute_capability: tuple[int, int] | None
    usable_gib: float = field(default=-1.0)

    def __post_init__(self):
        if self.usable_gib < 0:
            reserve = 0.0 if self.is_cpu else CUDA_CONTEXT_GIB
            object.__setattr__(self, "usable_gib", round(self.total_gib - reserve, 2))

    @property
    def is_cpu(self) -> bool:
        return self.compute_capability is None

    @property
    def bf16(self) -> bool:
        return not self.is_cpu and self.compute_capability >= (8, 0)

    @property
    def dtype(self) -> str:
        return "float32" if self.is_cpu else ("bfloat16" if self.bf16 else "float16")

    @property
    def dtype_bytes(self) -> int:
        return FP32 if self.is_cpu else 2

    @property
    def usable_bytes(self) -> int:
        return int(self.usable_gib * GIB)


# Totals as torch reports them ("GPU 0 has a total capacity of ..." in OOM messages): a Colab /
# GCP T4 (15360 MiB in nvidia-smi, ECC on) shows 14.56 GiB with current drivers (14.75 with
# older ones); an A100 80GB shows 79.25 GiB.
T4 = GPU("T4", 14.56, (7, 5))
A100_80GB = GPU("A100_80GB", 79.25, (8, 0))
CPU = GPU("CPU", round(_host_gib(), 1), None)  # host memory; for tests and the CPU profiles


# ------------------------------------------------------------------------------- breakdowns


@dataclass
class Breakdown:
    """Named byte counts of one estimate, with their sum."""

    parts: dict[str, int]
    label: str = ""

    @property
    def total(self) -> int:
        return sum(self.parts.values())

    @property
    def gib(self) -> float:
        return self.total / GIB

    def largest(self) -> str:
        return max(self.parts, key=self.parts.get)

    def describe(self) -> str:
        """``"label: 6.1 GiB = weights 1.8 + kv_cache 0.3 + ... (GiB)"``, parts in GiB."""
        terms = " + ".join(f"{k} {v / GIB:.2f}" for k, v in self.parts.items() if v)
        head = f"{self.label}: " if self.label else ""
        return f"{head}{self.gib:.1f} GiB = {terms or '0'} (GiB)"

    def __add__(self, other: Breakdown) -> Breakdown:
        parts = dict(self.parts)
        for k, v in other.parts.items():
            parts[k] = parts.get(k, 0) + v
        return Breakdown(parts, " + ".join(x for x in (self.label, other.label) if x))


def fits(breakdown: Breakdown, gpu: GPU) -> tuple[bool, str]:
    """``(ok, "needs 21.3 GiB of 14.1 GiB on T4 (largest: logits 12.0 GiB)")``."""
    big = breakdown.largest() if breakdown.parts else "-"
    msg = (
        f"needs {breakdown.gib:.1f} GiB of {gpu.usable_gib:.1f} GiB on {gpu.name} "
        f"(largest: {big} {breakdown.parts.get(big, 0) / GIB:.1f} GiB)"
    )
    return breakdown.total <= gpu.usable_bytes, msg


# -------------------------------------------------------------------------------- inference

#: Hidden-sized tensors alive at once in one attention block's forward without grad: the
#: residual stream, the normed input, q and the attention output (k, v are smaller under GQA).
INFER_ATTN_LIVE = 4
#: Intermediate-sized tensors alive at once in the gated MLP: act(gate), up and their product
#: (``down(act(gate(x)) * up(x))``; the pre-activation gate is freed once act() returns).
INFER_MLP_LIVE = 3


def kv_cache_bytes(shape: ModelShape, dtype_bytes: int, batch: int, tokens: int, tensor_parallel: int = 1) -> int:
    """``2 (K,V) x layers x kv_heads x head_dim x tokens x batch x bytes``. Under tensor
    parallelism each device keeps ``ceil(kv_heads / tp)`` heads (vLLM replicates KV heads when
    there are fewer than devices)."""
    heads = math.ceil(shape.num_kv_heads / tensor_parallel)
    return KV * shape.num_layers * heads * shape.head_dim * tokens * batch * dtype_bytes


#: fp32 ``batch x vocab`` copies of the last position's logits alive in one ``generate`` step
#: (measured on CPU, transformers 5.19): greedy keeps the model's output, the fp32
#: ``next_token_logits`` copy and the processed scores (3); sampling adds the temperature-scaled
#: scores and the softmax probabilities fed to ``multinomial`` (5).
GENERATE_LOGITS_COPIES = {False: 3, True: 5}


def logits_bytes(shape: ModelShape, batch: int, positions: int) -> int:
    """``batch x positions x vocab x 4``: logits are read in fp32 (``generate`` copies the last
    position to fp32; ``ForCausalLMLoss`` and most scoring code call ``.float()``)."""
    return batch * positions * shape.vocab_size * FP32


def tp_problem(shape: ModelShape, tensor_parallel: int) -> str | None:
    """Why vLLM refuses an engine of this model at this tensor parallelism, or None. vLLM 0.32
    (``config/model.py``, ``verify_with_parallel_config``) requires the attention heads to divide
    by it, and its QKV layer (``model_executor/layers/linear.py``) splits the key/value heads
    evenly, or replicates them when there are fewer heads than devices (then the devices must
    divide evenly among them). Qwen2.5-1.5B's 12 heads refuse TP 8."""
    tp, h, kv = tensor_parallel, shape.num_heads, shape.num_kv_heads
    if h % tp:
        return f"vLLM refuses tensor parallelism {tp}: the model's {h} attention heads do not divide by it"
    if kv % tp if tp <= kv else tp % kv:
        return f"vLLM refuses tensor parallelism {tp}: the model's {kv} key/value heads cannot be split over it"
    return None


def inference(
    shape: ModelShape,
    dtype_bytes: int,
    batch: int,
    prompt_len: int,
    new_tokens: int,
    logits_positions: int = 1,
    *,
    tensor_parallel: int = 1,
    attention_scores: bool = False,
    sampling: bool = True,
    sdpa_math: bool = False,
    gqa_repeat: bool = False,
) -> Breakdown:
    """Peak of a forward / ``generate`` without grad, per device.

    * weights: ``params x bytes / tp``.
    * kv_cache: :func:`kv_cache_bytes` at ``prompt_len + new_tokens``.
    * logits: :func:`logits_bytes`; ``logits_positions`` is 1 when only the last position is
      computed (``generate`` passes ``logits_to_keep=1``), ``prompt_len`` when the full
      sequence's logits are built (``model(ids).logits[:, -1]``: the bug this estimate exposes).
      Not divided by tp (vLLM gathers the logits on one rank). When ``new_tokens > 0`` each
      decoding step adds :data:`GENERATE_LOGITS_COPIES` - 1 more fp32 last-position copies
      (``sampling``: temperature or top-p warpers active; at T = 1 with top_p = 1, as the
      project samples, generate keeps the greedy count).
    * activations: one layer's prefill, ``batch x prompt x max(4 h, 3 I / tp) x bytes``
      (:data:`INFER_ATTN_LIVE`, :data:`INFER_MLP_LIVE`); decode steps see one token and less.
    * attention_mask: the boolean ``batch x prompt x prompt`` causal mask SDPA gets for a
      padded batch at prefill, 1 byte per entry (decode steps get one row).
    * attention_scores (only with ``attention_scores=True``, the eager / math kernel; the
      memory-efficient and flash SDPA kernels never build them): ``batch x heads x prompt^2`` in
      the compute dtype plus their fp32 softmax (``softmax(..., dtype=float32)`` in
      ``modeling_qwen2.eager_attention_forward``).
    * sdpa_math (only with ``sdpa_math=True``): SDPA's math kernel, which torch 2.13 alone offers
      on CUDA for grouped-query attention with a mask; it keeps the scores and their softmax in
      fp32 whatever the input dtype, ``batch x heads x prompt^2 x 8`` bytes at prefill
      (measured: 23.5 GiB for colab's first GRPO validation). The sampling loop
      no longer asks for it (:func:`stepwiser_lib.engines.decoding.gqa_in_kernel`).
    * repeated_kv (only with ``gqa_repeat=True``): one layer's keys and values repeated per query
      group for the memory-efficient kernel, ``2 x batch x heads x (prompt + new) x head_dim``.
    """
    tp = tensor_parallel
    seq = prompt_len + new_tokens
    width = max(INFER_ATTN_LIVE * shape.hidden_size, INFER_MLP_LIVE * shape.intermediate_size // tp)
    parts = {
        "weights": shape.params() * dtype_bytes // tp,
        "kv_cache": kv_cache_bytes(shape, dtype_bytes, batch, seq, tp),
        "logits": logits_bytes(shape, batch, logits_positions)
        + (logits_bytes(shape, batch, 1) * (GENERATE_LOGITS_COPIES[sampling] - 1) if new_tokens else 0),
        "activations": batch * prompt_len * width * dtype_bytes,
        "attention_mask": batch * prompt_len * prompt_len,
    }
    heads = math.ceil(shape.num_heads / tp)
    if attention_scores:
        parts["attention_scores"] = batch * heads * prompt_len**2 * (dtype_bytes + FP32)
    if sdpa_math:
        parts["sdpa_math_scores"] = batch * heads * prompt_len**2 * 2 * FP32
    if gqa_repeat and shape.num_heads > shape.num_kv_heads:
        parts["repeated_kv"] = KV * batch * heads * seq * shape.head_dim * dtype_bytes
    return Breakdown(parts, f"inference b={batch} s={prompt_len}+{new_tokens} tp={tp}")


# --------------------------------------------------------------------------------- training

OPTIMIZER_STATES = {"adamw": 2, "adam": 2, "sgd": 0}  # Adam: first and second moments per param

#: TRL's fused LM head (``trl.trainer.utils.add_fused_lm_head``, used by TRL 1.16's SFTTrainer
#: and GRPOTrainer) projects in tiles of ``TOKEN_CHUNK_SIZE x _CHUNKED_LOGPROB_CHUNK_SIZE``
#: (4096 tokens x 32768 vocabulary entries) and never builds the full logits.
FUSED_TILE_TOKENS = 4096
FUSED_TILE_VOCAB = 32768
#: Tile-sized fp32 temporaries of its torch fallback on CPU (``_backward_tile`` keeps the fp32
#: tile, ``z``, ``log_p``, ``p``, the zero grad, the target mask and the products of the grad
#: formula alive together; measured 8.5-10 tiles, TRL 1.16); on CUDA the Triton kernel folds a
#: tile in place, so only the projection buffer (compute dtype) is counted there.
FUSED_CPU_TEMPS = 9
#: Full logits in a plain ``model(..., labels=...)`` loss: in the backward of ``cross_entropy``
#: the fp32 log-softmax output (saved for backward), the dense gradient nll_loss hands it and the
#: logits' gradient are alive together (3; measured 2.96 on CPU). A caller that keeps
#: ``outputs.logits`` through backward holds a fourth (and, in half precision, the pre-``.float()``
#: logits too).
FULL_LOGITS_COPIES = 3


def layer_activation_bytes(shape: ModelShape, dtype_bytes: int, seq_len: int, attention_scores: bool = False) -> int:
    """Bytes saved for backward per token by one decoder layer, without checkpointing.

    Korthikanti et al. 2022, "Reducing Activation Recomputation in Large Transformer Models"
    (arXiv 2205.05198, sec. 4.1) count ``s b h (34 + 5 a s / h)`` bytes per GPT layer at 16-bit
    activations with dropout. Adapted to Qwen2 / Llama (no dropout: ``attention_dropout`` is 0
    and TRL disables dropout; RMSNorm; GQA; SwiGLU MLP), with ``p = dtype_bytes``:

    * two RMSNorms each keep their input upcast to fp32 (``4 h``, ``Qwen2RMSNorm``) and the
      normalised half-precision tensor (``p h``);
    * attention: normed input for q/k/v (``p h``), q and k after RoPE and v (``p (h + 2 kv)``),
      the SDPA output and its contiguous copy fed to o_proj (``2 p h``);
    * MLP: normed input (``p h``), gate, up, act(gate) and their product (``4 p I``) -- the
      GeLU MLP's ``19 h`` of Korthikanti becomes ``2 h + 4 I`` elements here;
    * with ``attention_scores`` (eager / math attention): ``a s`` per token for the fp32 softmax
      output plus its cast to ``p`` (Korthikanti's ``5 a s`` at p=2 is softmax output, dropout
      mask and dropout output; no dropout here). Flash / memory-efficient SDPA keep only q, k,
      v, output and a logsumexp (``Dao et al. 2022``), already counted.

    Total: ``8 h + p (7 h + 2 kv + 4 I)`` (+ ``a s (4 + p)``), bytes per token per layer. At
    fp32 (p = 4) the upcasts are no-ops but the same tensors exist, so the formula holds.
    """
    h, i, kv = shape.hidden_size, shape.intermediate_size, shape.kv_dim
    per_token = 2 * FP32 * h + dtype_bytes * (7 * h + 2 * kv + 4 * i)
    if attention_scores:
        per_token += shape.num_heads * seq_len * (FP32 + (dtype_bytes if dtype_bytes < FP32 else 0))
    return per_token


def _fused_head_bytes(shape: ModelShape, dtype_bytes: int, tokens: int) -> int:
    tile = min(tokens, FUSED_TILE_TOKENS) * min(shape.vocab_size, FUSED_TILE_VOCAB)
    # Triton on GPU: one projection buffer in the compute dtype; CPU fallback: fp32 temporaries
    # (this module's rule: half precision means a CUDA device, fp32 means the CPU).
    return tile * (dtype_bytes if dtype_bytes < FP32 else FUSED_CPU_TEMPS * FP32)


def _shard(nbytes: int, world_size: int, sharded: bool) -> int:
    return nbytes // world_size if sharded else nbytes


def training(
    shape: ModelShape,
    *,
    lora_rank: int | None,
    micro_batch: int,
    seq_len: int,
    gradient_checkpointing: bool,
    master_fp32: bool,
    optimizer: str = "adamw",
    dtype_bytes: int = 2,
    fused_lm_head: bool = False,
    logits_positions: int | None = None,
    attention_scores: bool = False,
    zero_stage: int = 0,
    world_size: int = 1,
) -> Breakdown:
    """Peak of one training micro-step (forward + backward + optimizer step), per device.

    Precision: ``master_fp32=True`` is the model loaded in fp32 and run under autocast (HF
    Trainer / accelerate ``fp16`` or ``bf16`` mixed precision; :func:`stepwiser_lib.method.judge_train.
    train_grpo_judge` loads fp32): every weight is stored in fp32, grads and Adam states are
    fp32, and autocast caches a ``dtype_bytes`` copy of each *trainable* weight for the whole
    forward (frozen weights are cast per op and freed). ``master_fp32=False`` is pure half
    precision (weights, grads and torch's AdamW states all in ``dtype_bytes``).

    * weights: all parameters at 4 (master_fp32) or ``dtype_bytes``, plus the half-precision
      working copy of the trainable ones under mixed precision.
    * gradients, optimizer: trainable parameters only (all, or :meth:`ModelShape.lora_params`),
      Adam's 2 states (:data:`OPTIMIZER_STATES`).
    * activations: without checkpointing, :func:`layer_activation_bytes` x layers x tokens;
      with (HF ``gradient_checkpointing``, one checkpoint per decoder layer), only each layer's
      input (``h`` x 4 bytes under autocast, whose residual stream is fp32, else ``p``) plus one
      layer's full activations while it is recomputed. Plus the final norm and lm_head input
      (``(4 + p) h`` per token). LoRA adds ``rank``-wide tensors (ignored): the frozen layers
      still save their inputs, for the adapters' A matmuls.
    * logits: full, ``micro_batch x logits_positions x vocab x 4 x`` :data:`FULL_LOGITS_COPIES`;
      fused (TRL's fused LM head): :data:`FUSED_TILE_TOKENS` x :data:`FUSED_TILE_VOCAB` tiles.
    * ZeRO (Rajbhandari et al. 2020, arXiv 1910.02054): stage >= 1 shards the optimizer states
      and, under mixed precision, the fp32 master copy over ``world_size``; >= 2 the gradients;
      3 the weights.
    """
    if optimizer not in OPTIMIZER_STATES:
        raise ValueError(f"optimizer {optimizer!r} unknown; known: {', '.join(OPTIMIZER_STATES)}")
    n_all = shape.params()
    n_train = n_all if lora_rank is None else shape.lora_params(lora_rank)
    n_frozen = 0 if lora_rank is None else n_all  # LoRA: the whole base is frozen
    mixed = master_fp32 and dtype_bytes < FP32
    store = FP32 if master_fp32 else dtype_bytes
    ws = world_size
    tokens = micro_batch * seq_len
    h, p = shape.hidden_size, dtype_bytes

    full_layer = layer_activation_bytes(shape, p, seq_len, attention_scores) * tokens
    if gradient_checkpointing:
        resid = FP32 if master_fp32 else p
        acts = shape.num_layers * tokens * h * resid + full_layer
    else:
        acts = shape.num_layers * full_layer
    acts += tokens * h * (FP32 + p)  # final RMSNorm input (fp32) and lm_head input
    positions = seq_len if logits_positions is None else logits_positions
    if fused_lm_head:
        # TRL scores only the kept positions on a Triton device; its CPU fallback scores every
        # position of the sequence (``add_fused_lm_head``: "every position is scored instead")
        logits = _fused_head_bytes(shape, p, micro_batch * (positions if p < FP32 else seq_len))
    else:
        logits = logits_bytes(shape, micro_batch, positions) * FULL_LOGITS_COPIES

    parts = {
        "weights": _shard(n_frozen * store + (0 if mixed else n_train * store), ws, zero_stage >= 3),
        "master_fp32": _shard(n_train * FP32, ws, zero_stage >= 1) if mixed else 0,
        "working_copy": _shard(n_train * p, ws, zero_stage >= 3) if mixed else 0,
        "gradients": _shard(n_train * store, ws, zero_stage >= 2),
        "optimizer": _shard(n_train * OPTIMIZER_STATES[optimizer] * store, ws, zero_stage >= 1),
        "activations": acts,
        "logits": logits,
    }
    what = "full" if lora_rank is None else f"LoRA r={lora_rank}"
    ckpt = "+ckpt" if gradient_checkpointing else ""
    return Breakdown(parts, f"training {what} mb={micro_batch} s={seq_len}{ckpt}")


# ------------------------------------------------------------------------------------ vLLM


def vllm_reservation(gpu: GPU, gpu_memory_utilization: float) -> Breakdown:
    """vLLM pre-allocates ``gpu_memory_utilization x total`` memory of the card (weights,
    activations, then as many KV-cache blocks as fit), whatever the model's size (vLLM docs,
    ``EngineArgs.gpu_memory_utilization``)."""
    if not 0 < gpu_memory_utilization <= 1:
        raise ValueError(f"gpu_memory_utilization must be in (0, 1], not {gpu_memory_utilization}")
    return Breakdown(
        {"vllm_reservation": int(gpu_memory_utilization * gpu.total_gib * GIB)},
        f"vLLM {gpu_memory_utilization:.2f} x {gpu.name}",
    )


# ------------------------------------------------------------------------------------ GRPO


def grpo_micro_batch(prompts_per_step: int, group_size: int, world_size: int, steps_per_generation: int) -> int:
    """Completions per device per optimizer update: ``prompts x group / (world x
    steps_per_generation)``, where ``steps_per_generation`` counts the updates made from one
    generation batch (the profiles' ``UPDATES_PER_STEP``; TRL's own ``steps_per_generation``
    counts passes, i.e. this times the gradient-accumulation steps). TRL:
    ``generation_batch_size = per_device_train_batch_size x num_processes x
    steps_per_generation``."""
    total, split = prompts_per_step * group_size, world_size * steps_per_generation
    if total % split:
        raise ValueError(
            f"{prompts_per_step} prompts x {group_size} completions = {total} do not "
            f"divide into {world_size} devices x {steps_per_generation} steps per "
            "generation"
        )
    return total // split


def grpo_phases(
    shape: ModelShape,
    *,
    lora_rank: int | None,
    prompts_per_step: int,
    group_size: int,
    world_size: int,
    steps_per_generation: int,
    prompt_len: int,
    completion_len: int,
    gradient_checkpointing: bool,
    master_fp32: bool,
    reference_model: bool,
    dtype_bytes: int = 2,
    fused_lm_head: bool = True,
    zero_stage: int = 0,
    pass_batch: int | None = None,
    vllm_gpu_memory_utilization: float | None = None,
    gpu: GPU | None = None,
) -> dict[str, Breakdown]:
    """The two peaks of a TRL ``GRPOTrainer`` step on one device: ``{"generation", "training"}``.

    Generation (HF ``generate``, before training in the same process) runs the whole per-device
    generation batch, ``prompts x group / world`` completions, at once
    (``GRPOTrainer._prepare_inputs``); the weights and the optimizer states persist across it,
    the gradients do not (``zero_grad(set_to_none=True)``). KV cache in ``dtype_bytes``: the
    K/V projections run under autocast. With ``vllm_gpu_memory_utilization`` (TRL's colocated
    vLLM, needs ``gpu``) generation is vLLM's reservation instead, and it stays allocated
    through training (no sleep mode).

    Training is :func:`training` on ``pass_batch`` completions per forward/backward pass
    (gradient accumulation; default: the whole :func:`grpo_micro_batch`, which it must divide)
    at ``prompt_len + completion_len``, with logits for the completion only (TRL's
    ``logits_to_keep``) through TRL's fused LM head (``fused_lm_head=True``: ``GRPOTrainer``
    always calls ``model(..., fused_lm_head=True)``).

    Reference model (``reference_model=True``, i.e. beta > 0): with LoRA it is the base with the
    adapter disabled (TRL creates no ``ref_model`` for a PEFT model), so no extra weights; with
    full fine-tuning TRL loads a second copy in the policy's dtype (fp32 when
    ``master_fp32``), sharded only under ZeRO-3. The reference / old-policy log-prob forwards
    run without grad, on micro-batch chunks, and stay below the training peak (not counted).
    """
    per_update = grpo_micro_batch(prompts_per_step, group_size, world_size, steps_per_generation)
    mb = per_update if pass_batch is None else pass_batch
    if mb <= 0 or per_update % mb:
        raise ValueError(f"pass_batch {pass_batch} does not divide the {per_update} completions per device per update")
    seq = prompt_len + completion_len
    train = training(
        shape,
        lora_rank=lora_rank,
        micro_batch=mb,
        seq_len=seq,
        gradient_checkpointing=gradient_checkpointing,
        master_fp32=master_fp32,
        dtype_bytes=dtype_bytes,
        fused_lm_head=fused_lm_head,
        logits_positions=completion_len,
        zero_stage=zero_stage,
        world_size=world_size,
    )
    ref = 0
    if reference_model and lora_rank is None:
        ref = _shard(shape.params() * (FP32 if master_fp32 else dtype_bytes), world_size, zero_stage >= 3)
    train.parts["reference_model"] = ref
    keep = ("weights", "master_fp32", "working_copy", "optimizer", "reference_model")
    persistent = {k: train.parts[k] for k in keep}
    gen_batch = per_update * steps_per_generation
    if vllm_gpu_memory_utilization is not None:
        if gpu is None:
            raise ValueError("colocated vLLM needs the gpu its share is taken of")
        vllm = vllm_reservation(gpu, vllm_gpu_memory_utilization).total
        train.parts["vllm_reservation"] = vllm
        gen_parts = {**persistent, "vllm_reservation": vllm}
    else:
        gen = inference(shape, dtype_bytes, gen_batch, prompt_len, completion_len, 1)
        gen_parts = {**persistent, **{k: v for k, v in gen.parts.items() if k != "weights"}}
    return {
        "generation": Breakdown(gen_parts, f"GRPO generation b={gen_batch}"),
        "training": Breakdown(train.parts, f"GRPO training mb={mb} s={seq}"),
    }


def grpo_step(
    shape: ModelShape,
    *,
    lora_rank: int | None,
    prompts_per_step: int,
    group_size: int,
    world_size: int,
    steps_per_generation: int,
    prompt_len: int,
    completion_len: int,
    gradient_checkpointing: bool,
    master_fp32: bool,
    reference_model: bool,
    dtype_bytes: int = 2,
    fused_lm_head: bool = True,
    zero_stage: int = 0,
    pass_batch: int | None = None,
    vllm_gpu_memory_utilization: float | None = None,
    gpu: GPU | None = None,
) -> Breakdown:
    """The larger of :func:`grpo_phases`' generation and training peaks (its label says which)."""
    phases = grpo_phases(
        shape,
        lora_rank=lora_rank,
        prompts_per_step=prompts_per_step,
        group_size=group_size,
        world_size=world_size,
        steps_per_generation=steps_per_generation,
        prompt_len=prompt_len,
        completion_len=completion_len,
        gradient_checkpointing=gradient_checkpointing,
        master_fp32=master_fp32,
        reference_model=reference_model,
        dtype_bytes=dtype_bytes,
        fused_lm_head=fused_lm_head,
        zero_stage=zero_stage,
        pass_batch=pass_batch,
        vllm_gpu_memory_utilization=vllm_gpu_memory_utilization,
        gpu=gpu,
    )
    return max(phases.values(), key=lambda b: b.total)
