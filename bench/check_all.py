"""Benchmark: `llmcalc check configs/` (no --verify) over every bundled config, in a child process.

Budget: within 2 s, start-up of the CLI included. Prints the wall time and peak RSS
(resource.getrusage of the child) of the best of a few runs; exits 1 when over budget.

    python bench/check_all.py
"""

from __future__ import annotations

import resource
import subprocess
import sys
import time

from llmcalc.inputs import bundled

BUDGET_SECONDS = 2.0
RUNS = 3


def main() -> int:
    cmd = [sys.executable, "-m", "llmcalc", "check", str(bundled.CONFIG_DIR), "--json"]
    walls = []
    code = 0
    for _ in range(RUNS):
        start = time.perf_counter()
        result = subprocess.run(cmd, capture_output=True, text=True)
        walls.append(time.perf_counter() - start)
        code = max(code, result.returncode)
    rss = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss * 1024
    best = min(walls)
    files = len(bundled.paths())
    print(f"llmcalc check configs/ ({files} configs): exit {code}")
    print(f"wall time   best {best:.2f} s, worst {max(walls):.2f} s of {RUNS}   "
          f"(budget {BUDGET_SECONDS:.0f} s)")
    print(f"peak RSS    {rss / 1024**2:.0f} MiB")
    ok = code == 0 and best <= BUDGET_SECONDS
    print("within budget" if ok else "OVER BUDGET or failed")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
