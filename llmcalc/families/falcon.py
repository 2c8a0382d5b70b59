"""Falcon (``model_type: falcon``): multi-query or grouped-query attention, parallel attention/MLP.

Source: Almazrouei et al. 2023 (The Falcon Series); tensor names and shapes as in transformers
``FalconForCausalLM``. Three attention layouts share one fused ``query_key_value``:

    new_decoder_architecture (40B/180B)   (h + 2·kv)·hd × d   (GQA, kv = num_kv_heads)
    multi_query (7B)                      (h + 2)·hd × d      (MQA: one k and one v head)
    neither (RW-1B style)                 3·h·hd × d          (MHA)

Norms: two (``ln_attn``, ``ln_mlp``) when the new architecture or ``num_ln_in_parallel_attn`` is 2,
one (``input_layernorm``) for parallel attention otherwise, and ``input_layernorm`` plus
``post_attention_layernorm`` when ``parallel_attn`` is false. Rotary or ALiBi positions add nothing.
"""

from __future__ import annotations

from pydantic import AliasChoices
from pydantic import Field

from llmcalc.families._base import Architecture
from llmcalc.families._base import FamilyConfig
from llmcalc.families._base import Size
from llmcalc.families._base import embedding
from llmcalc.families._base import fc_mlp
from llmcalc.families._base import linear
from llmcalc.families._base import lm_head
from llmcalc.families._base import norm
from llmcalc.families._base import resolve_head_dim
from llmcalc.families._base import resolve_kv_heads
from llmcalc.families._base import uniform_layers
from llmcalc.model.spec import CACHE_NOTE
from llmcalc.model.spec import Attention
from llmcalc.model.spec import Shape
from llmcalc.model.spec import Tensor


class FalconConfig(FamilyConfig):
    """Also reads the RefinedWeb-era names (``n_head``, ``n_layer``, ``n_head_kv``) of older Falcon
    configs, as their checkpoints were shaped by them (transformers 5 no longer maps them)."""

    transformers_class = "FalconConfig"

    hidden_size: Size = Field(validation_alias=AliasChoices("n_embed", "hidden_size"))
    num_hidden_layers: Size = Field(validation_alias=AliasChoices("num_hidden_layers", "n_layer"))
    num_attention_heads: Size = Field(
        validation_alias=AliasChoices("num_attention_heads", "n_head")
    )
    num_kv_heads: Size | None = Field(
        None, validation_alias=AliasChoices("num_kv_heads", "n_head_kv")
    )  # absent: equal to the heads; read only by the new decoder architecture
    vocab_size: Size
    max_position_embeddings: Size | None = None
    ffn_hidden_size: Size | None = None  # null means 4 · hidden_size
    new_decoder_architecture: bool
    multi_query: bool
    parallel_attn: bool
    num_ln_in_parallel_attn: Size | None = None
    bias: bool
    tie_word_embeddings: bool


def _kv_heads(c: FalconConfig) -> int:
    h = c.num_attention_heads
    if c.new_decoder_architecture:
        return resolve_kv_heads(h, c.num_kv_heads, kv_field="num_kv_heads")
    return 1 if c.multi_query else h


def _layer_norms(c: FalconConfig, p: str, d: int) -> list[Tensor]:
    """The LayerNorms of one block, by the rule in transformers ``FalconDecoderLayer``."""
    num_ln = c.num_ln_in_parallel_attn
    if num_ln is None and c.new_decoder_architecture:
        num_ln = 2
    if not c.parallel_attn:
        return [
            *norm(f"{p}.input_layernorm", "attn/norm", d, bias=True),
            *norm(f"{p}.post_attention_layernorm", "mlp/norm", d, bias=True),
        ]
    if num_ln == 2:
        return [
            *norm(f"{p}.ln_attn", "attn/norm", d, bias=True),
            *norm(f"{p}.ln_mlp", "mlp/norm", d, bias=True),
        ]
    return norm(f"{p}.input_layernorm", "norm", d, bias=True)


def describe(c: FalconConfig) -> Architecture:
    d, v, h = c.hidden_size, c.vocab_size, c.num_attention_heads
    hd = resolve_head_dim(d, h)
    kv = _kv_heads(c)
    ff = c.ffn_hidden_size if c.ffn_hidden_size is not None else 4 * d
    p = "transformer.h.{i}"
    # query_key_value: (h + 2·kv)·hd × d (see the table above);  dense: d × d;  MLP: ff × d, d × ff
    layer = [
        *linear(
            f"{p}.self_attention.query_key_value", "attn/qkv", (h + 2 * kv) * hd, d, bias=c.bias
        ),
        *linear(f"{p}.self_attention.dense", "attn/o_proj", d, d, bias=c.bias),
        *fc_mlp(f"{p}.mlp.dense_h_to_4h", f"{p}.mlp.dense_4h_to_h", d, ff, bias=c.bias),
        *_layer_norms(c, p, d),
    ]
    embed = "transformer.word_embeddings.weight"
    tensors = (
        embedding("transformer.word_embeddings", "embed/tokens", v, d),
        *norm("transformer.ln_f", "final_norm", d, bias=True),
        *lm_head("lm_head", v, d, tied_to=embed if c.tie_word_embeddings else None),
    )
    notes: tuple[str, ...] = (
        ("ffn_hidden_size=null: d_ff = 4 · hidden_size",) if c.ffn_hidden_size is None else ())
    if c.new_decoder_architecture and kv < h:
        # transformers' FalconAttention reshapes K and V to num_heads before the cache update
        notes += (f"{CACHE_NOTE} the {kv} KV heads serving engines (vLLM, TGI, llama.cpp) keep; "
                  f"transformers' Falcon cache holds K and V repeated to all {h} heads, "
                  f"{h // kv}× these bytes",)
    return Architecture(
        shape=Shape(c.num_hidden_layers, d, h, kv, hd, ff, v,
                    c.tie_word_embeddings, c.max_position_embeddings),
        tensors=tensors,
        layer_groups=uniform_layers(c.num_hidden_layers, layer, Attention(h, kv, hd, hd)),
        notes=notes,
    )
