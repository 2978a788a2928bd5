"""Chunk-SFT recipe trials for the toy policy (issue 18; paper §3.2 and Table 4's claim that
self-segmentation keeps accuracy), measured on the policy's **dev** split (toy ``eval_dev``),
never on ``eval``, which Table 4 reports. Each trial appends one line to
``results/trials/chunk_sft.jsonl`` (settings, dev Avg@k with its 95% interval, greedy accuracy,
steps, the paired comparisons with the base, seconds); :func:`rsft_trial` does the same for
notebook 07's fine-tuning recipe (``results/trials/rsft.jsonl``) and :func:`reset_trial` for
notebook 06's policy temperature (``results/trials/chunk_reset.jsonl``). ``LAB_LOG.md``
tabulates them.

    python -m stepwiser_lib.tools.toy_trials --profile tiny --name tags --tag-init separator
    python -m stepwiser_lib.tools.toy_trials --table      # the lab log's table of every trial so far

The data is notebook 01's: the base policy's samples on the SFT split, cut to
``MAX_CORRECT_PER_PROBLEM`` correct ones per prompt and segmented by the rule teacher.
``--mix-plain F`` adds F times as many plain (untagged) records of the same correct solutions
under the base prompt, so SFT also rehearses what the base already did. [not in paper]
"""

from __future__ import annotations

import argparse
import json
import random
import time
from dataclasses import asdict
from pathlib import Path

from ..core import config, io, paths, prompts
from ..core.vocab import STYLE, WARMUP_OF, parse_variant
from ..engines.checkpoints import resolve_model
from ..engines.models import make_generator, release  # a trials CLI: torch at the top (tests/test_layers.py HEAVY)
from ..engines.sft import sft
from ..engines.trainers import SFTSettings
from ..evals.claims import DEGENERATE_SHARE, POSITIVE_RATE_RANGE
from ..evals.evaluation import (
    balanced_accuracy_ci,
    compare,
    compare_rates,
    judge_predictions,
    problem_predictions,
    rate_ci,
    reference_judge,
)
from ..method import chunk_reset as cr
from ..method import judge, judge_runs, judge_train, rsft, segmentation, tasks
from ..method.sampling import sample_solutions, solution_predictions, summarize
from ..toy import toyworld

TRIALS = Path("results") / "trials" / "chunk_sft.jsonl"
RSFT_TRIALS = Path("results") / "trials" / "rsft.jsonl"
RESET_TRIALS = Path("results") / "trials" / "chunk_reset.jsonl"
JUDGE_RSFT_TRIALS = Path("results") / "trials" / "judge_rsft.jsonl"
JUDGE_TRIALS = Path("results") / "trials" / "judge.jsonl"
HEADROOM_TRIALS = Path("results") / "trials" / "headroom.jsonl"
EXPLORE_TRIALS = Path("results") / "trials" / "judge_exploration.jsonl"


def _append(rel: Path, rec: dict) -> None:
    path = paths.ROOT / rel
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "a") as f:
        f.write(json.dumps(io.repo_relative(rec)) + "\n")


def plain_records(
    records: list[dict], problems: dict[str, str], base_prompt: str, fraction: float, seed: int = 0
) -> list[dict]:
    """``fraction`` times as many records as ``records`` (at most one per record), each the same
    correct solution untagged (``raw``) under the base policy's prompt, chosen seeded.
    ``problems``: problem id -> its text."""
    picked = random.Random(f"plain:{seed}").sample(records, min(len(records), round(fraction * len(records))))
    return [
        {
            "problem_id": r["problem_id"],
            "prompt": base_prompt.format(problem=problems[r["problem_id"]]),
            "completion": r["raw"],
        }
        for r in picked
    ]


def evaluate(
    model_dir: str,
    items: list[dict],
    template: str,
    chunked: bool,
    samples: int,
    max_new_tokens: int,
    seed: int,
    batch: int = 128,
) -> dict:
    """Avg@``samples`` at temperature 1 (Table 4's measure) and greedy accuracy on ``items``:
    the summary, the per-solution predictions (for the paired comparisons) and the greedy rate."""

    g = make_generator(model_dir, backend="hf", batch_size=batch)
    sampled = sample_solutions(g, items, template, samples, 1.0, max_new_tokens, seed=seed + 1)
    greedy = sample_solutions(g, items, template, 1, 0.0, max_new_tokens, seed=seed)
    release(g)
    preds = solution_predictions("chunk" if chunked else "base", "toy", seed + 1, sampled, chunked=chunked)
    s = summarize(sampled, chunked=chunked)
    return {
        "summary": {
            **s,
            "ci95": rate_ci(preds),
            "greedy_acc": round(100 * sum(r["correct"] for r in greedy) / len(greedy), 2),
        },
        "predictions": preds,
    }


