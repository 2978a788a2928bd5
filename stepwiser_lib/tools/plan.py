"""Dry-run plan of a profile: what ``make reproduce PROFILE=P`` would do, without running it.

``make reproduce PROFILE=paper DRY_RUN=1`` (``python -m stepwiser_lib.tools.runner --profile paper
--dry-run``) validates every config (as the runner does), resolves model ids and dataset names
without downloading anything, and prints the stages in order with their models, data sizes,
sequences to generate, training steps and an **estimate** of A100-hours.

The estimate is scaled from the paper's own reported costs (paper §4.1): Monte-Carlo annotation
of the 7B-chunk policy took about 14 days on 8 A100 for about 3.46 M steps x M = 16 rollouts,
and judge RL took about 5 days on 8 A100 for 800 steps x 1024 prompts x 4 samples (7B). Cost is
taken as proportional to the number of sequences and to model size (a rough rule: decoding cost
grows about linearly with parameters at these sizes), and the adaptive-rollout fraction measured
by ``make bench`` is applied when ``ADAPTIVE`` is on. It is an order-of-magnitude guide, not a
measurement.
"""

from __future__ import annotations

import json
import os
import re
from pathlib import Path

from ..core.config import ConfigError
from ..core.paths import ROOT, model_complete
from ..core.vocab import RL_KINDS, parse_variant
from ..engines import memory, standin
from ..engines.launch import ENV_NODES, command, launcher, world_size
from ..method.segmentation import teacher_budget
from .crosscheck import data_file

#: Paper costs (paper §4.1): A100-hours per generated sequence and per RL completion, 7B model.
PAPER_ROLLOUTS = 3_463_520 * 16  # Table 9 steps (1.5B) x M; the 7B run is of the same order
A100_H_PER_SEQ_7B = 14 * 24 * 8 / PAPER_ROLLOUTS
A100_H_PER_RL_COMPLETION_7B = 5 * 24 * 8 / (800 * 1024 * 4)
#: [not measured] One T4 against one A100 on these workloads: decoding is bound by memory
#: bandwidth (T4 320 GB/s, A100 80 GB 2039 GB/s: 6.4x) and training by half-precision tensor
#: throughput (65 vs 312 TFLOPS: 4.8x); the larger factor is used. The colab profile's times
#: per stage are the A100-hours times this, a guide to plan a Colab session by, not a measurement.
T4_PER_A100 = 6.4
CHUNKS_PER_SOLUTION = 6.0  # Table 4, 1.5B-chunk (7B: 6.8)
KEEP_RATE = 0.5  # [not in paper] share of prompts passing the pass@16 pre-filter (assumed)

DATASETS = {
    "numina": "AI-MO/NuminaMath-CoT",
    "math500": "HuggingFaceH4/MATH-500",
    "gsm8k": "openai/gsm8k",
    "toy": "toy world (generated, offline)",
    "processbench": "Qwen/ProcessBench",
}
HUB_ID = re.compile(r"^[A-Za-z0-9][\w.-]*/[\w.-]+$")
#: Hub owners whose instruct models need an accepted licence and a token to download.
GATED_OWNERS = {"meta-llama"}


def model_size_b(name: str) -> float:
    """Billions of parameters read from a hub id ("Qwen/Qwen2.5-1.5B-Instruct" -> 1.5); 0 for
    the toy models (a few million parameters)."""
    m = re.search(r"(\d+(?:\.\d+)?)B\b", name)
    return float(m.group(1)) if m else 0.0


def _in_hf_cache(repo_id: str) -> bool:
    try:
        from huggingface_hub import try_to_load_from_cache

        return isinstance(try_to_load_from_cache(repo_id, "config.json"), str)
    except Exception:  # noqa: BLE001 - an old hub library or a malformed id: just "not cached"
        return False


def describe_model(name: str, role: str) -> dict:
    """A model reference checked without downloading: local artifact, toy model or hub id."""
    if name in ("artifact", "chunk_policy"):
        return {"role": role, "model": "artifact of an earlier notebook", "ok": True}
    if name == "toy_base":
        ok = (ROOT / "data" / "toy_base" / "config.json").exists()
        return {"role": role, "model": "data/toy_base (committed)", "ok": ok}
    if name == "rule":
        return {"role": role, "model": "rule-based teacher (toy)", "ok": True}
    if name == "paragraphs":
        return {"role": role, "model": "paragraph teacher (every blank-line paragraph a chunk)", "ok": True}
    if name == "qwen2_standin":
        return {"role": role, "model": "runs/standin/qwen2-tiny (random-weight Qwen2 stand-in)", "ok": True}
    if name == "smollm2":
        return {
            "role": role,
            "model": "runs/models/smollm2-135m-instruct (SmolLM2-135M-Instruct, make smollm2)",
            "ok": True,
            "size_b": 0.135,
        }
    if name.startswith(("/", "./", "../", "~")) or (ROOT / name).exists():
        d = Path(name).expanduser()
        d = d if d.is_absolute() else ROOT / d
        ok = model_complete(d)
        return {
            "role": role,
            "model": name,
            "ok": ok,
            "size_b": model_size_b(name),
            **({} if ok else {"note": "a local folder without a saved model (config and weights)"}),
        }
    out = {"role": role, "model": name, "ok": bool(HUB_ID.match(name)), "size_b": model_size_b(name)}
    if out["ok"] and not _in_hf_cache(name):
        out["note"] = "hub id: its form is checked, not its existence (not in the local HF cache)"
    if name.split("/")[0] in GATED_OWNERS:
        gated = "gated on the hub: needs an HF token (huggingface-cli login) and the accepted licence"
        out["note"] = f"{out['note']}; {gated}" if "note" in out else gated
    return out


