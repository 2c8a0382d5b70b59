"""GQA decoders whose MLPs are fine-grained routed experts, often beside shared experts and after a
few dense layers (the DeepSeekMoE layout with ordinary grouped-query attention).

One structure, many rows: ``glm4_moe`` (GLM-4.5), ``sarvam_moe``, ``dots1`` (rednote dots.llm1),
``exaone_moe`` (EXAONE MoE), ``ernie4_5_moe`` (Baidu ERNIE 4.5), ``hunyuan_v1_moe`` (Tencent
Hunyuan-A13B), ``minimax_m2`` (MiniMax-M2), ``afmoe`` (Arcee AFMoE), ``flex_olmo`` (FlexOlmo),
``granitemoeshared`` (IBM Granite MoE with a shared MLP), ``cohere2_moe`` (Cohere 2 MoE),
``solar_open`` (Upstage Solar Open), ``kolibri1`` (Aleph Alpha Kolibri-1), ``hy_v3`` (Tencent Hy3),
``mellum`` (JetBrains Mellum 2), ``laguna`` (poolside Laguna: query heads per layer),
``minimax_m3_vl_text`` (MiniMax-M3: block-sparse layers with an indexer), ``aria_text`` (Aria's
language model; experts stored input-first), ``flint`` (Recursive Flint), ``beam`` (Reflection
Beam). A row names
the fields its transformers config reads and the few switches that change tensors: where the router
and shared experts live, which norms a layer holds, q/k norms (over head_dim or the whole
projection), biases. Tensor names and shapes as in the transformers 5.24 ``*ForCausalLM`` classes,
which fuse the routed experts into gate_up_proj [E, 2·ff, d] and down_proj [E, d, ff] (a row may
store them otherwise: ``expert_tensors``).
"""

from __future__ import annotations

from typing import ClassVar
from typing import Literal

from pydantic import AliasChoices
from pydantic import Field

from llmcalc.families._base import FULL
from llmcalc.families._base import SLIDING
from llmcalc.families._base import Architecture
from llmcalc.families._base import Count
from llmcalc.families._base import FamilyConfig
from llmcalc.families._base import LayerPlan
from llmcalc.families._base import Size
from llmcalc.families._base import check_top_k
from llmcalc.families._base import gqa_projections
from llmcalc.families._base import layer_kinds
from llmcalc.families._base import linear
from llmcalc.families._base import llama_outer_tensors
from llmcalc.families._base import norm
from llmcalc.families._base import override_plan
from llmcalc.families._base import periodic_plan
from llmcalc.families._base import plan_from_kinds
from llmcalc.families._base import require
from llmcalc.families._base import resolve_kv_heads
from llmcalc.families._base import routed_experts
from llmcalc.families._base import router
from llmcalc.families._base import split_plan
from llmcalc.families._base import swiglu
from llmcalc.families._moe import cross_plans
from llmcalc.families._moe import crossed_name
from llmcalc.families._moe import experts_transposed
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
QkNorm = Literal["head", "all"] | None


class GqaMoeConfig(FamilyConfig):
    """The fields every row reads; a row adds its own and maps them onto the properties below."""

    moe_module: ClassVar[str] = "mlp"
    router_name: ClassVar[str] = "gate"  # router module under the MoE block (its .weight)
    shared_name: ClassVar[str] = "shared_experts"
    qk_norm_names: ClassVar[tuple[str, str]] = ("q_norm", "k_norm")
    layer_norms: ClassVar[tuple[str, ...]] = ("input_layernorm", "post_attention_layernorm")
    experts_field: ClassVar[str] = "n_routed_experts"
    top_k_field: ClassVar[str] = "num_experts_per_tok"
    shared_experts_field: ClassVar[str | None] = None  # how many shared experts (None: none)
    dense_layers_field: ClassVar[str | None] = None  # the leading dense layers (None: none)
    qk_norm_kind: ClassVar[QkNorm] = None  # RMSNorm on q and k: per head, over all, or none
    floor_head_dim: ClassVar[bool] = True  # head_dim absent: hidden_size // heads, as transformers

    hidden_size: Size
    num_hidden_layers: Size
    num_attention_heads: Size
    num_key_value_heads: Size | None = None  # absent: equal to the heads (MHA)
    head_dim: Size | None = None
    intermediate_size: Size
    vocab_size: Size
    max_position_embeddings: Size | None = None
    tie_word_embeddings: bool = False

    # ---- what a row maps its fields onto --------------------------------------------------------
    @property
    def routed(self) -> int:
        value: int = getattr(self, self.experts_field)
        return value

    @property
    def top_k(self) -> int:
        value: int = getattr(self, self.top_k_field)
        return value

    @property
    def expert_ff(self) -> int:
        value: int = getattr(self, "moe_intermediate_size", self.intermediate_size)
        return value

    @property
    def dense_ff(self) -> int:
        return self.intermediate_size

    @property
    def shared_ff(self) -> int:
        """The shared experts as one SwiGLU of this width (0: none): ``shared_experts_field``
        experts, each as wide as a routed one."""
        if self.shared_experts_field is None:
            return 0
        count: int = getattr(self, self.shared_experts_field)
        return self.expert_ff * count

    @property
    def qk_norm(self) -> QkNorm:
        return self.qk_norm_kind

    @property
    def qkv_bias(self) -> bool:
        return bool(getattr(self, "attention_bias", False))

    @property
    def o_bias(self) -> bool:
        return self.qkv_bias

    @property
    def mlp_bias(self) -> bool:
        return False

    @property
    def head_bias(self) -> bool:
        return False

    @property
    def window(self) -> int | None:
        value: int | None = getattr(self, "sliding_window", None)
        return value

    @property
    def resolved_head_dim(self) -> int:
        if self.head_dim is not None:
            return self.head_dim
        d, h = self.hidden_size, self.num_attention_heads
        require(
            self.floor_head_dim or d % h == 0,
            "num_attention_heads",
            f"num_attention_heads ({h}) must divide hidden_size ({d}) when head_dim is not given",
        )
        require(
            d >= h, "num_attention_heads", f"num_attention_heads ({h}) exceeds hidden_size ({d})"
        )
        return d // h

    def mlp_plan(self) -> LayerPlan:
        """Which layers are dense and which MoE: the first ``dense_layers_field`` dense, the rest MoE
        (default: all MoE)."""
        if self.dense_layers_field is None:
            return {SPARSE: LayerSet.span(0, self.num_hidden_layers)}
        return _first_k(self, getattr(self, self.dense_layers_field))

    def attention_plan(self) -> LayerPlan:
        """Which layers attend within the sliding window (default: none)."""
        return {FULL: LayerSet.span(0, self.num_hidden_layers)}

    # transformers builds the shared experts even when their count is 0 (then with no elements)
    always_shared: ClassVar[bool] = False

    @property
    def has_shared(self) -> bool:
        return self.always_shared or self.shared_ff > 0

    def attn_extra(self, p: str) -> list[Tensor]:
        return []

    def heads_plan(self) -> dict[int, LayerSet]:
        """Each layer's query-head count (default: num_attention_heads in every layer)."""
        return {self.num_attention_heads: LayerSet.span(0, self.num_hidden_layers)}

    def attn_gate(self, p: str, heads: int) -> list[Tensor]:
        """An output gate sized by the layer's head count (default: none)."""
        return []

    def attn_kind_tensors(self, p: str, kind: str) -> list[Tensor]:
        """Tensors that only layers of one attention kind hold (default: none)."""
        return []

    def attention_of(self, kind: str, heads: int, kv_heads: int, head_dim: int) -> Attention:
        """What a layer of ``kind`` attends to: all earlier tokens, or a window (sliding layers)."""
        window = self.window if kind == SLIDING else None
        return Attention(heads, kv_heads, head_dim, head_dim, window=window)

    def mlp_tensors(self, p: str, component: str, ff: int) -> list[Tensor]:
        """A dense MLP of width ``ff`` (the dense layers', the shared experts'): SwiGLU."""
        return swiglu(p, component, self.hidden_size, ff, bias=self.mlp_bias)

    def router_tensors(self, p: str) -> list[Tensor]:
        return router(f"{p}.{self.router_name}", self.hidden_size, self.routed)

    def shared_tensors(self, p: str) -> list[Tensor]:
        return self.mlp_tensors(f"{p}.{self.shared_name}", "moe/shared_experts", self.shared_ff)

    def expert_tensors(self, p: str) -> list[Tensor]:
        """The routed experts, fused: gate_up_proj [E, 2·ff, d], down_proj [E, d, ff]."""
        return routed_experts(p, self.hidden_size, self.expert_ff, self.routed)


