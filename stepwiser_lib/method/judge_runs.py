"""Notebook 04's bookkeeping, and the registry notebooks 05-07 read: which judge data to load,
which runs to train (variants and repeat seeds), which paired questions to ask of them on the
test split (paper Tables 5 and 6, and the yardsticks of issue 17), each a tested function so the
notebooks keep only the calls, the examples and the plots.

A *run id* is a variant name (``KIND:RULE``) for the ``SEED`` run, plus ``@seedN`` for a repeat
seed; the judge later notebooks use is always the ``SEED`` run, fixed in advance.
"""

from __future__ import annotations

import os

from ..core import io, paths
from ..core.prompts import check_prompt
from ..core.schemas import JUDGE_EXAMPLE, JUDGE_SPLITS
from ..core.verdicts import mask, tally
from ..core.vocab import (
    JUDGE_KINDS,
    START_NAME,
    STYLE,
    WARMUP_NAME,
    WARMUP_OF,
    WARMUP_STYLES,
    parse_variant,
    rule_name,
    start_of,
    uses_oracle,
    variant_slug,
)
from ..engines import sft
from ..engines.trainers import SFTSettings
from ..evals import claims
from ..evals.evaluation import (
    balanced_accuracy_ci,
    balanced_threshold,
    compare,
    comparison_line,
    constant_judge,
    judge_predictions,
    reference_judge,
)
from ..evals.paper_results import paper_row
from ..evals.stats import mcnemar_exact, wilson
from . import judge, judge_train, tasks
from .judge import MODEL_FIELDS, resolved_entry, stored_entry

#: The two yardsticks that need no training (toy world).
REF_RULE = rule_name(WARMUP_NAME)  # "warm-up analysis read by a rule (no RL)"
REF_EXACT = "exact checker (label-noise ceiling)"


def read_splits(profile: str, rules: list[str]) -> tuple[dict, dict]:
    """Notebook 03's judge data per rule and split, checked against :data:`JUDGE_EXAMPLE`,
    and each file's sha256 (what the training cache keys hash)."""
    data, digests = {}, {}
    for rule in rules:
        files = {s: paths.balanced(profile, rule, s) for s in JUDGE_SPLITS}
        data[rule] = {s: io.read_jsonl(f, required=JUDGE_EXAMPLE) for s, f in files.items()}
        digests[rule] = {s: io.file_sha256(f) for s, f in files.items()}
    return data, digests


def warmup_inputs(data: dict, extra: list[dict] = ()) -> list[dict]:
    """The warm-up's chunks: every rule's unbalanced training chunks plus ``extra`` (chunks the
    chunk policy wrote on SFT-split problems), each (problem, history, chunk) once, in order.
    Raises when one of them comes from a dev or test problem."""
    seen, out = set(), []
    for rule in data:
        for e in [*data[rule]["train_unbalanced"], *extra]:
            key = (e["problem"], tuple(e["history"]), e["chunk"])
            if key not in seen:
                seen.add(key)
                out.append(e)
    held_out = {e["problem"] for r in data for s in ("dev_balanced", "test_balanced") for e in data[r][s]}
    leaked = held_out & {e["problem"] for e in out}
    if leaked:
        raise ValueError(f"{len(leaked)} warm-up input problem(s) are dev or test problems, e.g. {sorted(leaked)[0]!r}")
    return out


def _release(judge_) -> None:
    """Free a judge's weights before the next model loads (the model code imports torch)."""
    from ..engines.models import release  # lazy: torch

    release(judge_)


def main_variants(variants: list[str]) -> tuple[str | None, str | None]:
    """The main judge (the first ``stepwiser`` variant) and its discriminative baseline (``disc_sft``
    on the same rule), or None for either that ``variants`` lacks."""
    main = next((v for v in variants if parse_variant(v)[0] == "stepwiser"), None)
    disc = f"disc_sft:{parse_variant(main)[1]}" if main else None
    return main, (disc if disc in variants else None)


def training_runs(variants: list[str], seed: int, repeat_seeds: list[int]) -> list[tuple[str, int, str]]:
    """(variant, seed, run id) for every run to train: each variant at ``seed``, then every
    variant at every other seed of ``repeat_seeds`` (issue 35: an arm of the claims table is a
    set of training seeds, for every variant a claim reads). A variant or seed named twice is one
    run."""
    runs = [(v, seed, v) for v in dict.fromkeys(variants)]
    for s in (s for s in dict.fromkeys(repeat_seeds) if s != seed):
        runs += [(v, s, f"{v}@seed{s}") for v in dict.fromkeys(variants)]
    return runs


def self_check(
    art, init: str, examples: list[dict], k: int, *, family: str, max_completion: int, batch: int, seed: int
) -> dict:
    """:func:`stepwiser_lib.method.judge.self_check_yield` of the initial model on ``examples``, cached in
    ``art/self_check.json``: what a self-taught warm-up could keep (notebook 04, section 1)."""

    def run():
        j = judge.Judge.load(init, batch_size=batch, family=family, max_new_tokens=max_completion)
        r = judge.self_check_yield(j, examples, k, seed)
        _release(j)
        return r

    key = io.digest(paths.model_fingerprint(init), family, k, max_completion, seed, examples)
    return {k_: v for k_, v in io.cached_json(art / "self_check.json", key, run).items() if k_ != "_key"}


def warmup_chunks(art, init: str, n_problems: int, samples: int, *, family: str, seed: int) -> list[dict]:
    """Chunks the chunk policy writes on ``n_problems`` SFT-split toy problems, ``samples`` each
    (:func:`stepwiser_lib.method.judge.policy_chunks`), cached in ``art/warmup_chunks.json``: more, and
    more varied, warm-up inputs than the training chunks alone. None for ``n_problems`` 0."""
    if not n_problems:
        return []
    wp = tasks.load_problems("toy", "sft", n_problems, seed=seed)
    key = io.digest(paths.model_fingerprint(init), n_problems, samples, seed)
    return io.cached_json(
        art / "warmup_chunks.json", key, lambda: {"chunks": judge.policy_chunks(init, wp, samples, family, seed)}
    )["chunks"]


def _checks(init: str, texts: list[str], batch: int, max_new_tokens: int, progress: bool = True) -> list[str]:
    from ..engines.models import HFGenerator, load_model  # lazy: torch

    model, tok = load_model(init)
    gen = HFGenerator(model, tok, batch_size=batch)
    outs = gen.generate(texts, n=1, temperature=0, max_new_tokens=max_new_tokens, seed=0, progress=progress)
    _release(gen)
    return [o[0].text.strip() for o in outs]


def _worker_checks(job: tuple[int, list[str]]) -> tuple[int, list[str]]:
    part, texts = job
    return part, _checks(_SHARED["init"], texts, _SHARED["batch"], _SHARED["max_new_tokens"], progress=False)


