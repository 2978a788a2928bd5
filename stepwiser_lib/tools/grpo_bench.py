"""``make bench-grpo``: where a GRPO step of the judge goes (writes results/bench/grpo_step.json).

One GRPO step of notebook 04's main judge at a profile's settings (``GRPOSettings`` from its
config), trained on its Rel-Ratio training chunks from its warm-up judge, timed by parts with
TRL's own methods wrapped (nothing else changes):

* ``sampling``: the group's completions (``_generate_single_turn``: the project's loop);
* ``reward``: the verdict reward (``_calculate_rewards``);
* ``reference_logprobs``: the log-probabilities outside the gradient (the KL anchor's reference
  pass; an old-policy pass too, where TRL runs one);
* ``loss_forward``: the policy's forward pass inside the loss (``compute_loss``);
* ``backward``: the rest of ``training_step`` (the loss's backward pass);
* ``optimizer_and_rest``: the rest of the step (the optimizer, TRL's and transformers' bookkeeping).

Beside them the work: new tokens per step, and the tokens of the training passes, against the
machine's matmul floor (``bench.matmul_tokens_per_s``: new tokens/s if a decode step cost only
its weight matmuls, 128 rows, every core) so that "x% of the floor" reads the same everywhere.

Arms (``ARMS``) are the step's variants, measured in one process and alternated, so that their
ratios compare. Each arm's first ``skip`` steps are left out (allocation, first-call costs).
"""

from __future__ import annotations

import argparse
import contextlib
import importlib
import json
import os
import platform
import statistics
import time
from collections import defaultdict
from pathlib import Path

import torch
from transformers import AutoModelForCausalLM, Trainer, TrainerCallback

from ..core import config, paths
from ..engines.models import set_threads
from ..engines.trainers import GRPOSettings
from ..method import judge, judge_runs, judge_train
from .bench import matmul_tokens_per_s

#: The parts of a step, in the order they happen.
PARTS = ("sampling", "reward", "reference_logprobs", "loss_forward", "backward", "optimizer_and_rest")


class _Clock:
    """Seconds per named part, per GRPO step (a step is one optimizer update here)."""

    def __init__(self):
        self.steps: list[dict] = []
        self.cur: dict = defaultdict(float)

    @contextlib.contextmanager
    def part(self, name: str):
        t0 = time.perf_counter()
        try:
            yield
        finally:
            self.cur[name] += time.perf_counter() - t0


def timed_trainer(base_cls, clock: _Clock):
    """``base_cls`` (a GRPO trainer class) with its parts timed into ``clock``."""

    class Timed(base_cls):
        def _generate_single_turn(self, *a, **k):
            with clock.part("sampling"):
                return super()._generate_single_turn(*a, **k)

        def _calculate_rewards(self, *a, **k):
            with clock.part("reward"):
                return super()._calculate_rewards(*a, **k)

        def _get_per_token_logps_and_entropies(self, *a, **k):
            if torch.is_grad_enabled():  # inside the loss: timed by compute_loss
                return super()._get_per_token_logps_and_entropies(*a, **k)
            with clock.part("reference_logprobs"):
                return super()._get_per_token_logps_and_entropies(*a, **k)

        def compute_loss(self, *a, **k):
            with clock.part("loss_forward"):
                return super().compute_loss(*a, **k)

        def training_step(self, *a, **k):
            t0 = time.perf_counter()
            before = sum(clock.cur.values())
            out = super().training_step(*a, **k)
            # what training_step spent outside the parts above: the backward pass
            clock.cur["backward"] += time.perf_counter() - t0 - (sum(clock.cur.values()) - before)
            return out

    class StepClock(TrainerCallback):
        def on_step_begin(self, args, state, control, **kw):
            clock.cur = defaultdict(float)
            clock.t0 = time.perf_counter()

        def on_step_end(self, args, state, control, **kw):
            total = time.perf_counter() - clock.t0
            row = {p: clock.cur.get(p, 0.0) for p in PARTS[:-1]}
            row["optimizer_and_rest"] = total - sum(row.values())
            row["total"] = total
            clock.steps.append(row)

    return Timed, StepClock()


def _patched_trainer(clock: _Clock):
    """Route ``judge_train``'s trainer classes through :func:`timed_trainer` inside the block."""
    orig = judge_train.loop_generation_trainer

    def factory():
        cls, cb = timed_trainer(orig(), clock)
        cls._bench_callback = cb
        return cls

    @contextlib.contextmanager
    def block():
        judge_train.loop_generation_trainer = factory
        try:
            yield
        finally:
            judge_train.loop_generation_trainer = orig

    return block()


