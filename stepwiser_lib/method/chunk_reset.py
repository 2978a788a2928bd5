"""Stage 6: Chunk-Reset Reasoning, the judge used at inference time (paper §4.4, Table 7).

The chunk policy writes one chunk at a time (generation stops at ``</chunk>``). The judge reads
(problem, accepted history, new chunk): a Positive chunk is accepted and generation continues
from the extended prefix; a Negative one is discarded and a new chunk is sampled from the same
point, up to ``max_attempts`` samples in all. What happens when every attempt is rejected is not
in the paper: ``on_exhausted`` chooses (default: the attempt with the highest judge score, ties
to the latest). Whether the final-answer chunk is judged is ``judge_final``. A judge output with
no parsable verdict accepts nothing and scores 0 (:data:`stepwiser_lib.core.verdicts.RULE`): the chunk is
sampled again, and such outputs are counted (``judge_unparsed``).

Problems advance together: each round generates one candidate chunk for every unfinished
problem in one batched call and judges them in one batched call. **Common random numbers**: each
candidate is sampled with a seed of its own, from (seed, problem, chunk index, attempt), so a
problem's draws do not depend on which other problems share a batch or on another problem's
rejections; arms with different judges (or none) are then paired on the same random numbers,
and a judge that accepts every chunk gives exactly the no-judge result (a test checks it). Policy and judge are injected
(anything with the generator and judge interfaces), so the loop is tested with scripted fakes.
Reported per problem: correctness, accepted length and rejected length in tokens (Table 7's
columns), judge calls and the trace of every attempt.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import sys
import time
from dataclasses import asdict, dataclass, field

from ..core import inputs, io, paths, prompts
from ..core.chunks import CHUNK_CLOSE, SEPARATOR, first_chunk
from ..core.config import ConfigError, for_notebook
from ..core.io import markdown_table
from ..core.verdicts import RULE_VERSION, describe, informative, uninformative_comparison
from ..core.vocab import variant_slug
from ..engines.checkpoints import resolve_model
from ..evals.evaluation import compare_rates, mean_sd, problem_predictions, rate_ci
from ..evals.paper_results import TABLE7
from . import judge, judge_runs, tasks
from .judge import stored_entry


@dataclass(frozen=True)
class ResetConfig:
    max_attempts: int = 5  # paper: up to 5 attempts (we count every sample, the first included)
    on_exhausted: str = "best_score"  # [not in paper] best_score | last | first
    judge_final: bool = True  # [not in paper] also judge the chunk that gives the final answer
    max_chunks: int = 12  # [not in paper] safety bound on accepted chunks per solution
    temperature: float = 1.0  # [not in paper] policy sampling temperature
    max_new_tokens: int = 96  # tokens per chunk
    judge_k: int = 1  # judge samples per chunk (1: greedy)
    seed: int = 0

    def __post_init__(self):
        if self.on_exhausted not in ("best_score", "last", "first"):
            raise ValueError(f"on_exhausted must be best_score, last or first, not {self.on_exhausted!r}")
        if self.max_attempts < 1:
            raise ValueError("max_attempts must be at least 1")


@dataclass
class _State:
    problem: str
    prefix: str = ""  # accepted assistant text so far
    history: list[str] = field(default_factory=list)  # accepted chunk contents
    accepted_tokens: int = 0
    rejected_tokens: int = 0
    judge_calls: int = 0
    judge_unparsed: int = 0  # judge outputs without a parsable verdict (verdicts.RULE: never an acceptance)
    judge_no_verdict: int = 0  # judgements none of whose samples parsed
    ended_cut: bool = False  # the response ended at a chunk cut by max_new_tokens (no closing tag)
    attempts: list[dict] = field(default_factory=list)  # candidates at the current point
    trace: list[dict] = field(default_factory=list)
    done: bool = False


def is_final(content: str) -> bool:
    return "\\boxed" in content


def _choose_fallback(attempts: list[dict], rule: str) -> int:
    if rule == "first":
        return 0
    if rule == "last":
        return len(attempts) - 1
    best = max(a["score"] for a in attempts)
    return max(i for i, a in enumerate(attempts) if a["score"] == best)  # ties: the latest


def draw_seed(*parts) -> int:
    """A 31-bit seed from its parts (seed, problem text, chunk index, attempt): the same candidate
    gets the same random numbers in every arm of an experiment."""
    return int(hashlib.sha256("|".join(map(str, parts)).encode()).hexdigest()[:8], 16) & 0x7FFFFFFF


def chunk_reset(
    policy, judge, problems: list[str], template: str, cfg: ResetConfig, progress: bool = True
) -> list[dict]:
    """Run Chunk-Reset Reasoning on ``problems`` (texts). ``judge=None`` is the plain chunk
    policy (every chunk accepted): the Table 7 baseline row, through the same loop.

    ``policy.generate(prompts, n, temperature, max_new_tokens, stop, seed, prefixes, seeds=...)``
    and ``judge.judge(triples, k, seed, seeds=...)`` are the generator and judge interfaces of
    :mod:`stepwiser_lib.engines.models` and :mod:`stepwiser_lib.method.judge`; ``seeds`` holds one
    :func:`draw_seed` per prompt (common random numbers, see the module docstring).
    """
    from tqdm.auto import tqdm

    states = [_State(problem=p) for p in problems]
    prompts = [template.format(problem=p) for p in problems]
    rnd = 0
    bar = tqdm(total=len(states), desc="chunk-reset", unit="problem", disable=not progress)
    while True:
        active = [i for i, s in enumerate(states) if not s.done]
        if not active:
            break
        outs = policy.generate(
            [prompts[i] for i in active],
            n=1,
            temperature=cfg.temperature,
            max_new_tokens=cfg.max_new_tokens,
            stop=[CHUNK_CLOSE],
            seed=cfg.seed * 1_000_003 + rnd,
            prefixes=[states[i].prefix for i in active],
            seeds=[
                draw_seed(cfg.seed, states[i].problem, len(states[i].history), len(states[i].attempts)) for i in active
            ],
        )
        rnd += 1
        to_judge = []
        for i, o in zip(active, outs):
            s, c = states[i], o[0]
            content = first_chunk(c.text)
            if content is None:  # the response ended (or broke format): nothing more to judge
                # ... or the chunk hit the token limit; a request with no room at all is not a cut
                s.ended_cut = not getattr(c, "finished", True) and not getattr(c, "skipped", False)
                s.accepted_tokens += c.n_tokens
                s.prefix += c.text
                s.done = True
                bar.update(1)
                continue
            cand = {
                "text": c.text,
                "content": content,
                "n_tokens": c.n_tokens,
                "verdict": None,
                "score": 1.0,
                "analysis": "",
            }
            s.attempts.append(cand)
            if judge is not None and (cfg.judge_final or not is_final(content)):
                to_judge.append(i)
            else:
                cand["verdict"] = "Positive"
        if to_judge:
            res = judge.judge(
                [(states[i].problem, list(states[i].history), states[i].attempts[-1]["content"]) for i in to_judge],
                k=cfg.judge_k,
                seed=cfg.seed + rnd,
                seeds=[
                    draw_seed("judge", cfg.seed, states[i].problem, len(states[i].history), len(states[i].attempts) - 1)
                    for i in to_judge
                ],
            )
            for i, r in zip(to_judge, res):
                a = states[i].attempts[-1]
                a.update(verdict=r["verdict"], score=r["score"], analysis=r["analysis"])
                states[i].judge_calls += 1
                states[i].judge_unparsed += int(r.get("n_unparsed", 0))
                states[i].judge_no_verdict += r["verdict"] is None
        for i in active:
            s = states[i]
            if s.done or not s.attempts:
                continue
            a = s.attempts[-1]
            if a["verdict"] == "Positive":
                pick = len(s.attempts) - 1
            elif len(s.attempts) >= cfg.max_attempts:
                pick = _choose_fallback(s.attempts, cfg.on_exhausted)
            else:
                continue  # rejected: sample again from the same point
            chosen = s.attempts[pick]
            s.rejected_tokens += sum(x["n_tokens"] for j, x in enumerate(s.attempts) if j != pick)
            s.accepted_tokens += chosen["n_tokens"]
            s.prefix += chosen["text"]
            if getattr(policy, "cut_after_separator", False):
                s.prefix += SEPARATOR  # continue where the policy's next chunk begins (chunks.SEPARATOR)
            s.history.append(chosen["content"])
            s.trace.append(
                {
                    "chunk_index": len(s.history) - 1,
                    "accepted": pick,
                    "exhausted": a["verdict"] != "Positive",
                    "attempts": [
                        {k: x[k] for k in ("content", "verdict", "score", "analysis", "n_tokens")} for x in s.attempts
                    ],
                }
            )
            s.attempts = []
            if is_final(chosen["content"]) or len(s.history) >= cfg.max_chunks:
                s.done = True
                bar.update(1)
    bar.close()
    return [
        {
            "problem": s.problem,
            "response": s.prefix,
            "accepted_tokens": s.accepted_tokens,
            "rejected_tokens": s.rejected_tokens,
            "judge_calls": s.judge_calls,
            "judge_unparsed": s.judge_unparsed,
            "judge_no_verdict": s.judge_no_verdict,
            "ended_cut": s.ended_cut,
            "chunks": len(s.history),
            "resets": sum(len(t["attempts"]) - 1 for t in s.trace),
            "exhausted": sum(t["exhausted"] for t in s.trace),
            "trace": s.trace,
        }
        for s in states
    ]


def summarize(results: list[dict], correct: list[bool], seconds: float | None = None) -> dict:
    """Table 7 columns: accuracy (%), mean accepted and rejected length (tokens), plus judge
    calls, resets and exhausted points per problem, and ``cut_at_limit``: % of responses that
    ended at a chunk cut by the token limit (never judged)."""
    n = max(1, len(results))
    out = {
        "n": len(results),
        "accuracy": round(100 * sum(correct) / n, 2),
        "accepted_length": round(sum(r["accepted_tokens"] for r in results) / n, 1),
        "rejected_length": round(sum(r["rejected_tokens"] for r in results) / n, 1),
        "judge_calls": round(sum(r["judge_calls"] for r in results) / n, 2),
        "resets": round(sum(r["resets"] for r in results) / n, 2),
        "exhausted": round(sum(r["exhausted"] for r in results) / n, 3),
        "cut_at_limit": round(100 * sum(r.get("ended_cut", False) for r in results) / n, 2),
    }
    if seconds is not None:
        out["seconds"] = round(seconds, 1)
    return out


def config_dict(cfg: ResetConfig) -> dict:
    return asdict(cfg)


def timed(fn, *a, **kw):
    t = time.time()
    r = fn(*a, **kw)
    return r, time.time() - t


def run_arm(policy, judge, items: list[dict], template: str, cfg: ResetConfig, is_correct) -> dict:
    """One arm of notebook 06 on ``items`` (problems with ``problem``): :func:`chunk_reset` with
    ``judge`` (None: the plain policy), each response checked by ``is_correct(item, response)``;
    ``results``, ``correct`` and :func:`summarize`'s ``summary`` (with the seconds it took)."""
    res, secs = timed(chunk_reset, policy, judge, [i["problem"] for i in items], template, cfg, progress=False)
    correct = [bool(is_correct(i, r["response"])) for i, r in zip(items, res)]
    return {"results": res, "correct": correct, "summary": summarize(res, correct, secs)}