def run_trial(
    profile: str,
    name: str,
    *,
    lr: float,
    epochs: float,
    use_lora: bool = False,
    tag_init: str = "random",
    mix_plain: float = 0.0,
    problems: int = 200,
    samples_per_problem: int = 4,
    max_correct: int = 4,
    eval_problems: int = 200,
    eval_samples: int = 4,
    max_new_tokens: int = 160,
    seed: int = 0,
    global_batch: int = 16,
    note: str = "",
) -> dict:
    """Train one chunk-SFT recipe from the toy base and measure it on ``eval_dev`` beside the base
    (both cached under ``runs/<profile>/trials/chunk_sft/``); returns the trial's record."""

    t0 = time.time()
    root = paths.run_dir(profile) / "trials" / "chunk_sft"
    base = resolve_model("toy_base")
    base_prompt, chunk_prompt = prompts.get("toy", "base_policy"), prompts.get("toy", "chunk_policy")
    train_items = tasks.load_problems("toy", "sft", problems, seed=seed)
    dev_items = tasks.load_problems("toy", "eval_dev", eval_problems, seed=seed)

    def sample():
        g = make_generator(base, backend="hf", batch_size=128)
        out = sample_solutions(g, train_items, base_prompt, samples_per_problem, 1.0, max_new_tokens, seed=seed)
        release(g)
        return out

    skey = io.digest(paths.model_fingerprint(base), problems, samples_per_problem, max_new_tokens, seed)
    samples = io.cached_jsonl(root / f"samples_{problems}x{samples_per_problem}.jsonl", skey, sample)
    records, stats = segmentation.build_sft_records(
        samples, lambda rs: [toyworld.teacher_segment(r) for r in rs], max_correct, chunk_prompt, seed=seed
    )
    texts = {r["problem_id"]: r["problem"] for r in samples}
    plain = plain_records(records, texts, base_prompt, mix_plain, seed) if mix_plain else []
    settings = SFTSettings(
        epochs=epochs,
        lr=lr,
        global_batch=global_batch,
        micro_batch=min(8, global_batch),
        max_length=512,
        use_lora=use_lora,
        seed=seed,
        name="SFT",
    )
    out = root / name
    sft = segmentation.sft_chunk_policy(base, records + plain, out, settings, tag_init=tag_init)
    ekey = io.digest(paths.model_fingerprint(base), [i["id"] for i in dev_items], eval_samples, max_new_tokens, seed)
    base_eval = io.cached_json(
        root / "base_eval_dev.json",
        ekey,
        lambda: evaluate(base, dev_items, base_prompt, False, eval_samples, max_new_tokens, seed),
    )
    # the base asked with the chunk prompt, before any SFT: what the prompt costs, apart from what SFT costs
    base_chunk = io.cached_json(
        root / "base_chunk_prompt_eval_dev.json",
        ekey,
        lambda: evaluate(base, dev_items, chunk_prompt, True, eval_samples, max_new_tokens, seed),
    )
    chunk_eval = evaluate(sft["model_dir"], dev_items, chunk_prompt, True, eval_samples, max_new_tokens, seed)
    comps = segmentation.table4_comparisons(chunk_eval["predictions"], base_eval["predictions"])
    man = io.read_json(Path(base) / "manifest.json")
    return {
        "name": name,
        "profile": profile,
        "note": note,
        "base": {
            "phases": len(man.get("phases", [])) or 1,
            "weights_sha256": man["files"].get("model.safetensors"),
            "last_phase": {k: man["training"].get(k) for k in ("max_steps", "check_fraction", "chunk_fraction")},
        },
        "settings": {
            "lr": lr,
            "epochs": epochs,
            "use_lora": use_lora,
            "tag_init": tag_init,
            "mix_plain": mix_plain,
            "problems": problems,
            "samples_per_problem": samples_per_problem,
            "max_correct": max_correct,
            "global_batch": settings.global_batch,
            "seed": seed,
        },
        "data": {**asdict(stats), "chunk_records": len(records), "plain_records": len(plain)},
        "tag_rows": sft.get("tag_rows", {}),
        "sft_steps": sft["steps"],
        "sft_seconds": sft.get("train_seconds"),
        "dev": {
            "problems": len(dev_items),
            "samples": eval_samples,
            "base": base_eval["summary"],
            "base_chunk_prompt": base_chunk["summary"],
            "chunk": chunk_eval["summary"],
        },
        "comparisons": comps,
        "seconds": round(time.time() - t0, 1),
    }


def rsft_trial(
    profile: str,
    name: str,
    *,
    policy: str | None = None,
    lr: float = 2e-4,
    epochs: float = 2.0,
    use_lora: bool = False,
    mix_sft: float = 0.0,
    prompts_n: int = 100,
    samples: int = 4,
    eval_problems: int = 200,
    max_new_tokens: int = 160,
    seed: int = 0,
    note: str = "",
) -> dict:
    """Outcome-selected RS-FT (notebook 07's baseline arm: a random correct response per prompt)
    from ``policy`` (default: ``profile``'s chunk policy) with one fine-tuning recipe, greedy
    accuracy on ``eval_dev`` beside the policy's own, paired by problem. ``mix_sft`` adds that
    many times the selected records from notebook 01's SFT set (``sft.jsonl``: the teacher's
    segmentations), so fine-tuning also rehearses the chunk format it was taught. [not in paper]"""

    t0 = time.time()
    root = paths.run_dir(profile) / "trials" / "rsft"
    policy = policy or resolve_model("artifact", profile)
    template = prompts.get("toy", "chunk_policy")
    train_items = tasks.load_problems("toy", "rsft", prompts_n, seed=seed)
    dev = {"toy": tasks.load_problems("toy", "eval_dev", eval_problems, seed=seed)}

    def sample():
        g = make_generator(policy, backend="hf", batch_size=128)
        out = sample_solutions(g, train_items, template, samples, 1.0, max_new_tokens, seed=seed)
        release(g)
        return out

    fp = paths.model_fingerprint(policy)
    rows = io.cached_jsonl(
        root / f"samples_{prompts_n}x{samples}.jsonl", io.digest(fp, prompts_n, samples, max_new_tokens, seed), sample
    )
    items = rsft.group_items(train_items, rows)
    picks = [rsft.select_best([{"correct": c} for c in it["correct"]], "outcome", seed, it["id"]) for it in items]
    recs = rsft.sft_records(items, picks, template)
    extra = []
    if mix_sft:
        sft_set = io.read_jsonl(paths.artifacts(profile, "01_self_segmentation") / "sft.jsonl")
        extra = random.Random(f"mix:{seed}").sample(sft_set, min(len(sft_set), round(mix_sft * len(recs))))
        extra = [{"prompt": r["prompt"], "completion": r["completion"]} for r in extra]

    def evaluate_dir(d):
        g = make_generator(d, backend="hf", batch_size=128)
        out = rsft.evaluate_policy(g, dev, template, max_new_tokens, seed)
        release(g)
        return out

    base = io.cached_json(
        root / "policy_eval_dev.json",
        io.digest(fp, [i["id"] for i in dev["toy"]], max_new_tokens, seed),
        lambda: evaluate_dir(policy),
    )
    settings = SFTSettings(
        epochs=epochs, lr=lr, global_batch=16, micro_batch=8, max_length=512, use_lora=use_lora, seed=seed, name="SFT"
    )
    r = sft(policy, recs + extra, root / name, settings)
    after = evaluate_dir(r["model_dir"])
    ids = [f"toy/{i['id']}" for i in dev["toy"]]
    comp = compare_rates(
        problem_predictions("rsft", "toy", seed, ids, after["correct"]["toy"]),
        problem_predictions("policy", "toy", seed, ids, base["correct"]["toy"]),
    )
    return {
        "name": name,
        "profile": profile,
        "note": note,
        "kind": "rsft",
        "settings": {
            "lr": lr,
            "epochs": epochs,
            "use_lora": use_lora,
            "mix_sft": mix_sft,
            "prompts": prompts_n,
            "samples": samples,
            "seed": seed,
        },
        "data": {
            "responses": len(rows),
            "correct_rate": round(100 * sum(x["correct"] for x in rows) / len(rows), 2),
            "records": len(recs),
            "sft_records": len(extra),
        },
        "sft_steps": r["steps"],
        "sft_seconds": r.get("train_seconds"),
        "dev": {
            "problems": len(dev["toy"]),
            "policy_greedy_acc": base["acc"]["toy"],
            "rsft_greedy_acc": after["acc"]["toy"],
        },
        "comparison": comp,
        "seconds": round(time.time() - t0, 1),
    }


