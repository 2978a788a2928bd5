"""Small helpers for the notebooks' teaching cells: the worked examples beside each paper equation
and the closing "what this run shows, and what it does not" cells.

Nothing here computes a result the notebooks report; each helper lays out, for one example, what
the stage's own functions compute (:mod:`stepwiser_lib.method.labelling`, TRL's GRPO advantage,
:mod:`stepwiser_lib.method.processbench`, :mod:`stepwiser_lib.method.rsft`), so that a cell can redo it by hand
and print the two side by side.
"""

from __future__ import annotations

import json
from pathlib import Path

from ..core.prompts import judge_prompt
from ..evals.claims import other_comparisons, rows
from ..evals.stats import cluster_bootstrap
from ..method import labelling
from ..method.judge import load_judge, parse_verdict, verdict_reward
from ..method.tasks import step_truth

# ----------------------------------------------------------------------------- every notebook


def folded(summary: str, text: str, markdown: bool = False) -> str:
    """Markdown that shows ``summary`` and folds ``text`` (printed as it is, in a fixed-width
    block; with ``markdown``, rendered: a table) under it until the reader opens it: how a long
    printout (a prompt, a batch of worked examples, the numbers behind a figure) stays in an
    executed copy without its length (issue 36). The summary should say what is inside, so that a
    reader can decide without opening it."""
    if markdown:
        return f"<details><summary>{summary}</summary>\n\n{text.rstrip()}\n\n</details>"
    fence = "~~~~" if "```" in text else "```"
    return f"<details><summary>{summary}</summary>\n\n{fence}\n{text.rstrip()}\n{fence}\n\n</details>"


def show_folded(summary: str, text: str, markdown: bool = False) -> None:
    """Display :func:`folded` in a notebook (IPython's Markdown display)."""
    from IPython.display import Markdown, display  # lazy: the library runs without IPython

    display(Markdown(folded(summary, text, markdown)))


# ----------------------------------------------------------------------------- notebook 02


def pick_trajectory(records: list[dict]) -> str | None:
    """A trajectory worth reading by hand: the first with at least three chunks on which Abs-Q
    and Rel-Ratio disagree somewhere (else the first with the most chunks). None without records."""
    by: dict[str, list[dict]] = {}
    for r in records:
        by.setdefault(r["traj_id"], []).append(r)
    if not by:
        return None
    for tid, rs in by.items():
        if len(rs) >= 3 and any(r["label_abs_q"] != r["label_rel_ratio"] for r in rs):
            return tid
    return max(by, key=lambda t: len(by[t]))


def trajectory_table(
    records: list[dict], traj_id: str, alpha: float, gamma: float, n: int = 4, checker=None
) -> list[dict]:
    """One trajectory's chunks in order: the chunk, the exact checker's verdict (``checker``:
    record -> bool or None; toy world: :func:`stepwiser_lib.method.tasks.step_truth`), Q_prev, Q, the
    Rel-Effective score Q + α(μ(Q) − μ(Q_prev)), the ratio Q / Q_prev and the three labels
    recomputed by :mod:`stepwiser_lib.method.labelling` (paper Eq. 2 and §3.2); ``stored`` says whether
    they equal the labels written in ``labels.jsonl``."""
    rs = sorted((r for r in records if r["traj_id"] == traj_id), key=lambda r: r["chunk_index"])
    if not rs:
        raise ValueError(f"no chunks of trajectory {traj_id!r}")
    q, q0 = [r["q"] for r in rs], rs[0]["q0"]
    labels = {
        "abs_q": labelling.abs_q_labels(q),
        "rel_effective": labelling.rel_effective_labels(q, q0, alpha, n),
        "rel_ratio": labelling.rel_ratio_labels(q, q0, gamma),
    }
    out = []
    for i, r in enumerate(rs):
        row = {
            "i": r["chunk_index"],
            "chunk": r["chunk"].strip().replace("\n", " / "),
            **({} if checker is None else {"exact checker": checker(r)}),  # toy problems only
            "Q_prev": round(r["q_prev"], 3),
            "Q": round(r["q"], 3),
            "rollouts": r.get("n_rollouts"),
            "Q + α·Δμ": round(r["q"] + alpha * (labelling.mu(r["q"], n) - labelling.mu(r["q_prev"], n)), 3),
            "Q / Q_prev": round(r["q"] / r["q_prev"], 3) if r["q_prev"] else None,
        }
        for rule, ls in labels.items():
            row[rule] = "+" if ls[i] else "−"
        row["stored"] = all(ls[i] == r[f"label_{rule}"] for rule, ls in labels.items())
        out.append(row)
    return out


