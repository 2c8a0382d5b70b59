"""Gemma 3n text decoder (``gemma3n_text``; Google 2025, "Gemma 3n"): per-layer embeddings, AltUp,
LAuReL and KV sharing across the last layers.

Tensor names and shapes as in transformers ``Gemma3nForCausalLM``:
- per-layer embeddings: a second table ``embed_tokens_per_layer`` [V_p, L·p] (p =
  hidden_size_per_layer_input) and ``per_layer_model_projection`` [L·p, d] with a norm [p]; each
  layer gates its slice in (``per_layer_input_gate`` [p, d], ``per_layer_projection`` [d, p], a norm);
- AltUp (Baykal et al. 2023) keeps n = altup_num_inputs copies of the residual stream: n − 1
  ``altup_projections`` and ``altup_unembed_projections`` [d, d], and per layer a router [n, d] with
  its norm, prediction coefficients [n², n], correction coefficients [n, n] and an output scale [d];
- LAuReL (Menghani et al. 2024): a low-rank residual, ``linear_left`` [r, d], ``linear_right`` [d, r]
  and a norm;
- KV sharing: the last ``num_kv_shared_layers`` layers attend with the keys and values of the last
  earlier layer of their attention type; they hold no k_proj, v_proj or k_norm and cache nothing.
Attention is Gemma 3's (q/k norms over head_dim, v norm without weights), 4 of every 5 layers sliding.
"""

from __future__ import annotations

from llmcalc.families._base import (
    FULL,
    SLIDING,
    Architecture,
    Count,
    DecoderConfig,
    LayerPlan,
    Size,
    embedding,
    layer_kinds,
    linear,
    llama_outer_tensors,
    norm,
    require,
    split_plan,
    swiglu,
)
from llmcalc.families._moe import cross_plans, crossed_name
from llmcalc.spec import Attention, LayerGroup, Tensor

OWN, SHARED = "own_kv", "shared_kv"


class Gemma3nTextConfig(DecoderConfig):
    transformers_class = "Gemma3nTextConfig"

    vocab_size: Size = 262400
    vocab_size_per_layer_input: Size = 262144
    hidden_size: Size = 2048
    hidden_size_per_layer_input: Size = 256
    intermediate_size: Size | list[Size] = 16384  # type: ignore[assignment]  # one, or one per layer
    num_hidden_layers: Size = 35
    num_attention_heads: Size = 8
    num_key_value_heads: Size | None = 2
    head_dim: Size | None = 256
    max_position_embeddings: Size | None = 32768
    tie_word_embeddings: bool = True
    attention_bias: bool = False
    sliding_window: Size = 512
    layer_types: list[str] | None = None
    altup_num_inputs: Size = 4
    num_kv_shared_layers: Count = 15
    laurel_rank: Size = 64

    @property
    def ff(self) -> int:
        ff = self.intermediate_size
        if isinstance(ff, int):
            return ff
        L = self.num_hidden_layers
        require(
            len(ff) == L, "intermediate_size", f"has {len(ff)} entries, num_hidden_layers is {L}"
        )
        require(
            len(set(ff)) == 1, "intermediate_size", "per-layer values that differ are not supported"
        )
        return ff[0]


# ---- per-layer embeddings (Gemma 3n, Gemma 4): one home for both ---------------------------


def per_layer_input_outer(L: int, d: int, p: int, *, vocab: int) -> list[Tensor]:
    """Outside the layers: the packed table ``embed_tokens_per_layer`` [V_p, L·p], the projection
    of the hidden state to every layer's slice ``per_layer_model_projection`` [L·p, d] and its norm
    [p]."""
    return [
        embedding("model.embed_tokens_per_layer", "embed/per_layer", vocab, L * p),
        *linear(
            "model.per_layer_model_projection", "per_layer/model_projection", L * p, d, bias=False
        ),
        *norm("model.per_layer_projection_norm", "per_layer/projection_norm", p, bias=False),
    ]