def _first_k(c: GqaMoeConfig, k: int) -> LayerPlan:
    return split_plan(c.num_hidden_layers, at=k, before=DENSE, after=SPARSE)


def _mlp_kinds(kinds: list[str], c: GqaMoeConfig) -> LayerPlan:
    return mlp_kinds_plan(kinds, c.num_hidden_layers, dense=DENSE, sparse=SPARSE)


# ---- the rows -------------------------------------------------------------------------------------


class Glm4MoeConfig(GqaMoeConfig):
    """GLM-4.5 / GLM-4.6 (Zhipu AI 2025): q/k/v biases (o_proj none), optional q/k norms."""

    transformers_class = "Glm4MoeConfig"
    always_shared: ClassVar[bool] = True
    shared_experts_field: ClassVar[str | None] = "n_shared_experts"
    dense_layers_field: ClassVar[str | None] = "first_k_dense_replace"

    moe_intermediate_size: Size
    n_routed_experts: Size
    n_shared_experts: Count
    num_experts_per_tok: Size
    first_k_dense_replace: Count
    use_qk_norm: bool
    attention_bias: bool
    # GLM's multi-token-prediction layers: transformers does not build them (see mtp_params)
    num_nextn_predict_layers: Count | None = None

    @property
    def o_bias(self) -> bool:
        return False

    @property
    def qk_norm(self) -> QkNorm:
        return "head" if self.use_qk_norm else None


class SarvamMoeConfig(Glm4MoeConfig):
    """Sarvam MoE: GLM-4.5's model (transformers builds Glm4MoeForCausalLM) with its own defaults."""

    transformers_class = "SarvamMoeConfig"

    n_shared_experts: Count = Field(
        validation_alias=AliasChoices("n_shared_experts", "num_shared_experts")
    )


class Dots1Config(GqaMoeConfig):
    """dots.llm1 (rednote 2025): q/k RMSNorm over head_dim, biases on q/k/v/o with attention_bias."""

    transformers_class = "Dots1Config"
    always_shared: ClassVar[bool] = True
    shared_experts_field: ClassVar[str | None] = "n_shared_experts"
    dense_layers_field: ClassVar[str | None] = "first_k_dense_replace"
    qk_norm_kind: ClassVar[QkNorm] = "head"

    moe_intermediate_size: Size
    n_routed_experts: Size
    n_shared_experts: Count
    num_experts_per_tok: Size
    first_k_dense_replace: Count
    attention_bias: bool
    sliding_window: Size | None
    max_window_layers: Count
    layer_types: list[str] | None = None

    def attention_plan(self) -> LayerPlan:
        if self.layer_types is not None:
            return layer_kinds(self.layer_types, self.num_hidden_layers, pattern=1)
        if self.sliding_window is None:
            return super().attention_plan()
        plan = split_plan(
            self.num_hidden_layers, at=self.max_window_layers, before=FULL, after=SLIDING
        )
        return plan


