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
