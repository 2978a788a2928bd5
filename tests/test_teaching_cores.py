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
from stepwiser_lib.method import balancing, judge_train, labelling, segmentation, tasks
from stepwiser_lib.tools import teaching
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


# ----------------------------------------------------------------------------- 02: Eq. 2 and the three rules


def _labelled02(alpha=0.4, gamma=0.8, mu_n=4, **kw):
    """Labels the library has just written for a shard of prompts (a scripted policy: tests/fakes.py)."""
    from fakes import FakeToyPolicy, fake_items

    cfg = labelling.LabelConfig(n_prefilter=8, traj_per_prompt=3, alpha=alpha, gamma=gamma, mu_n=mu_n, **kw)
    records, _ = labelling.label_shard(FakeToyPolicy(), fake_items(12), "Solve.\nProblem: {problem}", cfg, 0)
    return records, SimpleNamespace(ALPHA=alpha, GAMMA=gamma, MU_N=mu_n)


def _run02(records, tid, cfg):
    ns = {"records": records, "tid": tid, "cfg": cfg}
    exec(compile(core_source("02_rollout_labelling"), "02 core", "exec"), ns)
    return ns


@pytest.mark.parametrize(
    "kw",
    [{}, {"adaptive": True, "adaptive_round": 4, "adaptive_z": 1.0}, {"alpha": 1.0, "gamma": 0.6, "mu_n": 2}],
    ids=["full-M", "adaptive", "other-thresholds"],
)
def test_notebook_02_core_redoes_the_librarys_labels_by_hand(kw, capsys):
    records, cfg = _labelled02(**kw)
    tids = sorted({r["traj_id"] for r in records})
    disagree = any(r["label_abs_q"] != r["label_rel_ratio"] for r in records)
    assert len(tids) > 5 and disagree  # several trajectories, and the rules disagree somewhere
    for tid in tids:  # every trajectory: its Q from the rollouts' counts, the chain of Q_prev, the three labels
        ns = _run02(records, tid, cfg)
        assert ns["Q"] == [r["q"] for r in ns["traj"]] and len(ns["traj"]) == ns["traj"][0]["n_chunks"]
    out = capsys.readouterr().out
    assert out.count("Every Q and label above is the library's") == len(tids) and "rollouts right, Q = " in out
    # labels recomputed from the stored Q under other thresholds (labelling.relabel: a GAMMA change costs no rollout)
    other = labelling.relabel(records, labelling.LabelConfig(alpha=0.2, gamma=1.0, mu_n=3))
    for tid in tids:
        _run02(other, tid, SimpleNamespace(ALPHA=0.2, GAMMA=1.0, MU_N=3))


def test_notebook_02_core_fails_on_labels_the_library_would_not_give():
    records, cfg = _labelled02()
    tid = teaching.pick_trajectory(records)
    first = next(r for r in records if r["traj_id"] == tid and r["chunk_index"] == 0)
    flipped = [dict(r, label_rel_ratio=not r["label_rel_ratio"]) if r is first else r for r in records]
    with pytest.raises(AssertionError, match="chunk 0: the core and the library disagree"):
        _run02(flipped, tid, cfg)
    other_q0 = [dict(r, q0=1.0 - r["q0"]) if r["traj_id"] == tid else r for r in records]  # Q before chunk 0 is q0
    with pytest.raises(AssertionError, match="chunk 0: the core and the library disagree"):
        _run02(other_q0, tid, cfg)
    with pytest.raises(AssertionError, match="the core and the library disagree"):  # another threshold than the labels'
        _run02(records, tid, SimpleNamespace(ALPHA=cfg.ALPHA, GAMMA=0.0, MU_N=cfg.MU_N))


# ----------------------------------------------------------------------------- 04: one GRPO group, its loss, one step

