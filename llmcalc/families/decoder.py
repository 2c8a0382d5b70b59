"""Llama-style decoders that differ from Llama in a few switches: one description, a row per type.

The structure: token embedding, L layers of (norm, GQA attention, norm, MLP), a final norm and an
output head tied to the embedding or not. Every model type here is a config class below that names
its transformers config, the defaults that differ, and a :class:`Layout` — the handful of switches
that change tensors (which norms a layer holds and what they are called, the MLP form, q/k norms,
attention sinks …). Sliding-window layers hold the same tensors as full ones; their pattern is the
config class's ``layer_plan``. Source: tensor names and shapes as in each transformers
``<Type>ForCausalLM`` (modeling_<type>.py, transformers 5.24), which cites its paper.
"""

from __future__ import annotations

from dataclasses import dataclass
from dataclasses import replace
from typing import Any
from typing import ClassVar
from typing import Literal
from typing import cast

from pydantic import AliasChoices
from pydantic import Field

from llmcalc.families._base import FULL
from llmcalc.families._base import SLIDING
from llmcalc.families._base import Architecture
from llmcalc.families._base import DecoderConfig
from llmcalc.families._base import FamilyConfig
from llmcalc.families._base import LayerPlan
from llmcalc.families._base import Size
from llmcalc.families._base import embedding
from llmcalc.families._base import gqa_projections
from llmcalc.families._base import layer_kinds
from llmcalc.families._base import linear
from llmcalc.families._base import llama_outer_tensors
from llmcalc.families._base import lm_head
from llmcalc.families._base import norm
from llmcalc.families._base import periodic_plan
from llmcalc.families._base import planned_layers
from llmcalc.families._base import require
from llmcalc.families._base import resolve_head_dim
from llmcalc.families._base import swiglu
from llmcalc.families._base import uniform_layers
from llmcalc.families.deepseek import mla
from llmcalc.model.spec import Attention
from llmcalc.model.spec import LayerSet
from llmcalc.model.spec import Run
from llmcalc.model.spec import Shape
from llmcalc.model.spec import Tensor

# A layer's norms over d: (module name, breakdown key). Llama: before attention, before the MLP;
# OLMo 2 style: after attention, after the MLP.
Norms = tuple[tuple[str, str], ...]
PRE_NORMS: Norms = (("input_layernorm", "attn/norm"), ("post_attention_layernorm", "mlp/norm"))
POST_NORMS: Norms = (
    ("post_attention_layernorm", "attn/post_norm"),
    ("post_feedforward_layernorm", "mlp/post_norm"),
)


@dataclass(frozen=True)
class Layout:
    """What a type's layer holds beyond the GQA projections.

    ``norms``: the layer's norms over d (RMSNorm, or LayerNorm with bias when ``norm_bias``), each
    a (module name, breakdown key) pair;
    ``mlp``: ``gated`` (gate, up: ff × d; down: d × ff), ``fused`` (gate_up_proj: 2ff × d; down),
    ``plain`` (``mlp_names``: ff × d and d × ff, no gate); ``qk_norm``: RMSNorm on queries and keys
    over ``head`` (hd) or ``full`` (h·hd and kv·hd) named ``qk_norm_names``; ``sinks``: one learned
    logit per head; ``final_norm``: none when the model's norms hold no weight.
    """

    norms: Norms = PRE_NORMS
    norm_bias: bool = False
    final_norm: bool = True
    mlp: Literal["gated", "fused", "plain"] = "gated"
    mlp_names: tuple[str, str] = ("up_proj", "down_proj")
    qk_norm: Literal["head", "full"] | None = None
    qk_norm_names: tuple[str, str] = ("q_norm", "k_norm")
    sinks: bool = False  # self_attn.sinks: [h]  (gpt-oss style attention sinks)
    o_from_hidden: bool = False  # o_proj: d × d whatever h·hd is (Helium)
    act_params: tuple[str, ...] = ()  # learned scalars of the activation, mlp.act_fn.<name>: [1]
    sub_norms: bool = False  # BitNet: attn_sub_norm [d] before o, ffn_sub_norm [ff] before down
    diff_lambdas: bool = False  # Differential attention: lambda_q1, k1, q2, k2: [hd] each
    dynamic_mask: bool = False  # Doge: A [kv] and dt_proj kv × (kv·hd) that mask the scores
    residual_scales: bool = False  # Doge: input_residual, post_attention_residual: [d] each

    @property
    def maps(self) -> int:
        """Softmax attention runs per layer: differential attention runs two (Attention.maps)."""
        return 2 if self.diff_lambdas else 1


