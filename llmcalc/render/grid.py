"""One small table model, rendered to a terminal (rich), CSV or Markdown.

A :class:`Grid` holds a title, columns and rows of cells; an ``int`` cell is shown as 1,234 in a
table and written as 1234 in CSV, a :class:`Fig` shows one text and writes another value, anything
else is shown as written. On a terminal, names and numbers are never broken or cut: a column marked
``wrap`` (free text) wraps at spaces, and when even then the table is wider than the terminal the
columns with the highest ``drop`` rank are left out (and the table says which); a compare grid
(one column per model) is split into several tables of as many models as fit.
"""

from __future__ import annotations

import csv
import io
import re
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from typing import Union

from rich.cells import cell_len, chop_cells
from rich.console import Console, ConsoleOptions, Group, RenderableType, RenderResult
from rich.segment import Segment
from rich.text import Text

# A table cell: int (1,234 / 1234), Fig (shown / written), str, or None (empty).
Cell = Union[int, "Fig", str, None]  # noqa: UP007 - a runtime alias


@dataclass(frozen=True)
class Fig:
    """A figure shown one way in a table and written another in CSV: Fig("12.55 GiB", 13476…)."""

    text: str
    value: object


@dataclass(frozen=True)
class Col:
    header: str
    right: bool = False  # numbers: right-aligned
    drop: int = 0  # 0: always shown; on a narrow terminal the highest rank goes first
    wrap: bool = False  # free text that may wrap at spaces; anything else is never broken
    under: int | None = None  # on a narrow terminal: shown on a line of its own in this column


@dataclass
class Grid:
    title: str
    columns: list[Col]
    rows: list[tuple[Cell, ...]] = field(default_factory=list)
    bold: set[int] = field(default_factory=set)  # row indices shown in bold
    sections: set[int] = field(default_factory=set)  # a rule above these rows
    notes: list[str] = field(default_factory=list)  # lines after the table (not in CSV)
    keep: int = 0  # a compare grid (one column per model): leading columns repeated in each part

    def add(self, *cells: Cell, bold: bool = False, section: bool = False) -> None:
        if section:
            self.sections.add(len(self.rows))
        if bold:
            self.bold.add(len(self.rows))
        self.rows.append(cells)


def shown(cell: Cell) -> str:
    if cell is None:
        return ""
    if isinstance(cell, bool):
        return "yes" if cell else "no"
    if isinstance(cell, int):
        return f"{cell:,}"
    if isinstance(cell, Fig):
        return cell.text
    return str(cell)


def written(cell: Cell) -> object:
    if cell is None:
        return ""
    if isinstance(cell, bool):
        return "true" if cell else "false"
    if isinstance(cell, Fig):
        return cell.value
    return cell


# ---- terminal ------------------------------------------------------------------------------------

MIN_WRAP = 8  # a wrapping column keeps at least this many characters
NUMBER = re.compile(r"[+-]?[\d,.]*\d[%]?")


def _natural(grid: Grid, i: int) -> int:
    cells = [shown(r[i]) for r in grid.rows]
    longest = max((cell_len(line) for c in cells for line in c.splitlines() or [""]), default=0)
    return max(longest, cell_len(grid.columns[i].header))


def _least(grid: Grid, i: int) -> int:
    """The narrowest a column may get: its natural width, or for a wrapping column its longest
    word (a name such as meta-llama/Llama-2-7b-hf, a number: never broken) and at least
    MIN_WRAP."""
    if not grid.columns[i].wrap:
        return _natural(grid, i)
    natural = _natural(grid, i)
    unbroken = [cell_len(shown(r[i])) for r in grid.rows if isinstance(r[i], (int, Fig))]
    words = [cell_len(w) for r in grid.rows for w in shown(r[i]).split()]
    least = max([*unbroken, *words, MIN_WRAP])
    return min(natural, least)


def _needed(grid: Grid, keep: list[int]) -> int:
    """Terminal columns a rich table with these columns needs (box edges, padding 1 each side)."""
    return 1 + sum(_least(grid, i) + 3 for i in keep)


def fitting_columns(grid: Grid, width: int) -> list[int]:
    """The columns to show at ``width``: all, less the highest ``drop`` ranks until it fits."""
    keep = list(range(len(grid.columns)))
    droppable = sorted((c.drop, i) for i, c in enumerate(grid.columns) if c.drop)
    while _needed(grid, keep) > width and droppable:
        keep.remove(droppable.pop()[1])
    return keep