class ExaoneMoeConfig(GqaMoeConfig):
    """EXAONE MoE (LG AI Research): q/k norms over head_dim, sliding layers (3 of every 4)."""

    transformers_class = "ExaoneMoeConfig"
    always_shared: ClassVar[bool] = True
    experts_field: ClassVar[str] = "num_experts"
    shared_experts_field: ClassVar[str | None] = "num_shared_experts"
    qk_norm_kind: ClassVar[QkNorm] = "head"

    num_key_value_heads: Size | None = None
    moe_intermediate_size: Size
    num_experts: Size
    num_experts_per_tok: Size
    num_shared_experts: Count
    first_k_dense_replace: Count
    mlp_layer_types: list[str] | None = None
    sliding_window: Size | None
    sliding_window_pattern: Count | None
    layer_types: list[str] | None = None

    def mlp_plan(self) -> LayerPlan:
        if self.mlp_layer_types is not None:
            return _mlp_kinds(self.mlp_layer_types, self)
        return _first_k(self, self.first_k_dense_replace)

    def attention_plan(self) -> LayerPlan:
        if self.layer_types is not None:
            return layer_kinds(self.layer_types, self.num_hidden_layers, pattern=1)
        if self.sliding_window is None or not self.sliding_window_pattern:
            return super().attention_plan()
        return layer_kinds(None, self.num_hidden_layers, pattern=self.sliding_window_pattern)


class Ernie45MoeConfig(GqaMoeConfig):
    """ERNIE 4.5 MoE (Baidu 2025): MoE layers from moe_layer_start_index to moe_layer_end_index every
    moe_layer_interval-th; use_bias on every linear and the lm_head; a learned router score bias."""

    transformers_class = "Ernie4_5_MoeConfig"
    experts_field: ClassVar[str] = "moe_num_experts"
    top_k_field: ClassVar[str] = "moe_k"
    shared_experts_field: ClassVar[str | None] = "moe_num_shared_experts"

    num_key_value_heads: Size | None = None
    tie_word_embeddings: bool
    use_bias: bool
    moe_intermediate_size: Size
    moe_k: Size
    moe_num_experts: Size
    moe_num_shared_experts: Count
    moe_layer_start_index: Count
    moe_layer_end_index: int  # -1: the last layer
    moe_layer_interval: Size

    @property
    def qkv_bias(self) -> bool:
        return self.use_bias

    @property
    def mlp_bias(self) -> bool:
        return self.use_bias

    @property
    def head_bias(self) -> bool:
        return self.use_bias

    def mlp_plan(self) -> LayerPlan:
        # MoE where start <= i <= end and (i + 1) % interval == 0; dense elsewhere
        L, P = self.num_hidden_layers, self.moe_layer_interval
        end = L - 1 if self.moe_layer_end_index == -1 else min(self.moe_layer_end_index, L - 1)
        start = self.moe_layer_start_index
        sparse = LayerSet((Run(start, end + 1, P - 1, P, 1),))
        if not sparse:
            return {DENSE: LayerSet.span(0, L)}
        dense_runs = [Run(0, min(start, L), 0, 1, 1), Run(end + 1, L, 0, 1, 1)]
        if P > 1:
            dense_runs.append(Run(start, end + 1, 0, P, P - 1))
        dense = LayerSet(tuple(r for r in dense_runs if len(r)))
        plan = {DENSE: dense, SPARSE: sparse}
        return dict(
            sorted(((k, v) for k, v in plan.items() if v), key=lambda kv: next(iter(kv[1])))
        )

    def router_tensors(self, p: str) -> list[Tensor]:
        # the router [E, d] and its score-correction bias, stored [1, E] as a parameter
        return [
            *router(f"{p}.gate", self.hidden_size, self.routed),
            Tensor(f"{p}.gate.moe_statics.e_score_correction_bias", (1, self.routed), "moe/router"),
        ]


class HunYuanMoeV1Config(GqaMoeConfig):
    """Hunyuan-A13B (Tencent 2025): q/k RMSNorm over head_dim (query_layernorm, key_layernorm), a
    shared MLP of intermediate_size beside experts of intermediate_size, router ``gate.wg``."""

    transformers_class = "HunYuanMoEV1Config"
    needed = ("head_dim",)
    router_name: ClassVar[str] = "gate.wg"
    shared_name: ClassVar[str] = "shared_mlp"
    qk_norm_names: ClassVar[tuple[str, str]] = ("query_layernorm", "key_layernorm")
    experts_field: ClassVar[str] = "num_experts"
    top_k_field: ClassVar[str] = "moe_topk"
    floor_head_dim: ClassVar[bool] = False
    qk_norm_kind: ClassVar[QkNorm] = "head"

    num_experts: Size
    moe_topk: Size | list[Size]  # released configs list it per layer
    attention_bias: bool

    @property
    def top_k(self) -> int:
        k = self.moe_topk
        if isinstance(k, int):
            return k
        require(
            len(k) == self.num_hidden_layers,
            "moe_topk",
            f"has {len(k)} entries, num_hidden_layers is {self.num_hidden_layers}",
        )
        require(len(set(k)) == 1, "moe_topk", "per-layer values that differ are not supported")
        return k[0]

    @property
    def expert_ff(self) -> int:
        return self.intermediate_size

    @property
    def shared_ff(self) -> int:
        return self.intermediate_size


class MiniMaxM2Config(GqaMoeConfig):
    """MiniMax-M2 (2025): 256 experts, no shared expert, q/k RMSNorm over the whole projections."""

    transformers_class = "MiniMaxM2Config"
    experts_field: ClassVar[str] = "num_local_experts"

    intermediate_size: Size  # one expert
    num_experts_per_tok: Size
    num_local_experts: Size

    @property
    def qkv_bias(self) -> bool:
        return False

    @property
    def qk_norm(self) -> QkNorm:
        return "all"


