"""bench/speed_holdout.py (bench/ is no package), for the tests that run rows through it as issue
38's hidden set is run."""

import sys

from helpers import REPO

sys.path.insert(0, str(REPO / "bench"))

import speed_holdout as holdout  # noqa: E402

__all__ = ["REPO", "holdout"]