def _summary(steps: list[dict], skip: int) -> dict:
    rows = steps[skip:] or steps
    out = {p: round(statistics.median(r[p] for r in rows), 3) for p in (*PARTS, "total")}
    total = out["total"] or 1.0
    return {
        "seconds_per_step": out["total"],
        "parts_seconds": {p: out[p] for p in PARTS},
        "parts_share": {p: round(out[p] / total, 3) for p in PARTS},
        "steps_timed": len(rows),
        "seconds_per_step_all": [round(r["total"], 3) for r in steps],
    }


def grpo_steps(model_dir: str, train: list[dict], settings: GRPOSettings, out_dir: Path, skip: int = 2) -> dict:
    """Train ``settings.steps`` GRPO steps from ``model_dir`` and time each by parts."""
    clock = _Clock()
    orig_init = Trainer.__init__

    def init(self, *a, **k):  # add the step clock to the trainer judge_train builds
        cb = getattr(type(self), "_bench_callback", None)
        if cb is not None:
            k["callbacks"] = [*(k.get("callbacks") or []), cb]
        orig_init(self, *a, **k)

    Trainer.__init__ = init
    try:
        with _patched_trainer(clock):
            r = judge_train.train_grpo_judge(model_dir, train, out_dir, settings, progress=False)
    finally:
        Trainer.__init__ = orig_init
    logs = [h for h in r["log_history"] if "reward" in h]
    lengths = [h["completions/mean_length"] for h in logs if "completions/mean_length" in h]
    per_step = settings.prompts_per_step * settings.group_size
    out = _summary(clock.steps, skip)
    out["new_tokens_per_step"] = round(statistics.mean(lengths) * per_step, 1) if lengths else None
    out["rewards"] = [round(h["reward"], 4) for h in logs]
    return out


def evaluation_pass(model_dir: str, examples: list[dict], cfg, floor: int) -> dict:
    """Notebook 04's evaluation of a judge: every chunk of ``examples`` judged greedily at the
    profile's ``JUDGE_BATCH`` and output limit, timed, with its new tokens against the floor."""
    j = judge.load_judge(
        {"style": "cot", "base": model_dir, "adapter": None, "max_new_tokens": cfg.MAX_COMPLETION},
        "toy",
        cfg.MAX_COMPLETION,
        cfg.JUDGE_BATCH,
    )
    triples = [judge.triple(e) for e in examples]
    t0 = time.perf_counter()
    judged = j.judge(triples)
    dt = time.perf_counter() - t0
    tok = j.gen.tok
    new = sum(len(tok(x["analysis"], add_special_tokens=False)["input_ids"]) + 1 for x in judged)
    return {
        "chunks": len(examples),
        "seconds": round(dt, 2),
        "new_tokens": new,
        "new_tokens_per_s": round(new / dt),
        "share_of_floor": round(new / dt / floor, 3),
    }


def floor_tokens_per_s(model_dir: str) -> int:
    m = AutoModelForCausalLM.from_pretrained(model_dir, dtype=torch.float32)
    return matmul_tokens_per_s(m)


def default_model(profile: str) -> str:
    """The warm-up judge GRPO starts from: notebook 04's, else the newest trial warm-up."""
    run = paths.run_dir(profile)
    for cand in [run / "artifacts" / "04_judge_grpo" / "warmup_cot" / "model"]:
        if (cand / "config.json").exists():
            return str(cand)
    trials = sorted(
        (run / "trials" / "judge" / "warmups").glob("*/warmup_cot/model/config.json"),
        key=lambda p: p.stat().st_mtime,
    )
    if trials:
        return str(trials[-1].parent)
    raise SystemExit(
        f"no warm-up judge under {run}: run notebook 04 of the {profile} profile first "
        f"(python -m stepwiser_lib.tools.runner --profile {profile} --only 01 02 03 04), or pass --model"
    )


#: The step's variants: name -> switches, "module.ATTRIBUTE" of ``stepwiser_lib`` -> value, set for
#: that arm only; the GRPO settings are the profile's in every arm (the same optimisation).
ARMS: dict[str, dict] = {
    # the step as it was before issue 61
    "before": {"method.judge_train.SHARE_PROMPT_PASSES": False, "engines.models.SAMPLE_WITH_OWN_FORWARD": False},
    # the merged sampling copy with its own forward (models.for_sampling), and a group's prompt
    # through the log-probability passes once (judge_train.shared_prompt_logps)
    "after": {"method.judge_train.SHARE_PROMPT_PASSES": True, "engines.models.SAMPLE_WITH_OWN_FORWARD": True},
}