class AfmoeConfig(GqaMoeConfig):
    """Arcee AFMoE (Trinity): a sigmoid output gate on attention (gate_proj h·hd × d), q/k norms over
    head_dim, four norms a layer, num_dense_layers dense layers first, 3 of every 4 layers sliding."""

    transformers_class = "AfmoeConfig"
    always_shared: ClassVar[bool] = True
    router_name: ClassVar[str] = "router.gate"
    experts_field: ClassVar[str] = "num_experts"
    shared_experts_field: ClassVar[str | None] = "num_shared_experts"
    dense_layers_field: ClassVar[str | None] = "num_dense_layers"
    qk_norm_kind: ClassVar[QkNorm] = "head"
    layer_norms: ClassVar[tuple[str, ...]] = (
        "input_layernorm",
        "post_attention_layernorm",
        "pre_mlp_layernorm",
        "post_mlp_layernorm",
    )

    moe_intermediate_size: Size
    num_dense_layers: Count
    num_experts: Size
    num_experts_per_tok: Size
    num_shared_experts: Count
    global_attn_every_n_layers: Size
    sliding_window: Size | None
    layer_types: list[str] | None = None
    attention_bias: bool

    def attention_plan(self) -> LayerPlan:
        return layer_kinds(
            self.layer_types, self.num_hidden_layers, pattern=self.global_attn_every_n_layers
        )

    def attn_extra(self, p: str) -> list[Tensor]:
        h, hd = self.num_attention_heads, self.resolved_head_dim
        return linear(f"{p}.gate_proj", "attn/gate_proj", h * hd, self.hidden_size, bias=False)

    def router_tensors(self, p: str) -> list[Tensor]:
        # router [E, d]; expert_bias [E]: a load-balancing score bias (a parameter, not trained)
        return [
            *router(f"{p}.router.gate", self.hidden_size, self.routed),
            Tensor(f"{p}.expert_bias", (self.routed,), "moe/router"),
        ]


class FlexOlmoConfig(GqaMoeConfig):
    """FlexOlmo (AI2 2025): OLMo 2's block (norms after attention and after the MLP, q/k norms over
    the whole projections) with OLMoE's experts; the router is a bare [E, d] parameter."""

    transformers_class = "FlexOlmoConfig"
    experts_field: ClassVar[str] = "num_experts"
    layer_norms: ClassVar[tuple[str, ...]] = (
        "post_attention_layernorm",
        "post_feedforward_layernorm",
    )

    num_experts_per_tok: Size
    num_experts: Size
    attention_bias: bool

    @property
    def qk_norm(self) -> QkNorm:
        return "all"


class GraniteMoeSharedConfig(GqaMoeConfig):
    """Granite MoE with a shared MLP (IBM): GraniteMoe's block plus shared_mlp.input_linear
    [2·s, d] and output_linear [d, s] when shared_intermediate_size s > 0."""

    transformers_class = "GraniteMoeSharedConfig"
    moe_module: ClassVar[str] = "block_sparse_moe"
    router_name: ClassVar[str] = "router"
    experts_field: ClassVar[str] = "num_local_experts"

    intermediate_size: Size  # one expert
    num_local_experts: Size
    num_experts_per_tok: Size
    shared_intermediate_size: Count
    attention_bias: bool

    @property
    def shared_ff(self) -> int:
        return self.shared_intermediate_size

    def shared_tensors(self, p: str) -> list[Tensor]:
        # the shared MLP sits beside the MoE block, at the layer: layers.{i}.shared_mlp
        s, d = self.shared_intermediate_size, self.hidden_size
        q = p.rsplit(".", 1)[0] + ".shared_mlp"
        return [
            *linear(f"{q}.input_linear", "moe/shared_experts/input_linear", 2 * s, d, bias=False),
            *linear(f"{q}.output_linear", "moe/shared_experts/output_linear", d, s, bias=False),
        ]


class GraniteMoeSwaConfig(GraniteMoeSharedConfig):
    """Granite MoE with sliding-window layers: Granite-MoE-shared's block, a learned attention sink
    per head (``sinks`` [h]), full attention where i % 4 == 0 unless layer_types says otherwise."""

    transformers_class = "GraniteMoeSWAConfig"

    sliding_window: Size | None
    layer_types: list[str] | None = None

    def attention_plan(self) -> LayerPlan:
        L = self.num_hidden_layers
        if self.layer_types is not None:
            return layer_kinds(self.layer_types, L, pattern=1)
        plan = {
            FULL: LayerSet((Run(0, L, 0, 4, 1),)),
            SLIDING: LayerSet((Run(0, L, 1, 4, 3),)),
        }
        return {kind: layers for kind, layers in plan.items() if layers}

    def attn_extra(self, p: str) -> list[Tensor]:
        # one learned sink logit per head (gpt-oss's attention sinks)
        return [Tensor(f"{p}.sinks", (self.num_attention_heads,), "attn/sinks")]


class Cohere2MoeConfig(GqaMoeConfig):
    """Cohere 2 MoE: Cohere's parallel block (one norm a layer), sliding layers (3 of every 4 after
    any dense prefix), dense prefix layers of prefix_dense_intermediate_size, a bare router."""

    transformers_class = "Cohere2MoeConfig"
    experts_field: ClassVar[str] = "num_experts"
    layer_norms: ClassVar[tuple[str, ...]] = ("input_layernorm",)
    floor_head_dim: ClassVar[bool] = True

    intermediate_size: Size  # one expert
    tie_word_embeddings: bool
    attention_bias: bool
    sliding_window: Size | None
    num_experts: Size
    num_experts_per_tok: Size
    num_shared_experts: Count
    layer_types: list[str] | None = None
    mlp_layer_types: list[str] | None = None
    first_k_dense_replace: Count = 0
    prefix_dense_intermediate_size: Size | None = None
    sliding_window_pattern: Size
    prefix_dense_sliding_window_pattern: Size

    @property
    def expert_ff(self) -> int:
        return self.intermediate_size

    @property
    def dense_ff(self) -> int:
        require(
            self.prefix_dense_intermediate_size is not None,
            "prefix_dense_intermediate_size",
            "is needed when some layers are dense",
        )
        assert self.prefix_dense_intermediate_size is not None
        return self.prefix_dense_intermediate_size

    @property
    def shared_ff(self) -> int:
        return self.intermediate_size * self.num_shared_experts

    def mlp_plan(self) -> LayerPlan:
        if self.mlp_layer_types is not None:
            return _mlp_kinds(self.mlp_layer_types, self)
        return _first_k(self, self.first_k_dense_replace)

    def attention_plan(self) -> LayerPlan:
        L, k = self.num_hidden_layers, min(self.first_k_dense_replace, self.num_hidden_layers)
        if self.layer_types is not None:
            return layer_kinds(self.layer_types, L, pattern=1)
        prefix = layer_kinds(None, k, pattern=self.prefix_dense_sliding_window_pattern) if k else {}
        rest = layer_kinds(None, L - k, pattern=self.sliding_window_pattern)
        out: dict[str, list[Run]] = {}
        for kind, layers in prefix.items():
            out.setdefault(kind, []).extend(layers.runs)
        for kind, layers in rest.items():
            out.setdefault(kind, []).extend(
                Run(r.start + k, r.stop + k, r.origin + k, r.period, r.width) for r in layers.runs
            )
        plan = {kind: LayerSet(tuple(rs)) for kind, rs in out.items()}
        return dict(sorted(plan.items(), key=lambda kv: next(iter(kv[1]))))


