"""Stage 7: stepwise rejection-sampling fine-tuning, the judge as a data selector (paper §4.4,
Table 8).

The chunk policy samples N responses per training prompt. Each chunk is scored by a judge
(score = fraction of Positive verdicts over its samples; with one greedy sample, 1 or 0), the
response score is the **average chunk score**, and among the **correct** responses the best one
per prompt is kept. Baseline: outcome-based selection (a random correct response). The policy is
then fine-tuned on each selected set with the recipe of notebook 01 and evaluated greedily.
"""

from __future__ import annotations

import json
import random
import sys
from pathlib import Path

from ..core import inputs, io, paths, prompts, shards
from ..core.chunks import chunk_ends, parse_chunks
from ..core.config import ConfigError
from ..core.io import markdown_table
from ..core.verdicts import (
    RULE_VERSION,
    describe,
    informative,
    merge,
    tally,
    uninformative_comparison,
)
from ..core.vocab import variant_slug
from ..engines.checkpoints import resolve_model
from ..engines.sft import sft
from ..evals.evaluation import compare_rates, mean_sd, problem_predictions, rate_ci
from ..evals.paper_results import TABLE8
from . import judge, judge_runs, sampling, tasks
from .judge import stored_entry


def response_score(chunk_scores: list[float]) -> float | None:
    """Average chunk score (paper §4.4); None for a response without chunks."""
    return sum(chunk_scores) / len(chunk_scores) if chunk_scores else None


def select_best(candidates: list[dict], method: str = "judge", seed: int = 0, key: str = "") -> int | None:
    """Index of the selected response among one prompt's ``candidates`` (dicts with
    ``correct`` and, for ``method="judge"``, ``score``), or None if none is correct.

    * ``judge``: the correct response with the highest average chunk score; ties go to the
      lowest index (deterministic).
    * ``outcome``: a random correct response (seeded by ``seed`` and the prompt ``key``).
    An incorrect response is never selected.
    """
    ok = [i for i, c in enumerate(candidates) if c["correct"]]
    if not ok:
        return None
    if method == "outcome":
        return random.Random(f"outcome:{seed}:{key}").choice(ok)
    if method != "judge":
        raise ValueError(f"unknown selection method {method!r}; valid: judge, outcome")
    scored = [i for i in ok if candidates[i].get("score") is not None]
    if not scored:
        return ok[0]
    best = max(candidates[i]["score"] for i in scored)
    return min(i for i in scored if candidates[i]["score"] == best)


def score_responses(
    judge, items: list[dict], k: int = 1, seed: int = 0, progress: bool = False, with_tally: bool = False
):
    """Chunk scores for every response: ``items[i]["responses"]`` is a list of response texts
    for ``items[i]["problem"]``; all chunks of all responses go to the judge in one batch. A chunk's
    score is the fraction of its ``k`` judge outputs that say Positive, so an output without a
    parsable verdict counts 0 (:data:`stepwiser_lib.core.verdicts.RULE`). ``with_tally``: also return
    :func:`stepwiser_lib.core.verdicts.tally` of the judge's outputs; ``"per_item"``: one per item."""

    triples, where = [], []
    for i, it in enumerate(items):
        for r, resp in enumerate(it["responses"]):
            chunks = parse_chunks(resp)
            for c, ch in enumerate(chunks):
                triples.append((it["problem"], chunks[:c], ch))
                where.append((i, r))
    res = judge.judge(triples, k=k, seed=seed, progress=progress) if triples else []
    out = [[[] for _ in it["responses"]] for it in items]
    judged: list[list[dict]] = [[] for _ in items]
    for (i, r), x in zip(where, res):
        out[i][r].append(float(x["score"]))
        judged[i].append(x)
    if with_tally == "per_item":
        return out, [tally(j, k) for j in judged]
    return (out, tally(res, k)) if with_tally else out


#: Training prompts per shard of notebook 07's sampling and judge scoring
#: (:mod:`stepwiser_lib.core.shards`): data-parallel workers take whole shards, and a dead worker
#: loses at most one. Fixed, so the results do not depend on the number of workers; every toy
#: profile's prompts are one shard.
SHARD_PROMPTS = 256