def _cost(seqs: float, size_b: float) -> float:
    return seqs * A100_H_PER_SEQ_7B * (size_b / 7.0)


def _judges(params: dict[str, dict], stem: str) -> int:
    """How many judges notebook 05 scores: its JUDGES, or with "all" every notebook 04 variant."""
    p = params.get(stem, {})
    if "JUDGES" not in p:
        return 1
    if "all" not in p["JUDGES"]:
        return len(p["JUDGES"])
    p4 = next((v for k, v in params.items() if k.startswith("04")), {})
    return len(p4.get("VARIANTS", [])) * (1 + len(p4.get("REPEAT_SEEDS", []))) + 1  # every variant at every seed


#: [not in paper] Balanced chunks per labelled chunk (notebook 03 keeps as many Positive as Negative
#: ones: 2 x the smaller class; Rel-Ratio is 56.5% positive at 1.5B, paper §4.3).
BALANCED_SHARE = 2 * (1 - 0.565)
#: [not measured] Training throughput of one A100 in tokens per second per billion parameters:
#: 6 FLOPs per parameter and token (forward and backward) at 40% of the bf16 peak (312 TFLOPS).
A100_TRAIN_TOKENS_PER_S_PER_B = 0.4 * 312e12 / 6 / 1e9
#: Tokens of one judge record (a Table 3 prompt of a few hundred tokens and its history plus an
#: output) and of one policy SFT record (prompt + a solution of about 700 tokens, Table 4).
JUDGE_RECORD_TOKENS, POLICY_RECORD_TOKENS = 2000, 900


def _train_hours(records: float, tokens_each: int, size_b: float, epochs: float = 1.0) -> float:
    """A100-hours of fine-tuning ``records`` sequences (:data:`A100_TRAIN_TOKENS_PER_S_PER_B`)."""
    if not size_b:
        return 0.0
    return records * tokens_each * epochs / (A100_TRAIN_TOKENS_PER_S_PER_B / size_b) / 3600


def _kept(p02: dict) -> float:
    """Prompts notebook 02 keeps: ``N_KEPT`` when set (paper), else ``N_PROMPTS`` x :data:`KEEP_RATE`."""
    return p02.get("N_KEPT") or p02.get("N_PROMPTS", 0) * KEEP_RATE


def _launch_gpus(training: bool, gpus: int, launched: int) -> int:
    return launched if training else 1


def labelling_speedup(workers: int, measured: Path | None = None) -> float:
    """How much faster ``workers`` labelling processes are than one under ``N_KEPT`` (issue 48):
    the efficiency measured at the most workers in ``results/bench/labelling_scaling.json``
    (``python -m stepwiser_lib.tools.scaling``: speed-up / K), times ``workers``, at most
    ``workers``. Without a measurement, ``workers``: the split gives each worker 1/K of the shards
    plus at most one round (``labelling.may_be_needed``)."""
    f = measured or ROOT / "results" / "bench" / "labelling_scaling.json"
    if workers <= 1 or not f.exists():
        return float(max(1, workers))
    m = json.loads(f.read_text())
    # rows where each process had a core of its own (more processes than cores measure the split only)
    rows = [r for r in m["rows"] if 1 < r["workers"] <= m.get("cpus", r["workers"])]
    if not rows:
        return float(workers)
    top = max(rows, key=lambda r: r["workers"])
    return min(float(workers), workers * top["speedup"] / top["workers"])


def launch_layout() -> tuple[int, int, str]:
    """How ``make reproduce`` will run training: (processes, ZeRO stage, in words), from
    ``STEPWISER_LAUNCHER`` (an accelerate config; ``STEPWISER_NUM_PROCESSES`` overrides its
    count), or in-process on one device when it is unset. The memory rows and wall times are
    computed for this, not for the profile's target box."""
    import yaml

    try:
        cfg = launcher()  # validates STEPWISER_LAUNCHER (a missing config file fails the dry run)
    except FileNotFoundError as e:
        raise ConfigError(str(e)) from None
    if cfg is None:
        return 1, 0, "in-process on one device (set STEPWISER_LAUNCHER / make LAUNCHER=... for accelerate)"
    y = yaml.safe_load(Path(cfg).read_text()) or {}
    nodes = scale()[1]
    n = world_size(cfg)  # as the launch counts them (the multi-node config's num_processes is every machine's)
    zero = (
        int((y.get("deepspeed_config") or {}).get("zero_stage", 0)) if y.get("distributed_type") == "DEEPSPEED" else 0
    )
    where = f" on {nodes} nodes" if nodes > 1 else ""
    cmd = command(cfg, "<job.json>", n if nodes > 1 else None, nodes=nodes, main_address="<first node>")
    return n, zero, f"{n} processes{where}{f', ZeRO-{zero}' if zero else ''}: " + " ".join(cmd)


