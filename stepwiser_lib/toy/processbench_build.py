"""Build toy-ProcessBench (``make toy-processbench``): the ProcessBench schema
(:data:`stepwiser_lib.core.schemas.PROCESSBENCH_FIELDS`) on toy problems of the disjoint
``processbench`` split, with exact first-error labels. [not in paper] Notebook 05 reads it with
:func:`stepwiser_lib.method.processbench.load_toy`.

    python -m stepwiser_lib.toy.processbench_build --out data/toy_processbench --per-split 200 --seed 0
"""

from __future__ import annotations

import argparse
import hashlib
import json
import time
import warnings
from pathlib import Path

from ..core import io, prompts
from ..core.io import write_jsonl, write_result
from ..core.paths import TOY_BASE_DIR
from ..core.schemas import TOY_DEV_SPLIT, TOY_DIR_DEFAULT, TOY_SPLITS, validate_record
from . import toyworld

MAX_ROUNDS = 4  # sampling rounds of build_toy per split before it settles for fewer solutions


def _take_both(cor: list, err: list, need: int) -> tuple[list[dict], list[dict]]:
    """Up to ``need`` correct and ``need`` erroneous solutions (``(order key, record)`` pairs, taken
    in key order), one per problem across both kinds; the correct ones, rarer on long chains,
    pick their problems first."""
    seen: set[str] = set()

    def take(xs):
        keep = []
        for _, r in sorted(xs, key=lambda x: x[0]):
            if r["problem"] not in seen and len(keep) < need:
                seen.add(r["problem"])
                keep.append(r)
        return keep

    c = take(cor)
    return c, take(err)


