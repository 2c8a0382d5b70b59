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

from dataclasses import replace
from typing import ClassVar

from llmcalc.families._base import (
    Architecture,
    Count,
    FamilyConfig,
    LayerPlan,
    Size,
    check_top_k,
    linear,
    llama_outer_tensors,
    norm,
    planned_layers,
    require,
    routed_experts,
    router,
    split_plan,
    swiglu,
)
from llmcalc.families._moe import (
    cross_plans,
    crossed_name,
    indexer,
    listed_plan,
    mlp_kinds_plan,
    mtp_note,
    mtp_params,
)
from llmcalc.spec import Attention, LayerGroup, LayerSet, MoE, Run, Shape, Tensor

DENSE, SPARSE = "dense", "moe"


class DeepseekConfig(FamilyConfig):
    """Fields both generations read; defaults are DeepSeek-V2's unless a subclass overrides them."""

    indexed: ClassVar[bool] = False  # DeepSeek sparse attention: an indexer per layer (V3.2, GLM-5)

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


class SarvamMlaConfig(DeepseekV3Config):
    """Sarvam MLA: DeepSeek-V3's model (transformers builds DeepseekV3ForCausalLM), its own defaults."""

    transformers_class = "SarvamMLAConfig"

    n_routed_experts: Size = 128
    first_k_dense_replace: Count = 1
    q_lora_rank: Size | None = None


class Glm4MoeLiteConfig(DeepseekV3Config):
    """GLM-4.7-Flash (glm4_moe_lite): DeepSeek-V3's MLA and MoE; dense layers as mlp_layer_types
    lists them (default: the first)."""

    transformers_class = "Glm4MoeLiteConfig"

    n_routed_experts: Size = 64
    num_experts_per_tok: Size = 4
    first_k_dense_replace: Count = 1
    q_lora_rank: Size | None = 768
    qk_nope_head_dim: Size = 192
    v_head_dim: Size = 256
    mlp_layer_types: list[str] | None = None


class DeepseekV32Config(DeepseekV3Config):
    """DeepSeek-V3.2 (DeepSeek-AI 2025, "DeepSeek-V3.2-Exp"): V3 plus the lightning indexer of
    DeepSeek sparse attention in every layer; each query attends to at most index_topk tokens."""

    transformers_class = "DeepseekV32Config"
    indexed: ClassVar[bool] = True

    mlp_layer_types: list[str] | None = None
    index_n_heads: Size = 64
    index_head_dim: Size = 128
    index_topk: Size = 2048


class GlmMoeDsaConfig(DeepseekV32Config):
    """GLM-5 (glm_moe_dsa): DeepSeek-V3.2's structure; a layer listed "shared" in indexer_types reuses
    the previous indexer's choice and holds no indexer (default: every layer has its own)."""

    transformers_class = "GlmMoeDsaConfig"

    index_n_heads: Size = 32
    indexer_types: list[str] | None = None
    index_topk_freq: Size = 1
    index_skip_topk_offset: Count = 2
    index_topk_pattern: str | list[str] | None = None


def mlp_plan(c: DeepseekConfig) -> LayerPlan:
    """Dense and MoE layers: as mlp_layer_types lists them, else the first first_k_dense_replace dense."""
    L = c.num_hidden_layers
    kinds = getattr(c, "mlp_layer_types", None)
    if kinds is None:
        return split_plan(L, at=c.first_k_dense_replace, before=DENSE, after=SPARSE)
    return mlp_kinds_plan(kinds, L, dense=DENSE, sparse=SPARSE)


FULL_INDEX, SHARED_INDEX = "indexer", "shared_indexer"


