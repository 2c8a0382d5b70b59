"""Benchmark: the hostile-input corpus of the test suite (tests/helpers/hostile.py), every case through the
CLI entry point in a capped child, against a baseline run in the same command — plain
`llmcalc count gpt2` (and `verify gpt2` for the cases that build with transformers) through the
same runner.

Reports the worst case's wall time and peak memory, and their ratios to the baseline: a hostile
input should cost about what a normal call costs, since every cap is checked before the work.

    python bench/hostile_input.py
"""

from __future__ import annotations

import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))

from helpers.hostile import Case, run_cases, write_corpus  # noqa: E402

BASELINE_RUNS = 5


def main() -> int:
    folder = Path(tempfile.mkdtemp(prefix="llmcalc-hostile-"))
    cases = write_corpus(folder)
    baseline = [Case("baseline count", ("count", "gpt2"), 0)] * BASELINE_RUNS
    verify_baseline = [Case("baseline verify", ("verify", "gpt2"), 0, verify=True)] * 2
    results = run_cases([*baseline, *verify_baseline, *cases], folder)
    base, vbase, hostile = (results[:BASELINE_RUNS],
                            results[BASELINE_RUNS:BASELINE_RUNS + 2],
                            results[BASELINE_RUNS + 2:])
    broken = [r for r in hostile if r.problems]
    base_s = sorted(r.seconds for r in base)[BASELINE_RUNS // 2]
    base_mem = max(r.peak_bytes for r in base)
    vbase_s = min(r.seconds for r in vbase)
    vbase_mem = max(r.peak_bytes for r in vbase)
    plain = [r for r in hostile if not (r.case.verify or r.case.args[0] == "verify")]
    builds = [r for r in hostile if r.case.verify or r.case.args[0] == "verify"]
    print(f"{len(hostile)} hostile cases, {len(broken)} broke a promise")
    for label, rs, s0, m0 in (("without torch", plain, base_s, base_mem),
                              ("verify", builds, vbase_s, vbase_mem)):
        slow = max(rs, key=lambda r: r.seconds)
        big = max(rs, key=lambda r: r.peak_bytes)
        print(f"{label}: baseline {s0:.2f} s, {m0 / 1024**2:.0f} MiB")
        print(f"  worst time   {slow.seconds:.2f} s ({slow.seconds / s0:.1f}× baseline): "
              f"{slow.case.name[:60]!r}")
        print(f"  worst memory {big.peak_bytes / 1024**2:.0f} MiB "
              f"({big.peak_bytes / m0:.1f}× baseline): {big.case.name[:60]!r}")
    for r in broken:
        print(f"BROKEN {r.case.name!r}: {'; '.join(r.problems)}")
    return 1 if broken else 0


if __name__ == "__main__":
    sys.exit(main())
