"""``make gpu-check``'s probes (issue 48): what a first lent GPU should settle about the real
path, each in seconds, written to one JSON of what held.

The CPU cannot show these, because each depends on a CUDA kernel, a GPU's dtype or a device count:

* ``attention``: a masked decode step under CUDA's rule reads the cache as grouped query rows
  (no copy of the key/value heads) and equals the repeated-heads attention; both are timed at
  Qwen2.5-1.5B's attention shape, 64 rows of 4,096 tokens;
* ``sampling_loop``: the project's sampling loop on a random-weight grouped-query Qwen2 with padded
  prompts, every SDPA call recorded: decode steps get the cache's own heads;
* ``half_precision``: the dtype ``models.precision`` picks for this GPU (bf16 from compute capability
  8, fp16 below it: the T4) and 64 sampled tokens in it with finite logits. Random weights do not
  show a real model's fp16 overflow, which needs Qwen2.5 weights (not on a machine without the hub);
* ``workers``: ``make workers`` places one worker per GPU when ``CUDA_VISIBLE_DEVICES`` is unset:
  each child process sees a different device (by its UUID);
* ``reward``: ``StepwiserReward`` with a judge loaded on the GPU scores completions;
* ``vllm_seeds``: vLLM's per-request seeds against none, timed (where vllm is installed);
* ``trl_colocate``: two GRPO steps on TRL's colocated vLLM engine, and whether the engine then
  serves the trained weights (where trl, vllm and datasets are installed; on a GPU only).

Each probe returns ``{"held": true | false | null, "detail": ..., "seconds": ...}``; ``null`` means
not run here. On a CPU (``--cpu``, the tests) the probes run their code paths with CUDA's rule
simulated, so a probe that cannot run is found before a GPU is lent, not on it.

    python -m stepwiser_lib.tools.gpuprobe [--out FILE] [--cpu]
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from contextlib import contextmanager
from pathlib import Path

import torch

from ..core import paths
from ..core.io import atomic_write_text
from ..engines import decoding
from ..engines.models import precision, vllm_engine_kwargs
from ..method.judge import Judge
from ..method.reward import StepwiserReward
from .workers import visible_gpus


@contextmanager
def cuda_rule(device: str):
    """On a CPU, the attention follows CUDA's grouped-query rule inside the block (the tests); on
    CUDA it is the rule already."""
    real = decoding.gqa_in_kernel
    if device == "cpu":
        decoding.gqa_in_kernel = lambda device_type, masked: not masked
    try:
        yield
    finally:
        decoding.gqa_in_kernel = real


def random_qwen2(device: str, dtype, layers: int = 2, hidden: int = 256, heads: int = 8, kv: int = 2, vocab: int = 512):
    """A small random-weight Qwen2 with grouped-query attention (``heads`` / ``kv`` groups)."""
    from transformers import Qwen2Config, Qwen2ForCausalLM

    torch.manual_seed(0)
    cfg = Qwen2Config(
        vocab_size=vocab,
        hidden_size=hidden,
        intermediate_size=2 * hidden,
        num_hidden_layers=layers,
        num_attention_heads=heads,
        num_key_value_heads=kv,
        max_position_embeddings=4096,
    )
    return Qwen2ForCausalLM(cfg).to(device=device, dtype=dtype).eval()


def _timed(fn, reps: int, device: str) -> float:
    fn()  # warm-up
    if device == "cuda":
        torch.cuda.synchronize()
    t0 = time.perf_counter()
    for _ in range(reps):
        fn()
    if device == "cuda":
        torch.cuda.synchronize()
    return (time.perf_counter() - t0) / reps * 1000


def probe_attention(device: str, small: bool = False) -> dict:
    b, length, kv, groups, d = (4, 64, 2, 6, 16) if small else (64, 4096, 2, 6, 128)  # Qwen2.5-1.5B: 12 q / 2 kv heads
    dtype = torch.float32 if device == "cpu" else torch.float16
    g = torch.Generator(device=device).manual_seed(0)
    q = torch.randn(b, kv * groups, 1, d, device=device, dtype=dtype, generator=g)
    k = torch.randn(b, kv, length, d, device=device, dtype=dtype, generator=g)
    v = torch.randn(b, kv, length, d, device=device, dtype=dtype, generator=g)
    mask = torch.ones(b, 1, 1, length, dtype=torch.bool, device=device)
    mask[: b // 2, ..., : length // 4] = False  # left padding in half the rows
    module = type("M", (), {"num_key_value_groups": groups, "is_causal": True})()

    def grouped():
        with cuda_rule(device):
            return decoding._sdpa_gqa(module, q, k, v, mask)[0]

    def repeated():
        out = torch.nn.functional.scaled_dot_product_attention(
            q, k.repeat_interleave(groups, 1), v.repeat_interleave(groups, 1), attn_mask=mask
        )
        return out.transpose(1, 2)

    same = torch.allclose(grouped().float(), repeated().float(), atol=2e-3 if dtype == torch.float16 else 1e-5)
    t_grouped, t_repeat = _timed(grouped, 5 if small else 20, device), _timed(repeated, 5 if small else 20, device)
    return {
        "held": bool(same and (small or t_grouped <= t_repeat)),
        "detail": f"one masked decode step, B={b}, L={length}, {kv} kv x {groups} groups, d={d}: equal outputs "
        f"{same}; grouped view {t_grouped:.2f} ms, repeated heads {t_repeat:.2f} ms",
        "grouped_ms": round(t_grouped, 3),
        "repeated_ms": round(t_repeat, 3),
    }


def probe_sampling_loop(device: str) -> dict:
    model = random_qwen2(device, torch.float32)
    heads, kv = model.config.num_attention_heads, model.config.num_key_value_heads
    calls, sdpa = [], torch.nn.functional.scaled_dot_product_attention

    def record(q, k_, v_, attn_mask=None, enable_gqa=False, **a):
        calls.append((k_.shape[1], q.shape[2], attn_mask is not None, enable_gqa))
        return sdpa(q, k_, v_, attn_mask=attn_mask, enable_gqa=enable_gqa, **a)

    seqs = [[5, 6, 7, 8, 9, 10, 11], [12, 13]]  # different lengths: a padding mask at every step
    torch.nn.functional.scaled_dot_product_attention = record
    try:
        with cuda_rule(device):
            decoding.sample(model, seqs, 2, max_new_tokens=8, temperature=0.0, eos=[], batch_size=4)
    finally:
        torch.nn.functional.scaled_dot_product_attention = sdpa
    decode = [c for c in calls if c[0] == kv]
    masked_gqa = [c for c in calls if c[2] and c[3]]
    held = bool(decode) and not masked_gqa and all(c[0] in (kv, heads) for c in calls)
    return {
        "held": held,
        "detail": f"{len(calls)} SDPA calls: {len(decode)} decode steps on the cache's {kv} heads (no copy), "
        f"{len(calls) - len(decode)} with {heads} repeated heads (prefill); masked calls asking the kernel for "
        f"GQA: {len(masked_gqa)}",
    }


def probe_half_precision(device: str) -> dict:
    prec = precision(device)
    cap = list(torch.cuda.get_device_capability()) if device == "cuda" else None
    want = None if cap is None else ("bfloat16" if cap[0] >= 8 else "float16")
    dtype = getattr(torch, prec["inference"])
    model = random_qwen2(device, dtype)
    try:
        out = decoding.sample(model, [[5, 6, 7], [8, 9]], 1, max_new_tokens=64, temperature=1.0, eos=[], batch_size=2)
        finite, why = True, f"{sum(len(r.tokens) for s in out for r in s)} tokens sampled"
    except FloatingPointError as e:
        finite, why = False, str(e)
    return {
        "held": finite and (want is None or prec["inference"] == want),
        "detail": f"compute capability {cap}: inference in {prec['inference']} (want {want}), training "
        f"bf16={prec['bf16']} fp16={prec['fp16']}; {why} (random weights: a real model's fp16 overflow "
        "needs its weights)",
    }


def probe_workers(device: str) -> dict:
    env = {k: v for k, v in os.environ.items() if k != "CUDA_VISIBLE_DEVICES"}  # an ordinary box: unset
    saved = os.environ.pop("CUDA_VISIBLE_DEVICES", None)
    try:
        gpus = visible_gpus()
    finally:
        if saved is not None:
            os.environ["CUDA_VISIBLE_DEVICES"] = saved
    if device != "cuda":
        return {"held": None, "detail": f"no CUDA device here (workers would get: {gpus or 'a share of the cores'})"}
    seen = []
    code = "import torch; print(torch.cuda.device_count(), torch.cuda.get_device_properties(0).uuid)"
    for g in gpus[:2]:
        out = subprocess.run(
            [sys.executable, "-c", code], env={**env, "CUDA_VISIBLE_DEVICES": g}, capture_output=True, text=True
        )
        seen.append(out.stdout.strip() or out.stderr.strip()[-200:])
    distinct = len({s.split()[-1] for s in seen}) == len(seen)
    return {
        "held": distinct and all(s.startswith("1 ") for s in seen),
        "detail": f"{len(gpus)} GPU(s) counted; each worker sees (count, uuid): {seen}"
        + ("" if len(gpus) > 1 else " (one GPU lent: a second worker cannot be shown)"),
    }


def probe_reward(device: str) -> dict:
    judge = Judge.load(str(paths.ROOT / "data" / "toy_base"), batch_size=8)
    where = str(next(judge.gen.model.parameters()).device)
    reward = StepwiserReward(judge, aggregate="mean")
    got = reward(
        completions=["a = 2\n\nb = a + 3 = 5\n\nThe answer is \\boxed{5}", "b = 7"],
        problem=["a = 2. b = a + 3. Find b.", "a = 2. b = a + 3. Find b."],
    )
    # None: a completion the judge could not judge at all (the toy base writes no verdict on some)
    ok = len(got) == 2 and all(x is None or isinstance(x, float) and 0.0 <= x <= 1.0 for x in got)
    return {
        "held": ok and where.startswith(device),
        "detail": f"the toy base as a judge on {where}: rewards {got}",
    }


def _missing(*modules: str) -> dict | None:
    import importlib.util

    gone = [m for m in modules if importlib.util.find_spec(m) is None]
    return (
        {"held": None, "detail": f"not installed here: {', '.join(gone)} (carry the wheels to run it)"}
        if gone
        else None
    )


def save_random_model(folder: Path) -> None:
    """A random-weight Qwen2 with the toy base's tokenizer (committed), for engines that load a
    folder: no hub, no tokenizer package."""
    from transformers import AutoTokenizer

    tok = AutoTokenizer.from_pretrained(paths.ROOT / "data" / "toy_base")
    random_qwen2("cpu", torch.float32, vocab=len(tok)).save_pretrained(folder)
    tok.save_pretrained(folder)


def probe_vllm_seeds(device: str) -> dict:
    """N11: every request seeded (per-sample streams, models.VLLMGenerator) makes vLLM's sampler
    loop over the running requests in Python at each decode step; timed against unseeded ones."""
    if gone := _missing("vllm"):
        return gone
    import tempfile

    from vllm import LLM, SamplingParams

    cpu = device == "cpu"
    n, new = (16, 8) if cpu else (512, 64)
    with tempfile.TemporaryDirectory() as d:
        save_random_model(Path(d))
        llm = LLM(**vllm_engine_kwargs(d, 1, 0.3, 256, 0, 1.0 if cpu else 0.0, True, cpu=cpu))
        prompts = [{"prompt_token_ids": [3 + i % 20, 4, 5]} for i in range(n)]

        def go(seeded: bool) -> float:
            params = [
                SamplingParams(max_tokens=new, temperature=1.0, ignore_eos=True, seed=i if seeded else None)
                for i in range(n)
            ]
            t0 = time.perf_counter()
            llm.generate(prompts, params, use_tqdm=False)
            return time.perf_counter() - t0

        go(False)  # warm-up
        plain, seeded = go(False), go(True)
        core = getattr(getattr(llm, "llm_engine", None), "engine_core", None)
        if core is not None and hasattr(core, "shutdown"):
            core.shutdown()
    return {
        "held": True,
        "detail": f"{n} requests x {new} tokens: unseeded {plain:.2f} s, each seeded {seeded:.2f} s "
        f"({100 * (seeded / plain - 1):+.0f}%)",
        "unseeded_s": round(plain, 3),
        "seeded_s": round(seeded, 3),
    }


def probe_trl_colocate(device: str) -> dict:
    """S5: two GRPO steps with TRL's colocated vLLM engine (the paper path, ``GRPO_VLLM``), then
    the engine's weights: TRL copies the trained weights into the engine before it samples again
    (on the CPU build vLLM repacks linear weights at load, so that copy cannot work there; the
    question is the GPU's)."""
    if gone := _missing("trl", "vllm", "datasets"):
        return gone
    if device == "cpu":
        return {"held": None, "detail": "the CPU build of vLLM repacks weights at load: TRL's sync is a GPU question"}
    import tempfile

    from datasets import Dataset
    from trl import GRPOConfig, GRPOTrainer

    with tempfile.TemporaryDirectory() as d:
        save_random_model(Path(d) / "m")
        args = GRPOConfig(
            output_dir=str(Path(d) / "out"),
            max_steps=2,
            per_device_train_batch_size=4,
            num_generations=4,
            max_completion_length=16,
            learning_rate=1e-2,  # large, so the weights visibly move
            use_vllm=True,
            vllm_mode="colocate",
            vllm_gpu_memory_utilization=0.3,
            report_to=[],
            logging_steps=1,
        )
        ds = Dataset.from_list([{"prompt": f"a = {i}. Find a."} for i in range(8)])
        trainer = GRPOTrainer(
            model=str(Path(d) / "m"),
            reward_funcs=lambda completions, **kw: [float(len(c)) for c in completions],
            args=args,
            train_dataset=ds,
        )
        trainer.train()
        trained = next(p for n, p in trainer.model.named_parameters() if n.endswith("embed_tokens.weight"))
        engine = trainer.vllm_generation.llm if hasattr(trainer, "vllm_generation") else trainer.llm
        served = dict(engine.llm_engine.model_executor.driver_worker.model_runner.model.named_parameters())
        key = next(k for k in served if k.endswith("embed_tokens.weight"))
        same = torch.allclose(served[key].float().cpu(), trained.detach().float().cpu(), atol=1e-2)
    return {"held": bool(same), "detail": f"after 2 GRPO steps on the colocated engine, {key} served = trained: {same}"}


PROBES = {
    "attention": probe_attention,
    "sampling_loop": probe_sampling_loop,
    "half_precision": probe_half_precision,
    "workers": probe_workers,
    "reward": probe_reward,
    "vllm_seeds": probe_vllm_seeds,
    "trl_colocate": probe_trl_colocate,
}


def run(out: Path | None = None, cpu: bool = False) -> dict:
    device = "cuda" if torch.cuda.is_available() and not cpu else "cpu"
    report = {"device": torch.cuda.get_device_name() if device == "cuda" else "cpu", "torch": torch.__version__}
    probes = {}
    for name, fn in PROBES.items():
        t0 = time.time()
        try:
            res = fn(device, small=True) if (name == "attention" and device == "cpu") else fn(device)
        except Exception as e:  # noqa: BLE001 - a probe that breaks is a finding, recorded, not a stop
            res = {"held": False, "detail": f"raised {type(e).__name__}: {e}"}
        res["seconds"] = round(time.time() - t0, 2)
        probes[name] = res
        print(f"[gpu-probe] {name:15s} {str(res['held']):5s} {res['detail']}", flush=True)
    report["probes"] = probes
    out = Path(out or paths.run_dir("gpu-check") / "gpu_probes.json")
    out.parent.mkdir(parents=True, exist_ok=True)
    atomic_write_text(out, json.dumps(report, indent=1) + "\n")
    print(f"[gpu-probe] wrote {out}", flush=True)
    return report


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description="the real path's GPU-only questions, one JSON of what held")
    ap.add_argument("--out", default=None)
    ap.add_argument("--cpu", action="store_true", help="run on the CPU with CUDA's rule simulated (tests)")
    a = ap.parse_args(argv)
    run(Path(a.out) if a.out else None, a.cpu)


if __name__ == "__main__":
    main()
