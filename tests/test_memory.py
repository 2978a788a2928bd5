"""Unit tests of the peak-memory estimator: literal, hand-computed numbers; no torch."""

import json
import subprocess
import sys

import pytest

from stepwiser_lib.engines import memory as m

GIB = 2**30
QWEN_05B = m.KNOWN_MODELS["Qwen/Qwen2.5-0.5B-Instruct"]
QWEN_15B = m.KNOWN_MODELS["Qwen/Qwen2.5-1.5B-Instruct"]
LLAMA_70B = m.KNOWN_MODELS["meta-llama/Llama-3.1-70B-Instruct"]
# h 8, 2 heads of 4, 1 KV head (kv_dim 4), MLP 16, vocab 10: every count below by hand
TINY = m.ModelShape(
    vocab_size=10,
    hidden_size=8,
    num_layers=1,
    num_heads=2,
    num_kv_heads=1,
    intermediate_size=16,
    tie_word_embeddings=True,
)


@pytest.mark.parametrize(
    "name, published",
    [
        ("Qwen/Qwen2.5-0.5B-Instruct", 494_032_768),
        ("Qwen/Qwen2.5-1.5B-Instruct", 1_543_714_304),
        ("Qwen/Qwen2.5-3B-Instruct", 3_085_938_688),
        ("Qwen/Qwen2.5-7B-Instruct", 7_615_616_512),
        ("meta-llama/Llama-3.1-70B-Instruct", 70_553_706_496),
    ],
)
def test_params_match_the_hub(name, published):
    assert m.shape_for(name).params() == published


def test_tiny_params_and_lora_by_hand():
    # embeddings 10*8 = 80; q 8*8+8 = 72, k 8*4+4 = 36, v 36, o 8*8 = 64; MLP 3*8*16 = 384;
    # norms 2*8 = 16 -> layer 608; final norm 8; tied lm_head -> 696
    assert TINY.params() == 80 + 608 + 8
    untied = m.ModelShape(10, 8, 1, 2, 1, 16, tie_word_embeddings=False, qkv_bias=False)
    assert untied.params() == 80 + (608 - 16) + 8 + 80  # no q/k/v biases, own lm_head
    # rank 2 x (in + out): q 2*16, k 2*12, v 2*12, o 2*16, gate 2*24, up 2*24, down 2*24
    assert TINY.lora_params(2) == 32 + 24 + 24 + 32 + 48 + 48 + 48 == 256
    two = m.ModelShape(10, 8, 2, 2, 1, 16, True)
    assert two.lora_params(2) == 512


def test_from_hf_config_and_shape_for(tmp_path):
    qwen = {
        "model_type": "qwen2",
        "vocab_size": 151936,
        "hidden_size": 896,
        "num_hidden_layers": 24,
        "num_attention_heads": 14,
        "num_key_value_heads": 2,
        "intermediate_size": 4864,
        "tie_word_embeddings": True,
    }
    assert m.ModelShape.from_hf_config(qwen) == QWEN_05B  # Qwen2: q/k/v bias implied
    llama = {**qwen, "model_type": "llama", "attention_bias": False, "head_dim": 64}
    assert m.ModelShape.from_hf_config(llama).qkv_bias is False
    (tmp_path / "config.json").write_text(json.dumps(qwen))
    assert m.shape_for(tmp_path) == QWEN_05B  # a local directory wins
    with pytest.raises(KeyError, match="Qwen/Qwen2.5-7B-Instruct"):
        m.shape_for("someone/unknown-model")


def test_kv_cache_by_hand():
    # 28 layers x 2 KV heads x 128 head dim x 2 (K, V) x 2 bytes (bf16) x 1000 tokens
    assert m.kv_cache_bytes(QWEN_15B, 2, batch=1, tokens=1000) == 28_672_000
    b = m.inference(QWEN_15B, 2, batch=1, prompt_len=600, new_tokens=400)
    assert b.parts["kv_cache"] == 28_672_000


def test_full_position_logits_are_the_bug():
    full = m.inference(QWEN_15B, 2, batch=128, prompt_len=1500, new_tokens=0, logits_positions=1500).parts["logits"]
    last = m.inference(QWEN_15B, 2, batch=128, prompt_len=1500, new_tokens=0, logits_positions=1).parts["logits"]
    assert full == 128 * 1500 * 151_936 * 4 == 116_686_848_000  # 108.7 GiB
    assert full >= 100 * GIB and last < 0.1 * GIB


def test_grpo_micro_batch():
    assert m.grpo_micro_batch(1024, 4, world_size=8, steps_per_generation=4) == 128  # paper
    assert m.grpo_micro_batch(16, 4, world_size=1, steps_per_generation=1) == 64  # colab
    with pytest.raises(ValueError, match="do not divide"):
        m.grpo_micro_batch(10, 3, world_size=8, steps_per_generation=1)
    with pytest.raises(ValueError, match="pass_batch"):
        m.grpo_step(
            QWEN_05B,
            lora_rank=16,
            prompts_per_step=16,
            group_size=4,
            world_size=1,
            steps_per_generation=1,
            prompt_len=100,
            completion_len=100,
            gradient_checkpointing=True,
            master_fp32=True,
            reference_model=True,
            pass_batch=5,
        )


