"""GPT-2 (``model_type: gpt2``): learned positions, LayerNorm with bias, fused qkv Conv1D, tied head.

Source: Radford et al. 2019; tensor names and shapes as in transformers ``GPT2LMHeadModel``.
"""

from __future__ import annotations

from pydantic import AliasChoices, Field

from llmcalc.families._base import (
    Architecture,
    FamilyConfig,
    Size,
    conv1d,
    embedding,
    lm_head,
    norm,
    require,
    resolve_head_dim,
    uniform_layers,
)
from llmcalc.spec import Attention, Shape


class GPT2Config(FamilyConfig):
    transformers_class = "GPT2Config"

    n_embd: Size = Field(validation_alias=AliasChoices("n_embd", "hidden_size"))
    n_layer: Size = Field(validation_alias=AliasChoices("n_layer", "num_hidden_layers"))
    n_head: Size = Field(validation_alias=AliasChoices("n_head", "num_attention_heads"))
    vocab_size: Size
    n_positions: Size = Field(
        1024, validation_alias=AliasChoices("n_positions", "max_position_embeddings")
    )
    n_inner: Size | None = None  # null means 4 · n_embd
    tie_word_embeddings: bool = True
    add_cross_attention: bool = False


def describe(c: GPT2Config) -> Architecture:
    require(not c.add_cross_attention, "add_cross_attention", "cross-attention is not supported")
    d, v = c.n_embd, c.vocab_size
    hd = resolve_head_dim(d, c.n_head, None, hidden_field="n_embd", heads_field="n_head")
    ff = c.n_inner if c.n_inner is not None else 4 * d
    p = "transformer.h.{i}"
    layer = [
        *norm(f"{p}.ln_1", "attn/norm", d, bias=True),
        *conv1d(f"{p}.attn.c_attn", "attn/qkv", d, 3 * d),  # q, k, v fused: d × 3d
        *conv1d(f"{p}.attn.c_proj", "attn/o_proj", d, d),
        *norm(f"{p}.ln_2", "mlp/norm", d, bias=True),
        *conv1d(f"{p}.mlp.c_fc", "mlp/fc_in", d, ff),
        *conv1d(f"{p}.mlp.c_proj", "mlp/fc_out", ff, d),
    ]
    wte = "transformer.wte.weight"
    tensors = (
        embedding("transformer.wte", "embed/tokens", v, d),
        embedding("transformer.wpe", "embed/positions", c.n_positions, d),
        *norm("transformer.ln_f", "final_norm", d, bias=True),
        *lm_head("lm_head", v, d, tied_to=wte if c.tie_word_embeddings else None),
    )
    notes = ("n_inner=null: d_ff = 4 · n_embd",) if c.n_inner is None else ()
    return Architecture(
        shape=Shape(
            num_layers=c.n_layer,
            hidden_size=d,
            num_heads=c.n_head,
            num_kv_heads=c.n_head,
            head_dim=hd,
            intermediate_size=ff,
            vocab_size=v,
            tied_embeddings=c.tie_word_embeddings,
            max_position_embeddings=c.n_positions,
        ),
        tensors=tensors,
        layer_groups=uniform_layers(c.n_layer, layer, Attention(c.n_head, c.n_head, hd, hd)),
        notes=notes,
    )