# ---- more rows ------------------------------------------------------------------------------------


class SolarOpenConfig(GqaMoeConfig):
    """Solar Open (Upstage 2026, transformers solar_open): GLM-4.5's MoE block in every layer (no
    dense layers, no q/k norms), Llama attention with q/k/v biases under attention_bias, o_proj none."""

    transformers_class = "SolarOpenConfig"
    always_shared: ClassVar[bool] = True
    shared_experts_field: ClassVar[str | None] = "n_shared_experts"

    intermediate_size: Size | None = None  # type: ignore[assignment]  # no dense MLP to size
    moe_intermediate_size: Size
    n_routed_experts: Size
    n_shared_experts: Count
    num_experts_per_tok: Size
    attention_bias: bool

    @property
    def o_bias(self) -> bool:
        return False


class Kolibri1Config(GqaMoeConfig):
    """Kolibri-1 (Aleph Alpha, transformers kolibri1): every layer MoE with one shared expert of
    shared_expert_intermediate_size, GLM-4's four norms a layer, EXAONE 4's attention (q/k norms over
    head_dim, no biases), full attention every 5th layer and sliding elsewhere."""

    transformers_class = "Kolibri1Config"
    always_shared: ClassVar[bool] = True
    experts_field: ClassVar[str] = "num_experts"
    qk_norm_kind: ClassVar[QkNorm] = "head"
    layer_norms: ClassVar[tuple[str, ...]] = (
        "input_layernorm",
        "post_self_attn_layernorm",
        "post_attention_layernorm",
        "post_mlp_layernorm",
    )

    intermediate_size: Size | None = None  # type: ignore[assignment]  # no dense MLP to size
    moe_intermediate_size: Size
    shared_expert_intermediate_size: Count
    num_experts: Size
    num_experts_per_tok: Size
    sliding_window: Size | None
    layer_types: list[str] | None = None

    @property
    def qkv_bias(self) -> bool:
        return False

    @property
    def shared_ff(self) -> int:
        return self.shared_expert_intermediate_size

    def attention_plan(self) -> LayerPlan:
        return layer_kinds(self.layer_types, self.num_hidden_layers, pattern=5)


class HYV3Config(GqaMoeConfig):
    """Hy3 (Tencent, transformers hy_v3): dense and MoE layers as mlp_layer_types lists them (default:
    the first dense), Apertus attention (q/k norms over head_dim, attention_bias on q/k/v/o),
    mlp_bias on the dense MLP and the shared experts; the router's score bias is a buffer."""

    transformers_class = "HYV3Config"
    always_shared: ClassVar[bool] = True
    experts_field: ClassVar[str] = "num_experts"
    shared_experts_field: ClassVar[str | None] = "num_shared_experts"
    qk_norm_kind: ClassVar[QkNorm] = "head"

    moe_intermediate_size: Size
    num_experts: Size
    num_experts_per_tok: Size
    num_shared_experts: Count
    attention_bias: bool
    # the config's mlp_bias (the name of GqaMoeConfig's property, which reads it)
    mlp_bias_field: bool = Field(validation_alias="mlp_bias")
    mlp_layer_types: list[str] | None = None

    @property
    def mlp_bias(self) -> bool:
        return self.mlp_bias_field

    @property
    def shared_ff(self) -> int:
        # HYV3MLP(intermediate_size=moe_ff · shared) takes a width of 0 as "unset": intermediate_size
        return self.expert_ff * self.num_shared_experts or self.intermediate_size

    def mlp_plan(self) -> LayerPlan:
        if self.mlp_layer_types is not None:
            return _mlp_kinds(self.mlp_layer_types, self)
        return _first_k(self, 1)


class MellumConfig(GqaMoeConfig):
    """Mellum 2 (JetBrains, transformers mellum): Qwen3-MoE's attention and experts (q/k norms over
    head_dim, attention_bias on q/k/v/o, no shared expert), dense and MoE layers as mlp_layer_types
    lists them (default: all MoE), sliding layers as layer_types lists them (default: none). Its
    multi-token-prediction layer (num_mtp_layers) is not built by transformers and not counted."""

    transformers_class = "MellumConfig"
    experts_field: ClassVar[str] = "num_local_experts"
    qk_norm_kind: ClassVar[QkNorm] = "head"

    moe_intermediate_size: Size
    num_local_experts: Size = Field(
        validation_alias=AliasChoices("num_local_experts", "num_experts")
    )
    num_experts_per_tok: Size
    attention_bias: bool
    sliding_window: Size | None
    layer_types: list[str] | None = None
    mlp_layer_types: list[str] | None = None

    def mlp_plan(self) -> LayerPlan:
        if self.mlp_layer_types is not None:
            return _mlp_kinds(self.mlp_layer_types, self)
        return super().mlp_plan()

    def attention_plan(self) -> LayerPlan:
        if self.layer_types is not None:
            return layer_kinds(self.layer_types, self.num_hidden_layers, pattern=1)
        return super().attention_plan()


