"""``make bench``: how fast and how frugal the rollout labelling is (writes results/bench/labelling.json).

Measured in one run, on the same prefixes with the same model:

* **naive**: one generate call per prefix with its M rollouts as the batch (the simple
  ``num_return_sequences=M`` loop most implementations start from);
* **batched**: every rollout of every prefix in sorted, left-padded batches of ``GEN_BATCH``
  through ``model.generate`` (what :func:`stepwiser_lib.labelling.label_shard` does by default);
* **loop**: the same rollouts through :mod:`stepwiser_lib.decoding` (``HFGenerator(engine="loop")``:
  each prefix prefilled once for its M samples, finished rows leave, new prefixes join);
* **adaptive**: the exact-bound early stopping of ``labelling`` for Rel-Ratio; we report the
  fraction of full-M rollouts it used and its label agreement with full M; and the same for the
  confidence-bound variant (Wilson interval, z = 1; keys ``adaptive_z1_*``). Agreement is measured
  two ways: on the *same rollout stream* (the first k of the M outcomes; exact by construction)
  and against an *independent* full-M run; the latter is bounded by the agreement of two
  independent full-M runs (the Monte-Carlo noise floor), which we report as well.
"""

from __future__ import annotations

import argparse
import os
import platform
import statistics
import time
from pathlib import Path

from . import chunks, io, labelling, paths, prompts, tasks
from .models import HFGenerator, make_generator, set_threads


def _prefixes(gen, items, template, cfg, seed):
    """Intermediate prefixes of chunk-policy trajectories of prompts kept by the pre-filter."""
    out = []
    pre = gen.generate([template.format(problem=it["problem"]) for it in items], n=cfg.n_prefilter,
                       temperature=1.0, max_new_tokens=cfg.max_new_tokens, seed=seed)
    import random

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
            outs += gen.generate([template.format(problem=it["problem"])], n=m, temperature=1.0,
                                 max_new_tokens=max_new_tokens, seed=seed + k, prefixes=[p])
    else:
        outs = gen.generate([template.format(problem=it["problem"]) for it, _ in flat], n=m,
                            temperature=1.0, max_new_tokens=max_new_tokens, seed=seed,
                            prefixes=[p for _, p in flat])
    dt = time.time() - t0
    res = [[int(tasks.is_correct(it, p + c.text)) for c in cs] for (it, p), cs in zip(flat, outs)]
    return res, dt, sum(c.n_tokens for cs in outs for c in cs)


def _matmul_tokens_per_s(model, seconds: float = 2.0) -> float:
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


def _labels_from(trajs, outcomes, cfg, counts=None):
    """Rel-Ratio labels of every chunk from per-prefix outcomes (optionally only the first k)."""
    labels, k = [], 0
    for t in trajs:
        q = []
        for _ in t["prefixes"]:
            o = outcomes[k] if counts is None else outcomes[k][:counts[k]]
            q.append(sum(o) / len(o))
            k += 1
        q.append(1.0 if t["correct"] else 0.0)
        labels += labelling.rel_ratio_labels(q, t["q0"], cfg.gamma)
    return labels


def _adaptive_counts(trajs, outcomes, cfg):
    """Rollouts the adaptive rule would use per prefix, replaying the given outcome streams."""
    counts, k = [], 0
    for t in trajs:
        n = len(t["prefixes"])
        st = {"q0": t["q0"], "correct": t["correct"], "succ": [0] * n, "done": [0] * n}
        active = list(range(n))
        while active:
            for i in active:
                o = outcomes[k + i][st["done"][i]:st["done"][i] + cfg.adaptive_round]
                st["succ"][i] += sum(o)
                st["done"][i] += len(o)
            active = [i for i in active if st["done"][i] < cfg.m_rollouts
                      and not labelling._prefix_settled(st, i, cfg)]
        counts += st["done"]
        k += n
    return counts


