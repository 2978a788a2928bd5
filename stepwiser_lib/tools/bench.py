"""``make bench``: how fast and how frugal the rollout labelling is (writes results/bench/labelling.json).

Measured in one run, with the same model:

* **naive**: one ``model.generate`` call per prefix with its M rollouts as the batch (the simple
  ``num_return_sequences=M`` loop most implementations start from);
* **batched**: every rollout of every prefix in sorted, left-padded batches of ``GEN_BATCH``
  through ``model.generate`` (``HFGenerator(engine="generate")``, the engine before issue 16);
* **loop**: the same rollouts through :mod:`stepwiser_lib.engines.decoding` (``HFGenerator``'s default
  engine: each prefix prefilled once for its M samples, finished rows leave, new prefixes join);
  these three on the same prefixes, ``repeats`` times each (min / median / max);
* **adaptive**: every setting of :data:`SWEEP_ROUNDS` x :data:`SWEEP_Z`, for each rule it can
  preserve (``vocab.ADAPTIVE_RULES``), replayed on the second of two independent full-M
  loop runs over more prefixes, its labels compared rule by rule with the first run; the target
  is the agreement of the two full-M runs themselves (the Monte-Carlo noise floor), at no more
  than half the rollouts. :func:`choose_adaptive` picks the cheapest setting that reaches it.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import random
import statistics
import time
from dataclasses import replace

from ..core import chunks, io, paths, prompts, vocab
from ..engines.checkpoints import resolve_model
from ..engines.models import HFGenerator, make_generator, set_threads
from ..evals.stats import mcnemar_exact
from ..method import labelling, tasks


def _prefixes(gen, items, template, cfg, seed):
    """Intermediate prefixes of chunk-policy trajectories of prompts kept by the pre-filter."""
    out = []
    pre = gen.generate(
        [template.format(problem=it["problem"]) for it in items],
        n=cfg.n_prefilter,
        temperature=1.0,
        max_new_tokens=cfg.max_new_tokens,
        seed=seed,
    )

    rng = random.Random(seed)
    for it, cands in zip(items, pre):
        res = [(c.text, tasks.is_correct(it, c.text)) for c in cands]
        q0 = sum(ok for _, ok in res) / len(res)
        if not 0 < q0 < 1:
            continue
        for j in labelling.choose_trajectories(res, cfg.traj_per_prompt, rng):
            text, ok = res[j]
            ends = chunks.chunk_ends(text)
            out.append({"item": it, "q0": q0, "correct": ok, "prefixes": [text[:e] for e in ends[:-1]]})
    return out


def _outcomes(gen, trajs, template, m, seed, per_prefix: bool, max_new_tokens: int):
    """0/1 outcomes of m rollouts for every prefix; one call per prefix or one call for all;
    also the seconds taken and the new tokens generated."""
    flat = [(t["item"], p) for t in trajs for p in t["prefixes"]]
    t0 = time.time()
    if per_prefix:
        outs = []
        for k, (it, p) in enumerate(flat):
            outs += gen.generate(
                [template.format(problem=it["problem"])],
                n=m,
                temperature=1.0,
                max_new_tokens=max_new_tokens,
                seed=seed + k,
                prefixes=[p],
            )
    else:
        outs = gen.generate(
            [template.format(problem=it["problem"]) for it, _ in flat],
            n=m,
            temperature=1.0,
            max_new_tokens=max_new_tokens,
            seed=seed,
            prefixes=[p for _, p in flat],
        )
    dt = time.time() - t0
    res = [[int(tasks.is_correct(it, p + c.text)) for c in cs] for (it, p), cs in zip(flat, outs)]
    return res, dt, sum(c.n_tokens for cs in outs for c in cs)


def matmul_tokens_per_s(model, seconds: float = 2.0) -> float:
    """The compute floor: new tokens/s if a decode step cost only its weight matmuls, measured as
    a 128-row batch through every linear layer's weight (``2 * params`` flops per token)."""
    import torch

    ws = [m.weight for m in model.modules() if isinstance(m, torch.nn.Linear)]
    x = {w.shape[1]: torch.randn(128, w.shape[1]) for w in ws}
    n, t0 = 0, time.time()
    with torch.no_grad():
        while time.time() - t0 < seconds:
            for w in ws:
                x[w.shape[1]] @ w.T
            n += 1
    return round(128 * n / (time.time() - t0))