# ----------------------------------------------------------------------------- notebook 06's driver

#: The version of a run's record: 2 counts responses ended at a cut chunk (older records are redone).
RECORD_VERSION = 2
#: The two no-judge rows of Table 7's analogue.
NO_JUDGE = "chunk policy (no judge)"
GREEDY = "chunk policy (greedy, no judge)"


def run_grid(
    policy,
    registry: dict[str, dict],
    load,
    items: dict[str, list[dict]],
    template: str,
    base: ResetConfig,
    runs: int,
    art,
    *,
    policy_fingerprint: str,
    max_completion: int,
    is_correct,
    worker: int = 0,
    workers: int = 1,
) -> dict[tuple[str, str, int], dict]:
    """Notebook 06, section 1: :func:`run_arm` with no judge and with each judge of ``registry``
    (name -> notebook 04 entry; ``load``: entry -> judge, called only when a run is not on disk),
    on every task of ``items``, for ``runs`` seeds (``base.seed + k``), then the policy decoded
    greedily with no judge (one run: nothing is random). Each run is cached in ``art``; the sampled
    arms share their random numbers (:func:`draw_seed`), so each judge is paired with the sampled
    no-judge run. Returns (row label, task, k) -> the run.

    **Data-parallel workers** (issue 34): each run (an arm on one task and seed) is a unit; with
    ``workers`` K > 1 this process computes only the units ``u % K == worker`` and returns the
    others only when they are on disk already (``python -m stepwiser_lib.method.chunk_reset
    --worker I --workers K``, one process per GPU). Notebook 06 then finds every run on disk. A
    run depends on its own seeds, problems and judge only, so the results do not depend on K."""
    from ..engines.models import release  # lazy: torch

    if not 0 <= worker < workers:
        raise ValueError(f"worker {worker} of {workers}: want 0 <= worker < workers")
    unit = iter(range(10**9))

    def cached(path, key, compute):
        if next(unit) % workers == worker:
            return io.cached_json(path, key, compute)
        return io.read_json(path) if io.has_cached(path, key) else None  # another worker's: when there

    out = {}
    for name in [None, *registry]:
        label, holder = name or NO_JUDGE, {}

        def judge_for():
            if name and "judge" not in holder:
                holder["judge"] = load(registry[name])
            return holder.get("judge")

        for k in range(runs):
            rc = ResetConfig(**{**config_dict(base), "seed": base.seed + k})
            for task, its in items.items():
                key = io.digest(
                    policy_fingerprint,
                    name and stored_entry(registry[name]),
                    config_dict(rc),
                    task,
                    [i["id"] for i in its],
                    max_completion,
                    RULE_VERSION,
                    RECORD_VERSION,
                )
                slug = "no_judge" if name is None else variant_slug(name)
                rec = cached(
                    art / f"{slug}__{task}__seed{k}.json",
                    key,
                    lambda: run_arm(policy, judge_for(), its, template, rc, is_correct),
                )
                if rec is None:
                    continue
                out[(label, task, k)] = rec
                print(f"{label:28s} {task:8s} seed {k}: {summary_line(rec['summary'])}")
        if "judge" in holder:
            release(holder.pop("judge"))  # the next judge's engine needs the memory
    rc = ResetConfig(
        max_attempts=1, max_chunks=base.max_chunks, temperature=0.0, max_new_tokens=base.max_new_tokens, seed=base.seed
    )
    for task, its in items.items():
        key = io.digest(policy_fingerprint, config_dict(rc), task, [i["id"] for i in its], RECORD_VERSION)
        rec = cached(
            art / f"no_judge_greedy__{task}.json", key, lambda: run_arm(policy, None, its, template, rc, is_correct)
        )
        if rec is not None:
            out[(GREEDY, task, 0)] = rec
            print(f"{GREEDY:28s} {task:8s}: {summary_line(rec['summary'])}")
    return out


