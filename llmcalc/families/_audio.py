"""Audio encoders of whole models, as :class:`Part` s: the Conformer (Gulati et al. 2020,
"Conformer: Convolution-augmented Transformer for Speech Recognition") that Phi-4-multimodal's
speech input runs through (transformers phi4_multimodal/modeling_phi4_multimodal.py
``Phi4MultimodalAudioModel``, config ``Phi4MultimodalAudioConfig``).

Shapes (d = hidden_size, ff = intermediate_size, C = nemo_conv_channels, E = ext_pw_out_channel,
m = depthwise_multiplier, k = kernel_size, s = log2(time_reduction) stride-2 stages):

- subsampling (NeMo ``embed``): conv.0 Conv2d(1, C, 3, stride 2) [C, 1, 3, 3] + [C]; then per
  further stage a depthwise Conv2d(C, C, 3, stride 2, groups C) [C, 1, 3, 3] and a pointwise
  Conv2d 1 × 1 [C, C, 1, 1], with biases (conv.2, conv.3, conv.5, conv.6 …: activations between);
  out Linear [d, C · F] + [d], F the mel bins after s halvings;
- a T5-style relative attention bias table [buckets, heads] (buckets = bias_max_distance, twice
  that unless bias_symmetric);
- per block: two macaron feed-forwards (LayerNorm, gate_up [2ff, d], down [d, ff], biases), self
  attention q, k, v [h·hd, d], o [d, h·hd] with biases, a convolution module (LayerNorm, GLU
  pointwise conv [2E, d, 1] + [2E] and its two biases b1, b2 [1, E, 1], depthwise conv
  [d·m, 1, k] + [d·m], pointwise conv [D, d·m, 1] + [D], ext pointwise conv [E, d, 1] + [E]), two
  LayerNorms [d].

FLOPs of one clip of n mel frames: every conv and linear 2 · weight elements · output positions
(the depthwise conv pads k − 1 on both sides, so it and the next pointwise conv see n + k − 1
positions, in each window); attention over all token pairs, in windows of 500 tokens past 500 (the clip is padded
to whole windows, as ``Phi4MultimodalAudioModel.forward`` unfolds it).
"""

from __future__ import annotations

from dataclasses import dataclass

from pydantic import Field

from llmcalc.families._base import FamilyConfig
from llmcalc.families._base import Size
from llmcalc.families._base import linear
from llmcalc.families._base import norm
from llmcalc.families._base import require
from llmcalc.model.spec import Attention
from llmcalc.model.spec import LayerGroup
from llmcalc.model.spec import LayerSet
from llmcalc.model.spec import Part
from llmcalc.model.spec import Shape
from llmcalc.model.spec import Tensor

# Phi4MultimodalAudioModel.forward: "maximum position for absolute positional encoding"; a longer
# clip is cut into windows of this many tokens
MAX_SEQ_LEN = 500


class ConformerConfig(FamilyConfig):
    """Phi4MultimodalAudioConfig's sizes (its class defaults fill what a config leaves out)."""

    transformers_class = "Phi4MultimodalAudioConfig"

    hidden_size: Size
    intermediate_size: Size
    num_blocks: Size
    num_attention_heads: Size
    ext_pw_out_channel: Size
    depthwise_separable_out_channel: Size
    depthwise_multiplier: Size
    kernel_size: Size
    input_size: Size
    time_reduction: Size
    bias_max_distance: Size
    bias_symmetric: bool = False
    nemo_conv_channels: Size
    downsample_rate: Size = 1
    # undeclared: the attention reads getattr(config, "head_dim", d // heads)
    given_head_dim: Size | None = Field(None, validation_alias="head_dim")
    # derived in __post_init__; a config.json's, set after it, wins
    nemo_final_size: Size | None = None

    @property
    def stages(self) -> int:
        """Stride-2 subsampling stages: int(log2(time_reduction)), as the model builds them."""
        return self.time_reduction.bit_length() - 1

    @property
    def final_bins(self) -> int:
        """Mel bins left after the stages (Phi4MultimodalAudioConfig.nemo_final_size)."""
        if self.nemo_final_size is not None:
            return self.nemo_final_size
        f = self.input_size
        for _ in range(self.stages):
            f = (f + 1) // 2  # floor((f - 1) / 2 + 1)
        return f

    @property
    def head_dim(self) -> int:
        return self.given_head_dim or self.hidden_size // self.num_attention_heads

    def check(self, key: str) -> None:
        require(self.time_reduction % 2 == 0, f"{key}.time_reduction",
                f"{key}.time_reduction ({self.time_reduction}) must be a multiple of 2")
        require(self.head_dim >= 1, f"{key}.num_attention_heads",
                f"{key}.num_attention_heads ({self.num_attention_heads}) must not exceed "
                f"hidden_size ({self.hidden_size})")