def sample_responses(
    policy: str,
    items: list[dict],
    template: str,
    art,
    *,
    samples: int,
    temperature: float,
    max_new_tokens: int,
    seed: int,
    backend: str = "hf",
    gen_batch: int = 128,
    engine: dict | None = None,
    reference: bool = False,
    worker: int = 0,
    workers: int = 1,
    shard_size: int = SHARD_PROMPTS,
) -> tuple[list[dict] | None, str]:
    """Notebook 07, section 1: ``samples`` responses per training prompt from the chunk policy
    (one record per response, ``data/README.md``), cached in ``art/samples.jsonl`` under a key of
    the policy's weights, the prompts and the sampling settings; ``reference`` adds each prompt's
    reference solution (colab-smoke's shortcut). Returns the records and the key, which the
    later caches of the notebook build on.

    The prompts are sampled in shards of ``shard_size`` (shard ``i`` with
    :func:`~stepwiser_lib.core.shards.shard_seed`, so one shard samples as an unsharded run), kept in
    ``art/samples.shards`` until the notebook joins them. With ``workers`` K > 1 (``python -m
    stepwiser_lib.method.rsft --worker I --workers K``, one process per GPU) this process samples
    only its shards and returns None for the records while another worker's are missing."""
    from ..engines.models import make_generator, release  # lazy: torch

    key = io.digest(
        paths.model_fingerprint(policy),
        [i["id"] for i in items],
        samples,
        temperature,
        max_new_tokens,
        seed,
        *(["reference"] if reference else []),
        *shards.layout(len(items), shard_size),
    )
    path = Path(art) / "samples.jsonl"
    rows = io.cached_rows(path, key)
    if rows is not None:
        return rows, key
    holder: dict = {}

    def one(part, sid):
        if "gen" not in holder:
            holder["gen"] = make_generator(policy, backend=backend, batch_size=gen_batch, **(engine or {}))
        recs = sampling.sample_solutions(
            holder["gen"],
            part,
            template,
            samples,
            temperature,
            max_new_tokens,
            seed=shards.shard_seed(seed, sid),
            progress="sample",
        )
        return [recs[i * samples : (i + 1) * samples] for i in range(len(part))]  # one list per prompt

    per_prompt, _ = shards.run(
        items, shard_size, one, Path(art) / "samples.shards", key, worker=worker, workers=workers
    )
    if "gen" in holder:
        release(holder["gen"])  # one engine at a time on a GPU
    if per_prompt is None:
        return None, key
    rows = [r for rs in per_prompt for r in rs] + (sampling.reference_samples(items, chunked=True) if reference else [])
    if workers == 1:  # the join: only the notebook (one process) writes it and removes the shards
        rows = io.cached_jsonl(path, key, lambda: rows)
        shards.clear(Path(art) / "samples.shards")
    return rows, key


def sft_records(items: list[dict], picks: list[int | None], template: str) -> list[dict]:
    """Prompt/completion SFT records of the selected responses (prompts without a pick are
    skipped). Completions are cut after the last ``</chunk>`` so trailing text is not trained."""
    out = []
    for it, p in zip(items, picks):
        if p is None:
            continue
        resp = it["responses"][p]
        ends = chunk_ends(resp)
        out.append({"prompt": template.format(problem=it["problem"]), "completion": resp[: ends[-1]] if ends else resp})
    return out


# ----------------------------------------------------------------------------- notebook 07's driver

#: The row names of Table 8's analogue that are not a judge.
BASE = "chunk policy (greedy, no RS-FT)"
OUTCOME = "outcome-based selection"


def group_items(train_items: list[dict], rows: list[dict]) -> list[dict]:
    """Sampled ``rows`` (one per response, with ``problem_id``, ``response``, ``correct``) grouped
    per training prompt, in ``train_items`` order: ``problem``, ``id``, ``responses``, ``correct``."""
    by_prompt: dict[str, list[dict]] = {}
    for r in rows:
        by_prompt.setdefault(r["problem_id"], []).append(r)
    return [
        {
            "problem": it["problem"],
            "id": it["id"],
            "responses": [r["response"] for r in by_prompt[it["id"]]],
            "correct": [r["correct"] for r in by_prompt[it["id"]]],
        }
        for it in train_items
    ]