def per_layer_input_layer(p: str, d: int, pl: int) -> list[Tensor]:
    """In each layer: gate d → p, projection p → d, a norm [d]."""
    return [
        *linear(f"{p}.per_layer_input_gate", "per_layer/input_gate", pl, d, bias=False),
        *linear(f"{p}.per_layer_projection", "per_layer/projection", d, pl, bias=False),
        *norm(f"{p}.post_per_layer_input_norm", "per_layer/norm", d, bias=False),
    ]


def describe(c: Gemma3nTextConfig) -> Architecture:
    d, v, L, n = c.hidden_size, c.vocab_size, c.num_hidden_layers, c.altup_num_inputs
    h, hd, kv, pl, r = (
        c.num_attention_heads,
        c.resolved_head_dim,
        c.resolved_kv_heads,
        c.hidden_size_per_layer_input,
        c.laurel_rank,
    )
    b = c.attention_bias
    p, a = "model.layers.{i}", "model.layers.{i}.self_attn"
    common = [
        *linear(f"{a}.q_proj", "attn/q_proj", h * hd, d, bias=b),
        *norm(f"{a}.q_norm", "attn/q_norm", hd, bias=False),
        *linear(f"{a}.o_proj", "attn/o_proj", d, h * hd, bias=b),
        *swiglu(f"{p}.mlp", "mlp", d, c.ff),
        *[
            t
            for x in (
                "input_layernorm",
                "post_attention_layernorm",
                "pre_feedforward_layernorm",
                "post_feedforward_layernorm",
            )
            for t in norm(f"{p}.{x}", f"norm/{x}", d, bias=False)
        ],
        # AltUp: output scale [d], correction [n, n], prediction [n², n], router [n, d] and its norm
        Tensor(f"{p}.altup.correct_output_scale", (d,), "altup/correct_output_scale"),
        *linear(f"{p}.altup.correction_coefs", "altup/correction_coefs", n, n, bias=False),
        *linear(f"{p}.altup.prediction_coefs", "altup/prediction_coefs", n * n, n, bias=False),
        *linear(f"{p}.altup.modality_router", "altup/modality_router", n, d, bias=False),
        *norm(f"{p}.altup.router_norm", "altup/router_norm", d, bias=False),
        # LAuReL: d → r → d, a norm
        *linear(f"{p}.laurel.linear_left", "laurel/linear_left", r, d, bias=False),
        *linear(f"{p}.laurel.linear_right", "laurel/linear_right", d, r, bias=False),
        *norm(f"{p}.laurel.post_laurel_norm", "laurel/norm", d, bias=False),
        *per_layer_input_layer(p, d, pl),
    ]
    own_kv = [
        *linear(f"{a}.k_proj", "attn/k_proj", kv * hd, d, bias=b),
        *linear(f"{a}.v_proj", "attn/v_proj", kv * hd, d, bias=b),
        *norm(f"{a}.k_norm", "attn/k_norm", hd, bias=False),
    ]
    windows = {SLIDING: c.sliding_window, FULL: None}
    attention_plan = layer_kinds(c.layer_types, L, pattern=5)
    sharing: LayerPlan = split_plan(
        L, at=L - min(c.num_kv_shared_layers, L), before=OWN, after=SHARED
    )
    plan = cross_plans(attention_plan, sharing)
    groups = tuple(
        LayerGroup(
            crossed_name(kinds, plan),
            layers,
            (*common, *(own_kv if kinds[1] == OWN else [])),
            Attention(h, kv, hd, hd, window=windows[kinds[0]], kv_shared=kinds[1] == SHARED),
        )
        for kinds, layers in plan.items()
    )
    tensors = (
        *llama_outer_tensors(v, d, tied=c.tie_word_embeddings),
        *per_layer_input_outer(L, d, pl, vocab=c.vocab_size_per_layer_input),
        *[
            t
            for j in range(n - 1)
            for t in linear(f"model.altup_projections.{j}", "altup/projections", d, d, bias=False)
        ],
        *[
            t
            for j in range(n - 1)
            for t in linear(
                f"model.altup_unembed_projections.{j}",
                "altup/unembed_projections",
                d,
                d,
                bias=False,
            )
        ],
    )
    return Architecture(
        shape=c.shape(tied=c.tie_word_embeddings), tensors=tensors, layer_groups=groups
    )