class DenseConfig(DecoderConfig):
    """The fields every type here reads; a type overrides defaults and ``layout``."""

    transformers_class = "LlamaConfig"
    layout: ClassVar[Layout] = Layout()

    tie_word_embeddings: bool = False
    attention_bias: bool = False
    mlp_bias: bool = False
    sliding_window: Size | None = None
    layer_types: list[str] | None = None

    def layer_layout(self) -> Layout:
        return self.layout

    @property
    def qkv_bias(self) -> bool:
        return self.attention_bias

    @property
    def o_bias(self) -> bool:
        return self.attention_bias

    @property
    def ffn_bias(self) -> bool:
        return self.mlp_bias

    def layer_plan(self) -> LayerPlan:
        """Full or sliding attention per layer: as ``layer_types`` lists, else all full."""
        if self.layer_types is not None:
            return layer_kinds(self.layer_types, self.num_hidden_layers, pattern=1)
        return self.default_plan()

    def default_plan(self) -> LayerPlan:
        return {FULL: LayerSet.span(0, self.num_hidden_layers)}


def first_of_plan(num_layers: int, period: int) -> LayerPlan:
    """Layer i full when i is a multiple of ``period``, else sliding (CWM, Granite SWA)."""
    if period == 1:
        return {FULL: LayerSet.span(0, num_layers)}
    plan = {
        FULL: LayerSet((Run(0, num_layers, 0, period, 1),)),
        SLIDING: LayerSet((Run(0, num_layers, 1, period, period - 1),)),
    }
    return {k: v for k, v in plan.items() if v}


class SlidingAllConfig(DenseConfig):
    """Mistral's rule: every layer slides when ``sliding_window`` is set."""

    def default_plan(self) -> LayerPlan:
        kind = SLIDING if self.sliding_window is not None else FULL
        return {kind: LayerSet.span(0, self.num_hidden_layers)}


# ---- the model types --------------------------------------------------------------------------
# Each: its transformers config, the defaults of that config class where they differ from the
# fields above, and its layout. Sizes left required are read from the file (all real configs state
# them); the test that enumerates transformers' types fills them from the config class defaults.


class ArceeConfig(DenseConfig):
    """Arcee AFM: ReLU² MLP without a gate (up, down)."""

    transformers_class = "ArceeConfig"
    layout = Layout(mlp="plain")


class NemotronConfig(DenseConfig):
    """Nemotron-4 / Minitron: LayerNorm1P (weight and bias) everywhere, ReLU² MLP without a gate;
    partial rotary (no parameters)."""

    transformers_class = "NemotronConfig"
    needed = ("num_key_value_heads",)
    layout = Layout(mlp="plain", norm_bias=True)


class ApertusConfig(DenseConfig):
    """Apertus: xIELU activation with two learned scalars, no gate; q/k RMSNorm per head; the
    layer's norms are attention_layernorm and feedforward_layernorm."""

    transformers_class = "ApertusConfig"
    layout = Layout(
        norms=(("attention_layernorm", "attn/norm"), ("feedforward_layernorm", "mlp/norm")),
        mlp="plain",
        qk_norm="head",
        act_params=("alpha_p", "alpha_n"),
    )


class Apertus1p5TextConfig(ApertusConfig):
    transformers_class = "Apertus1p5TextConfig"


class BitNetConfig(DenseConfig):
    """BitNet b1.58: Llama plus a sub-norm before o_proj ([d]) and before down_proj ([ff])."""

    transformers_class = "BitNetConfig"
    layout = Layout(sub_norms=True)


