"""Open-in-Colab support: every notebook carries the same badge and bootstrap cell (a test checks).

On Colab the bootstrap cell clones this repository, installs it (with the pinned versions from
``pyproject.toml``) and moves into it, so the notebook's imports and relative paths work; anywhere
else it does nothing. Set ``REPO_URL`` to your fork's address if you publish one.
"""

from __future__ import annotations

REPO_URL = "https://github.com/stepwiser-companion/stepwiser-companion"
REPO_PATH = REPO_URL.removeprefix("https://github.com/")

BOOTSTRAP_SOURCE = f'''# Colab bootstrap (identical in every notebook): on Google Colab, fetch and install the companion once
# and work inside it; everywhere else (Jupyter, papermill, CI) this cell does nothing.
import os, subprocess, sys
if "google.colab" in sys.modules:
    if not os.path.isdir("/content/stepwiser-companion"):
        subprocess.run(["git", "clone", "-q", "{REPO_URL}", "/content/stepwiser-companion"], check=True)
        subprocess.run([sys.executable, "-m", "pip", "install", "-q", "-e", "/content/stepwiser-companion"], check=True)
    os.chdir("/content/stepwiser-companion")
    sys.path.insert(0, "/content/stepwiser-companion")'''


def badge_markdown(stem: str) -> str:
    """The Open-in-Colab badge for ``notebooks/<stem>.ipynb``."""
    url = f"https://colab.research.google.com/github/{REPO_PATH}/blob/main/notebooks/{stem}.ipynb"
    return f"[![Open In Colab](https://colab.research.google.com/assets/colab-badge.svg)]({url})"
