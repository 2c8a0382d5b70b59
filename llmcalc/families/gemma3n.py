"""Gemma 3n text decoder (``gemma3n_text``; Google 2025, "Gemma 3n"): per-layer embeddings, AltUp,
LAuReL and KV sharing across the last layers.

Tensor names and shapes as in transformers ``Gemma3nForCausalLM``:
- per-layer embeddings: a second table ``embed_tokens_per_layer`` [V_p, L·p] (p =
  hidden_size_per_layer_input) and ``per_layer_model_projection`` [L·p, d] with a norm [p]; each
  layer gates its slice in (``per_layer_input_gate`` [p, d], ``per_layer_projection`` [d, p], a norm);
- AltUp (Baykal et al. 2023) keeps n = altup_num_inputs copies of the residual stream: n − 1
  ``altup_projections`` and ``altup_unembed_projections`` [d, d], and per layer a router [n, d] with
  its norm, prediction coefficients [n², n], correction coefficients [n, n] and an output scale [d]
  (the router runs twice a layer; the predicted streams are the n streams times an n × n matrix
  per token, 2·d·n² FLOPs a layer; the correction is elementwise);
- LAuReL (Menghani et al. 2024): a low-rank residual, ``linear_left`` [r, d], ``linear_right`` [d, r]
  and a norm;
- KV sharing: the last ``num_kv_shared_layers`` layers attend with the keys and values of the last
  earlier layer of their attention type; they hold no k_proj, v_proj or k_norm and cache nothing.
Attention is Gemma 3's (q/k norms over head_dim, v norm without weights), 4 of every 5 layers sliding.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from llmcalc.families._base import FULL
from llmcalc.families._base import SLIDING
from llmcalc.families._base import Architecture
from llmcalc.families._base import Count
from llmcalc.families._base import DecoderConfig
from llmcalc.families._base import FamilyConfig
from llmcalc.families._base import LayerPlan
from llmcalc.families._base import Size
from llmcalc.families._base import embedding
from llmcalc.families._base import layer_kinds
from llmcalc.families._base import linear
from llmcalc.families._base import llama_outer_tensors
from llmcalc.families._base import norm
from llmcalc.families._base import require
from llmcalc.families._base import split_plan
from llmcalc.families._base import swiglu
from llmcalc.families._moe import cross_plans
from llmcalc.families._moe import crossed_name
from llmcalc.limits import MAX_MODULE_COPIES
from llmcalc.model.spec import Attention
from llmcalc.model.spec import LayerGroup
from llmcalc.model.spec import LayerSet
from llmcalc.model.spec import Part
from llmcalc.model.spec import Shape
from llmcalc.model.spec import Tensor

OWN, SHARED = "own_kv", "shared_kv"


class Gemma3nTextConfig(DecoderConfig):
    transformers_class = "Gemma3nTextConfig"

    vocab_size_per_layer_input: Size
    hidden_size_per_layer_input: Size
    intermediate_size: Size | list[Size]  # type: ignore[assignment]  # one, or one per layer
    tie_word_embeddings: bool
    attention_bias: bool
    sliding_window: Size
    layer_types: list[str] | None = None
    altup_num_inputs: Size
    num_kv_shared_layers: Count
    laurel_rank: Size

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
    # the model holds altup_num_inputs − 1 projections of each kind, one module apiece
    require(n <= MAX_MODULE_COPIES + 1, "altup_num_inputs",
            f"altup_num_inputs ({n:,}) makes {n - 1:,} projections of each kind; llmcalc describes "
            f"at most {MAX_MODULE_COPIES:,}")
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
        # the router reads the stream twice a layer: in AltUp's predict and in its correct
        Tensor(f"{p}.altup.modality_router.weight", (n, d), "altup/modality_router", matmul=True,
               uses=2),
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
    return Architecture(  # a per-layer intermediate_size list (all equal): the one width
        shape=replace(c.shape(tied=c.tie_word_embeddings), intermediate_size=c.ff),
        tensors=tensors, layer_groups=groups,
        # AltUp's predict: per token and layer, the n streams [d, n] times the n × n coefficients
        # the router made (torch.matmul in Gemma3nTextAltUp.predict): 2·d·n²
        depth_flops_per_token=2 * d * n * n * L,
        depth_flops_what="AltUp's predictions, the streams times their n × n coefficients a layer",
    )


# ---- the whole model (gemma3n): MobileNetV5 + USM audio encoder + embedders + this text model -----
#
# transformers Gemma3nForConditionalGeneration (gemma3n/modeling_gemma3n.py): model.vision_tower
# (TimmWrapperModel → timm mobilenetv5_300m_enc, :mod:`_mobilenet`), model.audio_tower
# (Gemma3nAudioEncoder, USM: Zhang et al. 2023), model.embed_vision / model.embed_audio
# (Gemma3nMultimodalEmbedder), model.language_model (Gemma3nTextModel: the family above), the head
# tied to the text embedding as the top-level tie_word_embeddings says (default true).


class Gemma3nAudioConfig(FamilyConfig):
    """Gemma3nAudioConfig: the USM conformer's sizes (defaults: family_defaults.json)."""

    transformers_class = "Gemma3nAudioConfig"

    hidden_size: Size
    input_feat_size: Size
    vocab_size: Size
    conf_num_hidden_layers: Size
    conf_num_attention_heads: Size
    conf_conv_kernel_size: Size
    conf_reduction_factor: Size
    sscp_conv_channel_size: list[Size]
    sscp_conv_kernel_size: list[list[Size]]
    sscp_conv_stride_size: list[list[Size]]