class DiffLlamaConfig(DenseConfig):
    """Differential Transformer on Llama: four learned λ vectors of head_dim per layer."""

    transformers_class = "DiffLlamaConfig"
    layout = Layout(diff_lambdas=True)


class DogeConfig(SlidingAllConfig):
    """Doge (dense, ``is_moe`` false): q/k RMSNorm per head, a dynamic mask (A, dt_proj) on the
    attention scores and two learned residual scales per layer. The CDMoE variant is not counted."""

    transformers_class = "DogeConfig"
    layout = Layout(qk_norm="head", dynamic_mask=True, residual_scales=True)

    is_moe: bool

    def layer_plan(self) -> LayerPlan:
        require(not self.is_moe, "is_moe", "Doge's CDMoE layers are not counted yet")
        return super().layer_plan()


class Ernie45Config(DenseConfig):
    """ERNIE 4.5 dense: one ``use_bias`` for every projection; tied head by default."""

    transformers_class = "Ernie4_5Config"

    tie_word_embeddings: bool
    use_bias: bool

    @property
    def qkv_bias(self) -> bool:
        return self.use_bias

    @property
    def o_bias(self) -> bool:
        return self.use_bias

    @property
    def ffn_bias(self) -> bool:
        return self.use_bias


class ExaoneConfig(DenseConfig):
    """EXAONE 3.x: Llama tensors (transformers builds LlamaForCausalLM); its config.json names the
    layer count ``num_layers``."""

    transformers_class = "ExaoneConfig"

    num_hidden_layers: Size = Field(
        validation_alias=AliasChoices("num_hidden_layers", "num_layers")
    )


class Exaone4Config(DenseConfig):
    """EXAONE 4.0: norms after attention and after the MLP (OLMo 2), q/k RMSNorm per head, three
    local layers for every global one (``sliding_window_pattern``)."""

    transformers_class = "Exaone4Config"
    layout = Layout(norms=POST_NORMS, qk_norm="head")

    sliding_window_pattern: Size | None

    def default_plan(self) -> LayerPlan:
        """Every ``sliding_window_pattern``-th layer full, the rest sliding (transformers 5.24
        builds only a count here, though its docstring also names strings such as "LLLG")."""
        pattern = self.sliding_window_pattern
        if self.sliding_window is None or pattern is None:
            return super().default_plan()
        return periodic_plan(self.num_hidden_layers, period=pattern, every=FULL, others=SLIDING)


class GlmConfig(DenseConfig):
    """GLM-4 (first release, ``glm``): q/k/v biased (attention_bias), fused gate_up_proj."""

    transformers_class = "GlmConfig"
    layout = Layout(mlp="fused")

    attention_bias: bool

    @property
    def o_bias(self) -> bool:
        return False


class Glm4Config(GlmConfig):
    """GLM-4-0414: GLM plus norms after attention and after the MLP (four per layer)."""

    transformers_class = "Glm4Config"
    layout = Layout(
        mlp="fused",
        norms=(
            *PRE_NORMS,
            ("post_self_attn_layernorm", "attn/post_norm"),
            ("post_mlp_layernorm", "mlp/post_norm"),
        ),
    )


class GraniteSWAConfig(DenseConfig):
    """Granite with sliding-window layers (three of every four) and attention sinks."""

    transformers_class = "GraniteSWAConfig"
    layout = Layout(sinks=True)

    tie_word_embeddings: bool

    def default_plan(self) -> LayerPlan:
        return first_of_plan(self.num_hidden_layers, 4)


class HeliumConfig(DenseConfig):
    transformers_class = "HeliumConfig"
    layout = Layout(o_from_hidden=True)



class HunYuanDenseV1Config(DenseConfig):
    """Hunyuan dense: q/k RMSNorm per head, named query_layernorm and key_layernorm."""

    transformers_class = "HunYuanDenseV1Config"
    needed = ("head_dim",)
    layout = Layout(qk_norm="head", qk_norm_names=("query_layernorm", "key_layernorm"))


