"""BLT, the Byte Latent Transformer (Pagnoni et al. 2024, arXiv 2412.09871): bytes grouped into
patches by a small entropy model, a local encoder that pools each patch's bytes by cross-attention,
a global transformer over the patches and a local decoder that cross-attends back to them.

Tensor names and shapes as in transformers' ``BltForCausalLM`` (blt/modeling_blt.py, transformers
5.24). Every stack's layer is Llama's (input and post-attention RMSNorms [d], q [h·hd, d], k and v
[kv·hd, d], o [d, h·hd], a SwiGLU MLP) with hd = d // h (floored, as transformers sizes it) and kv
heads as given, else h; a left-out intermediate_size is ⌊8d/3⌋. Its parts:

- ``patcher`` (``patch_in_forward``): the entropy model, its own embed_tokens [V_p, d_p], layers,
  norm and lm_head [V_p, d_p];
- ``local_encoder``: embed_tokens [V_e, d_e], the hash n-gram embedding encoder_hash_tok_embedding
  [hash vocab · functions · len(group sizes), d_e], layers, patch_embedding_projection [k·d_e, d_e] and
  cross-attention layers (one, or one per layer with ``cross_attn_all_layers``): q, k, v, o as the
  self-attention's and q_norm, k_norm [d_e];
- the main part, the global transformer: its layers and, when d_e · cross_attn_k (the top-level k)
  differs from its width, token_embedding_projection [d_g, k·d_e]; beside it lm_head [V, d_d]
  (tied to the local encoder's embed_tokens with tie_word_embeddings);
- ``local_decoder``: layers, patch_embedding_projection [k·d_d, hidden_size_global], its norm and
  cross-attention layers as the encoder's.

Which bytes end a patch depends on the entropy model's output for the text at hand, so FLOPs and
cache bytes are not a formula of the weights: they are refused (ModelSpec.forward_unmodelled).
"""

from __future__ import annotations

from typing import Any
from typing import ClassVar

from llmcalc.families._base import Architecture
from llmcalc.families._base import Count
from llmcalc.families._base import FamilyConfig
from llmcalc.families._base import Size
from llmcalc.families._base import embedding
from llmcalc.families._base import linear
from llmcalc.families._base import lm_head
from llmcalc.families._base import norm
from llmcalc.families._base import require
from llmcalc.families._base import swiglu
from llmcalc.model.spec import Attention
from llmcalc.model.spec import LayerGroup
from llmcalc.model.spec import LayerSet
from llmcalc.model.spec import Part
from llmcalc.model.spec import Shape
from llmcalc.model.spec import Tensor

# BltConfig.__post_init__: the hash n-gram sizes when the config names none
HASH_GROUP_SIZES = (3, 4, 5, 6, 7, 8)


class BltStackConfig(FamilyConfig):
    """One stack's fields (BltPatcherConfig, BltLocalEncoderConfig, BltLocalDecoderConfig,
    BltGlobalTransformerConfig), on its class's defaults."""

    transformers_class = "BltGlobalTransformerConfig"

    hidden_size: Size
    num_hidden_layers: Count
    num_attention_heads: Size
    num_key_value_heads: Size | None = None
    intermediate_size: Size | None = None
    vocab_size: Size | None = None
    cross_attn_all_layers: bool | None = None
    cross_attn_k: Size | None = None
    hidden_size_global: Size | None = None

    @property
    def kv_heads(self) -> int:
        return self.num_key_value_heads or self.num_attention_heads

    @property
    def ffn(self) -> int:
        return self.intermediate_size or int(8 * self.hidden_size / 3)

    @property
    def head_dim(self) -> int:
        return self.hidden_size // self.num_attention_heads


