"""GPT-2 (``model_type: gpt2``): learned positions, LayerNorm with bias, fused qkv Conv1D, tied head.

Source: Radford et al. 2019; tensor names and shapes as in transformers ``GPT2LMHeadModel``.
"""

from __future__ import annotations

from pydantic import AliasChoices
from pydantic import Field

from llmcalc.families._base import Architecture
from llmcalc.families._base import GPT2StyleConfig
from llmcalc.families._base import Size
from llmcalc.families._base import conv1d
from llmcalc.families._base import gpt2_outer_tensors
from llmcalc.families._base import norm
from llmcalc.families._base import require
from llmcalc.families._base import uniform_layers
from llmcalc.model.spec import Attention
from llmcalc.model.spec import Shape


class GPT2Config(GPT2StyleConfig):
    transformers_class = "GPT2Config"

    n_positions: Size = Field(
        validation_alias=AliasChoices("n_positions", "max_position_embeddings")
    )
    tie_word_embeddings: bool
    add_cross_attention: bool


def describe(c: GPT2Config) -> Architecture:
    require(not c.add_cross_attention, "add_cross_attention", "cross-attention is not supported")
    d, v = c.n_embd, c.vocab_size
    hd, ff = c.resolved_head_dim, c.d_ff
    p = "transformer.h.{i}"
    layer = [
        *norm(f"{p}.ln_1", "attn/norm", d, bias=True),
        *conv1d(f"{p}.attn.c_attn", "attn/qkv", d, 3 * d),  # q, k, v fused: d × 3d
        *conv1d(f"{p}.attn.c_proj", "attn/o_proj", d, d),
        *norm(f"{p}.ln_2", "mlp/norm", d, bias=True),
        *conv1d(f"{p}.mlp.c_fc", "mlp/fc_in", d, ff),
        *conv1d(f"{p}.mlp.c_proj", "mlp/fc_out", ff, d),
    ]
    return Architecture(
        shape=Shape(c.n_layer, d, c.n_head, c.n_head, hd, ff, v,
                    c.tie_word_embeddings, c.n_positions),
        tensors=gpt2_outer_tensors(v, d, c.n_positions, tied=c.tie_word_embeddings),
        layer_groups=uniform_layers(c.n_layer, layer, Attention(c.n_head, c.n_head, hd, hd)),
        notes=c.d_ff_notes(),
    )