class HyperCLOVAXConfig(DenseConfig):
    """HyperCLOVA X: Llama plus norms after attention and after the MLP (``use_post_norm``)."""

    transformers_class = "HyperCLOVAXConfig"
    use_post_norm: bool

    def layer_layout(self) -> Layout:
        post: Norms = (("post_norm1", "attn/post_norm"), ("post_norm2", "mlp/post_norm"))
        extra = post if self.use_post_norm else ()
        return Layout(norms=(*PRE_NORMS, *extra))


class InternLM3Config(DenseConfig):
    transformers_class = "InternLM3Config"

    attention_bias: bool = Field(validation_alias=AliasChoices("attention_bias", "qkv_bias"))
    mlp_bias: bool = Field(validation_alias=AliasChoices("mlp_bias", "bias"))


class IQuestCoderConfig(DenseConfig):
    transformers_class = "IQuestCoderConfig"



class Jais2Config(DenseConfig):
    """Jais 2: LayerNorms with bias, biased projections, a plain up/down MLP."""

    transformers_class = "Jais2Config"
    layout = Layout(norm_bias=True, mlp="plain")

    attention_bias: bool
    mlp_bias: bool


class MinistralConfig(SlidingAllConfig):
    transformers_class = "MinistralConfig"
    needed = ("head_dim",)



class Ministral3Config(SlidingAllConfig):
    transformers_class = "Ministral3Config"



class NanoChatConfig(DenseConfig):
    """nanochat: RMSNorms without weights (none listed), a plain fc1/fc2 MLP."""

    transformers_class = "NanoChatConfig"
    layout = Layout(norms=(), final_norm=False, mlp="plain", mlp_names=("fc1", "fc2"))


class Olmo3Config(DenseConfig):
    """OLMo 3: OLMo 2's layer (norms after the blocks, q/k RMSNorm over all heads) with three
    sliding-window layers for every full one."""

    transformers_class = "Olmo3Config"
    layout = Layout(norms=POST_NORMS, qk_norm="full")


    def default_plan(self) -> LayerPlan:
        return periodic_plan(self.num_hidden_layers, period=4, every=FULL, others=SLIDING)


class SeedOssConfig(DenseConfig):
    """Seed-OSS: q/k/v biased (attention_bias), o_proj by its own ``attention_out_bias``."""

    transformers_class = "SeedOssConfig"

    attention_bias: bool
    attention_out_bias: bool

    @property
    def o_bias(self) -> bool:
        return self.attention_out_bias


class SmolLM3Config(DenseConfig):
    """SmolLM3: Llama tensors; every ``no_rope_layer_interval``-th layer has no rotary (no
    parameters), and with ``use_sliding_window`` those layers slide."""

    transformers_class = "SmolLM3Config"

    tie_word_embeddings: bool
    use_sliding_window: bool
    no_rope_layer_interval: Size

    def default_plan(self) -> LayerPlan:
        if not (self.use_sliding_window and self.sliding_window is not None):
            return super().default_plan()
        return periodic_plan(
            self.num_hidden_layers, period=self.no_rope_layer_interval, every=SLIDING, others=FULL
        )


class VaultGemmaConfig(DenseConfig):
    """VaultGemma: Gemma's layer with two norms (before attention, before the MLP); local and
    global layers alternate."""

    transformers_class = "VaultGemmaConfig"
    layout = Layout(
        norms=(("input_layernorm", "attn/norm"), ("pre_feedforward_layernorm", "mlp/norm"))
    )

    tie_word_embeddings: bool

    def default_plan(self) -> LayerPlan:
        return periodic_plan(self.num_hidden_layers, period=2, every=FULL, others=SLIDING)


class CohereCompassTextConfig(DenseConfig):
    """Cohere Compass text model: Cohere's parallel block (one bias-free LayerNorm before attention
    and MLP), tied head."""

    transformers_class = "CohereCompassTextConfig"
    layout = Layout(norms=(("input_layernorm", "attn/norm"),))

    tie_word_embeddings: bool