ENV_WORKERS = "STEPWISER_WORKERS"


def scale() -> tuple[int, int]:
    """(generation workers per node, nodes): ``make reproduce DRY_RUN=1 WORKERS=K NODES=N``
    (``STEPWISER_WORKERS``, ``STEPWISER_NODES``); 1 and 1 when unset. The generation of notebooks
    02, 05, 06 and 07 runs on ``K x N`` GPUs (:mod:`stepwiser_lib.tools.workers`,
    ``configs/slurm/reproduce.sbatch``); training on the launcher's processes times ``N``; the rest
    (01's sampling, 04's judge evaluation and RS-FT sampling, 07's evaluation) on one GPU."""

    def read(name):
        v = os.environ.get(name, "1") or "1"
        if not v.isdigit() or int(v) < 1:
            raise ConfigError(f"{name} = {v!r}: want a whole number >= 1")
        return int(v)

    return read(ENV_WORKERS), read(ENV_NODES)


def _dataset(task: str, params: dict[str, dict]) -> str:
    """Where ``task``'s problems come from: a ``DATA_FILES`` file of any notebook (said missing
    when it is not there), else the hub id or the toy world."""
    files = sorted({f for p in params.values() for t, f in (p.get("DATA_FILES") or {}).items() if t == task and f})
    if not files:
        return DATASETS.get(task, task)
    return ", ".join(f"{f} ({'local file' if data_file(f).is_file() else 'MISSING'})" for f in files)