#: Toy judge outputs for one chunk (right by the exact checker, MC label Positive): two verdicts, analyses of
#: different lengths, so that the advantages differ and the loss's token mean matters.
_CHUNK04 = {
    "problem": "a = 49. b = a + 17. c = b + 20. d = c - 8. Find d.",
    "history": [],
    "chunk": "b = a + 17 = 49 + 17 = 66",
}
_OUTPUTS04 = [
    "stated b = 66\nb = a + 17 = 49 + 17 = 66\ncheck b: b = 66; stated 66; 66 - 66 = 0\n\\boxed{Positive}",
    "stated b = 66\nb = a + 17 = 49 + 17 = 66\ncheck b: b = 66; stated 66; 66 - 66 = 0\n\\boxed{Negative}",
    "stated b = 66\nb = a + 17 = 49 + 17 = 65\ncheck b: b = 65; stated 66; 66 - 65 = 1\n\\boxed{Negative}",
    "stated b = 66\n\\boxed{Positive}",
]


def _group04(label=True):
    """One GRPO group as teaching.sample_groups returns it: each output's verdict and the reward TRL receives
    (judge.verdict_reward), and the library's advantages (teaching.grpo_advantages, TRL's formula)."""
    from stepwiser_lib.method.judge import parse_verdict, verdict_reward

    rewards = verdict_reward(_OUTPUTS04, label=[label] * len(_OUTPUTS04))
    outputs = [{"verdict": parse_verdict(t), "reward": r, "text": t} for t, r in zip(_OUTPUTS04, rewards)]
    return {**_CHUNK04, "label": label, "outputs": outputs, "advantages": teaching.grpo_advantages(rewards, 4)}


def _cfg04(**kw):
    base = dict(
        PROMPT_FAMILY="toy",
        TEMPERATURE=1.0,
        SEED=0,
        LORA_R=16,
        LORA_ALPHA=32,
        USE_LORA=True,
        LOSS_TOKENS="all",
        GRPO_LR=1e-5,  # a small step, so that it lowers the policy-gradient term of outputs the toy base never writes
        BETA=0.2,
        EPSILON_LOW=0.2,
        EPSILON_HIGH=0.28,
    )
    return SimpleNamespace(**{**base, **kw})


def _run04(g, cfg, base_dir):
    import copy

    import pandas as pd
    import torch
    from peft import get_peft_model

    from stepwiser_lib.engines.models import load_model, lora_config, render_prompt

    ns = {
        "g": g,
        "start_entry": {"base": base_dir, "adapter": None, "style": "cot"},
        "cfg": cfg,
        "prompts": prompts,
        "teaching": teaching,
        "judge_train": judge_train,
        "pd": pd,
        "display": lambda *a: None,
        "torch": torch,
        "copy": copy,
        "get_peft_model": get_peft_model,
        "load_model": load_model,
        "lora_config": lora_config,
        "render_prompt": render_prompt,
    }
    exec(compile(core_source("04_judge_grpo"), "04 core", "exec"), ns)
    return ns


def _trl_loss(ns, model) -> float:
    """TRL's own GRPO loss (``GRPOTrainer._compute_loss``, which the library's trainer runs) of ``model`` on the
    core's tokens, advantages, sampling and reference log-probs, with the core's settings; TRL's log-probs come
    from its own fused LM head, not from the core's."""
    import collections
    import contextlib

    import torch
    from trl import GRPOTrainer
    from trl.trainer.utils import add_fused_lm_head

    cfg, ids, q, real, mask = ns["cfg"], ns["ids"], ns["q"], ns["real"], ns["mask"]
    add_fused_lm_head(
        model.get_base_model() if cfg.USE_LORA else model, temperature=cfg.TEMPERATURE, outputs=("log_probs", "entropy")
    )
    one = SimpleNamespace(
        autocast=contextlib.nullcontext,
        num_processes=1,
        reduce=lambda t, reduction="sum": t,
        gather=lambda t: t,
        gather_for_metrics=lambda t: t,
    )
    trainer = SimpleNamespace(  # what _compute_loss reads of a trainer with the library's GRPOConfig, one process
        accelerator=one,
        args=SimpleNamespace(use_bias_correction_kl=False, delta=None, steps_per_generation=1),
        model=model,
        beta=cfg.BETA,
        loss_type="dapo",
        importance_sampling_level="token",
        epsilon_low=cfg.EPSILON_LOW,
        epsilon_high=cfg.EPSILON_HIGH,
        top_entropy_quantile=1.0,
        off_policy_mask_threshold=None,
        use_vllm=False,
        vllm_importance_sampling_correction=False,
        current_gradient_accumulation_steps=1,
        _entropy_bonus_enabled=False,
        aux_loss_enabled=False,
        _metrics=collections.defaultdict(lambda: collections.defaultdict(list)),
    )
    trainer._get_per_token_logps_and_entropies = GRPOTrainer._get_per_token_logps_and_entropies.__wrapped__.__get__(
        trainer
    )
    inputs = {
        "prompt_ids": ids[:, : len(q)],
        "prompt_mask": torch.ones_like(ids[:, : len(q)]),
        "completion_ids": ids[:, len(q) :],
        "completion_mask": real.long(),
        "advantages": ns["A"],
        "num_items_in_batch": mask.sum(),
        "old_per_token_logps": ns["old"],
        "ref_per_token_logps": ns["ref_lp"],
    }
    if cfg.LOSS_TOKENS == "verdict":  # the library's verdict-only trainer: TRL's per-token tool_mask
        inputs["tool_mask"] = (mask > 0).long()
    with torch.no_grad():
        return GRPOTrainer._compute_loss(trainer, model, inputs).item()