class CwmConfig(DenseConfig):
    """Code World Model: Llama tensors, one full-attention layer then three sliding ones."""

    transformers_class = "CwmConfig"


    def default_plan(self) -> LayerPlan:
        return first_of_plan(self.num_hidden_layers, 4)


class Emu3TextModelConfig(DenseConfig):
    """Emu3's language model (Emu3TextConfig): Llama's tensors."""

    transformers_class = "Emu3TextConfig"


class Emu3Config(FamilyConfig):
    """Emu3 (Wang et al. 2024, arXiv 2409.18869): a Llama over text and VQ image tokens. Its causal
    LM (transformers' ``Emu3ForCausalLM``, which ``AutoModelForCausalLM`` builds from this config's
    text_config) is the language model alone; the VQ-VAE image tokenizer (vq_config) is part of
    ``Emu3ForConditionalGeneration`` only."""

    transformers_class = "Emu3Config"

    text_config: dict[str, Any] | None = None


def describe_emu3(c: Emu3Config) -> Architecture:
    """Emu3ForCausalLM: its text_config (on Emu3TextConfig's defaults) as a Llama; the head ties as
    text_config says (the causal LM is built from it)."""
    from llmcalc.families._vision import read_sub
    from llmcalc.families._vision import sub_fields
    from llmcalc.inputs import family_defaults

    fields = sub_fields(c.text_config, "text_config", "emu3_text_model",
                        (family_defaults.sub_defaults("emu3") or {}).get("text_config", {}))
    arch = describe(read_sub(Emu3TextModelConfig, fields, "text_config"))
    return replace(arch, notes=(*arch.notes, "Emu3ForCausalLM: the language model; the VQ-VAE "
                                "image tokenizer (vq_config) is not part of it"))


class MoshiConfig(DecoderConfig):
    """Moshi's temporal transformer (Défossez et al. 2024, arXiv 2410.00037), the text model
    ``MoshiForCausalLM`` builds: its feed-forward width is ``ffn_dim``, and every layer keeps a
    window of ``sliding_window`` tokens in transformers' cache (attention itself is full causal).
    The depth decoder and the Mimi codec (depth_decoder_config, audio_encoder_config) are parts of
    ``MoshiForConditionalGeneration`` only."""

    transformers_class = "MoshiConfig"

    intermediate_size: Size = Field(validation_alias=AliasChoices("ffn_dim", "intermediate_size"))
    sliding_window: Size
    audio_vocab_size: Size | None = None
    audio_encoder_config: dict[str, Any] | None = None
    depth_decoder_config: dict[str, Any] | None = None


