"""GPT-J (``model_type: gptj``): one LayerNorm feeding attention and MLP in parallel, biased head.

Source: Wang & Komatsuzaki 2021 (GPT-J-6B); tensor names and shapes as in transformers
``GPTJForCausalLM``. Rotary positions on ``rotary_dim`` dimensions of each head add no parameters.
"""

from __future__ import annotations

from pydantic import AliasChoices, Field

from llmcalc.families._base import (
    Architecture,
    FamilyConfig,
    Size,
    embedding,
    linear,
    lm_head,
    norm,
    resolve_head_dim,
    uniform_layers,
)
from llmcalc.spec import Attention, Shape


class GPTJConfig(FamilyConfig):
    transformers_class = "GPTJConfig"

    n_embd: Size = Field(validation_alias=AliasChoices("n_embd", "hidden_size"))
    n_layer: Size = Field(validation_alias=AliasChoices("n_layer", "num_hidden_layers"))
    n_head: Size = Field(validation_alias=AliasChoices("n_head", "num_attention_heads"))
    vocab_size: Size
    n_positions: Size | None = Field(
        None, validation_alias=AliasChoices("n_positions", "max_position_embeddings")
    )
    n_inner: Size | None = None  # null means 4 · n_embd
    tie_word_embeddings: bool = False


def describe(c: GPTJConfig) -> Architecture:
    d, v, h = c.n_embd, c.vocab_size, c.n_head
    hd = resolve_head_dim(d, h, None, hidden_field="n_embd", heads_field="n_head")
    ff = c.n_inner if c.n_inner is not None else 4 * d
    p = "transformer.h.{i}"
    # q, k, v, out: d × d without bias;  fc_in: ff × d, fc_out: d × ff with bias;  one LayerNorm
    layer = [
        *norm(f"{p}.ln_1", "norm", d, bias=True),
        *linear(f"{p}.attn.q_proj", "attn/q_proj", d, d, bias=False),
        *linear(f"{p}.attn.k_proj", "attn/k_proj", d, d, bias=False),
        *linear(f"{p}.attn.v_proj", "attn/v_proj", d, d, bias=False),
        *linear(f"{p}.attn.out_proj", "attn/o_proj", d, d, bias=False),
        *linear(f"{p}.mlp.fc_in", "mlp/fc_in", ff, d, bias=True),
        *linear(f"{p}.mlp.fc_out", "mlp/fc_out", d, ff, bias=True),
    ]
    wte = "transformer.wte.weight"
    tensors = (
        embedding("transformer.wte", "embed/tokens", v, d),
        *norm("transformer.ln_f", "final_norm", d, bias=True),
        *lm_head("lm_head", v, d, tied_to=wte if c.tie_word_embeddings else None, bias=True),
    )
    notes = ("n_inner=null: d_ff = 4 · n_embd",) if c.n_inner is None else ()
    return Architecture(
        shape=Shape(
            num_layers=c.n_layer,
            hidden_size=d,
            num_heads=h,
            num_kv_heads=h,
            head_dim=hd,
            intermediate_size=ff,
            vocab_size=v,
            tied_embeddings=c.tie_word_embeddings,
            max_position_embeddings=c.n_positions,
        ),
        tensors=tensors,
        layer_groups=uniform_layers(c.n_layer, layer, Attention(h, h, hd, hd)),
        notes=notes,
    )