def reset_config(cfg) -> ResetConfig:
    """Notebook 06's :class:`ResetConfig` from its parameters."""
    return ResetConfig(
        max_attempts=cfg.MAX_ATTEMPTS,
        on_exhausted=cfg.ON_EXHAUSTED,
        judge_final=cfg.JUDGE_FINAL,
        max_chunks=cfg.MAX_CHUNKS,
        temperature=cfg.TEMPERATURE,
        max_new_tokens=cfg.MAX_CHUNK_TOKENS,
        judge_k=cfg.JUDGE_K,
        seed=cfg.SEED,
    )


def table(runs: dict, tasks: list[str]) -> tuple[list[dict], dict[str, list[int]]]:
    """Table 7's analogue, one row per label of ``runs``: accuracy per task (mean and spread over
    seeds), the mean accepted and rejected length, judge calls and seconds, and the average
    accuracy over tasks, and the % of responses cut at the chunk token limit. Also label -> its
    seeds (the greedy row has one)."""
    labels = list(dict.fromkeys(lab for lab, _, _ in runs))
    seeds = {label: sorted({k for lab, _, k in runs if lab == label}) for label in labels}
    rows = []
    for label in labels:
        row, accs = {"method": label, "runs": len(seeds[label])}, []
        for task in tasks:
            m, sd = mean_sd([runs[(label, task, k)]["summary"]["accuracy"] for k in seeds[label]])
            row[f"{task} acc"], row[f"{task} acc std"] = round(m, 2), round(sd, 2)
            accs.append(m)
        for col in ("accepted_length", "rejected_length", "judge_calls", "cut_at_limit", "seconds"):
            vals = [runs[(label, t, k)]["summary"].get(col, 0) for t in tasks for k in seeds[label]]
            row[col] = round(sum(vals) / len(vals), 1)
        row["avg acc"] = round(sum(accs) / len(accs), 2)
        rows.append(row)
    return rows, seeds