def own_analyses(
    art, init: str, chunks: list[dict], *, batch: int, max_new_tokens: int, processes: int = 1
) -> list[str]:
    """The initial model's own checking text of each warm-up chunk (greedy, the toy base's checking
    prompt :func:`stepwiser_lib.core.prompts.check_prompt`), cached in ``art/own_analyses.json``:
    the analyses a ``WARMUP_ANALYSIS: own`` warm-up trains on, so the judge starts from what its
    initial model writes, as the paper's judge starts from an instruct model (issue 47). [not in paper]
    ``processes`` > 1 (``TRAIN_PROCESSES``, a CPU machine): the chunks in that many contiguous parts,
    written side by side (greedy: the same texts; tiny's 2,485 compared in LAB_LOG.md)."""

    def run():
        texts = [check_prompt(e["problem"], e["history"], e["chunk"]) for e in chunks]
        k = cpu_processes(processes, "checking texts") if len(texts) > 1 else 1
        if k <= 1:
            return {"analyses": _checks(init, texts, batch, max_new_tokens)}
        size = -(-len(texts) // k)
        parts = [(i, texts[i * size : (i + 1) * size]) for i in range(k)]
        shared = {"init": init, "batch": batch, "max_new_tokens": max_new_tokens}
        done = dict(out for _, out in in_processes(_worker_checks, parts, k, shared, "checking texts", "part"))
        return {"analyses": [a for i in range(k) for a in done[i]]}

    key = io.digest(
        paths.model_fingerprint(init), [(e["problem"], e["history"], e["chunk"]) for e in chunks], max_new_tokens
    )
    return io.cached_json(art / "own_analyses.json", key, run)["analyses"]


def train_warmups(
    art,
    styles: list[str],
    chunks: list[dict],
    init: str,
    *,
    family: str,
    seed: int,
    steps: int,
    direct_steps: int,
    lr: float,
    batch: int,
    micro_batch: int,
    analyses: list[str] | None = None,
    verdict: str = "coin",
) -> tuple[dict, dict, dict]:
    """Notebook 04, section 1: one format warm-up per output ``style`` (:func:`stepwiser_lib.method.tasks.warmup_records`
    on ``chunks``: the re-derivation and a coin-flip verdict, never a label), SFT for ``steps``
    optimizer steps (``direct_steps`` for the verdict-only style), cached in ``art/warmup_<style>``
    under a key of every setting. ``analyses``: the CoT warm-up's analyses (:func:`own_analyses`),
    else the exact re-derivations; ``verdict``: the CoT warm-up's verdicts (``WARMUP_VERDICT``: a coin
    flip, or the one its analysis implies). Returns style -> model dir, style -> cache key, style -> its records."""
    dirs, keys, records = {}, {}, {}
    for style in styles:
        cot = style == "cot"  # the derived warm-up ignores both (judge_text.warmup_records)
        recs = records[style] = tasks.warmup_records(
            chunks, family, seed, style, analyses if cot else None, verdict if cot else "coin"
        )
        d = art / f"warmup_{style}"
        ws = SFTSettings(
            max_steps=direct_steps if style == "direct" else steps,
            lr=lr,
            global_batch=batch,
            micro_batch=micro_batch,
            seed=seed,
            name="WARMUP",
        )
        key = io.digest(style, paths.model_fingerprint(init), ws, recs)
        rec = io.cached_json(
            d / "record.json",
            key,
            lambda: {**(r := sft.sft(init, recs, d, ws)), "model_dir": paths.stored_path(r["model_dir"])},
            valid=lambda r: paths.model_complete(paths.resolve_stored(r["model_dir"])),
        )
        dirs[style], keys[style] = paths.resolve_stored(rec["model_dir"]), rec["_key"]
        print(f"warm-up {style}: {len(recs)} records, {rec['steps']} steps, {rec['train_seconds']} s")
    return dirs, keys, records


def warmup_stage(art, cfg, variants: list[tuple[str, str]], main: str | None, init: str, data: dict):
    """Notebook 04, section 1, in one call: the warm-ups the ``variants`` start from (the
    generative one whenever there is a ``main`` judge), trained (:func:`train_warmups`) on the
    training chunks plus ``WARMUP_PROBLEMS`` × ``WARMUP_SAMPLES`` chunks the chunk policy writes on
    SFT-split problems (:func:`warmup_chunks`; :func:`warmup_inputs` raises on a dev or test
    problem). Returns (style -> model dir, style -> cache key, one warm-up record's completion or
    None); with ``WARMUP`` off, nothing is trained and it says so."""
    if not cfg.WARMUP:
        print("no warm-up: the initial model follows the judge prompt already")
        return {}, {}, None
    styles = sorted({WARMUP_OF[k] for k, _ in variants} - {None} | ({"cot"} if main else set()))
    extra = warmup_chunks(art, init, cfg.WARMUP_PROBLEMS, cfg.WARMUP_SAMPLES, family=cfg.PROMPT_FAMILY, seed=cfg.SEED)
    chunks, n_train = warmup_inputs(data, extra), len(warmup_inputs(data))
    print(
        f"warm-up inputs: {len(chunks)} distinct chunks, {n_train} of them training chunks (every rule's, each once) "
        f"and {len(chunks) - n_train} of the {len(extra)} the chunk policy wrote on {cfg.WARMUP_PROBLEMS} SFT-split "
        "problems (the others repeat a chunk already in)"
    )
    analyses = None
    if cfg.WARMUP_ANALYSIS == "own" and "cot" in styles:
        analyses = own_analyses(
            art, init, chunks, batch=cfg.JUDGE_BATCH, max_new_tokens=cfg.MAX_COMPLETION, processes=cfg.TRAIN_PROCESSES
        )
        n_exact = sum(bool((tasks.analysis_checks(e, a) or {}).get("exact")) for a, e in zip(analyses, chunks))
        print(
            f"the CoT warm-up's analyses are the initial model's own checking text of each chunk (WARMUP_ANALYSIS: "
            f"own): {n_exact} of {len(chunks)} ({100 * n_exact / len(chunks):.1f}%) are the exact re-derivation"
        )
    dirs, keys, records = train_warmups(
        art,
        styles,
        chunks,
        init,
        family=cfg.PROMPT_FAMILY,
        seed=cfg.SEED,
        steps=cfg.WARMUP_STEPS,
        direct_steps=cfg.DIRECT_WARMUP_STEPS,
        lr=cfg.WARMUP_LR,
        batch=cfg.WARMUP_BATCH,
        micro_batch=cfg.WARMUP_MICRO_BATCH,
        analyses=analyses,
        verdict=cfg.WARMUP_VERDICT,
    )
    recs = records.get("cot") or (records[styles[-1]] if styles else [])  # the main judge's warm-up, if any
    return dirs, keys, recs[0]["completion"] if recs else None


def evaluate_start(
    entry: dict, data: dict, *, family: str, max_completion: int, batch: int, auc_k: int
) -> tuple[dict, dict, dict, dict]:
    """Notebook 04, section 2: the judge every variant starts from (``entry``, the warm-up) on each
    rule's test split (every metric, with the verdict readout) and dev split (greedy verdicts),
    and on toy problems how often its own analysis implies the exact checker's verdict.
    Returns (test metrics, test judged, dev metrics, dev judged), each keyed by rule. In one
    process: the test split is most of the work, so splitting test from dev across two processes
    did not pay (LAB_LOG.md, "Budgets")."""
    j = judge.load_judge(entry, family, max_completion, batch)
    before, before_judged, before_dev, before_dev_judged = {}, {}, {}, {}
    for rule in data:
        before[rule], before_judged[rule] = judge.evaluate_judge(
            j, data[rule]["test_balanced"], auc_k=auc_k, readout=True
        )
        before_dev[rule], before_dev_judged[rule] = judge.evaluate_judge(j, data[rule]["dev_balanced"])
        if family == "toy":
            before[rule]["analysis_implies_truth"] = analysis_implies_truth(
                before_judged[rule], data[rule]["test_balanced"]
            )
    _release(j)  # its weights leave the GPU before training
    return before, before_judged, before_dev, before_dev_judged


def run_key(name: str, s: int, *, recipe: dict, init: str, warm_keys: dict, data_hash: dict, family: str) -> str:
    """The cache key of one training run: only the settings its kind trains with
    (:func:`stepwiser_lib.method.judge_train.recipe_key`: a new DISC_LR retrains no GRPO judge), its
    seed, its initial model, the warm-ups, its rule's data and the prompt family."""
    return io.digest(
        name,
        s,
        judge_train.recipe_key(parse_variant(name)[0], recipe),
        paths.model_fingerprint(init),
        warm_keys,
        data_hash[parse_variant(name)[1]],
        family,
    )


def on_disk(art, run_id: str, key: str) -> bool:
    """Whether ``art/<slug>/record.json`` holds run ``run_id`` for ``key`` with its model whole
    (what :func:`_train_cached` would read instead of training)."""
    path = art / variant_slug(run_id) / "record.json"
    try:
        rec = io.read_json(path)
    except (OSError, ValueError):
        return False
    return isinstance(rec, dict) and rec.get("_key") == key and entry_whole(rec.get("entry") or {})


def _train_cached(
    art, name: str, s: int, run_id: str, key: str, *, recipe, init, warmups, data, family, progress=True, train=None
):
    """One run of :func:`train_runs`, trained (by ``train``, default
    :func:`stepwiser_lib.method.judge_train.train_variant`) unless ``art/<slug>/record.json`` holds it
    for ``key``: (the record, whether it was trained now)."""
    d = art / variant_slug(run_id)
    train = train or judge_train.train_variant
    trained = []
    rec = io.cached_json(
        d / "record.json",
        key,
        lambda: (
            trained.append(run_id)
            or stored_record(
                train(
                    name,
                    data,
                    d,
                    base_model=init,
                    warmups=warmups,
                    recipe=recipe,
                    family=family,
                    seed=s,
                    progress=progress,
                )
            )
        ),
        valid=lambda r: entry_whole(r["entry"]),
    )
    return rec, bool(trained)


#: What a training process of :func:`train_runs` shares with every run it trains (set once per
#: process by :func:`_worker_init`, so the judge data are sent once, not once a run).
_SHARED: dict = {}


def _worker_init(threads: int, shared: dict) -> None:
    from ..engines.models import set_threads  # lazy: torch

    set_threads(threads)
    _SHARED.clear()
    _SHARED.update(shared)


def _worker_run(job: tuple) -> tuple[str, float, bool, int]:
    name, s, run_id, key = job
    kw = {k: _SHARED.get(k) for k in ("recipe", "init", "warmups", "data", "family", "train")}
    rec, trained = _train_cached(_SHARED["art"], name, s, run_id, key, progress=False, **kw)
    return run_id, rec["train"]["seconds"], trained, os.getpid()


def _cost(name: str) -> int:
    """Rough relative cost of a run by its kind's trainer and output style, to start the longest
    first (a pool then ends with short runs, so neither process idles long at the end)."""
    kind = parse_variant(name)[0]
    trainer, style = JUDGE_KINDS[kind].trainer, STYLE[kind]
    return 4 if trainer == "grpo" and style != "direct" else 1


def in_processes(fn, jobs: list, processes: int, shared: dict, desc: str, unit: str):
    """Yield ``fn(job)`` for each of ``jobs``, computed by ``processes`` side-by-side processes with
    an equal share of the cores each, in the order they finish. ``fn``: a module-level function
    (pickled by name) that reads what every job shares from :data:`_SHARED` (``shared``, sent to
    each process once). A job that fails raises here."""
    import multiprocessing as mp

    from tqdm.auto import tqdm

    # each its share of the cores this process may use ($OMP_NUM_THREADS, else every core)
    threads = max(1, (int(os.environ.get("OMP_NUM_THREADS") or 0) or os.cpu_count() or 1) // processes)
    # spawn: a fresh interpreter per process (no forked torch thread pools or CUDA state)
    with mp.get_context("spawn").Pool(processes, _worker_init, (threads, shared)) as pool:
        bar = tqdm(total=len(jobs), desc=f"{desc} ({processes} processes, {threads} thread(s) each)", unit=unit)
        for out in pool.imap_unordered(fn, jobs, chunksize=1):
            bar.update(1)
            yield bar, out
        bar.close()


def cpu_processes(processes: int, what: str) -> int:
    """``processes`` on a CPU machine; 1 (with a printed note) on a GPU, where one process has the
    whole device (several GPUs: the launcher, docs/real_models.md)."""
    if processes <= 1:
        return 1
    from ..engines.models import pick_device  # lazy: torch

    if (device := pick_device()) != "cpu":
        print(
            f"TRAIN_PROCESSES {processes}: side-by-side processes are for a CPU machine; on {device} the {what} "
            "go one at a time (several GPUs: the launcher, docs/real_models.md)"
        )
        return 1
    return processes


def train_in_processes(jobs: list[tuple], processes: int, shared: dict) -> dict[str, tuple[float, bool]]:
    """``jobs`` ((variant, seed, run id, key), each cached like :func:`train_runs`'s) trained by
    ``processes`` processes side by side, each with its share of the cores (issue 61: on a 2-core
    CPU two one-thread processes train 1.5x the GRPO steps of one two-thread process, because a
    toy model's decode step is mostly Python, which one process runs on one core at a time;
    ``make bench-grpo PROCESSES=2``: results/bench/grpo_processes.json). A run's numbers do not depend on it (tiny's three runs: bit for bit). The longest kinds start first. Returns run id -> (seconds,
    trained now). A run that fails raises here, after the runs already done are on disk. ``shared``:
    what every run reads (``art``, ``recipe``, ``init``, ``warmups``, ``data``, ``family``, and
    optionally ``train``, a module-level function that replaces ``train_variant``: tests)."""
    order = sorted(jobs, key=lambda j: -_cost(j[0]))
    done = {}
    for bar, (run_id, secs, trained, pid) in in_processes(
        _worker_run, order, processes, shared, "training runs", "run"
    ):
        done[run_id] = (secs, trained)
        bar.write(f"{run_id:32s} trained in {secs:7.1f} s{'' if trained else '  (from disk)'}  (process {pid})")
    return done


def judge_entry(
    entry: dict,
    data: dict,
    splits: list[tuple],
    *,
    family: str,
    max_completion: int,
    direct_max_completion: int,
    batch: int,
) -> dict:
    """One judge (a registry-style ``entry``) loaded and evaluated
    (:func:`stepwiser_lib.method.judge.evaluate_judge`) on each of ``splits`` in turn: (rule, split
    name of :data:`EVAL_SPLITS`, keyword arguments) -> (metrics, judged chunks). A verdict-only judge
    reads with ``direct_max_completion`` new tokens."""
    j = judge.load_judge(entry, family, direct_max_completion if entry["style"] == "direct" else max_completion, batch)
    out = {(rule, split): judge.evaluate_judge(j, data[rule][EVAL_SPLITS[split]], **kw) for rule, split, kw in splits}
    _release(j)
    return out


def _worker_judge(job: tuple) -> tuple[str, dict, float]:
    import time

    name, entry, splits = job
    t0 = time.time()
    kw = {k: _SHARED[k] for k in ("family", "max_completion", "direct_max_completion", "batch")}
    fn = _SHARED.get("judge_entry") or judge_entry  # tests: a module-level stand-in
    return name, fn(entry, _SHARED["data"], splits, **kw), time.time() - t0


def judge_many(
    jobs: dict[str, tuple[dict, list[tuple]]], data: dict, *, processes: int = 1, **settings
) -> dict[str, dict]:
    """:func:`judge_entry` for each judge of ``jobs`` (name -> (entry, splits)), by ``processes``
    side-by-side processes on a CPU machine (``TRAIN_PROCESSES``, issue 61: a judge's greedy decode
    is as Python-bound as GRPO's), else one at a time. ``settings``: ``family``,
    ``max_completion``, ``direct_max_completion``, ``batch`` (and, in tests, ``judge_entry``: a
    module-level function that replaces :func:`judge_entry` in the processes). Greedy verdicts do not depend on the
    processes (tiny: bit for bit). Returns name -> (rule, split) -> (metrics, judged), in ``jobs``' order."""
    processes = cpu_processes(processes, "judges") if len(jobs) > 1 else 1
    if processes == 1:
        fn = settings.pop("judge_entry", None) or judge_entry
        return {name: fn(e, data, splits, **settings) for name, (e, splits) in jobs.items()}
    done = {}
    order = [(name, e, splits) for name, (e, splits) in jobs.items()]
    for bar, (name, out, secs) in in_processes(
        _worker_judge, order, processes, {"data": data, **settings}, "judges", "judge"
    ):
        done[name] = out
        bar.write(f"{name:40s} judged in {secs:7.1f} s")
    return {name: done[name] for name in jobs}


def train_runs(
    art,
    variants: list[str],
    seed: int,
    repeat_seeds: list[int],
    *,
    recipe: dict,
    init: str,
    warmups: dict,
    warm_keys: dict,
    data: dict,
    data_hash: dict,
    family: str,
    processes: int = 1,
) -> dict[str, dict]:
    """Notebook 04, section 3: every run of :func:`training_runs` trained once
    (:func:`stepwiser_lib.method.judge_train.train_variant`) and cached in ``art/<slug>/record.json`` under
    :func:`run_key`. The key travels with the run's registry entry, so later results computed from an
    older judge are redone. ``processes`` (``TRAIN_PROCESSES``) > 1: the runs are trained by that many
    processes side by side first (:func:`train_in_processes`; on a CPU machine, else one at a time),
    then read from disk here. Returns run id -> record; prints a line a run."""
    runs = training_runs(variants, seed, repeat_seeds)
    pooled = {}
    if len(runs) > 1:
        processes = cpu_processes(processes, "runs")
    kw = dict(recipe=recipe, init=init, warmups=warmups, data=data, family=family)
    keys = {
        run_id: run_key(
            name, s, warm_keys=warm_keys, data_hash=data_hash, **{k: kw[k] for k in ("recipe", "init", "family")}
        )
        for name, s, run_id in runs
    }
    if processes > 1 and len(runs) > 1:
        todo = [(name, s, run_id, keys[run_id]) for name, s, run_id in runs if not on_disk(art, run_id, keys[run_id])]
        if len(todo) > 1:  # one run left trains here, with every core
            pooled = train_in_processes(todo, processes, {"art": art, **kw})
    records = {}
    for name, s, run_id in runs:
        rec, trained = _train_cached(art, name, s, run_id, keys[run_id], **kw)
        records[run_id] = {**rec, "entry": {**resolved_entry(rec["entry"]), "name": run_id, "key": rec["_key"]}}
        if run_id not in pooled:
            print(
                f"{run_id:32s} trained in {records[run_id]['train']['seconds']:7.1f} s{'' if trained else '  (from disk)'}"
            )
    return records


#: The numbers of a judge's row that mean nothing when it gave no parsable verdict (verdicts.RULE).
ROW_NUMBERS = [
    "dev_balanced_acc",
    "balanced_acc",
    "acc",
    "ci95",
    "truth_balanced_acc",
    "score_auc",
    "truth_score_auc",
    "verdict_prob_auc",
    "readout_auc",
    "positive_rate",
]


def start_label(warmed: bool) -> str:
    """How tables name the judge every variant starts from: the format warm-up, or (an instruct
    model, ``WARMUP: false``) the initial model itself. Its registry name stays :data:`WARMUP_NAME`."""
    return WARMUP_NAME if warmed else "initial model (before RL; no warm-up)"


def _masked(row: dict, test_preds: list[dict]) -> dict:
    return mask(row, tally(test_preds), ROW_NUMBERS)


def start_entries(warmups: dict, warm_keys: dict) -> dict[str, dict]:
    """The registry-style entry of every warm-up but the main one (:func:`warmup_entry`), keyed by
    its predictions' name (:data:`stepwiser_lib.core.vocab.START_NAME`): the starts of the
    ablations (the oracle warm-up, the no-CoT and restating ones), each evaluated so that every arm
    is compared with its own start (issue 59)."""
    return {
        START_NAME[style]: {
            "name": START_NAME[style],
            "kind": "warmup",
            "rule": None,
            "style": WARMUP_STYLES[style],
            "base": d,
            "adapter": None,
            "row": f"format warm-up ({style})",
            "key": warm_keys.get(style),
        }
        for style, d in sorted(warmups.items())
        if style != "cot"
    }


def judge_starts(
    entries: dict,
    data: dict,
    *,
    family: str,
    max_completion: int,
    direct_max_completion: int,
    batch: int,
    processes: int = 1,
):
    """Greedy verdicts of each start of :func:`start_entries` on every rule's dev and test chunks
    (side by side with ``processes``, :func:`judge_many`): name -> rule -> split -> judged chunks
    (what :func:`evaluate_runs` takes as ``other_starts``)."""
    jobs = {name: (e, [(rule, s, {}) for rule in data for s in EVAL_SPLITS]) for name, e in entries.items()}
    settings = dict(
        family=family, max_completion=max_completion, direct_max_completion=direct_max_completion, batch=batch
    )
    out = judge_many(jobs, data, processes=processes, **settings)
    return {name: {rule: {s: out[name][(rule, s)][1] for s in EVAL_SPLITS} for rule in data} for name in entries}


def evaluate_runs(
    records: dict,
    data: dict,
    before: dict,
    before_dev: dict,
    warm_judged: dict,
    *,
    family: str,
    max_completion: int,
    direct_max_completion: int,
    judge_batch: int,
    auc_k: int,
    seed: int,
    warmed: bool = True,
    other_starts: dict | None = None,
    processes: int = 1,
) -> tuple[dict, list[dict], dict, dict]:
    """Notebook 04, section 4: the per-chunk predictions and the table rows of the warm-up (per
    rule), the two yardsticks (toy world) and every trained run. Each run is evaluated once on test
    (every metric, the reported numbers) and on dev (greedy verdicts, what choices read); its
    record gains ``dev`` and ``test`` metrics with their 95% intervals (problems resampled).
    ``warm_judged``: rule -> split -> the warm-up's judged chunks. A row whose judge parsed no
    verdict on test shows :data:`stepwiser_lib.core.verdicts.UNINFORMATIVE` instead of its numbers, and
    every row says how its verdicts parsed. ``other_starts`` (:func:`judge_starts`): the other
    warm-ups' judged chunks, each a row, and for a CoT start on the toy world the rule reading
    its analysis (:func:`rule_name`). ``processes``: the runs are judged side by side
    (:func:`judge_many`). Returns (predictions keyed (judge, rule, split), rows,
    run id -> judged test chunks, the yardsticks' summaries)."""
    preds, rows, judged_by, references = {}, [], {}, {}
    for rule in warm_judged:
        preds.update(predictions(WARMUP_NAME, rule, data[rule], warm_judged[rule], cot=True))
        ci = balanced_accuracy_ci(preds[(WARMUP_NAME, rule, "test")])
        rows.append(
            _masked(
                {
                    "judge": start_label(warmed),
                    "rule": rule,
                    "dev_balanced_acc": before_dev[rule]["balanced_acc"],
                    **before[rule],
                    "ci95": f"[{ci['low']}, {ci['high']}]",
                    "train_s": None,
                    "seed": seed,
                },
                preds[(WARMUP_NAME, rule, "test")],
            )
        )
    for name, by_rule in (other_starts or {}).items():
        cot = any(j.get("analysis", "").split("\\boxed")[0].strip() for r in by_rule.values() for j in r["test"])
        for rule, judged in by_rule.items():
            preds.update(predictions(name, rule, data[rule], judged, cot=cot))
            test, ci = preds[(name, rule, "test")], balanced_accuracy_ci(preds[(name, rule, "test")])
            row = {
                "judge": name,
                "rule": rule,
                "dev_balanced_acc": balanced_accuracy_ci(preds[(name, rule, "dev")])["balanced_acc"],
                "balanced_acc": ci["balanced_acc"],
                "ci95": f"[{ci['low']}, {ci['high']}]",
                "train_s": None,
                "seed": seed,
            }
            rows.append(_masked(row, test))
            if cot and family == "toy":  # the rule reading this start's own analysis
                ref = rule_name(name)
                for split in EVAL_SPLITS:
                    preds[(ref, rule, split)] = reference_judge(
                        preds[(name, rule, split)], ref, [tasks.analysis_verdict(j["analysis"]) for j in judged[split]]
                    )
                rows.append(_reference_row(preds, references, ref, rule, seed))
    for rule in warm_judged if family == "toy" else []:  # they read the toy analysis and the exact checker
        preds.update(reference_predictions(preds, rule, warm_judged[rule]))
        rows += [_reference_row(preds, references, name, rule, seed) for name in (REF_RULE, REF_EXACT)]
    jobs = {}
    for run_id, rec in records.items():
        e = rec["entry"]  # a verdict-only judge: its p(Positive) on dev too (the threshold reading below)
        dev_kw, test_kw = {"readout": e["style"] == "direct"}, {"auc_k": auc_k, "readout": True}
        jobs[run_id] = (e, [(e["rule"], "dev", dev_kw), (e["rule"], "test", test_kw)])
    settings = dict(
        family=family, max_completion=max_completion, direct_max_completion=direct_max_completion, batch=judge_batch
    )
    evaluated = judge_many(jobs, data, processes=processes, **settings)
    for run_id, rec in records.items():
        e = rec["entry"]
        direct = e["style"] == "direct"
        rec["dev"], dev_judged = evaluated[run_id][(e["rule"], "dev")]
        rec["test"], judged_by[run_id] = evaluated[run_id][(e["rule"], "test")]
        preds.update(
            predictions(
                run_id,
                e["rule"],
                data[e["rule"]],
                {"dev": dev_judged, "test": judged_by[run_id]},
                cot=e["style"] == "cot",
            )
        )
        for split in ("dev", "test"):
            rec[split]["ci95"] = balanced_accuracy_ci(preds[(run_id, e["rule"], split)])
        rows.append(_masked(variant_row(run_id, rec, seed), preds[(run_id, e["rule"], "test")]))
        if direct:  # issue 59: a verdict-only judge read at a cut of its p(Positive) chosen on dev
            preds.update(threshold_reading(run_id, e["rule"], preds, dev_judged, judged_by[run_id], rec))
    return preds, rows, judged_by, references


def threshold_name(run_id: str) -> str:
    """The predictions' name of a judge run read at a dev-chosen threshold (:func:`threshold_reading`)."""
    return f"{run_id} (dev threshold)"


def threshold_reading(run_id: str, rule: str, preds: dict, dev_judged: list[dict], test_judged: list[dict], rec: dict):
    """A verdict-only judge read at the cut of its p(Positive) that maximises balanced accuracy on
    dev (:func:`stepwiser_lib.evals.evaluation.balanced_threshold`), applied to dev and test
    (issue 59: the no-CoT judge's greedy verdicts collapse to one side where its p(Positive) may
    still rank the chunks; the audit measured test AUCs of 0.37-0.61). Keyed as :func:`predictions`;
    ``rec`` gains ``dev_threshold`` and the test balanced accuracy at it. {} without probabilities."""
    dev_p = [j.get("p_positive") for j in dev_judged]
    test_p = [j.get("p_positive") for j in test_judged]
    if all(p is None for p in dev_p) or all(p is None for p in test_p):
        return {}
    dev = preds[(run_id, rule, "dev")]
    t, _ = balanced_threshold(dev_p, [p["label"] for p in dev])
    name = threshold_name(run_id)
    out = {}
    for split, ps in (("dev", dev_p), ("test", test_p)):
        base = preds[(run_id, rule, split)]
        out[(name, rule, split)] = [
            {**r, "score": p}
            for r, p in zip(reference_judge(base, name, [None if p is None else p >= t for p in ps]), ps)
        ]
    rec["dev_threshold"] = {
        "threshold": round(t, 6),
        "test_balanced_acc": balanced_accuracy_ci(out[(name, rule, "test")])["balanced_acc"],
        "dev_balanced_acc": balanced_accuracy_ci(out[(name, rule, "dev")])["balanced_acc"],
    }
    return out


def _reference_row(preds: dict, references: dict, name: str, rule: str, seed: int) -> dict:
    """A yardstick's table row, its summary kept in ``references[name][rule]``."""
    sm = references.setdefault(name, {})[rule] = reference_summary(
        preds[(name, rule, "test")], preds[(name, rule, "dev")]
    )
    return {"judge": name, "rule": rule, **sm, "ci95": f"[{sm['ci95']['low']}, {sm['ci95']['high']}]", "seed": seed}


def split_sizes(data: dict) -> dict:
    """Chunks and problems of each rule's evaluation splits (:data:`EVAL_SPLITS`)."""
    return {
        r: {
            s: {"chunks": len(data[r][k]), "problems": len({e["problem_id"] for e in data[r][k]})}
            for s, k in EVAL_SPLITS.items()
        }
        for r in data
    }


def seeds_of(run_ids, variant: str) -> list[str]:
    """The run ids of ``variant``: its ``SEED`` run and its repeat seeds, in order."""
    return [r for r in run_ids if r == variant or r.startswith(variant + "@")]


def comparison_pairs(preds: dict, run_ids: list[str], main: str) -> list[tuple[str, str, list, object]]:
    """The paired questions notebook 04 asks on the test split, as (claim, rule, a runs, b) for
    :func:`stepwiser_lib.evals.evaluation.compare` (a: a list of per-seed prediction lists; b: one list,
    or one per seed). ``preds`` maps (judge, rule, split) to per-chunk predictions. Asked where
    both sides exist, in this order: RL against its warm-up, chance and the rule reading the
    warm-up's analysis; generative RL against discriminative SFT (every seed of each, paper Table
    5); RL against RL from a restating warm-up and the discriminative judge from the warm-up
    against the plain one (issue 17's fairness checks); then the paper's other orderings
    (:data:`stepwiser_lib.evals.claims.JUDGE_ORDERINGS`) whose two judges read the same rule's chunks
    (judges of different rules meet different labels: notebook 05 compares those)."""
    rule = parse_variant(main)[1]
    test = lambda name: preds.get((name, rule, "test"))  # noqa: E731
    runs = lambda v: [preds[(r, parse_variant(v)[1], "test")] for r in seeds_of(run_ids, v)]  # noqa: E731
    a = runs(main)
    pairs = [
        ("RL beats its warm-up", rule, a, test(WARMUP_NAME)),
        ("RL beats chance (a constant verdict)", rule, a, constant_judge(test(WARMUP_NAME))),
    ]
    if test(REF_RULE) is not None:  # does RL add anything to reading the warm-up's analysis?
        pairs.append(("RL beats the warm-up's analysis read by a rule", rule, a, test(REF_RULE)))
    disc = f"disc_sft:{rule}"
    if disc in run_ids:
        pairs.append(("generative RL beats discriminative SFT", rule, a, runs(disc)))
    if f"restate_rl:{rule}" in run_ids:  # RL from a warm-up that hands over no derived value
        pairs.append(
            ("the derived analysis helps RL (against a restating warm-up)", rule, a, test(f"restate_rl:{rule}"))
        )
    if disc in run_ids and f"disc_warmup_sft:{rule}" in run_ids:  # what the warm-up gives the discriminative judge
        pairs.append(
            ("the warm-up helps the discriminative judge", rule, [test(f"disc_warmup_sft:{rule}")], runs(disc))
        )
    for claim, x, y in claims.judge_orderings([r for r in run_ids if "@" not in r]):
        rx, ry = parse_variant(x)[1], parse_variant(y)[1]
        if rx == ry and (x, y) != (main, disc):
            pairs.append((claim, rx, runs(x), runs(y)))
    return pairs


def compare_all(preds: dict, run_ids: list[str], main: str) -> list[dict]:
    """Notebook 04's paired comparisons on the test split: each question of :func:`comparison_pairs`
    answered by :func:`stepwiser_lib.evals.evaluation.compare` (uninformative when a judge parsed nothing)."""
    return [
        {"claim": claim, "split": "test", **compare(a, b)} for claim, _, a, b in comparison_pairs(preds, run_ids, main)
    ]


def stored_record(record: dict) -> dict:
    """A trained run's record (:func:`stepwiser_lib.method.judge_train.train_variant`) as ``record.json`` stores it."""
    return {**record, "entry": stored_entry(record["entry"])}


def entry_whole(entry: dict) -> bool:
    """Every local model folder the entry names is complete (config and weights); a hub id is not
    checked. A cached run whose folder was deleted is retrained, not trusted (trusting its
    record, notebook 04 never rebuilt the folder, and notebook 05 kept sending the user back to 04)."""
    local = [paths.resolve_stored(entry[k]) for k in MODEL_FIELDS if entry.get(k)]
    return all(paths.model_complete(p) for p in local if os.path.isabs(p))


def write_registry(path, entries: list[dict], *, family: str, data_hash: dict) -> None:
    """Notebook 04's ``judges.json``: the entries notebooks 05-07 read, model folders stored
    relative, each with its provenance: the prompt family it was trained with and the sha256 of
    notebook 03's splits it was trained and chosen on (``data_hash``: rule -> split -> sha256, as
    :func:`read_splits` gives; the warm-up read every rule). Notebooks 05-07 compare both
    (:func:`stepwiser_lib.core.inputs.stale`)."""

    def provenance(e):
        rules = [e["rule"]] if e.get("rule") else sorted(data_hash)
        return {"prompt_family": family, "splits": {r: data_hash[r] for r in rules if r in data_hash}}

    io.write_json(path, [{**stored_entry(e), **provenance(e)} for e in entries])


def in_order(registry: dict[str, dict], names: list[str]) -> dict[str, dict]:
    """``registry``'s entries in the order of ``names``, each followed by its repeat-seed runs
    (``<name>@seedN``, as :func:`read_registry` with ``every_seed`` returns them), so that a
    notebook that orders its judges keeps every seed (notebooks 06 and 07)."""
    return {r: registry[r] for n in names for r in seeds_of(registry, n)}


def read_registry(profile: str, names: list[str], allow_all: bool = False, every_seed: bool = False) -> dict[str, dict]:
    """Notebook 04's registry entries for ``names`` (every entry when ``allow_all`` and ``names``
    holds ``"all"``), in registry order; with ``every_seed`` also each named judge's repeat-seed
    runs (``<name>@seedN``: the claims table's arms). Raises naming the judges it lacks."""
    path = paths.judge_registry(profile)
    if not path.exists():
        raise FileNotFoundError(
            f"no judge registry at {path}: run notebook 04 at profile {profile!r} first "
            f"(make reproduce PROFILE={profile})"
        )
    try:
        stored = io.read_json(path)
        registry = {e["name"]: resolved_entry(e) for e in stored}
    except (ValueError, KeyError, TypeError) as err:  # damaged (e.g. a copy cut short)
        raise ValueError(
            f"the judge registry {path} is damaged ({type(err).__name__}: {err}); re-run notebook 04 at "
            f"profile {profile!r}: it rewrites the registry from its cached runs without retraining"
        ) from None
    wanted = [n for n in names if not (allow_all and n == "all")]
    unknown = [n for n in wanted if n not in registry]
    if unknown:
        raise ValueError(f"unknown judge(s) {unknown}; the notebook 04 registry has {list(registry)}")
    every = allow_all and "all" in names
    return {n: e for n, e in registry.items() if every or n in wanted or (every_seed and n.split("@seed")[0] in wanted)}


# ----------------------------------------------------------------------------- evaluation records

#: The two evaluation splits: name in the predictions -> notebook 03's balanced file.
EVAL_SPLITS = {"dev": "dev_balanced", "test": "test_balanced"}


def predictions(name: str, rule: str, data_rule: dict, judged: dict, cot: bool = False) -> dict:
    """Per-chunk predictions of one judge on both evaluation splits, keyed (judge, rule, split)
    (:func:`stepwiser_lib.evals.evaluation.judge_predictions`; ``judged``: split -> the judge's outputs).
    A ``cot`` judge's test records keep its analysis and whether it is the exact re-derivation
    (issue 59: the analysis before and after RL, compared chunk by chunk)."""

    def exact(key: str, split: str) -> list | None:
        if not cot or split != "test":
            return None
        return [
            (tasks.analysis_checks(e, j.get("analysis") or "") or {}).get("exact")
            for e, j in zip(data_rule[key], judged[split])
        ]

    return {
        (name, rule, split): judge_predictions(
            name,
            rule,
            split,
            data_rule[key],
            judged[split],
            [tasks.step_truth(e) for e in data_rule[key]],
            exact(key, split),
        )
        for split, key in EVAL_SPLITS.items()
    }


def reference_predictions(preds: dict, rule: str, warm_judged: dict) -> dict:
    """The two yardsticks on the warm-up's chunks of both splits, keyed as :func:`predictions`:
    :data:`REF_RULE` (the verdict the warm-up's own greedy analysis implies: what a judge gets
    with no RL and no MC label) and :data:`REF_EXACT` (the exact step checker: the MC labels'
    noise ceiling). Toy world only."""
    out = {}
    for split, jd in warm_judged.items():
        warm = preds[(WARMUP_NAME, rule, split)]
        out[(REF_RULE, rule, split)] = reference_judge(
            warm, REF_RULE, [tasks.analysis_verdict(j["analysis"]) for j in jd]
        )
        out[(REF_EXACT, rule, split)] = reference_judge(warm, REF_EXACT, [p["truth"] for p in warm])
    return out


def reference_summary(test: list[dict], dev: list[dict]) -> dict:
    """A yardstick's numbers: test balanced accuracy with its interval (against the MC labels
    and the exact checker), its Positive rate (%), and dev balanced accuracy."""
    ci = balanced_accuracy_ci(test)
    return {
        "balanced_acc": ci["balanced_acc"],
        "ci95": ci,
        "dev_balanced_acc": balanced_accuracy_ci(dev)["balanced_acc"],
        "truth_balanced_acc": balanced_accuracy_ci(test, against="truth")["balanced_acc"],
        "positive_rate": round(100 * sum(p["verdict"] is True for p in test) / len(test), 2),
    }


def variant_row(run_id: str, rec: dict, seed: int) -> dict:
    """One judge's row of notebook 04's table: dev and test metrics, training time, its seed and
    the paper row it stands for, with that row's ProcessBench average F1 (Tables 5/6: 1.5B where
    the paper has it, else 7B)."""
    e, m = rec["entry"], rec["test"]
    p = paper_row(e["row"], e["rule"]) or paper_row(e["row"], e["rule"], "7B")
    return {
        "judge": run_id,
        "rule": e["rule"],
        "dev_balanced_acc": rec["dev"]["balanced_acc"],
        **m,
        "ci95": f"[{m['ci95']['low']}, {m['ci95']['high']}]",
        "train_s": rec["train"]["seconds"],
        "seed": int(run_id.split("@seed")[1]) if "@seed" in run_id else seed,
        "paper_row": e["row"],
        "paper_pb_avg_f1": p["avg"] if p else None,
        "paper_model": p["model"] if p else None,
    }


def comparison_report(preds: dict, records: dict, main: str | None, before: dict, data: dict, auc_k: int = 0) -> dict:
    """Notebook 04, section 4's paired questions in one call: every comparison of
    :func:`compare_all` (paired bootstrap by problem, McNemar for one run), the main judge's
    :func:`main_summary`, and the lines a reader gets: each comparison that tests no paper claim
    (those are the notebook's closing lines, :func:`claims.is_paper_claim`), dev against test for each
    seed of the main judge (:func:`dev_test_line`) and, with ``auc_k``, the score AUCs before and
    after RL. Without a main judge, nothing is compared."""
    if not main:
        return {"comparisons": [], "summary": {}, "main_runs": [], "lines": []}
    main_runs = seeds_of(records, main)
    comparisons = compare_all(preds, list(records), main)
    summary = main_summary(main, records, before, comparisons, auc_k)
    sizes = split_sizes(data)[parse_variant(main)[1]]
    # a paper claim is printed once, in the closing lines (teaching.closing_lines); here only our own questions
    lines = [comparison_line(c) for c in claims.other_comparisons("judges", comparisons)]
    lines += [dev_test_line(r, records[r], sizes) for r in main_runs]
    if auc_k:  # the same question without the cut-off: does RL rank steps better?
        lines.append(
            f"Score AUC (Maj@{auc_k}, against MC labels): warm-up {summary['warmup_score_auc']} → after GRPO "
            f"{summary['rl_score_auc']}; against the exact checker: {summary['warmup_truth_score_auc']} → "
            f"{summary['rl_truth_score_auc']}."
        )
    return {"comparisons": comparisons, "summary": summary, "main_runs": main_runs, "lines": lines}


def main_summary(main: str, records: dict, before: dict, comparisons: list[dict], auc_k: int = 0) -> dict:
    """The main judge on test, every seed, beside its warm-up: balanced accuracy (MC labels and
    exact checker) with intervals, and the first two paired questions of :func:`comparison_pairs`
    answered (RL beats its warm-up; RL beats chance); with ``auc_k`` also the Maj@k score AUCs."""
    rule = parse_variant(main)[1]
    runs = [records[r]["test"] for r in seeds_of(records, main)]
    w = before[rule]
    out = {
        "main": main,
        "split": "test",
        "seeds": len(runs),
        "warmup_balanced_acc": w["balanced_acc"],
        "rl_balanced_acc": [m["balanced_acc"] for m in runs],
        "rl_ci95": [m["ci95"] for m in runs],
        "warmup_truth_acc": w.get("truth_balanced_acc"),
        "rl_truth_acc": [m.get("truth_balanced_acc") for m in runs],
        "rl_beats_warmup": comparisons[0]["verdict"] == "a higher",
        "rl_beats_chance": comparisons[1]["verdict"] == "a higher",
    }
    if auc_k:
        out.update(
            warmup_score_auc=w.get("score_auc"),
            rl_score_auc=[m.get("score_auc") for m in runs],
            warmup_truth_score_auc=w.get("truth_score_auc"),
            rl_truth_score_auc=[m.get("truth_score_auc") for m in runs],
        )
    return out


def variants_out(records: dict, warmup_analysis: str = "derived", warmed: bool = True) -> dict:
    """What ``results/<profile>/judges.json`` keeps of each trained run: its registry entry,
    ``uses_oracle`` (:func:`stepwiser_lib.core.vocab.uses_oracle`: anything in its training computed
    from the problems' true values; ``warmup_analysis``: ``WARMUP_ANALYSIS``; ``warmed``: ``WARMUP``),
    test and dev metrics, training time, steps and examples, the GRPO dev curve and RS-FT's kept
    count where the kind has them."""
    return {
        r: {
            "entry": rec["entry"],
            "uses_oracle": uses_oracle(rec["entry"]["kind"], warmup_analysis, warmed),
            "test": rec["test"],
            "dev": rec["dev"],
            "seconds": rec["train"]["seconds"],
            "steps": rec["train"]["steps"],
            "train_examples": rec["train"]["train_examples"],
            **{k: rec["train"][k] for k in ("val_curve", "rsft_kept", "rsft_unparsed") if k in rec["train"]},
            **({"dev_threshold": rec["dev_threshold"]} if "dev_threshold" in rec else {}),
        }
        for r, rec in records.items()
    }


def oracle_map(names: list[str], warmup_analysis: str = "derived", warmed: bool = True) -> dict[str, bool]:
    """``uses_oracle`` of every judge in notebook 04's predictions (``names``: trained runs, the
    starts and the yardsticks): a run as its kind (:func:`stepwiser_lib.core.vocab.uses_oracle`),
    a start as the warm-up it is (the derived one, or the main one on derived analyses), a rule
    as the start whose analysis it reads, the exact checker always (issue 59)."""
    starts = {v: k for k, v in START_NAME.items()}
    rules = {rule_name(name): style for name, style in starts.items()}

    def start_oracle(style: str) -> bool:
        return warmed and (style == "derived" or (style == "cot" and warmup_analysis == "derived"))

    out = {}
    for n in names:
        if n in starts:
            out[n] = start_oracle(starts[n])
        elif n == REF_EXACT:
            out[n] = True
        elif n in rules:
            out[n] = start_oracle(rules[n])
        elif ":" in n:  # a run, or a run read at a dev threshold
            out[n] = uses_oracle(parse_variant(n.split(" (")[0].split("@")[0])[0], warmup_analysis, warmed)
    return out


def warmup_entry(warmups: dict, warm_keys: dict, init: str) -> dict:
    """The registry entry of the judge before RL: the CoT warm-up, or the initial model itself
    when there is no warm-up (instruct models)."""
    return {
        "name": WARMUP_NAME,
        "kind": "warmup",
        "rule": None,
        "style": "cot",
        "base": warmups.get("cot", init),
        "adapter": None,
        "row": "format warm-up",
        "key": warm_keys.get("cot", paths.model_fingerprint(init)),
    }


def behaviour(judged: list[dict], examples: list[dict]) -> dict | None:
    """What a judge's outputs do on ``examples`` (toy world; issue 36: the printed analyses
    invented arithmetic and verdicts contradicted them), each a rate (%) with its Wilson 95%
    interval and its count: ``analysis_exact`` (the analysis is the exact re-derivation),
    ``arithmetic_ok`` (every sum it writes holds; of analyses with one), ``follows_analysis``
    (the verdict is the one its own analysis implies; of outputs with both) and ``positive``
    (says Positive). None off the toy world. [not in paper]"""
    rows = [tasks.analysis_checks(e, j.get("analysis") or "") for j, e in zip(judged, examples, strict=True)]
    if any(r is None for r in rows):
        return None
    pos = [j["verdict"] == "Positive" for j in judged]
    pairs = [
        ((j["verdict"] == "Positive"), r["implied"])
        for j, r in zip(judged, rows)
        if j["verdict"] is not None and r["implied"] is not None
    ]
    parts = {
        "analysis_exact": [r["exact"] for r in rows],
        "arithmetic_ok": [r["arithmetic_ok"] for r in rows if r["arithmetic_ok"] is not None],
        "follows_analysis": [v == i for v, i in pairs],
        "positive": pos,
    }

    return {k: rate_ci(v) for k, v in parts.items()}


def rate_ci(xs: list[bool]) -> dict:
    """A rate (%) of true flags with its Wilson 95% interval and its count."""
    k, n = sum(xs), len(xs)
    lo, hi = wilson(k, n)
    return {"rate": round(100 * k / n, 1) if n else None, "low": round(100 * lo, 1), "high": round(100 * hi, 1), "n": n}


def exploration(examples: list[dict], greedy: list[dict], samples: list[list[str]], group: int = 4) -> dict | None:
    """What a GRPO group of the judge can find (issue 59: why RL leaves its own analysis where it
    was): for each chunk of ``examples``, its greedy output (``greedy``, as :meth:`Judge.judge`
    returns it) and ``k`` outputs sampled from the same judge (``samples``). Each rate (%) with
    its Wilson 95% interval and count:

    - ``sample_exact``: sampled analyses that are the exact re-derivation; ``sample_rewarded``:
      samples whose verdict earns the GRPO reward (it equals the Monte-Carlo label);
    - ``any_exact``: chunks with an exact analysis among the ``k`` samples, and
      ``any_exact_where_greedy_inexact``: the same among the chunks whose greedy analysis is not
      exact (what RL would have to find there);
    - ``mixed_group``: chunks whose first ``group`` samples do not all earn the same reward (a
      GRPO group of that size with an advantage to learn from);
    - ``rewarded_if_exact`` and ``rewarded_if_inexact``: the reward rate of exact and of inexact
      samples (does the reward favour an exact analysis?).

    None off the toy world. [not in paper]"""
    if not (len(examples) == len(greedy) == len(samples)):
        raise ValueError(f"{len(examples)} examples, {len(greedy)} greedy outputs, {len(samples)} sample lists")
    parts: dict[str, list[bool]] = {
        k: []
        for k in (
            "sample_exact",
            "sample_rewarded",
            "any_exact",
            "any_exact_where_greedy_inexact",
            "mixed_group",
            "rewarded_if_exact",
            "rewarded_if_inexact",
        )
    }
    for e, g, outs in zip(examples, greedy, samples):
        gc = tasks.analysis_checks(e, g.get("analysis") or "")
        checks = [tasks.analysis_checks(e, t) for t in outs]
        if gc is None or any(c is None for c in checks):
            return None
        exact = [c["exact"] for c in checks]
        rewarded = [v is not None and (v == "Positive") == e["label"] for v in (judge.parse_verdict(t) for t in outs)]
        parts["sample_exact"] += exact
        parts["sample_rewarded"] += rewarded
        parts["any_exact"].append(any(exact))
        if not gc["exact"]:
            parts["any_exact_where_greedy_inexact"].append(any(exact))
        parts["mixed_group"].append(len(set(rewarded[:group])) > 1)
        for x, r in zip(exact, rewarded):
            parts["rewarded_if_exact" if x else "rewarded_if_inexact"].append(r)
    return {"k": len(samples[0]) if samples else 0, "group": group, **{k: rate_ci(v) for k, v in parts.items()}}


def analysis_change(before: list[dict], after: list[dict], examples: list[dict]) -> dict | None:
    """Did RL change how often the judge's analysis is the exact re-derivation? Paired by chunk
    (issue 59): the same ``examples`` judged by the start (``before``) and by the trained judge
    (``after``); ``lost`` chunks exact before and not after, ``gained`` the reverse; the exact
    two-sided McNemar test on those discordant pairs. None off the toy world. [not in paper]"""
    if not (len(before) == len(after) == len(examples)):
        raise ValueError(f"{len(before)} and {len(after)} judged chunks for {len(examples)} examples")
    rows = [
        (tasks.analysis_checks(e, b.get("analysis") or ""), tasks.analysis_checks(e, a.get("analysis") or ""))
        for b, a, e in zip(before, after, examples)
    ]
    if any(rb is None or ra is None for rb, ra in rows):
        return None
    return exact_change([rb["exact"] for rb, _ in rows], [ra["exact"] for _, ra in rows])


def exact_change(xb: list[bool], xa: list[bool]) -> dict:
    """:func:`analysis_change` from the per-chunk flags (exact before, exact after), in one order."""
    if len(xb) != len(xa):
        raise ValueError(f"{len(xb)} flags before RL against {len(xa)} after")
    lost = sum(b and not a for b, a in zip(xb, xa))
    gained = sum(a and not b for b, a in zip(xb, xa))
    n = len(xb)
    return {
        "n": n,
        "exact_before": round(100 * sum(xb) / n, 1) if n else None,
        "exact_after": round(100 * sum(xa) / n, 1) if n else None,
        "lost": lost,
        "gained": gained,
        "diff": round(100 * (gained - lost) / n, 2) if n else None,
        "p": mcnemar_exact(gained, lost, "two-sided"),
        "test": "exact McNemar, two-sided, paired by chunk",
    }


def analysis_changes(preds: dict, run_ids: list[str]) -> dict[str, dict]:
    """For every CoT run in ``run_ids`` whose own start has stored test analyses (``preds`` as
    :func:`evaluate_runs` returns them), :func:`exact_change` against that start, chunk by chunk
    on the test split (issue 59: does RL leave the analysis no worse than it found it?)."""
    out = {}
    for run in run_ids:
        kind, rule = parse_variant(run.split("@")[0])
        start = start_of(kind)
        mine, theirs = preds.get((run, rule, "test")), preds.get((start, rule, "test")) if start else None
        if not mine or not theirs or any(p["analysis_exact"] is None for p in [*mine, *theirs]):
            continue
        by_chunk = {p["chunk_id"]: p["analysis_exact"] for p in theirs}
        out[run] = {
            "start": start,
            **exact_change([by_chunk[p["chunk_id"]] for p in mine], [p["analysis_exact"] for p in mine]),
        }
    return out


#: How :func:`behaviour_lines` names each measure of :func:`behaviour`.
BEHAVIOUR_WORDS = {
    "analysis_exact": "the analysis is the exact re-derivation of the chunk",
    "arithmetic_ok": "every sum the analysis writes holds",
    "follows_analysis": "the verdict is the one its own analysis implies",
    "positive": "the verdict is Positive",
}


def behaviour_lines(beh: dict[str, dict]) -> list[str]:
    """Markdown bullets from :func:`behaviour` of several judges (name -> measures), one per
    measure, every judge's rate with its interval: the sentences notebook 04 prints instead of
    typing them (issue 36)."""
    out = []
    for k, words in BEHAVIOUR_WORDS.items():
        vals = [
            f"{n} {b[k]['rate']}% [{b[k]['low']}, {b[k]['high']}] (n = {b[k]['n']})"
            for n, b in beh.items()
            if b and b[k]["rate"] is not None
        ]
        if vals:
            out.append(f"- *{words}*: " + "; ".join(vals))
    return out


def behaviour_change(before: dict | None, after: dict | None, name: str) -> str:
    """What RL changed in what the judge writes, in words (issue 36: the rates were printed and
    left uninterpreted): for each measure of :func:`behaviour`, whether the judge ``name`` after RL
    does it more or less often than its warm-up (``before``), or whether their 95% intervals
    overlap (not told apart), and what that means for what RL can gain."""
    if not before or not after:
        return ""

    def moved(k):
        b, a = before[k], after[k]
        if b["rate"] is None or a["rate"] is None:
            return None
        return "up" if a["low"] > b["high"] else "down" if a["high"] < b["low"] else "same"

    words = {"up": "more often", "down": "less often", "same": "about as often (the intervals overlap)"}
    short = {
        "analysis_exact": "the analysis is the exact re-derivation",
        "arithmetic_ok": "its sums hold",
        "follows_analysis": "the verdict follows the analysis",
        "positive": "the verdict is Positive",
    }
    parts = [f"{short[k]} {words[m]} ({before[k]['rate']}% → {after[k]['rate']}%)" for k in short if (m := moved(k))]
    line = f"**What RL changed ({name} against its warm-up).** " + "; ".join(parts) + "."
    if moved("follows_analysis") == "up" and "down" in (moved("analysis_exact"), moved("arithmetic_ok")):
        line += (
            " The verdict now reads the analysis more faithfully, but the analysis it reads is worse:"
            " a judge that follows a worse analysis gains little or nothing over its start."
        )
    return line


#: The readout measures notebook 04 section 5's table shows for the warm-up and each RL run.
READOUT_KEYS = (
    "analysis_faithful",
    "readout_auc",
    "p_pos_if_analysis_right",
    "p_pos_if_analysis_wrong",
    "verdict_prob_auc",
    "balanced_acc",
)


def readout_report(judged: dict[str, list[dict]], warm: dict, records: dict, examples: list[dict], main: str) -> dict:
    """Notebook 04, section 5 in one call: ``judged`` holds the test outputs of the warm-up (key
    ``"warm-up"``, its metrics ``warm``) and of each RL run (their metrics in ``records[name]["test"]``)
    on ``examples``. Returns the ``table`` (judge -> :data:`READOUT_KEYS`), the ``text`` (the
    :func:`behaviour_lines` and what RL changed in the ``main`` run, :func:`behaviour_change`)
    and the ``summary`` fields ``results/<profile>/judges.json`` keeps."""
    metrics = {n: warm if n == "warm-up" else records[n]["test"] for n in judged}
    beh = {n: behaviour(j, examples) for n, j in judged.items()}
    runs = [n for n in judged if n != "warm-up"]
    return {
        "table": {n: {k: m.get(k) for k in READOUT_KEYS} for n, m in metrics.items()},
        "text": "\n".join(behaviour_lines(beh)) + "\n\n" + behaviour_change(beh.get("warm-up"), beh.get(main), main),
        "summary": {
            "warmup_readout_auc": warm.get("readout_auc"),
            "rl_readout_auc": [records[r]["test"].get("readout_auc") for r in runs],
            "behaviour": beh,
        },
    }


def example_block(example: dict, outputs: dict[str, dict]) -> str:
    """One judge example as notebook 04 prints it: the problem, history and chunk, its MC label
    (and the exact checker's verdict on a toy problem), then each named judge output with the
    line :func:`describe_output` gives it."""
    truth = tasks.step_truth(example)
    lines = [
        "=" * 100,
        f"PROBLEM: {example['problem']}",
        f"HISTORY: {' | '.join(example['history']) or '(none)'}",
        f"CHUNK:   {example['chunk'].replace(chr(10), ' / ')}",
        f"MC label: {'Positive' if example['label'] else 'Negative'}"
        + (f"   exact checker: {truth}" if truth is not None else ""),
    ]
    width = max((len(n) for n in outputs), default=0)
    for name, judged in outputs.items():
        lines.append(f"-- {name:<{width}}: {(judged.get('analysis') or '').strip().replace(chr(10), ' / ')}")
        lines.append("   " + describe_output(example, judged))
    return "\n".join(lines)


def describe_output(example: dict, judged: dict) -> str:
    """One line saying what kind of output a printed toy judge output is (issue 36: printed
    analyses invented arithmetic and verdicts contradicted them, unremarked): whether its analysis
    is the exact re-derivation and its sums hold, the verdict its analysis implies against the
    verdict it gave, and the exact checker's verdict on the chunk."""
    c = tasks.analysis_checks(example, judged.get("analysis") or "")
    truth = tasks.step_truth(example)
    if c is None:
        return "(not a toy problem: no exact check)"
    analysis = (
        "the exact re-derivation"
        if c["exact"]
        else "not the exact re-derivation"
        + ("; its sums hold" if c["arithmetic_ok"] else "; a sum in it is wrong" if c["arithmetic_ok"] is False else "")
    )
    implied = {
        True: "it implies the chunk is right",
        False: "it implies the chunk is wrong",
        None: "it implies no verdict (no check it can be read from)",
    }[c["implied"]]
    v = judged.get("verdict")
    agree = (
        ""
        if v is None or c["implied"] is None
        else "; the verdict follows it"
        if (v == "Positive") == c["implied"]
        else "; the verdict contradicts it"
    )
    return (
        f"[analysis: {analysis}; {implied}; verdict {v or 'none'}{agree}; "
        f"exact checker: {'right' if truth else 'wrong' if truth is False else 'n/a'}]"
    )


def analysis_implies_truth(judged: list[dict], examples: list[dict]) -> float:
    """% of chunks where the verdict a judge's own analysis implies (every difference 0 ->
    Positive) equals the exact checker (toy world) [not in paper]: how much of the answer the
    analysis already holds (``analysis_faithful`` is the same against the MC labels)."""

    hits = [tasks.analysis_verdict(j["analysis"]) == tasks.step_truth(e) for j, e in zip(judged, examples, strict=True)]
    return round(100 * sum(hits) / len(hits), 2)


def results_markdown(rows: list[dict], columns: list[str]) -> str:
    """``results/<profile>/judges.md``: each judge's step accuracy on the test split beside the paper's
    ProcessBench row it stands for."""
    return (
        "Step accuracy of each judge on the test split (ours; dev_balanced_acc: the dev split, where choices "
        "are made); paper_pb_avg_f1 is the PAPER's ProcessBench average F1 for the matching row (Tables 5/6), "
        "not ours.\n\n" + io.markdown_table(rows, columns) + "\n"
    )


def comparisons_markdown(comparisons: list[dict]) -> str:
    """Notebook 04's paired comparisons on the same test chunks (:func:`stepwiser_lib.evals.evaluation.compare`)
    as a table; an uninformative comparison has no numbers."""
    cols = ["question", "difference", "points", "95% interval", "paired test", "p", "McNemar p (exact)", "verdict"]
    num = lambda c, f: None if c["diff"] is None else f.format(**c)  # noqa: E731
    rows = [
        dict(
            zip(
                cols,
                [
                    c["claim"],
                    f"{c['a']} − {c['b']}",
                    num(c, "{diff:+.1f}"),
                    num(c, "[{low:+.1f}, {high:+.1f}]"),
                    c["test"],
                    c["p_bootstrap"],
                    c.get("mcnemar", {}).get("p"),
                    c["verdict"],
                ],
            )
        )
        for c in comparisons
    ]
    return "Paired comparisons on the same test chunks.\n\n" + io.markdown_table(rows, cols) + "\n"


def dev_test_line(name: str, rec: dict, sizes: dict) -> str:
    """One judge's dev and test balanced accuracy with their 95% intervals and split sizes, and
    whether the intervals overlap (issue 36: a judge at chance on dev and well above it on test
    looked like luck; on a dev split this small the two are often the same number within noise)."""
    dv, ts = rec["dev"]["ci95"], rec["test"]["ci95"]
    overlap = dv["low"] <= ts["high"] and ts["low"] <= dv["high"]
    return (
        f"{name}: dev {dv['balanced_acc']} [{dv['low']}, {dv['high']}] on {sizes['dev']['chunks']} chunks "
        f"({sizes['dev']['problems']} problems); test {ts['balanced_acc']} [{ts['low']}, {ts['high']}] on "
        f"{sizes['test']['chunks']} chunks ({sizes['test']['problems']} problems): "
        + (
            "the intervals overlap, so dev and test do not disagree beyond noise"
            if overlap
            else "the intervals do not overlap: dev and test disagree beyond noise"
        )
    )
