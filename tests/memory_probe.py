"""One stage's peak host memory on the Qwen2 stand-in against stepwiser_lib.engines.memory's estimate.

Run as ``python tests/memory_probe.py CASE [CASE ...]``: one ``PROBE <json>`` line per case, in one process
(the peak is reset before each case, so peaks do not mix). Protocol: ``MALLOC_MMAP_THRESHOLD_=65536`` (else glibc keeps freed
buffers and peaks read high), and the peak is read from ``VmHWM`` after resetting it
(``/proc/self/clear_refs``) once the libraries, and for inference a warm-up call, have loaded
their code pages, which are host-only and not tensors."""

import gc
import json
import os
import sys

import torch

from stepwiser_lib.core import paths
from stepwiser_lib.engines import checkpoints, models
from stepwiser_lib.engines import memory as m

torch.set_num_threads(2)


def status(key: str) -> int:
    return next(int(x.split()[1]) * 1024 for x in open("/proc/self/status") if x.startswith(key + ":"))


def reset_peak() -> None:
    open("/proc/self/clear_refs", "w").write("5")


def main(case: str) -> dict:
    d = checkpoints.resolve_model(paths.STANDIN_MODEL)
    shape = m.shape_for(d)
    tok = models.load_tokenizer(d)
    problem = "Solve: " + "a + b = c. " * 40
    if case in ("generate", "score"):
        anon0 = status("RssAnon")
        model, tok = models.load_model(d)
        gen = models.HFGenerator(model, tok, batch_size=16)
        weights = status("RssAnon") - anon0
        run = (
            (lambda ps: gen.generate(ps, n=1, temperature=1.0, max_new_tokens=24, seed=0))
            if case == "generate"
            else (lambda ps: gen.next_token_probs(ps, [""] * len(ps), [10, 11]))
        )
        run(["warm up"] * 2)  # loads the kernels' code pages before the peak is reset
        gc.collect()
        start = status("VmRSS")
        reset_peak()
        run([problem] * 16)
        measured = status("VmHWM") - start + weights
        n = len(tok(models.render_prompt(tok, problem), add_special_tokens=False)["input_ids"])
        # T = 1 and top_p = 1 add no logits warper: generate keeps the greedy number of copies
        est = m.inference(shape, 4, 16, n, 24 if case == "generate" else 0, 1, sampling=False)
    else:
        start = status("VmRSS")
        reset_peak()
        if case == "sft":
            from stepwiser_lib.engines.sft import sft
            from stepwiser_lib.engines.trainers import SFTSettings

            recs = [{"prompt": problem, "completion": "x = 1. " * 60} for _ in range(4)]
            r = sft(
                d,
                recs,
                os.environ["PROBE_OUT"] + "/sft",
                SFTSettings(
                    max_steps=1,
                    global_batch=4,
                    micro_batch=2,
                    max_length=1024,
                    use_lora=True,
                    gradient_checkpointing=True,
                ),
                progress=False,
            )
            n = r["lengths"]["longest"]
            est = m.training(
                shape,
                lora_rank=16,
                micro_batch=2,
                seq_len=n,
                gradient_checkpointing=True,
                master_fp32=True,
                dtype_bytes=4,
                fused_lm_head=True,
            )
        else:  # grpo
            from stepwiser_lib.core.prompts import judge_prompt
            from stepwiser_lib.engines.trainers import GRPOSettings
            from stepwiser_lib.method.judge_train import train_grpo_judge

            ex = [{"problem": problem, "history": [], "chunk": "x = 1", "label": i % 2 == 0} for i in range(4)]
            s = GRPOSettings(
                steps=1,
                prompts_per_step=2,
                group_size=2,
                max_completion=16,
                eval_every=0,
                beta=0.04,
                gradient_checkpointing=True,
                lr=1e-5,
            )
            train_grpo_judge(d, ex, os.environ["PROBE_OUT"] + "/grpo", s, family="paper", progress=False)
            n = len(
                tok(models.render_prompt(tok, judge_prompt("paper", problem, [], "x = 1")), add_special_tokens=False)[
                    "input_ids"
                ]
            )
            est = m.grpo_step(
                shape,
                lora_rank=16,
                prompts_per_step=2,
                group_size=2,
                world_size=1,
                steps_per_generation=1,
                prompt_len=n,
                completion_len=16,
                gradient_checkpointing=True,
                master_fp32=True,
                reference_model=True,
                dtype_bytes=4,
            )
        measured = status("VmHWM") - start
    return {
        "case": case,
        "tokens": n,
        "measured_mib": round(measured / 2**20, 1),
        "estimated_mib": round(est.total / 2**20, 1),
        "ratio": round(est.total / measured, 3),
        "estimate": est.describe(),
    }


if __name__ == "__main__":
    for c in sys.argv[1:]:
        print("PROBE", json.dumps(main(c)), flush=True)
        gc.collect()