def samples_report(rows: list[dict], items: list[dict], reference: bool = False) -> dict:
    """Notebook 07, section 1's printout: what the policy's own responses look like
    (:func:`~stepwiser_lib.method.sampling.rates_line`; a shortcut's reference solutions left out),
    whether ``reference`` added them, and how many prompts (``items``, :func:`group_items`) have a
    correct response. Returns the ``samples`` entry of ``metrics.json``."""
    rates = sampling.record_rates(rows)
    n_ok = sum(any(it["correct"]) for it in items)
    print(sampling.rates_line(rates, "responses"))
    if reference:
        print(f"+ {len(items)} reference solutions [shortcut: REFERENCE_SAMPLES] as candidates")
    print(f"{n_ok}/{len(items)} prompts have a correct response")
    return {
        "responses": len(rows),
        "correct_rate": round(100 * sum(r["correct"] for r in rows) / len(rows), 2),
        "prompts_with_correct": n_ok,
        "output_rates": rates,
    }


def score_judge(
    name: str,
    entry: dict,
    items: list[dict],
    art,
    key: str,
    load,
    *,
    judge_k: int,
    max_completion: int,
    seed: int,
    worker: int = 0,
    workers: int = 1,
    shard_size: int = SHARD_PROMPTS,
) -> dict | None:
    """One judge's chunk scores of every response (:func:`score_responses`), cached in
    ``art/scores__<judge>.json`` under the samples' ``key`` and the judge's settings:
    ``chunk_scores`` (per prompt, per response), ``verdicts`` (the tally of its outputs) and
    ``seconds``. ``load``: entry -> judge, called only when a shard is not on disk, released once it
    has scored. The prompts go in shards as :func:`sample_responses`'s do; with ``workers`` K > 1
    this process scores only its shards and returns None while another worker's are missing."""
    from ..engines.models import release  # lazy: torch

    path = Path(art) / f"scores__{variant_slug(name)}.json"
    rkey = io.digest(
        key, stored_entry(entry), judge_k, max_completion, RULE_VERSION, *shards.layout(len(items), shard_size)
    )
    if io.has_cached(path, rkey):
        return io.read_json(path)
    holder: dict = {}

    def one(part, sid):
        if "judge" not in holder:
            holder["judge"] = load(entry)
        sc, tl = score_responses(
            holder["judge"], part, k=judge_k, seed=shards.shard_seed(seed, sid), with_tally="per_item"
        )
        return [{"chunk_scores": c, "verdicts": t} for c, t in zip(sc, tl)]

    folder = path.with_suffix(".shards")
    rows, seconds = shards.run(items, shard_size, one, folder, rkey, worker=worker, workers=workers)
    if "judge" in holder:
        release(holder["judge"])  # the next engine (the next judge, the policy's evaluation) needs the memory
    if rows is None:
        return None
    rec = {
        "chunk_scores": [r["chunk_scores"] for r in rows],
        "verdicts": merge(*(r["verdicts"] for r in rows)),
        "seconds": seconds,
        "_key": rkey,
    }
    if workers == 1:  # the join: only the notebook writes it and removes the shards
        io.write_json(path, rec)
        shards.clear(folder)
    return rec


def select_all(
    items: list[dict], registry: dict[str, dict], load, art, key: str, *, judge_k: int, max_completion: int, seed: int
) -> tuple[dict, dict, dict]:
    """Notebook 07, section 2: outcome-based selection, then each judge of ``registry`` scoring
    every chunk (:func:`score_responses`, cached in ``art/scores__<judge>.json``; ``load``: entry ->
    judge, released once it has scored) and picking the correct response with the best average
    chunk score (:func:`select_best`). Returns method -> one pick per prompt (None: no correct
    response), judge -> chunk scores, judge -> how its outputs parsed (:func:`stepwiser_lib.core.verdicts.tally`)."""
    picks = {
        "outcome": [select_best([{"correct": c} for c in it["correct"]], "outcome", seed, it["id"]) for it in items]
    }
    scores, tallies = {}, {}
    n_ok = max(1, sum(any(it["correct"]) for it in items))
    for name, entry in registry.items():
        rec = score_judge(name, entry, items, art, key, load, judge_k=judge_k, max_completion=max_completion, seed=seed)
        scores[name], tallies[name] = rec["chunk_scores"], rec.get("verdicts")
        picks[name] = [
            select_best([{"correct": c, "score": response_score(s)} for c, s in zip(it["correct"], sc)])
            for it, sc in zip(items, rec["chunk_scores"])
        ]
        agree = sum(a == b for a, b in zip(picks[name], picks["outcome"]) if a is not None) / n_ok
        print(
            f"{name:26s} scored in {rec['seconds']} s ({describe(tallies[name])}); picks the outcome baseline's "
            f"response for {100 * agree:.0f}% of prompts"
        )
    return picks, scores, tallies