def predictions(
    runs: dict, items: dict[str, list[dict]], seeds: dict[str, list[int]], seed: int
) -> dict[str, list[dict]]:
    """Per-problem outcomes of every row (``results/<profile>/chunk_reset_predictions.jsonl``:
    :func:`stepwiser_lib.evals.evaluation.problem_predictions`), label -> records."""
    return {
        label: [
            p
            for task, its in items.items()
            for k in ks
            for p in problem_predictions(
                label, task, seed + k, [f"{task}/{i['id']}" for i in its], runs[(label, task, k)]["correct"]
            )
        ]
        for label, ks in seeds.items()
    }


def tallies(runs: dict, judge_k: int = 1) -> dict[str, dict]:
    """Row label -> :func:`stepwiser_lib.core.verdicts.tally`-shaped counts of its judge over every task
    and seed (``asked``: judge calls; ``unparsed``: outputs without a verdict). A judge arm whose
    judge was never asked (the policy wrote no complete chunk) or never parsed says nothing about
    the judge (:func:`stepwiser_lib.core.verdicts.informative`)."""
    out: dict[str, dict] = {}
    for (label, _, _), rec in runs.items():
        if label in (NO_JUDGE, GREEDY):
            continue
        t = out.setdefault(label, {"asked": 0, "samples": 0, "unparsed": 0, "no_verdict": 0})
        for r in rec["results"]:
            t["asked"] += r["judge_calls"]
            t["samples"] += r["judge_calls"] * judge_k
            t["unparsed"] += r.get("judge_unparsed", 0)
            t["no_verdict"] += r.get("judge_no_verdict", 0)
    for t in out.values():
        t["unparsed_pct"] = round(100 * t["unparsed"] / t["samples"], 2) if t["samples"] else None
    return out


