"""MobileNetV5 (Google 2025, Gemma 3n's vision encoder), as a :class:`Part` of a whole model.

transformers builds it through ``TimmWrapperModel`` → ``timm.create_model("mobilenetv5_300m_enc")``
(timm/models/mobilenetv5.py, _efficientnet_blocks.py); the config names only the architecture, so
the blocks are this module's table, read off timm 1.0.31's ``mobilenetv5_300m_enc`` arch_def and
held to it tensor by tensor (tests/data/mobilenetv5_300m_enc.json). Every norm is an RMSNorm over
channels (weight only), every conv but the stem's is bias-free:

- stem: Conv2d 3 × 3 stride 2 [64, 3, 3, 3] + bias [64], a norm [64];
- ``er`` (EdgeResidual, a fused inverted residual): conv_exp k × k [c_in·e, c_in, k, k] (stride s),
  a norm, conv_pwl 1 × 1 [c_out, c_in·e], a norm;
- ``uir`` (UniversalInvertedResidual, MobileNetV4): an optional depthwise dw_start [c_in, 1, a, a],
  pw_exp [c_in·e, c_in], an optional depthwise dw_mid [c_in·e, 1, k, k] (takes the stride), pw_proj
  [c_out, c_in·e], a norm after each conv and a layer scale [c_out];
- ``mqa`` (MobileAttention, multi-query attention over the feature map): a norm [c], query [h·d, c],
  one key and one value head [d, c] (each after a stride-2 depthwise down_conv [c, 1, k, k] and a
  norm when kv_stride is 2), output [c, h·d], a layer scale [c];
- msfa (multi-scale fusion adapter): the last two stages' maps concatenated at the higher
  resolution (c_in = 640 + 1,280), a ``uir`` without depthwise convs or layer scale (e = 2) to 2,048
  channels, average-pooled to 16 × 16 and a norm [2,048].
"""

from __future__ import annotations

from dataclasses import dataclass
from dataclasses import replace

from llmcalc.model.spec import Part
from llmcalc.model.spec import Shape
from llmcalc.model.spec import Tensor


@dataclass(frozen=True)
class Block:
    """One block of the arch_def: ``kind`` er | uir | mqa; ``a`` / ``k``: dw_start / dw_mid (or
    kv down_conv) kernels, 0 for none; ``e``: expansion; ``heads`` / ``key_dim``: mqa's;
    ``kv_stride``: mqa's key/value downsampling."""

    kind: str
    out: int
    stride: int = 1
    a: int = 0
    k: int = 0
    e: int = 1
    heads: int = 0
    key_dim: int = 0
    kv_stride: int = 1


def _stages() -> tuple[tuple[Block, ...], ...]:
    """mobilenetv5_300m_enc (timm 1.0.31 _gen_mobilenet_v5): four stages of 3, 5, 37, 39 blocks."""
    s0 = (Block("er", 128, 2, k=3, e=4), Block("er", 128, k=3, e=4), Block("er", 128, k=3, e=4))
    s1 = (Block("uir", 256, 2, a=3, k=5, e=6), *(Block("uir", 256, a=a, e=4) for a in (5, 3, 5, 3)))
    mqa2 = Block("mqa", 640, k=3, heads=12, key_dim=64, kv_stride=2)
    s2 = (Block("uir", 640, 2, a=5, k=5, e=6), *(Block("uir", 640, a=5, e=4) for _ in range(7)),
          Block("uir", 640, e=1), *(b for _ in range(14) for b in (mqa2, Block("uir", 640, e=2))))
    mqa3 = Block("mqa", 1280, k=3, heads=16, key_dim=96)
    s3 = (Block("uir", 1280, 2, a=5, k=5, e=6),
          *(b for _ in range(19) for b in (mqa3, Block("uir", 1280, e=2))))
    return s0, s1, s2, s3


STAGES = _stages()
STEM = 64  # stem channels
FEATURES = 2048  # msfa output channels (num_features)
MSFA_RESOLUTION = 16  # msfa output side: 16 × 16 = 256 image tokens


def _conv(name: str, component: str, out: int, in_per_group: int, k: int) -> Tensor:
    return Tensor(f"{name}.weight", (out, in_per_group, k, k), component, matmul=True)


def _norm(name: str, component: str, c: int) -> Tensor:
    return Tensor(f"{name}.weight", (c,), component)


