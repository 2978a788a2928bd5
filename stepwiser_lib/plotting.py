"""One plotting style for every notebook; figures are saved as PNG under ``figures/<profile>/``."""

from __future__ import annotations

import os
from pathlib import Path

import matplotlib

if not os.environ.get("DISPLAY") and "ipykernel" not in os.environ.get("JPY_PARENT_PID", "x"):
    # headless (papermill, CI): never try to open a window
    matplotlib.use(os.environ.get("MPLBACKEND", "Agg"))

import matplotlib.pyplot as plt  # noqa: E402

PAPER_COLOR = "#999999"
OURS_COLOR = "#1f77b4"


def setup() -> None:
    import seaborn as sns

    sns.set_theme(context="notebook", style="whitegrid", font_scale=0.95)
    plt.rcParams.update({"figure.dpi": 110, "savefig.dpi": 130, "savefig.bbox": "tight"})


def save(fig, path: str | Path) -> Path:
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path)
    return path


# ----------------------------------------------------------------------------- notebook 04

def grpo_curves(runs: dict[str, dict]):
    """Notebook 04, section 6 (the paper's Figure 4 analogue): per GRPO run, the train reward
    (thin: per step; thick: a 5-step running mean, since 32 samples per step make one step's
    reward noisy), the in-training dev balanced accuracy, the entropy and the completion length.
    ``runs``: run id -> the ``train`` record of :func:`stepwiser_lib.judge.train_grpo_judge`."""
    fig, axes = plt.subplots(1, 4, figsize=(17, 3.4))
    for r, tr in runs.items():
        logs = [h for h in tr["log_history"] if "reward" in h]
        steps, rw = [h["step"] for h in logs], [h["reward"] for h in logs]
        line, = axes[0].plot(steps, rw, lw=0.6, alpha=0.35)
        run_mean = [sum(rw[max(0, i - 4):i + 1]) / len(rw[max(0, i - 4):i + 1]) for i in range(len(rw))]
        axes[0].plot(steps, run_mean, lw=1.6, color=line.get_color(), label=r)
        axes[2].plot(steps, [h.get("entropy", float("nan")) for h in logs], lw=1)
        axes[3].plot(steps, [h.get("completions/mean_length", float("nan")) for h in logs], lw=1)
        vc = tr["val_curve"]
        axes[1].plot([v["step"] for v in vc], [v["balanced_acc"] for v in vc], marker="o", lw=1)
    axes[1].axhline(50, ls="--", c="k", lw=0.8)
    for ax, t in zip(axes, ["train reward (thick: 5-step mean)", "dev balanced acc %", "entropy", "completion length"]):
        ax.set(xlabel="GRPO step", title=t)
    if runs:
        axes[0].legend(fontsize=6)
    return fig


def readout_histograms(judged_by: dict[str, list[dict]]):
    """Notebook 04, section 5: per judge, p(Positive) right after its own greedy analysis, split
    by the verdict that analysis implies (:func:`stepwiser_lib.judge.analysis_implied`).
    ``judged_by``: judge name -> its judged test chunks (with ``p_positive`` and ``analysis``)."""
    from .judge import analysis_implied

    fig, axes = plt.subplots(1, len(judged_by), figsize=(4 * len(judged_by), 3.2), sharey=True, squeeze=False)
    bins = [i / 20 for i in range(21)]
    for ax, (name, jd) in zip(axes[0], judged_by.items()):
        for implied, color, lab in ((True, "#2ca02c", "analysis implies right"), (False, "#d62728", "analysis implies wrong")):
            ps = [j["p_positive"] for j in jd if j.get("p_positive") is not None and analysis_implied(j["analysis"]) is implied]
            ax.hist(ps, bins=bins, alpha=0.6, color=color, label=f"{lab} ({len(ps)})")
        ax.axvline(0.5, ls="--", c="k", lw=0.8)
        ax.set(title=name, xlabel="p(Positive) after its own analysis")
        ax.legend(fontsize=7)
    axes[0][0].set_ylabel("test chunks")
    return fig


