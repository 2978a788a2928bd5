"""The paper's reported numbers, copied from arXiv 2508.19229v2 (each constant names
its table), so notebooks print them beside ours.

These are the *paper's* results, never ours: every table that shows them labels them so.
"""

from __future__ import annotations

#: Table 4: self-segmentation vs splitting by "\n\n" (#steps on 10K NuminaMath prompts,
#: Avg@32 on MATH500).
TABLE4 = [
    {"generator": "Qwen2.5-1.5B-it", "method": "Split by \\n\\n", "steps": 9.6, "tokens": 686.7, "avg_acc": 44.2},
    {"generator": "Qwen2.5-1.5B-chunk", "method": "Self-segmentation", "steps": 6.0, "tokens": 714.1, "avg_acc": 44.7},
    {"generator": "Qwen2.5-7B-it", "method": "Split by \\n\\n", "steps": 9.9, "tokens": 733.0, "avg_acc": 73.3},
    {"generator": "Qwen2.5-7B-chunk", "method": "Self-segmentation", "steps": 6.8, "tokens": 768.1, "avg_acc": 73.3},
]

#: §2 / App. A.4: positive label rates before balancing (Qwen2.5-1.5B-chunk data).
POSITIVE_RATES_1P5B = {"abs_q": 70.2, "rel_ratio_gamma0.8": 56.5}


def paper_rate(paper: dict, rule: str) -> float | None:
    """The paper's positive rate for ``rule`` in ``paper`` (:data:`POSITIVE_RATES_1P5B`-style keys:
    ``rel_ratio_gamma0.8`` is Rel-Ratio's); None when the paper reports none."""
    return next((v for k, v in paper.items() if k.split("_gamma")[0] == rule), None)


def _rows(text: str, keys: tuple[str, ...], n_text: int) -> list[dict]:
    """Parse ``a|b|...`` lines: the first ``n_text`` fields are text, the rest numbers."""
    out = []
    for line in text.strip().splitlines():
        f = line.split("|")
        out.append(dict(zip(keys, [*f[:n_text], *map(float, f[n_text:])], strict=True)))
    return out


#: Table 5: ProcessBench F1 per subset (GSM8K, MATH, OlympiadBench, Omni-MATH) and their mean,
#: Qwen2.5-1.5B-chunk and 7B-chunk judges, keyed (model, row, signal).
_T5 = """
1.5B|Discriminative + SFT|abs_q|39.3|32.1|19.3|18.9|27.2
1.5B|Discriminative + SFT|rel_effective|40.8|37.2|18.7|20.1|29.2
1.5B|Discriminative + SFT|rel_ratio|32.1|32.0|14.2|18.0|24.1
1.5B|Generative CoT + RL (StepWiser)|abs_q|49.2|40.5|23.8|31.0|36.1
1.5B|Generative CoT + RL (StepWiser)|rel_effective|48.2|43.6|22.1|25.3|34.8
1.5B|Generative CoT + RL (StepWiser)|rel_ratio|46.9|43.4|26.3|28.4|36.2
7B|Discriminative + SFT|abs_q|54.8|45.9|28.0|26.9|38.9
7B|Discriminative + SFT|rel_effective|55.6|48.7|26.4|28.3|39.7
7B|Discriminative + SFT|rel_ratio|48.6|46.9|21.9|25.4|35.7
7B|Generative CoT + RL (StepWiser)|abs_q|61.9|61.0|48.4|43.9|53.8
7B|Generative CoT + RL (StepWiser)|rel_effective|72.4|68.3|54.4|52.4|61.9
7B|Generative CoT + RL (StepWiser)|rel_ratio|72.6|67.2|52.3|49.8|60.5
1.5B|Ablate RL (use RS-FT)|rel_ratio|32.8|23.9|16.3|19.6|23.1
1.5B|Ablate CoT (discriminative format + RL)|rel_ratio|42.0|43.2|23.6|28.7|34.3
7B|Ablate CoT (discriminative format + RL)|rel_ratio|58.7|49.4|40.8|42.7|47.9
7B|Ablate prompt balancing (generative + RL)|rel_ratio|58.8|54.8|41.0|36.9|47.9
"""
#: Tables 5 and 6 rows (the ablation rows are Table 6, Rel-Ratio signal).
TABLE5_6 = _rows(_T5, ("model", "row", "signal", "gsm8k", "math", "olympiadbench", "omnimath", "avg"), 3)


