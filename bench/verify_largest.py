"""Benchmark: `llmcalc verify` on the largest bundled config, in a child process.

Budget: within 60 s and 2 GB peak RSS on a 2-core machine. The child builds the
transformers model on the meta device (no weights) and compares every tensor; this script prints
its wall time and peak RSS (resource.getrusage of the child) and exits 1 when over budget.

    python bench/verify_largest.py
"""

from __future__ import annotations

import resource
import subprocess
import sys
import time

from llmcalc import count, load_spec
from llmcalc.inputs import bundled

BUDGET_SECONDS = 60.0
BUDGET_RSS_BYTES = 2 * 1024**3


def largest() -> tuple[str, int]:
    """The bundled config with the most parameters, and that count."""
    totals = {p.stem: count(load_spec(str(p))).total for p in bundled.paths()}
    name = max(totals, key=lambda k: totals[k])
    return name, totals[name]


def main() -> int:
    name, total = largest()
    cmd = [sys.executable, "-m", "llmcalc", "verify", name]
    start = time.perf_counter()
    result = subprocess.run(cmd, capture_output=True, text=True)
    wall = time.perf_counter() - start
    # ru_maxrss of the largest child that has been waited for, in KiB on Linux
    rss = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss * 1024
    print(f"llmcalc verify {name} ({total:,} parameters): exit {result.returncode}")
    print(f"wall time   {wall:6.2f} s   (budget {BUDGET_SECONDS:.0f} s)")
    print(f"peak RSS    {rss / 1024**2:6.0f} MiB (budget {BUDGET_RSS_BYTES / 1024**2:.0f} MiB)")
    verdict = [line for line in result.stdout.splitlines() if line.startswith(("match", "differs"))]
    print("\n".join(verdict) or result.stderr.strip())
    ok = result.returncode == 0 and wall <= BUDGET_SECONDS and rss <= BUDGET_RSS_BYTES
    print("within budget" if ok else "OVER BUDGET or failed")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