@contextlib.contextmanager
def switches(values: dict):
    """Set ``stepwiser_lib`` module attributes (``"module.NAME": value``) inside the block."""

    old = []
    for key, v in values.items():
        mod, name = key.rsplit(".", 1)
        m = importlib.import_module(f"stepwiser_lib.{mod}")
        if not hasattr(m, name):
            raise AttributeError(f"bench switch {key}: stepwiser_lib.{mod} has no {name}")
        old.append((m, name, getattr(m, name)))
        setattr(m, name, v)
    try:
        yield
    finally:
        for m, name, v in reversed(old):
            setattr(m, name, v)


def run(profile: str, model_dir: str, steps: int, skip: int, arms: dict[str, dict], repeats: int) -> dict:
    threads = set_threads()
    cfg = config.for_notebook(profile, "04_judge_grpo")
    base = GRPOSettings.from_config(cfg).with_(steps=steps, eval_every=0, save_every=0)
    data, _ = judge_runs.read_splits(profile, ["rel_ratio"])
    train = data["rel_ratio"]["train_balanced"]
    out = {}
    for rep in range(repeats):
        for name, over in arms.items():
            with switches(over):
                res = grpo_steps(model_dir, train, base, paths.run_dir(profile) / "bench" / "grpo" / name, skip)
            out.setdefault(name, []).append(res)
            print(json.dumps({"arm": name, "repeat": rep, "seconds_per_step": res["seconds_per_step"]}), flush=True)
    floor = floor_tokens_per_s(model_dir)
    evaluation = evaluation_pass(model_dir, data["rel_ratio"]["dev_balanced"], cfg, floor)
    res = {}
    for name, runs in out.items():
        best = min(runs, key=lambda r: r["seconds_per_step"])
        tok = best["new_tokens_per_step"]
        res[name] = {
            **best,
            "settings": arms[name],
            "repeats_seconds_per_step": [r["seconds_per_step"] for r in runs],
            "sampling_new_tokens_per_s": round(tok / best["parts_seconds"]["sampling"]) if tok else None,
            "sampling_share_of_floor": round(tok / best["parts_seconds"]["sampling"] / floor, 3) if tok else None,
        }
    return {
        "profile": profile,
        "model": paths.stored_path(model_dir),
        "settings": {k: v for k, v in base.__dict__.items() if k not in ("report_to", "save_every")},
        "steps": steps,
        "skip": skip,
        "repeats": repeats,
        "matmul_floor_tokens_per_s": floor,
        "evaluation_pass": evaluation,
        "machine": {
            "cpus": os.cpu_count(),
            "threads": threads,
            "processor": platform.processor() or platform.machine(),
        },
        **res,
    }