def table(base_acc: dict[str, float], results: dict, methods: list[str], runs: int) -> list[dict]:
    """Table 8's analogue: the policy before RS-FT, then each selection's greedy accuracy per task
    (mean over ``runs`` SFT seeds), the average with its spread over seeds, and the records trained on.
    ``results``: (method, k) -> its evaluation."""
    rows = [
        {
            "method": BASE,
            **{f"{t} acc": a for t, a in base_acc.items()},
            "avg": round(sum(base_acc.values()) / len(base_acc), 2),
            "std": 0.0,
        }
    ]
    for method in methods:
        m, sd = mean_sd([sum(results[(method, k)]["acc"].values()) / len(base_acc) for k in range(runs)])
        row = {"method": OUTCOME if method == "outcome" else method}
        for t in base_acc:
            row[f"{t} acc"] = round(sum(results[(method, k)]["acc"][t] for k in range(runs)) / runs, 2)
        row.update(avg=round(m, 2), std=round(sd, 2), records=results[(method, 0)]["records"])
        rows.append(row)
    return rows


def predictions(
    base_eval: dict, results: dict, methods: list[str], eval_items: dict[str, list[dict]], runs: int, seed: int
) -> dict[str, list[dict]]:
    """Per-problem outcomes of every row of :func:`table` (``results/<profile>/rsft_predictions.jsonl``;
    a problem's SFT seeds are kept together by the intervals), row name -> records."""

    def preds(name, recs):
        return [
            p
            for s, rec in recs
            for t, its in eval_items.items()
            for p in problem_predictions(name, t, s, [f"{t}/{i['id']}" for i in its], rec["correct"][t])
        ]

    out = {BASE: preds(BASE, [(seed, base_eval)])}
    for method in methods:
        name = OUTCOME if method == "outcome" else method
        out[name] = preds(name, [(seed + k, results[(method, k)]) for k in range(runs)])
    return out


def with_verdicts(rows: list[dict], tallies: dict[str, dict]) -> list[dict]:
    """Table 8 rows with a ``verdicts`` column: how each selecting judge's outputs parsed (or that
    it was uninformative: it then picked by tie-breaking alone); "-" for the rows without a judge."""
    return [{**r, "verdicts": describe(tallies[r["method"]]) if r["method"] in tallies else "-"} for r in rows]


def comparisons(preds: dict[str, list[dict]], tallies: dict[str, dict] | None = None) -> list[dict]:
    """Table 8's questions, paired by problem (:func:`stepwiser_lib.evals.evaluation.compare_rates`):
    outcome selection against the policy before RS-FT, then each judge's selection against
    outcome's. A judge that gave no parsable verdict (``tallies``, :func:`select_all`) selected by
    tie-breaking alone: its comparison is :data:`~stepwiser_lib.core.verdicts.UNINFORMATIVE`."""

    def judged(n):
        if tallies is not None and not informative(tallies.get(n)):
            return uninformative_comparison(
                {"a": n, "b": OUTCOME}, f"not compared: {describe(tallies.get(n), label=False)}"
            )
        return compare_rates(preds[n], preds[OUTCOME])

    out = [
        {
            "claim": "RS-FT with outcome selection keeps the policy's accuracy",
            **compare_rates(preds[OUTCOME], preds[BASE]),
        }
    ]
    return out + [
        {"claim": "stepwise selection beats outcome selection (Table 8)", **judged(n)}
        for n in preds
        if n not in (BASE, OUTCOME)
    ]


def paper_rows(rules: set[str] | None = None) -> list[dict]:
    """The paper's Table 8 rows (Qwen2.5-7B-chunk) in notebook 07's columns: for display only.
    With ``rules``, only the rows without a judge and the judges of those label rules (the ones a
    run trained; ``results/<profile>/rsft.md`` has them all)."""
    return [
        {
            "method": f"PAPER 7B: {r['row']} {r['signal']}",
            "MATH500": r["math500"],
            "Heldout-1K": r["heldout"],
            "avg": r["avg"],
        }
        for r in TABLE8
        if rules is None or r["signal"] == "-" or r["signal"] in rules
    ]


def worked_judge(judges: list[str]) -> str | None:
    """The judge notebook 07 works the selection by hand with: the first StepWiser judge of
    ``judges``, else the first; None when there is none."""
    return next((n for n in judges if n.startswith("stepwiser:")), judges[0] if judges else None)


