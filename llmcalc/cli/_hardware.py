"""Options that pick an accelerator, shared by ``train``, ``fit`` and ``mfu``."""

from __future__ import annotations

from typing import Annotated, Optional

import typer

GpuOpt = Annotated[
    Optional[str],  # noqa: UP045 - typer reads this annotation at run time
    typer.Option(
        "--gpu",
        help="Accelerator from the built-in table: a100-40gb, a100-80gb, h100, h200, b200, "
        "mi300x, rtx4090, l4, t4.",
        show_default=False,
    ),
]
GpuMemOpt = Annotated[
    Optional[str],  # noqa: UP045
    typer.Option(
        "--gpu-mem",
        help="Memory per GPU, e.g. 80GiB (binary) or 80GB (decimal); replaces --gpu's.",
        show_default=False,
    ),
]
GpuFlopsOpt = Annotated[
    Optional[str],  # noqa: UP045
    typer.Option(
        "--gpu-flops",
        help="Dense bf16 peak per GPU, e.g. 989T; replaces --gpu's.",
        show_default=False,
    ),
]
GpuBandwidthOpt = Annotated[
    Optional[str],  # noqa: UP045
    typer.Option(
        "--gpu-bandwidth",
        help="Memory bandwidth per GPU, e.g. 3.35TB/s; replaces --gpu's.",
        show_default=False,
    ),
]
GpusOpt = Annotated[int, typer.Option("--gpus", help="Number of GPUs.")]