def judge_rsft_trial(
    profile: str,
    name: str,
    *,
    rule: str = "rel_ratio",
    lr: float | None = None,
    epochs: float | None = None,
    samples: int | None = None,
    per_example: int | None = None,
    use_lora: bool | None = None,
    loss_tokens: str | None = None,
    seed: int = 0,
    note: str = "",
) -> dict:
    """The RS-FT judge (notebook 04's "Ablate RL" arm, paper Table 6) with one recipe, from
    ``profile``'s CoT warm-up and judge splits, measured on the **dev** chunks only: balanced
    accuracy, Positive rate, and the share of verdicts equal to the warm-up's
    (:data:`stepwiser_lib.evals.claims.DEGENERATE_SHARE`: a judge at or above it never left its
    start). Settings left None are the profile's (issue 35: the RS-FT judge of toy-full gave the
    warm-up's verdicts on every test chunk)."""

    t0 = time.time()
    cfg = config.for_notebook(profile, "04_judge_grpo")
    recipe = judge_train.recipe_from_config(cfg)
    rs = recipe["rsft"].with_(
        **{k: v for k, v in (("lr", lr), ("epochs", epochs), ("use_lora", use_lora)) if v is not None}
    )
    recipe = {
        **recipe,
        "rsft": rs,
        "rsft_loss_tokens": loss_tokens or "all",
        "rsft_samples": samples or recipe["rsft_samples"],
        "rsft_per_example": per_example or recipe["rsft_per_example"],
    }
    data, _ = judge_runs.read_splits(profile, [rule])
    art = paths.artifacts(profile, "04_judge_grpo")
    warm = art / "warmup_cot" / "model"
    out = paths.run_dir(profile) / "trials" / "judge_rsft" / name
    r = judge_train.train_variant(
        f"rsft:{rule}",
        data,
        out,
        base_model=str(warm),
        warmups={"cot": str(warm)},
        recipe=recipe,
        family="toy",
        seed=seed,
    )
    dev = data[rule]["dev_balanced"]

    def judged(model_dir):
        j = judge.Judge.load(str(model_dir), batch_size=128, family="toy", max_new_tokens=recipe["rl"].max_completion)
        v = [x["verdict"] for x in j.judge([judge.triple(e) for e in dev])]
        release(j)
        return v

    after, before = judged(r["entry"]["base"]), judged(warm)
    preds = [
        {"problem_id": e["problem_id"], "label": e["label"], "verdict": v == "Positive" if v else None}
        for e, v in zip(dev, after)
    ]
    same = sum(a == b for a, b in zip(after, before)) / len(dev)
    return {
        "name": name,
        "profile": profile,
        "note": note,
        "kind": "judge_rsft",
        "rule": rule,
        "settings": {
            "lr": rs.lr,
            "epochs": rs.epochs,
            "use_lora": rs.use_lora,
            "loss_tokens": recipe["rsft_loss_tokens"],
            "samples": recipe["rsft_samples"],
            "per_example": recipe["rsft_per_example"],
            "seed": seed,
        },
        "kept": r["train"]["rsft_kept"],
        "sampled": r["train"]["rsft_sampled"],
        "dev": {
            "chunks": len(dev),
            "balanced_acc": balanced_accuracy_ci(preds)["balanced_acc"],
            "positive_rate": round(100 * sum(v == "Positive" for v in after) / len(dev), 2),
            "same_as_warmup": round(100 * same, 2),
            "unmoved": same
            >= DEGENERATE_SHARE,  # never left its start (claims.unmoved); "degenerate" is the Positive rate
        },
        "seconds": round(time.time() - t0, 1),
    }


def _judge_trial_setup(
    profile: str,
    kind: str,
    rule: str,
    init: str | None,
    warmup_steps: int | None,
    overrides: dict | None,
    train_limit: int = 0,
):
    """A judge trial's notebook 04 config with ``overrides``, its recipe, the judge data, the
    initial model, the trials folder and the warm-ups (cached under ``trials/judge/warmups`` by
    the settings that make them)."""
    cfg = config.for_notebook(profile, "04_judge_grpo")
    changes = {**(overrides or {}), **({"WARMUP_STEPS": warmup_steps} if warmup_steps is not None else {})}
    unknown = sorted(set(changes) - set(cfg.as_dict()))
    if unknown:
        raise ValueError(f"not notebook 04 parameters: {unknown}")
    cfg = config.Config(cfg.notebook, {**cfg.as_dict(), **changes})
    recipe = judge_train.recipe_from_config(cfg)
    data, _ = judge_runs.read_splits(profile, [rule])
    if train_limit:
        data[rule]["train_balanced"] = judge_train.balanced_order(data[rule]["train_balanced"], 2, 0)[:train_limit]
    init_dir = init or resolve_model(cfg.JUDGE_INIT, profile)
    root = paths.run_dir(profile) / "trials" / "judge"
    variant = f"{kind}:{rule}"
    warm_art = (
        root
        / "warmups"
        / io.digest(
            paths.model_fingerprint(init_dir), cfg.WARMUP_STEPS, cfg.WARMUP_LR, cfg.WARMUP_ANALYSIS, cfg.WARMUP_VERDICT
        )[:12]
    )
    warm_art.mkdir(parents=True, exist_ok=True)
    warmups, _, _ = judge_runs.warmup_stage(
        warm_art, cfg, [parse_variant(variant)], variant if kind == "stepwiser" else None, init_dir, data
    )
    return cfg, recipe, data, init_dir, root, warmups


