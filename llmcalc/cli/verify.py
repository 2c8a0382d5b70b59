"""`llmcalc verify MODEL`: llmcalc's tensors against the transformers model or a real checkpoint."""

from __future__ import annotations

import time
from enum import Enum
from pathlib import Path
from typing import Annotated

import typer
from rich.console import Group

from llmcalc.cli._common import (
    FamilyOpt,
    FormatOpt,
    JsonOpt,
    ModelArg,
    RevisionOpt,
    SetOpt,
    emit,
    handles_errors,
    output_format,
    spec_for,
)
from llmcalc.errors import UsageError
from llmcalc.inputs import hub
from llmcalc.inputs.safetensors_index import has_safetensors
from llmcalc.render.verify import flops_json, flops_view, parts_grid, verify_json, verify_view
from llmcalc.verify.reference import (
    FLOPS_SEQ_LEN,
    compare_checkpoint,
    verify_checkpoint,
    verify_flops,
    verify_transformers,
)


class Against(str, Enum):
    auto = "auto"
    transformers = "transformers"
    checkpoint = "checkpoint"


@handles_errors
def verify(
    model: ModelArg,
    set_: SetOpt = None,
    family: FamilyOpt = None,
    revision: RevisionOpt = None,
    against: Annotated[
        Against,
        typer.Option("--against", metavar="auto|transformers|checkpoint",
            help="What to compare with: the transformers model built on the meta device, the "
            "checkpoint's safetensors headers (a folder's, or a Hub repo's read with range "
            "requests), or auto (the checkpoint when MODEL is a folder with *.safetensors files "
            "or a Hugging Face repo id, else transformers).",
        ),
    ] = Against.auto,
    trust_remote_code: Annotated[
        bool,
        typer.Option(
            "--trust-remote-code",
            help="Let transformers run code from the config's repository (off by default).",
        ),
    ] = False,
    flops: Annotated[
        bool,
        typer.Option(
            "--flops",
            help="Also count a forward pass with torch's FlopCounterMode on copies cut to 1 and 2 "
            f"layers (random weights, CPU, {FLOPS_SEQ_LEN} tokens) and compare with llmcalc's "
            "full-attention forward FLOPs, extrapolated to full depth.",
        ),
    ] = False,
    as_json: JsonOpt = False,
    fmt: FormatOpt = None,
) -> None:
    """Compare llmcalc's named tensors with the real model, tensor by tensor; exit 1 on a difference.

    Builds the transformers model from the same config on the meta device (no weights, no network),
    or, for a checkpoint folder, reads the tensor names and shapes from its safetensors headers
    (no weights loaded, no torch needed).
    """
    how = output_format(fmt, as_json)
    spec = spec_for(model, set_, family, revision, trust_remote_code)  # a bad name fails first
    folder = Path(model)
    stored = has_safetensors(folder)
    if against is Against.checkpoint and not stored and not hub.looks_like_repo_id(model):
        raise UsageError(f"--against checkpoint: {model} is not a folder with *.safetensors files")
    origin = spec.origin
    if origin is not None and origin.source == "sibling":  # the base against itself proves nothing
        raise UsageError(f"{model}: its own config.json could not be read, and verifying its base "
                         f"model's bundled config {origin.path} in its place proves nothing about "
                         "it; pass its config.json or checkpoint folder, or run with network")
    remote = origin is not None and origin.source in ("cache", "hub") and origin.repo_id is not None
    if remote and against is not Against.transformers:
        assert origin is not None and origin.repo_id is not None
        start = time.perf_counter()
        ckpt = hub.read_checkpoint(origin.repo_id, origin.revision)
        where = f"{spec.name} on the Hub (safetensors headers)"
        comparison = compare_checkpoint(spec, ckpt, where=where, start=start)
    elif against is Against.checkpoint and not stored:
        raise UsageError(f"--against checkpoint: {model} is not a folder with *.safetensors files")
    elif against is Against.checkpoint or (against is Against.auto and stored):
        comparison = verify_checkpoint(spec, folder)
    else:
        comparison = verify_transformers(spec, trust_remote_code=trust_remote_code)
    flops_check = verify_flops(spec) if flops else None
    def data() -> object:
        d = verify_json(comparison)
        if flops_check is not None:
            d["flops"] = flops_json(flops_check)
        return d

    def view() -> object:
        if flops_check is None:
            return verify_view(comparison)
        return Group(verify_view(comparison), flops_view(flops_check))

    emit(how, data=data, grids=lambda: [parts_grid(comparison)], view=view)
    if not comparison.ok or (flops_check is not None and not flops_check.ok):
        raise typer.Exit(1)
