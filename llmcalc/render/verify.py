"""`llmcalc verify` output: llmcalc beside the model by part, the tensors that differ, the time."""

from __future__ import annotations

from typing import Any

from rich.console import Group, RenderableType
from rich.table import Table
from rich.text import Text

from llmcalc.render import figures_table, n
from llmcalc.render.grid import Col, Fig, Grid
from llmcalc.verify.reference import FLOPS_DEPTHS, Comparison, DiffKind, FlopsCheck, TensorDiff

# How many differing tensors of each kind the table view names (JSON lists them all).
SHOWN = 12

DIFF_TITLES: dict[DiffKind, str] = {
    "missing": "missing (llmcalc predicts them, the {side} lacks them)",
    "extra": "extra (the {side} has them, llmcalc does not predict them)",
    "shape": "other shape (llmcalc → {side})",
}
SIDE = {"transformers": "model", "checkpoint": "checkpoint"}


def _shape(shape: tuple[int, ...] | None) -> str:
    return "-" if shape is None else "[" + ", ".join(str(d) for d in shape) + "]"


def _signed(value: int) -> str:
    return "0" if value == 0 else f"{value:+,}"


def parts_table(c: Comparison) -> Table:
    side = SIDE[c.kind]
    t = figures_table(f"{c.model}: llmcalc vs {c.against}", "part", "llmcalc", side,
                      f"difference ({side} − llmcalc)")
    for row in c.rows:
        if row.label == "total":
            t.add_section()
        t.add_row(
            row.label,
            n(row.ours),
            n(row.theirs),
            _signed(row.difference),
            style="bold" if row.label == "total" else None,
        )
    return t


def parts_grid(c: Comparison) -> Grid:
    """The parts side by side; each differing tensor as a note."""
    side = SIDE[c.kind]
    g = Grid(f"{c.model}: llmcalc vs {c.against}", [
        Col("part"), Col("llmcalc", right=True), Col(side, right=True),
        Col(f"difference ({side} − llmcalc)", right=True)])
    for row in c.rows:
        g.add(row.label, row.ours, row.theirs, Fig(_signed(row.difference), row.difference),
              section=row.label == "total", bold=row.label == "total")
    g.notes.extend(f"{d.kind}: {_diff_text(d)}" for d in c.differences)
    return g


def _diff_lines(c: Comparison) -> list[Text]:
    side = SIDE[c.kind]
    lines: list[Text] = []
    for kind, title in DIFF_TITLES.items():
        diffs = c.by_kind(kind)
        if not diffs:
            continue
        lines.append(Text(f"{len(diffs)} {title.format(side=side)}:", style="bold red"))
        for d in diffs[:SHOWN]:
            lines.append(Text(f"  {_diff_text(d)}"))
        if len(diffs) > SHOWN:
            lines.append(Text(f"  … and {len(diffs) - SHOWN} more (--json lists them all)"))
    for m in c.merged:
        if not m.ok:
            lines.append(
                Text(
                    f"experts under {m.prefix}: checkpoint {m.experts} experts, "
                    f"{n(m.theirs)} elements; llmcalc {m.expected_experts} experts, "
                    f"{n(m.ours)} elements",
                    style="bold red",
                )
            )
    return lines


def _diff_text(d: TensorDiff) -> str:
    if d.kind == "shape":
        return f"{d.name}  {_shape(d.ours)} → {_shape(d.theirs)}"
    return f"{d.name}  {_shape(d.ours if d.kind == 'missing' else d.theirs)}"