def hand_rows(item: dict, chunk_scores: list[list[float]], averages: list[float | None]) -> list[dict]:
    """The by-hand table of notebook 07's worked selection: one row per response of ``item`` with
    whether it is correct, its chunk scores and the ``averages`` the notebook computed by hand."""
    return [
        {
            "response": r,
            "correct": ok,
            "chunks": len(s),
            "chunk scores": [round(x, 2) for x in s],
            "average (by hand)": None if a is None else round(a, 3),
        }
        for r, (ok, s, a) in enumerate(zip(item["correct"], chunk_scores, averages))
    ]


def worked_example(items: list[dict], scores: list) -> int | None:
    """Notebook 07's worked selection, chosen by a stated rule (issue 36): the first prompt with two
    correct responses the judge scores differently, else the first with two correct ones; None when
    no prompt has two. ``scores``: one judge's chunk scores per prompt and response."""

    def averages(k):
        return {response_score(s) for ok, s in zip(items[k]["correct"], scores[k]) if ok and s}

    first = next((k for k in range(len(items)) if len(averages(k)) >= 2), None)
    return first if first is not None else next((k for k, it in enumerate(items) if sum(it["correct"]) >= 2), None)


def score_context(scores: list, items: list[dict], k: int, best: int | None) -> str:
    """What kind of example a worked selection is (issue 36): the judge's mean chunk score over
    every sampled chunk, and which wrong responses of prompt ``k`` (never selectable) score at
    least as high as the chosen response ``best``."""
    every = [x for per_prompt in scores for s in per_prompt for x in s]
    if not every:
        return "this judge scored no chunk"
    avg = {r: response_score(s) for r, s in enumerate(scores[k]) if s}
    top = avg.get(best) if best is not None else None
    level = [r for r, ok in enumerate(items[k]["correct"]) if not ok and top is not None and avg.get(r, -1) >= top]
    return (
        f"How to read it: over all {len(every)} sampled chunks this judge's mean chunk score is "
        f"{sum(every) / len(every):.2f}; here {len(level)} wrong response(s) (never selectable) score at "
        f"least as high as the chosen one{': ' + str(level) if level else ''}."
    )


def preference_pair(
    items: list[dict], scores: dict[str, list], judges: list[str], skip: set | None = None
) -> tuple[str, list[dict]]:
    """The first prompt where a judge (StepWiser judges first) scores two correct responses
    differently, other than the prompt indices in ``skip`` (one a notebook already showed): a
    caption (the judge, the problem) and one row per chunk of the preferred and the not preferred
    response side by side, each chunk after its score (and, on a toy problem, the exact checker's
    verdict on it given the chunks before it), each column headed by the response's average chunk
    score. No such prompt: a caption that says so and no rows."""

    def mark(x, problem, before, chunk):
        truth = tasks.step_truth({"problem": problem, "history": before, "chunk": chunk})
        return f"[{round(x, 2)}{'' if truth is None else '; right' if truth else '; wrong'}] "

    for name in sorted(judges, key=lambda n: not n.startswith("stepwiser:")):
        for k, (it, sc) in enumerate(zip(items, scores[name])):
            if k in (skip or set()):
                continue
            ok = [i for i, c in enumerate(it["correct"]) if c and sc[i]]
            avg = {i: response_score(sc[i]) for i in ok}
            if len(ok) >= 2 and max(avg.values()) > min(avg.values()):
                hi, lo = max(ok, key=lambda i: (avg[i], -i)), min(ok, key=lambda i: (avg[i], i))
                cols = {}
                for tag, i in (("preferred", hi), ("not preferred", lo)):
                    chunks = parse_chunks(it["responses"][i])
                    cols[f"{tag}: response {i} (average {avg[i]:.2f})"] = [
                        mark(x, it["problem"], chunks[:j], c) + c.replace("\n", " / ")
                        for j, (x, c) in enumerate(zip(sc[i], chunks))
                    ]
                n = max(len(v) for v in cols.values())
                rows = [{h: v[j] if j < len(v) else "" for h, v in cols.items()} for j in range(n)]
                return f"JUDGE: {name}; PROBLEM: {it['problem']}", rows
    return "no other prompt has two correct responses a judge scores differently", []


