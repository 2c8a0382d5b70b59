"""OPT (``model_type: opt``): learned positions offset by 2, optional projections around the decoder.

Source: Zhang et al. 2022 (OPT); tensor names and shapes as in transformers ``OPTForCausalLM``.
The position table has ``max_position_embeddings + 2`` rows (OPT reserves the first two ids); when
``word_embed_proj_dim`` differs from ``hidden_size`` (opt-350m) the token embedding and the head live
in that smaller width and ``project_in`` / ``project_out`` map to and from the decoder width.
"""

from __future__ import annotations

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
from llmcalc.families._base import uniform_layers
from llmcalc.model.spec import Attention
from llmcalc.model.spec import Shape
from llmcalc.model.spec import Tensor

POSITION_OFFSET = 2  # transformers OPTLearnedPositionalEmbedding.offset


class OPTConfig(FamilyConfig):
    transformers_class = "OPTConfig"

    hidden_size: Size
    num_hidden_layers: Size
    num_attention_heads: Size
    ffn_dim: Size
    vocab_size: Size
    max_position_embeddings: Size
    word_embed_proj_dim: Size | None = None  # null means hidden_size
    do_layer_norm_before: bool
    remove_final_layer_norm: bool = Field(validation_alias="_remove_final_layer_norm")
    enable_bias: bool
    layer_norm_elementwise_affine: bool
    tie_word_embeddings: bool


def describe(c: OPTConfig) -> Architecture:
    d, v, ff, h = c.hidden_size, c.vocab_size, c.ffn_dim, c.num_attention_heads
    hd = resolve_head_dim(d, h)
    wd = c.word_embed_proj_dim if c.word_embed_proj_dim is not None else d
    affine = c.layer_norm_elementwise_affine

    def layer_norm(name: str, component: str) -> list[Tensor]:
        # nn.LayerNorm(elementwise_affine=False) holds no parameters
        return norm(name, component, d, bias=True) if affine else []

    p = "model.decoder.layers.{i}"
    b = c.enable_bias
    # q, k, v, out: d × d;  fc1: ffn_dim × d;  fc2: d × ffn_dim  (biases with enable_bias)
    layer = [
        *linear(f"{p}.self_attn.q_proj", "attn/q_proj", d, d, bias=b),
        *linear(f"{p}.self_attn.k_proj", "attn/k_proj", d, d, bias=b),
        *linear(f"{p}.self_attn.v_proj", "attn/v_proj", d, d, bias=b),
        *linear(f"{p}.self_attn.out_proj", "attn/o_proj", d, d, bias=b),
        *layer_norm(f"{p}.self_attn_layer_norm", "attn/norm"),
        *fc_mlp(f"{p}.fc1", f"{p}.fc2", d, ff, bias=b),
        *layer_norm(f"{p}.final_layer_norm", "mlp/norm"),
    ]
    # project_out: wd × d;  project_in: d × wd  (only when the widths differ; no bias)
    projections = (
        [
            *linear("model.decoder.project_out", "embed_proj/out", wd, d, bias=False),
            *linear("model.decoder.project_in", "embed_proj/in", d, wd, bias=False),
        ]
        if wd != d
        else []
    )
    final = c.do_layer_norm_before and not c.remove_final_layer_norm
    embed = "model.decoder.embed_tokens.weight"
    tensors = (
        embedding("model.decoder.embed_tokens", "embed/tokens", v, wd),
        # positions: (max_position_embeddings + 2) × d
        embedding(
            "model.decoder.embed_positions",
            "embed/positions",
            c.max_position_embeddings + POSITION_OFFSET,
            d,
        ),
        *projections,
        *(layer_norm("model.decoder.final_layer_norm", "final_norm") if final else []),
        *lm_head("lm_head", v, wd, tied_to=embed if c.tie_word_embeddings else None),
    )
    notes = [f"position table: max_position_embeddings + {POSITION_OFFSET} rows (OPT offset)"]
    if wd != d:
        notes.append(f"word_embed_proj_dim={wd} != hidden_size={d}: project_in/out added")
    return Architecture(
        shape=Shape(c.num_hidden_layers, d, h, h, hd, ff, v,
                    c.tie_word_embeddings, c.max_position_embeddings),
        tensors=tensors,
        layer_groups=uniform_layers(c.num_hidden_layers, layer, Attention(h, h, hd, hd)),
        notes=tuple(notes),
    )
