"""`llmcalc check [PATHS…]`: hold every config file to its ``expected:`` figures, for CI."""

from __future__ import annotations

from collections.abc import Callable
from enum import Enum
from typing import Annotated, Optional

import typer

from llmcalc.cli._common import Format, JsonOpt, emit, handles_errors, output_format
from llmcalc.errors import UsageError
from llmcalc.limits import escape_output
from llmcalc.render import dumps
from llmcalc.render.check import check_github, check_gitlab, check_grid, check_json, check_junit
from llmcalc.verify.check import CheckRun, check_paths


class CheckFormat(str, Enum):
    """check's formats: the shared ones, and those CI systems read."""

    table = "table"
    json = "json"
    csv = "csv"
    markdown = "markdown"
    github = "github"
    junit = "junit"
    gitlab = "gitlab"


# The formats CI systems read, each a function of the run to the text printed.
def _gitlab(run: CheckRun) -> str:
    return dumps(check_gitlab(run)) + "\n"


CI_FORMATS: dict[CheckFormat, Callable[[CheckRun], str]] = {
    CheckFormat.github: check_github,
    CheckFormat.junit: check_junit,
    CheckFormat.gitlab: _gitlab,
}


@handles_errors
def check(
    paths: Annotated[
        Optional[list[str]],  # noqa: UP045 - typer reads this annotation at run time
        typer.Argument(
            help="Config files or folders (walked for *.yaml, *.yml and config.json), bundled "
            "names or Hugging Face repo ids; default: the bundled configs.",
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
    changed: Annotated[
        Optional[str],  # noqa: UP045
        typer.Option(
            "--changed",
            metavar="BASE",
            help="Only the files changed against this git base (e.g. origin/main), for a pull "
            "request; none changed is a pass.",
            show_default=False,
        ),
    ] = None,
    write_expected: Annotated[
        bool,
        typer.Option(
            "--write-expected",
            help="Write each file's computed figures into its expected: block (exact integers; "
            "comments and order kept), then check; a config.json's live in the llmcalc.yaml "
            "beside it.",
        ),
    ] = False,
    as_json: JsonOpt = False,
    strict: Annotated[
        bool,
        typer.Option(
            "--strict",
            help="A file whose figures rest on an assumption (a field not modelled, a class "
            "default taken) is an error (exit 2).",
        ),
    ] = False,
    fmt: Annotated[
        Optional[CheckFormat],  # noqa: UP045
        typer.Option(
            "--format",
            help="table (default), json (as --json), csv, markdown, github (annotations on the "
            "line of each failing figure), junit (JUnit XML) or gitlab (Code Quality JSON).",
            show_default=False,
            metavar="FORMAT",
        ),
    ] = None,
) -> None:
    """Validate config files and hold them to their expected: figures; exit 1 if any fails.

    Exit 0 when all pass, 1 when any fails, 2 when a file cannot be read or its expected: block
    is wrong.
    """
    ci = CI_FORMATS.get(fmt) if fmt is not None else None
    if ci is not None and as_json:
        raise UsageError(f"--json and --format {fmt.value if fmt else ''} cannot be combined")
    how = output_format(None if fmt is None or ci else Format(fmt.value), as_json)
    run = check_paths(paths or (), verify=verify, changed=changed, write_expected=write_expected,
                       strict=strict)
    if ci is not None:
        typer.echo(escape_output(ci(run)), nl=False)
    else:
        emit(how, data=lambda: check_json(run), grids=lambda: [check_grid(run)])
    if run.exit_code:
        raise typer.Exit(run.exit_code)
