"""`--attention` and `--prefill-chunk` for `fit` and `memory`: the prefill's transients."""

from __future__ import annotations

from typing import Annotated, Optional

import typer

from llmcalc.choices import Kernel
from llmcalc.model.spec import ModelSpec

AttentionOpt = Annotated[
    Optional[Kernel],  # noqa: UP045 - typer reads this annotation at run time
    typer.Option("--attention", help="Count the prefill's transients for this attention kernel "
                 "(eager materialises the s × s scores); default: sdpa where the layer kinds are "
                 "modelled (docs/memory-model.md), else none.", show_default=False),
]
PrefillChunkOpt = Annotated[
    Optional[str],  # noqa: UP045
    typer.Option("--prefill-chunk", metavar="TOKENS", help="Chunked prefill: at most this many "
                 "prompt tokens in flight (vLLM's max_num_batched_tokens; 8k = 8,192); default: the whole "
                 "batch of prompts at once, as transformers' generate().", show_default=False),
]


def serving_kernel(spec: ModelSpec, attention: Kernel | None) -> Kernel | None:
    """The kernel whose prefill is counted: the one asked for (refused, in one line, for a layer
    kind that is not modelled), else sdpa where the layer kinds are modelled, else none."""
    from llmcalc.formulas.activations import require_supported
    from llmcalc.formulas.activations import serving_kernel as default_kernel

    if attention is not None:
        require_supported(spec, training=False)
        return attention
    return default_kernel(spec)