def describe_moshi(c: MoshiConfig) -> Architecture:
    """MoshiForCausalLM (moshi/modeling_moshi.py): embed_tokens [V + 1, d] (one more row, the
    audio-padding token), per layer input and post-attention RMSNorms [d], q, k, v, o as
    ``….linear`` (GQA shapes), a gated MLP fused in fc1 [ffn, d] (gate and value halves) and fc2
    [d, ffn / 2]; the final norm [d] and lm_head [V, d], never tied (the tables differ in rows)."""
    d, ff, v = c.hidden_size, c.intermediate_size, c.vocab_size
    h, kv = c.num_attention_heads, c.resolved_kv_heads
    # MoshiAttention refuses a width the heads do not divide, even with head_dim given
    require(d % h == 0, "num_attention_heads",
            f"num_attention_heads ({h}) must divide hidden_size ({d})")
    require(ff % 2 == 0, "ffn_dim", f"ffn_dim ({ff}) must be even (MoshiConfig)")
    depth_ff = (c.depth_decoder_config or {}).get("ffn_dim", 0)
    require(not isinstance(depth_ff, int) or depth_ff % 2 == 0, "depth_decoder_config.ffn_dim",
            f"depth_decoder_config.ffn_dim ({depth_ff}) must be even (MoshiDepthConfig)")
    require(c.audio_encoder_config is not None or c.audio_vocab_size is not None,
            "audio_vocab_size", "audio_vocab_size is not given and there is no "
            "audio_encoder_config to take it from: transformers cannot build the model")
    hd = c.resolved_head_dim
    p = "model.layers.{i}"
    a = f"{p}.self_attn"
    layer = [
        *norm(f"{p}.input_layernorm", "attn/norm", d, bias=False),
        *(t for x, out_f, in_f in (("q_proj", h * hd, d), ("k_proj", kv * hd, d),
                                   ("v_proj", kv * hd, d), ("o_proj", d, h * hd))
          for t in linear(f"{a}.{x}.linear", f"attn/{x}", out_f, in_f, bias=False)),
        *norm(f"{p}.post_attention_layernorm", "mlp/norm", d, bias=False),
        *linear(f"{p}.mlp.fc1", "mlp/fc1", ff, d, bias=False),
        *linear(f"{p}.mlp.fc2", "mlp/fc2", d, ff // 2, bias=False),
    ]
    return Architecture(
        shape=replace(c.shape(tied=False), intermediate_size=ff // 2),
        tensors=(
            embedding("model.embed_tokens", "embed/tokens", v + 1, d),
            *norm("model.norm", "final_norm", d, bias=False),
            *lm_head("lm_head", v, d, tied_to=None),
        ),
        layer_groups=uniform_layers(c.num_hidden_layers, layer, c.attention(window=c.sliding_window)),
        notes=("MoshiForCausalLM: the text model; the depth decoder and the Mimi audio codec are "
               "parts of MoshiForConditionalGeneration only",),
    )


# ---- dense decoders with multi-head latent attention ----------------------------------------------


class DenseMLAConfig(DenseConfig):
    """A Llama layer whose attention is DeepSeek's MLA (``deepseek.mla``: q and kv through low-rank
    latents, a shared rotary key); the KV cache holds the latent. Fields named as DeepSeek's."""

    num_key_value_heads: Size | None = None  # read by transformers, not by MLA
    q_lora_rank: Size | None = 1536
    kv_lora_rank: Size = 512
    qk_nope_head_dim: Size = 128
    qk_rope_head_dim: Size = 64
    v_head_dim: Size | None = 128
    tie_word_embeddings: bool = True

    @property
    def resolved_v_head_dim(self) -> int:
        if self.v_head_dim is not None:
            return self.v_head_dim
        return resolve_head_dim(self.hidden_size, self.num_attention_heads)


class MiniCPM3Config(DenseMLAConfig):
    """MiniCPM3: v_head_dim null means hidden_size / heads; its scale_emb / scale_depth are scalars."""

    transformers_class = "MiniCPM3Config"

    q_lora_rank: Size | None
    kv_lora_rank: Size
    qk_nope_head_dim: Size
    qk_rope_head_dim: Size
    v_head_dim: Size | None = None


class YoutuConfig(DenseMLAConfig):
    transformers_class = "YoutuConfig"


def describe_mla(c: DenseMLAConfig) -> Architecture:
    d, h, L = c.hidden_size, c.num_attention_heads, c.num_hidden_layers
    vd, qk = c.resolved_v_head_dim, c.qk_nope_head_dim + c.qk_rope_head_dim
    p = "model.layers.{i}"
    # mla reads DeepSeek's field names, which this config shares (v_head_dim resolved here)
    fields = cast(Any, c.model_copy(update={"v_head_dim": vd}))
    layer = [
        *norm(f"{p}.input_layernorm", "attn/norm", d, bias=False),
        *mla(f"{p}.self_attn", fields),
        *norm(f"{p}.post_attention_layernorm", "mlp/norm", d, bias=False),
        *swiglu(f"{p}.mlp", "mlp", d, c.intermediate_size, bias=c.mlp_bias),
    ]
    attention = Attention(h, h, qk, vd, kv_latent_dim=c.kv_lora_rank + c.qk_rope_head_dim)
    return Architecture(
        shape=Shape(L, d, h, h, qk, c.intermediate_size, c.vocab_size,
                    c.tie_word_embeddings, c.max_position_embeddings),
        tensors=llama_outer_tensors(c.vocab_size, d, tied=c.tie_word_embeddings),
        layer_groups=uniform_layers(L, layer, attention),
    )


# ---- the description ------------------------------------------------------------------------------


def layer_tensors(c: DenseConfig) -> list[Tensor]:
    """One layer: the layout's norms, GQA attention (+ its extras), the MLP (+ its extras)."""
    lay = c.layer_layout()
    d, ff = c.hidden_size, c.intermediate_size
    h, hd, kv = c.num_attention_heads, c.resolved_head_dim, c.resolved_kv_heads
    p = "model.layers.{i}"
    a, m = f"{p}.self_attn", f"{p}.mlp"
    ts: list[Tensor] = []
    for name, component in lay.norms:
        ts += norm(f"{p}.{name}", component, d, bias=lay.norm_bias)
    # q, o: (h·hd) × d;  k, v: (kv·hd) × d
    proj = gqa_projections(a, d, h, kv, hd, bias=c.qkv_bias, o_bias=c.o_bias)
    if lay.o_from_hidden:  # o: d × d
        proj = [t for t in proj if ".o_proj." not in t.name]
        proj += linear(f"{a}.o_proj", "attn/o_proj", d, d, bias=c.o_bias)
    ts += proj
    if lay.qk_norm is not None:
        q_dim, k_dim = (hd, hd) if lay.qk_norm == "head" else (h * hd, kv * hd)
        qn, kn = lay.qk_norm_names
        ts += norm(f"{a}.{qn}", "attn/q_norm", q_dim, bias=False)
        ts += norm(f"{a}.{kn}", "attn/k_norm", k_dim, bias=False)
    if lay.sinks:
        ts.append(Tensor(f"{a}.sinks", (h,), "attn/sinks"))
    if lay.diff_lambdas:
        ts += [Tensor(f"{a}.lambda_{x}", (hd,), "attn/lambda") for x in ("q1", "k1", "q2", "k2")]
    if lay.dynamic_mask:
        ts.append(Tensor(f"{a}.A", (kv,), "attn/dynamic_mask"))
        ts += linear(f"{a}.dt_proj", "attn/dynamic_mask", kv, kv * hd, bias=c.qkv_bias)
    if lay.residual_scales:
        ts += [
            Tensor(f"{p}.{x}", (d,), "residual")
            for x in ("input_residual", "post_attention_residual")
        ]
    if lay.sub_norms:
        ts += norm(f"{a}.attn_sub_norm", "attn/sub_norm", d, bias=False)
        ts += norm(f"{m}.ffn_sub_norm", "mlp/sub_norm", ff, bias=False)
    if lay.mlp == "gated":
        ts += swiglu(m, "mlp", d, ff, bias=c.ffn_bias)
    elif lay.mlp == "fused":  # gate_up_proj: 2ff × d;  down_proj: d × ff
        ts += linear(f"{m}.gate_up_proj", "mlp/gate_up_proj", 2 * ff, d, bias=c.ffn_bias)
        ts += linear(f"{m}.down_proj", "mlp/down_proj", d, ff, bias=c.ffn_bias)
    else:  # up: ff × d;  down: d × ff
        up, down = lay.mlp_names
        ts += linear(f"{m}.{up}", "mlp/up_proj", ff, d, bias=c.ffn_bias)
        ts += linear(f"{m}.{down}", "mlp/down_proj", d, ff, bias=c.ffn_bias)
    ts += [Tensor(f"{m}.act_fn.{x}", (1,), "mlp/act") for x in lay.act_params]
    return ts


def describe(c: DenseConfig) -> Architecture:
    lay = c.layer_layout()
    layer = layer_tensors(c)
    windows = {SLIDING: c.sliding_window, FULL: None}
    return Architecture(
        shape=c.shape(tied=c.tie_word_embeddings),
        tensors=llama_outer_tensors(
            c.vocab_size,
            c.hidden_size,
            tied=c.tie_word_embeddings,
            norm_bias=lay.norm_bias,
            final_norm="model.norm" if lay.final_norm else None,
        ),
        layer_groups=planned_layers(
            c.layer_plan(),
            lambda kind: (layer, replace(c.attention(window=windows[kind]), maps=lay.maps)),
        ),
    )