def _labels_from(trajs, outcomes, cfg, counts=None, rule: str = "rel_ratio"):
    """``rule``'s labels of every chunk from per-prefix outcomes (optionally only the first k)."""
    labels, k = [], 0
    for t in trajs:
        os_ = [
            outcomes[k + i] if counts is None else outcomes[k + i][: counts[k + i]] for i in range(len(t["prefixes"]))
        ]
        k += len(t["prefixes"])
        q = labelling.Rollouts(t["q0"], t["correct"], [sum(o) for o in os_], [len(o) for o in os_]).q()
        prev = [t["q0"]] + q[:-1]
        labels += [labelling.rule_label(rule, a, b, cfg.alpha, cfg.gamma, cfg.mu_n) for a, b in zip(q, prev)]
    return labels


def _adaptive_counts(trajs, outcomes, cfg):
    """Rollouts the adaptive rule would use per prefix, replaying the given outcome streams through
    the labelling loop's own stopping rule (:meth:`stepwiser_lib.method.labelling.Rollouts.settled`)."""
    counts, k = [], 0
    for t in trajs:
        n = len(t["prefixes"])
        mc = labelling.Rollouts.start(t["q0"], t["correct"], n)
        active = list(range(n))
        while active:
            for i in active:
                o = outcomes[k + i][mc.done[i] : mc.done[i] + cfg.adaptive_round]
                mc.succ[i] += sum(o)
                mc.done[i] += len(o)
            active = [i for i in active if mc.done[i] < cfg.m_rollouts and not mc.settled(i, cfg)]
        counts += mc.done
        k += n
    return counts


#: The adaptive settings the bench compares (rounds of rollouts per prefix, Wilson z; z = 0 is
#: the exact bound), for each rule adaptive sampling may preserve.
SWEEP_ROUNDS = (2, 4)
SWEEP_Z = (0.0, 0.5, 1.0, 1.5)


def _agree(a: list, b: list) -> float:
    return round(sum(x == y for x, y in zip(a, b)) / len(a), 4)


def adaptive_sweep(trajs, first, second, cfg) -> dict:
    """Every adaptive setting replayed on the ``second`` full-M outcome stream and compared, rule
    by rule, with the labels of the independent ``first`` stream; beside it the noise floor, the
    agreement of the two full-M streams. Adaptive sampling cannot beat that floor on average (it
    sees fewer rollouts of the same kind). Per rule, ``p_below_floor`` is the one-sided exact
    McNemar test of "the full-M run agrees with the first run more often than the adaptive one",
    paired by chunk (both are read off the same second stream)."""
    n = sum(len(t["prefixes"]) for t in trajs)
    ref = {r: _labels_from(trajs, first, cfg, rule=r) for r in vocab.RULES}
    full2 = {r: _labels_from(trajs, second, cfg, rule=r) for r in vocab.RULES}
    floor = {r: _agree(full2[r], ref[r]) for r in vocab.RULES}
    rows = []
    for target in vocab.ADAPTIVE_RULES:
        for rnd in SWEEP_ROUNDS:
            for z in SWEEP_Z:
                c = replace(cfg, adaptive=True, adaptive_rule=target, adaptive_round=rnd, adaptive_z=z)
                counts = _adaptive_counts(trajs, second, c)
                row = {
                    "adaptive_rule": target,
                    "round": rnd,
                    "z": z,
                    "rollout_fraction": round(sum(counts) / (n * cfg.m_rollouts), 4),
                    "agreement": {},
                    "p_below_floor": {},
                }
                for r in vocab.RULES:
                    ad = _labels_from(trajs, second, cfg, counts, r)
                    b = sum(f == x != a for f, a, x in zip(full2[r], ad, ref[r]))  # only full M right
                    w = sum(a == x != f for f, a, x in zip(full2[r], ad, ref[r]))  # only adaptive right
                    row["agreement"][r] = _agree(ad, ref[r])
                    row["p_below_floor"][r] = round(mcnemar_exact(b, w), 4)
                rows.append(row)
    return {"noise_floor": floor, "chunks": len(ref["abs_q"]), "prefixes": n, "rows": rows}


def choose_adaptive(sweep: dict, rules=vocab.RULES, alpha: float = 0.05, strict: bool = False) -> dict | None:
    """The cheapest swept setting whose label agreement with the independent full-M run is not
    significantly below the noise floor (one-sided exact McNemar, level ``alpha``) for every rule
    in ``rules``; ``strict``: at least the floor itself. None if no setting qualifies."""

    def ok(r):
        return all(
            r["agreement"][k] >= sweep["noise_floor"][k] or (not strict and r["p_below_floor"][k] >= alpha)
            for k in rules
        )

    return min((r for r in sweep["rows"] if ok(r)), key=lambda r: (r["rollout_fraction"], r["z"]), default=None)


def _choices(sweep: dict) -> dict:
    """For each rule alone and for all three: the cheapest setting by the paired test, and by
    the strict floor."""
    targets = {**{k: (k,) for k in vocab.RULES}, "all": vocab.RULES}
    return {
        k: {"paired_test": choose_adaptive(sweep, rs), "strict": choose_adaptive(sweep, rs, strict=True)}
        for k, rs in targets.items()
    }


