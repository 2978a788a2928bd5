"""Small helpers for the notebooks' teaching cells: the worked examples beside each paper equation
and the closing "what this run shows, and what it does not" cells.

Nothing here computes a result the notebooks report; each helper lays out, for one example, what
the stage's own functions compute (:mod:`stepwiser_lib.method.labelling`, TRL's GRPO advantage,
:mod:`stepwiser_lib.method.processbench`, :mod:`stepwiser_lib.method.rsft`), so that a cell can redo it by hand
and print the two side by side.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

from ..core import config
from ..core.paths import PROFILES_DIR
from ..core.prompts import judge_prompt
from ..evals import claims, seeds
from ..evals.claims import other_comparisons
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


# ----------------------------------------------------------------------------- the closing lines

#: Paper claims a notebook's stage is about but another notebook's results test (file ``judges``:
#: notebook 04), as (a, b, the results file, how the row is made): a notebook's closing lines print
#: the claims table's row where it exists, and else the paper's difference and what runs it.
ELSEWHERE = {
    "labelling": [
        (
            "stepwiser:rel_ratio",
            "stepwiser:abs_q",
            "judges",
            "notebook 04's `stepwiser:rel_ratio` and `stepwiser:abs_q` judges, trained where 04's `VARIANTS` lists both",
        ),
        (
            "stepwiser:rel_effective",
            "stepwiser:abs_q",
            "judges",
            "notebook 04's `stepwiser:rel_effective` and `stepwiser:abs_q` judges, trained where 04's `VARIANTS` lists both",
        ),
    ],
    "balancing": [
        (
            "stepwiser:rel_ratio",
            "no_balance_rl:rel_ratio",
            "judges",
            "notebook 04's `no_balance_rl:rel_ratio` judge, trained where 04's `VARIANTS` lists it",
        )
    ],
}


def claims_table(results_dir: str | Path, n_boot: int | None = None) -> tuple[list[dict], bool]:
    """The claims table of ``results_dir`` and whether it is the profile's final one: its
    ``claims.json`` (:func:`stepwiser_lib.evals.claims.write`) when that is at least as new as every
    predictions file there, was computed with ``n_boot`` replicates and speaks today's vocabulary
    (:data:`~stepwiser_lib.evals.claims.VERDICT_MEANING`); else :func:`claims.table` computed now,
    over the predictions the folder holds (a notebook run: those of the notebooks run so far).
    ``n_boot``: the claims table's own setting by default (a second or two at tiny, 10 s at
    toy-full)."""

    res = Path(results_dir)
    n_boot = seeds.N_BOOT if n_boot is None else n_boot
    path = res / "claims.json"
    preds = list(res.glob("*_predictions.jsonl"))
    if path.exists() and all(path.stat().st_mtime >= p.stat().st_mtime for p in preds):
        doc = json.loads(path.read_text())
        if doc.get("n_boot") == n_boot and all(r.get("verdict") in claims.VERDICT_MEANING for r in doc["claims"]):
            return doc["claims"], True
    return (claims.table(res, n_boot) if preds else []), False


def _claim_bullet(r: dict) -> str:
    """One claims-table row as a closing line: the claim, the paper's difference, ours with its 95%
    interval, the test, the verdict and its meaning (:data:`claims.VERDICT_MEANING`)."""
    paper = "no number" if r["paper_diff"] is None else f"{r['paper_diff']:+.1f}"
    arms = f"{r['a']} − {r['b']}: " if r["paper_diff"] is None else ""  # which arm a "higher" verdict names
    ours = (
        "no number"
        if r.get("estimate") is None
        else f"{arms}{r['estimate']:+.1f} [{r['ci_low']:+.1f}, {r['ci_high']:+.1f}] ({r['metric']})"
    )
    return (
        f"- **{r['claim']}.** Paper: {paper} ({r['paper_source']}). Ours: {ours}; {r['test']}: "
        f"**{r['verdict']}**: {claims.VERDICT_MEANING[r['verdict']]}."
    )


def closing_lines(results_dir: str | Path, file: str, others: bool = False, n_boot: int | None = None) -> list[str]:
    """A notebook's finding in the claims table's words (issue 51): Markdown bullets for the rows
    of :func:`claims_table` whose results file is ``file`` (``self_segmentation``, ``judges``,
    ``processbench``, ``chunk_reset``, ``rsft``), each with the paper's difference, ours with its
    95% interval, the test and the verdict with its meaning; a line for each claim of
    :data:`ELSEWHERE` (its row, or why there is none); and a line saying which family Holm adjusted
    over. The file's other paired comparisons (questions the paper does not ask) are printed where
    they are computed, so here they get one line saying how many; with ``others``, a bullet each."""
    table, final = claims_table(results_dir, n_boot)
    mine = [r for r in table if r["file"] == file]
    out = [_claim_bullet(r) for r in mine]
    for a, b, where, how in ELSEWHERE.get(file, []):
        row = next((r for r in table if r["file"] == where and (r["a"], r["b"]) == (a, b)), None)
        if row is not None:
            out.append(_claim_bullet(row))
            mine.append(row)
            continue
        paper = claims.ordering_claim(a, b)
        if paper is None:  # the paper has no row for an arm: nothing to say here
            continue
        out.append(
            f"- **{paper['claim']}.** Paper: {paper['paper_diff']:+.1f} ({paper['paper_source']}). Ours: not tested "
            f"in this results folder: the row needs {how}."
        )
    if mine:
        family = sum(r.get("p_holm") is not None for r in table)
        out.append(
            f"- Holm over all {family} informative claims of this profile's final table (`claims.json`)."
            if final
            else f"- Holm over the {family} informative claims computed so far (the predictions in this results "
            "folder); the final tables (`docs/results_tiny.md`, `docs/results_toy_full.md`) adjust over all of a "
            "profile's claims, so a verdict there can differ."
        )
    path = Path(results_dir) / f"{file}.json"
    asked = {(r["a"], r["b"]) for r in mine}
    rest = [
        c
        for c in (other_comparisons(file, json.loads(path.read_text()).get("comparisons", [])) if path.exists() else [])
        if (c.get("a"), c.get("b")) not in asked and not {"diff", "low", "high"} - set(c)
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
    if not out:
        return [
            f"- No claim of the claims table comes from `{file}` in {Path(results_dir).name}/ yet"
            + ("" if path.exists() else f" (no `{path.name}`: run the notebook's cells above first)")
            + "."
        ]
    return out


# ----------------------------------------------------------------------------- the settings table

#: The settings of each notebook that the paper-beside-the-toy table shows (:func:`settings_table`):
#: the four to eight that set its scale or its method. Each one whose tiny value differs from the
#: paper's says why in its parameter comment, after ``tiny:`` (the part the table quotes).
KEY_SETTINGS = {
    "01_self_segmentation": (
        "BASE_MODEL",
        "TEACHER",
        "N_PROBLEMS",
        "SAMPLES_PER_PROBLEM",
        "MAX_NEW_TOKENS",
        "SFT_LR",
        "EVAL_SAMPLES",
    ),
    "02_rollout_labelling": (
        "N_KEPT",
        "M_ROLLOUTS",
        "MAX_NEW_TOKENS",
        "TRAJ_PER_PROMPT",
        "ADAPTIVE",
    ),
    "04_judge_grpo": (
        "WARMUP",
        "GRPO_STEPS",
        "PROMPTS_PER_STEP",
        "GRPO_LR",
        "USE_LORA",
        "BETA",
        "MAX_COMPLETION",
    ),
    "03_balancing": ("PROMPT_FAMILY", "MAX_CHARS", "DEV_FRACTION", "TEST_FRACTION"),
    "05_processbench": ("BENCH", "PROMPT_FAMILY", "LIMIT", "MAJ_K", "MAX_COMPLETION"),
    "06_chunk_reset": ("EVAL_TASKS", "N_PROBLEMS", "MAX_ATTEMPTS", "TEMPERATURE"),
    "07_rsft": ("N_PROMPTS", "SAMPLES", "SFT_LR", "RUNS", "EVAL_PROBLEMS"),
}

#: Where a paper.yaml comment says a value comes from: a section, table or appendix, or ``[not in paper]``.
_SOURCE = re.compile(r"\[not in paper\]|§\s*[\d.]*\d|Tables? \d+(?:(?:, | and )\d+)*|App\. [A-Z][\d.]*\d?")
_YAML_KEY = re.compile(r"^(\s*)([A-Za-z0-9_]+):\s*(.*?)(?:\s+#\s*(.*))?$")


def profile_comments(profile: str, notebook: str, profiles_dir: Path | None = None) -> dict[str, str]:
    """The comment beside each value a profile file sets for ``notebook`` (its ``shared`` keys, then
    its own section's): YAML drops comments, so the file is read line by line."""

    text = (Path(profiles_dir or PROFILES_DIR) / f"{profile}.yaml").read_text(encoding="utf-8")
    out, section, nb = {}, None, None
    for line in text.splitlines():
        m = _YAML_KEY.match(line)
        if not m or line.lstrip().startswith("#"):
            continue
        indent, key, _, comment = len(m.group(1)), m.group(2), m.group(3), m.group(4) or ""
        if indent == 0:
            section, nb = key, None
        elif section == "notebooks" and indent == 2:
            nb = key
        elif (section == "shared" and indent == 2) or (section == "notebooks" and nb == notebook and indent == 4):
            out[key] = comment.strip()
    return out


def _value(v) -> str:
    if isinstance(v, bool) or v is None:
        return str(v)
    if isinstance(v, float):
        return f"{v:g}"
    if isinstance(v, (list, tuple)):
        return ", ".join(map(_value, v)) or "none"
    if isinstance(v, dict):
        return json.dumps(v) if v else "none"
    return f"`{v}`" if isinstance(v, str) else str(v)


def _why_tiny(comment: str) -> str:
    """The ``tiny: ...`` part of a parameter comment (to its end), else the comment."""
    m = re.search(r"\btiny:\s*", comment)
    return comment[m.end() :].strip() if m else comment.strip()


def settings_rows(cfg, notebook: str | None = None, keys=None) -> list[dict]:
    """The paper's value of each of ``notebook``'s key settings (:data:`KEY_SETTINGS`, or ``keys``)
    beside this run's (``cfg``): the paper's from ``configs/profiles/paper.yaml`` with where it
    says the value comes from (the notebook's own value where paper.yaml sets none), and why this
    run's differs: the comment beside it in the profile that set it, else (the notebook's own
    value) the parameter comment's ``tiny:`` part, or the whole comment without one."""

    nb = notebook or cfg.notebook
    keys = keys or KEY_SETTINGS[nb]
    declared = config.notebook_parameters(config.NOTEBOOKS_DIR / f"{nb}.ipynb")
    paper = config.for_notebook("paper", nb)
    paper_notes = profile_comments("paper", nb)
    run_notes = {} if cfg.PROFILE == "paper" else profile_comments(cfg.PROFILE, nb)
    out = []
    for k in keys:
        pv, ours = getattr(paper, k), getattr(cfg, k)
        if k in paper_notes:
            src = _SOURCE.findall(paper_notes[k])
            where = "[not in paper]" if "[not in paper]" in src else (src[0] if src else "paper.yaml")
        else:
            where = "the notebook's value"
        if ours == pv:
            why = "the paper's value"
        elif k in run_notes:
            why = f"{cfg.PROFILE}: {run_notes[k] or f'set by configs/profiles/{cfg.PROFILE}.yaml'}"
        elif ours == declared[k].default:
            why = _why_tiny(declared[k].comment)
        else:
            why = "set for this run (neither the parameters cell's value nor the profile's)"
        out.append({"setting": k, "paper": f"{_value(pv)} ({where})", "this run": _value(ours), "why": why})
    return out


def settings_table(cfg, notebook: str | None = None, keys=None) -> str:
    """:func:`settings_rows` as a Markdown table: the paper beside the toy (issue 51), shown under
    each notebook's config check; the full list is the parameters cell."""
    rows_ = settings_rows(cfg, notebook, keys)
    lines = [
        f"| setting | the paper | this run ({cfg.PROFILE}) | why this run differs |",
        "|---|---|---|---|",
    ]
    cell = lambda t: str(t).replace("|", "\\|")  # noqa: E731
    lines += [f"| `{r['setting']}` | {cell(r['paper'])} | {cell(r['this run'])} | {cell(r['why'])} |" for r in rows_]
    return "\n".join(lines)


def show_settings(cfg, notebook: str | None = None, keys=None) -> None:
    """Display :func:`settings_table` in a notebook."""
    from IPython.display import Markdown, display  # lazy: the library runs without IPython

    display(Markdown(settings_table(cfg, notebook, keys)))