def paper_row(row: str, signal: str, model: str = "1.5B") -> dict | None:
    """The paper's Table 5/6 entry for a judge variant, or None if the paper has no such row."""
    for r in TABLE5_6:
        if (r["row"], r["signal"], r["model"]) == (row, signal, model):
            return r
    return None


#: Table 7: Chunk-Reset Reasoning (accuracy on MATH500 and NuminaMath Heldout-1K, their mean,
#: and accepted / rejected length in tokens on MATH500).
_T7 = """
1.5B|Qwen2.5-1.5B-chunk (no judge)|-|44.7|17.6|31.2|616.0|0.0
1.5B|Discriminative + SFT|abs_q|47.7|19.1|33.4|625.2|218.7
1.5B|Discriminative + SFT|rel_effective|47.4|19.6|33.5|612.7|302.4
1.5B|Discriminative + SFT|rel_ratio|50.4|20.0|35.2|596.0|475.8
1.5B|Generative CoT + RL (StepWiser)|abs_q|51.4|19.8|35.6|599.1|1069.2
1.5B|Generative CoT + RL (StepWiser)|rel_effective|52.1|21.2|36.7|602.0|947.4
1.5B|Generative CoT + RL (StepWiser)|rel_ratio|51.9|21.8|36.9|596.4|884.7
7B|Qwen2.5-7B-chunk (no judge)|-|73.3|41.5|57.4|609.5|0.0
7B|Discriminative + SFT|abs_q|74.8|44.4|59.6|654.0|168.2
7B|Discriminative + SFT|rel_effective|76.9|46.1|61.5|654.6|186.5
7B|Discriminative + SFT|rel_ratio|76.7|45.8|61.3|641.4|219.7
7B|Generative CoT + RL (StepWiser)|abs_q|77.5|46.3|61.9|658.5|345.7
7B|Generative CoT + RL (StepWiser)|rel_effective|78.3|48.1|63.2|660.8|425.8
7B|Generative CoT + RL (StepWiser)|rel_ratio|79.0|47.5|63.3|653.0|295.4
"""
TABLE7 = _rows(_T7, ("model", "row", "signal", "math500", "heldout", "avg", "accepted", "rejected"), 3)

#: Table 8: stepwise RS-FT data selection, Qwen2.5-7B-chunk, greedy accuracy.
_T8 = """
Qwen2.5-7B-chunk (greedy, no RS-FT)|-|75.6|44.6|60.1
Outcome-based selection|-|76.6|45.2|60.9
Discriminative + SFT|abs_q|78.4|45.3|61.8
Discriminative + SFT|rel_effective|78.2|45.2|61.7
Discriminative + SFT|rel_ratio|78.2|45.7|61.9
Generative CoT + RL (StepWiser)|abs_q|79.0|46.1|62.5
Generative CoT + RL (StepWiser)|rel_effective|79.4|46.7|63.0
Generative CoT + RL (StepWiser)|rel_ratio|79.0|46.8|62.9
"""
TABLE8 = _rows(_T8, ("row", "signal", "math500", "heldout", "avg"), 2)


# ----------------------------------------------------------------------------- the paper's own noise

#: ProcessBench subset sizes (erroneous, correct): GSM8K, MATH, OlympiadBench, Omni-MATH
#: (ProcessBench paper, Table 1; the same as the full files of ``make data``, data/README.md).
PROCESSBENCH_SIZES = [(207, 193), (594, 406), (661, 339), (759, 241)]