def report(
    base_eval: dict, results: dict, methods: list[str], eval_items: dict, runs: int, seed: int, judge_tallies: dict
) -> dict:
    """Notebook 07's Table 8 analogue in one call: the rows (:func:`table`, mean over SFT seeds),
    each with its accuracy's 95% interval over problems (a problem's seeds together) and how its
    judge's verdicts parsed, the per-problem predictions, the paired comparisons with outcome-based
    selection (:func:`comparisons`) and the intervals as numbers (``ci``)."""
    rows = table(base_eval["acc"], results, methods, runs)
    preds = predictions(base_eval, results, methods, eval_items, runs, seed)
    ci = {}
    for row in rows:
        c = rate_ci(preds[row["method"]])
        ci[row["method"]] = (c["low"], c["high"])
        row["avg 95% interval"] = f"[{c['low']}, {c['high']}]"
    return {
        "rows": with_verdicts(rows, judge_tallies),
        "predictions": preds,
        "comparisons": comparisons(preds, judge_tallies),
        "ci": ci,
    }


def results_markdown(rows: list[dict], comps: list[dict], paper: list[dict], runs: int) -> str:
    """``results/<profile>/rsft.md``: our table, the paired comparisons, the paper's Table 8."""
    md = [
        f"Stepwise RS-FT (ours; greedy accuracy %, mean over {runs} SFT seeds):",
        "",
        markdown_table(rows, list(dict.fromkeys(k for r in rows for k in r))),
        "",
        "Paired comparisons on the same problems (paired bootstrap by problem):",
        "",
        markdown_table(comps, ["claim", "a", "b", "diff", "low", "high", "p_bootstrap", "test", "verdict"]),
        "",
        "The paper's Table 8 (Qwen2.5-7B-chunk; not ours):",
        "",
        markdown_table(paper, ["method", "MATH500", "Heldout-1K", "avg"]),
    ]
    return "\n".join(md) + "\n"


def evaluate_policy(
    generator, eval_items: dict[str, list[dict]], template: str, max_new_tokens: int, seed: int
) -> dict:
    """Greedy accuracy of a policy on each evaluation task: ``acc`` (task -> %) and ``correct``
    (task -> each problem's outcome, for the paired intervals)."""
    out = {"acc": {}, "correct": {}}
    for t, its in eval_items.items():
        res = sampling.sample_solutions(generator, its, template, 1, 0.0, max_new_tokens, seed=seed)
        out["correct"][t] = [bool(r["correct"]) for r in res]
        out["acc"][t] = round(100 * sum(out["correct"][t]) / len(res), 2)
    return out


def evaluator(
    eval_items: dict[str, list[dict]],
    template: str,
    max_new_tokens: int,
    seed: int,
    *,
    backend: str = "hf",
    gen_batch: int = 128,
    engine: dict | None = None,
):
    """Notebook 07's greedy evaluation, as :func:`train_all`'s ``evaluate``: model dir ->
    :func:`evaluate_policy`'s record. Each call starts its own engine and releases it before it
    returns, so the next fine-tuning (or engine) has the memory."""

    def evaluate(model_dir):
        from ..engines.models import make_generator, release  # lazy: torch

        g = make_generator(model_dir, backend=backend, batch_size=gen_batch, **(engine or {}))
        out = evaluate_policy(g, eval_items, template, max_new_tokens, seed)
        release(g)
        return out

    return evaluate


def base_evaluation(
    policy: str, eval_items: dict[str, list[dict]], art, evaluate, max_new_tokens: int
) -> tuple[dict, str]:
    """The policy before RS-FT, evaluated by ``evaluate`` (:func:`evaluator`) and cached in
    ``art/base_eval.json`` under a key of its weights, the evaluation problems and
    ``max_new_tokens``. Returns the evaluation and that key, which every fine-tuned run's cache key
    builds on (:func:`train_all`)."""
    key = io.digest(
        paths.model_fingerprint(policy),
        {t: [i["id"] for i in v] for t, v in eval_items.items()},
        max_new_tokens,
        "per-problem outcomes",
    )
    return io.cached_json(Path(art) / "base_eval.json", key, lambda: evaluate(policy)), key


