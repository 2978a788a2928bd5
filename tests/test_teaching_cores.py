"""The runnable cores of the notebooks (issue 51): the cell tagged ``core`` in a notebook redoes its
stage's central rule by hand, over the same objects the library uses, and asserts that it gets the
library's result. These tests take that cell's source from the notebook itself (so the notebook and
the test cannot drift), run it on a small input the library has just processed, and check that its
assertion is live (a result the library would not give fails it)."""

import hashlib
import json
import random
from types import SimpleNamespace

import pytest

from stepwiser_lib.core import chunks, io, paths, prompts
from stepwiser_lib.core.vocab import RULES
from stepwiser_lib.method import balancing, segmentation, tasks
from stepwiser_lib.toy import toyworld

#: The tag of a notebook's runnable core (one cell per notebook that has one).
CORE = "core"


def core_source(stem: str) -> str:
    cells = json.loads((paths.NOTEBOOKS_DIR / f"{stem}.ipynb").read_text())["cells"]
    found = [c for c in cells if CORE in c.get("metadata", {}).get("tags", [])]
    assert len(found) == 1 and found[0]["cell_type"] == "code", f"{stem}: {len(found)} code cells tagged {CORE!r}"
    return "".join(found[0]["source"])


# ----------------------------------------------------------------------------- 01: the segmentation target


def _sft_records():
    items = tasks.load_problems("toy", "sft", 16, seed=3)
    rng = random.Random(3)
    samples = [
        {
            "problem_id": it["id"],
            "problem": it["problem"],
            "response": toyworld.raw_solution(toyworld.parse_problem(it["problem"]), rng, p_intro=0.6, p_merge=0.3),
            "correct": True,
        }
        for it in items
    ]
    samples[0]["response"] += "\n\nThat is all."  # an announcement at the end joins the last chunk
    records, stats = segmentation.build_sft_records(
        samples, segmentation.text_teacher("rule", "toy"), 4, prompts.TOY_CHUNK_POLICY
    )
    assert stats.accepted == len(samples)
    return items, records


def _run01(records, items, teacher="rule"):
    ns = {
        "records": records,
        "train_items": items,
        "chunk_prompt": prompts.TOY_CHUNK_POLICY,
        "cfg": SimpleNamespace(TEACHER=teacher),
        "chunks": chunks,
        "toyworld": toyworld,
    }
    exec(compile(core_source("01_self_segmentation"), "01 core", "exec"), ns)
    return ns


def test_notebook_01_core_redoes_the_librarys_sft_record_by_hand(capsys):
    items, records = _sft_records()
    changed = [r for r in records if chunks.parse_chunks(r["completion"]) != chunks.split_paragraphs(r["raw"])]
    assert changed and len(changed) < len(records)  # both kinds of record are in the input
    for rec in records:
        ns = _run01([rec], items)
        assert ns["record"] == rec and ns["ex"] is rec
    ns = _run01(records, items)  # the worked example: the first record whose chunks are not its paragraphs
    assert ns["ex"] is changed[0]
    out = capsys.readouterr().out
    assert "redone by hand: the library's SFT record" in out and "chunk 0 = paragraph" in out


def test_notebook_01_core_fails_on_a_record_the_library_would_not_write():
    items, records = _sft_records()
    rec = next(r for r in records if "</chunk>\n\n<chunk>" in r["completion"])
    merged = dict(rec, completion=rec["completion"].replace("</chunk>\n\n<chunk>", "\n\n", 1))  # two chunks as one
    with pytest.raises(AssertionError, match="the core and the library disagree"):
        _run01([merged], items)
    assert _run01([merged], items, teacher="paragraphs")["record"] == rec  # another teacher: no claim of equality


# ----------------------------------------------------------------------------- 03: the balancing draw


def _labelled(n_problems=40, seed=0):
    rng = random.Random(seed)
    out = []
    for p in range(n_problems):
        for t in range(2):
            history = []
            for i in range(3):
                chunk = f"x{i} = {rng.randint(1, 99)}" + " pad" * rng.randint(0, 30)
                q = rng.random()
                out.append(
                    {
                        "problem_id": f"p{p}",
                        "problem": f"problem {p}",
                        "traj_id": f"p{p}/s{t}",
                        "chunk_index": i,
                        "history": list(history),
                        "chunk": chunk,
                        "is_final": i == 2,
                        "q": q,
                        "q_prev": 0.5,
                        **{f"label_{r}": rng.random() < (0.7 if r == "abs_q" else 0.4) for r in RULES},
                    }
                )
                history.append(chunk)
    return out


def _cfg03(**kw):
    base = dict(
        RULES=list(RULES), MIN_CHARS=0, MAX_CHARS=4000, DROP_FINAL=False, SEED=0, DEV_FRACTION=0.15, TEST_FRACTION=0.45
    )
    return SimpleNamespace(**{**base, **kw})


def _run03(records, cfg, art):
    ns = {
        "records": records,
        "cfg": cfg,
        "ART": art,
        "io": io,
        "balancing": balancing,
        "hashlib": hashlib,
        "random": random,
    }
    exec(compile(core_source("03_balancing"), "03 core", "exec"), ns)
    return ns


@pytest.mark.parametrize(
    "cfg",
    [_cfg03(), _cfg03(SEED=7, DROP_FINAL=True, MAX_CHARS=80), _cfg03(RULES=["abs_q"], DEV_FRACTION=0.0)],
    ids=["tiny-like", "filtered", "majority-positive-no-dev"],
)
def test_notebook_03_core_draws_the_librarys_balanced_splits_by_hand(cfg, tmp_path, capsys):
    records = _labelled(seed=cfg.SEED)
    balancing.build_splits(
        records,
        cfg.RULES,
        tmp_path,
        min_chars=cfg.MIN_CHARS,
        max_chars=cfg.MAX_CHARS,
        drop_final=cfg.DROP_FINAL,
        dev_fraction=cfg.DEV_FRACTION,
        test_fraction=cfg.TEST_FRACTION,
        seed=cfg.SEED,
    )
    _run03(records, cfg, tmp_path)  # its assertions compare with the files the library wrote
    out = capsys.readouterr().out.splitlines()
    assert len(out) == 3 and all(f"the same as {s}_balanced.jsonl" in ln for s, ln in zip(balancing.SPLITS, out))


def test_notebook_03_core_fails_on_a_draw_the_library_did_not_make(tmp_path):
    cfg, records = _cfg03(), _labelled()
    balancing.build_splits(
        records, cfg.RULES, tmp_path, dev_fraction=cfg.DEV_FRACTION, test_fraction=cfg.TEST_FRACTION, seed=0
    )
    rule = cfg.RULES[-1]
    path = tmp_path / rule / "train_balanced.jsonl"
    io.write_jsonl(path, io.read_jsonl(path)[1:])  # one example fewer than the draw
    with pytest.raises(AssertionError, match="train: the core and the library disagree"):
        _run03(records, cfg, tmp_path)
