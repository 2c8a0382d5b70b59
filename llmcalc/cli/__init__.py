"""The command line: one module per command, joined on one Typer app here."""

from __future__ import annotations

import typer

from llmcalc.cli import check, count, list, verify
from llmcalc.cli import fit, mfu, train
from llmcalc.cli import flops, memory

app = typer.Typer(
    name="llmcalc",
    help="Exact parameter counts, FLOPs and memory of LLMs from their configs.",
    no_args_is_help=True,
    pretty_exceptions_enable=False,
    add_completion=False,
)
app.command("count")(count.count)
app.command("list")(list.list_models)
app.command("verify")(verify.verify)
app.command("check")(check.check)
app.command("train")(train.train)
app.command("fit")(fit.fit)
app.command("mfu")(mfu.mfu)
app.command("flops")(flops.flops)
app.command("memory")(memory.memory)


def main() -> None:
    app()
