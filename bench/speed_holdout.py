"""`latency --engine` against published measurements it was not fitted on (issue #38's hidden-set check).

    .venv/bin/python bench/speed_holdout.py [--rows bench/speed_holdout.json] [--worst 10] [--json]

Each row of bench/speed_holdout.json (sourced: url, quoted line, card, settings) is run the way the
issue's hidden set is run: ``llmcalc latency MODEL (--gpu KEY | --gpu-flops X --gpu-bandwidth Y)
--dtype D --ctx N --gen M --batch B [--kv-dtype D] --engine E --backend B --json``, in-process through
the CLI. A row's test says which figure it checks: ``pp…`` or ``ttft`` the expected prefill tokens/s (a ttft row's
figure is batch × ctx ÷ its published time to first token), ``tg…`` or
``decode`` the expected decode tokens/s (the whole batch's), ``throughput`` the expected output
tokens/s per GPU over whole requests. Printed: the median |error| per stage and per hardware class,
the rows whose measurement beats the roofline bound, the refusals (a refusal is a miss: its error
counts as infinite in every median it belongs to) and the worst rows. Exits 0 whatever the figures:
it reports, the issue's thresholds (decode 8%, prefill 12%, each class 15%) are printed beside them.
"""

from __future__ import annotations

import argparse
import json
import math
import statistics
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from typer.testing import CliRunner

from llmcalc.cli import build_app

ROWS = Path(__file__).resolve().parent / "speed_holdout.json"
THRESHOLDS = {"decode": 0.08, "prefill": 0.12, "class": 0.15}  # issue #38, "Done when"
CLASSES = ("apple", "consumer", "datacentre")


def stage(test: str) -> str:
    """The stage a row's figure measures: pp…/ttft prefill, tg…/decode decode, else whole requests."""
    if test.startswith("pp") or test == "ttft":
        return "prefill"
    if test.startswith("tg") or test == "decode":
        return "decode"
    return "throughput"


def argv(row: dict[str, Any]) -> list[str]:
    """The hidden set's call for a row: the card by key, or its bf16 FLOP/s and bandwidth."""
    card = ["--gpu", row["gpu"]] if row.get("gpu") else [
        "--gpu-flops", row["flops"], "--gpu-bandwidth", row["bandwidth"]]
    kv = ["--kv-dtype", row["kv_dtype"]] if row.get("kv_dtype") else []
    return ["latency", row["model"], *card, "--dtype", row["dtype"], "--ctx", str(row["ctx"]),
            "--gen", str(row["gen"]), "--batch", str(row["batch"]), *kv,
            "--engine", row["engine"], "--backend", row["backend"], "--json"]


@dataclass(frozen=True)
class Result:
    row: dict[str, Any]
    stage: str
    expected: float | None  # None: refused
    bound: float | None
    why: str = ""  # a refusal's message

    @property
    def error(self) -> float:
        """Signed relative error of the expected figure (inf for a refusal)."""
        if self.expected is None:
            return math.inf
        return self.expected / float(self.row["tokens_per_s"]) - 1

    @property
    def above_bound(self) -> bool:
        return self.bound is not None and self.row["tokens_per_s"] > self.bound * (1 + 1e-9)


def figures(out: dict[str, Any], which: str) -> tuple[float, float]:
    """(expected, roofline bound) of one stage from `latency --json`."""
    e, batch = out["expected"], out["inputs"]["batch"]
    if which == "prefill":
        return e["prefill_tokens_per_s"], batch * out["inputs"]["ctx"] / out["prefill"]["seconds"]
    if which == "decode":
        return e["decode_tokens_per_s"], batch / out["decode_step"]["seconds"]
    return e["throughput_tokens_per_s"], out["throughput_per_gpu"]


def run(rows: list[dict[str, Any]]) -> list[Result]:
    runner, app = CliRunner(), build_app(["latency"])
    results = []
    for row in rows:
        which = stage(row["test"])
        res = runner.invoke(app, argv(row))
        if res.exit_code != 0:
            results.append(Result(row, which, None, None, (res.output or str(res.exception)).strip()))
            continue
        out = json.loads(res.stdout)
        if not out.get("expected"):
            results.append(Result(row, which, None, None, "no expected object"))
            continue
        expected, bound = figures(out, which)
        results.append(Result(row, which, expected, bound))
    return results