def test_notebook_04_core_assumes_the_settings_the_library_gives_trl(tmp_path):
    """The core's loss is TRL's with the library's GRPOConfig: token-mean ("dapo"), advantages normalised per
    group, token-level ratios, one pass over each batch (on-policy: ρ = 1 at the start), AdamW with
    transformers' defaults and gradient clipping at 1."""
    from stepwiser_lib.engines.trainers import GRPOSettings

    a = GRPOSettings(beta=0.2).grpo_args(tmp_path, progress=False)
    assert (a.loss_type, a.scale_rewards, a.importance_sampling_level, a.num_iterations) == (
        "dapo",
        "group",
        "token",
        1,
    )
    assert (a.max_grad_norm, a.weight_decay, a.adam_beta1, a.adam_beta2, a.adam_epsilon) == (1.0, 0.0, 0.9, 0.999, 1e-8)
    assert "adamw" in str(a.optim).lower() and not a.mask_truncated_completions and a.top_entropy_quantile == 1.0


@pytest.mark.parametrize(
    "kw",
    [{}, {"LOSS_TOKENS": "verdict"}, {"TEMPERATURE": 0.7}, {"USE_LORA": False, "GRPO_LR": 1e-6}],
    ids=["lora", "verdict-tokens", "temperature", "full-weights"],
)
def test_notebook_04_core_is_trls_grpo_loss_before_and_after_one_step(kw, toy_base_dir, capsys):
    import copy

    import torch
    from peft import get_peft_model

    from stepwiser_lib.engines.models import lora_config

    cfg = _cfg04(**kw)
    ns = _run04(
        _group04(), cfg, toy_base_dir
    )  # its own assertions: the library's advantages, the closed form, the fall
    torch.manual_seed(cfg.SEED)  # the policy before the step, as the core built it
    start = copy.deepcopy(ns["ref"])
    start = get_peft_model(start, lora_config(cfg.LORA_R, cfg.LORA_ALPHA)) if cfg.USE_LORA else start
    before, after = ns["loss_before"][0].item(), ns["loss_after"][0].item()
    assert _trl_loss(ns, start) == pytest.approx(before, abs=1e-5)
    assert _trl_loss(ns, ns["policy"]) == pytest.approx(after, abs=1e-5) and after != pytest.approx(before)
    out = capsys.readouterr().out.splitlines()
    assert [ln.split()[0] for ln in out] == ["loss", "policy-gradient", "KL"]


def test_notebook_04_core_fails_on_advantages_the_library_would_not_give(toy_base_dir):
    g = _group04()
    with pytest.raises(AssertionError, match="the advantages: the core and the library disagree"):
        _run04({**g, "advantages": g["advantages"][1:] + g["advantages"][:1]}, _cfg04(), toy_base_dir)
    with pytest.raises(AssertionError, match="the advantages: the core and the library disagree"):  # the other label
        _run04({**_group04(label=False), "advantages": g["advantages"]}, _cfg04(), toy_base_dir)


