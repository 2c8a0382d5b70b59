"""Blocks of state-space layers, shared by every family that has them: the Mamba and Mamba-2 mixers
(their tensors and the :class:`Mixer` that says what state they keep) and layer groups whose kinds
mix attention, SSM mixers and MLPs.

Shapes as transformers builds them (``MambaMixer``, ``Mamba2Mixer`` and their copies in the hybrid
models): ``nn.Conv1d(C, C, k, groups=C)`` is a depthwise causal convolution, weight [C, 1, k] (+ bias
[C]); A_log, D, dt_bias are per channel (Mamba) or per head (Mamba-2). Sources: Gu & Dao 2023
(Mamba, Alg. 2), Dao & Gu 2024 (Mamba-2, §7 "Mamba-2 architecture").
"""

from __future__ import annotations

from collections.abc import Callable
from collections.abc import Sequence
from dataclasses import replace

from llmcalc.families._base import LayerPlan
from llmcalc.families._base import linear
from llmcalc.families._base import norm
from llmcalc.families._base import require
from llmcalc.model.spec import GATED_DELTA
from llmcalc.model.spec import LAYER
from llmcalc.model.spec import MAMBA
from llmcalc.model.spec import MAMBA2
from llmcalc.model.spec import RG_LRU
from llmcalc.model.spec import SHORT_CONV
from llmcalc.model.spec import Attention
from llmcalc.model.spec import LayerGroup
from llmcalc.model.spec import LayerSet
from llmcalc.model.spec import Mixer
from llmcalc.model.spec import Run
from llmcalc.model.spec import Tensor

COMPONENT = "mamba"


def depthwise_conv(name: str, component: str, channels: int, kernel: int, *, bias: bool) -> list[Tensor]:
    """nn.Conv1d(C, C, k, groups=C): weight [C, 1, k] (+ bias [C]); a convolution, not a matmul:
    its FLOPs are the mixer's (flops.conv_flops_per_token)."""
    ts = [Tensor(f"{name}.weight", (channels, 1, kernel), component)]
    if bias:
        ts.append(Tensor(f"{name}.bias", (channels,), component))
    return ts


def mamba_mixer(
    p: str,
    d: int,
    *,
    d_inner: int,
    state: int,
    conv_kernel: int,
    dt_rank: int,
    bias: bool,
    conv_bias: bool,
    component: str = COMPONENT,
) -> tuple[list[Tensor], Mixer]:
    """Mamba (selective scan): in_proj 2·d_inner × d (x and the gate z), depthwise conv over d_inner,
    x_proj (dt_rank + 2N) × d_inner (Δ, B, C), dt_proj d_inner × dt_rank (+ bias), A_log d_inner × N,
    D [d_inner], out_proj d × d_inner. State: d_inner channels × N; conv: d_inner × k."""
    c = component
    tensors = [
        Tensor(f"{p}.A_log", (d_inner, state), f"{c}/A_log"),
        Tensor(f"{p}.D", (d_inner,), f"{c}/D"),
        *depthwise_conv(f"{p}.conv1d", f"{c}/conv1d", d_inner, conv_kernel, bias=conv_bias),
        *linear(f"{p}.in_proj", f"{c}/in_proj", 2 * d_inner, d, bias=bias),
        *linear(f"{p}.x_proj", f"{c}/x_proj", dt_rank + 2 * state, d_inner, bias=False),
        *linear(f"{p}.dt_proj", f"{c}/dt_proj", d_inner, dt_rank, bias=True),
        *linear(f"{p}.out_proj", f"{c}/out_proj", d, d_inner, bias=bias),
    ]
    mixer = Mixer(MAMBA, conv_dim=d_inner, conv_kernel=conv_kernel, heads=d_inner, head_dim=1,
                  state_size=state)
    return tensors, mixer


