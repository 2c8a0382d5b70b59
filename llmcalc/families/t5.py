"""T5, mT5 and UMT5 (``t5``, ``mt5``, ``umt5``): the whole ``…ForConditionalGeneration``.

Source: Raffel et al. 2020 (T5), Xue et al. 2021 (mT5), Chung et al. 2023 (UMT5); tensor names and
shapes as in transformers 5.24 ``models/{t5,mt5,umt5}/modeling_*.py``. One token embedding
``shared`` [V, d] feeds the encoder and the decoder; the lm_head [V, d] is tied to it. Attention
has no biases, inner width h·d_kv; positions are learned relative-position biases
[num_buckets, h] in the first block of each stack (T5, mT5) or in every block (UMT5); RMS-style
layer norms without bias; the feed-forward is wi (d_ff × d) and wo (d × d_ff), or gated wi_0, wi_1
with ``feed_forward_proj: gated-…`` (T5 v1.1, flan-t5, mT5, byT5).

Parts: the main part is the decoder (with the shared embedding and the lm_head: every generated
token goes through them), the other the encoder (per source sequence). A decoder block attends to
the generated tokens (causal self-attention, cached) and to the encoder's output (cross-attention,
whose K and V projections run once per source token and are cached for the whole generation).
"""

from __future__ import annotations

from llmcalc.families._base import Architecture
from llmcalc.families._base import FamilyConfig
from llmcalc.families._base import Size
from llmcalc.families._base import embedding
from llmcalc.families._base import fc_mlp
from llmcalc.families._base import linear
from llmcalc.families._base import lm_head
from llmcalc.families._base import norm
from llmcalc.families._base import require
from llmcalc.model.spec import Attention
from llmcalc.model.spec import LayerGroup
from llmcalc.model.spec import LayerSet
from llmcalc.model.spec import Part
from llmcalc.model.spec import Shape
from llmcalc.model.spec import Tensor


class T5Config(FamilyConfig):
    transformers_class = "T5Config"

    vocab_size: Size
    d_model: Size
    d_kv: Size
    d_ff: Size
    num_layers: Size
    num_decoder_layers: Size | None = None  # null means num_layers
    # the attribute_map alias of num_layers, read here itself: T5Config derives the decoder's
    # layers from num_layers in __post_init__, before the alias lands, so it sets the encoder's alone
    num_hidden_layers: Size | None = None
    num_heads: Size
    relative_attention_num_buckets: Size
    feed_forward_proj: str
    tie_word_embeddings: bool = True
    # derived from feed_forward_proj in T5Config.__post_init__; a config.json's, set after it as
    # a key the class does not declare, wins (null: not gated)
    is_gated_act: bool | None = None

    @property
    def decoder_layers(self) -> int:
        return self.num_decoder_layers if self.num_decoder_layers is not None else self.num_layers

    @property
    def encoder_layers(self) -> int:
        return self.num_hidden_layers or self.num_layers

    @property
    def gated(self) -> bool:
        parts = self.feed_forward_proj.split("-")
        require(
            len(parts) == 1 or (len(parts) == 2 and parts[0] == "gated"),
            "feed_forward_proj",
            f"must be gated-ACT or ACT (e.g. gated-gelu, relu), got {self.feed_forward_proj!r}",
        )
        if "is_gated_act" in self.model_fields_set:
            return bool(self.is_gated_act)
        return parts[0] == "gated" and len(parts) == 2


class MT5Config(T5Config):
    transformers_class = "MT5Config"



class UMT5Config(MT5Config):
    transformers_class = "UMT5Config"


def attention_block(p: str, kind: str, d: int, inner: int, *, cross: bool = False) -> list[Tensor]:
    """T5Attention without biases: q, k, v inner × d, o d × inner (inner = h·d_kv). In
    cross-attention k and v project the encoder's output: once per source token (per_source)."""
    a = "cross_attn" if cross else "attn"
    return [
        *linear(f"{p}.{kind}.q", f"{a}/q_proj", inner, d, bias=False),
        *[
            Tensor(t.name, t.shape, t.component, matmul=True, per_source=cross)
            for t in [
                *linear(f"{p}.{kind}.k", f"{a}/k_proj", inner, d, bias=False),
                *linear(f"{p}.{kind}.v", f"{a}/v_proj", inner, d, bias=False),
            ]
        ],
        *linear(f"{p}.{kind}.o", f"{a}/o_proj", d, inner, bias=False),
    ]