def with_verdicts(rows: list[dict], judge_tallies: dict[str, dict]) -> list[dict]:
    """Table 7 rows with a ``verdicts`` column: how each judge arm's judge outputs parsed, or why
    the arm says nothing about its judge (never asked, nothing parsed); "-" for the no-judge rows.
    An arm's accuracy stays a number: the policy did run, and a judge that never spoke leaves it the
    no-judge arm's; what becomes uninformative is the claim about the judge (:func:`comparisons`)."""

    return [
        {**r, "verdicts": describe(judge_tallies[r["method"]]) if r["method"] in judge_tallies else "-"} for r in rows
    ]


def comparisons(preds: dict[str, list[dict]], judge_tallies: dict[str, dict] | None = None) -> list[dict]:
    """Table 7's questions, paired by problem (:func:`stepwiser_lib.evals.evaluation.compare_rates`): each
    judge against the sampled no-judge run, and greedy decoding against sampling (no judge). A
    judge arm whose judge was never asked or never parsed (``judge_tallies``, :func:`tallies`) is
    not compared: its verdict is :data:`~stepwiser_lib.core.verdicts.UNINFORMATIVE`."""

    def judged(label):
        t = (judge_tallies or {}).get(label)
        if judge_tallies is not None and not informative(t):
            return uninformative_comparison({"a": label, "b": NO_JUDGE}, f"not compared: {describe(t, label=False)}")
        return compare_rates(preds[label], preds[NO_JUDGE])

    out = [
        {"claim": "the judge helps chunk-reset (Table 7)", **judged(label)}
        for label in preds
        if label not in (NO_JUDGE, GREEDY)
    ]
    if GREEDY in preds:
        out.append(
            {"claim": "greedy decoding beats sampling (no judge)", **compare_rates(preds[GREEDY], preds[NO_JUDGE])}
        )
    return out


