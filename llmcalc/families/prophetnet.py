"""ProphetNet (Qi et al. 2020, arXiv 2001.04063): an encoder–decoder whose decoder predicts the next
``ngram`` tokens at once, through n-gram streams beside the main one with their own relative
positions.

Tensor names and shapes as in transformers' ``ProphetNetForConditionalGeneration``
(prophetnet/modeling_prophetnet.py, transformers 5.24): ``prophetnet.word_embeddings`` [V, d],
which each stack's word_embeddings and the lm_head [V, d] share with ``tie_word_embeddings`` (else
each is a table of its own); per stack learned positions [max_position_embeddings, d] and
embeddings_layer_norm [d] (+ bias); post-norm layers whose attention projections key_proj,
value_proj, query_proj, out_proj are d × d with biases, feed_forward.intermediate [ff, d] and
output [d, ff] with biases, a LayerNorm after each block; the decoder adds ngram_embeddings
[ngram, d], cross_attn (as self_attn) and, in its self-attention, relative_pos_embeddings
[buckets · h, d] + bias. Parts as in :mod:`llmcalc.families.bart`: the decoder (with the shared
table and the lm_head) is the main part, the encoder the other.

Its decoder runs ngram + 1 streams over every position, so FLOPs and cache bytes are refused
(ModelSpec.forward_unmodelled).
"""

from __future__ import annotations

from llmcalc.families._base import Architecture
from llmcalc.families._base import Count
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


class ProphetNetConfig(FamilyConfig):
    transformers_class = "ProphetNetConfig"

    vocab_size: Size
    hidden_size: Size
    encoder_ffn_dim: Size
    num_encoder_layers: Count
    num_encoder_attention_heads: Size
    decoder_ffn_dim: Size
    num_decoder_layers: Count
    num_decoder_attention_heads: Size
    max_position_embeddings: Size
    ngram: Count
    num_buckets: Count
    tie_word_embeddings: bool


def _attention(p: str, component: str, d: int) -> list[Tensor]:
    """ProphetNetAttention: key_proj, value_proj, query_proj, out_proj d × d with biases."""
    return [t for x in ("key_proj", "value_proj", "query_proj", "out_proj")
            for t in linear(f"{p}.{x}", f"{component}/{x}", d, d, bias=True)]


def describe(c: ProphetNetConfig) -> Architecture:
    d, v, tied = c.hidden_size, c.vocab_size, c.tie_word_embeddings
    shared = "prophetnet.word_embeddings"
    stacks: dict[str, tuple[tuple[Tensor, ...], LayerGroup, Shape]] = {}
    for stack, layers, ff, h in (
        ("encoder", c.num_encoder_layers, c.encoder_ffn_dim, c.num_encoder_attention_heads),
        ("decoder", c.num_decoder_layers, c.decoder_ffn_dim, c.num_decoder_attention_heads),
    ):
        field = f"num_{stack}_attention_heads"
        require(d % h == 0, field, f"{field} ({h}) must divide hidden_size ({d}) (ProphetNetAttention)")
        m, hd = f"prophetnet.{stack}", d // h
        decoder = stack == "decoder"
        outer = [
            *([] if tied else [embedding(f"{m}.word_embeddings", "embed/tokens", v, d)]),
            embedding(f"{m}.position_embeddings", "embed/positions", c.max_position_embeddings, d),
            *([embedding(f"{m}.ngram_embeddings", "embed/ngram", c.ngram, d)] if decoder else []),
            *norm(f"{m}.embeddings_layer_norm", "embed/norm", d, bias=True),
        ]
        p = f"{m}.layers.{{i}}"
        layer = [*_attention(f"{p}.self_attn", "attn", d),
                 *norm(f"{p}.self_attn_layer_norm", "attn/norm", d, bias=True)]
        if decoder:
            layer += [*linear(f"{p}.self_attn.relative_pos_embeddings", "attn/relative_pos",
                              c.num_buckets * h, d, bias=True),
                      *_attention(f"{p}.cross_attn", "cross_attn", d),
                      *norm(f"{p}.cross_attn_layer_norm", "cross_attn/norm", d, bias=True)]
        layer += [*fc_mlp(f"{p}.feed_forward.intermediate", f"{p}.feed_forward.output", d, ff,
                          bias=True),
                  *norm(f"{p}.feed_forward_layer_norm", "mlp/norm", d, bias=True)]
        group = LayerGroup(stack, LayerSet.span(0, layers), tuple(layer),
                           Attention(h, h, hd, hd, causal=decoder),
                           cross_attention=Attention(h, h, hd, hd, causal=False) if decoder else None)
        shape = Shape(layers, d, h, h, hd, ff, v, tied, c.max_position_embeddings)
        stacks[stack] = (tuple(outer), group, shape)
    enc_outer, enc_group, enc_shape = stacks["encoder"]
    dec_outer, dec_group, dec_shape = stacks["decoder"]
    return Architecture(
        shape=dec_shape,
        tensors=(
            embedding(shared, "embed/tokens", v, d),
            *dec_outer,
            *lm_head("lm_head", v, d, tied_to=f"{shared}.weight" if tied else None),
        ),
        layer_groups=(dec_group,),
        parts=(Part("encoder", enc_outer, (enc_group,), shape=enc_shape),),
        main_part="decoder",
        forward_unmodelled=f"ProphetNet's decoder runs {c.ngram} n-gram streams beside the main "
                           "one, with relative positions of their own",
    )
