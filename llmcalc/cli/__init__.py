"""The command line: one module per command, joined on one Typer app here."""

from __future__ import annotations

import typer

from llmcalc.cli import count, list

app = typer.Typer(
    name="llmcalc",
    help="Exact parameter counts, FLOPs and memory of LLMs from their configs.",
    no_args_is_help=True,
    pretty_exceptions_enable=False,
    add_completion=False,
)
app.command("count")(count.count)
app.command("list")(list.list_models)


def main() -> None:
    app()
