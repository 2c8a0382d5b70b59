"""The command line: one module per command, listed in ``COMMANDS`` and joined on one Typer app.

A command's module is imported only when that command runs (``main`` builds an app holding just
it), so ``llmcalc count`` never pays for ``verify``'s or ``train``'s imports. ``app`` is the whole
app, for tests and for ``llmcalc --help``.
"""

from __future__ import annotations

import errno
import importlib
import os
import sys
from collections.abc import Callable, Iterable
from functools import cache
from typing import Annotated, Any, NoReturn

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
    """Help shows what a user types: an argument as its name (MODEL), not with typer's type label
    (MODEL <str>); an option without a metavar as N, X, PATH, a|b|c or its name (--revision
    REVISION), never <int> or <str>."""
    from typer.core import TyperArgument, TyperOption

    if getattr(TyperArgument, "_llmcalc_plain", False):
        return

    def argument_type(self: TyperArgument, ctx: Any) -> str | None:
        return ""

    shown = TyperOption.display_type_rich

    def option_type(self: TyperOption, ctx: Any) -> str | None:
        if self.metavar is not None or self.is_flag:
            return shown(self, ctx)
        desc = self.type_descriptor
        label = shown(self, ctx) or ""
        if desc.is_choice:
            return label.strip("<>")
        by_type: dict[Any, str] = {int: "N", float: "X"}
        if desc.is_path:
            return "PATH"
        inner = next((a for a in getattr(desc.annotation, "__args__", ()) if a is not type(None)),
                     None)
        base = by_type.get(desc.annotation) or by_type.get(inner)
        return base or (self.name or "value").upper()

    TyperArgument.display_type_rich = argument_type  # type: ignore[method-assign,assignment]
    TyperOption.display_type_rich = option_type  # type: ignore[method-assign]
    TyperArgument._llmcalc_plain = True  # type: ignore[attr-defined]


def version_line() -> str:
    """`llmcalc 0.1.0`: the installed distribution's (llmcalc-exact) version."""
    from importlib.metadata import PackageNotFoundError, version

    try:
        return f"llmcalc {version('llmcalc-exact')}"
    except PackageNotFoundError:
        return "llmcalc (version unknown: not installed)"


def _print_version(asked: bool) -> None:
    if asked:
        typer.echo(version_line())
        raise typer.Exit(0)


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
    def root(
        version: Annotated[bool, typer.Option(
            "--version", is_eager=True, callback=_print_version,
            help="Print llmcalc's version and exit.")] = False,
    ) -> None:
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


def cap_integer_options(command: Any) -> None:
    """Every whole-number option (--gpus, --tp, --micro-batch …) at most 2^53 − 1, as the numbers
    typed with suffixes are: refused as a usage error before any work, never an overflow later."""
    from typing import Optional

    from llmcalc.units import MAX_NUMBER

    for sub in [command, *getattr(command, "commands", {}).values()]:
        for param in sub.params:
            desc = getattr(param, "type_descriptor", None)
            info = getattr(desc, "parameter_info", None)
            if desc is None or info is None or desc.annotation not in (int, Optional[int]):  # noqa: UP045
                continue
            if getattr(info, "max", 0) is None:  # typer checks it when it converts the value
                info.max = MAX_NUMBER
                param.max = MAX_NUMBER


def main() -> None:
    """The ``llmcalc`` entry point: usage errors too are one line on stderr, exit code 2."""
    args = sys.argv[1:]
    escape_streams()
    guarded(lambda: _parsed(args))


def escape_streams() -> None:
    """Whatever any command prints goes through one filter: no raw control character from input
    reaches the terminal, even from a code path that forgot to escape it."""
    from llmcalc.limits import EscapingStream

    if not isinstance(sys.stdout, EscapingStream):
        sys.stdout = EscapingStream(sys.stdout)
        sys.stderr = EscapingStream(sys.stderr)


def _parsed(args: list[str]) -> object:
    """The command line parsed by typer and run: the app holds just the command named first."""
    first = args[0] if args else ""
    if first.endswith("-completion"):  # --show-completion / --install-completion [SHELL]
        from llmcalc.cli._complete import shell_completion

        code = shell_completion(args)
        if code is not None:
            return code
    app = build_app([first] if first in COMMANDS else COMMANDS)
    command = typer.main.get_command(app)
    cap_integer_options(command)
    return command.main(args=args, prog_name="llmcalc", standalone_mode=False)