def run(
    profile: str = "tiny",
    n_prompts: int = 12,
    m: int = 16,
    batch: int = 128,
    seed: int = 0,
    repeats: int = 3,
    adaptive_prompts: int = 48,
) -> dict:
    set_threads()
    params = {"POLICY_MODEL": "artifact"}
    policy = resolve_model(params["POLICY_MODEL"], profile)
    loop_gen = make_generator(policy, batch_size=batch)  # the default engine: the loop
    gen = HFGenerator(loop_gen.model, loop_gen.tok, batch_size=batch, engine="generate")
    cfg = labelling.LabelConfig(m_rollouts=m, traj_per_prompt=2, seed=seed)
    template = prompts.TOY_CHUNK_POLICY
    items = tasks.load_problems("toy", "label", n_prompts, seed=seed + 12345)
    trajs = _prefixes(gen, items, template, cfg, seed)
    n_pref = sum(len(t["prefixes"]) for t in trajs)
    if not n_pref:
        raise RuntimeError("no prefixes to roll out: the chunk policy solved all or none of the prompts")
    timing = {"naive": [], "batched": [], "loop": []}
    toks = {}
    for r in range(repeats):  # the same rollouts each repeat: the spread is the machine's
        batched, dt, toks["batched"] = _outcomes(gen, trajs, template, m, seed, False, cfg.max_new_tokens)
        timing["batched"].append(dt)
        naive, dt, toks["naive"] = _outcomes(gen, trajs, template, m, seed + 10_000, True, cfg.max_new_tokens)
        timing["naive"].append(dt)
        looped, dt, toks["loop"] = _outcomes(loop_gen, trajs, template, m, seed + 30_000, False, cfg.max_new_tokens)
        timing["loop"].append(dt)
        print(
            f"[bench] repeat {r + 1}/{repeats}: " + ", ".join(f"{k} {v[-1]:.1f} s" for k, v in timing.items()),
            flush=True,
        )
    rate = {k: sorted(n_pref * m / t for t in v) for k, v in timing.items()}
    med = {k: statistics.median(v) for k, v in rate.items()}
    success = {
        k: round(sum(map(sum, o)) / (n_pref * m), 4)
        for k, o in (("naive", naive), ("batched", batched), ("loop", looped))
    }
    full = _labels_from(trajs, batched, cfg)
    # Adaptive sampling is judged on more prefixes than the timing (its agreement is a rate over
    # chunks), from two independent full-M streams of the loop, the engine notebook 02 uses.
    a_items = tasks.load_problems("toy", "label", adaptive_prompts, seed=seed + 54321)
    a_trajs = _prefixes(loop_gen, a_items, template, cfg, seed + 1)
    print(f"[bench] adaptive sweep: two full-M runs over {adaptive_prompts} prompts' prefixes", flush=True)
    first, _, _ = _outcomes(loop_gen, a_trajs, template, m, seed + 40_000, False, cfg.max_new_tokens)
    second, _, _ = _outcomes(loop_gen, a_trajs, template, m, seed + 50_000, False, cfg.max_new_tokens)
    sweep = adaptive_sweep(a_trajs, first, second, cfg)
    out = {
        "speedup": round(med["batched"] / med["naive"], 2),
        "loop_speedup": round(med["loop"] / med["naive"], 2),
        "success_rate": success,  # the same distribution on every path (a test checks it within a binomial interval)
        "loop_label_agreement_with_batched": _agree(_labels_from(trajs, looped, cfg), full),
        "adaptive": {**sweep, "chosen": _choices(sweep)},
        "settings": {
            "profile_policy": policy,
            "prefixes": n_pref,
            "trajectories": len(trajs),
            "chunks_labelled": len(full),
            "m_rollouts": m,
            "gen_batch": batch,
            "alpha": cfg.alpha,
            "gamma": cfg.gamma,
            "mu_n": cfg.mu_n,
            "adaptive_prompts": adaptive_prompts,
            "max_new_tokens": cfg.max_new_tokens,
            "naive": "one generate call per prefix, its M rollouts as the batch",
            "batched": f"all prefixes x M rollouts, sorted by length, batches of {batch}",
            "loop": f"stepwiser_lib.engines.decoding, at most {batch} rows at once",
        },
        "machine": {
            "cpus": os.cpu_count(),
            "platform": platform.platform(),
            "processor": platform.processor() or platform.machine(),
        },
        "repeats": repeats,
        "rollouts_per_s": {
            k: {"min": round(v[0], 1), "median": round(med[k], 1), "max": round(v[-1], 1)} for k, v in rate.items()
        },
        "new_tokens_per_s": {k: round(toks[k] / statistics.median(timing[k])) for k in timing},
        "matmul_floor_tokens_per_s": matmul_tokens_per_s(gen.model),
        "seconds": {k: round(statistics.median(v), 1) for k, v in timing.items()},
    }
    io.write_result(paths.ROOT / "results" / "bench" / "labelling.json", out)
    return out