def indexer_plan(c: DeepseekConfig) -> LayerPlan:
    """Which layers run their own indexer (all, for V3.2; GLM-5 may share one between layers)."""
    L = c.num_hidden_layers
    if not isinstance(c, GlmMoeDsaConfig):
        return {FULL_INDEX: LayerSet.span(0, L)}
    kinds = c.indexer_types
    if kinds is None and c.index_topk_pattern is not None:
        pattern = c.index_topk_pattern
        kinds = [{"F": "full", "S": "shared"}.get(ch, ch) for ch in pattern]
    if kinds is not None:
        names = {"full": FULL_INDEX, "shared": SHARED_INDEX}
        return listed_plan(kinds, L, field="indexer_types", names=names)
    # full when max(i − offset + 1, 0) is a multiple of index_topk_freq
    f, o = c.index_topk_freq, c.index_skip_topk_offset
    full = LayerSet((Run(0, min(o, L), 0, 1, 1), Run(max(o, 0), L, o - 1, f, 1)))
    shared = LayerSet((Run(o, L, o, f, f - 1),)) if f > 1 else LayerSet(())
    plan = {FULL_INDEX: LayerSet(tuple(r for r in full.runs if len(r))), SHARED_INDEX: shared}
    return {k: v for k, v in plan.items() if v}


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
    if c.indexed:
        groups = _indexed_groups(c, attn, blocks, attention)
    else:
        groups = planned_layers(mlp_plan(c), lambda kind: ([*attn, *blocks[kind]], attention))
    n_mtp = c.num_nextn_predict_layers or 0
    mtp = mtp_params([*attn, *indexer_tensors(c), *blocks[SPARSE]], d=d, vocab=v, modules=n_mtp)
    notes = (mtp_note(n_mtp, mtp),) if n_mtp else ()
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
        unbuilt=(("mtp_params", mtp),) if n_mtp else (),
    )


def indexer_tensors(c: DeepseekConfig) -> list[Tensor]:
    """A layer's own indexer (none unless the config has DeepSeek sparse attention)."""
    if not c.indexed:
        return []
    require(
        c.q_lora_rank is not None,
        "q_lora_rank",
        "the indexer reads the query latent: set q_lora_rank",
    )
    assert c.q_lora_rank is not None
    heads: int = getattr(c, "index_n_heads")  # noqa: B009 - only the indexed configs have it
    dim: int = getattr(c, "index_head_dim")  # noqa: B009
    return indexer("model.layers.{i}.self_attn.indexer", c.hidden_size, c.q_lora_rank, heads, dim)


def _indexed_groups(
    c: DeepseekConfig, attn: list[Tensor], blocks: dict[str, list[Tensor]], attention: Attention
) -> tuple[LayerGroup, ...]:
    """Layers with the sparse-attention indexer (wq_b from the query latent, wk, k_norm, weights)."""
    own = indexer_tensors(c)
    parts = {FULL_INDEX: own, SHARED_INDEX: []}
    plan = cross_plans(indexer_plan(c), mlp_plan(c))
    # What a token attends to (DeepSeek-V3.2-Exp §2.1; transformers modeling_deepseek_v32.py,
    # DeepseekV32Indexer.forward): the indexer scores every earlier token, q [H_I, d_I] · k [d_I]
    # then the weighted sum over its H_I heads, 2·H_I·(d_I + 1) FLOPs per pair; the softmax
    # attention then reads only the index_topk best. A "shared" layer reuses the previous choice.
    heads: int = getattr(c, "index_n_heads")  # noqa: B009 - only the indexed configs have it
    dim: int = getattr(c, "index_head_dim")  # noqa: B009
    topk: int = getattr(c, "index_topk")  # noqa: B009
    scoring = {FULL_INDEX: 2 * heads * (dim + 1), SHARED_INDEX: 0}
    return tuple(
        LayerGroup(
            crossed_name(kinds, plan),
            layers,
            (*attn, *parts[kinds[0]], *blocks[kinds[1]]),
            replace(
                attention,
                topk=topk,
                index_pair_flops=scoring[kinds[0]],
                index_key_dim=dim if kinds[0] == FULL_INDEX else 0,  # its cached keys [d_I]
            ),
        )
        for kinds, layers in plan.items()
    )