def multihead_mamba_mixer(
    p: str,
    d: int,
    *,
    d_inner: int,
    heads: int,
    state: int,
    conv_kernel: int,
    dt_rank: int,
    bias: bool,
    conv_bias: bool,
    component: str = COMPONENT,
) -> tuple[list[Tensor], Mixer]:
    """Zamba's Mamba (transformers ``ZambaMambaMixer``): :func:`mamba_mixer` with d_inner split
    into H heads of hd = d_inner / H, each with its own Δ, B, C and Δ projections, held as bare
    parameters: x_proj_weight [H, dt_rank + 2N, hd], dt_proj_weight [H, hd, dt_rank] (both
    multiplied by, as batched matmuls: the same FLOPs as one x_proj, dt_proj), dt_proj_bias, D
    [H, hd], A_log [H, hd, N]. State and scan as Mamba's: d_inner channels × N; conv d_inner × k."""
    c, hd = component, d_inner // heads
    tensors = [
        Tensor(f"{p}.x_proj_weight", (heads, dt_rank + 2 * state, hd), f"{c}/x_proj", matmul=True),
        Tensor(f"{p}.dt_proj_weight", (heads, hd, dt_rank), f"{c}/dt_proj", matmul=True),
        Tensor(f"{p}.dt_proj_bias", (heads, hd), f"{c}/dt_proj"),
        Tensor(f"{p}.A_log", (heads, hd, state), f"{c}/A_log"),
        Tensor(f"{p}.D", (heads, hd), f"{c}/D"),
        *depthwise_conv(f"{p}.conv1d", f"{c}/conv1d", d_inner, conv_kernel, bias=conv_bias),
        *linear(f"{p}.in_proj", f"{c}/in_proj", 2 * d_inner, d, bias=bias),
        *linear(f"{p}.out_proj", f"{c}/out_proj", d, d_inner, bias=bias),
    ]
    mixer = Mixer(MAMBA, conv_dim=d_inner, conv_kernel=conv_kernel, heads=d_inner, head_dim=1,
                  state_size=state)
    return tensors, mixer


def shared_block(tensors: Sequence[Tensor], *, stored_at: int) -> list[Tensor]:
    """A block that several layers apply but the model stores once (Zamba's shared transformer
    blocks): its tensors as every other layer lists them, tied to those of layer ``stored_at``.
    Counted once, there; multiplied by (FLOPs) and, for attention, cached (KV) at every layer."""
    return [replace(t, tied_to=t.name.replace(LAYER, str(stored_at))) for t in tensors]


def mamba2_head_dim(
    head_dim: int | str, *, d_inner: int, heads: int, groups: int, inner_field: str,
    prefix: str = "mamba_",
) -> int:
    """The IBM/TII hybrids' ``{prefix}d_head``: as given, or "auto" = d_inner / heads; then checked
    as :func:`check_mamba2` checks it (field names ``{prefix}n_heads``, ``{prefix}n_groups``)."""
    if not isinstance(head_dim, int):
        require(head_dim == "auto", f"{prefix}d_head",
                f"expected a positive integer or 'auto', got {head_dim!r}")
        head_dim = d_inner // heads
    check_mamba2(d_inner=d_inner, heads=heads, head_dim=head_dim, groups=groups,
                 inner_field=inner_field, heads_field=f"{prefix}n_heads",
                 groups_field=f"{prefix}n_groups")
    return head_dim


def check_mamba2(
    *, d_inner: int, heads: int, head_dim: int, groups: int, inner_field: str, heads_field: str,
    groups_field: str, groups_divide: bool = True,
) -> None:
    """Mamba-2's heads tile the inner width, and the B/C groups divide the heads (unless
    ``groups_divide`` is false: a family whose model builds either way, its forward refused)."""
    require(
        heads * head_dim == d_inner,
        heads_field,
        f"{heads_field} × head_dim ({heads} × {head_dim}) must equal the inner width "
        f"{inner_field} ({d_inner})",
    )
    require(not groups_divide or heads % groups == 0, groups_field,
            f"{groups_field} ({groups}) must divide {heads_field} ({heads})")