def feed_forward(p: str, d: int, ff: int, *, gated: bool) -> list[Tensor]:
    """T5DenseActDense wi ff × d, wo d × ff; gated (T5DenseGatedActDense) wi_0, wi_1 ff × d, wo."""
    if gated:
        return [
            *linear(f"{p}.DenseReluDense.wi_0", "mlp/gate_proj", ff, d, bias=False),
            *linear(f"{p}.DenseReluDense.wi_1", "mlp/up_proj", ff, d, bias=False),
            *linear(f"{p}.DenseReluDense.wo", "mlp/down_proj", d, ff, bias=False),
        ]
    return [
        *fc_mlp(f"{p}.DenseReluDense.wi", f"{p}.DenseReluDense.wo", d, ff, bias=False),
    ]


def _stack(
    c: T5Config, stack: str, num_layers: int, *, every_block_bias: bool
) -> tuple[LayerGroup, ...]:
    """The blocks of one stack: layer.0 self-attention (+ its relative-position bias
    [num_buckets, h] in block 0, or in every block for UMT5) and its norm; in the decoder
    layer.1 cross-attention and its norm; then the feed-forward and its norm."""
    d, h, hd = c.d_model, c.num_heads, c.d_kv
    inner = h * hd
    p = f"{stack}.block.{{i}}"
    decoder = stack == "decoder"
    ff_at = 2 if decoder else 1
    body = [
        *attention_block(f"{p}.layer.0", "SelfAttention", d, inner),
        *norm(f"{p}.layer.0.layer_norm", "attn/norm", d, bias=False),
    ]
    if decoder:
        body += [
            *attention_block(f"{p}.layer.1", "EncDecAttention", d, inner, cross=True),
            *norm(f"{p}.layer.1.layer_norm", "cross_attn/norm", d, bias=False),
        ]
    body += [
        *feed_forward(f"{p}.layer.{ff_at}", d, c.d_ff, gated=c.gated),
        *norm(f"{p}.layer.{ff_at}.layer_norm", "mlp/norm", d, bias=False),
    ]
    bias = embedding(
        f"{p}.layer.0.SelfAttention.relative_attention_bias", "attn/rel_bias",
        c.relative_attention_num_buckets, h,
    )
    attention = Attention(h, h, hd, hd, causal=decoder)
    cross = Attention(h, h, hd, hd, causal=False) if decoder else None
    name = stack
    if every_block_bias:
        return (LayerGroup(name, LayerSet.span(0, num_layers), (bias, *body), attention,
                           cross_attention=cross),)
    groups = [LayerGroup(f"{name} (block 0)", LayerSet.span(0, 1), (bias, *body), attention,
                         cross_attention=cross)]
    if num_layers > 1:
        groups.append(LayerGroup(name, LayerSet.span(1, num_layers), tuple(body), attention,
                                 cross_attention=cross))
    return tuple(groups)


def describe(c: T5Config) -> Architecture:
    return _describe(c, every_block_bias=False)


def describe_umt5(c: UMT5Config) -> Architecture:
    return _describe(c, every_block_bias=True)


def _describe(c: T5Config, *, every_block_bias: bool) -> Architecture:
    d, v = c.d_model, c.vocab_size
    notes = []
    unbuilt: tuple[tuple[str, int], ...] = ()
    if not c.tie_word_embeddings:
        # T5Config.__post_init__ forces tie_word_embeddings = True (transformers 5.24)
        notes.append(
            "tie_word_embeddings=false: transformers 5.24 ties lm_head to shared anyway (as "
            "counted); the checkpoint holds its own lm_head.weight [V, d] besides"
        )
        unbuilt = (("lm_head.weight", v * d),)
    encoder = Part(
        "encoder",
        tensors=tuple(norm("encoder.final_layer_norm", "final_norm", d, bias=False)),
        layer_groups=_stack(c, "encoder", c.encoder_layers, every_block_bias=every_block_bias),
        shape=_shape(c, c.encoder_layers),
    )
    return Architecture(
        shape=_shape(c, c.decoder_layers),
        tensors=(
            embedding("shared", "embed/tokens", v, d),
            *norm("decoder.final_layer_norm", "final_norm", d, bias=False),
            *lm_head("lm_head", v, d, tied_to="shared.weight"),
        ),
        layer_groups=_stack(c, "decoder", c.decoder_layers, every_block_bias=every_block_bias),
        parts=(encoder,),
        main_part="decoder",
        notes=tuple(notes),
        unbuilt=unbuilt,
    )


def _shape(c: T5Config, layers: int) -> Shape:
    return Shape(layers, c.d_model, c.num_heads, c.num_heads, c.d_kv, c.d_ff, c.vocab_size, True)
