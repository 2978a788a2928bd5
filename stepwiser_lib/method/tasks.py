"""Problem sources and answer checking: the toy world, and real math for colab/paper profiles.

Every stage sees problems as plain dicts ``{"id", "problem", "answer", ...}`` and checks a
response with :func:`is_correct`, so the same notebook code runs on both worlds.

* ``toy``: :mod:`stepwiser_lib.toy.toyworld` problems, exact integer check of the last ``\\boxed{}``.
* ``numina``: NuminaMath-CoT prompts (paper §4.1) via ``datasets``, filtered as in the paper:
  the reference solution's boxed answer must be verifiable by Math-Verify.
* ``math500`` / ``gsm8k``: evaluation sets (HF ``HuggingFaceH4/MATH-500``, ``openai/gsm8k``), or
  local copies in the hub's schema given by ``path`` (``data/full`` after ``make data``, or the
  committed fixtures in ``data/fixtures``), read from the hub at :data:`HUB_REVISIONS`.

Answer checking on real math uses Math-Verify (``math_verify.parse`` / ``verify``) on the last
brace-balanced ``\\boxed{}`` of a response (:mod:`stepwiser_lib.core.chunks`).
"""

from __future__ import annotations

import argparse
import functools
import hashlib
import json
import random
import re
from pathlib import Path

from ..core import io, paths
from ..core.chunks import last_boxed
from ..core.io import file_sha256, write_jsonl
from ..toy import judge_text, toyworld

TASKS = ("toy", "numina", "math500", "gsm8k")
#: Tasks whose problems carry a reference ``solution`` (what REFERENCE_TRAJECTORIES labels).
WITH_SOLUTIONS = ("numina",)


def reference_problem(task: str) -> str:
    """Why ``REFERENCE_TRAJECTORIES`` cannot label ``task``'s problems ("" when it can): the
    shortcut labels each problem's reference solution, which only
    some tasks' problems carry (without one the run failed after its pre-filter)."""
    if task in WITH_SOLUTIONS:
        return ""
    return (
        f"REFERENCE_TRAJECTORIES labels each problem's reference solution, which only TASK = "
        f"{' or '.join(map(repr, WITH_SOLUTIONS))} rows hold (TASK = {task!r}); set it false or use numina"
    )


def load_problems(task: str, split: str, n: int, seed: int, **kw) -> list[dict]:
    """``n`` problems of ``task``; for the toy world ``split`` is one of
    :data:`toyworld.SPLIT_BUCKETS` and ``kw`` may set ``steps``/``distractors``; for real tasks
    ``kw`` may give ``path`` (a local file in the hub's schema) and ``revision``."""
    if isinstance(n, bool) or not isinstance(n, int) or n < 0:
        raise ValueError(f"load_problems: n = {n!r} must be a count (an int >= 0)")
    if task == "toy":
        ps = toyworld.generate_problems(split, n, seed=seed, **kw)
        return [{"id": p.id, "problem": p.text, "answer": str(p.answer), "toy": p.to_dict()} for p in ps]
    if task == "numina":
        return _numina(split, n, seed, **kw)
    if task in ("math500", "gsm8k"):
        return _eval_set(task, n, seed, **kw)
    raise ValueError(f"unknown task {task!r}; valid: {', '.join(TASKS)}")


# ----------------------------------------------------------------------------- world queries
# The method asks the world these questions here, and nowhere else: the toy world answers them
# exactly (an exact step checker, an analysis language); real math has no such oracle (None).


def step_truth(example: dict) -> bool | None:
    """Is the chunk's arithmetic actually right? The toy world's exact step checker, a yardstick
    independent of the noisy Monte-Carlo labels; None when the problem is not a toy problem."""
    return judge_text.chunk_truth(example)


def analysis_verdict(text: str) -> bool | None:
    """The verdict a judge's analysis implies (toy analyses: every difference 0 -> Positive);
    None when the text is not a readable toy analysis. A measurement, never a reward."""
    return judge_text.analysis_implied(text)


def analysis_checks(example: dict, analysis: str) -> dict | None:
    """A judge's own analysis of ``example``'s chunk against the truth (toy world:
    :func:`stepwiser_lib.toy.judge_text.analysis_checks`: exact re-derivation, arithmetic right,
    implied verdict); None when the problem is not a toy problem."""
    try:
        return judge_text.analysis_checks(example["problem"], example["chunk"], analysis)
    except (ValueError, KeyError):
        return None


def rule_segment(response: str) -> str:
    """The toy world's rule-based segmentation teacher (a stand-in for the paper's Llama-3.1-70B
    teacher, Table 1): :func:`stepwiser_lib.toy.toyworld.teacher_segment`."""
    return toyworld.teacher_segment(response)


