"""``make bench``: how fast and how frugal the rollout labelling is (writes results/bench/labelling.json).

Measured in one run, on the same prefixes with the same model:

* **naive**: one generate call per prefix with its M rollouts as the batch (the simple
  ``num_return_sequences=M`` loop most implementations start from);
* **batched**: every rollout of every prefix in sorted, left-padded batches of ``GEN_BATCH``
  (what :func:`stepwiser_lib.labelling.label_shard` does);
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
import time

from . import chunks, io, labelling, paths, prompts, tasks
from .models import make_generator, set_threads


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
    """0/1 outcomes of m rollouts for every prefix; one call per prefix or one call for all."""
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
    return res, dt


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


def run(profile: str = "tiny", n_prompts: int = 12, m: int = 16, batch: int = 128, seed: int = 0) -> dict:
    set_threads()
    params = {"POLICY_MODEL": "artifact"}
    policy = labelling.resolve_policy(params, profile)
    gen = make_generator(policy, batch_size=batch)
    cfg = labelling.LabelConfig(m_rollouts=m, adaptive=True, adaptive_rule="rel_ratio",
                                adaptive_round=4, traj_per_prompt=2, seed=seed)
    template = prompts.TOY_CHUNK_POLICY
    items = tasks.load_problems("toy", "label", n_prompts, seed=seed + 12345)
    trajs = _prefixes(gen, items, template, cfg, seed)
    n_pref = sum(len(t["prefixes"]) for t in trajs)
    if not n_pref:
        raise RuntimeError("no prefixes to roll out: the chunk policy solved all or none of the prompts")
    batched, dt_b = _outcomes(gen, trajs, template, m, seed, False, cfg.max_new_tokens)
    naive, dt_n = _outcomes(gen, trajs, template, m, seed + 10_000, True, cfg.max_new_tokens)
    again, _ = _outcomes(gen, trajs, template, m, seed + 20_000, False, cfg.max_new_tokens)
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
        "naive_rollouts_per_s": round(n_pref * m / dt_n, 1),
        "batched_rollouts_per_s": round(n_pref * m / dt_b, 1),
        "speedup": round(dt_n / dt_b, 2),
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
                     "batched": f"all prefixes x M rollouts, sorted by length, batches of {batch}"},
        "machine": {"cpus": os.cpu_count(), "platform": platform.platform(),
                    "processor": platform.processor() or platform.machine()},
        "seconds": {"naive": round(dt_n, 1), "batched": round(dt_b, 1)},
    }
    io.write_result(paths.ROOT / "results" / "bench" / "labelling.json", out)
    return out


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--profile", default="tiny", help="whose notebook-01 chunk policy to use")
    ap.add_argument("--prompts", type=int, default=12)
    ap.add_argument("--m", type=int, default=16)
    ap.add_argument("--batch", type=int, default=128)
    a = ap.parse_args(argv)
    import json

    print(json.dumps(run(a.profile, a.prompts, a.m, a.batch), indent=1))


if __name__ == "__main__":
    main()