def judge_bars(rows: list[dict]):
    """Notebook 04, section 4: each judge's test balanced accuracy against the MC labels and,
    where the row has one (toy world), against the exact checker."""
    fig, ax = plt.subplots(figsize=(max(6, 0.8 * len(rows)), 3.6))
    x = range(len(rows))
    ax.bar([i - 0.2 for i in x], [r.get("balanced_acc", float("nan")) for r in rows], width=0.4, label="vs MC labels", color=OURS_COLOR)
    if any("truth_balanced_acc" in r for r in rows):
        ax.bar([i + 0.2 for i in x], [r.get("truth_balanced_acc", float("nan")) for r in rows], width=0.4,
               label="vs exact checker", color="#ff7f0e")
    ax.axhline(50, ls="--", c="k", lw=0.8)
    ax.set_xticks(list(x), [f"{r['judge']}\n({r['rule']})" if r["judge"].startswith("warm") else r["judge"] for r in rows],
                  rotation=60, ha="right", fontsize=7)
    ax.set(ylabel="balanced accuracy %", title="Test step accuracy per judge")
    ax.legend(fontsize=8)
    return fig


# ----------------------------------------------------------------------------- notebook 05

def processbench_figure(results: dict[str, dict], kinds: dict[str, dict[str, int]], bench_name: str):
    """Notebook 05, section 4: F1 per split for every row of ``results`` (row -> split ->
    :func:`stepwiser_lib.processbench.score`), and where each judge's first-Negative prediction
    falls against the true first error (``kinds``: judge -> :func:`~stepwiser_lib.processbench.error_kinds`,
    as % of solutions)."""
    import pandas as pd

    names = list(results)
    splits = list(next(iter(results.values()))) if results else []
    fig, axes = plt.subplots(1, 2, figsize=(15, 3.8))
    w = 0.8 / max(1, len(splits))
    for i, s in enumerate(splits):
        axes[0].bar([k + i * w for k in range(len(names))], [results[n][s]["f1"] for n in names], width=w, label=s)
    axes[0].set_xticks([k + 0.4 - w / 2 for k in range(len(names))], names, rotation=60, ha="right", fontsize=7)
    axes[0].set(ylabel="F1", title=f"F1 per split ({bench_name} benchmark)")
    axes[0].legend(fontsize=7)
    kdf = pd.DataFrame(kinds).T
    if len(kdf):
        (kdf.div(kdf.sum(axis=1), axis=0) * 100).plot.bar(stacked=True, ax=axes[1], width=0.8,
                                                          color=["#2ca02c", "#ff7f0e", "#d62728", "#9467bd", "#8c564b"])
        axes[1].set(ylabel="% of solutions", title="Predicted vs true first error")
        axes[1].tick_params(axis="x", labelsize=7, rotation=60)
        axes[1].legend(fontsize=7, loc="lower right")
    return fig


# ----------------------------------------------------------------------------- notebook 06

def reset_scatter(runs: dict, tasks: list[str], seeds: dict[str, list[int]]):
    """Notebook 06, section 3: each row's accuracy (mean over seeds of the task average; bar: half
    the range) against its rejected length (tokens per problem). ``runs``: (label, task, k) -> run."""
    fig, ax = plt.subplots(figsize=(6.5, 4))
    for label, ks in seeds.items():
        accs = [sum(runs[(label, t, k)]["summary"]["accuracy"] for t in tasks) / len(tasks) for k in ks]
        rej = [sum(runs[(label, t, k)]["summary"]["rejected_length"] for t in tasks) / len(tasks) for k in ks]
        ax.errorbar(sum(rej) / len(rej), sum(accs) / len(accs), yerr=(max(accs) - min(accs)) / 2, fmt="o", capsize=3, label=label)
    ax.set(xlabel="rejected length (tokens per problem)", ylabel="accuracy % (mean over seeds; bar: range)",
           title="Chunk-Reset: accuracy vs rejected tokens")
    ax.legend(fontsize=7)
    return fig


# ----------------------------------------------------------------------------- notebook 07

def rsft_bars(rows: list[dict]):
    """Notebook 07, section 4: each row's greedy accuracy (bar: spread over SFT seeds), the axis
    starting 5 points under the lowest so that differences show."""
    fig, ax = plt.subplots(figsize=(7, 3.3))
    ax.bar([r["method"] for r in rows], [r["avg"] for r in rows], yerr=[r["std"] for r in rows], capsize=3, color=OURS_COLOR)
    ax.set(ylabel="greedy accuracy %", title="Policy after RS-FT on each selected set")
    ax.tick_params(axis="x", rotation=35, labelsize=7)
    ax.set_ylim(max(0, min(r["avg"] for r in rows) - 5), None)
    return fig