def dry_run(profile: str, params: dict[str, dict]) -> dict:
    """The plan for already-checked ``params`` (``{notebook stem: parameters}``).

    Each stage gets its sequences, ``a100_hours`` (every cost the notebook has, generation and
    training: judge evaluation, RS-FT sampling, every SFT, 05 times the judges it scores) and
    ``wall_hours``: the A100-hours over the GPUs the stage actually uses. Generation runs one
    engine (one GPU, or the teacher's tensor-parallel group); training uses the launcher's
    processes when ``STEPWISER_LAUNCHER`` is set, else one GPU in-process."""
    bench = ROOT / "results" / "bench" / "labelling.json"
    frac = json.loads(bench.read_text()).get("adaptive_rollout_fraction") if bench.exists() else None
    stages, models, datasets = [], [], set()
    policy_b = 0.0
    procs = launch_layout()[0]
    p02 = next((v for k, v in params.items() if k.startswith("02")), {})
    p03 = next((v for k, v in params.items() if k.startswith("03")), {})
    chunks_kept = _kept(p02) * p02.get("TRAJ_PER_PROMPT", 1) * CHUNKS_PER_SOLUTION
    held_out = p03.get("DEV_FRACTION", 0.15) + p03.get("TEST_FRACTION", 0.45)
    eval_chunks = chunks_kept * held_out * BALANCED_SHARE  # dev + test, balanced
    train_chunks = chunks_kept * (1 - held_out) * BALANCED_SHARE
    for stem, p in params.items():
        st: dict = {"notebook": stem}
        gen_h = train_h = 0.0
        gen_gpus = 1
        if stem.startswith("01"):
            base = describe_model(p["BASE_MODEL"] if p.get("BASE_MODEL") else "toy_base", "base policy")
            teacher = describe_model(p.get("TEACHER", "rule"), "segmentation teacher")
            models += [base, teacher]
            policy_b = base.get("size_b", 0.0)
            datasets |= {p.get("TASK", "toy"), p.get("EVAL_TASK", "toy")}
            samples = p["N_PROBLEMS"] * p["SAMPLES_PER_PROBLEM"]
            kept_resp = p["N_PROBLEMS"] * p["MAX_CORRECT_PER_PROBLEM"] * 0.5
            seg = kept_resp * (
                p.get("TEACHER_SEGMENTATIONS", 1) if p.get("TEACHER", "rule") not in ("rule", "paragraphs") else 0
            )
            evals = p["EVAL_PROBLEMS"] * p["EVAL_SAMPLES"] * 2
            teacher_h = _cost(seg, teacher.get("size_b", 0.0))
            gen_h = _cost(samples + evals, policy_b)
            train_h = _train_hours(kept_resp, POLICY_RECORD_TOKENS, policy_b, p.get("SFT_EPOCHS", 1.0))
            tp = p.get("TEACHER_VLLM_TP", 1)
            st.update(sequences=samples + evals, teacher_calls=int(seg), sft_records=int(kept_resp))
            st["wall_hours"] = gen_h + teacher_h / tp + train_h / _launch_gpus(True, tp, procs)
            gen_h += teacher_h
        elif stem.startswith("02"):
            models.append(describe_model(p.get("POLICY_MODEL", "artifact"), "chunk policy (02)"))
            datasets.add(p.get("TASK", "toy"))
            kept = _kept(p)
            rollouts = kept * p["TRAJ_PER_PROMPT"] * (CHUNKS_PER_SOLUTION - 1) * p["M_ROLLOUTS"]
            if p.get("ADAPTIVE") and frac:
                rollouts *= frac
            drawn = kept / KEEP_RATE if p.get("N_KEPT") else p["N_PROMPTS"]
            pre = drawn * p["N_PREFILTER"]
            gen_h = _cost(pre + rollouts, policy_b)
            gen_gpus = scale()[0] * scale()[1]  # data-parallel labelling workers (tools/workers.py)
            speedup = labelling_speedup(gen_gpus) if p.get("N_KEPT") else gen_gpus
            st.update(
                labelling_speedup=round(speedup, 2),
                kept_prompts=int(kept),
                prefilter_samples=int(pre),
                rollouts=int(rollouts),
                adaptive_fraction=frac if p.get("ADAPTIVE") else None,
                labelling_gpus=gen_gpus,
            )
            gen_gpus = speedup  # the wall time below: the measured speed-up, not K (issue 48)
        elif stem.startswith("04"):
            models.append(describe_model(p.get("JUDGE_INIT", "chunk_policy"), "judge initialisation (04)"))
            kinds = [parse_variant(v)[0] for v in p["VARIANTS"]]
            seeds_ = 1 + len(p.get("REPEAT_SEEDS", []))  # every variant trains at every seed (issue 35)
            n_var = len(p["VARIANTS"]) * seeds_
            rl = sum(1 for k in kinds if k in RL_KINDS) * seeds_
            comps = rl * p["GRPO_STEPS"] * p["PROMPTS_PER_STEP"] * p["GROUP_SIZE"]
            rl_h = comps * A100_H_PER_RL_COMPLETION_7B * (policy_b / 7.0)
            judged = (n_var + 1) * eval_chunks  # every judge and the starting one, on dev and test
            rsft_samples = train_chunks * p.get("RSFT_SAMPLES", 0) * kinds.count("rsft")
            sfts = kinds.count("disc_sft") + kinds.count("disc_warmup_sft") + kinds.count("rsft")
            gen_h = _cost(judged + rsft_samples, policy_b)
            train_h = rl_h + _train_hours(train_chunks * sfts, JUDGE_RECORD_TOKENS, policy_b)
            st.update(
                judges=n_var,
                rl_runs=rl,
                rl_steps_each=p["GRPO_STEPS"],
                rl_completions=comps,
                judge_evaluations=int(judged),
                rsft_judge_samples=int(rsft_samples),
                sft_runs=sfts,
            )
        elif stem.startswith("05"):
            datasets.add("processbench" if p["BENCH"] == "real" else "toy")
            n = (p["LIMIT"] or 3400 // 4) * 4
            calls = n * 7  # about 7 steps per solution on ProcessBench (its paper: 5.1-8.9 per split)
            judges = _judges(params, stem)
            st.update(solutions=n, judges_scored=judges, judge_calls=calls * judges * p["MAJ_K"])
            gen_h = _cost(calls * p["MAJ_K"] * judges, policy_b)
            gen_gpus = st["generation_gpus"] = scale()[0] * scale()[1]  # data-parallel judging (tools/workers.py)
        elif stem.startswith("06"):
            models.append(describe_model(p.get("POLICY_MODEL", "artifact"), "chunk policy (06)"))
            datasets |= set(p["EVAL_TASKS"])
            n = p["N_PROBLEMS"] * len(p["EVAL_TASKS"]) * p["RUNS"] * (len(p["JUDGES"]) + 1)
            calls = n * CHUNKS_PER_SOLUTION * 2  # chunks plus resets, judge calls about as many
            st.update(problems_x_runs_x_judges=n, sequences=int(calls * 2))
            gen_h = _cost(calls * 2, policy_b)
            gen_gpus = st["generation_gpus"] = scale()[0] * scale()[1]  # data-parallel runs (tools/workers.py)
        elif stem.startswith("07"):
            models.append(describe_model(p.get("POLICY_MODEL", "artifact"), "chunk policy (07)"))
            datasets |= {p.get("TASK", "toy"), *p["EVAL_TASKS"]}
            samples = p["N_PROMPTS"] * p["SAMPLES"]
            calls = samples * CHUNKS_PER_SOLUTION * len(p["JUDGES"])
            sft_runs = (len(p["JUDGES"]) + 1) * p["RUNS"]
            gen_h = _cost(samples + calls, policy_b)
            train_h = _train_hours(p["N_PROMPTS"] * sft_runs, POLICY_RECORD_TOKENS, policy_b, p.get("SFT_EPOCHS", 1.0))
            st.update(samples=samples, judge_calls=int(calls), sft_runs=sft_runs)
            gen_gpus = st["generation_gpus"] = scale()[0] * scale()[1]  # data-parallel sampling and scoring
        else:
            stages.append(st)
            continue
        st["a100_hours"] = gen_h + train_h
        st.setdefault("wall_hours", gen_h / gen_gpus + train_h / _launch_gpus(True, gen_gpus, procs))
        stages.append(st)
    total = sum(s.get("a100_hours", 0) for s in stages)
    wall = sum(s.get("wall_hours", 0) for s in stages)
    if TARGETS.get(profile, ("",))[0] == "T4":
        for s in stages:
            s["t4_minutes"] = round(s.get("a100_hours", 0) * T4_PER_A100 * 60)
    launch = launch_layout()[2]
    return {
        "profile": profile,
        "stages": stages,
        "models": models,
        "training_launch": launch,
        "memory": memory_plan(profile, params),
        "datasets": {d: _dataset(d, params) for d in sorted(datasets)},
        "estimated_a100_hours": round(total, 1),
        "estimated_wall_hours": round(wall, 1),
        "note": "estimate scaled from the paper's reported costs (paper §4.1); order of magnitude only",
    }


# ----------------------------------------------------------------------------- GPU memory

#: The device each profile is planned for: (GPU, processes, ZeRO stage of its launcher). colab:
#: one T4; paper: 8 x A100 80 GB under ``LAUNCHER=configs/accelerate/zero2.yaml``; the CPU
#: profiles: host memory of this machine.
TARGETS = {"colab": ("T4", 1, 0), "paper": ("A100_80GB", 8, 2)}
#: Token lengths the plan assumes where the data decides them: a policy prompt (the Table 11
#: prompt and a NuminaMath / MATH-500 problem) and characters per token of a judge prompt.
POLICY_PROMPT_TOKENS = 512
CHARS_PER_TOKEN = 4
TABLE3_TOKENS = 300  # the Table 3 judge instructions around problem, history and chunk
#: Which setting to change when a part of an estimate is what does not fit.
REMEDY = {
    "logits": "the batch of that phase (GEN_BATCH / JUDGE_BATCH / *_MICRO_BATCH)",
    "kv_cache": "GEN_BATCH or JUDGE_BATCH (or the new-token limit)",
    "activations": "*_MICRO_BATCH, GRADIENT_CHECKPOINTING: true or the max length",
    "attention_mask": "GEN_BATCH or JUDGE_BATCH",
    "sdpa_math_scores": "GEN_BATCH or JUDGE_BATCH (or a kernel that serves masked GQA)",
    "repeated_kv": "GEN_BATCH or JUDGE_BATCH",
    "weights": "USE_LORA: true, a smaller model, or VLLM_TP",
    "master_fp32": "USE_LORA: true or a ZeRO launcher",
    "optimizer": "USE_LORA: true or a ZeRO launcher",
    "gradients": "USE_LORA: true or a ZeRO launcher",
    "working_copy": "USE_LORA: true",
    "reference_model": "BETA: 0 or USE_LORA: true",
    "vllm_reservation": "VLLM_GPU_MEMORY / GRPO_VLLM_GPU_MEMORY",
}
#: The stand-in's shape, as engines/standin.py builds it.
STANDIN_SHAPE = dict(vocab_size=standin.MODEL_VOCAB, tie_word_embeddings=True, **standin.ARCH)


def _shape(name: str):
    if name == "qwen2_standin":
        return memory.ModelShape(**STANDIN_SHAPE)
    if name == "smollm2":
        return memory.KNOWN_MODELS["HuggingFaceTB/SmolLM2-135M-Instruct"]
    if name == "toy_base":
        return memory.shape_for(ROOT / "data" / "toy_base")
    try:
        return memory.shape_for(name)
    except (KeyError, FileNotFoundError, OSError):
        return None  # a model of unknown size: the plan says so instead of guessing


def memory_plan(profile: str, params: dict[str, dict]) -> dict:
    """Estimated peak GPU memory of every phase of every stage for the profile's target
    (:data:`TARGETS`), from :mod:`stepwiser_lib.engines.memory`: ``{"gpu", "rows": [{stage, phase, gib,
    fits, detail, change}]}``. A phase that does not fit names the setting to change.

    Training rows are computed the way the run will launch (:func:`launch_layout`: in-process on
    one device unless ``STEPWISER_LAUNCHER`` is set), generation rows per engine, and every vLLM
    engine is checked against vLLM's own rules: its tensor parallelism must divide the model's
    attention heads (vLLM refuses the engine otherwise), and its share of weights must fit in its
    memory reservation. In-GRPO validation is planned beside the trainer's resident state, with
    ``JUDGE_BATCH`` chunks and a half-precision cache; the HF sampling loop on a GPU never takes
    SDPA's math kernel (:func:`stepwiser_lib.engines.decoding.gqa_in_kernel`), so no O(L^2) scores are
    counted; the discriminative judges of 05-07 are planned where they run."""
    from ..engines.decoding import gqa_in_kernel  # lazy: torch

    gpu_name, gpus, _ = TARGETS.get(profile, ("CPU", 1, 0))
    world, zero, _how = launch_layout()
    gpu = getattr(memory, gpu_name)
    p_bytes = gpu.dtype_bytes
    rows: list[dict] = []
    p01 = params.get("01_self_segmentation", {})
    policy = _shape(p01.get("BASE_MODEL", "toy_base"))
    # masked GQA in SDPA would be the math kernel on CUDA: B x heads x L^2 fp32 scores
    math_scores = (
        not gpu.is_cpu and policy is not None and policy.num_heads > policy.num_kv_heads and gqa_in_kernel("cuda", True)
    )

    infer_remedy = {"activations": "GEN_BATCH or JUDGE_BATCH (or the prompt length)"}

    def add(stage, phase, b, inference_phase=False, problem=None, change=""):
        if problem:
            rows.append(
                {"stage": stage, "phase": phase, "gib": None, "fits": False, "detail": problem, "change": change}
            )
            return
        if b is None:
            rows.append(
                {
                    "stage": stage,
                    "phase": phase,
                    "gib": None,
                    "fits": True,
                    "detail": "model size unknown: not estimated",
                    "change": "",
                }
            )
            return
        ok, msg = memory.fits(b, gpu)
        remedy = {**REMEDY, **(infer_remedy if inference_phase else {})}
        rows.append(
            {
                "stage": stage,
                "phase": phase,
                "gib": round(b.gib, 2),
                "fits": ok,
                "detail": f"{msg}; {b.describe()}",
                "change": "" if ok else remedy.get(b.largest(), ""),
            }
        )

    def engine(stage, phase, shape, p, tp_key="VLLM_TP"):
        """vLLM's rules for one engine: heads divisible by TP, weights within the reservation."""
        if shape is None or gpu.is_cpu:
            return
        tp = p.get(tp_key, 1)
        why = memory.tp_problem(shape, tp)
        if why:
            add(
                stage, f"{phase}: vLLM engine", None, problem=why, change=f"{tp_key} (a divisor of the attention heads)"
            )
            return
        if p.get("VLLM_KV_CACHE_GB", 0) > 0:
            return
        room = memory.vllm_reservation(gpu, p["VLLM_GPU_MEMORY"]).total
        weights = shape.params() * p_bytes // tp
        if weights >= room:
            add(
                stage,
                f"{phase}: vLLM engine",
                None,
                change=f"VLLM_GPU_MEMORY or {tp_key}",
                problem=f"weights {weights / memory.GIB:.1f} GiB per device do not fit the engine's reservation "
                f"of {room / memory.GIB:.1f} GiB (VLLM_GPU_MEMORY {p['VLLM_GPU_MEMORY']} x {gpu.name})",
            )

    def gen(shape, p, batch, prompt, new, tp=1):
        if shape is None:
            return None
        if p.get("BACKEND") == "vllm" and not gpu.is_cpu:
            return memory.vllm_reservation(gpu, p["VLLM_GPU_MEMORY"])
        return memory.inference(
            shape,
            p_bytes,
            batch,
            prompt,
            new,
            1,
            tensor_parallel=tp,
            sampling=False,
            sdpa_math=math_scores,
            gqa_repeat=not gpu.is_cpu,
        )

    def disc(shape, p, prompt):
        """A discriminative judge's scoring forward (always HF): weights and one forward's working set."""
        if shape is None:
            return None
        return memory.inference(
            shape,
            p_bytes,
            p["JUDGE_BATCH"],
            prompt,
            0,
            1,
            sampling=False,
            sdpa_math=math_scores,
            gqa_repeat=not gpu.is_cpu,
        )

    def sft(shape, p, prefix, max_length, lora):
        if shape is None:
            return None
        micro = p.get(f"{prefix}_MICRO_BATCH") or max(1, p[f"{prefix}_BATCH"] // world)
        return memory.training(
            shape,
            lora_rank=p.get("LORA_R", 16) if lora else None,
            micro_batch=micro,
            seq_len=max_length,
            gradient_checkpointing=p.get("GRADIENT_CHECKPOINTING", False),
            master_fp32=True,
            dtype_bytes=p_bytes,
            fused_lm_head=True,
            zero_stage=zero,
            world_size=world,
        )

    judge_prompt = params.get("03_balancing", {}).get("MAX_CHARS", 4000) // CHARS_PER_TOKEN + TABLE3_TOKENS
    for stem, p in params.items():
        judge_p = {**p, "BACKEND": p.get("JUDGE_BACKEND", "hf")}
        kinds = {parse_variant(v)[0] for v in p.get("VARIANTS", [])}
        has_disc = any(j.split(":")[0].startswith("disc") for j in p.get("JUDGES", [])) or "all" in p.get("JUDGES", [])
        if stem.startswith("01"):
            if p.get("BACKEND") == "vllm":
                engine(stem, "base and chunk policy", policy, p)
            add(
                stem,
                "sample the base policy",
                gen(policy, p, p["GEN_BATCH"], POLICY_PROMPT_TOKENS, p["MAX_NEW_TOKENS"]),
                inference_phase=True,
            )
            if p.get("TEACHER") not in ("rule", "paragraphs"):
                teacher = _shape(p["TEACHER"])
                if p.get("BACKEND") == "vllm":
                    engine(stem, "segmentation teacher", teacher, p, "TEACHER_VLLM_TP")
                add(
                    stem,
                    "segmentation teacher",
                    gen(
                        teacher,
                        p,
                        p["GEN_BATCH"],
                        POLICY_PROMPT_TOKENS + p["MAX_NEW_TOKENS"],
                        teacher_budget(p["MAX_NEW_TOKENS"]),
                        p.get("TEACHER_VLLM_TP", 1),
                    ),
                    True,
                )
            add(stem, "SFT of the chunk policy", sft(policy, p, "SFT", p["SFT_MAX_LENGTH"], p.get("USE_LORA")))
        elif stem.startswith("02"):
            if p.get("BACKEND") == "vllm":
                engine(stem, "rollouts", policy, p)
            add(
                stem,
                "rollouts",
                gen(policy, p, p["GEN_BATCH"], POLICY_PROMPT_TOKENS + p["MAX_NEW_TOKENS"], p["MAX_NEW_TOKENS"]),
                inference_phase=True,
            )
        elif stem.startswith("04"):
            if policy is not None:
                mb = p["GRPO_MICRO_BATCH"] or None
                kw = dict(
                    lora_rank=p["LORA_R"] if p["USE_LORA"] else None,
                    prompts_per_step=p["PROMPTS_PER_STEP"],
                    group_size=p["GROUP_SIZE"],
                    world_size=world,
                    steps_per_generation=p["UPDATES_PER_STEP"],
                    prompt_len=judge_prompt,
                    completion_len=p["MAX_COMPLETION"],
                    gradient_checkpointing=p["GRADIENT_CHECKPOINTING"],
                    master_fp32=True,
                    reference_model=p["BETA"] > 0,
                    dtype_bytes=p_bytes,
                    zero_stage=zero,
                    pass_batch=mb,
                    vllm_gpu_memory_utilization=p["GRPO_VLLM_GPU_MEMORY"]
                    if p["GRPO_VLLM"] and not gpu.is_cpu
                    else None,
                    gpu=gpu,
                )
                add(stem, "GRPO step", memory.grpo_step(policy, **kw))
                if p["EVAL_EVERY"] and world == 1:  # validation runs in the trainer's process, beside its state
                    train = memory.grpo_phases(policy, **kw)["training"]
                    resident = {
                        k: v
                        for k, v in train.parts.items()
                        if k
                        in (
                            "weights",
                            "master_fp32",
                            "working_copy",
                            "optimizer",
                            "reference_model",
                            "vllm_reservation",
                        )
                    }
                    val = memory.inference(
                        policy,
                        p_bytes,
                        min(p["JUDGE_BATCH"], p["VAL_LIMIT"] or p["JUDGE_BATCH"]),
                        judge_prompt,
                        p["MAX_COMPLETION"],
                        1,
                        sampling=False,
                        sdpa_math=math_scores,
                        gqa_repeat=not gpu.is_cpu,
                    )
                    add(
                        stem,
                        "GRPO validation (in training)",
                        memory.Breakdown(
                            {**resident, **{k: v for k, v in val.parts.items() if k != "weights"}}, "GRPO validation"
                        ),
                        True,
                    )
            else:
                add(stem, "GRPO step", None)
            if "disc_sft" in kinds:
                add(stem, "discriminative SFT", sft(policy, p, "DISC", p["JUDGE_MAX_LENGTH"], False))
            if "rsft" in kinds:
                add(stem, "RS-FT judge SFT", sft(policy, p, "RSFT", p["JUDGE_MAX_LENGTH"], p["USE_LORA"]))
            add(
                stem,
                "judging (evaluation)",
                gen(policy, judge_p, p["JUDGE_BATCH"], judge_prompt, p["MAX_COMPLETION"]),
                inference_phase=True,
            )
        elif stem.startswith("05"):
            if judge_p["BACKEND"] == "vllm":
                engine(stem, "judging", policy, p)
            add(
                stem,
                "judging",
                gen(policy, judge_p, p["JUDGE_BATCH"], judge_prompt, p["MAX_COMPLETION"]),
                inference_phase=True,
            )
            if has_disc:
                add(stem, "discriminative judge (HF)", disc(policy, p, judge_prompt), True)
        elif stem.startswith("06"):
            for phase, pp in (("policy", p), ("judge", judge_p)):
                if pp.get("BACKEND") == "vllm":
                    engine(stem, phase, policy, p)
            chunks_so_far = POLICY_PROMPT_TOKENS + p["MAX_CHUNKS"] * p["MAX_CHUNK_TOKENS"]
            pol = gen(policy, p, p["GEN_BATCH"], chunks_so_far, p["MAX_CHUNK_TOKENS"])
            jud = gen(policy, judge_p, p["JUDGE_BATCH"], judge_prompt, p["MAX_COMPLETION"])
            add(stem, "policy and judge together", None if pol is None or jud is None else pol + jud, True)
            if has_disc:
                d = disc(policy, p, judge_prompt)
                add(stem, "policy and discriminative judge", None if pol is None or d is None else pol + d, True)
        elif stem.startswith("07"):
            for phase, pp in (("policy", p), ("judge", judge_p)):
                if pp.get("BACKEND") == "vllm":
                    engine(stem, phase, policy, p)
            add(
                stem,
                "sample the chunk policy",
                gen(policy, p, p["GEN_BATCH"], POLICY_PROMPT_TOKENS, p["MAX_NEW_TOKENS"]),
                inference_phase=True,
            )
            add(
                stem,
                "judge scoring",
                gen(policy, judge_p, p["JUDGE_BATCH"], judge_prompt, p["MAX_COMPLETION"]),
                inference_phase=True,
            )
            if has_disc:
                add(stem, "discriminative judge scoring (HF)", disc(policy, p, judge_prompt), True)
            add(stem, "SFT on the selected set", sft(policy, p, "SFT", p["SFT_MAX_LENGTH"], p.get("USE_LORA")))
    label = gpu.name if gpu.is_cpu else f"{gpus} x {gpu.name} ({gpu.usable_gib} GiB usable each)"
    return {"gpu": label, "world_size": world, "zero_stage": zero, "training": _how, "rows": rows}


#: What each notebook does at the colab profile (the Colab walk-through, docs/colab.md).
COLAB_WORK = {
    "01": "sample Qwen2.5-0.5B, segment with the 3B teacher, LoRA SFT of the chunk policy",
    "02": "pre-filter prompts, Monte-Carlo rollouts, the three label rules",
    "03": "balance positives and negatives per rule (CPU, seconds)",
    "04": "GRPO judges (LoRA), discriminative and RS-FT baselines, validation",
    "05": "every judge on real ProcessBench",
    "06": "Chunk-Reset reasoning on MATH-500 and held-out NuminaMath with the judges",
    "07": "stepwise rejection-sampling fine-tuning of the policy",
}


def colab_table(plan: dict) -> str:
    """The per-notebook table for one T4 (docs/colab.md): estimated time and peak GPU memory, from the
    ``colab`` dry-run plan (a test checks the page holds exactly this)."""
    peak: dict[str, float] = {}
    for r in plan["memory"]["rows"]:
        peak[r["stage"]] = max(peak.get(r["stage"], 0.0), r["gib"] or 0.0)
    rows = ["| notebook | what it does on the T4 | est. time | est. peak GPU memory |", "|---|---|---|---|"]
    for s in plan["stages"]:
        n = s["notebook"]
        mem = f"{peak[n]:.1f} GiB" if n in peak else "-"
        rows.append(f"| `{n}` | {COLAB_WORK.get(n[:2], '')} | {s.get('t4_minutes', '?')} min | {mem} |")
    return "\n".join(rows)


def _labelling_gpus(plan: dict) -> int:
    return next((st.get("labelling_gpus", 1) for st in plan["stages"] if st["notebook"].startswith("02")), 1)


def render(plan: dict) -> str:
    lines = [f"DRY RUN, profile {plan['profile']}: nothing is downloaded or run", "models:"]
    for m in plan["models"]:
        flag = "ok" if m["ok"] else "NOT A VALID MODEL REFERENCE"
        lines.append(f"  {m['role']:22s} {m['model']}  [{flag}]" + (f"  ({m['note']})" if m.get("note") else ""))
    lines.append("datasets: " + ", ".join(f"{k} -> {v}" for k, v in plan["datasets"].items()))
    for s in plan["stages"]:
        rest = {k: (round(v, 1) if isinstance(v, float) else v) for k, v in s.items() if k != "notebook"}
        lines.append(f"  {s['notebook']:22s} " + ", ".join(f"{k}={v}" for k, v in rest.items()))
    lines.append(f"training stages run: {plan['training_launch']}")
    mem = plan.get("memory")
    if mem:
        lines.append(f"estimated peak memory per device on {mem['gpu']} (stepwiser_lib/engines/memory.py; estimates):")
        for r in mem["rows"]:
            flag = "" if r["fits"] else f"   DOES NOT FIT: change {r['change']}"
            gib = "   ?" if r["gib"] is None else f"{r['gib']:7.2f} GiB"
            lines.append(f"  {r['stage']:22s} {r['phase']:28s} {gib}{flag}")
    lines.append(f"estimated A100-hours in all: {plan['estimated_a100_hours']} ({plan['note']})")
    lines.append(
        f"estimated wall-clock time as launched: {plan['estimated_wall_hours']} hours "
        f"({plan['estimated_wall_hours'] / 24:.1f} days): the generation of 02, 05, 06 and 07 on "
        f"{_labelling_gpus(plan)} GPU(s) (WORKERS x NODES: make workers STAGE=...), the rest of the "
        f"generation on one engine (one GPU, the teacher on TEACHER_VLLM_TP), training "
        f"{plan['training_launch'].split(':')[0]}"
    )
    t4 = [(s["notebook"], s["t4_minutes"]) for s in plan["stages"] if "t4_minutes" in s]
    if t4:
        lines.append(
            f"estimated time on one T4 (A100-hours x {T4_PER_A100}, not measured): "
            + ", ".join(f"{n[:2]} {m} min" for n, m in t4)
            + f"; {sum(m for _, m in t4)} min in all"
        )
    return "\n".join(lines)