def processes_bench(profile: str, model_dir: str, steps: int, skip: int, processes: int, out_dir: Path) -> dict:
    """Issue 61: GRPO steps an hour from ``processes`` side-by-side processes with a share of the
    cores each (notebook 04's ``TRAIN_PROCESSES``) against one process with every core, the
    "after" arm in both: first the one process, then the ``processes`` at once (each this CLI in a
    subprocess, ``OMP_NUM_THREADS`` its share), wall clocks from start to the last exit."""
    import subprocess
    import sys

    cmd = [sys.executable, "-m", "stepwiser_lib.tools.grpo_bench", "--profile", profile, "--model", model_dir]
    cmd += ["--steps", str(steps), "--skip", str(skip), "--repeats", "1", "--arms", "after"]
    cores = os.cpu_count() or 1
    out_dir.mkdir(parents=True, exist_ok=True)

    def launch(n: int, threads: int) -> tuple[float, list[dict]]:
        t0 = time.perf_counter()
        procs = [
            subprocess.Popen(
                [*cmd, "--out", str(out_dir / f"p{n}_{i}.json")],
                env={**os.environ, "OMP_NUM_THREADS": str(threads)},
                stdout=subprocess.DEVNULL,
                stderr=subprocess.DEVNULL,
            )
            for i in range(n)
        ]
        if any(p.wait() for p in procs):
            raise RuntimeError(f"a bench process failed: {' '.join(cmd)}")
        wall = time.perf_counter() - t0
        return wall, [json.loads((out_dir / f"p{n}_{i}.json").read_text())["after"] for i in range(n)]

    arms = {}
    for n, threads in ((1, cores), (processes, max(1, cores // processes))):
        wall, res = launch(n, threads)
        per_step = [r["seconds_per_step"] for r in res]
        arms[f"{n} process(es) x {threads} thread(s)"] = {
            "processes": n,
            "threads_each": threads,
            "seconds_per_step_each": per_step,
            "steps_per_hour": round(sum(3600 / x for x in per_step)),
            "wall_seconds_all": round(wall, 1),
            "steps_each": steps,
        }
    one, many = arms.values()
    return {
        "profile": profile,
        "model": paths.stored_path(model_dir),
        "steps": steps,
        "skip": skip,
        "machine": {"cpus": cores, "processor": platform.processor() or platform.machine()},
        "arms": arms,
        "throughput_ratio": round(many["steps_per_hour"] / one["steps_per_hour"], 2),
        "wall_ratio": round(processes * one["wall_seconds_all"] / many["wall_seconds_all"], 2),
    }


PART_NAMES = {
    "sampling": "group sampling (the loop)",
    "reward": "verdict reward",
    "reference_logprobs": "reference log-probabilities (KL anchor)",
    "loss_forward": "loss: the policy's forward pass",
    "backward": "backward pass (and TRL's batch preparation)",
    "optimizer_and_rest": "optimizer step and bookkeeping",
}


def readme_table(res: dict) -> str:
    """``results/bench/grpo_step.json`` as a table: each part's median seconds per step before and
    after, their ratio, and the sampling loop against the matmul floor."""
    b, a = res["before"], res["after"]

    def ratio(x, y):
        return f"{x / y:.2f}x" if y else "–"

    out = [
        f"One GRPO step at {res['profile']}'s settings ({res['settings']['prompts_per_step']} prompts x "
        f"{res['settings']['group_size']} completions, up to {res['settings']['max_completion']} new tokens), "
        f"median of {b['steps_timed']} steps after {res['skip']}, the better of {res['repeats']} alternations; "
        f"{res['machine']['cpus']} CPU cores.",
        "",
        "| part | before: s per step (share) | after: s per step (share) | before / after |",
        "|---|---|---|---|",
    ]
    for p in PARTS:
        out.append(
            f"| {PART_NAMES[p]} | {b['parts_seconds'][p]} ({b['parts_share'][p]:.0%}) | "
            f"{a['parts_seconds'][p]} ({a['parts_share'][p]:.0%}) | {ratio(b['parts_seconds'][p], a['parts_seconds'][p])} |"
        )
    out += [
        f"| **the step** | **{b['seconds_per_step']}** | **{a['seconds_per_step']}** | "
        f"**{ratio(b['seconds_per_step'], a['seconds_per_step'])}** |",
        f"| new tokens per step | {b['new_tokens_per_step']} | {a['new_tokens_per_step']} | |",
        f"| sampling: new tokens/s (share of the matmul floor, {res['matmul_floor_tokens_per_s']} tokens/s) | "
        f"{b['sampling_new_tokens_per_s']} ({b['sampling_share_of_floor']:.1%}) | "
        f"{a['sampling_new_tokens_per_s']} ({a['sampling_share_of_floor']:.1%}) | |",
    ]
    ev = res.get("evaluation_pass")
    if ev:
        out += [
            "",
            f"The judge's evaluation pass (greedy, {ev['chunks']} dev chunks): {ev['seconds']} s, "
            f"{ev['new_tokens_per_s']} new tokens/s ({ev['share_of_floor']:.1%} of the floor).",
        ]
    return "\n".join(out)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--profile", default="toy-full", help="whose notebook-04 settings and training chunks")
    ap.add_argument("--model", default=None, help="the warm-up judge to start from (default: the profile's)")
    ap.add_argument("--steps", type=int, default=12, help="GRPO steps per arm and repeat")
    ap.add_argument("--skip", type=int, default=2, help="first steps of each arm left out of the medians")
    ap.add_argument("--repeats", type=int, default=2, help="alternations of the arms")
    ap.add_argument("--arms", nargs="*", default=list(ARMS), help=f"which of {list(ARMS)}")
    ap.add_argument("--out", default="results/bench/grpo_step.json")
    ap.add_argument(
        "--processes",
        type=int,
        default=0,
        help="instead: GRPO steps an hour of this many side-by-side processes against one (TRAIN_PROCESSES; "
        "writes --out, default results/bench/grpo_processes.json)",
    )
    a = ap.parse_args(argv)
    model = a.model or default_model(a.profile)
    if a.processes:
        out = Path(a.out if a.out != ap.get_default("out") else "results/bench/grpo_processes.json")
        res = processes_bench(
            a.profile, model, a.steps, a.skip, a.processes, paths.run_dir(a.profile) / "bench" / "processes"
        )
        out.parent.mkdir(parents=True, exist_ok=True)
        out.write_text(json.dumps(res, indent=2) + "\n")
        print(json.dumps({k: res[k] for k in ("throughput_ratio", "wall_ratio")}))
        return
    res = run(a.profile, model, a.steps, a.skip, {k: ARMS[k] for k in a.arms}, a.repeats)
    Path(a.out).parent.mkdir(parents=True, exist_ok=True)
    Path(a.out).write_text(json.dumps(res, indent=2) + "\n")
    print(json.dumps({k: v.get("seconds_per_step") for k, v in res.items() if isinstance(v, dict)}, indent=1))


if __name__ == "__main__":
    main()