def paper_rows(model: str = "1.5B", rules: set[str] | None = None) -> list[dict]:
    """The paper's Table 7 rows for ``model``, in notebook 06's columns: for display, never mixed in.
    With ``rules``, only the no-judge row and the judges of those label rules (the ones a run
    trained: the table beside ours stays short; ``results/<profile>/chunk_reset.md`` has them all)."""
    return [
        {
            "method": f"PAPER {model}: {r['row']} {r['signal']}",
            "MATH500": r["math500"],
            "Heldout-1K": r["heldout"],
            "avg": r["avg"],
            "accepted_length": r["accepted"],
            "rejected_length": r["rejected"],
        }
        for r in TABLE7
        if r["model"] == model and (rules is None or r["signal"] == "-" or r["signal"] in rules)
    ]


def summary_line(sm: dict) -> str:
    """One run's summary in words (issue 36: it was a raw dict): accuracy, and per problem the judge
    calls, the resets (a rejected chunk redrawn) and the chunks **exhausted**: all ``MAX_ATTEMPTS``
    rejected, so ``ON_EXHAUSTED`` picked one of them (by default the best-scored) and went on."""
    if not sm.get("judge_calls"):
        return f"accuracy {sm['accuracy']:.1f}% on {sm['n']} problems"
    return (
        f"accuracy {sm['accuracy']:.1f}% on {sm['n']} problems; per problem {sm['judge_calls']:.1f} judge calls, "
        f"{sm['resets']:.1f} resets, {sm['exhausted']:.1f} chunks exhausted (every attempt rejected)"
        + (f", {sm['cut_at_limit']}% cut at the token limit" if sm.get("cut_at_limit") else "")
    )


def reset_example(runs: dict, items: dict[str, list[dict]], judges: list[str]) -> str | None:
    """The first reset followed by an accepted replacement on the first task's seed-0 runs, a
    StepWiser judge's first: the accepted history, then every attempt with its verdict and the
    judge's analysis. None when no judge reset a chunk and then accepted another."""
    task0 = next(iter(items))
    for name in sorted(judges, key=lambda n: not n.startswith("stepwiser:")):
        rec = runs[(name, task0, 0)]
        for it, r, ok in zip(items[task0], rec["results"], rec["correct"]):
            t = next((t for t in r["trace"] if t["accepted"] > 0 and not t["exhausted"]), None)
            if t is None:
                continue
            hist = " | ".join(
                x["attempts"][x["accepted"]]["content"].replace("\n", " / ") for x in r["trace"][: t["chunk_index"]]
            )
            lines = [
                f"JUDGE: {name}",
                f"PROBLEM: {it['problem']}   (answer {it['answer']}; final response correct: {ok})",
                f"ACCEPTED HISTORY: {hist or '(none)'}",
            ]
            for a_i, a in enumerate(t["attempts"]):
                tag = "ACCEPTED" if a_i == t["accepted"] else "REJECTED"
                lines += [
                    f"  attempt {a_i} [{tag}, judge {a['verdict']}]: {a['content'].replace(chr(10), ' / ')}",
                    f"      judge analysis: {a['analysis'].strip().replace(chr(10), ' / ')}",
                    "      "
                    + judge_runs.describe_output(
                        {"problem": it["problem"], "chunk": a["content"]},
                        {"verdict": a["verdict"], "analysis": a["analysis"]},
                    ),
                ]
            lines.append("WHAT THIS RESET DID: " + reset_effect(it["problem"], t))
            return "\n".join(lines)
    return None


