"""`llmcalc ARGS` run as a person runs it from a shell: a fresh process, no COLUMNS."""

from __future__ import annotations

import os
import subprocess
import sys

from helpers import REPO


def llmcalc(*args: str, module: bool = False) -> subprocess.CompletedProcess[str]:
    """`llmcalc ARGS` (or `python -m llmcalc ARGS`) in a fresh process, as from a shell."""
    entry = ["-m", "llmcalc"] if module else [
        "-c", "import sys; from llmcalc.cli import run; sys.argv[0] = 'llmcalc'; run()"]
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    env.pop("COLUMNS", None)
    return subprocess.run([sys.executable, *entry, *args], capture_output=True, text=True,
                          env=env, timeout=120)
