"""MPT (``model_type: mpt``): ALiBi, bias-free linears and LayerNorms, fused Wqkv, tied head.

Source: MosaicML 2023 (MPT-7B); tensor names and shapes as in transformers ``MptForCausalLM``, which
builds the MLP 4 · d_model wide whatever expansion_ratio says (counted so, the field named as not
modelled), multi-head attention, no biases and no position table; configs asking for another
attention or biases are refused rather than counted wrongly.
"""

from __future__ import annotations

from typing import Any

from pydantic import AliasChoices
from pydantic import Field

from llmcalc.families._base import Architecture
from llmcalc.families._base import FamilyConfig
from llmcalc.families._base import Size
from llmcalc.families._base import fc_mlp
from llmcalc.families._base import fused_mha
from llmcalc.families._base import llama_outer_tensors
from llmcalc.families._base import norm
from llmcalc.families._base import require
from llmcalc.families._base import resolve_head_dim
from llmcalc.families._base import uniform_layers
from llmcalc.model.spec import Attention
from llmcalc.model.spec import Shape

EXPANSION_RATIO = 4  # transformers MptMLP: up_proj is always 4 · d_model


class MptConfig(FamilyConfig):
    transformers_class = "MptConfig"

    d_model: Size = Field(validation_alias=AliasChoices("d_model", "hidden_size"))
    n_layers: Size = Field(validation_alias=AliasChoices("n_layers", "num_hidden_layers"))
    n_heads: Size = Field(validation_alias=AliasChoices("n_heads", "num_attention_heads"))
    vocab_size: Size
    max_seq_len: Size | None = None
    expansion_ratio: Size
    no_bias: bool
    attn_config: dict[str, Any] | None = None
    tie_word_embeddings: bool


def describe(c: MptConfig) -> Architecture:
    # transformers' MptMLP sizes up_proj 4 · d_model and never reads expansion_ratio: count what
    # it builds, and say the field is not modelled (MosaicML's own code would follow it)
    notes = () if c.expansion_ratio == EXPANSION_RATIO else (
        f"fields this count does not model: expansion_ratio ({c.expansion_ratio}; transformers' "
        f"MptMLP builds {EXPANSION_RATIO} · d_model whatever it says)",
    )
    require(c.no_bias, "no_bias", "transformers' MPT builds only bias-free layers (no_bias: true)")
    attn_type = (c.attn_config or {}).get("attn_type", "multihead_attention")
    require(
        attn_type == "multihead_attention",
        "attn_config.attn_type",
        f"transformers' MPT builds only multihead_attention, got {attn_type!r}",
    )
    d, v, h = c.d_model, c.vocab_size, c.n_heads
    hd = resolve_head_dim(d, h, hidden_field="d_model", heads_field="n_heads")
    ff = EXPANSION_RATIO * d
    p = "transformer.blocks.{i}"
    # Wqkv: 3d × d;  out_proj: d × d;  up_proj: 4d × d;  down_proj: d × 4d;  LayerNorms weight only
    layer = [
        *norm(f"{p}.norm_1", "attn/norm", d, bias=False),
        *fused_mha(f"{p}.attn.Wqkv", f"{p}.attn.out_proj", d, bias=False),
        *norm(f"{p}.norm_2", "mlp/norm", d, bias=False),
        *fc_mlp(f"{p}.ffn.up_proj", f"{p}.ffn.down_proj", d, ff, bias=False),
    ]
    tensors = llama_outer_tensors(v, d, tied=c.tie_word_embeddings, embed="transformer.wte",
                                  final_norm="transformer.norm_f")
    return Architecture(
        shape=Shape(c.n_layers, d, h, h, hd, ff, v, c.tie_word_embeddings, c.max_seq_len),
        tensors=tensors,
        layer_groups=uniform_layers(c.n_layers, layer, Attention(h, h, hd, hd)),
        notes=notes,
    )
