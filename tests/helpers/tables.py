"""The rows of a table the CLI draws (rich's box characters), read back as text."""

from __future__ import annotations


def expected_rows(text: str) -> tuple[str, list[list[str]]]:
    """`latency --engine`'s expected table in ``text``: its title and each row's cells, a cell
    wrapped at the terminal's width joined back into one."""
    tail = text[text.index("expected on "):]
    rows: list[list[str]] = []
    for line in tail.splitlines():
        if not line.startswith("│ "):
            continue
        cells = [c.strip() for c in line.strip()[1:-1].split("│")]
        if cells[0] or not rows:
            rows.append(cells)
        else:  # a wrapped cell: its words go on in the row's next line
            rows[-1] = [f"{a} {b}".strip() for a, b in zip(rows[-1], cells, strict=True)]
    return tail.splitlines()[0].strip(), rows
