"""Options shared by the commands, and the one place where errors become a line on stderr."""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Annotated, Optional, ParamSpec, TypeVar

import typer

from llmcalc.config import load_spec
from llmcalc.errors import LLMCalcError
from llmcalc.render import console, dumps
from llmcalc.spec import ModelSpec

P = ParamSpec("P")
R = TypeVar("R")

ModelArg = Annotated[
    str,
    typer.Argument(
        help="A config.json, a checkpoint folder holding one, a YAML file, a bundled model name "
        "(gpt2-medium, meta-llama/Llama-2-7b-hf), or a Hugging Face repo id (org/name), read from "
        "the local Hugging Face cache or, config.json only, from the Hub.",
        show_default=False,
    ),
]
SetOpt = Annotated[
    Optional[list[str]],  # noqa: UP045 - typer reads this annotation at run time
    typer.Option(
        "--set",
        help="Change a config field before counting, e.g. --set num_hidden_layers=48 (repeatable).",
        show_default=False,
    ),
]
FamilyOpt = Annotated[
    Optional[str],  # noqa: UP045
    typer.Option(
        "--family",
        help="Count a config of an unsupported model_type as this known family (e.g. llama).",
        show_default=False,
    ),
]
RevisionOpt = Annotated[
    Optional[str],  # noqa: UP045
    typer.Option(
        "--revision",
        help="For a Hugging Face repo id: the branch, tag or commit to read (default main).",
        show_default=False,
    ),
]
TrustRemoteCodeOpt = Annotated[
    bool,
    typer.Option(
        "--trust-remote-code",
        help="Let transformers run code from the model's repository (off by default).",
    ),
]
JsonOpt = Annotated[bool, typer.Option("--json", help="Print one JSON object for scripts.")]
ExplainOpt = Annotated[
    bool, typer.Option("--explain", help="Print each formula with this model's numbers put in.")
]


def handles_errors(func: Callable[P, R]) -> Callable[P, R]:
    """Turn an :class:`LLMCalcError` into one line on stderr and its exit code; no traceback."""

    @functools.wraps(func)
    def wrapper(*args: P.args, **kwargs: P.kwargs) -> R:
        try:
            return func(*args, **kwargs)
        except LLMCalcError as e:
            typer.echo(f"error: {e}", err=True)
            raise typer.Exit(e.exit_code) from None

    return wrapper


def spec_for(
    model: str,
    overrides: list[str] | None,
    family: str | None = None,
    revision: str | None = None,
    trust_remote_code: bool = False,
) -> ModelSpec:
    spec = load_spec(
        model,
        overrides=overrides or (),
        family=family,
        revision=revision,
        trust_remote_code=trust_remote_code,
    )
    for note in spec.notes:  # fields --family leaves unread: a warning, not only a note
        if note.startswith("--family "):
            typer.echo(f"warning: {note}", err=True)
    return spec


def print_json(obj: object) -> None:
    typer.echo(dumps(obj))


def show(*renderables: object) -> None:
    out = console()
    for r in renderables:
        out.print(r)