def stacked(grid: Grid) -> Grid:
    """The grid with each column that has a place ``under`` another moved there: its text on a
    line of its own below the other's, in one column headed "name / repeats"."""
    hosts = {i: [j for j, c in enumerate(grid.columns) if c.under == i]
             for i, c in enumerate(grid.columns) if c.under is None}
    columns = [replace(grid.columns[i], header=" / ".join(grid.columns[j].header
                                                           for j in [i, *moved]))
               for i, moved in hosts.items()]

    def cell(row: tuple[Cell, ...], i: int) -> Cell:
        if not hosts[i]:
            return row[i]
        return "\n".join(text for j in [i, *hosts[i]] if (text := shown(row[j])))

    rows = [tuple(cell(row, i) for i in hosts) for row in grid.rows]
    return replace(grid, columns=columns, rows=rows)


def to_rich(grid: Grid, width: int) -> RenderableType:
    """The grid as one or more rich tables no wider than ``width`` (never a cut name or number):
    too wide, it stacks the columns that have a place under another, then leaves out columns."""
    if grid.keep and _needed(grid, list(range(len(grid.columns)))) > width:
        return _split(grid, width)
    if any(c.under is not None for c in grid.columns) and _needed(
            grid, list(range(len(grid.columns)))) > width:
        grid = stacked(grid)
    keep = fitting_columns(grid, width)
    parts: list[RenderableType] = [_table(grid, keep, width)]
    left_out = [grid.columns[i].header for i in range(len(grid.columns)) if i not in keep]
    if left_out:
        parts.append(Text(f"({', '.join(left_out)} left out at this width: "
                          "use a wider terminal or --format)", style="dim"))
    parts.extend(Text(note, style="dim") for note in grid.notes)
    return Group(*parts) if len(parts) > 1 else parts[0]


class Fitted:
    """A grid drawn at the width it is given when printed (a console's, or less inside a group)."""

    def __init__(self, grid: Grid) -> None:
        self.grid = grid

    def __rich_console__(self, console: Console, options: ConsoleOptions) -> RenderResult:
        yield to_rich(self.grid, options.max_width)


def _split(grid: Grid, width: int) -> RenderableType:
    """A compare grid too wide for the terminal: the model columns in parts that fit, the
    leading label columns wrapping at spaces so that each part holds as many models as it can."""
    grid = replace(grid, columns=[replace(c, wrap=True) if i < grid.keep else c
                                  for i, c in enumerate(grid.columns)])
    lead = list(range(grid.keep))
    rest = list(range(grid.keep, len(grid.columns)))
    parts: list[RenderableType] = []
    while rest:
        chunk = [rest.pop(0)]
        while rest and _needed(grid, lead + chunk + rest[:1]) <= width:
            chunk.append(rest.pop(0))
        parts.append(_table(grid, lead + chunk, width))
    parts.extend(Text(note, style="dim") for note in grid.notes)
    return Group(*parts)


def _widths(grid: Grid, keep: list[int], width: int) -> dict[int, int]:
    """Each shown column's width: its natural one, the widest wrapping column narrowed a
    character at a time (never below its least) while the table is wider than ``width``."""
    w = {i: _natural(grid, i) for i in keep}
    least = {i: _least(grid, i) for i in keep}
    excess = 1 + sum(w[i] + 3 for i in keep) - width
    while excess > 0:
        slack = [i for i in keep if grid.columns[i].wrap and w[i] > least[i]]
        if not slack:
            break
        widest = max(slack, key=lambda i: w[i])
        w[widest] -= 1
        excess -= 1
    return w