# ----------------------------------------------------------------------------- 05: the first-error rule and F1


class _StepJudge:
    """Negative iff a step says "bad", no parsable verdict iff it says "??", else Positive."""

    def judge(self, triples, k=1, seed=0, **kw):
        out = []
        for _, _, c in triples:
            v = None if "??" in c else "Negative" if "bad" in c else "Positive"
            out.append({"verdict": v, "score": float(v == "Positive"), "analysis": c, "n_unparsed": int(v is None)})
        return out


def _bench05():
    rng, bench = random.Random(5), {}
    for s in ("toy_2step", "toy_3step"):
        recs = []
        for n in range(16):
            steps = [rng.choice(["ok", "ok", "ok", "bad", "??"]) + f" {i}" for i in range(rng.randint(1, 5))]
            label = -1 if n % 2 else rng.randrange(len(steps))  # half correct solutions, half erroneous
            recs.append({"id": f"{s}-{n}", "problem": f"P{n}", "steps": steps, "label": label})
        bench[s] = recs
    return bench


def _run05(run, judges, bench):
    from stepwiser_lib.method import processbench as pb

    ns = {
        "judges": judges,
        "outputs": run["outputs"],
        "results": run["results"],
        "run": run,
        "labels": {s: [r["label"] for r in rs] for s, rs in bench.items()},
        "pb": pb,
    }
    exec(compile(core_source("05_processbench"), "05 core", "exec"), ns)
    return ns


def _library05(tmp_path, monkeypatch):
    from stepwiser_lib.engines import models
    from stepwiser_lib.method import processbench as pb

    monkeypatch.setattr(models, "release", lambda *a: None)
    bench = _bench05()
    judges = [
        {"name": "disc_sft:rel_ratio", "kind": "disc_sft", "style": "disc"},
        {"name": "stepwiser:rel_ratio", "kind": "stepwiser", "style": "cot"},
    ]
    opts = dict(bench_kind="toy", stop_at_first_negative=True, maj_k=1, maj_temperature=1.0, max_completion=8)
    run = pb.run_judges(
        judges, bench, tmp_path, lambda e: _StepJudge(), maj_k_score=2, maj_k_score_judges=[], seed=0, **opts
    )
    return run, judges, bench


def test_notebook_05_core_scores_the_librarys_predictions_by_hand(tmp_path, monkeypatch, capsys):
    run, judges, bench = _library05(tmp_path, monkeypatch)
    capsys.readouterr()  # the library's lines
    preds = [p for ps in run["greedy"]["stepwiser:rel_ratio"].values() for p in ps]
    assert None in preds and -1 in preds and any(p is not None and p >= 0 for p in preds)  # every kind of prediction
    ns = _run05(run, judges, bench)
    assert ns["main"] == "stepwiser:rel_ratio"  # the StepWiser judge, not the first of the registry
    out = capsys.readouterr().out.splitlines()
    assert [ln.split(":")[0] for ln in out[:2]] == list(bench) and "F1 = " in out[0]
    assert out[2].startswith("stepwiser:rel_ratio: average F1 = (") and out[2].endswith(
        "as processbench.score and average_f1"
    )


def test_notebook_05_core_fails_on_a_score_or_a_prediction_the_library_would_not_give(tmp_path, monkeypatch):
    run, judges, bench = _library05(tmp_path, monkeypatch)
    run["results"]["stepwiser:rel_ratio"]["toy_3step"]["f1"] += 1.0
    with pytest.raises(AssertionError, match="toy_3step: the core and the library disagree"):
        _run05(run, judges, bench)
    run, judges, bench = _library05(tmp_path, monkeypatch)
    sol = next(o for o in run["outputs"]["stepwiser:rel_ratio"]["toy_2step"] if o["verdicts"][-1] == "Negative")
    sol["verdicts"][-1] = "Positive"  # a verdict the judge did not give
    with pytest.raises(AssertionError, match="toy_2step: the core and the library disagree"):
        _run05(run, judges, bench)