def warmup_records(
    examples: list[dict],
    family: str = "toy",
    seed: int = 0,
    style: str = "cot",
    analyses: list[str] | None = None,
    verdict: str = "coin",
) -> list[dict]:
    """The judge's format warm-up SFT records on the toy path (notebook 04; [not in paper]):
    :func:`stepwiser_lib.toy.judge_text.warmup_records`."""
    return judge_text.warmup_records(examples, family, seed, style, analyses, verdict)


def file_kw(files: dict, task: str) -> dict:
    """``{"path": ...}`` for :func:`load_problems` when a notebook's ``DATA_FILES`` names a local
    file for ``task`` (repository-relative or absolute), else ``{}`` (the hub, or the toy world).
    A named file that is missing fails here, with the setting's name."""
    if not files.get(task):
        return {}
    p = Path(files[task])
    p = p if p.is_absolute() else paths.ROOT / p
    if p.is_dir():  # (issue 49: it reached the reader as a raw IsADirectoryError)
        raise FileNotFoundError(
            f"DATA_FILES[{task!r}] = {files[task]!r} is a folder ({p}); name the file in the hub's schema"
        )
    if not p.exists():
        raise FileNotFoundError(f"DATA_FILES[{task!r}] = {files[task]!r}: no such file ({p})")
    return {"path": str(p)}


def toy_problem(item: dict) -> toyworld.Problem:
    return toyworld.Problem.from_dict(item["toy"])


def is_correct(item: dict, response: str) -> bool:
    """Outcome reward r* (paper: Math-Verify on the final answer). The one API every stage uses:
    the toy world's exact integer check, or :func:`math_verify_correct` on real problems. A
    missing response (``None``) is wrong on both paths; an item without an answer is an error."""
    if not isinstance(item, dict) or ("toy" not in item and not isinstance(item.get("answer"), str)):
        raise ValueError(f"is_correct: a problem needs a 'toy' spec or a string 'answer', got {item!r:.120}")
    if not isinstance(response, str):
        return False
    if "toy" in item:
        return toyworld.is_correct(toy_problem(item), response)
    return math_verify_correct(item["answer"], response)


#: Environment variable: processes that check real-math answers (Math-Verify) beside the engine;
#: unset: one fewer than the CPU cores, at most 8; 0 or 1: in this process.
ENV_CHECK_WORKERS = "STEPWISER_CHECK_WORKERS"
#: Fewer real-math checks than this run in this process (starting a pool costs about a second).
POOL_MIN_CHECKS = 256
_POOL: dict = {}


def check_workers() -> int:
    """How many processes :func:`check_many` checks real-math answers with (``STEPWISER_CHECK_WORKERS``)."""
    import os

    v = os.environ.get(ENV_CHECK_WORKERS, "").strip()
    if not v:
        return max(1, min(8, (os.cpu_count() or 1) - 1))
    if not v.isdigit():
        raise ValueError(f"{ENV_CHECK_WORKERS}={v!r}: want a whole number of processes (0 or 1: none)")
    return max(1, int(v))


def _check_pair(pair: tuple[dict, str]) -> bool:
    return bool(is_correct(*pair))


def check_many(pairs: list[tuple[dict, str]], workers: int | None = None) -> list[bool]:
    """:func:`is_correct` of many ``(item, response)`` pairs, in order (issue 34: answer checking
    must not hold the GPU). A toy check takes microseconds and runs here; real-math checks
    (Math-Verify: milliseconds each, 16 rollouts of every prefix at paper scale) go to a pool of
    ``workers`` processes (default :func:`check_workers`) when there are at least
    :data:`POOL_MIN_CHECKS` of them. The pool is started once (``spawn``: the engine's threads and
    CUDA state are not forked) and kept for the next round. The answers do not depend on the pool."""
    workers = check_workers() if workers is None else max(1, workers)
    real = [i for i, (it, r) in enumerate(pairs) if isinstance(it, dict) and "toy" not in it and isinstance(r, str)]
    if workers == 1 or len(real) < POOL_MIN_CHECKS:
        return [bool(is_correct(it, r)) for it, r in pairs]
    import concurrent.futures as cf
    import multiprocessing as mp

    if _POOL.get("workers") != workers:
        if _POOL.get("pool"):
            _POOL["pool"].shutdown()
        _POOL.update(workers=workers, pool=cf.ProcessPoolExecutor(workers, mp_context=mp.get_context("spawn")))
    out = [None] * len(pairs)
    for i, ok in zip(real, _POOL["pool"].map(_check_pair, [pairs[i] for i in real], chunksize=64)):
        out[i] = ok
    return [bool(is_correct(*pairs[i])) if o is None else o for i, o in enumerate(out)]