def median(errors: list[float]) -> float:
    return statistics.median(abs(e) for e in errors) if errors else math.nan


def pct(x: float) -> str:
    return "n/a" if math.isnan(x) else "refused" if math.isinf(x) else f"{100 * x:.1f}%"


def label(r: Result) -> str:
    row = r.row
    card = row.get("gpu") or row["card"]
    return (f"{row['engine']}/{row['backend']} {card} {row['model']} {row['dtype']} {row['test']} "
            f"b{row['batch']}")


def source_name(url: str) -> str:
    """A source's short name: the host, with a GitHub URL's owner/repo."""
    parts = url.split("/")
    return "/".join(parts[2:5]) if parts[2] == "github.com" else parts[2]


def summary(results: list[Result]) -> dict[str, Any]:
    by_stage = {s: [r.error for r in results if r.stage == s] for s in ("decode", "prefill", "throughput")}
    by_class = {c: [r.error for r in results if r.row["class"] == c] for c in CLASSES}
    groups: dict[str, list[float]] = {}
    sources: dict[str, list[float]] = {}
    for r in results:
        groups.setdefault(f"{r.row['engine']}/{r.row['backend']}/{r.row['class']}", []).append(r.error)
        sources.setdefault(source_name(r.row["source"]), []).append(r.error)
    return {
        "rows": len(results),
        "stage": {s: {"rows": len(v), "median_abs_error": median(v)} for s, v in by_stage.items()},
        "class": {c: {"rows": len(v), "median_abs_error": median(v)} for c, v in by_class.items()},
        "group": {g: {"rows": len(v), "median_abs_error": median(v)} for g, v in sorted(groups.items())},
        "source": {g: {"rows": len(v), "median_abs_error": median(v)} for g, v in sorted(sources.items())},
        "pooled": median([r.error for r in results]),
        "above_bound": [label(r) for r in results if r.above_bound],
        "refused": [f"{label(r)}: {r.why}" for r in results if r.expected is None],
    }


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--rows", type=Path, default=ROWS)
    ap.add_argument("--worst", type=int, default=10)
    ap.add_argument("--json", action="store_true", help="print the summary as JSON")
    args = ap.parse_args()
    rows = json.loads(args.rows.read_text())["rows"]
    results = run(rows)
    s = summary(results)
    if args.json:
        print(json.dumps(s, indent=2))
        return 0
    print(f"held-out rows: {s['rows']}  (pooled median |error| {pct(s['pooled'])})")
    for name, v in s["stage"].items():
        bar = THRESHOLDS.get(name)
        print(f"  {name:<11} {v['rows']:>3} rows  median |error| {pct(v['median_abs_error']):>8}"
              + (f"   (issue: <= {100 * bar:.0f}%)" if bar else ""))
    for name, v in s["class"].items():
        print(f"  {name:<11} {v['rows']:>3} rows  median |error| {pct(v['median_abs_error']):>8}"
              f"   (issue: <= {100 * THRESHOLDS['class']:.0f}%)")
    print("by engine/backend/class:")
    for name, v in s["group"].items():
        print(f"  {name:<32} {v['rows']:>3} rows  {pct(v['median_abs_error']):>8}")
    print("by source (one publisher's rows share its setup; a source's median shows whether one dominates):")
    for name, v in s["source"].items():
        print(f"  {name:<44} {v['rows']:>3} rows  {pct(v['median_abs_error']):>8}")
    print(f"measurements above the roofline bound: {len(s['above_bound'])}")
    for line in s["above_bound"]:
        print(f"  {line}")
    print(f"refusals (misses): {len(s['refused'])}")
    for line in s["refused"]:
        print(f"  {line}")
    print(f"worst {args.worst} rows (signed error = expected / measured - 1):")
    for r in sorted(results, key=lambda r: -abs(r.error))[: args.worst]:
        exp = "refused" if r.expected is None else f"{r.expected:9.1f}"
        print(f"  {pct(r.error) if r.expected is None else f'{100 * r.error:+6.1f}%':>8}  measured "
              f"{r.row['tokens_per_s']:9.1f}  expected {exp}  {label(r)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
