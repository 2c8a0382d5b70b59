"""Every changed config of every counted type against transformers: exact / refused / wrong.

The configs are tests/differential/variants.py's (one change from each type's default config:
sizes, left-out fields, nulls; then combinations); each check of tests/differential/checks.py is a
column. Prints one line per type, the totals, and every wrong outcome; exits 1 if any is wrong.

Usage: python bench/differential.py [TYPE ...] [--seed N] [--jobs N] [--list KIND ...]
       [--checks CHECK ...] [--sample N]
"""

from __future__ import annotations

import argparse
import multiprocessing
import os
import random
import sys
import time
from collections import Counter
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests" / "differential"))

from checks import CHECKS, KINDS, REFUSED, UNMEASURED, WRONG  # noqa: E402
from variants import counted_types, iter_variants  # noqa: E402

Row = list[tuple[str, str, str, str]]  # (check, label, kind, detail)


def run_type(args: tuple[str, int, tuple[str, ...], int | None]) -> tuple[str, Row, float]:
    model_type, seed, checks, sample = args
    os.environ.setdefault("OMP_NUM_THREADS", "1")
    start = time.perf_counter()
    rows: Row = []
    variants = list(iter_variants(model_type, seed=seed))
    if sample is not None:  # the default config and `sample` changed ones, as the tests draw them
        defaults, *changed = variants
        rng = random.Random(f"{seed}:{model_type}")
        variants = [defaults, *rng.sample(changed, min(sample, len(changed)))]
    for variant in variants:
        for name in checks:
            try:
                outcome = CHECKS[name](variant)
            except Exception as e:  # noqa: BLE001 - a check that raises is a defect: wrong
                rows.append((name, variant.label, WRONG, f"the check raised {type(e).__name__}: "
                                                         f"{str(e).splitlines()[0][:200] if str(e) else ''}"))
                continue
            rows.append((name, variant.label, outcome.kind, outcome.detail))
    return model_type, rows, time.perf_counter() - start


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("types", nargs="*", help="model types (default: every counted type)")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--jobs", type=int, default=os.cpu_count() or 1)
    parser.add_argument("--list", nargs="+", default=[WRONG], choices=KINDS, metavar="KIND",
                        help=f"outcomes to list one by one ({', '.join(KINDS)}; default: wrong)")
    parser.add_argument("--checks", nargs="+", default=list(CHECKS), choices=list(CHECKS),
                        metavar="CHECK", help=f"columns ({', '.join(CHECKS)}; default: all)")
    parser.add_argument("--sample", type=int, default=None, metavar="N",
                        help="each type's default config and N changed ones (default: all); the "
                        "flops and cache checks run each config for real, seconds apiece")
    args = parser.parse_args()
    types = args.types or counted_types()
    checks = tuple(args.checks)
    header = f"{'model type':<26}" + "".join(
        f" | {name}: " + " ".join(f"{k[:7]:>7}" for k in KINDS) for name in checks
    )
    print(header)
    totals = {name: Counter[str]() for name in checks}
    listed: list[str] = []
    start = time.perf_counter()
    # workers are spawned and import torch and transformers themselves: workers forked from a
    # parent that had imported them reported wrong totals that a fresh process does not give
    context = multiprocessing.get_context("spawn")
    with ProcessPoolExecutor(args.jobs, mp_context=context) as pool:
        work = [(t, args.seed, checks, args.sample) for t in types]
        for model_type, rows, _seconds in pool.map(run_type, work):
            line = f"{model_type:<26}"
            for name in checks:
                tally = Counter(kind for check, _l, kind, _d in rows if check == name)
                totals[name].update(tally)
                line += f" | {name}: " + " ".join(f"{tally[k]:>7}" for k in KINDS)
            print(line, flush=True)
            for check, label, kind, detail in rows:
                if kind in args.list:
                    listed.append(f"{kind.upper():<8}{check}: {label}: {detail}")
                    print(f"    {listed[-1]}", flush=True)  # as it comes: a crash keeps it
    print("-" * len(header))
    line = f"{'total':<26}"
    for name in checks:
        line += f" | {name}: " + " ".join(f"{totals[name][k]:>7}" for k in KINDS)
    print(line)
    for name in checks:
        t = totals[name]
        built = t["exact"] + t[REFUSED] + t[WRONG]
        share = t["exact"] / built if built else 1.0
        print(f"{name}: {sum(t.values()):,} configs; of the {built:,} transformers builds, "
              f"{t['exact']:,} exact ({share:.1%}), {t[REFUSED]:,} refused, {t[WRONG]:,} wrong; "
              f"{t['both refuse']:,} refused by both, {t['unbuilt']:,} counted where "
              f"transformers refuses" + (f", {t[UNMEASURED]:,} not measured here (a whole "
                                         "model, or too large)" if t[UNMEASURED] else ""))
    print(f"{time.perf_counter() - start:.0f} s")
    for item in listed:
        print(item)
    return 1 if any(t[WRONG] for t in totals.values()) else 0


if __name__ == "__main__":
    sys.exit(main())