# ----------------------------------------------------------------------------- 06: the chunk-reset loop


class _SeededPolicy:
    """Draws each chunk from its candidate's own seed (as the real generators do with ``seeds``): three chunks, then
    a boxed answer; a chunk, the final one too, is BAD with probability 0.6."""

    cut_after_separator = False

    def generate(self, prompts, n=1, temperature=1.0, max_new_tokens=96, stop=None, seed=0, prefixes=None, seeds=None):
        from stepwiser_lib.engines.models import Completion

        assert stop == [chunks.CHUNK_CLOSE] and n == 1 and seeds is not None
        out = []
        for pre, s in zip(prefixes, seeds):
            rng = random.Random(s)
            k, bad = pre.count(chunks.CHUNK_OPEN), " BAD" * (rng.random() < 0.6)
            if pre and rng.random() < 0.05:  # the response ends without another chunk
                out.append([Completion(text="\n", n_tokens=1, finished=True)])
                continue
            body = f"so \\boxed{{{rng.randint(0, 9)}}}{bad}" if k == 3 else f"v{rng.randint(0, 999)}{bad}"
            text = ("\n" if pre else "") + chunks.CHUNK_OPEN + body + chunks.CHUNK_CLOSE
            out.append([Completion(text=text, n_tokens=len(body.split()) + 1, finished=True)])
        return out


class _BadJudge:
    """Negative iff a chunk says BAD, with a score below 0.5 drawn from the chunk's text (ties are possible)."""

    def judge(self, triples, k=1, seed=0, seeds=None, **kw):
        out = []
        for _, _, c in triples:
            bad = "BAD" in c
            score = int(hashlib.sha256(c.encode()).hexdigest(), 16) % 4 / 10 if bad else 1.0
            out.append({"verdict": "Negative" if bad else "Positive", "score": score, "analysis": "", "n_unparsed": 0})
        return out


def _run06(cr, base, runs, items, name="stepwiser:rel_ratio"):
    ns = {
        "cfg": SimpleNamespace(JUDGES=["disc_sft:rel_ratio", name]),
        "items": items,
        "runs": runs,
        "registry": {name: {"name": name}},
        "load": lambda e: _BadJudge(),
        "policy": _SeededPolicy(),
        "template": "solve::{problem}",
        "base": base,
        "cr": cr,
        "chunks": chunks,
        "release": lambda *a: None,
    }
    exec(compile(core_source("06_chunk_reset"), "06 core", "exec"), ns)
    return ns


def _library06(base, name="stepwiser:rel_ratio"):
    from stepwiser_lib.method import chunk_reset as cr

    items = {"toy": [{"problem": f"p{i}"} for i in range(30)]}
    arm = cr.run_arm(_SeededPolicy(), _BadJudge(), items["toy"], "solve::{problem}", base, lambda it, r: True)
    return items, {(name, "toy", 0): arm}


@pytest.mark.parametrize(
    "settings",
    [{}, {"on_exhausted": "last", "seed": 3}, {"on_exhausted": "first", "judge_final": False}, {"max_attempts": 2}],
    ids=["best_score", "last", "first-final-unjudged", "two-attempts"],
)
def test_notebook_06_core_walks_the_librarys_trajectory_by_hand(settings, capsys):
    from stepwiser_lib.method import chunk_reset as cr

    base = cr.ResetConfig(max_chunks=6, **settings)
    items, runs = _library06(base)
    results = runs[("stepwiser:rel_ratio", "toy", 0)]["results"]
    assert any(r["exhausted"] for r in results) and any(r["resets"] for r in results)  # every path of the loop
    ns = _run06(cr, base, runs, items)
    j = ns["j"]
    assert any(t["accepted"] and not t["exhausted"] for t in results[j]["trace"])  # a reset, then a chunk accepted
    assert ns["prefix"] == results[j]["response"]
    out = capsys.readouterr().out
    assert f"problem {j} (as cr.chunk_reset on it alone; as in section 1's batch: True)" in out and "(kept)" in out