def reset_effect(problem: str, step: dict) -> str:
    """In words, what one reset did by the exact step checker (toy problems): whether the rejected
    attempts were right and whether the accepted one is (issue 36: the one trace printed rejected
    a right final answer and accepted a wrong one, unremarked)."""
    truth = [tasks.step_truth({"problem": problem, "chunk": a["content"]}) for a in step["attempts"]]
    acc = truth[step["accepted"]]
    rejected = [t for i, t in enumerate(truth) if i != step["accepted"]]
    if acc is None or any(t is None for t in rejected):
        return "the exact checker cannot judge these chunks (not a toy problem)"
    if all(rejected) and not acc:
        return "it rejected a right chunk and accepted a wrong one: a reset that hurt"
    if not any(rejected) and acc:
        return "it rejected a wrong chunk and accepted a right one: a reset that helped"
    if all(rejected) and acc:
        return "it rejected a right chunk for another right one: tokens spent, nothing gained"
    return (
        "by the exact checker, "
        + ", ".join(f"attempt {i} {'right' if t else 'wrong'}" for i, t in enumerate(truth))
        + f"; attempt {step['accepted']} kept"
    )


def report(runs: dict, items: dict[str, list[dict]], judge_k: int, max_chunk_tokens: int, seed: int) -> dict:
    """Notebook 06's Table 7 analogue in one call: the rows (:func:`table`, mean and spread over
    seeds) each with its accuracy's 95% interval over problems (a problem's seeds together) and how
    its judge's verdicts parsed, the per-problem predictions, the paired comparisons with no judge
    (:func:`comparisons`; an uninformative judge says so), the intervals as numbers (``ci``), the
    seeds of each arm and the note on chunks cut by the token limit (:func:`cut_note`)."""
    rows, seeds_of = table(runs, list(items))
    preds = predictions(runs, items, seeds_of, seed)
    ci = {}
    for row in rows:
        c = rate_ci(preds[row["method"]])
        ci[row["method"]] = (c["low"], c["high"])
        row["avg acc 95% interval"] = f"[{c['low']}, {c['high']}]"
    judge_tallies = tallies(runs, judge_k)
    rows = with_verdicts(rows, judge_tallies)
    return {
        "rows": rows,
        "predictions": preds,
        "comparisons": comparisons(preds, judge_tallies),
        "ci": ci,
        "seeds_of": seeds_of,
        "cut": cut_note(rows, max_chunk_tokens),
    }


def rejection_lines(rows: list[dict]) -> list[str]:
    """Table 7's cost side in words: for each label rule with both judges in ``rows``, the rejected
    tokens per solution of the generative (``stepwiser:``) and the discriminative (``disc_sft:``)
    judge, and whether this run agrees with the paper, where the generative judges reject more
    (§4.4, Table 7). Nothing when a rule lacks one of the two."""
    out = []
    rej = {r["method"]: r.get("rejected_length") for r in rows}
    for rule in sorted({m.split(":")[1].split("@")[0] for m in rej if ":" in m}):
        g, d = rej.get(f"stepwiser:{rule}"), rej.get(f"disc_sft:{rule}")
        if g is None or d is None:
            continue
        which = "as in the paper" if g > d else "the reverse of the paper's, where the generative judges reject more"
        out.append(
            f"Rejected tokens per solution ({rule}): generative {g}, discriminative {d}: the "
            f"{'generative' if g > d else 'discriminative'} judge rejects more here, {which} (Table 7)."
        )
    return out


def cut_note(rows: list[dict], max_chunk_tokens: int) -> str:
    """A sentence when responses ended at a chunk cut by ``MAX_CHUNK_TOKENS`` (:func:`table`'s
    ``cut_at_limit``): such a chunk is never judged and its response has no answer, so a large share
    makes the table say more about the limit than about the judges (at a 1-token limit every method
    scored 0.0, with no word about the limit). "" when none."""
    cut = {r["method"]: r.get("cut_at_limit", 0) for r in rows if r.get("cut_at_limit")}
    if not cut:
        return ""
    worst = max(cut.values())
    return (
        f"Responses ended at a chunk cut by MAX_CHUNK_TOKENS = {max_chunk_tokens} (never judged, no answer): "
        + ", ".join(f"{m} {v}%" for m, v in cut.items())
        + (
            ". Most responses were cut: the accuracies measure the limit, not the judges; raise MAX_CHUNK_TOKENS."
            if worst >= 50
            else "; raise MAX_CHUNK_TOKENS if that is more than a few."
        )
    )


