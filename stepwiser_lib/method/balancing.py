"""Stage 3: step-level judge prompts and class balancing (paper §3.3, §4.1, App. A.4).

Labelled chunks become judge examples ``(problem, history, chunk, label)`` for one label rule.
The paper down-samples the majority class to a 50/50 split ("essential for stable RL") and
drops prompts that are overly short or long (thresholds not given: parameters here).
Train, dev and test are split **by problem**, never by chunk, so no problem leaks across: dev is
where every choice is made (recipe, steps, thresholds), test is where every reported number comes
from, each artefact evaluated on it once. [not in paper: the paper reports ProcessBench only]
"""

from __future__ import annotations

import hashlib
import random
import shutil
import warnings
from collections import Counter
from pathlib import Path

from ..core import inputs, io
from ..core.vocab import RULES
from ..evals.paper_results import paper_rate
from ..evals.stats import wilson


def judge_examples(
    records: list[dict], rule: str, min_chars: int = 0, max_chars: int = 10**9, drop_final: bool = False
) -> list[dict]:
    """One judge example per labelled chunk, with ``label`` from ``rule``.

    ``min_chars``/``max_chars`` bound the length of history + chunk (the paper's "heuristic
    filtering" of overly short or long prompts; thresholds are not given). ``drop_final``
    removes final-answer chunks. [not in paper]
    """
    if rule not in RULES:
        raise ValueError(f"unknown rule {rule!r}; valid: {', '.join(RULES)}")
    out = []
    for r in records:
        n = sum(map(len, r["history"])) + len(r["chunk"])
        if not min_chars <= n <= max_chars or (drop_final and r["is_final"]):
            continue
        out.append(
            {
                "problem_id": r["problem_id"],
                "problem": r["problem"],
                "traj_id": r["traj_id"],
                "chunk_index": r["chunk_index"],
                "history": list(r["history"]),
                "chunk": r["chunk"],
                "label": bool(r[f"label_{rule}"]),
                "rule": rule,
                "q": r["q"],
                "q_prev": r["q_prev"],
            }
        )
    return out


def balance(examples: list[dict], label_key: str = "label", seed: int = 0) -> list[dict]:
    """Down-sample the majority class so positives and negatives are equal; the minority class is
    kept whole; deterministic for a seed; the original order is kept. Labels must be True/False
    (a string "False" would count as positive); when one class is empty nothing can be kept and
    a warning says so."""
    for n, e in enumerate(examples):
        if not isinstance(e.get(label_key), bool):
            raise ValueError(
                f"balance: example {n} has {label_key} = {e.get(label_key, '<missing>')!r}; want True or False"
            )
    pos = [i for i, e in enumerate(examples) if e[label_key]]
    neg = [i for i, e in enumerate(examples) if not e[label_key]]
    if examples and not (pos and neg):
        warnings.warn(
            f"balance: all {len(examples)} examples are {'positive' if pos else 'negative'}; "
            "a balanced set of them is empty",
            stacklevel=2,
        )
    small, big = (pos, neg) if len(pos) <= len(neg) else (neg, pos)
    keep = set(small) | set(random.Random(seed).sample(big, len(small)))
    return [e for i, e in enumerate(examples) if i in keep]


SPLITS = ("train", "dev", "test")


def problem_quantile(problem_id: str, seed: int = 0) -> float:
    """A problem's place in [0, 1) under a seeded hash: what :func:`split_by_problem` ranks by."""
    return int(hashlib.sha256(f"{seed}:{problem_id}".encode()).hexdigest(), 16) % 10_000 / 10_000