class LagunaConfig(GqaMoeConfig):
    """Laguna (poolside, transformers laguna): a query-head count per layer
    (num_attention_heads_per_layer), a softplus output gate g_proj (one per head, or per channel with
    gating "per-element"), q/k norms over head_dim, one shared expert of
    shared_expert_intermediate_size, dense and MoE layers as mlp_layer_types lists them (default: the
    first dense), sliding layers as layer_types lists them (default: none)."""

    transformers_class = "LagunaConfig"
    always_shared: ClassVar[bool] = True
    experts_field: ClassVar[str] = "num_experts"
    qk_norm_kind: ClassVar[QkNorm] = "head"

    moe_intermediate_size: Size
    shared_expert_intermediate_size: Count
    num_experts: Size
    num_experts_per_tok: Size
    attention_bias: bool
    gating: bool | str  # True / "per-head": a gate per head; otherwise one per channel
    num_attention_heads_per_layer: list[Size] | None = None
    sliding_window: Size | None
    layer_types: list[str] | None = None
    mlp_layer_types: list[str] | None = None

    @property
    def shared_ff(self) -> int:
        return self.shared_expert_intermediate_size

    def mlp_plan(self) -> LayerPlan:
        if self.mlp_layer_types is not None:
            return _mlp_kinds(self.mlp_layer_types, self)
        return _first_k(self, 1)

    def attention_plan(self) -> LayerPlan:
        if self.layer_types is not None:
            return layer_kinds(self.layer_types, self.num_hidden_layers, pattern=1)
        return super().attention_plan()

    def heads_plan(self) -> dict[int, LayerSet]:
        heads = self.num_attention_heads_per_layer
        if heads is None:
            return super().heads_plan()
        field = "num_attention_heads_per_layer"
        n = self.num_hidden_layers
        require(len(heads) == n, field, f"has {len(heads)} entries, num_hidden_layers is {n}")
        return {int(h): layers for h, layers in plan_from_kinds([str(h) for h in heads]).items()}

    def attn_gate(self, p: str, heads: int) -> list[Tensor]:
        # softplus(g_proj(x)) scales each head's output: g_proj [h, d] per head, [h·hd, d] per channel
        per_head = self.gating is True or self.gating == "per-head"
        out = heads if per_head else heads * self.resolved_head_dim
        return linear(f"{p}.g_proj", "attn/g_proj", out, self.hidden_size, bias=False)

    def router_tensors(self, p: str) -> list[Tensor]:
        # router [E, d]; e_score_correction_bias [E]: a score bias for choosing experts (a parameter)
        return [
            *router(f"{p}.gate", self.hidden_size, self.routed),
            Tensor(f"{p}.gate.e_score_correction_bias", (self.routed,), "moe/router"),
        ]


MINIMAX_SPARSE = "minimax_m3_sparse"  # MiniMax-M3's layer type for block-sparse attention
SPARSE_ATTENTION = "sparse_attention"


class MiniMaxM3SparseAttention(FamilyConfig):
    """MiniMax-M3's older ``sparse_attention_config``: which layers are sparse, the indexer's sizes."""

    sparse_attention_freq: list[bool | int] | None = None
    sparse_num_index_heads: Size | None = None
    sparse_index_dim: Size | None = None


class MiniMaxM3VLTextConfig(GqaMoeConfig):
    """MiniMax-M3's language model (transformers minimax_m3_vl_text): q/k norms over head_dim; layers
    of block-sparse attention ("minimax_m3_sparse" in layer_types) hold a lightning indexer (q_proj
    [h_idx·d_idx, d], k_proj [d_idx, d], q/k norms [d_idx]) that scores every key and caches one
    index key per token; MLPs with a fused gate_up_proj [2·ff, d], down_proj [d, ff]: the dense
    layers' of dense_intermediate_size, one shared expert of shared_intermediate_size beside routed
    experts of intermediate_size. Sparse layers are counted as attending to every earlier token
    (their block choice is not modelled)."""

    transformers_class = "MiniMaxM3VLTextConfig"
    always_shared: ClassVar[bool] = True
    experts_field: ClassVar[str] = "num_local_experts"
    qk_norm_kind: ClassVar[QkNorm] = "head"

    intermediate_size: Size  # one routed expert
    dense_intermediate_size: Size
    shared_intermediate_size: Count
    num_local_experts: Size = Field(
        validation_alias=AliasChoices("num_local_experts", "num_experts")
    )
    num_experts_per_tok: Size
    index_n_heads: Size
    index_head_dim: Size
    layer_types: list[str] | None = None
    mlp_layer_types: list[str] | None = None
    # the older spellings transformers still reads
    moe_layer_freq: list[bool | int] | None = None
    sparse_attention_config: MiniMaxM3SparseAttention | None = None

    @property
    def expert_ff(self) -> int:
        return self.intermediate_size

    @property
    def dense_ff(self) -> int:
        return self.dense_intermediate_size

    @property
    def shared_ff(self) -> int:
        return self.shared_intermediate_size

    @property
    def qkv_bias(self) -> bool:
        return False

    @property
    def index_dims(self) -> tuple[int, int]:
        """The indexer's heads and head width (sparse_attention_config's spelling wins)."""
        heads, dim = self.index_n_heads, self.index_head_dim
        old = self.sparse_attention_config
        if old is not None:
            heads = old.sparse_num_index_heads or heads
            dim = old.sparse_index_dim or dim
        return heads, dim

    def mlp_plan(self) -> LayerPlan:
        if self.mlp_layer_types is not None:
            return _mlp_kinds(self.mlp_layer_types, self)
        if self.moe_layer_freq is not None:
            kinds = [SPARSE if f else DENSE for f in self.moe_layer_freq]
            names = {DENSE: DENSE, SPARSE: SPARSE}
            return listed_plan(kinds, self.num_hidden_layers, field="moe_layer_freq", names=names)
        return super().mlp_plan()

    def attention_plan(self) -> LayerPlan:
        kinds = self.layer_types
        old = self.sparse_attention_config
        if kinds is None and old is not None and old.sparse_attention_freq is not None:
            kinds = [MINIMAX_SPARSE if f else FULL for f in old.sparse_attention_freq]
        if kinds is None:
            return super().attention_plan()
        names = {FULL: FULL, MINIMAX_SPARSE: SPARSE_ATTENTION}
        return listed_plan(kinds, self.num_hidden_layers, field="layer_types", names=names)

    def attn_kind_tensors(self, p: str, kind: str) -> list[Tensor]:
        if kind != SPARSE_ATTENTION:
            return []
        # q_proj h_idx·d_idx × d; k_proj d_idx × d (one key head); RMSNorms over d_idx
        (ih, idim), d, q = self.index_dims, self.hidden_size, f"{p}.indexer"
        return [
            *linear(f"{q}.q_proj", "attn/indexer/q_proj", ih * idim, d, bias=False),
            *linear(f"{q}.k_proj", "attn/indexer/k_proj", idim, d, bias=False),
            *norm(f"{q}.q_norm", "attn/indexer/q_norm", idim, bias=False),
            *norm(f"{q}.k_norm", "attn/indexer/k_norm", idim, bias=False),
        ]

    def attention_of(self, kind: str, heads: int, kv_heads: int, head_dim: int) -> Attention:
        if kind != SPARSE_ATTENTION:
            return super().attention_of(kind, heads, kv_heads, head_dim)
        ih, idim = self.index_dims
        # the indexer's scores 2·h_idx·d_idx per pair (summed over its heads elementwise); its
        # cached index key [d_idx] per token
        return Attention(heads, kv_heads, head_dim, head_dim, index_pair_flops=2 * ih * idim,
                         index_key_dim=idim)

    def mlp_tensors(self, p: str, component: str, ff: int) -> list[Tensor]:
        # gate_up_proj 2·ff × d (gate and up fused), down_proj d × ff
        d = self.hidden_size
        return [
            *linear(f"{p}.gate_up_proj", f"{component}/gate_up_proj", 2 * ff, d, bias=False),
            *linear(f"{p}.down_proj", f"{component}/down_proj", d, ff, bias=False),
        ]