def _bare(answer: str) -> str:
    """An answer as Math-Verify should read it: a boxed gold's last box, without ``$`` wrappers
    or escaped dollar signs (MATH-500 golds such as ``\\$32,\\!348`` otherwise parse to nothing)."""
    a = answer.strip()
    if "\\boxed" in a:
        a = last_boxed(a) or ""
    a = a.replace("\\$", "")
    return a.strip().strip("$").strip()


def math_verify_correct(gold: str, response: str) -> bool:
    """Math-Verify on the **last balanced** ``\\boxed{}`` of the response against the gold answer.

    A response without a box is wrong: the policy prompt asks for the final answer in a box, and
    Math-Verify's default anchor-free extraction would otherwise accept an unfinished response
    whose last number happens to equal the gold (``"... 9 * 8 = 72 dollars per day, and then"``).
    Both sides are parsed as ``$...$`` LaTeX; ``verify(gold, prediction)`` in that order."""
    from math_verify import parse, verify

    box = last_boxed(response or "")
    if box is None:
        return False
    g, p = _parse_gold(gold), parse(f"${_bare(box)}$")
    if not g or not p:
        return False
    return bool(verify(g, p))


@functools.lru_cache(maxsize=1 << 16)
def _parse_gold(gold: str):
    """A gold answer parsed once, not once per rollout (labelling checks M = 16 rollouts of every
    prefix against the same gold). Math-Verify's ``verify`` only reads it."""
    from math_verify import parse

    return parse(f"${_bare(gold)}$")


def _stable_hash(text: str) -> int:
    return int(hashlib.sha1(text.encode()).hexdigest(), 16)


#: NuminaMath-CoT disjoint prompt pools by hash bucket (of 100). The paper does not say how its
#: 20k/40k subsets and the Heldout-1K set were drawn (paper §4.1 gives the sizes only).  # [not in paper]
NUMINA_BUCKETS = {"sft": range(0, 40), "label": range(40, 80), "rsft": range(80, 95), "eval": range(95, 100)}
#: Bumped whenever the filter changes, so cached pools made by an older filter are not reused.
POOL_VERSION = 3
#: Hub ids of the real datasets; each loader also reads a local file in the hub's schema.
HUB = {
    "numina": ("AI-MO/NuminaMath-CoT", None, "train"),
    "math500": ("HuggingFaceH4/MATH-500", None, "test"),
    "gsm8k": ("openai/gsm8k", "main", "test"),
}
#: The hub commits the evaluation sets are read at (a ``revision`` argument overrides; ``make data``
#: fetches the same). NuminaMath-CoT has none pinned: ``main``, named in its pools' cache key.
HUB_REVISIONS = {
    "math500": "6e4ed1a2a79af7d8630a6b768ec859cb5af4d3be",
    "gsm8k": "740312add88f781978c0658806c59bc2815b9866",
}


def read_records(path: str | Path) -> list[dict]:
    """Rows of a local copy of a hub dataset: JSONL, a JSON array, or Parquet."""
    path = Path(path)
    if not path.exists():
        raise FileNotFoundError(f"dataset file {path} does not exist")
    if path.suffix == ".parquet":
        import pandas as pd

        return pd.read_parquet(path).to_dict("records")
    text = path.read_text()
    if text.lstrip().startswith("["):
        return json.loads(text)
    return [rec for _, rec in io.iter_jsonl(path)]  # lines end in "\n" only (issue 49), errors name the line


def _hub_rows(task: str, revision: str | None = None) -> list[dict]:  # pragma: no cover - needs the hub
    from datasets import load_dataset

    name, subset, split = HUB[task]
    return list(load_dataset(name, subset, split=split, revision=revision or HUB_REVISIONS.get(task)))


def _source_key(task: str, path: str | None, revision: str | None) -> str:
    """What identifies the rows a pool is filtered from: the file's sha256, or hub id + revision."""
    return f"file:{file_sha256(path)}" if path else f"hub:{HUB[task][0]}@{revision or 'main'}"