def split_by_problem(
    examples: list[dict], dev_fraction: float, test_fraction: float, seed: int = 0
) -> dict[str, list[dict]]:
    """Train / dev / test by ``problem_id``, each problem by its seeded hash quantile
    (:func:`problem_quantile`) against fixed ranges: test takes quantiles at or above
    ``1 - test_fraction``, dev those in ``[DEV_FROM, DEV_FROM + dev_fraction)``, train the rest.
    Fixed ranges, not ranks, so a problem's side does not move with the number of problems: two
    profiles whose prompt sets nest (tiny's inside toy-full's) keep one's dev problems out of the
    other's test as long as their ranges do not meet (issue 35: 5 toy-full test problems were in
    tiny's dev split under the rank rule; a test checks every shipped profile). With so few
    problems that a non-empty range catches none, the nearest problem joins it. Every chunk of a
    problem lands on one side; the original order is kept within each split. Quantiles below
    :data:`DEV_FROM` stay in train: an earlier two-way split held them out as its validation set,
    which the recipe searches in ``LAB_LOG.md`` read."""
    for name, f in (("dev_fraction", dev_fraction), ("test_fraction", test_fraction)):
        if isinstance(f, bool) or not isinstance(f, (int, float)) or not 0 <= f < 1:
            raise ValueError(f"split_by_problem: {name} = {f!r} must be in [0, 1)")
    if dev_fraction + test_fraction >= 1 - DEV_FROM:
        raise ValueError(
            f"split_by_problem: dev_fraction + test_fraction = {dev_fraction + test_fraction:g} "
            f"leaves no problem to train on (quantiles below {DEV_FROM} always train); want a sum "
            f"below {1 - DEV_FROM:g}"
        )
    q = {e["problem_id"]: problem_quantile(e["problem_id"], seed) for e in examples}
    pids = sorted(q, key=lambda pid: (-q[pid], pid))
    test = {p for p in pids if test_fraction and q[p] >= 1 - test_fraction}
    dev = {p for p in pids if dev_fraction and DEV_FROM <= q[p] < DEV_FROM + dev_fraction}
    if test_fraction and not test and pids:  # too few problems for the range: the highest one
        test = {pids[0]}
    if dev_fraction and not dev:  # the one nearest above DEV_FROM, else the next below test
        rest = [p for p in pids if p not in test]
        above = [p for p in rest if q[p] >= DEV_FROM]
        dev = {min(above, key=lambda p: q[p])} if above else set(rest[:1])
    if pids and len(test) + len(dev) >= len(pids):
        raise ValueError(
            f"split_by_problem: {len(pids)} problem(s) cannot fill dev ({len(dev)}), test ({len(test)}) "
            "and train; label more prompts (notebook 02) or lower the fractions"
        )
    side = {pid: "test" if pid in test else "dev" if pid in dev else "train" for pid in pids}
    return {s: [e for e in examples if side[e["problem_id"]] == s] for s in SPLITS}


def class_stats(examples: list[dict], label_key: str = "label") -> dict:
    c = Counter(bool(e[label_key]) for e in examples)
    n = len(examples)
    return {
        "n": n,
        "positive": c[True],
        "negative": c[False],
        "positive_rate": round(100 * c[True] / n, 2) if n else None,
    }


#: The hash quantiles an earlier two-way split held out (the recipe searches of LAB_LOG.md read
#: them): none of those problems may reach dev or test.
EARLIER_VALIDATION_QUANTILE = 0.2
#: Where the dev range of :func:`split_by_problem` starts (just above the held-out quantiles).
DEV_FROM = EARLIER_VALIDATION_QUANTILE


def build_splits(
    records: list[dict],
    rules: list[str],
    out_dir,
    *,
    min_chars: int = 0,
    max_chars: int = 10**9,
    drop_final: bool = False,
    dev_fraction: float,
    test_fraction: float,
    seed: int = 0,
    source=None,
) -> tuple[dict, dict | None]:
    """Notebook 03's stage: for each rule, judge examples from the labelled chunks, split by
    problem, balanced 50/50 per split, written to ``out_dir/<rule>/<split>_{balanced,unbalanced}.jsonl``
    (the files notebook 04 reads). Returns per-rule statistics and one balanced training example
    to show. Fails when the length window keeps no example, or a balanced split comes out empty
    (one class missing), before writing that rule's files.

    ``source``: the ``labels.jsonl`` the records came from. Each rule folder then records its
    sha256 (:func:`stepwiser_lib.core.inputs.record_sources`), which notebook 04 compares with the
    file there when it starts; and the folders of rules not in ``rules`` are removed, so no split
    of an older run is read as this one's (notebook 04 would train on labels a later run replaced)."""
    out_dir = Path(out_dir)
    stats, example = {}, None
    for rule in rules:
        ex = judge_examples(records, rule, min_chars, max_chars, drop_final)
        if not ex:
            raise RuntimeError(
                f"{rule}: no judge example is left of {len(records)} labelled chunks after the length "
                f"window MIN_CHARS = {min_chars}, MAX_CHARS = {max_chars}"
                + (" and DROP_FINAL" if drop_final else "")
                + "; widen it"
            )
        parts = split_by_problem(ex, dev_fraction, test_fraction, seed=seed)
        stats[rule] = {"all": class_stats(ex), "filtered_out": len(records) - len(ex)}
        bals = {split: balance(xs, seed=seed) for split, xs in parts.items()}
        wanted = {"train": True, "dev": dev_fraction > 0, "test": test_fraction > 0}
        empty = [split for split in parts if wanted[split] and not bals[split]]
        if empty:
            raise RuntimeError(
                f"{rule}: the balanced {', '.join(empty)} set(s) came out empty (no problem, or one class "
                "missing); label more prompts (N_PROMPTS in notebook 02) or change DEV_FRACTION / TEST_FRACTION"
            )
        if source is not None:  # unvouched while its files are rewritten: a kill here leaves the folder stale
            (out_dir / rule / inputs.SOURCES).unlink(missing_ok=True)
        for split, xs in parts.items():
            bal = bals[split]
            io.write_jsonl(out_dir / rule / f"{split}_balanced.jsonl", bal)
            io.write_jsonl(out_dir / rule / f"{split}_unbalanced.jsonl", xs)
            stats[rule].update(
                {
                    f"{split}_unbalanced": class_stats(xs),
                    f"{split}_balanced": class_stats(bal),
                    f"{split}_problems": len({e["problem_id"] for e in xs}),
                }
            )
        stats[rule]["earlier_validation_problems_in"] = {
            s: sum(problem_quantile(p, seed) < EARLIER_VALIDATION_QUANTILE for p in {e["problem_id"] for e in parts[s]})
            for s in ("dev", "test")
        }
        if any(stats[rule]["earlier_validation_problems_in"].values()):
            warnings.warn(
                f"{rule}: problems the earlier recipe searches read are in "
                f"{stats[rule]['earlier_validation_problems_in']}",
                stacklevel=2,
            )
        if source is not None:  # after the rule's files, which it vouches for
            inputs.record_sources(
                out_dir / rule,
                {"labels.jsonl": source},
                rule=rule,
                min_chars=min_chars,
                max_chars=max_chars,
                drop_final=drop_final,
                dev_fraction=dev_fraction,
                test_fraction=test_fraction,
                seed=seed,
            )
        example = example or bals["train"][0]
    if source is not None:  # once every rule is built: a failed run removes nothing
        for old in sorted(set(RULES) - set(rules)):
            if (out_dir / old).is_dir():
                shutil.rmtree(out_dir / old)
                print(f"removed {out_dir.name}/{old}/: a rule this run does not build (RULES)")
    return stats, example