RULE_SIGN_NAMES = {"abs_q": "Abs-Q", "rel_effective": "Rel-Effective", "rel_ratio": "Rel-Ratio"}


def label_noise_line(rows: list[dict]) -> str:
    """What kind of example :func:`trajectory_table`'s rows are (issue 36: the worked example was
    label noise, unremarked): each chunk whose label disagrees with the exact checker, by rule. ""
    without a checker (real maths)."""
    if not rows or "exact checker" not in rows[0]:
        return ""
    bad = []
    for r in rows:
        ok = r["exact checker"]
        if ok is None:
            continue
        rules = [RULE_SIGN_NAMES[k] for k in RULE_SIGN_NAMES if (r[k] == "+") != ok]
        if rules:
            bad.append(
                f"chunk {r['i']} is {'right' if ok else 'wrong'} by the exact checker, but {' and '.join(rules)} "
                f"label{'s' if len(rules) == 1 else ''} it {'Negative' if ok else 'Positive'}"
            )
    if not bad:
        return "A clean example: every label of this trajectory agrees with the exact checker."
    return (
        "Label noise in this example: " + "; ".join(bad) + ". A Monte-Carlo label measures how a chunk moves the "
        "chance of success, from a few rollouts; it is not a check of the chunk."
    )


def positive_rate_ci(records: list[dict], rule: str, n_boot: int = 2000, seed: int = 0) -> dict:
    """Positive-label rate (%) of ``rule`` over all chunks, with a 95% interval that resamples
    problems (a problem's chunks travel together: they share rollouts' policy and prefix)."""
    if not records:
        raise ValueError("no labelled chunks")
    ys = [bool(r[f"label_{rule}"]) for r in records]
    est, lo, hi = cluster_bootstrap(
        lambda idx: 100.0 * sum(ys[i] for i in idx) / len(idx),
        len(ys),
        [r["problem_id"] for r in records],
        n_boot,
        seed,
    )
    return {
        "rate": round(est, 1),
        "low": round(lo, 1),
        "high": round(hi, 1),
        "chunks": len(ys),
        "problems": len({r["problem_id"] for r in records}),
    }


# ----------------------------------------------------------------------------- notebook 04


def grpo_advantages(rewards: list[float], group_size: int) -> list[float]:
    """The GRPO advantage exactly as TRL computes it with ``scale_rewards="group"`` (our setting):
    A_i = (r_i − mean of its group) / (std of its group + 1e-4), the std with Bessel's correction
    (``trl.trainer.utils.nanstd``). A group whose rewards are all equal gets A = 0 everywhere: it
    contributes no policy gradient (only the KL term acts on it)."""
    import torch
    from trl.trainer.utils import nanstd

    if group_size < 2 or len(rewards) % group_size:
        raise ValueError(f"{len(rewards)} rewards do not split into groups of {group_size} (need >= 2)")
    r = torch.tensor(rewards, dtype=torch.float64).view(-1, group_size)
    mean = torch.nanmean(r, dim=1, keepdim=True)
    std = nanstd(r, dim=1).unsqueeze(1)
    return [round(float(a), 4) for a in ((r - mean) / (std + 1e-4)).flatten()]


def sample_groups(
    entry: dict,
    examples: list[dict],
    *,
    family: str,
    group_size: int,
    temperature: float,
    max_completion: int,
    seed: int = 0,
    n_prompts: int = 8,
) -> list[dict]:
    """GRPO's first step by hand: ``group_size`` judge outputs sampled (at the RL temperature) for
    each of the first ``n_prompts`` training examples from the judge RL starts from (``entry``:
    its registry entry), each with its verdict, the reward TRL receives (:func:`judge.verdict_reward`)
    and the advantage (:func:`grpo_advantages`)."""
    from ..engines.models import release  # lazy: torch

    exs = examples[:n_prompts]
    if not exs:
        return []
    j = load_judge(entry, family, max_completion)
    try:
        outs = j.gen.generate(
            [judge_prompt(family, e["problem"], e["history"], e["chunk"], entry["style"]) for e in exs],
            n=group_size,
            temperature=temperature,
            max_new_tokens=max_completion,
            seed=seed,
        )
    finally:
        release(j)
    groups = []
    for e, cands in zip(exs, outs):
        texts = [c.text for c in cands]
        rewards = verdict_reward(texts, label=[bool(e["label"])] * len(texts))
        groups.append(
            {
                "problem": e["problem"],
                "history": e["history"],
                "chunk": e["chunk"],
                "label": bool(e["label"]),
                "outputs": [{"verdict": parse_verdict(t), "reward": r, "text": t} for t, r in zip(texts, rewards)],
                "advantages": grpo_advantages(rewards, len(rewards)),
            }
        )
    return groups


