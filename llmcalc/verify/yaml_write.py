"""Writing figures into a YAML file's ``expected:`` block, keeping everything else as it is.

ruamel.yaml reads the file as a round trip (comments, key order, quoting, flow or block style and
indentation kept), the figures are set as exact integers, and the text written is read back with
llmcalc's own loader: unless it holds the same fields as before, with only those figures changed,
nothing is written.
"""

from __future__ import annotations

import io
import os
import re
import tempfile
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from llmcalc.errors import ConfigError
from llmcalc.inputs.files import _parse_yaml, parse_file, read_text

# (figure, value before or None when new, value written)
Change = tuple[str, Any, int]


def write_expected(path: Path, label: str, values: Mapping[str, int]) -> list[Change]:
    """Set each figure of ``values`` under the file's ``expected:`` (made at the end when it has
    none); the file is written only when a figure changes. Returns what changed.

    Where the block is a plain block mapping of numbers, only the characters of those numbers
    change (and new figures are lines added to the block), at the places ruamel.yaml reports;
    otherwise the whole document is written by ruamel.yaml, which keeps comments and order but
    may reflow a flow collection or a plain scalar that spans lines.
    """
    from ruamel.yaml.comments import CommentedMap
    from ruamel.yaml.error import YAMLError
    from ruamel.yaml.util import load_yaml_guess_indent

    text = read_text(path, label)
    try:
        data, indent, block_seq_indent = load_yaml_guess_indent(text)
    except (YAMLError, RecursionError) as e:
        detail = " ".join(str(e).split())
        raise ConfigError(
            label, f"--write-expected: cannot read it as a round trip: {detail}"
        ) from None
    if not isinstance(data, CommentedMap):
        raise ConfigError(label, "--write-expected: the file is not a mapping of fields")
    block = data.get("expected")
    old = block if isinstance(block, CommentedMap) else {}
    changes: list[Change] = [
        (figure, old.get(figure), value)
        for figure, value in values.items()
        if figure not in old or not _is_int(old[figure]) or old[figure] != value
    ]
    if not changes:
        return []
    new = {figure: value for figure, _, value in changes}
    new_text = _splice(text, data, new)
    if new_text is None:
        if not isinstance(block, CommentedMap):
            block = data["expected"] = CommentedMap()
        block.update(new)
        new_text = _dump(data, text, indent, block_seq_indent)
    _same_but_figures(path, label, new_text, values)
    _replace(path, new_text)
    return changes


def _is_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)  # ruamel's ScalarInt too


_TOKEN = re.compile(r"[^\s#,\]}]+")


def _splice(text: str, data: Any, new: Mapping[str, int]) -> str | None:
    """``text`` with only ``new``'s figures written (numbers replaced where they are, new ones
    added as lines at the end of the block); None where the block is not a block mapping of
    plain numbers (ruamel.yaml then writes the document)."""
    from ruamel.yaml.comments import CommentedMap

    newline = "\r\n" if "\r\n" in text else "\n"
    lines = text.splitlines(keepends=True)
    if "expected" not in data:
        if lines and not lines[-1].endswith(("\n", "\r")):
            lines[-1] += newline
        pad = " " * _mapping_indent(text)
        added = [f"expected:{newline}"] + [f"{pad}{k}: {v}{newline}" for k, v in new.items()]
        return "".join(lines + added)
    block = data["expected"]
    if not isinstance(block, CommentedMap) or not block or block.fa.flow_style():
        return None
    for figure, value in new.items():
        if figure not in block:
            continue
        if isinstance(block[figure], (dict, list)):
            return None
        row, col = block.lc.value(figure)
        m = _TOKEN.match(lines[row], col)
        if m is None:
            return None
        lines[row] = lines[row][: m.start()] + str(value) + lines[row][m.end():]
    added = [k for k in new if k not in block]
    if added:
        first = next(iter(block))
        key_row, pad = block.lc.key(first)
        keys = list(data)
        after = keys.index("expected") + 1
        stop = data.lc.key(keys[after])[0] if after < len(keys) else len(lines)
        end = max(
            (i for i in range(data.lc.key("expected")[0] + 1, stop)
             if lines[i].strip() and len(lines[i]) - len(lines[i].lstrip(" ")) >= pad),
            default=key_row,
        )
        if not lines[end].endswith(("\n", "\r")):
            lines[end] += newline
        lines[end + 1:end + 1] = [f"{' ' * pad}{k}: {new[k]}{newline}" for k in added]
    return "".join(lines)


def _dump(data: Any, text: str, indent: int | None, block_seq_indent: int | None) -> str:
    """The whole document written by ruamel.yaml, indented as ``text`` is."""
    from ruamel.yaml import YAML

    yaml = YAML()  # round trip
    yaml.preserve_quotes = True
    yaml.width = 4096  # never fold a long line that was not folded
    mapping = _mapping_indent(text)
    if block_seq_indent is None:  # no block sequence: ruamel's guess is the mapping indent
        yaml.indent(mapping=mapping, sequence=mapping, offset=0)
    else:
        yaml.indent(mapping=mapping, sequence=indent, offset=block_seq_indent)
    out = io.StringIO()
    yaml.dump(data, out)
    new_text = out.getvalue()
    return new_text.replace("\n", "\r\n") if "\r\n" in text else new_text


def _mapping_indent(text: str) -> int:
    """How far a nested mapping is indented under its key (2 where the file has none)."""
    key_only: int | None = None
    for line in text.splitlines():
        body = line.lstrip(" ")
        if not body or body.startswith("#"):
            continue
        column = len(line) - len(body)
        if key_only is not None and column > key_only and not body.startswith("-"):
            return column - key_only
        key_only = column if body.split("#", 1)[0].rstrip().endswith(":") else None
    return 2


def _same_but_figures(path: Path, label: str, new_text: str, values: Mapping[str, int]) -> None:
    """The rewritten text holds the old fields, in order, and the old figures with ``values``."""
    before = parse_file(path, label)
    after = _parse_yaml(new_text, label)
    old_block = before.pop("expected", None) or {}
    new_block = after.pop("expected", None)
    if before != after or list(before) != list(after) or new_block != {**old_block, **values}:
        raise ConfigError(
            label, "--write-expected: the YAML would not read back the same after rewriting "
            "(anchors or tags ruamel.yaml does not keep?); write the expected: block by hand"
        )


def _replace(path: Path, text: str) -> None:
    """Write ``text`` to ``path`` at once (a temporary file beside it, renamed over it)."""
    path = path.resolve()  # a link within a walked folder: write the file it names
    mode = path.stat().st_mode
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "w", encoding="utf-8", newline="") as f:
            f.write(text)
        os.chmod(tmp, mode & 0o7777)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
