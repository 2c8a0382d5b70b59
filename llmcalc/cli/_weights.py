"""`--dtype` of the commands that size weights (memory, fit, latency, plot): a dtype or a quantized
format, its help built from both tables; apart from the shared options so that the commands
without it do not import the quantized formats' table."""

from __future__ import annotations

from typing import Annotated, Optional

import typer

from llmcalc.cli._common import Format
from llmcalc.cli._options import DTYPES
from llmcalc.formulas.quant import FORMAT_NAMES, LLAMA_QUANTIZE_MORE

# llama-quantize's other types are named once, as a group
QUANT_FORMATS = ", ".join(n for n in FORMAT_NAMES if n not in LLAMA_QUANTIZE_MORE)

DTypeOpt = Annotated[
    Optional[str],  # noqa: UP045 - typer reads this annotation at run time
    typer.Option(
        "--dtype",
        metavar="DTYPE",
        help=f"Weight dtype: {DTYPES} (or bfloat16, float8_e4m3fn …; int4: two a byte, "
        f"no scales), or a quantized format stored with its scales: {QUANT_FORMATS} (group "
        "128; gptq-g64 …), or any other type llama-quantize writes (q5_k_m, q6_k, iq4_xs, "
        "mxfp4_moe …). Default: the config's quantization_config or bf16.",
        show_default=False,
    ),
]


def show_format_notes(how: Format, notes: list[tuple[str, tuple[str, ...]]]) -> None:
    """What each model's weight format leaves wide (:func:`llmcalc.formulas.quant.format_notes`),
    as ``note:`` lines on stderr: a comparison names the model; JSON carries them in ``notes``
    instead."""
    if how is Format.json:
        return
    from llmcalc.cli._common import say, unsaid

    many = len(notes) > 1
    for label, each in notes:  # what the answer's notes already said (CSV, a comparison) stays said
        for note in unsaid(each):
            say("note", f"{label}: {note}" if many else note, note=note)
