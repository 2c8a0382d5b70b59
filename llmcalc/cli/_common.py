"""Options shared by the commands, and the one place where errors become a line on stderr."""

from __future__ import annotations

import contextvars
import functools
from collections.abc import Callable, Iterable, Sequence
from enum import Enum
from pathlib import Path
from typing import Annotated, Optional, ParamSpec, TypeVar

import typer

from llmcalc.cli._complete import complete_model
from llmcalc.errors import LLMCalcError, UsageError
from llmcalc.limits import escape_output, one_line
from llmcalc.model.spec import ModelSpec, image_cross_tokens
from llmcalc.render import console, dumps
from llmcalc.render.grid import Grid, to_csv, to_markdown, to_rich

P = ParamSpec("P")
R = TypeVar("R")

ModelArg = Annotated[
    str,
    typer.Argument(
        help="A config.json, a checkpoint folder holding one, a YAML or .gguf file, a bundled "
        "model name (gpt2-medium), an Ollama name (llama3.1:8b) or a Hugging Face repo id "
        "(org/name), from the local Hugging Face cache or, config.json only, the Hub.",
        show_default=False,
        metavar="MODEL",
        autocompletion=complete_model,
    ),
]
ModelsArg = Annotated[
    list[str],
    typer.Argument(
        help="One or more models to compare: bundled names (gpt2-medium), repo ids (org/name), "
        "config.json, YAML or .gguf files, checkpoint folders, Ollama names (llama3.1:8b).",
        show_default=False,
        metavar="MODEL",
        autocompletion=complete_model,
    ),
]
CatalogModelsArg = Annotated[
    Optional[list[str]],  # noqa: UP045 - typer reads this annotation at run time
    typer.Argument(
        help="Models to compare: bundled names, repo ids, config, YAML or .gguf files, "
        "Ollama names. Without one: one row per bundled model.",
        show_default=False,
        metavar="MODEL",
        autocompletion=complete_model,
    ),
]
SetOpt = Annotated[
    Optional[list[str]],  # noqa: UP045 - typer reads this annotation at run time
    typer.Option("--set", metavar="KEY=VALUE",
        help="Change a config field before counting, e.g. --set num_hidden_layers=48 (repeatable).",
        show_default=False,
    ),
]
PartOpt = Annotated[
    Optional[str],  # noqa: UP045 - typer reads this annotation at run time
    typer.Option("--part", metavar="PART",
        help="Of a whole model, one part alone: language, vision or projector (a vision–language "
        "model; audio and audio_projector where it hears speech), encoder or decoder (an "
        "encoder–decoder); count --json lists them under parts.",
        show_default=False,
    ),
]
FamilyOpt = Annotated[
    Optional[str],  # noqa: UP045
    typer.Option("--family", metavar="FAMILY",
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
JsonOpt = Annotated[
    bool, typer.Option("--json", help="Print JSON for scripts (short for --format json).")
]
ExplainOpt = Annotated[
    bool, typer.Option("--explain", help="Print each formula with this model's numbers put in.")
]


_STRICT: contextvars.ContextVar[bool] = contextvars.ContextVar("strict", default=False)
# what this command has already said on stderr (a warning), so that a format printing the notes
# of its answer there (CSV, Markdown) does not say it twice
_SAID: contextvars.ContextVar[tuple[str, ...]] = contextvars.ContextVar("said", default=())


def say(kind: str, text: str, *, note: str | None = None) -> None:
    """One ``warning:`` (or ``note:``) line on stderr, remembered for this command (as ``note``,
    the answer's own words, where ``text`` puts a model's name before them)."""
    typer.echo(f"{kind}: {text}", err=True)
    _SAID.set((*_SAID.get(), text if note is None else note))


def unsaid(notes: Iterable[str]) -> list[str]:
    """Those of ``notes`` this command has not said yet, each once."""
    said = set(_SAID.get())
    return [note for note in dict.fromkeys(notes) if note not in said]


def set_strict(value: bool) -> None:
    """``--strict`` for this run: each command that takes it sets it first (typer's callbacks
    are skipped by the fast path, :mod:`llmcalc.cli._fast`)."""
    _STRICT.set(value)


StrictOpt = Annotated[
    bool,
    typer.Option(
        "--strict",
        help="Refuse (exit 2) a figure resting on an assumption.",
    ),
]


def refuse_assumed(notes: Iterable[str], what: str) -> None:
    """Under ``--strict``, the first note that says a figure rests on an assumption is an error."""
    if not _STRICT.get():
        return
    from llmcalc.inputs.config import is_assumed

    for note in notes:
        if is_assumed(note):
            raise UsageError(f"--strict: {what}: {note}")


def _notes_in(obj: object) -> Iterable[str]:
    """Every string under a ``notes`` key of a command's JSON."""
    if isinstance(obj, dict):
        for key, value in obj.items():
            if key == "notes" and isinstance(value, (list, tuple)):
                yield from (v for v in value if isinstance(v, str))
            else:
                yield from _notes_in(value)
    elif isinstance(obj, (list, tuple)):
        for value in obj:
            yield from _notes_in(value)


def handles_errors(func: Callable[P, R]) -> Callable[P, R]:
    """Turn an :class:`LLMCalcError` into one line on stderr and its exit code; no traceback."""

    @functools.wraps(func)
    def wrapper(*args: P.args, **kwargs: P.kwargs) -> R:
        token = _STRICT.set(False)  # each command sets its own --strict
        said = _SAID.set(())
        try:
            return func(*args, **kwargs)
        except LLMCalcError as e:
            typer.echo(f"error: {one_line(str(e))}", err=True)
            raise typer.Exit(e.exit_code) from None
        finally:
            _STRICT.reset(token)
            _SAID.reset(said)

    return wrapper


def spec_for(
    model: str,
    overrides: list[str] | None,
    family: str | None = None,
    revision: str | None = None,
    trust_remote_code: bool = False,
) -> ModelSpec:
    """The validated spec; a bundled model as it is (no --set, no --family, no --revision) from the
    spec cache, so that pydantic's validators load only when a spec is built. Fields that
    ``--family`` leaves unread are also warned about on stderr; a bundled model's such notes are
    its answer's only, so that a command says the same whether the cache held its spec or not
    (``fit``'s list of every bundled model said them only on a cold cache)."""

    def validate(warn: bool = True) -> ModelSpec:
        from llmcalc.inputs.config import SIBLING_NOTE, UNMODELLED_NOTE, load_spec

        spec = load_spec(
            model,
            overrides=overrides or (),
            family=family,
            revision=revision,
            trust_remote_code=trust_remote_code,
        )
        for note in spec.notes:
            if (warn and note.startswith(("--family ", UNMODELLED_NOTE, SIBLING_NOTE))
                    and not _STRICT.get()):
                say("warning", note)
        return spec

    if overrides or family is not None or revision is not None:
        spec = validate()
    else:
        from llmcalc.inputs import speccache

        spec = speccache.load(model, lambda: validate(warn=speccache.bundled_file(model) is None))
    refuse_assumed(spec.notes, model)
    return spec


def bundled_specs() -> list[tuple[str, ModelSpec]]:
    """Every bundled config (file name, spec), from the spec cache where it can."""
    from llmcalc.inputs import bundled, speccache

    def validate(path: Path) -> Callable[[], ModelSpec]:
        def run() -> ModelSpec:
            from llmcalc.inputs.config import load_spec

            return load_spec(path.stem)  # by its bundled name, as a user types it

        return run

    return [(p.stem, speccache.load_file(p, validate(p))) for p in bundled.paths()]


def forward_specs() -> tuple[list[tuple[str, ModelSpec]], list[str]]:
    """The bundled configs whose forward pass is modelled (the FLOPs and memory catalogs), and the
    names of those left out (ModelSpec.forward_unmodelled), for the table's note."""
    specs = bundled_specs()
    return ([(stem, spec) for stem, spec in specs if not spec.forward_unmodelled],
            [stem for stem, spec in specs if spec.forward_unmodelled])


def specs_for(
    models: list[str],
    overrides: list[str] | None,
    family: str | None = None,
    revision: str | None = None,
    trust_remote_code: bool = False,
    part: str | None = None,
) -> list[tuple[str, ModelSpec]]:
    """Each model as typed, with its validated spec (--set, --family, --revision, --part apply to
    every one)."""
    specs = [(m, spec_for(m, overrides, family, revision, trust_remote_code)) for m in models]
    return specs if part is None else [(m, of_part(spec, part)) for m, spec in specs]


def image_specs_for(
    models: list[str],
    overrides: list[str] | None,
    family: str | None,
    revision: str | None,
    trust_remote_code: bool,
    *,
    image_size: int | None,
) -> list[tuple[str, ModelSpec]]:
    """:func:`specs_for` (whole models) for a command that takes --image-size: a model that takes
    no images is one usage error (exit 2) that says so; --part then goes to :func:`parts_of`."""
    specs = [(m, spec_for(m, overrides, family, revision, trust_remote_code)) for m in models]
    if image_size is None:
        return specs
    for _, spec in specs:
        if not any(p.input == "image" for p in spec.parts):
            raise UsageError(f"--image-size: {spec.name} takes no images")
    from llmcalc.cli._options import image_size_override

    sized = image_size_override(image_size, overrides)
    return [(m, spec_for(m, sized, family, revision, trust_remote_code)) for m in models]


def parts_of(
    specs: list[tuple[str, ModelSpec]], part: str | None, *, images: int
) -> list[tuple[str, ModelSpec]]:
    """--part on each spec; with --images, a part that takes none is one usage error."""
    if part is None:
        return specs
    out = [(m, of_part(spec, part)) for m, spec in specs]
    if images:
        from llmcalc.formulas.flops import image_tokens

        for _, spec in out:
            if not image_tokens(spec):
                raise UsageError(f"--images {images}: --part {part} takes no images"
                                 + _part_image_hint(spec))
    return out


def _part_image_hint(spec: ModelSpec) -> str:
    """A language model that reads images only through cross-attention layers (Llama 3.2 Vision)
    takes their tokens alone as --source-len; any other part, --images on the whole model."""
    if any(g.attention is None and g.cross_attention is not None for g in spec.layer_groups):
        return " (--source-len N: the vision tokens its cross-attention layers read)"
    return " (--images counts images for the whole model)"


def of_part(spec: ModelSpec, part: str) -> ModelSpec:
    """``--part NAME``: one part of a whole model, or a usage error naming the parts it has."""
    from llmcalc.model.spec import spec_part

    if not spec.parts:
        raise UsageError(f"--part {part}: {spec.name} is one model, without parts")
    try:
        return spec_part(spec, part)
    except KeyError:
        raise UsageError(
            f"--part {part}: {spec.name} has the parts {', '.join(spec.part_names)}"
        ) from None


def takes_text(spec: ModelSpec, command: str) -> ModelSpec:
    """A command that sizes text tokens only refuses a model whose language model reads images
    through cross-attention (Llama 3.2 Vision): with or without an image, its FLOPs and cache
    differ, and only ``flops`` and ``memory`` take ``--images``."""
    if image_cross_tokens(spec):
        raise UsageError(
            f"{command}: {spec.name} reads images through cross-attention, which {command} does "
            "not size yet; use `llmcalc flops|memory MODEL --images N`"
        )
    return spec


def one_model(models: list[str], option: str) -> None:
    """Options that show one model in detail refuse a comparison."""
    if len(models) > 1:
        raise UsageError(f"{option} shows one model; give one MODEL, not {len(models)}")


def print_json(obj: object) -> None:
    refuse_assumed(_notes_in(obj), "the output")
    typer.echo(dumps(obj))


NOTE_PREFIXES = ("note: ", "warning: ")


def split_notes(renderable: object) -> tuple[object | None, list[object]]:
    """(what stays on stdout, the ``note:``/``warning:`` lines in it): notes go to stderr, as
    pip, cargo and ruff print theirs, so that stdout is the table alone."""
    from rich.console import Group
    from rich.text import Text

    if isinstance(renderable, Text) and renderable.plain.startswith(NOTE_PREFIXES):
        return None, [renderable]
    if isinstance(renderable, Group):
        kept: list[object] = []
        notes: list[object] = []
        for r in renderable.renderables:
            k, more = split_notes(r)
            notes += more
            if k is not None:
                kept.append(k)
        return (Group(*kept) if kept else None), notes  # type: ignore[arg-type]
    return renderable, []


def show(*renderables: object) -> None:
    out = console()
    notes: list[object] = []
    for r in renderables:
        kept, more = split_notes(r)
        notes += more
        if kept is not None:
            out.print(never_cut(kept))
    if notes:
        err = console(stderr=True)
        for note in notes:
            err.print(note)


def never_cut(renderable: object) -> object:
    """A rich table's numbers (right-aligned columns) never break and text wraps instead of
    ending in '…': nothing a table shows is cut, whatever the terminal's width."""
    from rich.console import Group
    from rich.table import Table

    if isinstance(renderable, Group):
        for r in renderable.renderables:
            never_cut(r)
    elif isinstance(renderable, Table):
        for column in renderable.columns:
            if column.justify == "right":
                column.no_wrap = True
            else:
                column.overflow = "fold"
    return renderable


class Format(str, Enum):
    """What a command prints: a table for people, or JSON, CSV or Markdown to paste or parse."""

    table = "table"
    json = "json"
    csv = "csv"
    markdown = "markdown"


FormatOpt = Annotated[
    Optional[Format],  # noqa: UP045
    typer.Option(
        "--format",
        help="table (default), json (as --json), csv (one header row) or markdown "
        "(a table to paste into an issue or model card).",
        show_default=False,
        metavar="FORMAT",
    ),
]


def output_format(fmt: Format | None, as_json: bool) -> Format:
    """--format, with --json as its short form; the two must not disagree."""
    if as_json and fmt not in (None, Format.json):
        raise UsageError(f"--json and --format {fmt.value if fmt else ''} cannot be combined")
    return Format.json if as_json else (fmt or Format.table)


def refuse_explain(explain: bool, fmt: Format) -> None:
    """``--explain`` prints lines beside the table; other formats have no place for them."""
    if explain and fmt is not Format.table:
        what = "--json" if fmt is Format.json else f"--format {fmt.value}"
        raise UsageError(f"--explain and {what} cannot be combined")


def emit(
    fmt: Format,
    *,
    data: Callable[[], object],
    grids: Callable[[], list[Grid]],
    view: Callable[[], object] | None = None,
    labels: Sequence[str] | None = None,
) -> None:
    """Print in the chosen format: JSON from ``data``, CSV/Markdown from ``grids``, the table from
    ``view`` (or the grids themselves, fitted to the terminal's width)."""
    if _STRICT.get() and fmt is not Format.json:  # (print_json checks its own)
        refuse_assumed(_notes_in(data()), "the output")
    if fmt is Format.json:
        print_json(data())
    elif fmt is Format.csv:
        tables = grids()
        if len(tables) != 1:
            raise UsageError("--format csv: this output has several tables; use --format markdown")
        typer.echo(escape_output(to_csv(tables[0])), nl=False)
        say_notes(data(), labels)
    elif fmt is Format.markdown:
        typer.echo(escape_output(to_markdown(grids())), nl=False)
        say_notes(data(), labels)
    elif view is not None:
        show(view())
    else:
        show_grids(grids())
        answer = data()
        if isinstance(answer, list):  # a comparison: each model's notes, named
            say_notes(answer, labels)


def say_notes(answer: object, labels: Sequence[str] | None = None) -> None:
    """The notes of a command's answer (its JSON's ``notes``) on stderr, for an output whose stdout
    is data alone (CSV, Markdown, a comparison's table), as one model's table says them there:
    none is lost, none said twice; in a comparison each names its model (``labels``: as typed,
    the columns' names; else the answer's ``model``)."""
    if not isinstance(answer, list):
        for note in unsaid(_notes_in(answer)):
            say("note", note)
        return
    for i, item in enumerate(answer):
        label = labels[i] if labels is not None and i < len(labels) else (
            item.get("model") if isinstance(item, dict) else None)
        for note in unsaid(_notes_in(item)):
            say("note", f"{label}: {note}" if isinstance(label, str) else note, note=note)


def show_grids(grids: list[Grid]) -> None:
    show(*(to_rich(g, console().width) for g in grids))
