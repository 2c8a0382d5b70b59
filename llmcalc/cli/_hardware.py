"""Options that pick an accelerator and its memory headroom, shared by ``train``, ``fit``, ``mfu``."""

from __future__ import annotations

from typing import Annotated, Optional

import typer

from llmcalc.planning.hardware import ACCELERATORS

GpuOpt = Annotated[
    Optional[str],  # noqa: UP045 - typer reads this annotation at run time
    typer.Option("--gpu", metavar="GPU",
        help=f"Accelerator from the table ({len(ACCELERATORS)} cards: data-centre, workstation, "
        "consumer, Apple silicon), e.g. h100; an unknown name lists them, or names the card "
        "--gpu-mem etc. describe.",
        show_default=False,
    ),
]
GpuMemOpt = Annotated[
    Optional[str],  # noqa: UP045
    typer.Option("--gpu-mem", metavar="SIZE",
        help="Memory per GPU, e.g. 80GiB (binary) or 80GB (decimal); replaces --gpu's.",
        show_default=False,
    ),
]
GpuFlopsOpt = Annotated[
    Optional[str],  # noqa: UP045
    typer.Option("--gpu-flops", metavar="FLOPS",
        help="Dense bf16 peak per GPU, e.g. 989T; replaces --gpu's.",
        show_default=False,
    ),
]
GpuBandwidthOpt = Annotated[
    Optional[str],  # noqa: UP045
    typer.Option("--gpu-bandwidth", metavar="RATE",
        help="Memory bandwidth per GPU, e.g. 3.35TB/s; replaces --gpu's.",
        show_default=False,
    ),
]
GpusOpt = Annotated[int, typer.Option("--gpus", metavar="N", help="Number of GPUs.")]
HeadroomOpt = Annotated[
    float,
    typer.Option("--headroom", metavar="FRACTION",
        help="Share of each GPU's memory left free for the runtime and allocator slack "
        "(fit: activations too), e.g. 0.1.",
    ),
]
