"""Gemma 2 and Gemma 3 text decoders: sliding and full attention layers, four RMSNorms per layer.

Covers ``gemma2`` (Gemma Team 2024, "Gemma 2": local/global layers alternate) and ``gemma3_text``
(Gemma Team 2025, "Gemma 3": five local layers per global one, q/k RMSNorm over head_dim). A
multimodal ``gemma3`` config is counted for its ``text_config`` (a ``gemma3_text`` model) by the
config loader. Tensor names and shapes as in transformers ``Gemma2ForCausalLM`` / ``Gemma3ForCausalLM``.

Sliding and full layers hold the same tensors but attend differently (window set on the sliding
ones), so they are separate layer groups.
"""

from __future__ import annotations

from typing import ClassVar

from llmcalc.families._base import Architecture
from llmcalc.families._base import DecoderConfig
from llmcalc.families._base import Size
from llmcalc.families._base import gqa_projections
from llmcalc.families._base import layer_kinds
from llmcalc.families._base import llama_outer_tensors
from llmcalc.families._base import norm
from llmcalc.families._base import qk_norms
from llmcalc.families._base import sliding_full_layers
from llmcalc.families._base import swiglu
from llmcalc.model.spec import Tensor


class Gemma2Config(DecoderConfig):
    transformers_class = "Gemma2Config"
    qk_norm: ClassVar[bool] = False

    num_key_value_heads: Size
    head_dim: Size
    tie_word_embeddings: bool
    attention_bias: bool
    sliding_window: Size | None
    layer_types: list[str] | None = None

    @property
    def pattern(self) -> int:
        return 2  # Gemma 2: local, global, local, global …


class Gemma3TextConfig(Gemma2Config):
    """Gemma 3 text model; multimodal configs leave most fields out, so they take these defaults."""

    transformers_class = "Gemma3TextConfig"
    qk_norm: ClassVar[bool] = True

    sliding_window_pattern: Size = 6

    @property
    def pattern(self) -> int:
        return self.sliding_window_pattern


def describe(c: Gemma2Config) -> Architecture:
    d, v, ff = c.hidden_size, c.vocab_size, c.intermediate_size
    h, hd, kv = c.num_attention_heads, c.resolved_head_dim, c.resolved_kv_heads
    p = "model.layers.{i}"
    # Four RMSNorms: before and after attention, before and after the MLP ("sandwich" norms).
    layer: list[Tensor] = [
        *norm(f"{p}.input_layernorm", "attn/norm", d, bias=False),
        *gqa_projections(f"{p}.self_attn", d, h, kv, hd, bias=c.attention_bias),
        *(qk_norms(f"{p}.self_attn", hd, hd) if c.qk_norm else []),
        *norm(f"{p}.post_attention_layernorm", "attn/post_norm", d, bias=False),
        *norm(f"{p}.pre_feedforward_layernorm", "mlp/norm", d, bias=False),
        *swiglu(f"{p}.mlp", "mlp", d, ff),  # GeGLU: same shapes as SwiGLU
        *norm(f"{p}.post_feedforward_layernorm", "mlp/post_norm", d, bias=False),
    ]
    kinds = layer_kinds(c.layer_types, c.num_hidden_layers, pattern=c.pattern)
    return Architecture(
        shape=c.shape(tied=c.tie_word_embeddings),
        tensors=llama_outer_tensors(v, d, tied=c.tie_word_embeddings),
        layer_groups=sliding_full_layers(kinds, layer, c, window=c.sliding_window),
    )