def test_gpu_targets_and_fits_message():
    assert (m.T4.bf16, m.T4.dtype, m.T4.dtype_bytes) == (False, "float16", 2)
    assert (m.A100_80GB.bf16, m.A100_80GB.dtype) == (True, "bfloat16")
    assert (m.CPU.is_cpu, m.CPU.dtype_bytes) == (True, 4)
    assert m.T4.usable_gib == pytest.approx(m.T4.total_gib - m.CUDA_CONTEXT_GIB)
    ok, msg = m.fits(m.Breakdown({"weights": 20 * GIB, "logits": 1 * GIB}), m.T4)
    assert not ok and msg.startswith(f"needs 21.0 GiB of {m.T4.usable_gib:.1f} GiB on T4")
    assert "largest: weights" in msg


def test_breakdown():
    b = m.Breakdown({"weights": GIB, "kv_cache": GIB // 2}, "x")
    assert b.total == GIB + GIB // 2 and b.describe().startswith("x: 1.5 GiB = weights 1.00")
    assert (b + b).parts == {"weights": 2 * GIB, "kv_cache": GIB}


def test_qwen_05b_training_on_a_t4():
    full = m.training(
        QWEN_05B, lora_rank=None, micro_batch=8, seq_len=1024, gradient_checkpointing=False, master_fp32=True
    )
    assert not m.fits(full, m.T4)[0]
    # fp32 master weights, fp16 working copy, fp32 grads and 2 fp32 Adam states: 18 bytes/param
    states = sum(full.parts[k] for k in ("master_fp32", "working_copy", "gradients", "optimizer"))
    assert states == 18 * 494_032_768
    lora = m.training(
        QWEN_05B, lora_rank=16, micro_batch=2, seq_len=1024, gradient_checkpointing=True, master_fp32=True
    )
    assert m.fits(lora, m.T4)[0]
    assert lora.parts["weights"] == 4 * 494_032_768  # the frozen base stays fp32 (loaded so)
    assert lora.parts["optimizer"] == 8 * QWEN_05B.lora_params(16)


def test_checkpointing_and_fused_head_shrink_training():
    kw = dict(lora_rank=16, micro_batch=4, seq_len=2048, master_fp32=True)
    plain = m.training(QWEN_05B, gradient_checkpointing=False, **kw)
    ckpt = m.training(QWEN_05B, gradient_checkpointing=True, **kw)
    fused = m.training(QWEN_05B, gradient_checkpointing=True, fused_lm_head=True, **kw)
    assert ckpt.parts["activations"] < plain.parts["activations"] / 5
    assert fused.parts["logits"] < ckpt.parts["logits"] / 10


def test_zero_sharding():
    kw = dict(lora_rank=None, micro_batch=1, seq_len=128, gradient_checkpointing=True, master_fp32=True, world_size=8)
    z0, z2 = m.training(QWEN_15B, **kw), m.training(QWEN_15B, zero_stage=2, **kw)
    for part in ("master_fp32", "gradients", "optimizer"):
        assert z2.parts[part] == z0.parts[part] // 8
    assert z2.parts["working_copy"] == z0.parts["working_copy"]  # ZeRO-2 replicates weights


def test_70b_teacher_needs_tensor_parallelism():
    one = m.inference(LLAMA_70B, 2, batch=1, prompt_len=4096, new_tokens=4096)
    tp8 = m.inference(LLAMA_70B, 2, batch=1, prompt_len=4096, new_tokens=4096, tensor_parallel=8)
    assert not m.fits(one, m.A100_80GB)[0] and m.fits(tp8, m.A100_80GB)[0]
    assert tp8.parts["weights"] == 70_553_706_496 * 2 // 8
    assert tp8.parts["kv_cache"] == one.parts["kv_cache"] // 8  # 8 KV heads, one per device


def test_vllm_reservation():
    assert m.vllm_reservation(m.A100_80GB, 0.3).total == int(0.3 * 79.25 * GIB)
    with pytest.raises(ValueError):
        m.vllm_reservation(m.T4, 1.5)


def test_grpo_step_phases_and_reference_model():
    kw = dict(
        prompts_per_step=16,
        group_size=4,
        world_size=1,
        steps_per_generation=1,
        prompt_len=1000,
        completion_len=500,
        gradient_checkpointing=True,
        master_fp32=True,
        pass_batch=4,
    )
    lora = m.grpo_phases(QWEN_05B, lora_rank=16, reference_model=True, **kw)
    assert lora["training"].parts["reference_model"] == 0  # adapter disabled = the reference
    full = m.grpo_phases(QWEN_05B, lora_rank=None, reference_model=True, **kw)
    assert full["training"].parts["reference_model"] == 4 * 494_032_768  # fp32 second copy
    assert "gradients" not in full["generation"].parts  # freed before generation
    assert full["generation"].parts["kv_cache"] == m.kv_cache_bytes(QWEN_05B, 2, 64, 1500)
    step = m.grpo_step(QWEN_05B, lora_rank=None, reference_model=True, **kw)
    assert step.total == max(b.total for b in full.values())
    vllm = m.grpo_phases(
        QWEN_05B, lora_rank=None, reference_model=False, **kw, vllm_gpu_memory_utilization=0.3, gpu=m.T4
    )
    assert vllm["training"].parts["vllm_reservation"] == int(0.3 * m.T4.total_gib * GIB)


def test_module_does_not_import_torch():
    code = "import sys, stepwiser_lib.engines.memory; print('torch' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"
