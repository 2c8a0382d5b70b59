"""Start-up without typer's parsing where it is not needed.

Typer builds a pydantic adapter for every parameter before it parses a command line, which costs
more than the rest of a `count|flops|memory` run. Two forms skip it:

- a command line of the plain commands whose options all take text or are flags
  (`flops llama-3-8b --ctx 128k --json`) is read here, from the same typer declarations, and the
  command is called as typer would call it; anything else (a number, a choice, `--help`, an
  unknown option, `--`) goes to typer, which parses it and words its errors;
- `--help` text, which depends only on llmcalc's code, the arguments and the width, is kept in
  llmcalc's cache folder (beside the spec cache) after typer has written it once.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import types
import typing
from collections.abc import Callable
from pathlib import Path
from typing import Any

# what an option does with the text after it: "flag" (bool, none), "text" (str), "texts" (a
# repeatable str option: a list); any other type is typer's to convert
Kind = str


def _options(
    command: Callable[..., Any],
) -> tuple[str, bool, dict[str, tuple[str, Kind, Any]]] | None:
    """The name of the command's one argument (its models), whether it may be left out, and
    each option's spelling → (the
    parameter, its kind, the value a flag's spelling sets); None when the command has a
    parameter this reader does not take (typer then parses every command line)."""
    from typer.models import ArgumentInfo, OptionInfo

    hints = typing.get_type_hints(command, include_extras=True)
    hints.pop("return", None)
    argument = None
    optional = False
    table: dict[str, tuple[str, Kind, Any]] = {}
    for name, hint in hints.items():
        if typing.get_origin(hint) is not typing.Annotated:
            return None
        base, info = typing.get_args(hint)[:2]
        optional_type = typing.get_origin(base) in (typing.Union, types.UnionType)
        inner = [a for a in typing.get_args(base) if a is not type(None)] if optional_type else [base]
        if isinstance(info, ArgumentInfo):
            if argument is not None or inner != [list[str]]:
                return None
            argument = name
            optional = optional_type
            continue
        if not isinstance(info, OptionInfo):
            return None
        decls = [info.default, *(info.param_decls or ())]
        if base is bool:
            for decl in decls:
                on, _, off = str(decl).partition("/")
                table[on] = (name, "flag", True)
                if off:
                    table[off] = (name, "flag", False)
        elif inner == [str] or inner == [list[str]]:
            kind = "text" if inner == [str] else "texts"
            for decl in decls:
                table[str(decl)] = (name, kind, None)
        else:
            for decl in decls:
                table[str(decl)] = (name, "typer", None)
    return (argument, optional, table) if argument is not None else None


def parse(command: Callable[..., Any], args: list[str]) -> dict[str, Any] | None:
    """The keyword arguments typer would call ``command`` with for ``args``, or None when the
    command line needs typer (a number or a choice to convert, --help, an unknown option)."""
    read = _options(command)
    if read is None:
        return None
    argument, optional, table = read
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
        else:
            given[name] = inline
    if not values and not optional:
        return None  # typer says the models are missing
    return {argument: values or None, **given}


# ---- --help --------------------------------------------------------------------------------------


def help_entry(args: list[str]) -> Path | None:
    """Where the help text of ``args`` at this width is kept, or None (cache off)."""
    from llmcalc import speccache

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