def table_rows(stats: dict) -> dict[str, dict]:
    """Notebook 03's table: per rule, the Positive share before balancing and the examples and
    problems of every split."""
    return {
        rule: {
            "positive % (all)": s["all"]["positive_rate"],
            "train examples": s["train_unbalanced"]["n"],
            **{f"{sp} balanced": s[f"{sp}_balanced"]["n"] for sp in SPLITS},
            "train/dev/test problems": "/".join(str(s[f"{sp}_problems"]) for sp in SPLITS),
        }
        for rule, s in stats.items()
    }


def resolution_lines(stats: dict, paper: dict, near: float = 0.7) -> list[str]:
    """Notebook 03's closing lines: per rule, its Positive share before balancing beside the
    paper's (``paper``: :data:`~stepwiser_lib.evals.paper_results.POSITIVE_RATES_1P5B`-style keys),
    and how small a difference its balanced test split can resolve: half the Wilson 95% interval of
    one accuracy near ``near`` on its chunks (a rough guide: notebook 04's intervals resample
    problems and score balanced accuracy, so they can come out wider or narrower)."""
    out = []
    for rule, s in stats.items():
        n = s["test_balanced"]["n"]
        lo, hi = wilson(round(near * n), n) if n else (0.0, 1.0)
        ref = paper_rate(paper, rule)
        out.append(
            f"- **{rule}**: {s['all']['positive_rate']}% positive before balancing (paper, 1.5B: "
            f"{'not reported' if ref is None else ref}); "
            f"on its {n} balanced test chunks one accuracy is known to about ±{100 * (hi - lo) / 2:.1f} points at best."
        )
    return out


def results_markdown(metrics: dict) -> str:
    """``results/<profile>/balancing.md``, from notebook 03's metrics: per rule, the Positive share
    before balancing and the balanced examples and problems of each split."""
    cols = [
        "rule",
        "positive % before",
        "train (balanced)",
        "dev (balanced)",
        "test (balanced)",
        "train / dev / test problems",
    ]
    rows = [
        dict(
            zip(
                cols,
                [
                    r,
                    v["all"]["positive_rate"],
                    v["train_balanced"]["n"],
                    v["dev_balanced"]["n"],
                    v["test_balanced"]["n"],
                    f"{v['train_problems']} / {v['dev_problems']} / {v['test_problems']}",
                ],
            )
        )
        for r, v in metrics["stats"].items()
    ]
    return (
        "Judge data split by problem (dev: where choices are made; test: what is reported).\n\n"
        + io.markdown_table(rows, cols)
        + "\n"
    )
