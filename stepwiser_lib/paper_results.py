"""The paper's reported numbers, copied from arXiv 2508.19229v2 (see
``shared/reference/stepwiser_paper_notes.md`` §5), so notebooks print them beside ours.

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