class BltConfig(FamilyConfig):
    transformers_class = "BltConfig"
    stacks: ClassVar[tuple[tuple[str, str], ...]] = (
        ("patcher_config", "blt_patcher"), ("encoder_config", "blt_local_encoder"),
        ("decoder_config", "blt_local_decoder"), ("global_config", "blt_global_transformer"),
    )

    vocab_size: Size
    patch_in_forward: bool | None
    cross_attn_k: Size | None
    encoder_hash_byte_group_size: list[Size] | None = None
    encoder_hash_byte_group_vocab: Size | None
    encoder_hash_byte_group_nb_functions: Count | None
    tie_word_embeddings: bool
    patcher_config: dict[str, Any] | None = None
    encoder_config: dict[str, Any] | None = None
    decoder_config: dict[str, Any] | None = None
    global_config: dict[str, Any] | None = None


def _stack(c: BltConfig, key: str, model_type: str) -> BltStackConfig:
    from llmcalc.families._vision import read_sub
    from llmcalc.families._vision import sub_fields

    fields = sub_fields(getattr(c, key), key, model_type, {})
    s: BltStackConfig = read_sub(BltStackConfig, fields, key)
    require(s.head_dim > 0, f"{key}.num_attention_heads",
            f"{key}.num_attention_heads ({s.num_attention_heads}) exceeds hidden_size "
            f"({s.hidden_size}): a head of no width (transformers cannot build it)")
    return s


def _layer(p: str, s: BltStackConfig) -> list[Tensor]:
    d, h, kv, hd = s.hidden_size, s.num_attention_heads, s.kv_heads, s.head_dim
    return [
        *linear(f"{p}.self_attn.q_proj", "attn/q_proj", h * hd, d, bias=False),
        *linear(f"{p}.self_attn.k_proj", "attn/k_proj", kv * hd, d, bias=False),
        *linear(f"{p}.self_attn.v_proj", "attn/v_proj", kv * hd, d, bias=False),
        *linear(f"{p}.self_attn.o_proj", "attn/o_proj", d, h * hd, bias=False),
        *swiglu(f"{p}.mlp", "mlp", d, s.ffn),
        *norm(f"{p}.input_layernorm", "attn/norm", d, bias=False),
        *norm(f"{p}.post_attention_layernorm", "mlp/norm", d, bias=False),
    ]


def _attention(s: BltStackConfig) -> Attention:
    return Attention(s.num_attention_heads, s.kv_heads, s.head_dim, s.head_dim)


def _groups(prefix: str, s: BltStackConfig, *, cross: bool) -> tuple[LayerGroup, ...]:
    """The stack's layers, and (local encoder and decoder) its cross-attention layers."""
    L = s.num_hidden_layers
    groups = [LayerGroup(prefix, LayerSet.span(0, L), tuple(_layer(f"{prefix}.layers.{{i}}", s)),
                         _attention(s))]
    if cross:
        d, h, kv, hd = s.hidden_size, s.num_attention_heads, s.kv_heads, s.head_dim
        n = L if s.cross_attn_all_layers else 1
        x = f"{prefix}.cross_attn_layers.{{i}}"
        tensors = [
            *linear(f"{x}.q_proj", "cross/q_proj", h * hd, d, bias=False),
            *linear(f"{x}.k_proj", "cross/k_proj", kv * hd, d, bias=False),
            *linear(f"{x}.v_proj", "cross/v_proj", kv * hd, d, bias=False),
            *linear(f"{x}.o_proj", "cross/o_proj", d, h * hd, bias=False),
            *norm(f"{x}.q_norm", "cross/q_norm", d, bias=False),
            *norm(f"{x}.k_norm", "cross/k_norm", d, bias=False),
        ]
        groups.append(LayerGroup(f"{prefix} cross-attention", LayerSet.span(0, n), tuple(tensors),
                                 _attention(s)))
    return tuple(groups)


def _shape(s: BltStackConfig, vocab: int) -> Shape:
    return Shape(s.num_hidden_layers, s.hidden_size, s.num_attention_heads, s.kv_heads,
                 s.head_dim, s.ffn, vocab, False)