def mamba2_mixer(
    p: str,
    d: int,
    *,
    d_inner: int,
    heads: int,
    head_dim: int,
    groups: int,
    state: int,
    conv_kernel: int,
    chunk: int,
    bias: bool,
    conv_bias: bool,
    gated_norm: bool = True,
    out_bias: bool | None = None,
    component: str = COMPONENT,
) -> tuple[list[Tensor], Mixer]:
    """Mamba-2 (SSD): in_proj (2·d_inner + 2·G·N + h) × d (z, x, B, C, dt), depthwise conv over
    conv_dim = d_inner + 2·G·N, dt_bias, A_log, D per head, a gated RMSNorm [d_inner], out_proj
    d × d_inner (``out_bias``: its bias where it differs from in_proj's, as in Falcon-H1). State:
    h heads × p × N; conv: conv_dim × k."""
    c = component
    conv_dim = d_inner + 2 * groups * state
    tensors = [
        Tensor(f"{p}.dt_bias", (heads,), f"{c}/dt_bias"),
        Tensor(f"{p}.A_log", (heads,), f"{c}/A_log"),
        Tensor(f"{p}.D", (heads,), f"{c}/D"),
        *depthwise_conv(f"{p}.conv1d", f"{c}/conv1d", conv_dim, conv_kernel, bias=conv_bias),
        *linear(f"{p}.in_proj", f"{c}/in_proj", d_inner + conv_dim + heads, d, bias=bias),
        *(norm(f"{p}.norm", f"{c}/norm", d_inner, bias=False) if gated_norm else []),
        *linear(f"{p}.out_proj", f"{c}/out_proj", d, d_inner,
                bias=bias if out_bias is None else out_bias),
    ]
    mixer = Mixer(MAMBA2, conv_dim=conv_dim, conv_kernel=conv_kernel, heads=heads,
                  head_dim=head_dim, state_size=state, chunk=chunk)
    return tensors, mixer


# The gated DeltaNet's input projections as each family names them: (name, rows) with kd = hk·dk,
# vd = hv·dv, hv the value heads; then its norm's and output projection's names.
GDN_LAYOUTS: dict[str, tuple[tuple[tuple[str, str], ...], str, str]] = {
    # Qwen3-Next: q, k, v and the gate z fused; β and the decay a fused
    "qwen3_next": ((("in_proj_qkvz", "2kd+2vd"), ("in_proj_ba", "2hv")), "norm", "out_proj"),
    # Qwen3.5: the same, split
    "qwen3_5": ((("in_proj_qkv", "2kd+vd"), ("in_proj_z", "vd"), ("in_proj_b", "hv"),
                 ("in_proj_a", "hv")), "norm", "out_proj"),
    # OLMo-Hybrid: one projection each
    "olmo_hybrid": ((("q_proj", "kd"), ("k_proj", "kd"), ("v_proj", "vd"), ("a_proj", "hv"),
                     ("b_proj", "hv"), ("g_proj", "vd")), "o_norm", "o_proj"),
}


def gated_delta_net(
    p: str, d: int, *, key_heads: int, value_heads: int, key_dim: int, value_dim: int,
    kernel: int, chunk: int = 64, layout: str = "qwen3_next",
) -> tuple[list[Tensor], Mixer]:
    """The gated DeltaNet (Yang et al. 2024) as Qwen3-Next, Qwen3.5 and OLMo-Hybrid build it:
    projections of q, k (hk·dk each), v and the output gate (hv·dv each), β and the decay (hv
    each), named per ``GDN_LAYOUTS``; a depthwise conv (no bias) over q, k, v = 2·hk·dk + hv·dv
    channels; dt_bias and A_log [hv]; a gated RMSNorm over dv; the output projection d × hv·dv.
    State: hv heads × dk × dv (float32); conv: its channels × kernel."""
    kd, vd, hv = key_heads * key_dim, value_heads * value_dim, value_heads
    rows = {"2kd+2vd": 2 * kd + 2 * vd, "2hv": 2 * hv, "2kd+vd": 2 * kd + vd, "vd": vd,
            "hv": hv, "kd": kd}
    projections, norm_name, out_name = GDN_LAYOUTS[layout]
    conv_dim = 2 * kd + vd
    c = "linear_attn"
    tensors = [
        Tensor(f"{p}.dt_bias", (hv,), f"{c}/dt_bias"),
        Tensor(f"{p}.A_log", (hv,), f"{c}/A_log"),
        *depthwise_conv(f"{p}.conv1d", f"{c}/conv1d", conv_dim, kernel, bias=False),
        *(t for name, n in projections
          for t in linear(f"{p}.{name}", f"{c}/{name}", rows[n], d, bias=False)),
        *norm(f"{p}.{norm_name}", f"{c}/{norm_name}", value_dim, bias=False),
        *linear(f"{p}.{out_name}", f"{c}/{out_name}", d, vd, bias=False),
    ]
    mixer = Mixer(GATED_DELTA, conv_dim=conv_dim, conv_kernel=kernel, heads=hv,
                  head_dim=value_dim, state_size=key_dim, chunk=chunk)
    return tensors, mixer


