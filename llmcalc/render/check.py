"""`llmcalc check` output: one row per config file (pass / fail / error and why) and a summary."""

from __future__ import annotations

import hashlib
from typing import Any

from llmcalc.limits import escape
from llmcalc.render.grid import Col, Grid
from llmcalc.render.verify import verify_json
from llmcalc.verify.check import CheckRun, FileCheck, Location, figure_message, first_difference


def summary(run: CheckRun) -> str:
    if not run.files and run.changed is not None:
        return f"no config file changed against {run.changed}"
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
    note = skipped_note(run)
    if note:
        g.notes.append(note)
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
        "skipped": [{"file": str(s.path), "why": s.why} for s in run.skipped],
    }


def skipped_note(run: CheckRun) -> str | None:
    """'skipped 2 files: a/b.json (why), …' — what the folder walk left out and why."""
    if not run.skipped:
        return None
    n = len(run.skipped)
    shown_ = [f"{s.path} ({s.why})" for s in run.skipped[:MAX_SKIPPED_NAMED]]
    more = f", and {n - MAX_SKIPPED_NAMED:,} more" if n > MAX_SKIPPED_NAMED else ""
    return f"skipped {n:,} file{'s' if n != 1 else ''}: " + ", ".join(shown_) + more


MAX_SKIPPED_NAMED = 20  # files a note names; --json and --format github list all


# ---- GitHub Actions workflow commands ------------------------------------------------------------
# https://docs.github.com/en/actions/reference/workflows-and-actions/workflow-commands: a message
# escapes %, CR and LF; a property (file=, title=) also ':' and ','.


def _gh_message(text: str) -> str:
    # control characters are written out first (CR and LF too: one annotation is one line)
    return escape(text).replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")


def _gh_property(text: str) -> str:
    return _gh_message(text).replace(":", "%3A").replace(",", "%2C")


def _gh_command(kind: str, at: Location, title: str, message: str) -> str:
    props = [f"file={_gh_property(at.file)}"]
    if at.line is not None:
        props.append(f"line={at.line}")
    props.append(f"title={_gh_property(title)}")
    return f"::{kind} {','.join(props)}::{_gh_message(message)}"


def check_github(run: CheckRun) -> str:
    """An ``::error`` per failing figure (at its line under expected:), per failing comparison and
    per file that cannot be read; a ``::warning`` per skipped file; then the summary."""
    lines = []
    for f in run.files:
        if f.status == "error":
            lines.append(_gh_command("error", f.at or Location(f.label), "llmcalc check", f.why))
            continue
        for x in f.figures:
            if not x.ok:
                lines.append(_gh_command(
                    "error", x.at or Location(f.label), f"llmcalc check: {x.expected.figure}",
                    figure_message(x),
                ))
        for c in f.verify:
            if not c.ok:
                lines.append(_gh_command(
                    "error", Location(f.label), f"llmcalc check --verify: {c.kind}",
                    f"{c.kind} differs: {first_difference(c)}",
                ))
    for s in run.skipped:
        lines.append(_gh_command("warning", Location(str(s.path)), "llmcalc check: skipped", s.why))
    lines.append(escape(summary(run)))
    return "\n".join(lines) + "\n"


# ---- JUnit XML -----------------------------------------------------------------------------------
# The Ant/Jenkins layout most CI systems read: <testsuites><testsuite><testcase> with a <failure>,
# <error> or <skipped> child.


def check_junit(run: CheckRun) -> str:
    """One testsuite; a testcase per file checked (failure or error with its message) and per
    file the walk skipped (skipped with why)."""
    import xml.etree.ElementTree as ET

    tally = run.tally()
    counts = {
        "tests": str(len(run.files) + len(run.skipped)),
        "failures": str(tally["fail"]),
        "errors": str(tally["error"]),
        "skipped": str(len(run.skipped)),
        "time": f"{run.seconds:.3f}",
    }
    root = ET.Element("testsuites", {"name": "llmcalc check", **counts})
    suite = ET.SubElement(root, "testsuite", {"name": "llmcalc check", **counts})
    for f in run.files:
        case = ET.SubElement(suite, "testcase", {
            "classname": "llmcalc.verify.check", "name": escape(f.label), "file": escape(f.label),
            "time": f"{f.seconds:.3f}",
        })
        if f.status == "fail":
            failure = ET.SubElement(case, "failure", {"message": escape(f.why), "type": "fail"})
            failure.text = "\n".join(escape(line) for line in _failure_lines(f))
        elif f.status == "error":
            ET.SubElement(case, "error", {"message": escape(f.why), "type": "error"})
    for s in run.skipped:
        case = ET.SubElement(suite, "testcase", {
            "classname": "llmcalc.verify.check", "name": escape(str(s.path)), "file": escape(str(s.path)),
            "time": "0.000",
        })
        ET.SubElement(case, "skipped", {"message": escape(s.why)})
    ET.indent(root)
    return '<?xml version="1.0" encoding="utf-8"?>\n' + ET.tostring(root, encoding="unicode") + "\n"


def _failure_lines(f: FileCheck) -> list[str]:
    """Each failing figure with the line it is written on, and each failing comparison."""
    out = []
    for x in f.figures:
        if not x.ok:
            at = x.at or Location(f.label)
            where = f"{at.file}:{at.line}" if at.line is not None else at.file
            out.append(f"{where}: {figure_message(x)}")
    out += [f"{f.label}: {c.kind} differs: {first_difference(c)}" for c in f.verify if not c.ok]
    return out


# ---- GitLab Code Quality -------------------------------------------------------------------------
# https://docs.gitlab.com/ci/testing/code_quality/ (the report format): a JSON list of issues, each
# with description, check_name, fingerprint, severity and location {path, lines {begin}}.


def check_gitlab(run: CheckRun) -> list[dict[str, Any]]:
    """A Code Quality issue per failing figure or comparison, per file that cannot be read
    (critical: the file is not checked at all) and per skipped file (info)."""
    issues = []

    def issue(check: str, at: Location, severity: str, message: str) -> None:
        key = f"{check}\0{at.file}\0{message}".encode()
        issues.append({
            "description": escape(message),
            "check_name": check,
            "fingerprint": hashlib.sha256(key).hexdigest(),
            "severity": severity,
            "location": {"path": escape(at.file), "lines": {"begin": at.line or 1}},
        })

    for f in run.files:
        if f.status == "error":
            issue("llmcalc-check-error", f.at or Location(f.label), "critical", f.why)
        for x in f.figures:
            if not x.ok:
                issue(f"llmcalc-check-{x.expected.figure}", x.at or Location(f.label), "major",
                      figure_message(x))
        for c in f.verify:
            if not c.ok:
                issue(f"llmcalc-check-verify-{c.kind}", Location(f.label), "major",
                      f"{c.kind} differs: {first_difference(c)}")
    for s in run.skipped:
        issue("llmcalc-check-skipped", Location(str(s.path)), "info", f"skipped: {s.why}")
    return issues