def run(profile: str = "tiny", n_prompts: int = 12, m: int = 16, batch: int = 128, seed: int = 0,
        repeats: int = 3) -> dict:
    set_threads()
    params = {"POLICY_MODEL": "artifact"}
    policy = labelling.resolve_policy(params, profile)
    loop_gen = make_generator(policy, batch_size=batch)  # the default engine: the loop
    gen = HFGenerator(loop_gen.model, loop_gen.tok, batch_size=batch, engine="generate")
    cfg = labelling.LabelConfig(m_rollouts=m, adaptive=True, adaptive_rule="rel_ratio",
                                adaptive_round=4, traj_per_prompt=2, seed=seed)
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
    again, _, _ = _outcomes(gen, trajs, template, m, seed + 20_000, False, cfg.max_new_tokens)
    rate = {k: sorted(n_pref * m / t for t in v) for k, v in timing.items()}
    med = {k: statistics.median(v) for k, v in rate.items()}
    success = {k: round(sum(map(sum, o)) / (n_pref * m), 4) for k, o in
               (("naive", naive), ("batched", batched), ("loop", looped))}
    full = _labels_from(trajs, batched, cfg)
    counts = _adaptive_counts(trajs, batched, cfg)
    ad_same = _labels_from(trajs, batched, cfg, counts)
    counts_ind = _adaptive_counts(trajs, again, cfg)
    ad_ind = _labels_from(trajs, again, cfg, counts_ind)
    full_ind = _labels_from(trajs, again, cfg)
    from dataclasses import replace

    cfg_z = replace(cfg, adaptive_z=1.0)
    counts_z = _adaptive_counts(trajs, batched, cfg_z)
    ad_z = _labels_from(trajs, batched, cfg_z, counts_z)
    agree = lambda a, b: round(sum(x == y for x, y in zip(a, b)) / len(a), 4)
    out = {
        "speedup": round(med["batched"] / med["naive"], 2),
        "loop_speedup": round(med["loop"] / med["naive"], 2),
        "success_rate": success,  # the same distribution on every path (a test checks it within a binomial interval)
        "loop_label_agreement_independent_run": agree(_labels_from(trajs, looped, cfg), full),
        "adaptive_rollout_fraction": round(sum(counts) / (n_pref * m), 4),
        "adaptive_label_agreement": agree(ad_same, full),
        "adaptive_label_agreement_independent_run": agree(ad_ind, full),
        "full_m_agreement_two_independent_runs": agree(full_ind, full),
        "adaptive_z1_rollout_fraction": round(sum(counts_z) / (n_pref * m), 4),
        "adaptive_z1_label_agreement": agree(ad_z, full),
        "settings": {"profile_policy": policy, "prefixes": n_pref, "trajectories": len(trajs),
                     "chunks_labelled": len(full), "m_rollouts": m, "gen_batch": batch,
                     "rule": "rel_ratio", "gamma": cfg.gamma, "adaptive_round": cfg.adaptive_round,
                     "max_new_tokens": cfg.max_new_tokens,
                     "naive": "one generate call per prefix, its M rollouts as the batch",
                     "batched": f"all prefixes x M rollouts, sorted by length, batches of {batch}",
                     "loop": f"stepwiser_lib.decoding, at most {batch} rows at once"},
        "machine": {"cpus": os.cpu_count(), "platform": platform.platform(),
                    "processor": platform.processor() or platform.machine()},
        "repeats": repeats,
        "rollouts_per_s": {k: {"min": round(v[0], 1), "median": round(med[k], 1), "max": round(v[-1], 1)}
                           for k, v in rate.items()},
        "new_tokens_per_s": {k: round(toks[k] / statistics.median(timing[k])) for k in timing},
        "matmul_floor_tokens_per_s": _matmul_tokens_per_s(gen.model),
        "seconds": {k: round(statistics.median(v), 1) for k, v in timing.items()},
    }
    io.write_result(paths.ROOT / "results" / "bench" / "labelling.json", out)
    return out


README_MARK = "<!-- bench-table: generated by stepwiser_lib.bench.readme_table from results/bench/labelling.json -->\n"
README_END = "\n<!-- /bench-table -->"


def readme_table(res: dict) -> str:
    """The README's labelling-engine table, from a ``make bench`` result (as written: speeds that
    differ run to run sit in its ``timings``)."""
    res = {**res.get("timings", {}), **res}
    r = res["rollouts_per_s"]
    three = lambda d: " / ".join(str(d[k]) for k in ("naive", "batched", "loop"))  # noqa: E731
    rows = ["| measure | value | target |", "|---|---|---|"]
    for k, label in (("naive", "naive: one `generate` call per prefix, its M rollouts as the batch"),
                     ("batched", "batched `generate` (sorted, left-padded batches)"),
                     ("loop", "the `stepwiser_lib.decoding` loop (`engine=\"loop\"`)")):
        rows.append(f"| rollouts/s, {label} (min / median / max of {res['repeats']}) | "
                    f"{r[k]['min']} / {r[k]['median']} / {r[k]['max']} | |")
    rows += [f"| new tokens/s: naive / batched / loop | {three(res['new_tokens_per_s'])} | |",
             f"| compute floor: new tokens/s if a step cost only its weight matmuls | {res['matmul_floor_tokens_per_s']} | |",
             f"| speedup over naive: batched / loop | {res['speedup']}x / {res['loop_speedup']}x | ≥ 3x |",
             f"| success rate of the rollouts: naive / batched / loop | {three(res['success_rate'])} | equal within noise |",
             f"| adaptive rollout fraction (exact bound, Rel-Ratio) | {res['adaptive_rollout_fraction']} | ≤ 0.5 |",
             f"| adaptive label agreement (exact bound), same rollout stream | {res['adaptive_label_agreement']} | ≥ 0.95 |",
             f"| adaptive vs independent full-M run | {res['adaptive_label_agreement_independent_run']} | |",
             f"| confidence-bound adaptive (Wilson, z = 1): rollout fraction | {res['adaptive_z1_rollout_fraction']} | ≤ 0.5 |",
             f"| confidence-bound adaptive: label agreement, same stream | {res['adaptive_z1_label_agreement']} | ≥ 0.95 |",
             f"| loop rollouts vs an independent full-M run: label agreement | {res['loop_label_agreement_independent_run']} | ≈ noise floor |",
             f"| two independent full-M runs (noise floor) | {res['full_m_agreement_two_independent_runs']} | |"]
    return "\n".join(rows)


def update_readme(readme=None) -> bool:
    """Rewrite the README's bench table from ``results/bench/labelling.json``; True if it changed."""
    path = Path(readme or paths.ROOT / "README.md")
    table = readme_table(io.read_json(paths.ROOT / "results" / "bench" / "labelling.json"))
    text = path.read_text()
    head, rest = text.split(README_MARK)
    new = head + README_MARK + table + README_END + rest.split(README_END, 1)[1]
    path.write_text(new)
    return new != text


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--profile", default="tiny", help="whose notebook-01 chunk policy to use")
    ap.add_argument("--prompts", type=int, default=12)
    ap.add_argument("--m", type=int, default=16)
    ap.add_argument("--batch", type=int, default=128)
    ap.add_argument("--repeats", type=int, default=3, help="timed runs of each path (min/median/max)")
    a = ap.parse_args(argv)
    import json

    print(json.dumps(run(a.profile, a.prompts, a.m, a.batch, repeats=a.repeats), indent=1))
    update_readme()


if __name__ == "__main__":
    main()
