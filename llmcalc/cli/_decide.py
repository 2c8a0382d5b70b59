"""Yes/no answers of ``fit`` and ``train`` for people and CI: the exit code when a plan does not
fit, the options that would make it fit, ``--tp``/``--pp`` for serving, a context beyond the
model's window. The figures come from the planning functions; this layer only decides and words.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Annotated, Any, Optional

import typer

from llmcalc.errors import UsageError
from llmcalc.render import n

if TYPE_CHECKING:  # train needs neither planning's serving fit nor the spec module here
    from llmcalc.model.spec import ModelSpec
    from llmcalc.planning.serving import ServingFit

NOT_FIT = 1  # the exit code of a plan that does not fit (0: it fits; 2: a usage error)

FailIfNotFitOpt = Annotated[
    bool,
    typer.Option("--fail-if-not-fit",
                 help="Exit 1 when the plan does not fit (for CI)."),
]
ServeTpOpt = Annotated[
    Optional[int],  # noqa: UP045 - typer reads this annotation at run time
    typer.Option("--tp", metavar="N", min=1, show_default=False,
                 help="Tensor-parallel degree for serving: weights and KV heads split over N "
                 "GPUs (N must divide the KV heads); with --pp, uses tp × pp GPUs."),
]
ServePpOpt = Annotated[
    Optional[int],  # noqa: UP045
    typer.Option("--pp", metavar="N", min=1, show_default=False,
                 help="Pipeline-parallel degree for serving: the layers in N equal stages "
                 "(N must divide the layers)."),
]


def serving_gpus(spec: ModelSpec, *, gpus: int, tp: int | None, pp: int | None) -> int:
    """The GPUs a serving plan splits over: --gpus, or --tp × --pp where the split is even, as
    ``fit`` sizes it (weights and cache divided by the GPU count); an uneven split is refused."""
    if tp is None and pp is None:
        return gpus
    t, p = tp or 1, pp or 1
    if gpus not in (1, t * p):
        raise UsageError(f"--gpus {gpus} with --tp {t} --pp {p}: those use tp × pp = {t * p} "
                         "GPUs; give --gpus or --tp/--pp")
    groups = [g for g in spec.layer_groups if g.attention is not None]
    if t > 1 and any(g.attention.kv_latent_dim for g in groups if g.attention):
        raise UsageError(f"--tp {t}: {spec.name} caches one latent per token (MLA), which tensor "
                         "parallelism keeps whole on every GPU; fit sizes even splits only "
                         "(use --pp, or --gpus for the even-split estimate)")
    kv_heads = sorted({g.attention.kv_heads for g in groups if g.attention})
    if t > 1 and any(h % t for h in kv_heads):
        shown = "/".join(str(h) for h in kv_heads)
        raise UsageError(f"--tp {t}: {spec.name}'s {shown} KV heads do not split evenly over "
                         f"{t} GPUs (engines then repeat them); use a --tp that divides them")
    if p > 1 and spec.num_layers % p:
        raise UsageError(f"--pp {p}: {spec.name}'s {spec.num_layers} layers do not split into "
                         f"{p} equal stages; use a --pp that divides them")
    return t * p


def beyond_window(spec: ModelSpec, ctx: int | None) -> str | None:
    """--ctx beyond max_position_embeddings: sized as asked, but said (stderr, or --json's notes)."""
    limit = spec.shape.max_position_embeddings
    if ctx is not None and limit and ctx > limit:
        return (f"--ctx {n(ctx)} is more than {spec.name}'s max_position_embeddings "
                f"({n(limit)}); the memory is sized as asked, but the model was not made for "
                "that context")
    return None


def warn_beyond_window(spec: ModelSpec, ctx: int | None) -> None:
    """:func:`beyond_window` as a warning line on stderr."""
    from llmcalc.cli._common import say

    warning = beyond_window(spec, ctx)
    if warning:
        say("warning", warning)


# A change that may make a plan fit: the flags as typed, and the keyword arguments they set.
Change = tuple[str, dict[str, Any]]


def smallest_change(choices: Sequence[Sequence[Change]],
                    fits: Callable[[dict[str, Any]], bool]) -> str | None:
    """The fewest options (one change from each of some of ``choices``, earlier lists and
    earlier changes first) with which ``fits`` holds, as flags; None when none does."""
    for size in range(1, len(choices) + 1):
        for picked in itertools.combinations(choices, size):
            for combo in itertools.product(*picked):
                kwargs: dict[str, Any] = {}
                for _, kw in combo:
                    kwargs.update(kw)
                if fits(kwargs):
                    return " ".join(flag for flag, _ in combo)
    return None


def training_changes(*, gpus: int, tp: int, pp: int, zero: int, recompute: str,
                     flash_attention: bool, heads: int) -> list[list[Change]]:
    """What `train` may change, lightest first: FlashAttention, recomputation, a ZeRO stage,
    tensor parallelism within a node (dividing the GPUs and ``heads``, the largest degree that
    divides every attention and KV head count: 0 where nothing splits)."""
    out: list[list[Change]] = []
    if not flash_attention:
        out.append([("--flash-attention", {"flash_attention": True})])
    steps = ["selective", "full"]
    later = steps[steps.index(recompute) + 1:] if recompute in steps else steps
    if later:
        out.append([(f"--recompute {r}", {"recompute": r}) for r in later])
    if zero < 3:
        out.append([(f"--zero {z}", {"zero": z}) for z in range(zero + 1, 4)])
    tps = [t for t in (2, 4, 8) if t > tp and not gpus % (t * pp) and not heads % t]
    if tps:
        out.append([(f"--tp {t}", {"tp": t}) for t in tps])
    return out


def say_change(change: str | None, *, fits: bool) -> None:
    """The line under a plan that does not fit: what would make it fit, or that nothing here
    would."""
    if fits:
        return
    if change is None:
        typer.echo("to fit: no change of --flash-attention, --recompute, --zero or --tp (up to 8) "
                   "fits; more GPUs (--pp, --gpus), a shorter --ctx or a smaller --micro-batch")
    else:
        typer.echo(f"to fit: {change}")


def asked_fits(f: ServingFit, batch: int | None) -> bool:
    """Whether the serving question fits: with --batch and --ctx, that batch at that context
    (``f`` holds the largest batch at the context); else whether anything fits at all."""
    if f.solve_for == "batch" and batch is not None:
        return f.batch is not None and f.batch >= batch
    return f.fits


def fewest_gpus(fits_on: Callable[[int], bool], *, start: int, limit: int = 1 << 20) -> int | None:
    """The fewest GPUs (more than ``start``) on which ``fits_on`` holds: doubling, then halving
    the gap (fits_on is monotone: more GPUs never fit less); None up to ``limit``."""
    hi = start * 2
    while not fits_on(hi):
        if hi >= limit:
            return None
        hi *= 2
    lo = hi // 2  # does not fit
    while hi - lo > 1:
        mid = (lo + hi) // 2
        lo, hi = (lo, mid) if fits_on(mid) else (mid, hi)
    return hi


def say_serving(label: str, f: ServingFit, *, batch: int | None, yes: bool,
                gpus_needed: Callable[[], int | None]) -> None:
    """The answer line under a serving fit: yes/no for --batch with --ctx, and what fits."""
    who = f"{label}: " if label else ""
    if f.solve_for == "batch" and batch is not None and f.ctx is not None:
        largest = f"the largest batch is {n(f.batch)}" if f.batch else "not one sequence fits"
        verdict = "fits" if yes else "does not fit"
        typer.echo(f"{who}batch {n(batch)} at context {n(f.ctx)}: {verdict} ({largest})")
    if not yes:
        g = gpus_needed()
        typer.echo(f"{who}to fit: --gpus {g}" if g else
                   f"{who}to fit: no number of these GPUs holds the weights and that cache")