def build_toy(
    out_dir: str = TOY_DIR_DEFAULT,
    model_dir: str | None = None,
    per_split: int = 200,
    temperatures: tuple[float, ...] = (0.7, 1.0, 1.3),
    seed: int = 0,
    batch_size: int = 128,
) -> dict:
    """Build toy-ProcessBench: the ProcessBench schema on toy problems from the disjoint
    ``processbench`` problem split, solutions sampled from the toy base model at several
    temperatures (the "generators"), steps = paragraphs, label = the exact first wrong step
    (:func:`toyworld.first_error`). Each split holds ``per_split`` solutions, half erroneous and
    half correct, interleaved so that any prefix stays balanced. Writes ``<split>.jsonl`` and
    ``manifest.json``."""
    from ..engines.models import HFGenerator, load_model, set_threads  # lazy: torch

    set_threads()
    t0 = time.time()
    model_dir = model_dir or str(TOY_BASE_DIR)
    model, tok = load_model(model_dir)
    gen = HFGenerator(model, tok, batch_size=batch_size)
    out = Path(out_dir)
    manifest = {
        "what": "toy-ProcessBench: ProcessBench schema, toy problems, exact first-error labels",
        "command": "make toy-processbench",
        "seed": seed,
        "model": model_dir,
        "model_sha256": json.loads((Path(model_dir) / "manifest.json").read_text())["files"].get("model.safetensors")
        if (Path(model_dir) / "manifest.json").exists()
        else None,
        "temperatures": list(temperatures),
        "splits": {},
    }
    for si, (split, (steps, distractors)) in enumerate(TOY_SPLITS.items()):
        e, c, rnd = _sample(gen, split, steps, distractors, per_split // 2, si, seed, temperatures)
        recs = _interleave(e, c, split)
        write_jsonl(out / f"{split}.jsonl", recs)
        manifest["splits"][split] = {
            "chain_steps": list(steps),
            "distractors": list(distractors),
            "rounds": rnd + 1,
            **_counts(recs),
            "sha256": hashlib.sha256((out / f"{split}.jsonl").read_bytes()).hexdigest(),
        }
        print(f"{split}: {manifest['splits'][split]}", flush=True)
    manifest["seconds"] = round(time.time() - t0, 1)
    write_result(out / "manifest.json", manifest)
    return manifest


def _sample(gen, split: str, steps, distractors, need: int, si: int, seed: int, temperatures, exclude=frozenset()):
    """Up to ``need`` erroneous and ``need`` correct complete solutions of toy problems of the
    ``processbench`` problem split with ``steps`` chain steps (sampling rounds until both suffice);
    problems whose text is in ``exclude`` are skipped. Returns (erroneous, correct, last round)."""
    err, cor = [], []
    # Rounds of 1.5 problems per wanted solution and one sample per temperature, until both kinds
    # suffice: a strong base errs rarely on short chains, so a round may not find enough errors.
    # A later round's problems sort after the earlier rounds', so it only tops the split up.
    for rnd in range(MAX_ROUNDS):
        probs = [
            p
            for p in toyworld.generate_problems(
                "processbench", 3 * need, seed=seed + si + 100 * rnd, steps=steps, distractors=distractors
            )
            if p.text not in exclude
        ]
        ps = [prompts.TOY_BASE_POLICY.format(problem=p.text) for p in probs]
        for ti, t in enumerate(temperatures):
            outs = gen.generate(
                ps, n=1, temperature=t, max_new_tokens=200, seed=seed + 1000 * si + 10 * ti + 100_000 * rnd
            )
            for pi, (p, o) in enumerate(zip(probs, outs)):
                c = o[0]
                steps_ = toyworld.split_paragraphs(c.text)
                if not c.finished or not steps_ or toyworld.last_boxed(c.text) is None:
                    continue  # ProcessBench solutions are complete
                lab = toyworld.first_error(p, steps_)
                rec = {
                    "id": "",
                    "generator": f"toy_base@T{t}",
                    "problem": p.text,
                    "steps": steps_,
                    "final_answer_correct": toyworld.is_correct(p, c.text),
                    "label": lab,
                }
                # problem i prefers generator i mod 3, so the generators take turns
                (cor if lab == -1 else err).append(((rnd, pi, (ti - pi) % len(temperatures)), rec))
        c, e = _take_both(cor, err, need)
        if len(c) >= need and len(e) >= need:
            break
    if len(e) < need or len(c) < need:
        warnings.warn(
            f"toy-ProcessBench {split}: only {len(e)} erroneous / {len(c)} correct solutions (wanted {need} each)",
            stacklevel=2,
        )
    return e, c, rnd


def _interleave(e: list[dict], c: list[dict], split: str) -> list[dict]:
    """Erroneous and correct solutions taking turns (any prefix stays balanced), numbered ``<split>-i``."""
    recs = [x for pair in zip(e, c) for x in pair] + e[len(c) :] + c[len(e) :]
    for i, r in enumerate(recs):
        r["id"] = f"{split}-{i}"
        validate_record(r, split, i + 1)
    return recs


def _counts(recs: list[dict]) -> dict:
    return {
        "n": len(recs),
        "error": sum(r["label"] != -1 for r in recs),
        "correct": sum(r["label"] == -1 for r in recs),
        "final_answer_correct": sum(r["final_answer_correct"] for r in recs),
        "mean_steps": round(sum(len(r["steps"]) for r in recs) / max(1, len(recs)), 2),
    }


def build_dev(
    out_dir: str = TOY_DIR_DEFAULT,
    model_dir: str | None = None,
    per_config: int = 50,
    temperatures: tuple[float, ...] = (0.7, 1.0, 1.3),
    seed: int = 0,
    batch_size: int = 128,
) -> dict:
    """Toy-ProcessBench's dev split (issue 35), ``toy_dev.jsonl``: ``per_config`` solutions (half
    erroneous) of each of the four test splits' chain lengths, from problems none of the test
    splits holds, sampled as :func:`build_toy` does with other seeds. What notebook 05 chooses every
    judge's threshold on; never reported. Adds its entry to ``manifest.json``."""
    from ..engines.models import HFGenerator, load_model, set_threads  # lazy: torch

    set_threads()
    t0 = time.time()
    out = Path(out_dir)
    test_problems = {r["problem"] for s in TOY_SPLITS for r in _read(out / f"{s}.jsonl")}
    model, tok = load_model(model_dir or str(TOY_BASE_DIR))
    gen = HFGenerator(model, tok, batch_size=batch_size)
    recs = []
    for si, (steps, distractors) in enumerate(TOY_SPLITS.values()):
        e, c, _ = _sample(
            gen, TOY_DEV_SPLIT, steps, distractors, per_config // 2, 10 + si, seed, temperatures, exclude=test_problems
        )
        recs += [x for pair in zip(e, c) for x in pair] + e[len(c) :] + c[len(e) :]
    seen, kept = set(), []
    for r in recs:  # one solution per problem across the chain lengths
        if r["problem"] not in seen:
            seen.add(r["problem"])
            kept.append(r)
    kept = _interleave([r for r in kept if r["label"] != -1], [r for r in kept if r["label"] == -1], TOY_DEV_SPLIT)
    write_jsonl(out / f"{TOY_DEV_SPLIT}.jsonl", kept)
    man_path = out / "manifest.json"
    manifest = json.loads(man_path.read_text()) if man_path.exists() else {}
    manifest["dev"] = {
        "split": TOY_DEV_SPLIT,
        "per_config": per_config,
        "seed": seed,
        **_counts(kept),
        "disjoint_from": list(TOY_SPLITS),
        "seconds": round(time.time() - t0, 1),
        "sha256": hashlib.sha256((out / f"{TOY_DEV_SPLIT}.jsonl").read_bytes()).hexdigest(),
    }
    write_result(man_path, manifest)
    return manifest["dev"]


def _read(path: Path) -> list[dict]:
    return [rec for _, rec in io.iter_jsonl(path)]


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description="build toy-ProcessBench from the toy base model")
    ap.add_argument("--out", default=TOY_DIR_DEFAULT)
    ap.add_argument("--per-split", type=int, default=200)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument(
        "--dev", action="store_true", help="build only the dev split (toy_dev.jsonl) beside the test splits"
    )
    a = ap.parse_args(argv)
    if a.dev:
        print(json.dumps(build_dev(a.out, seed=a.seed), indent=2))
    else:
        print(json.dumps(build_toy(a.out, per_split=a.per_split, seed=a.seed), indent=2))


if __name__ == "__main__":
    main()
