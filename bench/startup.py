"""Start-up: llmcalc's command forms as whole processes against the import floor.

The floor is a process that only imports the libraries llmcalc is built on
(`python -c "import typer, rich.console, pydantic, yaml"`); each form runs as the `llmcalc`
console script does (`from llmcalc.cli import run; run()`), printing what it prints: the plain
`count|flops|memory MODEL`, then forms with options, `--help` and `--version` (FORMS). Runs
alternate (floor, each form, floor, …) after one warm-up run of each (which also fills the spec
and help caches, as a first use does); we print the medians and each form's ratio to the floor.
The target is a ratio of at most 1.25 for every form.

llmcalc is byte-compiled first, as `pip install` does. Usage:
    python bench/startup.py [MODEL] [--runs N] [--only TEXT]
"""

from __future__ import annotations

import argparse
import compileall
import os
import resource
import statistics
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
FLOOR = "import typer, rich.console, pydantic, yaml"
ENTRY = "import sys; from llmcalc.cli import run; sys.argv[0] = 'llmcalc'; run()"
TARGET = 1.25
# command forms beside the plain `count|flops|memory MODEL`: options, --help, --version
FORMS = (
    "flops llama-3-8b --ctx 128k",
    "memory llama-2-7b --ctx 32k --dtype fp8 --json",
    "count llama-2-7b --json",
    "count deepseek-v3 --tensors",
    "fit llama-3-8b --gpu h100",
    "fit llama-2-70b --gpu h100 --gpus 2 --batch 16 --ctx 4k",
    "train llama-3-8b --gpu h100 --tokens 1T",
    "latency llama-3-8b --gpu h100",
    # the expected speed: the fit on llama.cpp's 201 Metal rows, kept between runs
    "latency llama-3-8b --gpu apple-m2-ultra --dtype q4_k_m --engine llama.cpp --json",
    "list",
    "--help",
    "count --help",
    "flops --help",
    "fit --help",
    "--version",
)


def timed(cmd: list[str], env: dict[str, str]) -> tuple[float, float]:
    """Wall-clock and CPU (user + system) seconds of one run of ``cmd``."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    done = subprocess.run(cmd, capture_output=True, env=env)
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if done.returncode not in (0, 1):  # 1: a plan that does not fit, an answer
        raise SystemExit(f"{' '.join(cmd[3:])}: exit {done.returncode}: {done.stderr[-300:]!r}")
    cpu = after.ru_utime + after.ru_stime - before.ru_utime - before.ru_stime
    return wall, cpu


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("model", nargs="?", default="gpt2-medium")
    parser.add_argument("--runs", type=int, default=21)
    parser.add_argument("--only", default="", help="only the forms whose text holds TEXT")
    args = parser.parse_args()
    compileall.compile_dir(REPO / "llmcalc", quiet=1)
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    cmds = {"import floor": [sys.executable, "-c", FLOOR]}
    forms = [f"{command} {args.model}" for command in ("count", "flops", "memory")]
    for form in [f for f in [*forms, *FORMS] if args.only in f]:
        cmds[f"llmcalc {form}"] = [sys.executable, "-c", ENTRY, *form.split()]
    for cmd in cmds.values():  # warm the file cache once
        timed(cmd, env)
    times: dict[str, list[tuple[float, float]]] = {name: [] for name in cmds}
    for _ in range(args.runs):
        for name, cmd in cmds.items():
            times[name].append(timed(cmd, env))
    floor = [statistics.median(t[k] for t in times["import floor"]) for k in (0, 1)]
    print(f"{'':56} medians over {args.runs} alternating runs; ratio to the floor")
    print(f"{'':56} {'wall ms':>8} {'ratio':>6} {'cpu ms':>8} {'ratio':>6}")
    worst = 0.0
    for name, ts in times.items():
        wall, cpu = (statistics.median(t[k] for t in ts) for k in (0, 1))
        ratios = (wall / floor[0], cpu / floor[1])
        if name != "import floor":
            worst = max(worst, min(ratios))
        print(f"{name:56} {wall * 1000:8.1f} {ratios[0]:6.2f} {cpu * 1000:8.1f} {ratios[1]:6.2f}")
    verdict = "within" if worst <= TARGET else "above"
    # on a shared machine one of the two is noise (other processes' load stretches wall time,
    # CPU frequency changes stretch both): a form is held to the lower of its two ratios
    print(f"worst ratio {worst:.2f}: {verdict} the {TARGET} target")


if __name__ == "__main__":
    main()
