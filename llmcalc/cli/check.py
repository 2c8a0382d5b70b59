"""`llmcalc check [PATHS…]`: hold every config file to its ``expected:`` figures, for CI."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Optional

import typer

from llmcalc.check import check_paths
from llmcalc.cli._common import FormatOpt, JsonOpt, emit, handles_errors, output_format
from llmcalc.render.check import check_grid, check_json


@handles_errors
def check(
    paths: Annotated[
        Optional[list[Path]],  # noqa: UP045 - typer reads this annotation at run time
        typer.Argument(
            help="Config files or folders (walked for *.yaml, *.yml and config.json); "
            "default: the bundled configs.",
            show_default=False,
            metavar="PATH",
        ),
    ] = None,
    verify: Annotated[
        bool,
        typer.Option(
            "--verify",
            help="Also build each model with transformers on the meta device and compare tensor "
            "by tensor (and a config.json's checkpoint, where its folder has one).",
        ),
    ] = False,
    as_json: JsonOpt = False,
    fmt: FormatOpt = None,
) -> None:
    """Validate config files and hold them to their expected: figures; exit 1 if any fails.

    Exit 0 when all pass, 1 when any fails, 2 when a file cannot be read or its expected: block
    is wrong.
    """
    how = output_format(fmt, as_json)
    run = check_paths(paths or (), verify=verify)
    emit(how, data=lambda: check_json(run), grids=lambda: [check_grid(run)])
    if run.exit_code:
        raise typer.Exit(run.exit_code)