class AriaTextConfig(GqaMoeConfig):
    """Aria's language model (Rhymes AI 2024, arXiv 2410.05993): every layer MoE, experts as wide as
    intermediate_size and stored input-first (gate_up_proj [E, d, 2·ff], down_proj [E, ff, d]),
    moe_num_shared_experts shared experts as one SwiGLU (biases with mlp_bias), router ``router``."""

    transformers_class = "AriaTextConfig"
    always_shared: ClassVar[bool] = True
    router_name: ClassVar[str] = "router"
    experts_field: ClassVar[str] = "moe_num_experts"
    top_k_field: ClassVar[str] = "moe_topk"
    shared_experts_field: ClassVar[str | None] = "moe_num_shared_experts"
    floor_head_dim: ClassVar[bool] = False

    intermediate_size: Size  # one routed (and one shared) expert
    moe_num_experts: Size
    moe_topk: Size
    moe_num_shared_experts: Count
    attention_bias: bool
    shared_bias: bool = Field(validation_alias="mlp_bias")

    @property
    def expert_ff(self) -> int:
        return self.intermediate_size

    @property
    def mlp_bias(self) -> bool:
        return self.shared_bias

    def expert_tensors(self, p: str) -> list[Tensor]:
        return experts_transposed(p, self.hidden_size, self.expert_ff, self.routed)


class FlintConfig(GqaMoeConfig):
    """Flint (Recursive 2026): Qwen3-MoE's attention (q/k norms over head_dim) with a learned sink
    per head, sliding layers except layers 0, 1, every i % 4 == 1 and the last (which use no RoPE);
    an ungated shared expert of shared_expert_intermediate_size beside the routed ones; dense layers
    where Qwen-MoE has them (mlp_only_layers, default [0, 1], and off the decoder_sparse_step)."""

    transformers_class = "FlintConfig"
    always_shared: ClassVar[bool] = True
    shared_name: ClassVar[str] = "shared_expert"
    experts_field: ClassVar[str] = "num_experts"
    qk_norm_kind: ClassVar[QkNorm] = "head"

    intermediate_size: Size  # the dense layers
    sliding_window: Size | None
    moe_intermediate_size: Size
    shared_expert_intermediate_size: Count
    num_experts: Size
    num_experts_per_tok: Size
    decoder_sparse_step: Size
    mlp_only_layers: list[Count] | None = None  # null: [0, 1]
    layer_types: list[str] | None = None
    attention_bias: bool

    @property
    def shared_ff(self) -> int:
        return self.shared_expert_intermediate_size

    def mlp_plan(self) -> LayerPlan:
        # MoE where (i + 1) % decoder_sparse_step == 0 and i is not in mlp_only_layers
        L = self.num_hidden_layers
        plan = periodic_plan(L, period=self.decoder_sparse_step, every=SPARSE, others=DENSE)
        only = [0, 1] if self.mlp_only_layers is None else self.mlp_only_layers
        return override_plan(plan, sorted({i for i in only if i < L}), DENSE)

    def attention_plan(self) -> LayerPlan:
        L = self.num_hidden_layers
        if self.layer_types is not None:
            return layer_kinds(self.layer_types, L, pattern=1)
        # full where i < 2, i % 4 == 1 or i == L - 1; sliding elsewhere
        plan = {FULL: LayerSet((Run(0, L, 1, 4, 1),)), SLIDING: LayerSet((Run(0, L, 2, 4, 3),))}
        full = sorted({i for i in (0, 1, L - 1) if 0 <= i < L})
        return override_plan({k: v for k, v in plan.items() if v}, full, FULL)

    def attn_extra(self, p: str) -> list[Tensor]:
        # one learned sink logit per head (gpt-oss's attention sinks)
        return [Tensor(f"{p}.sinks", (self.num_attention_heads,), "attn/sinks")]