def _table(grid: Grid, keep: list[int], width: int) -> Drawn:
    """The table as rich draws a ``box.HEAVY_HEAD`` table with a left-justified title, drawn
    here line by line at the widths :func:`_widths` chose (rich's own layout of a table costs
    more than the rest of a run of `llmcalc list`)."""
    chosen = _widths(grid, keep, width)
    widths = [chosen[i] for i in keep]
    columns = [grid.columns[i] for i in keep]

    def rule(left: str, line: str, cross: str, right: str) -> str:
        return left + cross.join(line * (w + 2) for w in widths) + right

    def row(cells: list[str], edge: str) -> list[str]:
        wrapped = [_wrap(text, w, right=c.right, wraps=c.wrap)
                   for text, w, c in zip(cells, widths, columns, strict=True)]
        height = max(len(lines) for lines in wrapped)
        return [edge + edge.join(f" {lines[k] if k < len(lines) else ' ' * w} "
                                 for lines, w in zip(wrapped, widths, strict=True)) + edge
                for k in range(height)]

    total = 1 + sum(w + 3 for w in widths)
    lines = [title.ljust(total) for title in _wrap(grid.title, total, right=False, wraps=True)
             ] if grid.title else []
    lines.append(rule("┏", "━", "┳", "┓"))
    lines += row([c.header for c in columns], "┃")
    lines.append(rule("┡", "━", "╇", "┩"))
    for r, cells in enumerate(grid.rows):
        if r in grid.sections and r:
            lines.append(rule("├", "─", "┼", "┤"))
        lines += row([shown(cells[i]) for i in keep], "│")
    lines.append(rule("└", "─", "┴", "┘"))
    return Drawn(lines)


class Drawn:
    """Lines already laid out, printed as they are."""

    def __init__(self, lines: list[str]) -> None:
        self.lines = lines

    def __rich_console__(self, console: Console, options: ConsoleOptions) -> RenderResult:
        for line in self.lines:
            yield Segment(line)
            yield Segment.line()


WORD = re.compile(r"\s*\S+\s*")


def _wrap(text: str, width: int, *, right: bool, wraps: bool) -> list[str]:
    """A cell's lines at ``width``, as rich wraps and justifies a Text (words at spaces, a word
    longer than the line folded), each padded to ``width``."""
    out = []
    for paragraph in text.split("\n"):
        for line in _divide(paragraph, width) if wraps else [paragraph]:
            if right:
                line = line.rstrip()
                out.append(" " * (width - cell_len(line)) + line)
            else:
                if cell_len(line) > width:
                    line = line.rstrip()
                out.append(line + " " * (width - cell_len(line)))
    return out


def _divide(text: str, width: int) -> list[str]:
    """rich's ``divide_line``: the offsets where a greedy wrap at ``width`` breaks ``text``."""
    breaks: list[int] = []
    position = 0
    for match in WORD.finditer(text):
        start, word = match.start(), match.group()
        length = cell_len(word.rstrip())
        if width - position >= length:
            position += cell_len(word)
        elif length > width:
            pieces = chop_cells(word, width)
            for k, piece in enumerate(pieces):
                if start:
                    breaks.append(start)
                if k == len(pieces) - 1:
                    position = cell_len(piece)
                else:
                    start += len(piece)
        elif position and start:
            breaks.append(start)
            position = cell_len(word)
    edges = [0, *breaks, len(text)]
    return [text[a:b] for a, b in zip(edges, edges[1:], strict=False)] or [""]


# ---- CSV and Markdown ----------------------------------------------------------------------------


def to_csv(grid: Grid) -> str:
    """One header row, then one line per row; numbers exact and without separators."""
    out = io.StringIO()
    w = csv.writer(out, lineterminator="\n")
    w.writerow([c.header or f"column {i + 1}" for i, c in enumerate(grid.columns)])
    for row in grid.rows:
        w.writerow([written(cell) for cell in row])
    return out.getvalue()


def _md(text: str) -> str:
    return text.replace("\\", "\\\\").replace("|", "\\|").replace("\n", "<br>")


def to_markdown(grids: Sequence[Grid]) -> str:
    """GitHub-flavoured Markdown: a bold title line, a pipe table, notes as a list."""
    blocks = []
    for grid in grids:
        lines = []
        if grid.title:
            lines += [f"**{_md(grid.title)}**", ""]
        lines.append("| " + " | ".join(_md(c.header) or " " for c in grid.columns) + " |")
        lines.append("|" + "|".join("---:" if c.right else "---" for c in grid.columns) + "|")
        for r, row in enumerate(grid.rows):
            cells = [_md(shown(cell)) for cell in row]
            if r in grid.bold:
                cells = [f"**{c}**" if c else c for c in cells]
            lines.append("| " + " | ".join(cells) + " |")
        if grid.notes:
            lines.append("")
            lines += [f"- {_md(note)}" for note in grid.notes]
        blocks.append("\n".join(lines))
    return "\n\n".join(blocks) + "\n"