class Gemma3nVisionConfig(FamilyConfig):
    """Gemma3nVisionConfig: the timm architecture and the embedder's sizes."""

    transformers_class = "Gemma3nVisionConfig"

    architecture: str
    model_args: dict[str, Any] | None = None
    hidden_size: Size
    vocab_size: Size


class Gemma3nConfig(FamilyConfig):
    """Gemma3nConfig: three sub-configs (absent: their class defaults) and the soft tokens one
    image (256) or one audio clip (188) puts in the context."""

    transformers_class = "Gemma3nConfig"

    text_config: dict[str, Any] | None = None
    vision_config: dict[str, Any] | None = None
    audio_config: dict[str, Any] | None = None
    vision_soft_tokens_per_image: Size
    audio_soft_tokens_per_image: Size
    tie_word_embeddings: bool
    image_size: Size | None = None  # llmcalc's own (--image-size); the processor's is 768


def audio_encoder(prefix: str, a: Gemma3nAudioConfig, *, context_tokens: int) -> Part:
    """Gemma3nAudioEncoder under ``prefix``: a subsampling stem of two Conv2d (no bias) over
    (time, mel) with a cumulative group norm [c] each, its output flattened over channels ×
    frequency into input_proj_linear [d, c₂·f₂] (f: (f_in + 2 − k) // s + 1 each conv); then per
    conformer layer two half-step feed-forwards (norms [d], ffw_layer_1 [4d, d], ffw_layer_2
    [d, 4d]), attention (norms, per_dim_scale [d/h], relative-position pos_proj [d, d], q, k, v,
    post [d, d]), a light conv (norm, linear_start [2d, d] gated, depthwise Conv1d [d, 1, K],
    conv_norm, linear_end [d, d]) and a final norm."""
    d, h = a.hidden_size, a.conf_num_attention_heads
    require(d % h == 0, "audio_config.conf_num_attention_heads",
            f"audio_config.conf_num_attention_heads ({h}) must divide hidden_size ({d})")
    chans, kernels, strides = a.sscp_conv_channel_size, a.sscp_conv_kernel_size, a.sscp_conv_stride_size
    require(len(chans) == 2 and len(kernels) == 2 and len(strides) == 2
            and all(len(k) == 2 for k in (*kernels, *strides)), "audio_config.sscp_conv_channel_size",
            "audio_config: the subsampling stem has two convolutions (two channel sizes, kernels "
            "and strides of (time, frequency))")
    s = f"{prefix}.subsample_conv_projection"
    outer: list[Tensor] = []
    f, c_in = a.input_feat_size, 1
    for i in range(2):
        (kh, kw), (_, sw) = kernels[i], strides[i]
        f = (f + 2 - kw) // sw + 1  # frequency padded by 1 on each side
        require(f > 0, "audio_config.input_feat_size",
                "audio_config.input_feat_size is too small for the subsampling convolutions")
        outer += [Tensor(f"{s}.conv_{i}.conv.weight", (chans[i], c_in, kh, kw), "subsample/conv",
                         matmul=True),
                  Tensor(f"{s}.conv_{i}.norm.weight", (chans[i],), "subsample/norm")]
        c_in = chans[i]
    outer += linear(f"{s}.input_proj_linear", "subsample/input_proj", d, c_in * f, bias=False)
    p = f"{prefix}.conformer.{{i}}"
    layer: list[Tensor] = []
    for ffw in ("ffw_layer_start", "ffw_layer_end"):
        layer += [*norm(f"{p}.{ffw}.pre_layer_norm", "ffw/norm", d, bias=False),
                  *linear(f"{p}.{ffw}.ffw_layer_1", "ffw/ffw_layer_1", 4 * d, d, bias=False),
                  *linear(f"{p}.{ffw}.ffw_layer_2", "ffw/ffw_layer_2", d, 4 * d, bias=False),
                  *norm(f"{p}.{ffw}.post_layer_norm", "ffw/norm", d, bias=False)]
    at = f"{p}.attention"
    layer += [*norm(f"{at}.pre_attn_norm", "attn/norm", d, bias=False),
              Tensor(f"{at}.attn.per_dim_scale", (d // h,), "attn/per_dim_scale"),
              *linear(f"{at}.attn.relative_position_embedding.pos_proj", "attn/pos_proj", d, d,
                      bias=False),
              *linear(f"{at}.attn.q_proj", "attn/q_proj", d, d, bias=False),
              *linear(f"{at}.attn.k_proj", "attn/k_proj", d, d, bias=False),
              *linear(f"{at}.attn.v_proj", "attn/v_proj", d, d, bias=False),
              *linear(f"{at}.post", "attn/post", d, d, bias=False),
              *norm(f"{at}.post_norm", "attn/norm", d, bias=False)]
    lc = f"{p}.lconv1d"
    layer += [*norm(f"{lc}.pre_layer_norm", "lconv/norm", d, bias=False),
              *linear(f"{lc}.linear_start", "lconv/linear_start", 2 * d, d, bias=False),
              Tensor(f"{lc}.depthwise_conv1d.weight", (d, 1, a.conf_conv_kernel_size),
                     "lconv/depthwise_conv1d"),
              *norm(f"{lc}.conv_norm", "lconv/norm", d, bias=False),
              *linear(f"{lc}.linear_end", "lconv/linear_end", d, d, bias=False),
              *norm(f"{p}.norm", "norm", d, bias=False)]
    L = a.conf_num_hidden_layers
    group = LayerGroup("conformer", LayerSet.span(0, L), tuple(layer), Attention(h, h, d // h, d // h))
    return Part(name="audio", tensors=tuple(outer), layer_groups=(group,),
                shape=Shape(L, d, h, h, d // h, 4 * d, 0, False), context_tokens=context_tokens,
                input="audio")


def embedder(prefix: str, component: str, vocab: int, d_mm: int, d_t: int) -> list[Tensor]:
    """Gemma3nMultimodalEmbedder: a table of vocab hard tokens [vocab, d_mm], norms for hard and soft
    tokens [d_mm], embedding_projection [d_t, d_mm] (its post-projection norm has no weight)."""
    return [Tensor(f"{prefix}.embedding.weight", (vocab, d_mm), f"{component}/embedding"),
            *norm(f"{prefix}.hard_embedding_norm", f"{component}/norm", d_mm, bias=False),
            *norm(f"{prefix}.soft_embedding_norm", f"{component}/norm", d_mm, bias=False),
            *linear(f"{prefix}.embedding_projection", f"{component}/embedding_projection", d_t,
                    d_mm, bias=False)]


MOBILENET_SIDE = 768  # Gemma3nImageProcessor resizes every image to 768 × 768


def describe_gemma3n(c: Gemma3nConfig) -> Architecture:
    from llmcalc.families._mobilenet import FEATURES
    from llmcalc.families._mobilenet import MSFA_RESOLUTION
    from llmcalc.families._mobilenet import mobilenetv5
    from llmcalc.families._vision import prefixer
    from llmcalc.families._vision import read_sub
    from llmcalc.families._vision import sub_fields
    from llmcalc.families._vision import text_model
    from llmcalc.inputs import family_defaults

    text = sub_fields(c.text_config, "text_config", "gemma3n_text",
                      family_defaults.sub_defaults("gemma3n_text") or {})
    lm = text_model(text, rename=prefixer("model.", "model.language_model."),
                    tied=c.tie_word_embeddings)
    declared = family_defaults.sub_defaults("gemma3n") or {}
    v = read_sub(Gemma3nVisionConfig, sub_fields(c.vision_config, "vision_config", "gemma3n_vision",
                                                 declared["vision_config"]), "vision_config")
    require(v.architecture == "mobilenetv5_300m_enc", "vision_config.architecture",
            f"vision_config.architecture {v.architecture!r}: llmcalc counts only "
            "mobilenetv5_300m_enc (Gemma 3n's); --part language or --part audio counts the rest")
    require(not v.model_args, "vision_config.model_args",
            "vision_config.model_args change timm's MobileNetV5, which llmcalc does not follow; "
            "--part language or --part audio counts the rest")
    require(v.hidden_size == FEATURES, "vision_config.hidden_size",
            f"vision_config.hidden_size must be {FEATURES} (MobileNetV5's output), got {v.hidden_size}")
    require(c.vision_soft_tokens_per_image == MSFA_RESOLUTION ** 2, "vision_soft_tokens_per_image",
            f"vision_soft_tokens_per_image must be {MSFA_RESOLUTION ** 2} (MobileNetV5's 16 × 16 "
            f"output), got {c.vision_soft_tokens_per_image}")
    a = read_sub(Gemma3nAudioConfig, sub_fields(c.audio_config, "audio_config", "gemma3n_audio",
                                                declared["audio_config"]), "audio_config")
    d_t = lm.shape.hidden_size
    side = c.image_size or MOBILENET_SIDE
    tower = mobilenetv5("model.vision_tower.timm_model", image_size=side,
                        context_tokens=c.vision_soft_tokens_per_image)
    audio = audio_encoder("model.audio_tower", a, context_tokens=c.audio_soft_tokens_per_image)
    audio = replace(audio, tensors=(*audio.tensors, *embedder(
        "model.embed_audio", "embed_audio", a.vocab_size, a.hidden_size, d_t)))
    proj = embedder("model.embed_vision", "embed_vision", v.vocab_size, v.hidden_size, d_t)
    # the soft tokens of one image go through the norm and embedding_projection
    projector = Part(name="projector", tensors=tuple(proj),
                     shape=Shape(0, d_t, 0, 0, 0, v.hidden_size, 0, False),
                     input_tokens=(("", c.vision_soft_tokens_per_image),))
    notes: tuple[str, ...] = (
        "audio encoder: parameters and weights only; its FLOPs per clip are not computed",)
    if c.image_size is not None and c.image_size != MOBILENET_SIDE:
        notes += (f"image_size {c.image_size}: the processor resizes every image to 768×768 "
                  "pixels; the per-image figures are for the size asked",)
    return replace(lm, notes=(*lm.notes, *notes), parts=(tower, projector, audio))
