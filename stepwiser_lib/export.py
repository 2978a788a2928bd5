"""``python -m stepwiser_lib.export``: a profile's data sets and judges with cards, loadable with one
line and pushable to the hub (:mod:`stepwiser_lib.tools.export`)."""

import sys

from .tools.export import export, main, push  # noqa: F401 (the public entry points)

if __name__ == "__main__":
    sys.exit(main())