def results_markdown(rows: list[dict], comps: list[dict], paper: list[dict], runs: int, note: str = "") -> str:
    """``results/<profile>/chunk_reset.md``: our table (and ``note``, :func:`cut_note`), the paired
    comparisons, the paper's rows."""
    md = [
        f"Chunk-Reset Reasoning on held-out problems (ours; mean over {runs} seeds):",
        "",
        markdown_table(rows, list(rows[0]) if rows else []),
        "",
        *([note, ""] if note else []),
        "Each judge against the plain chunk policy on the same problems (paired bootstrap by problem):",
        "",
        markdown_table(comps, ["a", "b", "diff", "low", "high", "p_bootstrap", "test", "verdict"]),
        "",
        "The paper's Table 7 (Qwen2.5-1.5B-chunk, MATH500 / NuminaMath Heldout-1K; not ours):",
        "",
        markdown_table(paper, ["method", "MATH500", "Heldout-1K", "avg", "accepted_length", "rejected_length"]),
    ]
    return "\n".join(md) + "\n"


# ----------------------------------------------------------------------------- a worker of notebook 06


def main(argv: list[str] | None = None, profiles_dir=None) -> int:
    """Notebook 06's runs outside a kernel, one worker of K (issue 34): ``python -m
    stepwiser_lib.method.chunk_reset --profile P --worker I --workers K``, one process per GPU; then
    notebook 06 reads every run from disk. Checks the profile and the inputs first (exit 2)."""
    ap = argparse.ArgumentParser(description="Chunk-reset runs of notebook 06, as one of K data-parallel workers")
    ap.add_argument("--profile", default="tiny")
    ap.add_argument("--worker", type=int, default=0)
    ap.add_argument("--workers", type=int, default=1)
    a = ap.parse_args(argv)
    nb = paths.NOTEBOOKS_DIR / "06_chunk_reset.ipynb"
    try:
        if not 0 <= a.worker < a.workers:
            raise ConfigError(f"--worker {a.worker} --workers {a.workers}: want 0 <= worker < workers")
        cfg = for_notebook(a.profile, nb.stem, **({"profiles_dir": profiles_dir} if profiles_dir else {}))
        p = cfg.as_dict()
        inputs.check(cfg)
        registry = judge_runs.read_registry(a.profile, cfg.JUDGES, every_seed=cfg.EVERY_SEED)
        policy_path = resolve_model(cfg.POLICY_MODEL, a.profile)
    except (ConfigError, FileNotFoundError, inputs.StaleInputs, ValueError) as e:
        print(f"[chunk_reset] configuration error: {e}", file=sys.stderr)
        return 2
    from ..engines.models import engine_settings, make_generator  # lazy: torch

    items = {
        t: tasks.load_problems(t, "eval", cfg.N_PROBLEMS, seed=cfg.SEED, **tasks.file_kw(cfg.DATA_FILES, t))
        for t in cfg.EVAL_TASKS
    }
    policy = make_generator(policy_path, backend=cfg.BACKEND, batch_size=cfg.GEN_BATCH, **engine_settings(p))
    runs = run_grid(
        policy,
        judge_runs.in_order(registry, cfg.JUDGES),
        judge.loader(cfg),
        items,
        prompts.get(cfg.PROMPT_FAMILY, "chunk_policy"),
        reset_config(cfg),
        cfg.RUNS,
        paths.artifacts(a.profile, nb.stem),
        policy_fingerprint=paths.model_fingerprint(policy_path),
        max_completion=cfg.MAX_COMPLETION,
        is_correct=tasks.is_correct,
        worker=a.worker,
        workers=a.workers,
    )
    print(json.dumps({"worker": a.worker, "workers": a.workers, "runs_on_disk": len(runs)}))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