def readme_table(res: dict) -> str:
    """The labelling-engine table of docs/results_tiny.md, from a ``make bench`` result (as written: speeds that
    differ run to run sit in its ``timings``)."""
    res = {**res.get("timings", {}), **res}
    r = res["rollouts_per_s"]
    three = lambda d: " / ".join(str(d[k]) for k in ("naive", "batched", "loop"))  # noqa: E731
    rows = ["| measure | value | target |", "|---|---|---|"]
    for k, label in (
        ("naive", "naive: one `generate` call per prefix, its M rollouts as the batch"),
        ("batched", "batched `generate` (sorted, left-padded batches)"),
        ("loop", 'the `stepwiser_lib.engines.decoding` loop (`engine="loop"`)'),
    ):
        rows.append(
            f"| rollouts/s, {label} (min / median / max of {res['repeats']}) | "
            f"{r[k]['min']} / {r[k]['median']} / {r[k]['max']} | |"
        )
    rows += [
        f"| new tokens/s: naive / batched / loop | {three(res['new_tokens_per_s'])} | |",
        f"| compute floor: new tokens/s if a step cost only its weight matmuls | {res['matmul_floor_tokens_per_s']} | |",
        f"| speedup over naive: batched / loop | {res['speedup']}x / {res['loop_speedup']}x | ≥ 3x |",
        f"| success rate of the rollouts: naive / batched / loop | {three(res['success_rate'])} | equal within noise |",
        f"| label agreement, loop vs batched full-M rollouts (Rel-Ratio) | {res['loop_label_agreement_with_batched']} | ≈ noise floor |",
    ]
    ad = res["adaptive"]
    floor = ad["noise_floor"]
    rules = ("abs_q", "rel_effective", "rel_ratio")
    rows += [
        "",
        f"Adaptive sampling, replayed on {ad['chunks']} chunks ({ad['prefixes']} prefixes) of two "
        "independent full-M runs of the loop: for each rule it must preserve (or all three), the cheapest swept "
        f"setting (rounds {', '.join(map(str, SWEEP_ROUNDS))}; Wilson z {', '.join(map(str, SWEEP_Z))}, 0 = exact bound) "
        "whose labels agree with the other run **not significantly less** than two full-M runs do (one-sided exact "
        "McNemar by chunk, 5%), and the cheapest that agrees **at least as well** (strict).",
        "",
        "| labels kept | criterion | `ADAPTIVE_RULE` | `ADAPTIVE_ROUND` | `ADAPTIVE_Z` | rollout fraction (target ≤ 0.5) | agreement Abs-Q / Rel-Eff. / Rel-Ratio | McNemar p |",
        "|---|---|---|---|---|---|---|---|",
        f"| – | noise floor (two full-M runs) | | | | 1.0 | {' / '.join(str(floor[k]) for k in rules)} | |",
    ]
    for target in (*rules, "all"):
        for crit in ("paired_test", "strict"):
            c = ad["chosen"][target][crit]
            name = "paired test" if crit == "paired_test" else "strict"
            if c is None:
                rows.append(f"| {target} | {name} | – | – | – | no swept setting qualifies | | |")
                continue
            keys = rules if target == "all" else (target,)
            rows.append(
                f"| {target} | {name} | {c['adaptive_rule']} | {c['round']} | {c['z']} | {c['rollout_fraction']} | "
                f"{' / '.join(str(c['agreement'][k]) for k in rules)} | "
                f"{' / '.join(str(c['p_below_floor'][k]) for k in keys)} |"
            )
    return "\n".join(rows)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--profile", default="tiny", help="whose notebook-01 chunk policy to use")
    ap.add_argument("--prompts", type=int, default=12)
    ap.add_argument("--m", type=int, default=16)
    ap.add_argument("--batch", type=int, default=128)
    ap.add_argument("--repeats", type=int, default=3, help="timed runs of each path (min/median/max)")
    ap.add_argument("--adaptive-prompts", type=int, default=48, help="prompts of the adaptive-sampling comparison")
    a = ap.parse_args(argv)

    print(
        json.dumps(
            run(a.profile, a.prompts, a.m, a.batch, repeats=a.repeats, adaptive_prompts=a.adaptive_prompts), indent=1
        )
    )


if __name__ == "__main__":
    main()
