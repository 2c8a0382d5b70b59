"""Start-up without typer's parsing where it is not needed.

Typer builds a pydantic adapter for every parameter before it parses a command line, which costs
more than the rest of a `count|flops|memory` run. Two forms skip it:

- a command line whose options all take text or are flags (`flops llama-3-8b --ctx 128k --json`,
  `fit llama-3-8b --gpu h100`) is read here, from the same typer declarations, and the
  command is called as typer would call it; anything else (a number, a choice, `--help`, an
  unknown option, `--`) goes to typer, which parses it and words its errors;
- `--help` text, which depends only on llmcalc's code, the arguments and the width, is kept in
  llmcalc's cache folder (beside the spec cache) after typer has written it once.
"""

from __future__ import annotations

import hashlib
import os
import re
import shutil
import types
import typing
from collections.abc import Callable
from enum import Enum
from pathlib import Path
from typing import Any

# what an option does with the text after it: "flag" (bool, none), "text" (str), "texts" (a
# repeatable str option: a list), "value" (a number or a choice written plainly); any other
# type, or any other spelling of a number, is typer's to convert
Kind = str


def _options(
    command: Callable[..., Any],
) -> tuple[str | None, bool, bool, dict[str, tuple[str, Kind, Any]]] | None:
    """The name of the command's one argument (its model or models; None: it takes none),
    whether it may be left out, whether it is one value, and each option's spelling → (the
    parameter, its kind, the value a flag's spelling sets); None when the command has a
    parameter this reader does not take (typer then parses every command line)."""
    from typer.models import ArgumentInfo, OptionInfo

    hints = typing.get_type_hints(command, include_extras=True)
    hints.pop("return", None)
    argument = None
    optional = single = False
    table: dict[str, tuple[str, Kind, Any]] = {}
    for name, hint in hints.items():
        if typing.get_origin(hint) is not typing.Annotated:
            return None
        base, info = typing.get_args(hint)[:2]
        optional_type = typing.get_origin(base) in (typing.Union, types.UnionType)
        inner = [a for a in typing.get_args(base) if a is not type(None)] if optional_type else [base]
        if isinstance(info, ArgumentInfo):
            if argument is not None or inner not in ([list[str]], [str]):
                return None
            argument = name
            optional = optional_type
            single = inner == [str]
            continue
        if not isinstance(info, OptionInfo):
            return None
        decls = [info.default, *(info.param_decls or ())]
        if inner == [bool]:
            for decl in decls:
                on, _, off = str(decl).partition("/")
                table[on] = (name, "flag", True)
                if off:
                    table[off] = (name, "flag", False)
        elif inner == [str] or inner == [list[str]]:
            kind = "text" if inner == [str] else "texts"
            for decl in decls:
                table[str(decl)] = (name, kind, None)
        elif inner in ([int], [float]) or (
                len(inner) == 1 and isinstance(inner[0], type) and issubclass(inner[0], Enum)):
            for decl in decls:
                table[str(decl)] = (name, "value", (inner[0], info))
        else:
            for decl in decls:
                table[str(decl)] = (name, "typer", None)
    return argument, optional, single, table


def parse(command: Callable[..., Any], args: list[str]) -> dict[str, Any] | None:
    """The keyword arguments typer would call ``command`` with for ``args``, or None when the
    command line needs typer (a number or a choice to convert, --help, an unknown option)."""
    read = _options(command)
    if read is None:
        return None
    argument, optional, single, table = read
    values: list[str] = []
    given: dict[str, Any] = {}
    i = 0
    while i < len(args):
        token = args[i]
        i += 1
        if not token.startswith("-") or token == "-":
            values.append(token)
            continue
        spelled, eq, inline = token.partition("=")
        name, kind, flag = table.get(spelled, ("", "typer", None))
        if kind == "typer" or (kind == "flag" and eq):
            return None
        if kind == "flag":
            given[name] = flag
            continue
        if not eq:
            if i >= len(args):
                return None  # typer says which value is missing
            inline = args[i]
            i += 1
        if kind == "texts":
            given.setdefault(name, []).append(inline)
        elif kind == "value":
            value = _plain_value(inline, *flag)
            if value is None:
                return None  # typer converts it, or says what is wrong with it
            given[name] = value
        else:
            given[name] = inline
    if argument is None:
        return None if values else given  # typer says what is extra
    if (not values and not optional) or (single and len(values) > 1):
        return None  # typer says what is missing or extra
    if single:
        return {argument: values[0] if values else None, **given}
    return {argument: values or None, **given}


PLAIN_INT = re.compile(r"0|[1-9][0-9]{0,15}")
PLAIN_FLOAT = re.compile(r"(0|[1-9][0-9]{0,15})(\.[0-9]{1,15})?")


def _plain_value(text: str, kind: type, info: Any) -> object | None:
    """A number or a choice written the one way typer can only read as itself (12, 0.9, json),
    within the option's bounds; None for anything else (typer then converts or refuses it)."""
    if issubclass(kind, Enum):
        return next((m for m in kind if m.value == text), None)
    pattern = PLAIN_INT if kind is int else PLAIN_FLOAT
    if not pattern.fullmatch(text):
        return None
    value: float = int(text) if kind is int else float(text)
    low, high = info.min, info.max
    if (low is not None and value < low) or (high is not None and value > high):
        return None
    from llmcalc.units import MAX_NUMBER

    return value if value <= MAX_NUMBER else None


# ---- --help --------------------------------------------------------------------------------------


def help_entry(args: list[str]) -> Path | None:
    """Where the help text of ``args`` at this width is kept, or None (cache off)."""
    from llmcalc.inputs import speccache

    folder = speccache.folder()
    if folder is None:
        return None
    width = f"{shutil.get_terminal_size().columns}:{os.environ.get('COLUMNS', '')}"
    key = hashlib.sha256(speccache.fingerprint() + "\0".join([width, *args]).encode())
    return folder / f"help-{key.hexdigest()[:32]}.txt"


def kept_help(entry: Path | None) -> str | None:
    if entry is None:
        return None
    try:
        return entry.read_text(encoding="utf-8")
    except (OSError, UnicodeError):
        return None


class Recording:
    """stdout as it is, keeping a copy of what is written (the help, to keep)."""

    def __init__(self, stream: Any) -> None:
        self._stream = stream
        self.text: list[str] = []

    def write(self, text: str) -> int:
        self.text.append(text)
        return int(self._stream.write(text))

    def __getattr__(self, name: str) -> Any:
        return getattr(self._stream, name)


def keep_help(entry: Path | None, text: str) -> None:
    if entry is None or not text:
        return
    try:
        entry.parent.mkdir(parents=True, exist_ok=True)
        partial = entry.with_suffix(f".{os.getpid()}.tmp")
        partial.write_text(text, encoding="utf-8")
        os.replace(partial, entry)
    except OSError:
        pass


def asks_help(args: list[str], commands: typing.Container[str]) -> bool:
    """`llmcalc --help` or `llmcalc COMMAND --help`: the forms whose help is kept."""
    return args == ["--help"] or (len(args) == 2 and args[0] in commands and args[1] == "--help")
