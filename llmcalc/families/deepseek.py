"""DeepSeek-V2 and DeepSeek-V3: multi-head latent attention (MLA) and DeepSeekMoE.

Source: DeepSeek-AI 2024, "DeepSeek-V2" §2.1 (MLA) and §2.2 (DeepSeekMoE); DeepSeek-AI 2024,
"DeepSeek-V3 Technical Report" §2.1. Tensor names and shapes as in transformers
``DeepseekV2ForCausalLM`` / ``DeepseekV3ForCausalLM``, which do not build V3's multi-token-prediction
module: the counts here are of the main model (the published 671B), not the 685B checkpoint.

MLA: queries go through a low-rank latent when ``q_lora_rank`` is set (V2-Lite has none); keys and
values share one latent of ``kv_lora_rank`` plus a decoupled rotary key of ``qk_rope_head_dim``,
which is what the KV cache holds per token. The first ``first_k_dense_replace`` layers are dense
SwiGLU layers; the rest hold routed experts, a router and ``n_shared_experts`` shared experts
(one SwiGLU of ``n_shared_experts · moe_intermediate_size``).
"""

from __future__ import annotations

from llmcalc.families._base import (
    Architecture,
    Count,
    FamilyConfig,
    Size,
    check_top_k,
    linear,
    llama_outer_tensors,
    norm,
    planned_layers,
    routed_experts,
    router,
    split_plan,
    swiglu,
)
from llmcalc.spec import Attention, MoE, Shape, Tensor

DENSE, SPARSE = "dense", "moe"


class DeepseekConfig(FamilyConfig):
    """Fields both generations read; defaults are DeepSeek-V2's unless a subclass overrides them."""

    hidden_size: Size
    num_hidden_layers: Size
    num_attention_heads: Size
    intermediate_size: Size  # the dense layers
    moe_intermediate_size: Size  # one routed (and one shared) expert
    vocab_size: Size
    max_position_embeddings: Size | None = None
    n_routed_experts: Size = 64
    n_shared_experts: Size = 2
    num_experts_per_tok: Size
    first_k_dense_replace: Count = 0
    q_lora_rank: Size | None = 1536  # null: a plain q_proj (DeepSeek-V2-Lite)
    kv_lora_rank: Size = 512
    qk_nope_head_dim: Size = 128
    qk_rope_head_dim: Size = 64
    v_head_dim: Size = 128
    tie_word_embeddings: bool = False
    attention_bias: bool = False
    # DeepSeek-V3's multi-token-prediction layers: transformers does not build them, not counted
    num_nextn_predict_layers: Count | None = None


class DeepseekV2Config(DeepseekConfig):
    transformers_class = "DeepseekV2Config"

    mlp_bias: bool = False  # dense and shared-expert MLP biases


class DeepseekV3Config(DeepseekConfig):
    transformers_class = "DeepseekV3Config"

    n_routed_experts: Size = 256
    n_shared_experts: Size = 1
    num_experts_per_tok: Size = 8
    first_k_dense_replace: Count = 3


def mla(p: str, c: DeepseekConfig) -> list[Tensor]:
    """Multi-head latent attention (DeepSeek-V2 §2.1), h heads.

    q: q_a d → q_lora, RMSNorm, q_b q_lora → h·(nope+rope)   (or q_proj d → h·(nope+rope));
    kv_a: d → kv_lora + rope (latent and shared rotary key), RMSNorm over kv_lora;
    kv_b: kv_lora → h·(nope + v);  o: h·v → d.
    """
    d, h, b = c.hidden_size, c.num_attention_heads, c.attention_bias
    qk = c.qk_nope_head_dim + c.qk_rope_head_dim
    if c.q_lora_rank is None:
        q = linear(f"{p}.q_proj", "attn/q_proj", h * qk, d, bias=False)
    else:
        r = c.q_lora_rank
        q = [
            *linear(f"{p}.q_a_proj", "attn/q_a_proj", r, d, bias=b),
            *norm(f"{p}.q_a_layernorm", "attn/q_a_norm", r, bias=False),
            *linear(f"{p}.q_b_proj", "attn/q_b_proj", h * qk, r, bias=False),
        ]
    kv_rank = c.kv_lora_rank
    return [
        *q,
        *linear(
            f"{p}.kv_a_proj_with_mqa", "attn/kv_a_proj", kv_rank + c.qk_rope_head_dim, d, bias=b
        ),
        *norm(f"{p}.kv_a_layernorm", "attn/kv_a_norm", kv_rank, bias=False),
        *linear(
            f"{p}.kv_b_proj",
            "attn/kv_b_proj",
            h * (c.qk_nope_head_dim + c.v_head_dim),
            kv_rank,
            bias=False,
        ),
        *linear(f"{p}.o_proj", "attn/o_proj", d, h * c.v_head_dim, bias=b),
    ]


def describe(c: DeepseekConfig) -> Architecture:
    d, v, E, k = c.hidden_size, c.vocab_size, c.n_routed_experts, c.num_experts_per_tok
    check_top_k(k, E, k_field="num_experts_per_tok", e_field="n_routed_experts")
    h, L = c.num_attention_heads, c.num_hidden_layers
    p = "model.layers.{i}"
    attn = [
        *norm(f"{p}.input_layernorm", "attn/norm", d, bias=False),
        *mla(f"{p}.self_attn", c),
        *norm(f"{p}.post_attention_layernorm", "mlp/norm", d, bias=False),
    ]
    mlp_bias = getattr(c, "mlp_bias", False)
    dense_mlp = swiglu(f"{p}.mlp", "mlp", d, c.intermediate_size, bias=mlp_bias)
    # router E × d;  routed experts [E, 2·ff, d], [E, d, ff];  shared experts: one SwiGLU of s·ff.
    moe_mlp = [
        *router(f"{p}.mlp.gate", d, E),
        *routed_experts(f"{p}.mlp.experts", d, c.moe_intermediate_size, E),
        *swiglu(
            f"{p}.mlp.shared_experts",
            "moe/shared_experts",
            d,
            c.moe_intermediate_size * c.n_shared_experts,
            bias=mlp_bias,
        ),
    ]
    blocks = {DENSE: dense_mlp, SPARSE: moe_mlp}
    qk = c.qk_nope_head_dim + c.qk_rope_head_dim
    # The cache holds the kv latent and the shared rotary key: kv_lora_rank + qk_rope_head_dim.
    attention = Attention(h, h, qk, c.v_head_dim, kv_latent_dim=c.kv_lora_rank + c.qk_rope_head_dim)
    plan = split_plan(L, at=c.first_k_dense_replace, before=DENSE, after=SPARSE)
    groups = planned_layers(plan, lambda kind: ([*attn, *blocks[kind]], attention))
    notes = (
        (
            f"num_nextn_predict_layers={c.num_nextn_predict_layers}: the multi-token-prediction "
            "module is not counted (transformers does not build it)",
        )
        if c.num_nextn_predict_layers
        else ()
    )
    return Architecture(
        shape=Shape(
            num_layers=L,
            hidden_size=d,
            num_heads=h,
            num_kv_heads=h,
            head_dim=qk,
            intermediate_size=c.moe_intermediate_size,
            vocab_size=v,
            tied_embeddings=c.tie_word_embeddings,
            max_position_embeddings=c.max_position_embeddings,
        ),
        tensors=llama_outer_tensors(v, d, tied=c.tie_word_embeddings),
        layer_groups=groups,
        moe=MoE(num_experts=E, experts_per_tok=k, shared_experts=c.n_shared_experts),
        notes=notes,
    )