@dataclass(frozen=True)
class ConformerFlops:
    """One clip through the encoder: its tokens, and (weight, attention) FLOPs."""

    frames: int
    tokens: int
    weight: int
    attention: int


def conformer_flops(c: ConformerConfig, *, frames: int) -> ConformerFlops:
    """FLOPs of ``frames`` mel frames through the encoder (what FlopCounterMode counts)."""
    require(frames >= 1, "frames", f"an audio clip needs at least one frame, got {frames}")
    ch, d, ff = c.nemo_conv_channels, c.hidden_size, c.intermediate_size
    t, f = frames, c.input_size
    weight = 0
    for stage in range(c.stages):
        t, f = (t - 1) // 2 + 1, (f - 1) // 2 + 1  # 3 × 3, stride 2, padding 1
        # conv.0 [C, 1, 3, 3]; later stages a depthwise [C, 1, 3, 3] and a pointwise [C, C]
        weight += 2 * t * f * ch * 9 + (2 * t * f * ch * ch if stage else 0)
    weight += 2 * t * ch * f * d  # out: [d, C · F]
    n = t
    windows = -(-n // MAX_SEQ_LEN) if n > MAX_SEQ_LEN else 1
    padded = windows * MAX_SEQ_LEN if n > MAX_SEQ_LEN else n
    per_window = MAX_SEQ_LEN if n > MAX_SEQ_LEN else n
    h, hd = c.num_attention_heads, c.head_dim
    e, dm, k = c.ext_pw_out_channel, d * c.depthwise_multiplier, c.kernel_size
    # the depthwise conv pads each window by k - 1, cut off after the pointwise conv
    widened = windows * (per_window + k - 1)
    per_block = (
        2 * 2 * padded * (2 * ff * d + d * ff)  # feed_forward_in, feed_forward_out
        + 2 * padded * 4 * d * h * hd  # q, k, v, o
        + 2 * padded * 2 * e * d  # GLU pointwise conv
        + 2 * widened * dm * k  # depthwise conv
        + 2 * widened * c.depthwise_separable_out_channel * dm  # its pointwise conv
        + 2 * padded * e * d  # ext pointwise conv
    )
    attention = c.num_blocks * windows * per_window * per_window * 2 * h * (hd + hd)
    return ConformerFlops(frames, n, weight + c.num_blocks * per_block, attention)


def conformer(prefix: str, c: ConformerConfig, *, frames: int, name: str = "audio") -> Part:
    """The Conformer under ``prefix`` as a part; its per-input figures are one clip of ``frames``
    mel frames (input_flops), adding no image tokens."""
    c.check("audio_config")
    d, ff, h, hd = c.hidden_size, c.intermediate_size, c.num_attention_heads, c.head_dim
    ch, e, dm, k = c.nemo_conv_channels, c.ext_pw_out_channel, d * c.depthwise_multiplier, c.kernel_size
    emb = f"{prefix}.embed"
    outer = [
        Tensor(f"{emb}.conv.0.weight", (ch, 1, 3, 3), "subsampling/conv", matmul=True),
        Tensor(f"{emb}.conv.0.bias", (ch,), "subsampling/conv"),
    ]
    for stage in range(1, c.stages):
        dw, pw = 3 * stage - 1, 3 * stage  # Sequential indices, activations between
        outer += [
            Tensor(f"{emb}.conv.{dw}.weight", (ch, 1, 3, 3), "subsampling/conv", matmul=True),
            Tensor(f"{emb}.conv.{dw}.bias", (ch,), "subsampling/conv"),
            Tensor(f"{emb}.conv.{pw}.weight", (ch, ch, 1, 1), "subsampling/conv", matmul=True),
            Tensor(f"{emb}.conv.{pw}.bias", (ch,), "subsampling/conv"),
        ]
    outer += linear(f"{emb}.out", "subsampling/out", d, ch * c.final_bins, bias=True)
    buckets = c.bias_max_distance * (1 if c.bias_symmetric else 2)
    # an nn.Embedding of relative positions, the tower's position table
    outer.append(Tensor(f"{prefix}.relative_attention_bias_layer.bias_values.weight", (buckets, h),
                        "embed/positions"))
    p = f"{prefix}.encoders.{{i}}"

    def macaron(m: str) -> list[Tensor]:
        return [
            *norm(f"{p}.{m}.layer_norm", "ff/norm", d, bias=True),
            *linear(f"{p}.{m}.gate_up_proj", "ff/gate_up_proj", 2 * ff, d, bias=True),
            *linear(f"{p}.{m}.down_proj", "ff/down_proj", d, ff, bias=True),
        ]

    a, cv = f"{p}.self_attn", f"{p}.conv"
    layer = [
        *macaron("feed_forward_in"),
        *linear(f"{a}.q_proj", "attn/q_proj", h * hd, d, bias=True),
        *linear(f"{a}.k_proj", "attn/k_proj", h * hd, d, bias=True),
        *linear(f"{a}.v_proj", "attn/v_proj", h * hd, d, bias=True),
        *linear(f"{a}.o_proj", "attn/o_proj", d, h * hd, bias=True),
        *norm(f"{cv}.layer_norm", "conv/norm", d, bias=True),
        Tensor(f"{cv}.glu.b1", (1, e, 1), "conv/glu"),
        Tensor(f"{cv}.glu.b2", (1, e, 1), "conv/glu"),
        Tensor(f"{cv}.glu.ext_pw_conv_1d.weight", (2 * e, d, 1), "conv/glu", matmul=True),
        Tensor(f"{cv}.glu.ext_pw_conv_1d.bias", (2 * e,), "conv/glu"),
        Tensor(f"{cv}.dw_sep_conv_1d.dw_conv.weight", (dm, 1, k), "conv/depthwise", matmul=True),
        Tensor(f"{cv}.dw_sep_conv_1d.dw_conv.bias", (dm,), "conv/depthwise"),
        Tensor(f"{cv}.dw_sep_conv_1d.pw_conv.weight", (c.depthwise_separable_out_channel, dm, 1),
               "conv/pointwise", matmul=True),
        Tensor(f"{cv}.dw_sep_conv_1d.pw_conv.bias", (c.depthwise_separable_out_channel,),
               "conv/pointwise"),
        Tensor(f"{cv}.ext_pw_conv_1d.weight", (e, d, 1), "conv/ext_pw", matmul=True),
        Tensor(f"{cv}.ext_pw_conv_1d.bias", (e,), "conv/ext_pw"),
        *macaron("feed_forward_out"),
        *norm(f"{p}.layer_norm_att", "attn/norm", d, bias=True),
        *norm(f"{p}.layer_norm", "norm", d, bias=True),
    ]
    group = LayerGroup("audio", LayerSet.span(0, c.num_blocks), tuple(layer),
                       Attention(h, h, hd, hd))
    fl = conformer_flops(c, frames=frames)
    return Part(
        name=name,
        tensors=tuple(outer),
        layer_groups=(group,),
        shape=Shape(c.num_blocks, d, h, h, hd, ff, 0, False),
        input_tokens=(("layers", fl.tokens),),
        input_flops=(fl.weight, fl.attention),
        input="audio",
    )
