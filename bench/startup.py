"""Start-up: `llmcalc count|flops|memory MODEL` as whole processes against the import floor.

The floor is a process that only imports the libraries llmcalc is built on
(`python -c "import typer, rich.console, pydantic, yaml"`); each command runs as the `llmcalc`
console script does (`from llmcalc.cli import main; main()`), on a bundled model, printing its
table. Runs alternate (floor, count, flops, memory, floor, …); we print the medians and each
command's ratio to the floor. The target is a ratio of at most 1.25.

llmcalc is byte-compiled first, as `pip install` does. Usage:
    python bench/startup.py [MODEL] [--runs N]
"""

from __future__ import annotations

import argparse
import compileall
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
FLOOR = "import typer, rich.console, pydantic, yaml"
ENTRY = "import sys; from llmcalc.cli import run; sys.argv[0] = 'llmcalc'; run()"
TARGET = 1.25


def timed(cmd: list[str], env: dict[str, str]) -> float:
    start = time.perf_counter()
    subprocess.run(cmd, capture_output=True, check=True, env=env)
    return time.perf_counter() - start


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("model", nargs="?", default="gpt2-medium")
    parser.add_argument("--runs", type=int, default=21)
    args = parser.parse_args()
    compileall.compile_dir(REPO / "llmcalc", quiet=1)
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    cmds = {"import floor": [sys.executable, "-c", FLOOR]}
    for command in ("count", "flops", "memory"):
        cmds[f"llmcalc {command} {args.model}"] = [sys.executable, "-c", ENTRY, command,
                                                   args.model]
    for cmd in cmds.values():  # warm the file cache once
        timed(cmd, env)
    times: dict[str, list[float]] = {name: [] for name in cmds}
    for _ in range(args.runs):
        for name, cmd in cmds.items():
            times[name].append(timed(cmd, env))
    floor = statistics.median(times["import floor"])
    print(f"{'':34} median over {args.runs} alternating runs")
    worst = 0.0
    for name, ts in times.items():
        m = statistics.median(ts)
        ratio = m / floor
        if name != "import floor":
            worst = max(worst, ratio)
        print(f"{name:34} {m * 1000:7.1f} ms   ratio to the floor {ratio:.2f}")
    verdict = "within" if worst <= TARGET else "above"
    print(f"worst ratio {worst:.2f}: {verdict} the {TARGET} target")


if __name__ == "__main__":
    main()