class BeamConfig(GqaMoeConfig):
    """Beam (Reflection 2026): Qwen3-MoE's attention (q/k norms over head_dim) with a sigmoid output
    gate (gate_proj h·hd × d, gate_bias per head), four norms a layer, the first three layers dense
    (or as mlp_layer_types lists), full attention every 6th layer and the last (no RoPE there)."""

    transformers_class = "BeamConfig"
    experts_field: ClassVar[str] = "num_experts"
    qk_norm_kind: ClassVar[QkNorm] = "head"
    layer_norms: ClassVar[tuple[str, ...]] = (
        "input_layernorm",
        "post_attention_layernorm",
        "pre_feedforward_layernorm",
        "post_feedforward_layernorm",
    )

    intermediate_size: Size  # the dense layers
    sliding_window: Size | None
    moe_intermediate_size: Size
    num_experts: Size
    num_experts_per_tok: Size
    layer_types: list[str] | None = None
    mlp_layer_types: list[str] | None = None
    attention_bias: bool

    def mlp_plan(self) -> LayerPlan:
        if self.mlp_layer_types is not None:
            return _mlp_kinds(self.mlp_layer_types, self)
        return _first_k(self, 3)

    def attention_plan(self) -> LayerPlan:
        L = self.num_hidden_layers
        if self.layer_types is not None:
            return layer_kinds(self.layer_types, L, pattern=1)
        return override_plan(layer_kinds(None, L, pattern=6), [L - 1], FULL)

    def attn_extra(self, p: str) -> list[Tensor]:
        # output gate: sigmoid(gate_proj(x) + gate_bias) scales each head's output
        h, hd = self.num_attention_heads, self.resolved_head_dim
        return [
            *linear(f"{p}.gate_proj", "attn/gate_proj", h * hd, self.hidden_size, bias=False),
            Tensor(f"{p}.gate_bias", (h,), "attn/gate_bias"),
        ]


# ---- the structure --------------------------------------------------------------------------------


def _attention(c: GqaMoeConfig, p: str, h: int, kv: int, hd: int, kind: str) -> list[Tensor]:
    """One layer's attention of ``kind`` with h query heads, and the layer's norms."""
    d, a = c.hidden_size, f"{p}.self_attn"
    attn: list[Tensor] = [*gqa_projections(a, d, h, kv, hd, bias=c.qkv_bias, o_bias=c.o_bias)]
    qn, kn = c.qk_norm_names
    if c.qk_norm is not None:
        q_dim, k_dim = (hd, hd) if c.qk_norm == "head" else (h * hd, kv * hd)
        attn += [
            *norm(f"{a}.{qn}", "attn/q_norm", q_dim, bias=False),
            *norm(f"{a}.{kn}", "attn/k_norm", k_dim, bias=False),
        ]
    attn += c.attn_extra(a)
    attn += c.attn_gate(a, h)
    attn += c.attn_kind_tensors(a, kind)
    attn += [
        t for name in c.layer_norms for t in norm(f"{p}.{name}", f"norm/{name}", d, bias=False)
    ]
    return attn


def describe(c: GqaMoeConfig) -> Architecture:
    d, v, E, k = c.hidden_size, c.vocab_size, c.routed, c.top_k
    check_top_k(k, E, k_field=c.top_k_field, e_field=c.experts_field)
    h, L = c.num_attention_heads, c.num_hidden_layers
    hd = c.resolved_head_dim
    kv = resolve_kv_heads(h, c.num_key_value_heads)
    p = "model.layers.{i}"
    attn = _attention(c, p, h, kv, hd, FULL)
    m = f"{p}.{c.moe_module}"
    has_dense = DENSE in c.mlp_plan()
    dense_mlp = c.mlp_tensors(f"{p}.mlp", "mlp", c.dense_ff) if has_dense else []
    # router E × d;  routed experts [E, 2·ff, d], [E, d, ff];  shared experts: one SwiGLU of s
    moe_mlp = [
        *c.router_tensors(m),
        *c.expert_tensors(f"{m}.experts"),
        *(c.shared_tensors(m) if c.has_shared else []),
    ]
    blocks = {DENSE: dense_mlp, SPARSE: moe_mlp}
    plan = cross_plans(c.attention_plan(), c.mlp_plan())
    # layers whose head counts differ (Laguna) split each group by head count
    heads = c.heads_plan()
    groups: list[LayerGroup] = []
    for kinds, layers in plan.items():
        name = crossed_name(kinds, plan)
        for hi, with_hi in heads.items():
            for part in cross_plans({name: layers}, {"": with_hi}).values():
                kv_i = kv
                if hi != h:
                    field = "num_attention_heads_per_layer"
                    kv_i = resolve_kv_heads(hi, c.num_key_value_heads, heads_field=field)
                groups.append(
                    LayerGroup(
                        name if len(heads) == 1 else f"{name}/{hi} heads",
                        part,
                        (*_attention(c, p, hi, kv_i, hd, kinds[0]), *blocks[kinds[1]]),
                        c.attention_of(kinds[0], hi, kv_i, hd),
                    )
                )
    groups.sort(key=lambda g: next(iter(g.layers)))

    n_mtp = getattr(c, "num_nextn_predict_layers", None) or 0
    mtp = mtp_params([*attn, *moe_mlp], d=d, vocab=v, modules=n_mtp)
    return Architecture(
        shape=Shape(L, d, h, kv, hd, c.expert_ff, v,
                    c.tie_word_embeddings, c.max_position_embeddings),
        tensors=llama_outer_tensors(v, d, tied=c.tie_word_embeddings, head_bias=c.head_bias),
        layer_groups=tuple(groups),
        moe=MoE(num_experts=E, experts_per_tok=k, shared_experts=_shared_count(c)),
        notes=(mtp_note(n_mtp, mtp),) if n_mtp else (),
        unbuilt=(("mtp_params", mtp),) if n_mtp else (),
    )


def _shared_count(c: GqaMoeConfig) -> int:
    if not c.shared_ff:
        return 0
    for field in ("n_shared_experts", "num_shared_experts", "moe_num_shared_experts"):
        if hasattr(c, field):
            value: int = getattr(c, field)
            return value
    return 1