# ----------------------------------------------------------------------------- closing cells

MEANING = {
    "same direction": "this run's difference has the paper's sign, its interval (items of one run) excluding zero",
    "undetermined": "this run does not tell either way (the interval includes zero)",
    "opposite direction": "this run's difference has the other sign, its interval excluding zero",
    "uninformative": "this run cannot ask it: a judge gave no parsable verdict, or was never asked",
}


def mixed_group(groups: list[dict]) -> dict | None:
    """The group worked by hand: the first whose rewards differ (a group that agrees has every
    advantage 0 and teaches nothing), else the first; None without groups."""
    return next((g for g in groups if len({o["reward"] for o in g["outputs"]}) > 1), groups[0] if groups else None)


def group_rows(group: dict, by_hand: list[float]) -> list[dict]:
    """One row per output of ``group``: its verdict, reward, the advantage computed ``by_hand`` beside
    TRL's formula (:func:`grpo_advantages`), and the output's first 90 characters."""
    return [
        {
            "verdict": o["verdict"],
            "reward r_i": o["reward"],
            "A_i by hand": round(a, 4),
            "A_i (TRL's formula)": t,
            "output": o["text"].strip().replace("\n", " / ")[:90],
        }
        for o, a, t in zip(group["outputs"], by_hand, group["advantages"])
    ]


def group_case_line(group: dict) -> str:
    """What kind of case the GRPO group worked by hand is (issue 36: worked examples say so): its
    MC label against the exact checker (toy world; "" elsewhere). Where they disagree, the reward
    pays the verdicts the checker calls wrong."""
    truth = step_truth(group)
    if truth is None:
        return ""
    label = "Positive" if group["label"] else "Negative"
    if truth == bool(group["label"]):
        return (
            f"A clean group: the exact checker agrees with the MC label ({label}), so the reward pays right verdicts."
        )
    return (
        f"Label noise in this group: the exact checker calls the chunk {'right' if truth else 'wrong'}, but its MC "
        f"label is {label}, so the reward pays the verdicts the checker calls wrong (a correct analysis "
        "contradicted earns a positive advantage)."
    )


def equal_rewards_line(groups: list[dict]) -> str:
    """How many ``groups`` have equal rewards, so that GRPO learns nothing from them this step."""
    agree = sum(len({o["reward"] for o in g["outputs"]}) == 1 for g in groups)
    return (
        f"{agree} of {len(groups)} groups have equal rewards (all right or all wrong): every advantage is 0, "
        "so those prompts give no policy gradient this step; only the KL term acts on them."
    )


def claim_lines(results_dir: str | Path, file: str, others: bool = False) -> list[str]:
    """Markdown bullets for the paper claims a notebook's results file tests (:func:`claims.rows`),
    each with the paper's difference, ours with its 95% interval and paired test, the verdict and
    what it means. The file's other paired comparisons (questions the paper does not ask) are
    printed where they are computed, so here they get one line saying how many; with ``others``,
    a bullet each."""
    path = Path(results_dir) / f"{file}.json"
    if not path.exists():
        return [f"- (no `{path.name}` yet: run the notebook's cells above first)"]
    out, asked = [], set()
    for r in rows(results_dir, files=[file]):
        asked.add((r["question"], r["a"], r["b"]))
        ours = "no number" if r["ours"] is None else f"{r['ours']:+.1f} [{r['low']:+.1f}, {r['high']:+.1f}]"
        out.append(
            f"- **{r['claim']}.** Paper: {r['paper']:+.1f} ({r['paper_source']}). Ours: {ours}, "
            f"{r['test']}: **{r['verdict']}**: {MEANING[r['verdict']]}."
        )
    rest = [
        c
        for c in other_comparisons(file, json.loads(path.read_text()).get("comparisons", []))
        if (c["claim"], c.get("a"), c.get("b")) not in asked and not {"diff", "low", "high"} - set(c)
    ]
    if rest and not others:
        out.append(
            f"- and {len(rest)} paired question(s) the paper does not ask, printed above where they are computed."
        )
    for c in rest if others else []:
        if c["diff"] is None:  # an uninformative comparison (stepwiser_lib.core.verdicts)
            out.append(f"- *{c['claim']}* (not a paper claim): **{c['verdict']}**: {c.get('test', '')}.")
            continue
        out.append(
            f"- *{c['claim']}* (not a paper claim; {c.get('a', 'a')} − {c.get('b', 'b')}): {c['diff']:+.1f} "
            f"[{c['low']:+.1f}, {c['high']:+.1f}], {c.get('test', 'paired bootstrap')}."
        )
    return out or ["- This notebook's results test no paired claim at this profile."]