def test_notebook_06_core_fails_on_a_trajectory_the_library_would_not_give():
    from stepwiser_lib.method import chunk_reset as cr

    base = cr.ResetConfig(max_chunks=6)
    items, runs = _library06(base)

    def flipped(*a, **kw):  # the library's run of the problem, one kept attempt moved
        res = cr.chunk_reset(*a, **kw)
        t = next(t for t in res[0]["trace"] if len(t["attempts"]) > 1)
        t["accepted"] = (t["accepted"] + 1) % len(t["attempts"])
        return res

    fake = SimpleNamespace(is_final=cr.is_final, draw_seed=cr.draw_seed, chunk_reset=flipped)
    with pytest.raises(AssertionError, match="the core and the library disagree"):
        _run06(fake, base, runs, items)


# ----------------------------------------------------------------------------- 07: one RS-FT selection


def _items07():
    c = lambda *xs: "\n".join(f"<chunk>{x}</chunk>" for x in xs)  # noqa: E731
    return [
        {"problem": "P0", "id": "p0", "responses": [c("a"), c("x")], "correct": [True, False]},
        {
            "problem": "P1",
            "id": "p1",
            "responses": [c("a", "x"), c("b", "c"), c("x", "a"), c("c", "b"), c("y")],
            "correct": [True, True, True, True, False],
        },
        {"problem": "P2", "id": "p2", "responses": [c("x")], "correct": [False]},
    ]


class _ByText:
    """A chunk's score: 0 for "x", 0.5 for "b", else 1; "y" (a wrong response) scores highest."""

    def judge(self, triples, k=1, seed=0, **kw):
        score = {"x": 0.0, "b": 0.5}
        return [{"score": score.get(c, 1.0), "verdict": "Positive", "n_unparsed": 0} for _, _, c in triples]


def _run07(items, picks, scores):
    from stepwiser_lib.method import rsft

    ns = {
        "cfg": SimpleNamespace(JUDGES=["disc_sft:rel_ratio", "stepwiser:rel_ratio"]),
        "items": items,
        "picks": picks,
        "scores": scores,
        "rsft": rsft,
        "chunks": chunks,
    }
    exec(compile(core_source("07_rsft"), "07 core", "exec"), ns)
    return ns


def _library07(tmp_path):
    from stepwiser_lib.method import rsft

    registry = {n: {"name": n} for n in ("disc_sft:rel_ratio", "stepwiser:rel_ratio")}
    items = _items07()
    picks, scores, _ = rsft.select_all(
        items, registry, lambda e: _ByText(), tmp_path, "key", judge_k=1, max_completion=8, seed=0
    )
    return items, picks, scores


def test_notebook_07_core_selects_the_librarys_response_by_hand(tmp_path, capsys):
    items, picks, scores = _library07(tmp_path)
    capsys.readouterr()  # the library's lines
    ns = _run07(items, picks, scores)
    # prompt 1: responses 0 and 2 score 0.5, 1 and 3 score 0.75 (a tie: the first), 4 is wrong though it scores 1
    assert ns["name"] == "stepwiser:rel_ratio" and ns["i"] == 1 and ns["best"] == 1 == picks["stepwiser:rel_ratio"][1]
    out = capsys.readouterr().out.splitlines()
    assert out[0].startswith("stepwiser:rel_ratio, prompt 1, chunk scores -> score(a): response 0 [1.0, 0.0] -> 0.500")
    assert "response 4 (wrong) [1.0] -> 1.000" in out[0] and out[1].startswith("kept by hand: response 1, as rsft")
    assert "1 wrong response(s) (never selectable) score at least as high as the chosen one: [4]" in out[2]


def test_notebook_07_core_fails_on_a_pick_the_library_would_not_make(tmp_path):
    items, picks, scores = _library07(tmp_path)
    picks["stepwiser:rel_ratio"][1] = 3  # the other response of the tie
    with pytest.raises(AssertionError, match="the core and the library disagree"):
        _run07(items, picks, scores)