def block_tensors(p: str, b: Block, c_in: int) -> list[tuple[Tensor, int]]:
    """A block's tensors under ``p``, each with the side of the map its output covers relative to
    the block's input side (1, or 1 / stride as a divisor: 2)."""
    s = b.stride
    if b.kind == "er":
        mid = c_in * b.e
        return [(_conv(f"{p}.conv_exp", "er/conv_exp", mid, c_in, b.k), s),
                (_norm(f"{p}.bn1", "er/norm", mid), s),
                (_conv(f"{p}.conv_pwl", "er/conv_pwl", b.out, mid, 1), s),
                (_norm(f"{p}.bn2", "er/norm", b.out), s)]
    if b.kind == "uir":
        mid = c_in * b.e
        out: list[tuple[Tensor, int]] = []
        if b.a:  # takes the stride only without a dw_mid
            d = 1 if b.k else s
            out += [(_conv(f"{p}.dw_start.conv", "uir/dw_start", c_in, 1, b.a), d),
                    (_norm(f"{p}.dw_start.bn", "uir/norm", c_in), d)]
        dk = s if (b.a and not b.k) else 1
        out += [(_conv(f"{p}.pw_exp.conv", "uir/pw_exp", mid, c_in, 1), dk),
                (_norm(f"{p}.pw_exp.bn", "uir/norm", mid), dk)]
        if b.k:
            out += [(_conv(f"{p}.dw_mid.conv", "uir/dw_mid", mid, 1, b.k), s),
                    (_norm(f"{p}.dw_mid.bn", "uir/norm", mid), s)]
        out += [(_conv(f"{p}.pw_proj.conv", "uir/pw_proj", b.out, mid, 1), s),
                (_norm(f"{p}.pw_proj.bn", "uir/norm", b.out), s),
                (Tensor(f"{p}.layer_scale.gamma", (b.out,), "uir/layer_scale"), s)]
        return out
    c, hd = c_in, b.heads * b.key_dim
    a = f"{p}.attn"
    out = [(_norm(f"{p}.norm", "mqa/norm", c), 1),
           (_conv(f"{a}.query.proj", "mqa/query", hd, c, 1), 1)]
    for kv in ("key", "value"):
        if b.kv_stride > 1:
            out += [(_conv(f"{a}.{kv}.down_conv", f"mqa/{kv}_down", c, 1, b.k), b.kv_stride),
                    (_norm(f"{a}.{kv}.norm", "mqa/norm", c), b.kv_stride)]
        out.append((_conv(f"{a}.{kv}.proj", f"mqa/{kv}", b.key_dim, c, 1), b.kv_stride))
    out += [(_conv(f"{a}.output.proj", "mqa/output", b.out, hd, 1), 1),
            (Tensor(f"{p}.layer_scale.gamma", (b.out,), "mqa/layer_scale"), 1)]
    return out


def mobilenetv5(prefix: str, *, image_size: int, context_tokens: int) -> Part:
    """The tower under ``prefix`` (``model.vision_tower.timm_model``) as a part, with its FLOPs for
    one ``image_size`` × ``image_size`` image: 2 · weight elements · output positions for each
    conv, and per mqa block queries × keys · 2·h·(d + d) (keys at 1 / kv_stride the side)."""
    tensors: list[Tensor] = []
    weight = attention = 0

    def add(t: Tensor, side: int) -> None:
        nonlocal weight
        tensors.append(t)
        if t.matmul:
            weight += 2 * t.numel * side * side

    side = -(-image_size // 2)  # "same" padding: ceil(side / stride)
    add(Tensor(f"{prefix}.conv_stem.conv.weight", (STEM, 3, 3, 3), "stem", matmul=True), side)
    add(Tensor(f"{prefix}.conv_stem.conv.bias", (STEM,), "stem"), side)
    add(_norm(f"{prefix}.conv_stem.bn", "stem", STEM), side)
    c_in, ends = STEM, []
    for i, stage in enumerate(STAGES):
        for j, b in enumerate(stage):
            for t, div in block_tensors(f"{prefix}.blocks.{i}.{j}", b, c_in):
                add(t, -(-side // div))
            if b.kind == "mqa":
                keys = (-(-side // b.kv_stride)) ** 2
                attention += side * side * keys * 2 * b.heads * (2 * b.key_dim)
            side = -(-side // b.stride)
            c_in = b.out
        ends.append((c_in, side))
    (c2, side2), (c3, _) = ends[-2], ends[-1]
    m = f"{prefix}.msfa"
    fuse = Block("uir", FEATURES, e=2)
    for t, div in block_tensors(f"{m}.ffn", fuse, c2 + c3):
        if t.component != "uir/layer_scale":  # the msfa's ffn has no layer scale
            add(t, -(-side2 // div))
    add(_norm(f"{m}.norm", "msfa/norm", FEATURES), MSFA_RESOLUTION)
    tensors = [replace_component(t) for t in tensors]
    return Part(
        name="vision",
        tensors=tuple(tensors),
        shape=Shape(0, FEATURES, 0, 0, 0, 0, 0, False),
        input_size=image_size,
        context_tokens=context_tokens,
        input_flops=(weight, attention),
    )


def replace_component(t: Tensor) -> Tensor:
    """Stem and msfa tensors keep their own component; block tensors are ``blocks/<kind>/…``."""
    if ".blocks." in t.name:
        return replace(t, component=f"blocks/{t.component}")
    if ".msfa." in t.name and not t.component.startswith("msfa"):
        return replace(t, component=f"msfa/{t.component.split('/', 1)[1]}")
    return t
