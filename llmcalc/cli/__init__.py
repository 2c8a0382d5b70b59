"""The command line: one module per command, listed in ``COMMANDS`` and joined on one Typer app.

A command's module is imported only when that command runs (``main`` builds an app holding just
it), so ``llmcalc count`` never pays for ``verify``'s or ``train``'s imports. ``app`` is the whole
app, for tests and for ``llmcalc --help``.
"""

from __future__ import annotations

import importlib
import sys
from collections.abc import Iterable
from functools import cache
from typing import Any

import typer

# command name → (module under llmcalc/cli/, function)
COMMANDS: dict[str, tuple[str, str]] = {
    "count": ("count", "count"),
    "list": ("list", "list_models"),
    "flops": ("flops", "flops"),
    "memory": ("memory", "memory"),
    "verify": ("verify", "verify"),
    "check": ("check", "check"),
    "train": ("train", "train"),
    "fit": ("fit", "fit"),
    "mfu": ("mfu", "mfu"),
    "serve": ("serve", "serve"),
    "plot": ("plot", "plot"),
    "latency": ("latency", "latency"),
}

HELP = "Exact parameter counts, FLOPs and memory of LLMs from their configs."


def _argument_type_as_typed() -> None:
    """Help shows an argument as its metavar (MODEL), not with typer's type label (MODEL <str>)."""
    from typer.core import TyperArgument

    if getattr(TyperArgument, "_llmcalc_plain", False):
        return
    shown = TyperArgument.display_type_rich

    def display_type_rich(self: TyperArgument, ctx: Any) -> str | None:
        return "" if self.metavar else shown(self, ctx)

    TyperArgument.display_type_rich = display_type_rich  # type: ignore[method-assign,assignment]
    TyperArgument._llmcalc_plain = True  # type: ignore[attr-defined]


def build_app(names: Iterable[str] = COMMANDS) -> typer.Typer:
    """A Typer app with the named commands (all of them by default)."""
    app = typer.Typer(
        name="llmcalc",
        help=HELP,
        no_args_is_help=True,
        pretty_exceptions_enable=False,
        add_completion=True,  # --install-completion / --show-completion, as typer offers
        rich_markup_mode=None,  # plain help: readable at 80 columns, metavars as typed
    )

    _argument_type_as_typed()

    @app.callback()
    def root() -> None:
        pass

    for name in names:
        module, function = COMMANDS[name]
        app.command(name)(getattr(importlib.import_module(f"llmcalc.cli.{module}"), function))
    return app


@cache
def _full_app() -> typer.Typer:
    return build_app()


def __getattr__(name: str) -> Any:
    if name == "app":
        return _full_app()
    raise AttributeError(name)


def main() -> None:
    """The ``llmcalc`` entry point: usage errors too are one line on stderr, exit code 2."""
    from llmcalc.limits import EscapingStream, one_line

    # Whatever any command prints goes through one filter: no raw control character from input
    # reaches the terminal, even from a code path that forgot to escape it.
    sys.stdout = EscapingStream(sys.stdout)
    sys.stderr = EscapingStream(sys.stderr)
    first = sys.argv[1] if len(sys.argv) > 1 else ""
    try:
        app = build_app([first] if first in COMMANDS else COMMANDS)
        code = app(standalone_mode=False)
    except typer.TyperException as e:  # click's usage errors: missing argument, bad option …
        message = e.format_message()
        if message:  # empty when the help was shown for a bare `llmcalc`
            typer.echo(f"error: {one_line(message)}", err=True)
        sys.exit(getattr(e, "exit_code", 2))
    except typer.Abort:
        sys.exit(1)
    except KeyboardInterrupt:
        typer.echo("error: interrupted", err=True)
        sys.exit(130)
    except (RecursionError, MemoryError) as e:
        # input that slipped past a cap: still one line, and the input's fault (exit 2)
        kind = "nested too deeply" if isinstance(e, RecursionError) else "too large to hold in memory"
        typer.echo(f"error: input {kind} for llmcalc", err=True)
        sys.exit(2)
    except Exception as e:  # a bug: one line that says so, never a traceback
        typer.echo(
            f"error: internal error ({type(e).__name__}: {one_line(str(e))[:300]}); "
            "please report it with the command line",
            err=True,
        )
        sys.exit(70)
    sys.exit(code if isinstance(code, int) else 0)


# Commands that a plain `llmcalc COMMAND MODEL...` (no option at all) runs without typer's parsing.
PLAIN = ("count", "flops", "memory")


def run() -> None:
    """The ``llmcalc`` entry point. A plain ``llmcalc count|flops|memory MODEL...`` (models only,
    no option) calls its command with the models and every option at its default, skipping what
    typer's parsing builds for options that were not given; anything else goes to :func:`main`."""
    args = sys.argv[1:]
    if len(args) >= 2 and args[0] in PLAIN and not any(a.startswith("-") for a in args[1:]):
        module, function = COMMANDS[args[0]]
        command = getattr(importlib.import_module(f"llmcalc.cli.{module}"), function)
        try:
            command(args[1:])
        except typer.Exit as e:  # an LLMCalcError, already printed as one line
            sys.exit(e.exit_code)
        sys.exit(0)
    main()