def short_conv(
    p: str, d: int, *, kernel: int, bias: bool, component: str = "conv"
) -> tuple[list[Tensor], Mixer]:
    """LFM2's gated short convolution: in_proj 3d × d (B, C, x), depthwise conv over d with
    ``kernel`` taps, out_proj d × d. State: the conv's last ``kernel`` inputs per channel, nothing
    else (no SSM)."""
    tensors = [
        *depthwise_conv(f"{p}.conv", f"{component}/conv", d, kernel, bias=bias),
        *linear(f"{p}.in_proj", f"{component}/in_proj", 3 * d, d, bias=bias),
        *linear(f"{p}.out_proj", f"{component}/out_proj", d, d, bias=bias),
    ]
    return tensors, Mixer(SHORT_CONV, conv_dim=d, conv_kernel=kernel, heads=0, head_dim=0,
                          state_size=0)


def rg_lru_block(
    p: str, d: int, *, width: int, heads: int, kernel: int
) -> tuple[list[Tensor], Mixer]:
    """Griffin's recurrent block (De et al. 2024, §2.4; transformers RecurrentGemmaRecurrentBlock):
    linear_y, linear_x [w, d] (+ bias), a depthwise conv over w (+ bias), the RG-LRU — a_param [w]
    (``recurrent_param``), input and recurrence gates block-diagonal over H heads of w / H,
    weights [H, w/H, w/H] (batched matmuls: weight FLOPs) + biases [H, w/H] — and linear_out
    [d, w] (+ bias). State: w channels of one fp32 value; conv: w × (kernel − 1)."""
    bw = width // heads
    g = f"{p}.rg_lru"
    tensors = [
        *linear(f"{p}.linear_y", "recurrent/linear_y", width, d, bias=True),
        *linear(f"{p}.linear_x", "recurrent/linear_x", width, d, bias=True),
        *depthwise_conv(f"{p}.conv_1d", "recurrent/conv_1d", width, kernel, bias=True),
        Tensor(f"{g}.recurrent_param", (width,), "recurrent/rg_lru"),
        *(t for gate in ("input_gate", "recurrent_gate") for t in (
            Tensor(f"{g}.{gate}_weight", (heads, bw, bw), f"recurrent/{gate}", matmul=True),
            Tensor(f"{g}.{gate}_bias", (heads, bw), f"recurrent/{gate}"))),
        *linear(f"{p}.linear_out", "recurrent/linear_out", d, width, bias=True),
    ]
    return tensors, Mixer(RG_LRU, conv_dim=width, conv_kernel=kernel, heads=width, head_dim=1,
                          state_size=1)


LayerBuild = tuple[Sequence[Tensor], Attention | None, Mixer | None]


def mixed_layers(plan: LayerPlan, build: Callable[[str], LayerBuild]) -> tuple[LayerGroup, ...]:
    """One group per kind of ``plan`` (attention, Mamba, MoE or dense MLP …), built by
    ``build(kind)`` → (tensors, attention or None, mixer or None)."""
    groups = []
    for kind, layers in plan.items():
        tensors, attention, mixer = build(kind)
        groups.append(LayerGroup(kind, layers, tuple(tensors), attention, mixer))
    return tuple(groups)


# A layer pattern that repeats every ``period`` layers is described by one run per residue; a period
# longer than this (from hostile or mistaken input) is refused rather than walked.
MAX_PERIOD = 1 << 16


def residue_plan(
    num_layers: int, period: int, kind_of: Callable[[int], str], *, field: str
) -> LayerPlan:
    """Layer i's kind is ``kind_of(i mod period)`` (Jamba's attention and expert periods): one run per
    stretch of residues of one kind, repeating every ``period`` layers. The work is the residues
    below min(period, num_layers): a pattern longer than the model is only its first layers."""
    require(
        min(period, num_layers) <= MAX_PERIOD,
        field,
        f"the layer pattern repeats every {period:,} layers; llmcalc describes at most "
        f"{MAX_PERIOD:,}",
    )
    runs: dict[str, list[Run]] = {}
    r, last = 0, min(period, num_layers)
    while r < last:
        kind, width = kind_of(r), 1
        while r + width < last and kind_of(r + width) == kind:
            width += 1
        runs.setdefault(kind, []).append(Run(r, num_layers, r, period, width))
        r += width
    return {kind: LayerSet(tuple(rs)) for kind, rs in runs.items()}