def describe(c: BltConfig) -> Architecture:
    """BltForCausalLM: the parts above, the global transformer the main one."""
    patcher, enc, dec, glob = (_stack(c, key, t) for key, t in c.stacks)
    for key, s in (("encoder_config", enc), ("decoder_config", dec)):
        require(s.vocab_size is not None and s.cross_attn_k is not None, f"{key}.cross_attn_k",
                f"{key}.cross_attn_k and vocab_size must be given")
    require(dec.hidden_size_global is not None, "decoder_config.hidden_size_global",
            "decoder_config.hidden_size_global must be given")
    require(c.cross_attn_k is not None, "cross_attn_k", "cross_attn_k must be given")
    assert enc.vocab_size is not None and enc.cross_attn_k is not None
    assert dec.cross_attn_k is not None and dec.hidden_size_global is not None
    assert c.cross_attn_k is not None
    de, dd, dg, v = enc.hidden_size, dec.hidden_size, glob.hidden_size, c.vocab_size
    groups_of = len(c.encoder_hash_byte_group_size or HASH_GROUP_SIZES)
    hash_rows = (c.encoder_hash_byte_group_vocab or 0) * (c.encoder_hash_byte_group_nb_functions or 0)
    require(c.encoder_hash_byte_group_vocab is not None, "encoder_hash_byte_group_vocab",
            "encoder_hash_byte_group_vocab must be given")
    require(c.encoder_hash_byte_group_nb_functions is not None,
            "encoder_hash_byte_group_nb_functions", "encoder_hash_byte_group_nb_functions must "
            "be given")
    embed = "model.local_encoder.embed_tokens"
    tied = c.tie_word_embeddings
    require(not tied or (enc.vocab_size, de) == (v, dd), "tie_word_embeddings",
            f"tie_word_embeddings ties lm_head [{v}, {dd}] to the local encoder's embed_tokens "
            f"[{enc.vocab_size}, {de}]: the shapes must agree")
    cross_out = de * c.cross_attn_k  # BltConfig.__post_init__: encoder_cross_output_size
    outer = [
        *(linear("model.global_transformer.token_embedding_projection", "embed/projection", dg,
                 cross_out, bias=False) if cross_out != dg else []),
        *lm_head("lm_head", v, dd, tied_to=f"{embed}.weight" if tied else None),
    ]
    parts = [
        Part("local_encoder", (
            *linear("model.local_encoder.patch_embedding_projection", "patch_projection",
                    de * enc.cross_attn_k, de, bias=False),
            embedding(embed, "embed/tokens", enc.vocab_size, de),
            embedding("model.encoder_hash_tok_embedding", "embed/hash", hash_rows * groups_of, de),
        ), _groups("model.local_encoder", enc, cross=True), _shape(enc, enc.vocab_size)),
        Part("local_decoder", (
            *linear("model.local_decoder.patch_embedding_projection", "patch_projection",
                    dd * dec.cross_attn_k, dec.hidden_size_global, bias=False),
            *norm("model.local_decoder.norm", "final_norm", dd, bias=False),
        ), _groups("model.local_decoder", dec, cross=True), _shape(dec, v)),
    ]
    if c.patch_in_forward:
        pv = patcher.vocab_size
        require(pv is not None, "patcher_config.vocab_size", "patcher_config.vocab_size must be given")
        assert pv is not None
        dp = patcher.hidden_size
        parts.insert(0, Part("patcher", (
            embedding("model.patcher.embed_tokens", "embed/tokens", pv, dp),
            *norm("model.patcher.norm", "final_norm", dp, bias=False),
            *lm_head("model.patcher.lm_head", pv, dp, tied_to=None),
        ), _groups("model.patcher", patcher, cross=False), _shape(patcher, pv)))
    return Architecture(
        shape=_shape(glob, v),
        tensors=tuple(outer),
        layer_groups=_groups("model.global_transformer", glob, cross=False),
        parts=tuple(parts),
        main_part="global_transformer",
        forward_unmodelled="BLT's patches end where its entropy model says, which depends on the "
                           "text, not on the weights",
    )