def guarded(call: Callable[[], object]) -> NoReturn:
    """Run a command; whatever goes wrong is one line on stderr and an exit code, never a
    traceback: 2 for the input's fault, 70 for a bug."""
    from llmcalc.limits import one_line, shown

    try:
        code = call()
    except typer.Exit as e:  # an LLMCalcError, already printed as one line; or a verdict
        sys.exit(e.exit_code)
    except typer.TyperException as e:  # click's usage errors: missing argument, bad option …
        if type(e).__name__ == "NoArgsIsHelpError":  # a bare `llmcalc`: the help, as asked
            typer.echo(e.format_message())
            sys.exit(0)
        message = e.format_message()
        if message:
            typer.echo(f"error: {one_line(usage_line(message))}", err=True)
        sys.exit(getattr(e, "exit_code", 2))
    except typer.Abort:
        sys.exit(1)
    except KeyboardInterrupt:
        typer.echo("error: interrupted", err=True)
        sys.exit(130)
    except BrokenPipeError:  # `llmcalc list | head -1`: the reader stopped reading
        reader_gone()
    except OSError as e:
        if e.errno != errno.ENAMETOOLONG:
            internal_error(e)
        # a path longer than the file system takes (a 5,000-character name): the input's fault
        name = str(e.filename or "")
        typer.echo(f"error: {shown(name[:40])}: {len(name):,} characters, longer than a file "
                   "name or path may be", err=True)
        sys.exit(2)
    except (RecursionError, MemoryError) as e:
        # input that slipped past a cap: still one line, and the input's fault (exit 2)
        kind = "nested too deeply" if isinstance(e, RecursionError) else "too large to hold in memory"
        typer.echo(f"error: input {kind} for llmcalc", err=True)
        sys.exit(2)
    except Exception as e:
        internal_error(e)
    sys.exit(code if isinstance(code, int) else 0)


def reader_gone() -> NoReturn:
    """stdout's reader went away (``| head -c 0``): stop quietly, exit 1, as rich and click do
    (Python's "Note on SIGPIPE"): stdout is pointed at /dev/null first, so that the interpreter's
    last flush of what is still buffered does not fail again on its way out."""
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.__stdout__.fileno() if sys.__stdout__ else 1)
    except (OSError, ValueError):  # pragma: no cover - no file descriptor to point elsewhere
        pass
    sys.exit(1)


def internal_error(e: Exception) -> NoReturn:
    """A bug: one line that says so, never a traceback; exit 70."""
    from llmcalc.limits import one_line

    typer.echo(
        f"error: internal error ({type(e).__name__}: {one_line(str(e))[:300]}); "
        "please report it with the command line",
        err=True,
    )
    sys.exit(70)


def usage_line(message: str) -> str:
    """A usage error of click's on one line: its line breaks and tabs ("Choose from:\\n\\tflops,
    \\n\\tmemory") read as spaces, never as escaped \\n; the "Value error, " that typer's
    conversion puts before a bad choice is dropped."""
    return " ".join(message.replace(": Value error, ", ": ").split())


def run() -> None:
    """The ``llmcalc`` entry point. ``llmcalc COMMAND MODEL... [--ctx 128k --json …]`` (models,
    options that take text, flags) calls its command as typer would, skipping what
    typer's parsing builds (:mod:`llmcalc.cli._fast`); `--help` prints the help kept from an
    earlier run; anything else goes to :func:`main`."""
    from llmcalc.cli import _fast

    args = sys.argv[1:]
    if args == ["--version"]:
        print(version_line())
        sys.exit(0)
    completing = "_LLMCALC_COMPLETE" in os.environ
    asks_help = _fast.asks_help(args, COMMANDS) and not completing
    if args and args[0] in COMMANDS and not completing and not asks_help:
        module, function = COMMANDS[args[0]]
        command = getattr(importlib.import_module(f"llmcalc.cli.{module}"), function)
        kwargs = _fast.parse(command, args[1:])
        if kwargs is not None:
            escape_streams()
            guarded(lambda: command(**kwargs))
    if asks_help:  # before the command's module is imported: the kept text is all it needs
        entry = _fast.help_entry(args)
        kept = _fast.kept_help(entry)
        if kept is not None:
            sys.stdout.write(kept)
            sys.exit(0)
        recording = _fast.Recording(sys.stdout)
        sys.stdout = recording
        try:
            main()
        except SystemExit as e:
            if e.code in (0, None):
                _fast.keep_help(entry, "".join(recording.text))
            raise
    main()