def explore_trial(
    profile: str,
    name: str,
    *,
    rule: str = "rel_ratio",
    k: int = 8,
    temperatures: tuple[float, ...] = (1.0,),
    group: int = 4,
    overrides: dict | None = None,
    note: str = "",
) -> dict:
    """What the StepWiser judge's GRPO groups can find, before any RL (issue 59): the CoT warm-up
    of the trial settings ``overrides`` (the start RL trains from) judges every **dev** chunk
    greedily and ``k`` times at each rollout temperature; :func:`judge_runs.exploration` counts
    exact analyses among the samples, groups of ``group`` with differing rewards and whether
    the reward favours exact analyses. The test split is never read."""
    t0 = time.time()
    cfg, _, data, init_dir, _, warmups = _judge_trial_setup(profile, "stepwiser", rule, None, None, overrides)
    dev = data[rule]["dev_balanced"]
    j = judge.load_judge(
        {"style": "cot", "base": str(warmups.get(WARMUP_OF["stepwiser"]) or init_dir), "adapter": None},
        "toy",
        cfg.MAX_COMPLETION,
        cfg.JUDGE_BATCH,
    )
    triples = [judge.triple(e) for e in dev]
    greedy = j.judge(triples)
    by_t = {}
    for t in temperatures:
        res = j.judge(triples, k=k, temperature=t, seed=cfg.SEED, samples=True)
        by_t[str(t)] = judge_runs.exploration(dev, greedy, [r["samples"] for r in res], group=group)
        print(json.dumps({"trial": name, "temperature": t, **by_t[str(t)]}), flush=True)
    release(j)
    return {
        "name": name,
        "profile": profile,
        "note": note,
        "kind": "exploration",
        "settings": {"WARMUP_ANALYSIS": cfg.WARMUP_ANALYSIS, "WARMUP_VERDICT": cfg.WARMUP_VERDICT, "k": k}
        | dict(overrides or {}),
        "dev_chunks": len(dev),
        "greedy_exact": judge_runs.rate_ci(
            [tasks.analysis_checks(e, g["analysis"])["exact"] for e, g in zip(dev, greedy)]
        ),
        "temperatures": by_t,
        "seconds": round(time.time() - t0, 1),
    }


def judge_trial(
    profile: str,
    name: str,
    *,
    kind: str = "stepwiser",
    rule: str = "rel_ratio",
    seeds: tuple[int, ...] = (0,),
    init: str | None = None,
    warmup_steps: int | None = None,
    overrides: dict | None = None,
    train_limit: int = 0,
    note: str = "",
) -> dict:
    """One recipe of a judge ``kind`` (notebook 04; issue 47: judges that learn), measured on the
    profile's **dev** chunks only: for each training seed the dev balanced accuracy, Positive rate
    and what the judge writes (:func:`stepwiser_lib.method.judge_runs.behaviour`: exact analyses,
    verdicts that follow them), with the seconds per GRPO step; the start (the warm-up) the same
    way. ``overrides``: notebook 04 parameters (``GRPO_STEPS``, ``LOSS_TOKENS``, ``BETA``, ...);
    ``init``: another initial model (default the profile's ``JUDGE_INIT``); ``train_limit``: the
    first N balanced training examples only (a learning curve; 0: all). Models live under
    ``runs/<profile>/trials/judge/``; the test split is never read."""

    t0 = time.time()
    cfg, recipe, data, init_dir, root, warmups = _judge_trial_setup(
        profile, kind, rule, init, warmup_steps, overrides, train_limit
    )
    variant = f"{kind}:{rule}"
    dev = data[rule]["dev_balanced"]

    def measure(entry: dict) -> dict:
        j = judge.load_judge(entry, "toy", cfg.MAX_COMPLETION, cfg.JUDGE_BATCH)
        acc, judged = judge.evaluate_judge(j, dev)
        release(j)
        beh = judge_runs.behaviour(judged, dev) if entry["style"] == "cot" else None
        # the verdict its own analysis implies, read by a rule: what a judge that reads it could reach
        implied = [tasks.analysis_verdict(x["analysis"]) for x in judged] if entry["style"] == "cot" else []
        rule = (
            judge.step_accuracy(
                [{"verdict": None if v is None else ("Positive" if v else "Negative")} for v in implied], dev
            )["balanced_acc"]
            if any(v is not None for v in implied)
            else None
        )
        return (
            judged,
            implied,
            {
                "balanced_acc": acc["balanced_acc"],
                "ci95": balanced_accuracy_ci(
                    [
                        {"problem_id": e["problem_id"], "label": e["label"], "verdict": x["verdict"] == "Positive"}
                        for e, x in zip(dev, judged)
                        if x["verdict"]
                    ]
                ),
                "positive_rate": acc["positive_rate"],
                "unparsed": acc["unparsed"],
                "truth_balanced_acc": acc.get("truth_balanced_acc"),
                "analysis_rule_balanced_acc": rule,
                **({k: v["rate"] for k, v in beh.items()} if beh else {}),
            },
        )

    style = STYLE[kind]
    start_style = WARMUP_OF[kind]
    start = {"style": style, "base": str(warmups.get(start_style) or init_dir), "adapter": None, "max_new_tokens": 8}
    start_judged, start_implied, start_m = measure(start)
    # the yardstick RL must beat (issue 59): a fixed rule reading the start's own analysis
    preds = judge_predictions(variant, rule, "dev_balanced", dev, start_judged)
    start_rule = reference_judge(preds, "start analysis read by a rule", start_implied) if start_implied else None
    runs = []
    for sd in seeds:
        out = root / name / f"seed{sd}"
        r = judge_train.train_variant(
            variant, data, out, base_model=init_dir, warmups=warmups, recipe=recipe, family="toy", seed=sd
        )
        tr = r["train"]
        judged, _, m = measure({**r["entry"], "max_new_tokens": r["entry"].get("max_new_tokens", cfg.MAX_COMPLETION)})
        paired = {}
        if start_rule:
            c = compare([judge_predictions(variant, rule, "dev_balanced", dev, judged)], start_rule)
            paired["minus_start_rule"] = {k: c.get(k) for k in ("diff", "low", "high", "p_bootstrap", "verdict")}
            paired["analysis_change"] = judge_runs.analysis_change(start_judged, judged, dev)
        lo, hi = POSITIVE_RANGE
        runs.append(
            {
                "seed": sd,
                **m,
                **paired,
                "degenerate": not lo <= m["positive_rate"] <= hi,
                "train_seconds": tr["seconds"],
                "seconds_per_step": round(tr["seconds"] / max(1, tr["steps"]), 2),
                "steps": tr["steps"],
                "train_examples": tr["train_examples"],
                **({"grpo_log": grpo_log_summary(tr["log_history"])} if tr.get("log_history") else {}),
            }
        )
        print(json.dumps({"trial": name, **runs[-1]}), flush=True)
    accs = [r["balanced_acc"] for r in runs]
    return {
        "name": name,
        "profile": profile,
        "note": note,
        "kind": variant,
        "init": paths.stored_path(init_dir) if init else cfg.JUDGE_INIT,
        "settings": {
            k: getattr(cfg, k)
            for k in (
                "WARMUP_STEPS",
                "WARMUP_ANALYSIS",
                "WARMUP_VERDICT",
                "GRPO_STEPS",
                "PROMPTS_PER_STEP",
                "GROUP_SIZE",
                "GRPO_LR",
                "LOSS_TOKENS",
                "BALANCED_STEPS",
                "BETA",
                "USE_LORA",
                "LORA_R",
                "TEMPERATURE",
                "MAX_COMPLETION",
            )
        }
        | dict(overrides or {}),
        "train_limit": train_limit,
        "dev_chunks": len(dev),
        "start": start_m,
        "runs": runs,
        "mean_balanced_acc": round(sum(accs) / len(accs), 2),
        "min_balanced_acc": min(accs),
        "degenerate_runs": sum(r["degenerate"] for r in runs),
        "seconds": round(time.time() - t0, 1),
    }