def numina_pool(
    split: str, path: str | None = None, revision: str | None = None, cache_dir: str | Path | None = None
) -> list[dict]:
    """Every NuminaMath-CoT prompt of one pool after the paper's filter (§4.1): deduplicated, in
    the pool's hash buckets, with a reference answer (last balanced box) Math-Verify can parse.

    Rows come from ``path`` (a local file in the hub's schema: ``source``, ``problem``,
    ``solution``, ``messages``) or the hub. The filtered pool is cached as JSONL under
    ``cache_dir`` (default ``runs/cache/numina``), keyed by the source and :data:`POOL_VERSION`:
    filtering all ~860k rows with Math-Verify takes 15-20 min of CPU, once."""
    from math_verify import parse

    if split not in NUMINA_BUCKETS:
        raise ValueError(f"unknown NuminaMath pool {split!r}; valid: {', '.join(NUMINA_BUCKETS)}")
    cache = Path(cache_dir or paths.runs_root() / "cache" / "numina")
    key = io.digest(_source_key("numina", path, revision), split, POOL_VERSION)
    hit = cache / f"{split}-{key}.jsonl"
    if hit.exists():
        return io.read_jsonl(hit)
    rows = read_records(path) if path else _hub_rows("numina", revision)
    missing = {"problem", "solution"} - set(rows[0]) if rows else set()
    if missing:
        raise ValueError(
            f"{path or HUB['numina'][0]}: rows lack {sorted(missing)} (NuminaMath-CoT "
            "schema: source, problem, solution, messages)"
        )
    buckets = NUMINA_BUCKETS[split]
    seen, pool = set(), []
    for i, r in enumerate(rows):
        q = r["problem"].strip()
        if q in seen or _stable_hash(q) % 100 not in buckets:
            continue
        seen.add(q)
        box = last_boxed(r["solution"])
        if box is None or not parse(f"${_bare(box)}$"):
            continue
        pool.append(
            {"id": f"numina-{i}", "problem": q, "answer": box, "source": r.get("source"), "solution": r["solution"]}
        )
    io.write_jsonl(hit, pool)
    return pool


def write_numina_standin(gsm8k_path: str | Path, out: str | Path) -> Path:
    """A local file in NuminaMath-CoT's schema (``source``, ``problem``, ``solution``, ``messages``)
    made from GSM8K records (``question``, ``answer`` ending in ``#### n``; MIT, OpenAI), for runs
    that cannot reach the hub: the ``numina`` loader reads it through ``path`` with the hub path's
    filter and pools. Each solution keeps GSM8K's lines as paragraphs and ends with the answer in
    ``\\boxed{}``, as NuminaMath's do (GSM8K's ``<<a*b=c>>`` calculator notes removed). It is a stand-in for the loader, not NuminaMath."""
    rows = []
    for r in read_records(gsm8k_path):
        work, _, ans = r["answer"].rpartition("####")
        # GSM8K's calculator annotations (<<16-3-4=9>>) are not solution text: dropped
        steps = [re.sub(r"<<[^>]*>>", "", x).strip() for x in work.strip().splitlines() if x.strip()]
        solution = "\n\n".join(steps + [f"The answer is $\\boxed{{{ans.strip().replace(',', '')}}}$."])
        rows.append(
            {
                "source": "gsm8k",
                "problem": r["question"],
                "solution": solution,
                "messages": [{"role": "user", "content": r["question"]}, {"role": "assistant", "content": solution}],
            }
        )
    out = Path(out)
    write_jsonl(out, rows)
    return out


def _numina(
    split: str,
    n: int,
    seed: int,
    path: str | None = None,
    revision: str | None = None,
    cache_dir: str | Path | None = None,
) -> list[dict]:
    """``n`` prompts drawn (seeded) from one filtered pool (:func:`numina_pool`)."""
    pool = list(numina_pool(split, path, revision, cache_dir))
    random.Random(seed).shuffle(pool)
    return pool[:n]


def _eval_set(task: str, n: int, seed: int, path: str | None = None, revision: str | None = None) -> list[dict]:
    """MATH-500 or GSM8K test problems (hub, or a local copy in the hub's schema via ``path``);
    ``n`` <= 0 or at least the set size: all of them, in order; else a seeded sample."""
    rows = read_records(path) if path else _hub_rows(task, revision)
    out = []
    for i, r in enumerate(rows):
        if task == "gsm8k":
            out.append(
                {
                    "id": f"gsm8k-{i}",
                    "problem": r["question"],
                    "answer": r["answer"].split("####")[-1].strip().replace(",", ""),
                }
            )
        else:
            out.append({"id": r.get("unique_id", f"math500-{i}"), "problem": r["problem"], "answer": r["answer"]})
    return out if n <= 0 or n >= len(out) else random.Random(seed).sample(out, n)


def main(argv: list[str] | None = None) -> None:
    """``python -m stepwiser_lib.method.tasks numina-standin --gsm8k FILE --out FILE``."""
    ap = argparse.ArgumentParser(description="problem-source utilities")
    sub = ap.add_subparsers(dest="cmd", required=True)
    n = sub.add_parser("numina-standin", help="a NuminaMath-schema file made from GSM8K records")
    n.add_argument("--gsm8k", required=True)
    n.add_argument("--out", required=True)
    a = ap.parse_args(argv)
    out = write_numina_standin(a.gsm8k, a.out)
    print(f"wrote {out} ({len(read_records(out))} rows in NuminaMath-CoT's schema, from {a.gsm8k})")


if __name__ == "__main__":
    main()
