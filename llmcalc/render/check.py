"""`llmcalc check` output: one row per config file (pass / fail / error and why) and a summary."""

from __future__ import annotations

from typing import Any

from llmcalc.check import CheckRun, FileCheck
from llmcalc.render.grid import Col, Grid
from llmcalc.render.verify import verify_json


def summary(run: CheckRun) -> str:
    if not run.files:
        return "no config files found"
    tally = run.tally()
    counts = ", ".join(f"{v} {k}" for k, v in tally.items())
    files = len(run.files)
    return f"{files} file{'s' if files != 1 else ''}: {counts} ({run.seconds:.2f} s)"


def check_grid(run: CheckRun) -> Grid:
    """One row per file: pass / fail / error and why; the summary as a note."""
    g = Grid("llmcalc check", [Col("file"), Col("model", drop=1), Col("status"),
                               Col("why", wrap=True)])
    for f in run.files:
        g.add(f.label, f.model or "", f.status, f.why)
    g.notes.append(summary(run))
    return g


def file_json(f: FileCheck) -> dict[str, Any]:
    return {
        "file": f.label,
        "model": f.model,
        "status": f.status,
        "why": f.why,
        "figures": [
            {
                "figure": x.expected.figure,
                "expected": x.expected.value,
                "rel": x.expected.rel,
                "actual": x.actual,
                "ok": x.ok,
            }
            for x in f.figures
        ],
        "verify": [verify_json(c) for c in f.verify],
    }


def check_json(run: CheckRun) -> dict[str, Any]:
    return {
        "ok": run.exit_code == 0,
        "exit_code": run.exit_code,
        "summary": run.tally(),
        "seconds": round(run.seconds, 3),
        "files": [file_json(f) for f in run.files],
    }