#: The GRPO log fields :func:`grpo_log_summary` keeps (TRL's names).
GRPO_LOG_FIELDS = ("reward", "entropy", "frac_reward_zero_std", "completions/mean_length", "kl")


def grpo_log_summary(log_history: list[dict]) -> dict:
    """A GRPO run's training log in a few numbers (issue 59: why RL left the analysis where it
    was): the mean of each of :data:`GRPO_LOG_FIELDS` over the first and the last fifth of the
    logged steps (``entropy``: nats per output token; ``frac_reward_zero_std``: the share of groups
    whose rewards all agree, which teach nothing)."""
    rows = [h for h in log_history if "reward" in h]
    if not rows:
        return {}
    k = max(1, len(rows) // 5)

    def mean(part, f):
        xs = [float(h[f]) for h in part if f in h]
        return round(sum(xs) / len(xs), 4) if xs else None

    return {
        "steps_logged": len(rows),
        **{f"first_{f}": mean(rows[:k], f) for f in GRPO_LOG_FIELDS},
        **{f"last_{f}": mean(rows[-k:], f) for f in GRPO_LOG_FIELDS},
    }


#: The columns of :func:`explore_markdown`: :func:`judge_runs.exploration`'s rates, in words.
EXPLORE_COLUMNS = {
    "sample_exact": "exact analyses among the samples",
    "any_exact_where_greedy_inexact": "an exact sample where the greedy analysis is inexact",
    "mixed_group": "groups with differing rewards",
    "rewarded_if_exact": "reward rate: exact samples",
    "rewarded_if_inexact": "reward rate: inexact samples",
}


def explore_markdown(records: list[dict]) -> str:
    """The exploration diagnostics (:func:`explore_trial`) as the lab log's table: one row per
    trial and rollout temperature, each rate with its Wilson 95% interval."""
    cols = list(EXPLORE_COLUMNS)
    out = [
        "| trial | temperature | greedy: exact analyses | "
        + " | ".join(f"{EXPLORE_COLUMNS[c]} (%)" for c in cols)
        + " |",
        "|---|---|---|" + "---|" * len(cols),
    ]

    def cell(x):
        return f"{x['rate']} [{x['low']}, {x['high']}] (n {x['n']})" if x and x["rate"] is not None else "–"

    for r in records:
        for t, e in r["temperatures"].items():
            head = f"| {r['name']} (k {e['k']}, groups of {e['group']}) | {t} | {cell(r['greedy_exact'])} | "
            out.append(head + " | ".join(cell(e[c]) for c in cols) + " |")
    return "\n".join(out) + "\n"


def judge_markdown(records: list[dict]) -> str:
    """The judge trials as the lab log's table: one row per trial, every seed's dev numbers."""
    out = [
        "| trial | settings changed | start: dev bal. acc / exact % | dev balanced acc per seed | Positive % per seed "
        "| exact analysis % per seed | s per step |",
        "|---|---|---|---|---|---|---|",
    ]
    paired = []  # issue 59's trials also pair each run with its start, chunk by chunk
    for r in records:
        ch = ", ".join(
            f"{k}={v}" for k, v in r["settings"].items() if k not in JUDGE_DEFAULT_KEYS or k in r.get("note", "")
        )
        out.append(
            f"| {r['name']} | {r['note'] or ch} | {r['start']['balanced_acc']} / {r['start'].get('analysis_exact', '–')} | "
            + " ".join(str(x["balanced_acc"]) for x in r["runs"])
            + " | "
            + " ".join(str(x["positive_rate"]) for x in r["runs"])
            + " | "
            + " ".join("–" if x.get("analysis_exact") is None else str(x["analysis_exact"]) for x in r["runs"])
            + f" | {r['runs'][0]['seconds_per_step']} |"
        )
        if any("minus_start_rule" in x for x in r["runs"]):
            paired.append(
                f"| {r['name']} | {r['start'].get('analysis_rule_balanced_acc')} | "
                + "; ".join(
                    f"{x['minus_start_rule']['diff']:+.2f} [{x['minus_start_rule']['low']:+.2f}, "
                    f"{x['minus_start_rule']['high']:+.2f}]"
                    for x in r["runs"]
                )
                + " | "
                + "; ".join(
                    f"{c['exact_before']} → {c['exact_after']} (−{c['lost']} +{c['gained']}, p {c['p']:.2g})"
                    for x in r["runs"]
                    if (c := x.get("analysis_change"))
                )
                + " |"
            )
    if paired:
        out += [
            "",
            "| trial | start read by a rule: dev bal. acc | RL − that rule per seed [95%], paired bootstrap by problem "
            "| exact analyses, start → after RL per seed (lost, gained; exact McNemar p) |",
            "|---|---|---|---|",
            *paired,
        ]
    return "\n".join(out) + "\n"


#: A trained judge is degenerate when its Positive rate is outside this range: the claims table's
#: one definition (issue 59).
POSITIVE_RANGE = POSITIVE_RATE_RANGE
JUDGE_DEFAULT_KEYS: tuple[str, ...] = ()


def headroom_trial(
    profile: str,
    name: str,
    *,
    slices: tuple[tuple[tuple[int, int], tuple[int, int]], ...],
    n_problems: int = 128,
    temperature: float = 0.4,
    seed: int = 0,
    note: str = "",
) -> dict:
    """Issue 60, item 1 (dev only): how often the plain chunk policy of ``profile`` (notebook 06's
    arm without a judge: one sample per chunk at ``temperature``, notebook 06's default 0.4,
    :func:`chunk_reset.run_arm`) is
    right on ``eval_dev`` problems of each slice of the toy world, ``((steps low, high),
    (distractors low, high))``: where chunk-reset and RS-FT have room to help (the issue asks for a
    slice where it is right on roughly 40-70%). Each rate with its 95% interval (resampling problems)."""
    t0 = time.time()
    policy = make_generator(resolve_model("artifact", profile), backend="hf", batch_size=128)
    template = prompts.get("toy", "chunk_policy")
    rows = []
    for steps, distractors in slices:
        items = tasks.load_problems("toy", "eval_dev", n_problems, seed=seed, steps=steps, distractors=distractors)
        ids = [f"toy/{i['id']}" for i in items]
        rec = cr.run_arm(
            policy, None, items, template, cr.ResetConfig(temperature=temperature, seed=seed), tasks.is_correct
        )
        preds = problem_predictions("plain", "toy", seed, ids, rec["correct"])
        rows.append({"steps": list(steps), "distractors": list(distractors), "n": len(items), "ci95": rate_ci(preds)})
        print(rows[-1], flush=True)
    release(policy)
    return {
        "name": name,
        "profile": profile,
        "note": note,
        "policy": f"notebook 01's chunk policy, one sample per chunk at temperature {temperature:g} (notebook 06's plain arm)",
        "split": "eval_dev",
        "temperature": temperature,
        "seed": seed,
        "rows": rows,
        "seconds": round(time.time() - t0, 1),
    }


def reset_trial(
    profile: str,
    name: str,
    *,
    temperatures: tuple[float, ...] = (1.0, 0.7, 0.4),
    judge_name: str = "stepwiser:rel_ratio",
    n_problems: int = 128,
    seed: int = 0,
    note: str = "",
    steps: tuple[int, int] | None = None,
    distractors: tuple[int, int] | None = None,
) -> dict:
    """Chunk-reset's policy sampling temperature (not in the paper; notebook 06's ``TEMPERATURE``)
    on ``eval_dev``: at each temperature the plain sampled policy and the reset with
    ``judge_name`` (notebook 04's registry at ``profile``), on common random numbers, and the
    greedy policy once; each arm's accuracy with its 95% interval and the paired differences
    judge - no judge and each arm - greedy (paired bootstrap by problem). ``steps``,
    ``distractors``: another slice of the toy world (issue 60, :func:`headroom_trial`)."""

    t0 = time.time()
    policy_dir = resolve_model("artifact", profile)
    entry = judge_runs.read_registry(profile, [judge_name])[judge_name]
    template = prompts.get("toy", "chunk_policy")
    world = {k: v for k, v in (("steps", steps), ("distractors", distractors)) if v is not None}
    items = tasks.load_problems("toy", "eval_dev", n_problems, seed=seed, **world)
    ids = [f"toy/{i['id']}" for i in items]
    policy = make_generator(policy_dir, backend="hf", batch_size=128)
    j = judge.load_judge(entry, "toy", 128, 128)
    arms, preds = {}, {}

    def arm(label, jd, cfg):
        rec = cr.run_arm(policy, jd, items, template, cfg, tasks.is_correct)
        preds[label] = problem_predictions(label, "toy", cfg.seed, ids, rec["correct"])
        arms[label] = {**rec["summary"], "ci95": rate_ci(preds[label])}
        print(label, arms[label], flush=True)

    arm("greedy", None, cr.ResetConfig(max_attempts=1, temperature=0.0, seed=seed))
    comps = []
    for t in temperatures:
        cfg = cr.ResetConfig(temperature=t, seed=seed)
        arm(f"no judge T={t:g}", None, cfg)
        arm(f"{judge_name} T={t:g}", j, cfg)
        comps += [
            compare_rates(preds[f"{judge_name} T={t:g}"], preds[f"no judge T={t:g}"]),
            compare_rates(preds[f"no judge T={t:g}"], preds["greedy"]),
            compare_rates(preds[f"{judge_name} T={t:g}"], preds["greedy"]),
        ]
    release(j)
    release(policy)
    return {
        "name": name,
        "profile": profile,
        "note": note,
        "kind": "chunk_reset",
        "settings": {
            "temperatures": list(temperatures),
            "judge": judge_name,
            "problems": n_problems,
            "seed": seed,
            "policy": policy_dir,
            **{k: list(v) for k, v in world.items()},
        },
        "dev": arms,
        "comparisons": comps,
        "seconds": round(time.time() - t0, 1),
    }


def _base_label(base: dict | None) -> str:
    """The toy base a trial started from: its number of phases, and for a third phase its steps and
    chunk-document share (trials before the three-phase base recorded nothing: two phases)."""
    if not base:
        return "2"
    last = base.get("last_phase") or {}
    if base["phases"] < 3 or not last:
        return str(base["phases"])
    return f"{base['phases']} ({last['max_steps']} steps, chunk {last['chunk_fraction']:g})"


def markdown(records: list[dict]) -> str:
    """The chunk-SFT trials (records of :func:`run_trial`) as the lab log's table: settings, SFT
    records and steps, dev Avg@k and greedy accuracy of the chunk policy, its steps and format
    rate, the paired Avg@k difference with the base (95% interval) and seconds."""
    head = (
        "| trial | base (phases) | lr | epochs | batch | LoRA | tags | plain mix | SFT prompts × samples | records "
        "| SFT steps | base dev Avg@k | base, chunk prompt | dev Avg@k | greedy | steps | format % | chunk − base Avg@k [95%] "
        "| s |\n" + "|---" * 19 + "|\n"
    )
    rows = []
    for r in records:
        st, d = r["settings"], r["dev"]["chunk"]
        acc = next(c for c in r["comparisons"] if c["field"] == "correct")
        phases = _base_label(r.get("base"))
        rows.append(
            f"| {r['name']} | {phases} | {st['lr']:g} | {st['epochs']:g} | {st.get('global_batch', 16)} "
            f"| {'yes' if st['use_lora'] else 'no'} | {st['tag_init']} "
            f"| {st['mix_plain']:g} | {st['problems']} × {st['samples_per_problem']} "
            f"| {r['data']['chunk_records'] + r['data']['plain_records']} "
            f"| {r['sft_steps']} | {r['dev']['base']['avg_acc']} | {r['dev'].get('base_chunk_prompt', {}).get('avg_acc', '–')} | {d['avg_acc']} | {d['greedy_acc']} | {d['steps']} "
            f"| {d['format_ok']} | {acc['diff']:+.1f} [{acc['low']:+.1f}, {acc['high']:+.1f}] | {r['seconds']:.0f} |"
        )
    return head + "\n".join(rows) + "\n"


def rsft_markdown(records: list[dict]) -> str:
    """The RS-FT recipe trials (records of :func:`rsft_trial`) as the lab log's table: settings,
    records trained on, the policy's and the fine-tuned policy's greedy dev accuracy and their
    paired difference (95% interval)."""
    head = (
        "| trial | lr | epochs | LoRA | SFT-set mix | prompts × samples | records | SFT steps | policy greedy "
        "| RS-FT greedy | RS-FT − policy [95%] | s |\n" + "|---" * 12 + "|\n"
    )
    rows = []
    for r in records:
        st, c = r["settings"], r["comparison"]
        rows.append(
            f"| {r['name']} | {st['lr']:g} | {st['epochs']:g} | {'yes' if st['use_lora'] else 'no'} | {st['mix_sft']:g} "
            f"| {st['prompts']} × {st['samples']} | {r['data']['records'] + r['data']['sft_records']} | {r['sft_steps']} "
            f"| {r['dev']['policy_greedy_acc']} | {r['dev']['rsft_greedy_acc']} "
            f"| {c['diff']:+.1f} [{c['low']:+.1f}, {c['high']:+.1f}] | {r['seconds']:.0f} |"
        )
    return head + "\n".join(rows) + "\n"


def headroom_markdown(records: list[dict]) -> str:
    """The lab log's table of :func:`headroom_trial` records: one row per trial and slice."""
    lines = [
        "| trial | policy temperature | steps | distractors | plain chunk policy right, eval_dev (%) [95%] | problems |",
        "|---|---|---|---|---|---|",
    ]
    for r in records:
        for row in r["rows"]:
            ci = row["ci95"]
            lines.append(
                f"| {r['name']} | {r['temperature']:g} | {'-'.join(map(str, row['steps']))} | "
                f"{'-'.join(map(str, row['distractors']))} | {ci['acc']:.1f} [{ci['low']:.1f}, {ci['high']:.1f}] | {row['n']} |"
            )
    return "\n".join(lines) + "\n"


def reset_markdown(records: list[dict]) -> str:
    """The chunk-reset temperature trials (records of :func:`reset_trial`): each arm's dev accuracy
    with its 95% interval, rejected length and judge calls, then the paired differences."""
    out = []
    for r in records:
        out += [
            f"**{r['name']}** ({r['settings']['problems']} dev problems, judge {r['settings']['judge']}, {r['seconds']:.0f} s)",
            "",
            "| arm | accuracy [95%] | accepted length | rejected length | judge calls |",
            "|---|---|---|---|---|",
        ]
        out += [
            f"| {k} | {v['accuracy']} [{v['ci95']['low']}, {v['ci95']['high']}] | {v['accepted_length']} | {v['rejected_length']} "
            f"| {v['judge_calls']} |"
            for k, v in r["dev"].items()
        ]
        out += ["", "| a − b | diff [95%] | verdict |", "|---|---|---|"]
        out += [
            f"| {c['a']} − {c['b']} | {c['diff']:+.1f} [{c['low']:+.1f}, {c['high']:+.1f}] | {c['verdict']} |"
            for c in r["comparisons"]
        ]
        out.append("")
    return "\n".join(out)


def _slice(text: str) -> tuple[tuple[int, int], tuple[int, int]]:
    """A slice of the toy world from the command line: ``STEPS:DISTRACTORS``, each ``N`` or ``LO-HI``."""

    def span(x: str) -> tuple[int, int]:
        lo, _, hi = x.partition("-")
        return int(lo), int(hi or lo)

    steps, _, distractors = text.partition(":")
    return span(steps), span(distractors)


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--profile", default="tiny")
    ap.add_argument("--name")
    ap.add_argument("--lr", type=float, default=5e-4)
    ap.add_argument("--epochs", type=float, default=4.0)
    ap.add_argument("--lora", action="store_true")
    ap.add_argument("--tag-init", default="random", choices=["random", "separator"])
    ap.add_argument("--mix-plain", type=float, default=0.0)
    ap.add_argument("--problems", type=int, default=200)
    ap.add_argument("--samples-per-problem", type=int, default=4)
    ap.add_argument("--batch", type=int, default=16, help="SFT global batch (micro batch 8)")
    ap.add_argument("--max-correct", type=int, default=4, help="correct responses kept per SFT prompt")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--note", default="")
    ap.add_argument("--rsft", action="store_true", help="an RS-FT recipe from the chunk policy instead (rsft_trial)")
    ap.add_argument("--mix-sft", type=float, default=0.0)
    ap.add_argument("--rsft-prompts", type=int, default=100, help="RS-FT training prompts (the pool)")
    ap.add_argument("--rsft-samples", type=int, default=4, help="RS-FT responses per prompt")
    ap.add_argument("--policy", default=None, help="RS-FT start (default: the profile's chunk policy)")
    ap.add_argument("--reset", action="store_true", help="chunk-reset's policy temperature instead (reset_trial)")
    ap.add_argument("--temperatures", type=float, nargs="+", default=[1.0, 0.7, 0.4])
    ap.add_argument(
        "--judge-rsft", action="store_true", help="the RS-FT judge's recipe instead (judge_rsft_trial), on dev chunks"
    )
    ap.add_argument("--rsft-per-example", type=int, default=None)
    ap.add_argument(
        "--loss-tokens",
        default=None,
        choices=["all", "verdict"],
        help="the RS-FT judge's loss tokens (default: all, as notebook 04)",
    )
    ap.add_argument(
        "--judge", action="store_true", help="a judge recipe instead (judge_trial): dev balanced accuracy per seed"
    )
    ap.add_argument("--kind", default="stepwiser", help="judge kind of --judge (stepwiser, no_cot_rl, ...)")
    ap.add_argument("--seeds", type=int, nargs="+", default=[0], help="training seeds of --judge")
    ap.add_argument("--init", default=None, help="--judge: another initial model (default: the profile's)")
    ap.add_argument("--warmup-steps", type=int, default=None)
    ap.add_argument("--train-limit", type=int, default=0, help="--judge: the first N training examples only")
    ap.add_argument("--set", nargs="*", default=[], help="--judge: notebook 04 parameters, NAME=VALUE (YAML values)")
    ap.add_argument(
        "--explore",
        action="store_true",
        help="what the judge's GRPO groups can find (explore_trial): k samples per dev chunk from the warm-up",
    )
    ap.add_argument("--k", type=int, default=8, help="--explore: samples per chunk")
    ap.add_argument("--table", action="store_true", help="print the trials so far as the lab log's tables")
    ap.add_argument(
        "--headroom",
        nargs="+",
        metavar="STEPS:DISTRACTORS",
        help="the plain chunk policy's accuracy on eval_dev slices, e.g. 2-4:0-2 5-7:2-4 (headroom_trial)",
    )
    ap.add_argument("--problems-per-slice", type=int, default=128)
    ap.add_argument(
        "--slice", default=None, help="--reset: eval_dev problems of this slice, STEPS:DISTRACTORS (e.g. 5:1-3)"
    )
    a = ap.parse_args(argv)
    if a.table:
        print(markdown(io.read_jsonl(paths.ROOT / TRIALS)), end="")
        for path, fmt in (
            (RSFT_TRIALS, rsft_markdown),
            (RESET_TRIALS, reset_markdown),
            (JUDGE_TRIALS, judge_markdown),
            (EXPLORE_TRIALS, explore_markdown),
            (HEADROOM_TRIALS, headroom_markdown),
        ):
            if (paths.ROOT / path).exists():
                print("\n" + fmt(io.read_jsonl(paths.ROOT / path)), end="")
        return
    if not a.name:
        ap.error("--name is required for a trial")
    if a.judge or a.explore:
        import yaml

        def value(v: str):
            x = yaml.safe_load(v)
            try:  # YAML reads "1e-4" as a string
                return float(x) if isinstance(x, str) else x
            except ValueError:
                return x

        overrides = {k: value(v) for k, v in (x.split("=", 1) for x in a.set)}
        if a.explore:
            rec = explore_trial(
                a.profile, a.name, k=a.k, temperatures=tuple(a.temperatures), overrides=overrides, note=a.note
            )
            _append(EXPLORE_TRIALS, rec)
            return
        rec = judge_trial(
            a.profile,
            a.name,
            kind=a.kind,
            seeds=tuple(a.seeds),
            init=a.init,
            warmup_steps=a.warmup_steps,
            overrides=overrides,
            train_limit=a.train_limit,
            note=a.note,
        )
        _append(JUDGE_TRIALS, rec)
        print(json.dumps({k: rec[k] for k in ("name", "start", "mean_balanced_acc", "min_balanced_acc", "seconds")}))
        return
    if a.judge_rsft:
        rec = judge_rsft_trial(
            a.profile,
            a.name,
            lr=a.lr,
            epochs=a.epochs,
            samples=a.rsft_samples,
            per_example=a.rsft_per_example,
            use_lora=True if a.lora else None,
            loss_tokens=a.loss_tokens,
            seed=a.seed,
            note=a.note,
        )
        _append(JUDGE_RSFT_TRIALS, rec)
        print(json.dumps({k: rec[k] for k in ("name", "settings", "kept", "sampled", "dev", "seconds")}, indent=1))
        return
    if a.headroom:
        slices = tuple(_slice(x) for x in a.headroom)
        rec = headroom_trial(
            a.profile,
            a.name,
            slices=slices,
            n_problems=a.problems_per_slice,
            temperature=a.temperatures[0],
            seed=a.seed,
            note=a.note,
        )
        _append(HEADROOM_TRIALS, rec)
        return
    if a.reset:
        world = {}
        if a.slice:  # STEPS:DISTRACTORS, as --headroom takes them
            world = dict(zip(("steps", "distractors"), _slice(a.slice)))
        rec = reset_trial(a.profile, a.name, temperatures=tuple(a.temperatures), seed=a.seed, note=a.note, **world)
        _append(RESET_TRIALS, rec)
        print(
            json.dumps(
                {
                    "dev": {k: (v["accuracy"], v["ci95"]["low"], v["ci95"]["high"]) for k, v in rec["dev"].items()},
                    "comparisons": [(c["a"], c["b"], c["diff"], c["low"], c["high"]) for c in rec["comparisons"]],
                    "seconds": rec["seconds"],
                },
                indent=1,
            )
        )
        return
    if a.rsft:
        rec = rsft_trial(
            a.profile,
            a.name,
            policy=a.policy,
            lr=a.lr,
            epochs=a.epochs,
            use_lora=a.lora,
            mix_sft=a.mix_sft,
            prompts_n=a.rsft_prompts,
            samples=a.rsft_samples,
            seed=a.seed,
            note=a.note,
        )
        _append(RSFT_TRIALS, rec)
        print(
            json.dumps(
                {
                    "name": a.name,
                    **rec["dev"],
                    "comparison": {k: rec["comparison"][k] for k in ("diff", "low", "high", "verdict")},
                    "seconds": rec["seconds"],
                },
                indent=1,
            )
        )
        return
    rec = run_trial(
        a.profile,
        a.name,
        lr=a.lr,
        epochs=a.epochs,
        use_lora=a.lora,
        tag_init=a.tag_init,
        mix_plain=a.mix_plain,
        problems=a.problems,
        samples_per_problem=a.samples_per_problem,
        max_correct=a.max_correct,
        global_batch=a.batch,
        seed=a.seed,
        note=a.note,
    )
    _append(TRIALS, rec)
    d = rec["dev"]
    print(
        json.dumps(
            {
                "name": a.name,
                "base": {k: d["base"][k] for k in ("avg_acc", "greedy_acc", "steps")},
                "chunk": {k: d["chunk"][k] for k in ("avg_acc", "greedy_acc", "steps", "format_ok")},
                "comparisons": [(c["field"], c["diff"], c["low"], c["high"], c["verdict"]) for c in rec["comparisons"]],
                "seconds": rec["seconds"],
            },
            indent=1,
        )
    )


if __name__ == "__main__":
    main()