def verdict(c: Comparison) -> Text:
    side = SIDE[c.kind]
    if c.ok:
        merged = sum(m.stored for m in c.merged)
        extra = f" and {merged} per-expert tensors by total elements" if merged else ""
        if c.unchecked:
            extra += f"; {c.unchecked} more not compared (llmcalc's own, see above)"
        every = "" if c.unchecked else "all "
        return Text(
            f"match: {every}{c.matched} tensors equal in name and shape{extra}; "
            f"{n(c.rows[-1].ours)} parameters",
            style="bold green",
        )
    what = [f"{len(c.differences)} tensors"] if c.differences else []
    experts = sum(1 for m in c.merged if not m.ok)
    if experts:
        what.append(f"{experts} expert groups")
    if not what:
        what.append("the totals")
    return Text(
        f"differs: {' and '.join(what)} differ between llmcalc and the {side}", style="bold red"
    )


def verify_view(c: Comparison) -> RenderableType:
    parts: list[RenderableType] = [parts_table(c), *_diff_lines(c), verdict(c)]
    parts.extend(Text(f"note: {note}", style="dim") for note in c.notes)
    parts.append(Text(f"took {c.seconds:.2f} s", style="dim"))
    return Group(*parts)


def flops_table(f: FlopsCheck) -> Table:
    t = figures_table(
        f"forward FLOPs of one {f.seq_len}-token sequence (full attention, no cache)",
        "layers", "llmcalc", "FlopCounterMode", "difference")
    for depth, ours, measured in zip(FLOPS_DEPTHS, f.ours, f.measured, strict=True):
        t.add_row(str(depth), n(ours), n(measured), _signed(measured - ours))
    t.add_section()
    if f.extrapolated is None:
        t.add_row(f"all {f.num_layers}", n(f.full), "-", "", style="bold")
    else:
        label = f"all {f.num_layers} (measured: extrapolated)"
        t.add_row(label, n(f.full), n(f.extrapolated), _signed(f.extrapolated - f.full),
                  style="bold")
    return t


def flops_view(f: FlopsCheck) -> RenderableType:
    parts: list[RenderableType] = [flops_table(f)]
    if f.extrapolated is None:
        parts.append(Text("note: layers differ by kind, so the measured step from 1 to 2 layers is "
                          "not every layer's; compared at 1 and 2 layers only", style="dim"))
    verdict_text = "FLOPs match" if f.ok else "FLOPs differ"
    parts.append(Text(f"{verdict_text} (took {f.seconds:.2f} s)",
                      style="bold green" if f.ok else "bold red"))
    return Group(*parts)


def flops_json(f: FlopsCheck) -> dict[str, Any]:
    return {
        "seq_len": f.seq_len,
        "match": f.ok,
        "by_depth": [
            {"layers": depth, "llmcalc": ours, "flop_counter": measured}
            for depth, ours, measured in zip(FLOPS_DEPTHS, f.ours, f.measured, strict=True)
        ],
        "full_depth": {"layers": f.num_layers, "llmcalc": f.full, "extrapolated": f.extrapolated},
        "seconds": round(f.seconds, 3),
    }


def verify_json(c: Comparison) -> dict[str, Any]:
    return {
        "model": c.model,
        "against": c.against,
        "kind": c.kind,
        "match": c.ok,
        "parts": [
            {"part": r.label, "llmcalc": r.ours, SIDE[c.kind]: r.theirs, "difference": r.difference}
            for r in c.rows
        ],
        "matched_tensors": c.matched,
        "unchecked_tensors": c.unchecked,
        "differences": [
            {
                "name": d.name,
                "kind": d.kind,
                "llmcalc_shape": None if d.ours is None else list(d.ours),
                f"{SIDE[c.kind]}_shape": None if d.theirs is None else list(d.theirs),
            }
            for d in c.differences
        ],
        "merged_experts": [
            {
                "prefix": m.prefix,
                "experts": m.experts,
                "expected_experts": m.expected_experts,
                "checkpoint_tensors": m.stored,
                "fused_tensors": list(m.fused),
                "llmcalc_elements": m.ours,
                "checkpoint_elements": m.theirs,
                "match": m.ok,
            }
            for m in c.merged
        ],
        "ignored": list(c.ignored),
        "notes": list(c.notes),
        "seconds": round(c.seconds, 3),
    }