#: Table 10, 1.5B-chunk, Generative CoT + RL, Rel-Ratio: (error %, correct %) per subset, in the
#: order of :data:`PROCESSBENCH_SIZES`. The rates behind :func:`pb_avg_f1_se`'s estimate of the
#: paper's item noise on a judge's average F1.
TABLE10_GEN_RL_1P5B = [(35.0, 71.0), (37.8, 50.8), (27.0, 25.6), (28.0, 28.8)]


def pb_avg_f1_se(rates=TABLE10_GEN_RL_1P5B, sizes=PROCESSBENCH_SIZES) -> float:
    """Standard error (F1 points) of a ProcessBench average F1 from its items alone, by the delta
    method on F1 = 2EC / (E + C) per subset (E, C: accuracy on the erroneous and the correct
    solutions, binomial over the subset's items), averaged over the subsets. The paper reports no
    interval; this is what its benchmark's size alone implies (about 1.0
    per judge)."""
    var = 0.0
    for (e, c), (n_e, n_c) in zip(rates, sizes, strict=True):
        e, c = e / 100, c / 100
        de, dc = 2 * c * c / (e + c) ** 2, 2 * e * e / (e + c) ** 2  # dF1/dE, dF1/dC
        var += de * de * e * (1 - e) / n_e + dc * dc * c * (1 - c) / n_c
    return 100 * var**0.5 / len(rates)


def accuracy_se(p: float, n: int) -> float:
    """Standard error (points) of an accuracy of ``p`` % over ``n`` problems (binomial)."""
    return 100 * ((p / 100) * (1 - p / 100) / n) ** 0.5


def mean_accuracy_se(p_math500: float, p_heldout: float) -> float:
    """Standard error (points) of Tables 7/8's "avg": the mean of MATH500 (500 problems) and
    NuminaMath Heldout-1K (1,000) accuracies."""
    return 0.5 * (accuracy_se(p_math500, 500) ** 2 + accuracy_se(p_heldout, 1000) ** 2) ** 0.5


#: The paper's settings and sizes that the notebooks' prose quotes (paper §4.1, §4.4, App. A.1,
#: Tables 4 and 9; ProcessBench's 3,400 solutions), so that a check of the prose
#: (``stepwiser_lib.tools.prose``) can tell them from numbers about our run.
PAPER_CONSTANTS = {
    "gamma": 0.8,
    "alpha": 0.4,
    "mc_rollouts": 16,
    "grpo_prompts_per_step": 1024,
    "grpo_group": 4,
    "grpo_minibatch": 256,
    "grpo_steps": 800,
    "grpo_lr": 1e-6,
    "sft_lr": 1e-5,
    "sft_batch": 32,
    "eps_low": 0.2,
    "eps_high": 0.28,
    "max_judge_tokens": 3096,
    "max_response_tokens": 8192,
    "packing": 8192,
    "sft_prompts": 20000,
    "numina_heldout": 1000,
    "math500": 500,
    "avg_at": 32,
    "maj_at": 8,
    "processbench_solutions": 3400,
    "annotation_days": 14,
    "annotation_gpus": 8,
    "teacher_b": 70,
    "segmentations": 8,
    "max_correct": 4,
    "max_attempts": 5,
    "steps_split_1p5b": 5.46,
    "steps_chunk_1p5b": 3.46,
}


def paper_differences() -> set[float]:
    """Every a − b (rounded to 0.1) between two rows of one of the paper's tables, per column: the
    differences the notebooks quote (+12.1, −3.6 ...)."""
    out: set[float] = set()
    for tab in (TABLE4, TABLE5_6, TABLE7, TABLE8):
        for a in tab:
            for b in tab:
                for k, v in a.items():
                    w = b.get(k)
                    if isinstance(v, float) and isinstance(w, float):
                        out.add(round(v - w, 1))
    return out