def train_all(
    picks: dict[str, list],
    items: list[dict],
    template: str,
    policy: str,
    art,
    settings,
    evaluate,
    base_key: str,
    runs: int,
) -> dict[tuple[str, int], dict]:
    """Notebook 07, section 3: the policy fine-tuned on each method's selected responses
    (:func:`sft_records`, :func:`stepwiser_lib.engines.sft.sft`) for ``runs`` SFT seeds (``settings``: k ->
    its ``SFTSettings``), each then evaluated (``evaluate``: model dir -> :func:`evaluate_policy`'s
    record); every run cached in ``art/<method>__seed<k>`` under a key of every SFT setting.
    Prints one line per method (its accuracy by seed). Returns (method, k) -> evaluation with
    ``records``, ``steps`` and ``sft_seconds``."""
    results = {}
    for method, pk in picks.items():
        recs = sft_records(items, pk, template)
        for k in range(runs):
            d, ss = art / f"{variant_slug(method)}__seed{k}", settings(k)

            def run():
                r = sft(policy, recs, d, ss)
                return {
                    **evaluate(r["model_dir"]),
                    "records": len(recs),
                    "steps": r["steps"],
                    "sft_seconds": r["train_seconds"],
                }

            results[(method, k)] = io.cached_json(
                d / "record.json", io.digest(paths.model_fingerprint(policy), recs, ss, base_key), run
            )
        accs = ", ".join(str(results[(method, k)]["acc"]) for k in range(runs))
        print(f"{method:26s} {len(recs)} records; greedy accuracy by SFT seed: {accs}")
    return results


def main(argv: list[str] | None = None, profiles_dir=None) -> int:
    """Notebook 07's sampling and judge scoring outside a kernel, one worker of K (issue 34):
    ``python -m stepwiser_lib.method.rsft --profile P --worker I --workers K``, one process per GPU.
    A worker samples its shards of the training prompts (:func:`sample_responses`); once every
    worker's samples are on disk, it scores its shards with each judge (:func:`score_judge`). So
    the workers run twice (``make workers STAGE=07`` does): the first round samples, the second
    scores what the first sampled; then notebook 07 joins the shards and trains. Checks the
    profile and the inputs first (exit 2)."""
    a = shards.worker_args(
        "RS-FT sampling and judge scoring of notebook 07, as one of K workers", argv, SHARD_PROMPTS, "prompts", "07"
    )
    try:
        cfg = shards.worker_config(a, "07_rsft", profiles_dir)
        policy = resolve_model(cfg.POLICY_MODEL, cfg.PROFILE)
        registry = judge_runs.read_registry(cfg.PROFILE, cfg.JUDGES, every_seed=cfg.EVERY_SEED)
        train_items = tasks.load_problems(
            cfg.TASK, "rsft", cfg.N_PROMPTS, seed=cfg.SEED, **tasks.file_kw(cfg.DATA_FILES, cfg.TASK)
        )
    except (ConfigError, FileNotFoundError, inputs.StaleInputs, ValueError) as e:
        print(f"[rsft] configuration error: {e}", file=sys.stderr)
        return 2
    from ..engines.models import engine_settings  # lazy: torch

    art = paths.artifacts(cfg.PROFILE, "07_rsft")
    w = {"worker": a.worker, "workers": a.workers, "shard_size": a.shard_size}
    rows, key = sample_responses(
        policy,
        train_items,
        prompts.get(cfg.PROMPT_FAMILY, "chunk_policy"),
        art,
        samples=cfg.SAMPLES,
        temperature=cfg.TEMPERATURE,
        max_new_tokens=cfg.MAX_NEW_TOKENS,
        seed=cfg.SEED,
        backend=cfg.BACKEND,
        gen_batch=cfg.GEN_BATCH,
        engine=engine_settings(cfg),
        reference=cfg.REFERENCE_SAMPLES,
        **w,
    )
    scored = []
    if rows is None:
        print(
            f"[rsft] worker {a.worker}: its samples are on disk; another worker's are not yet, so the judges "
            "score in the next round (run the same command again once every worker has finished)",
            flush=True,
        )
    else:
        items, load = group_items(train_items, rows), judge.loader(cfg)
        for name, entry in judge_runs.in_order(registry, cfg.JUDGES).items():
            rec = score_judge(
                name,
                entry,
                items,
                art,
                key,
                load,
                judge_k=cfg.JUDGE_K,
                max_completion=cfg.MAX_COMPLETION,
                seed=cfg.SEED,
                **w,
            )
            scored += [name] if rec is not None else []
    print(json.dumps({**w, "samples_whole": rows is not None, "judges_whole": scored}))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
