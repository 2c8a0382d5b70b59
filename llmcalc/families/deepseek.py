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

Rows on the same structure, each by what it changes: ``sarvam_mla``, ``glm4_moe_lite``,
``deepseek_v32`` and ``glm_moe_dsa`` (the lightning indexer of DeepSeek sparse attention), ``axk1``
(a norm after each MoE block), ``axk2`` (a gated query projection and low-rank gated layer norms),
``dots3_note_text`` (indexed, sliding and plain layers, each with its own MLA sizes) and ``hy_v4``
(shared indexer choices as GLM-5's, a gated attention output, attention sinks and hyper-connections).
DeepSeek-V4 has no MLA: it is its own module, deepseek_v4.
"""

from __future__ import annotations

from dataclasses import replace
from typing import ClassVar

from pydantic import AliasChoices
from pydantic import Field

from llmcalc.families._base import MAX_SIZE
from llmcalc.families._base import Architecture
from llmcalc.families._base import Count
from llmcalc.families._base import FamilyConfig
from llmcalc.families._base import LayerPlan
from llmcalc.families._base import Size
from llmcalc.families._base import check_top_k
from llmcalc.families._base import linear
from llmcalc.families._base import llama_outer_tensors
from llmcalc.families._base import norm
from llmcalc.families._base import planned_layers
from llmcalc.families._base import require
from llmcalc.families._base import routed_experts
from llmcalc.families._base import router
from llmcalc.families._base import split_plan
from llmcalc.families._base import swiglu
from llmcalc.families._hyper import hyper_connection
from llmcalc.families._hyper import hyper_head
from llmcalc.families._moe import cross_plans
from llmcalc.families._moe import crossed_name
from llmcalc.families._moe import indexer
from llmcalc.families._moe import listed_plan
from llmcalc.families._moe import mlp_kinds_plan
from llmcalc.families._moe import mtp_note
from llmcalc.families._moe import mtp_params
from llmcalc.model.spec import Attention
from llmcalc.model.spec import LayerGroup
from llmcalc.model.spec import LayerSet
from llmcalc.model.spec import MoE
from llmcalc.model.spec import Run
from llmcalc.model.spec import Shape
from llmcalc.model.spec import Tensor

DENSE, SPARSE = "dense", "moe"


class DeepseekConfig(FamilyConfig):
    """Fields both generations read; defaults are DeepSeek-V2's unless a subclass overrides them."""

    indexed: ClassVar[bool] = False  # DeepSeek sparse attention: an indexer per layer (V3.2, GLM-5)
    post_moe_norm: ClassVar[bool] = False  # an RMSNorm on the MoE block's output (A.X-K1)
    q_latent_required: ClassVar[bool] = False  # the model has no plain q_proj (A.X-K1, A.X-K2)
    q_gate: ClassVar[bool] = False  # q and an output gate from [q latent normed, raw] (A.X-K2)

    hidden_size: Size
    num_hidden_layers: Size
    num_attention_heads: Size
    intermediate_size: Size  # the dense layers
    moe_intermediate_size: Size  # one routed (and one shared) expert
    vocab_size: Size
    max_position_embeddings: Size | None = None
    n_routed_experts: Size = 64
    n_shared_experts: Size = 2
    # DeepseekV2Config leaves it unset: the total is defined, the active count is not
    num_experts_per_tok: Size | None = None
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

    mlp_bias: bool  # dense and shared-expert MLP biases


class DeepseekV3Config(DeepseekConfig):
    transformers_class = "DeepseekV3Config"

    n_routed_experts: Size
    n_shared_experts: Size
    num_experts_per_tok: Size
    first_k_dense_replace: Count


class SarvamMlaConfig(DeepseekV3Config):
    """Sarvam MLA: DeepSeek-V3's model (transformers builds DeepseekV3ForCausalLM), its own defaults."""

    transformers_class = "SarvamMLAConfig"

    q_lora_rank: Size | None = None


class Glm4MoeLiteConfig(DeepseekV3Config):
    """GLM-4.7-Flash (glm4_moe_lite): DeepSeek-V3's MLA and MoE; dense layers as mlp_layer_types
    lists them (default: the first)."""

    transformers_class = "Glm4MoeLiteConfig"

    first_k_dense_replace: Count = 1
    q_lora_rank: Size | None
    qk_nope_head_dim: Size
    v_head_dim: Size
    mlp_layer_types: list[str] | None = None


class AXK1Config(DeepseekV3Config):
    """A.X-K1 (SK Telecom): DeepSeek-V3 with an RMSNorm on each MoE block's output
    (mlp.post_mlp_layernorm [d]); queries always through the q latent; MoE where i >=
    first_k_dense_replace and i % moe_layer_freq == 0, unless mlp_layer_types lists the layers."""

    transformers_class = "AXK1Config"
    post_moe_norm: ClassVar[bool] = True
    q_latent_required: ClassVar[bool] = True

    first_k_dense_replace: Count = 1
    moe_layer_freq: Size = 1
    q_lora_rank: Size | None  # must be set: A.X-K1 has no plain q_proj
    mlp_layer_types: list[str] | None = None


class DeepseekV32Config(DeepseekV3Config):
    """DeepSeek-V3.2 (DeepSeek-AI 2025, "DeepSeek-V3.2-Exp"): V3 plus the lightning indexer of
    DeepSeek sparse attention in every layer; each query attends to at most index_topk tokens."""

    transformers_class = "DeepseekV32Config"
    indexed: ClassVar[bool] = True

    mlp_layer_types: list[str] | None = None
    index_n_heads: Size
    index_head_dim: Size
    index_topk: Size


class AXK2Config(DeepseekV32Config):
    """A.X-K2 (SK Telecom): DeepSeek-V3.2 (lightning indexer in every layer) where one projection of the
    query latent, normed and raw side by side (2·q_lora), gives both the queries and a sigmoid gate on
    the attention output (q_gate_proj, in place of q_b_proj); input_layernorm, and on MoE layers
    post_attention_layernorm, is an RMSNorm followed by a low-rank sigmoid gate (gated_norm_rank)."""

    transformers_class = "AXK2Config"
    q_latent_required: ClassVar[bool] = True
    q_gate: ClassVar[bool] = True

    first_k_dense_replace: Count = 1
    moe_layer_freq: Size = 1
    kv_lora_rank: Size
    q_lora_rank: Size | None
    qk_rope_head_dim: Size
    v_head_dim: Size
    qk_nope_head_dim: Size
    gated_norm_rank: Size  # the low-rank gate of the gated norms


class Dots3NoteTextConfig(DeepseekV32Config):
    """dots3-note's language model (rednote): DeepSeek-V3.2's MLA and MoE where each layer type has
    its own attention: indexed layers (an indexer, the main MLA sizes), sliding-window layers (no
    indexer, their own MLA sizes: the swa_* fields), plain full layers when use_dsa is false; every
    layer adds an RMSNorm on the rotary key (k_rope_only_layernorm [rope]) and a per-head sigmoid
    gate on the attention output (g_proj h × d); shared experts of shared_experts_intermediate_size."""

    transformers_class = "Dots3NoteTextConfig"
    q_latent_required: ClassVar[bool] = True

    shared_experts_intermediate_size: Size = Field(
        validation_alias=AliasChoices(
            "shared_experts_intermediate_size", "moe_shared_expert_intermediate_size"
        ),
    )
    first_k_dense_replace: Count = 1
    moe_layer_freq: Size | list[Count] = 1
    q_lora_rank: Size | None
    sliding_window: Size | None = Field(
        512, validation_alias=AliasChoices("sliding_window", "sliding_window_size")
    )
    layer_types: list[str] | None = None
    use_dsa: bool | None = None
    use_sliding_window: bool = True
    swa_num_attention_heads: Size = 64
    swa_q_lora_rank: Size = 1024
    swa_kv_lora_rank: Size = 1024
    swa_head_dim: Size = 256
    swa_qk_nope_head_dim: Size = 192
    swa_qk_rope_head_dim: Size | None = None  # absent: swa_head_dim − swa_qk_nope_head_dim
    swa_v_head_dim: Size = 128
    # transformers' saved form: per layer index, the sizes that differ from the global fields
    per_layer_config: dict[str, dict[str, object]] | None = None

    def sliding(self) -> Dots3NoteTextConfig:
        """The sliding layers' attention sizes, under DeepSeek's field names: the swa_* fields, or
        the global fields with a saved config's per_layer_config entry for them."""
        if self.per_layer_config is not None:
            entries = list(self.per_layer_config.values())
            entry = entries[0] if entries else {}
            for key, value in entry.items():
                require(
                    key in _PER_LAYER_SIZES and isinstance(value, int) and 0 < value <= MAX_SIZE,
                    f"per_layer_config.{key}",
                    f"not read ({value!r}): one of {', '.join(_PER_LAYER_SIZES)}, a positive size",
                )
            return self.model_copy(update=dict(entry))
        rope = self.swa_qk_rope_head_dim
        if rope is None:
            require(
                self.swa_head_dim > self.swa_qk_nope_head_dim,
                "swa_head_dim",
                f"must exceed swa_qk_nope_head_dim ({self.swa_qk_nope_head_dim})",
            )
            rope = self.swa_head_dim - self.swa_qk_nope_head_dim
        update = {
            "num_attention_heads": self.swa_num_attention_heads,
            "q_lora_rank": self.swa_q_lora_rank,
            "kv_lora_rank": self.swa_kv_lora_rank,
            "qk_nope_head_dim": self.swa_qk_nope_head_dim,
            "qk_rope_head_dim": rope,
            "v_head_dim": self.swa_v_head_dim,
        }
        return self.model_copy(update=update)


class GlmMoeDsaConfig(DeepseekV32Config):
    """GLM-5 (glm_moe_dsa): DeepSeek-V3.2's structure; a layer listed "shared" in indexer_types reuses
    the previous indexer's choice and holds no indexer (default: every layer has its own)."""

    transformers_class = "GlmMoeDsaConfig"

    q_lora_rank: Size | None
    qk_nope_head_dim: Size
    v_head_dim: Size
    indexer_types: list[str] | None = None
    index_topk_freq: Size = 1
    index_skip_topk_offset: Count = 2
    index_topk_pattern: str | list[str] | None = None


class HYV4Config(DeepseekV32Config):
    """HY-V4 (Tencent Hy4; transformers HYV4Config, docstring checkpoint tencent/Hy4-preview):
    DeepSeek-V3.2's MLA and lightning indexer, a layer listed "shared" in indexer_types reusing the
    last full layer's choice (default: full at 0 and where i % 4 == 1); a sigmoid gate per head and
    channel on the attention output (gate_proj d → h·v_head_dim), a learned sink per head, and
    independent hyper-connections over hc_mult streams (llmcalc.families._hyper: no stream mixing);
    dense layers as mlp_layer_types lists them (default: the first)."""

    transformers_class = "HYV4Config"
    q_latent_required: ClassVar[bool] = True

    first_k_dense_replace: Count = 1
    qk_nope_head_dim: Size
    v_head_dim: Size
    indexer_types: list[str] | None = None
    hc_mult: Size


def mlp_plan(c: DeepseekConfig) -> LayerPlan:
    """Dense and MoE layers: as mlp_layer_types lists them, else the first first_k_dense_replace dense
    and, where a config has moe_layer_freq f, MoE only where i % f == 0 after them."""
    L, k = c.num_hidden_layers, c.first_k_dense_replace
    kinds = getattr(c, "mlp_layer_types", None)
    if kinds is not None:
        return mlp_kinds_plan(kinds, L, dense=DENSE, sparse=SPARSE)
    f: int | list[int] = getattr(c, "moe_layer_freq", 1)
    if isinstance(f, list):  # dots3-note: MoE where the list says, after the dense prefix
        listed = ["sparse" if i >= k and f[i] else "dense" for i in range(len(f))]
        return listed_plan(listed, L, field="moe_layer_freq", names={"dense": DENSE, "sparse": SPARSE})
    if f == 1:
        return split_plan(L, at=k, before=DENSE, after=SPARSE)
    dense = (Run(0, min(k, L), 0, 1, 1), Run(k, L, 1, f, f - 1))
    plan = {
        DENSE: LayerSet(tuple(r for r in dense if len(r))),
        SPARSE: LayerSet(tuple(r for r in (Run(k, L, 0, f, 1),) if len(r))),
    }
    return {kind: layers for kind, layers in plan.items() if layers}


FULL_INDEX, SHARED_INDEX = "indexer", "shared_indexer"


def indexer_plan(c: DeepseekConfig) -> LayerPlan:
    """Which layers run their own indexer (all, for V3.2; GLM-5 may share one between layers)."""
    L = c.num_hidden_layers
    if isinstance(c, Dots3NoteTextConfig):
        return _dots3_plan(c)
    if isinstance(c, HYV4Config):  # full at 0 and i % 4 == 1: GLM-5's rule, every 4th from 2 on
        if c.indexer_types is None:
            return _periodic_indexers(L, freq=4, offset=2)
        names = {"full": FULL_INDEX, "shared": SHARED_INDEX}
        return listed_plan(c.indexer_types, L, field="indexer_types", names=names)
    if not isinstance(c, GlmMoeDsaConfig):
        return {FULL_INDEX: LayerSet.span(0, L)}
    kinds = c.indexer_types
    if kinds is None and c.index_topk_pattern is not None:
        pattern = c.index_topk_pattern
        kinds = [{"F": "full", "S": "shared"}.get(ch, ch) for ch in pattern]
    if kinds is not None:
        names = {"full": FULL_INDEX, "shared": SHARED_INDEX}
        return listed_plan(kinds, L, field="indexer_types", names=names)
    return _periodic_indexers(L, freq=c.index_topk_freq, offset=c.index_skip_topk_offset)


def _periodic_indexers(L: int, *, freq: int, offset: int) -> LayerPlan:
    """GLM-5's rule: a layer runs its own indexer when max(i − offset + 1, 0) is a multiple of
    freq, else reuses the last one's choice."""
    f, o = freq, offset
    full = LayerSet((Run(0, min(o, L), 0, 1, 1), Run(max(o, 0), L, o - 1, f, 1)))
    shared = LayerSet((Run(o, L, o, f, f - 1),)) if f > 1 else LayerSet(())
    plan = {FULL_INDEX: LayerSet(tuple(r for r in full.runs if len(r))), SHARED_INDEX: shared}
    return {k: v for k, v in plan.items() if v}


PLAIN, SLIDING_KIND = "full_attention", "sliding_attention"
_PER_LAYER_SIZES = (
    "num_attention_heads",
    "num_key_value_heads",
    "q_lora_rank",
    "kv_lora_rank",
    "qk_nope_head_dim",
    "qk_rope_head_dim",
    "v_head_dim",
    "head_dim",
)


def _check_per_layer(c: Dots3NoteTextConfig, plan: LayerPlan) -> None:
    """A saved per_layer_config: one entry, the same, for each sliding layer and for no other."""
    entries = c.per_layer_config
    if entries is None:
        return
    sliding = plan.get(SLIDING_KIND, LayerSet(()))
    for key, entry in entries.items():
        require(
            key.isdigit() and int(key) in sliding,
            f"per_layer_config.{key}",
            "sizes of a layer that is not a sliding layer are not supported",
        )
        require(
            entry == next(iter(entries.values())),
            f"per_layer_config.{key}",
            "sliding layers of differing sizes are not supported",
        )
    require(
        len(entries) == len(sliding) or not next(iter(entries.values()), {}),
        "per_layer_config",
        f"lists {len(entries)} of the {len(sliding)} sliding layers",
    )


def _dots3_plan(c: Dots3NoteTextConfig) -> LayerPlan:
    """dots3-note's layer types: as listed (with use_dsa turning full into indexed layers or back),
    else indexed where i < 2 or i % 4 == 1, sliding elsewhere (all indexed without sliding)."""
    L = c.num_hidden_layers
    dsa = c.use_dsa is not False
    full = FULL_INDEX if dsa else PLAIN
    # use_dsa (default true unless a saved per_layer_config is given) makes every full layer
    # indexed, false every indexed layer plain; null leaves the listed types as they are
    names = {"indexed_attention": full, "full_attention": full, "sliding_attention": SLIDING_KIND}
    if c.use_dsa is None and c.per_layer_config is not None:
        names = {"indexed_attention": FULL_INDEX, "full_attention": PLAIN, "sliding_attention": SLIDING_KIND}
    if c.layer_types is not None:
        return listed_plan(c.layer_types, L, field="layer_types", names=names)
    if not c.use_sliding_window:
        return {full: LayerSet.span(0, L)}
    plan = {
        full: LayerSet((Run(0, min(2, L), 0, 1, 1), Run(2, L, 1, 4, 1))),
        SLIDING_KIND: LayerSet((Run(2, L, 2, 4, 3),)),
    }
    plan = {k: LayerSet(tuple(r for r in v.runs if len(r))) for k, v in plan.items()}
    return {k: v for k, v in plan.items() if v}


def mla(p: str, c: DeepseekConfig) -> list[Tensor]:
    """Multi-head latent attention (DeepSeek-V2 §2.1), h heads.

    q: q_a d → q_lora, RMSNorm, q_b q_lora → h·(nope+rope)   (or q_proj d → h·(nope+rope));
    kv_a: d → kv_lora + rope (latent and shared rotary key), RMSNorm over kv_lora;
    kv_b: kv_lora → h·(nope + v);  o: h·v → d.
    """
    d, h, b = c.hidden_size, c.num_attention_heads, c.attention_bias
    qk = c.qk_nope_head_dim + c.qk_rope_head_dim
    # the dense MLA decoders and LongCat-Flash pass their own configs with DeepSeek's field names
    q_gate, q_latent_required = getattr(c, "q_gate", False), getattr(c, "q_latent_required", False)
    require(
        c.q_lora_rank is not None or not q_latent_required,
        "q_lora_rank",
        "must be set: this model's queries always go through the q latent",
    )
    # LongCat-Flash's attention reads the config's qk_head_dim (derived from nope + rope only
    # when not given, so a saved one stays as it is when its parts change)
    q_dim = getattr(c, "qk_head_dim", None) or qk
    if c.q_lora_rank is None:
        q = linear(f"{p}.q_proj", "attn/q_proj", h * q_dim, d, bias=False)
    elif q_gate:
        # A.X-K2: [q_a_layernorm(q_a), q_a] (2·q_lora) → h·(qk + v): queries and an output gate
        r = c.q_lora_rank
        q = [
            *linear(f"{p}.q_a_proj", "attn/q_a_proj", r, d, bias=b),
            *norm(f"{p}.q_a_layernorm", "attn/q_a_norm", r, bias=False),
            *linear(f"{p}.q_gate_proj", "attn/q_gate_proj", h * (qk + c.v_head_dim), 2 * r, bias=False),
        ]
    else:
        r = c.q_lora_rank
        q = [
            *linear(f"{p}.q_a_proj", "attn/q_a_proj", r, d, bias=b),
            *norm(f"{p}.q_a_layernorm", "attn/q_a_norm", r, bias=False),
            *linear(f"{p}.q_b_proj", "attn/q_b_proj", h * q_dim, r, bias=False),
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


def gates_sinks_and_hyper(p: str, c: DeepseekConfig) -> list[Tensor]:
    """HY-V4's additions to a layer (none elsewhere): the attention's output gate gate_proj
    [h·v_head_dim, d] (a sigmoid per head and channel) and sinks [h] (one more logit per head in
    the softmax), and the attention's and MLP's hyper-connections over hc_mult streams (iHC: pre
    and post weights only, fn [2·s, s·d])."""
    if not isinstance(c, HYV4Config):
        return []
    d, h, s = c.hidden_size, c.num_attention_heads, c.hc_mult
    a = f"{p}.self_attn"
    return [
        *linear(f"{a}.gate_proj", "attn/gate_proj", h * c.v_head_dim, d, bias=False),
        Tensor(f"{a}.sinks", (h,), "attn/sinks"),
        *hyper_connection(f"{p}.attn_hc", "hyper/attn", d, streams=s, mix=False),
        *hyper_connection(f"{p}.ffn_hc", "hyper/mlp", d, streams=s, mix=False),
    ]


def layer_norm(p: str, component: str, c: DeepseekConfig, *, gated: bool) -> list[Tensor]:
    """A layer's RMSNorm [d]; gated (A.X-K2): y = norm(x) · sigmoid(fc2(silu(fc1(y)))), with
    fc1 d → gated_norm_rank and fc2 back, the norm's weight then at ``{p}.norm``."""
    d = c.hidden_size
    if not isinstance(c, AXK2Config) or not gated:
        return norm(p, component, d, bias=False)
    r = c.gated_norm_rank
    return [
        *norm(f"{p}.norm", component, d, bias=False),
        *linear(f"{p}.mlp.fc1", f"{component}/gate_fc1", r, d, bias=False),
        *linear(f"{p}.mlp.fc2", f"{component}/gate_fc2", d, r, bias=False),
    ]


def describe(c: DeepseekConfig) -> Architecture:
    d, v, E, k = c.hidden_size, c.vocab_size, c.n_routed_experts, c.num_experts_per_tok
    if k is not None:
        check_top_k(k, E, k_field="num_experts_per_tok", e_field="n_routed_experts")
    h, L = c.num_attention_heads, c.num_hidden_layers
    p = "model.layers.{i}"
    gated = isinstance(c, AXK2Config)
    attn = [
        *layer_norm(f"{p}.input_layernorm", "attn/norm", c, gated=gated),
        *mla(f"{p}.self_attn", c),
        *gates_sinks_and_hyper(p, c),
    ]
    mlp_bias = getattr(c, "mlp_bias", False)
    dense_mlp = [
        *norm(f"{p}.post_attention_layernorm", "mlp/norm", d, bias=False),
        *swiglu(f"{p}.mlp", "mlp", d, c.intermediate_size, bias=mlp_bias),
    ]
    # router E × d;  routed experts [E, 2·ff, d], [E, d, ff];  shared experts: one SwiGLU of s·ff.
    moe_mlp = [
        *layer_norm(f"{p}.post_attention_layernorm", "mlp/norm", c, gated=gated),
        *router(f"{p}.mlp.gate", d, E),
        *routed_experts(f"{p}.mlp.experts", d, c.moe_intermediate_size, E),
        *swiglu(
            f"{p}.mlp.shared_experts",
            "moe/shared_experts",
            d,
            getattr(c, "shared_experts_intermediate_size", c.moe_intermediate_size)
            * c.n_shared_experts,
            bias=mlp_bias,
        ),
        *(norm(f"{p}.mlp.post_mlp_layernorm", "moe/post_norm", d, bias=False) if c.post_moe_norm else []),
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
    notes: tuple[str, ...] = ()
    if isinstance(c, HYV4Config) and n_mtp:  # its model.mtp_layers: of no structure known here
        notes, n_mtp = (f"num_nextn_predict_layers={n_mtp}: the checkpoint's model.mtp_layers are "
                        "not built by transformers, nor counted (llmcalc does not size them)",), 0
    mtp = mtp_params([*attn, *indexer_tensors(c), *blocks[SPARSE]], d=d, vocab=v, modules=n_mtp)
    if n_mtp:
        notes = (mtp_note(n_mtp, mtp),)
    return Architecture(
        shape=Shape(L, d, h, h, qk, c.moe_intermediate_size, v,
                    c.tie_word_embeddings, c.max_position_embeddings),
        tensors=(
            *llama_outer_tensors(v, d, tied=c.tie_word_embeddings),
            *(hyper_head("model.hc_head", "hyper/final_mixer/hc_head", d, streams=c.hc_mult)
              if isinstance(c, HYV4Config) else []),
        ),
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
    heads: int = getattr(c, "index_n_heads")  # noqa: B009 - only the indexed configs have it
    dim: int = getattr(c, "index_head_dim")  # noqa: B009
    topk: int | None = getattr(c, "index_topk", None)
    # What a token attends to (DeepSeek-V3.2-Exp §2.1; transformers modeling_deepseek_v32.py,
    # DeepseekV32Indexer.forward): the indexer scores every earlier token, q [H_I, d_I] · k [d_I]
    # then the weighted sum over its H_I heads, 2·H_I·(d_I + 1) FLOPs per pair, and caches its key
    # [d_I]; the softmax attention then reads only the index_topk best. A "shared" layer (GLM-5)
    # reuses the previous layer's choice: it scores nothing and caches no index key.
    indexed = replace(attention, topk=topk, index_pair_flops=2 * heads * (dim + 1), index_key_dim=dim)
    kinds: dict[str, tuple[list[Tensor], Attention]] = {
        FULL_INDEX: ([*attn, *own], indexed),
        SHARED_INDEX: (attn, replace(attention, topk=topk)),
    }
    if isinstance(c, Dots3NoteTextConfig):
        kinds = _dots3_kinds(c, attn, own, indexed)
    plan = cross_plans(indexer_plan(c), mlp_plan(c))
    return tuple(
        LayerGroup(
            crossed_name(pair, plan),
            layers,
            (*kinds[pair[0]][0], *blocks[pair[1]]),
            kinds[pair[0]][1],
        )
        for pair, layers in plan.items()
    )


def _dots3_kinds(
    c: Dots3NoteTextConfig, attn: list[Tensor], own: list[Tensor], indexed: Attention
) -> dict[str, tuple[list[Tensor], Attention]]:
    """dots3-note's three attention kinds; each adds k_rope_only_layernorm [rope] and g_proj h × d."""
    p, d = "model.layers.{i}.self_attn", c.hidden_size

    def extra(cfg: DeepseekConfig) -> list[Tensor]:
        return [
            *norm(f"{p}.k_rope_only_layernorm", "attn/k_rope_norm", cfg.qk_rope_head_dim, bias=False),
            *linear(f"{p}.g_proj", "attn/g_proj", cfg.num_attention_heads, d, bias=False),
        ]

    _check_per_layer(c, indexer_plan(c))
    swa = c.sliding()
    h, qk = swa.num_attention_heads, swa.qk_nope_head_dim + swa.qk_rope_head_dim
    latent = swa.kv_lora_rank + swa.qk_rope_head_dim
    sliding = Attention(h, h, qk, swa.v_head_dim, window=c.sliding_window, kv_latent_dim=latent)
    swa_attn = [attn[0], *mla(p, swa), *extra(swa)]  # attn[0]: the input norm
    plain = replace(indexed, topk=None, index_pair_flops=0, index_key_dim=0)
    # its indexed layers' rotary cos/sin are float32 (Dots3NoteTextModel.forward), so the rotated
    # indexer key is, and transformers' cache keeps it in float32 at any model dtype
    fp32_keys = replace(indexed, index_key_fp32=True)
    return {
        FULL_INDEX: ([*attn, *extra(c), *own], fp32_keys),
        PLAIN: ([*attn, *extra(c)], plain),
        SLIDING_KIND: (swa_attn, sliding),
    }
