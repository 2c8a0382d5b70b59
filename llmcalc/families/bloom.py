"""BLOOM (``model_type: bloom``): ALiBi (no position table), a LayerNorm on the embeddings, tied head.

Source: BigScience 2022 (BLOOM); Press et al. 2022 (ALiBi); tensor names and shapes as in
transformers ``BloomForCausalLM``. The MLP is always 4 · hidden_size wide.
"""

from __future__ import annotations

from pydantic import AliasChoices
from pydantic import Field

from llmcalc.families._base import Architecture
from llmcalc.families._base import FamilyConfig
from llmcalc.families._base import Size
from llmcalc.families._base import embedding
from llmcalc.families._base import fc_mlp
from llmcalc.families._base import fused_mha
from llmcalc.families._base import lm_head
from llmcalc.families._base import norm
from llmcalc.families._base import resolve_head_dim
from llmcalc.families._base import uniform_layers
from llmcalc.model.spec import Attention
from llmcalc.model.spec import Shape


class BloomConfig(FamilyConfig):
    transformers_class = "BloomConfig"

    hidden_size: Size = Field(validation_alias=AliasChoices("n_embed", "hidden_size"))
    n_layer: Size = Field(validation_alias=AliasChoices("n_layer", "num_hidden_layers"))
    n_head: Size = Field(validation_alias=AliasChoices("n_head", "num_attention_heads"))
    vocab_size: Size
    tie_word_embeddings: bool


def describe(c: BloomConfig) -> Architecture:
    d, v, h = c.hidden_size, c.vocab_size, c.n_head
    hd = resolve_head_dim(d, h, heads_field="n_head")
    ff = 4 * d
    p = "transformer.h.{i}"
    # query_key_value: 3d × d;  dense: d × d;  dense_h_to_4h: 4d × d;  dense_4h_to_h: d × 4d; biased
    layer = [
        *norm(f"{p}.input_layernorm", "attn/norm", d, bias=True),
        *fused_mha(f"{p}.self_attention.query_key_value", f"{p}.self_attention.dense", d, bias=True),
        *norm(f"{p}.post_attention_layernorm", "mlp/norm", d, bias=True),
        *fc_mlp(f"{p}.mlp.dense_h_to_4h", f"{p}.mlp.dense_4h_to_h", d, ff, bias=True),
    ]
    embed = "transformer.word_embeddings.weight"
    tensors = (
        embedding("transformer.word_embeddings", "embed/tokens", v, d),
        *norm("transformer.word_embeddings_layernorm", "embed/norm", d, bias=True),
        *norm("transformer.ln_f", "final_norm", d, bias=True),
        *lm_head("lm_head", v, d, tied_to=embed if c.tie_word_embeddings else None),
    )
    return Architecture(
        shape=Shape(c.n_layer, d, h, h, hd, ff, v, c.tie_word_embeddings),
        tensors=tensors,
        layer_groups=uniform_layers(c.n_layer, layer, Attention(h, h, hd, hd)),
    )
