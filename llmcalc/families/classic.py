"""Decoders with LayerNorm and an ungated (or one-matrix GeGLU) MLP, each in its own tensor names.

Covers ``openai-gpt`` (Radford et al. 2018: learned positions, Conv1D layers, post-norm),
``codegen`` (Nijkamp et al. 2022: GPT-J's parallel block, fused q/k/v without bias, biased head),
``ctrl`` (Keskar et al. 2019: sinusoidal positions, tied head with a bias), ``xglm`` (Lin et al.
2021: fairseq layer, sinusoidal positions), ``biogpt`` (Luo et al. 2022: fairseq layer, learned
positions with 2 offset rows), ``gpt_neox_japanese`` (abeja: fused q/k/v without bias, the output
bias on the last layer only) and ``persimmon`` (Adept 2023: fused q/k/v with bias, LayerNorm on
queries and keys per head) and ``modernbert-decoder`` (Warner et al. 2024, ModernBERT's layer made
causal: no norm before attention in layer 0, a dense + norm head). Tensor names and shapes as in each transformers ``…ForCausalLM`` /
``…LMHeadModel`` (transformers 5.24).
"""

from __future__ import annotations

from dataclasses import replace

from pydantic import AliasChoices
from pydantic import Field

from llmcalc.families._base import Architecture
from llmcalc.families._base import Count
from llmcalc.families._base import DecoderConfig
from llmcalc.families._base import FamilyConfig
from llmcalc.families._base import Size
from llmcalc.families._base import conv1d
from llmcalc.families._base import embedding
from llmcalc.families._base import fc_mlp
from llmcalc.families._base import fused_mha
from llmcalc.families._base import linear
from llmcalc.families._base import lm_head
from llmcalc.families._base import norm
from llmcalc.families._base import require
from llmcalc.families._base import resolve_head_dim
from llmcalc.families._base import split_plan
from llmcalc.families._base import uniform_layers
from llmcalc.families.encoder import modernbert_layers
from llmcalc.model.spec import Attention
from llmcalc.model.spec import LayerGroup
from llmcalc.model.spec import Shape
from llmcalc.model.spec import Tensor


def _shape(
    layers: int, d: int, heads: int, ff: int, vocab: int, *, tied: bool, positions: int | None
) -> Shape:
    return Shape(layers, d, heads, heads, d // heads, ff, vocab, tied, positions)


def _mha(d: int, heads: int, *, hidden_field: str, heads_field: str) -> Attention:
    hd = resolve_head_dim(d, heads, hidden_field=hidden_field, heads_field=heads_field)
    return Attention(heads, heads, hd, hd)


def _head(name: str, v: int, d: int, embed: str, *, tied: bool, bias: bool = False) -> list[Tensor]:
    return lm_head(name, v, d, tied_to=f"{embed}.weight" if tied else None, bias=bias)


# ---- GPT-style field names (n_embd, n_layer, n_head) ----------------------------------------------


class _GPTFields(FamilyConfig):
    n_embd: Size = Field(validation_alias=AliasChoices("n_embd", "hidden_size"))
    n_layer: Size = Field(validation_alias=AliasChoices("n_layer", "num_hidden_layers"))
    n_head: Size = Field(validation_alias=AliasChoices("n_head", "num_attention_heads"))
    vocab_size: Size
    n_positions: Size = Field(
        validation_alias=AliasChoices("n_positions", "max_position_embeddings")
    )
    tie_word_embeddings: bool = True

    def attention(self) -> Attention:
        return _mha(self.n_embd, self.n_head, hidden_field="n_embd", heads_field="n_head")


class OpenAIGPTConfig(_GPTFields):
    transformers_class = "OpenAIGPTConfig"

    n_positions: Size = Field(
        validation_alias=AliasChoices("n_positions", "max_position_embeddings")
    )


def describe_openai_gpt(c: OpenAIGPTConfig) -> Architecture:
    """GPT-1: GPT-2's layer (Conv1D, MLP 4d) with norms after each block and no final norm."""
    d, v, ff = c.n_embd, c.vocab_size, 4 * c.n_embd
    p = "transformer.h.{i}"
    layer = [
        *conv1d(f"{p}.attn.c_attn", "attn/qkv", d, 3 * d),  # q, k, v fused: d × 3d
        *conv1d(f"{p}.attn.c_proj", "attn/o_proj", d, d),
        *norm(f"{p}.ln_1", "attn/norm", d, bias=True),
        *conv1d(f"{p}.mlp.c_fc", "mlp/fc_in", d, ff),
        *conv1d(f"{p}.mlp.c_proj", "mlp/fc_out", ff, d),
        *norm(f"{p}.ln_2", "mlp/norm", d, bias=True),
    ]
    embed = "transformer.tokens_embed"
    return Architecture(
        shape=_shape(
            c.n_layer, d, c.n_head, ff, v, tied=c.tie_word_embeddings, positions=c.n_positions
        ),
        tensors=(
            embedding(embed, "embed/tokens", v, d),
            embedding("transformer.positions_embed", "embed/positions", c.n_positions, d),
            *_head("lm_head", v, d, embed, tied=c.tie_word_embeddings),
        ),
        layer_groups=uniform_layers(c.n_layer, layer, c.attention()),
    )


class CodeGenConfig(_GPTFields):
    transformers_class = "CodeGenConfig"

    n_positions: Size = Field(
        validation_alias=AliasChoices("n_positions", "max_position_embeddings")
    )
    n_inner: Size | None = None  # null means 4 · n_embd
    tie_word_embeddings: bool


def describe_codegen(c: CodeGenConfig) -> Architecture:
    """CodeGen: one LayerNorm, qkv_proj 3d × d and out_proj d × d without bias, fc_in/fc_out with
    bias; rotary on ``rotary_dim`` (no parameters); lm_head [V, d] with a bias [V]."""
    d, v = c.n_embd, c.vocab_size
    ff = c.n_inner if c.n_inner is not None else 4 * d
    p = "transformer.h.{i}"
    layer = [
        *norm(f"{p}.ln_1", "attn/norm", d, bias=True),
        *fused_mha(f"{p}.attn.qkv_proj", f"{p}.attn.out_proj", d, bias=False),
        *fc_mlp(f"{p}.mlp.fc_in", f"{p}.mlp.fc_out", d, ff, bias=True),
    ]
    embed = "transformer.wte"
    return Architecture(
        shape=_shape(
            c.n_layer, d, c.n_head, ff, v, tied=c.tie_word_embeddings, positions=c.n_positions
        ),
        tensors=(
            embedding(embed, "embed/tokens", v, d),
            *norm("transformer.ln_f", "final_norm", d, bias=True),
            *_head("lm_head", v, d, embed, tied=c.tie_word_embeddings, bias=True),
        ),
        layer_groups=uniform_layers(c.n_layer, layer, c.attention()),
        notes=("n_inner=null: d_ff = 4 · n_embd",) if c.n_inner is None else (),
    )


class CTRLConfig(_GPTFields):
    transformers_class = "CTRLConfig"

    n_positions: Size = Field(
        validation_alias=AliasChoices("n_positions", "max_position_embeddings")
    )
    dff: Size


def describe_ctrl(c: CTRLConfig) -> Architecture:
    """CTRL: Wq, Wk, Wv, dense d × d with bias; ffn.0 dff × d, ffn.2 d × dff with bias; two
    LayerNorms and a final one; sinusoidal positions (a buffer); lm_head bias [V]."""
    d, v, ff = c.n_embd, c.vocab_size, c.dff
    p = "transformer.h.{i}"
    a = f"{p}.multi_head_attention"
    layer = [
        *linear(f"{a}.Wq", "attn/q_proj", d, d, bias=True),
        *linear(f"{a}.Wk", "attn/k_proj", d, d, bias=True),
        *linear(f"{a}.Wv", "attn/v_proj", d, d, bias=True),
        *linear(f"{a}.dense", "attn/o_proj", d, d, bias=True),
        *fc_mlp(f"{p}.ffn.0", f"{p}.ffn.2", d, ff, bias=True),
        *norm(f"{p}.layernorm1", "attn/norm", d, bias=True),
        *norm(f"{p}.layernorm2", "mlp/norm", d, bias=True),
    ]
    embed = "transformer.w"
    return Architecture(
        shape=_shape(
            c.n_layer, d, c.n_head, ff, v, tied=c.tie_word_embeddings, positions=c.n_positions
        ),
        tensors=(
            embedding(embed, "embed/tokens", v, d),
            *norm("transformer.layernorm", "final_norm", d, bias=True),
            *_head("lm_head", v, d, embed, tied=c.tie_word_embeddings, bias=True),
        ),
        layer_groups=uniform_layers(c.n_layer, layer, c.attention()),
    )


# ---- fairseq-style layers (XGLM, BioGPT) ---------------------------------------------------------


def _fairseq_layer(p: str, d: int, ff: int) -> list[Tensor]:
    """q, k, v, out_proj: d × d with bias; self_attn_layer_norm; fc1 ff × d, fc2 d × ff with bias;
    final_layer_norm (both LayerNorms before their block)."""
    a = f"{p}.self_attn"
    return [
        *linear(f"{a}.k_proj", "attn/k_proj", d, d, bias=True),
        *linear(f"{a}.v_proj", "attn/v_proj", d, d, bias=True),
        *linear(f"{a}.q_proj", "attn/q_proj", d, d, bias=True),
        *linear(f"{a}.out_proj", "attn/o_proj", d, d, bias=True),
        *norm(f"{p}.self_attn_layer_norm", "attn/norm", d, bias=True),
        *fc_mlp(f"{p}.fc1", f"{p}.fc2", d, ff, bias=True),
        *norm(f"{p}.final_layer_norm", "mlp/norm", d, bias=True),
    ]


class XGLMConfig(FamilyConfig):
    transformers_class = "XGLMConfig"

    d_model: Size = Field(validation_alias=AliasChoices("d_model", "hidden_size"))
    num_layers: Size = Field(validation_alias=AliasChoices("num_layers", "num_hidden_layers"))
    attention_heads: Size = Field(
        validation_alias=AliasChoices("attention_heads", "num_attention_heads")
    )
    ffn_dim: Size = Field(validation_alias=AliasChoices("ffn_dim", "intermediate_size"))
    vocab_size: Size
    max_position_embeddings: Size
    tie_word_embeddings: bool
    add_cross_attention: bool


def describe_xglm(c: XGLMConfig) -> Architecture:
    """XGLM: fairseq layers, sinusoidal positions (a buffer), a final LayerNorm, tied head."""
    require(not c.add_cross_attention, "add_cross_attention", "cross-attention is not supported")
    d, v, ff, L = c.d_model, c.vocab_size, c.ffn_dim, c.num_layers
    embed = "model.embed_tokens"
    return Architecture(
        shape=_shape(
            L,
            d,
            c.attention_heads,
            ff,
            v,
            tied=c.tie_word_embeddings,
            positions=c.max_position_embeddings,
        ),
        tensors=(
            embedding(embed, "embed/tokens", v, d),
            *norm("model.layer_norm", "final_norm", d, bias=True),
            *_head("lm_head", v, d, embed, tied=c.tie_word_embeddings),
        ),
        layer_groups=uniform_layers(
            L,
            _fairseq_layer("model.layers.{i}", d, ff),
            _mha(d, c.attention_heads, hidden_field="d_model", heads_field="attention_heads"),
        ),
    )


class BioGptConfig(DecoderConfig):
    transformers_class = "BioGptConfig"

    max_position_embeddings: Size
    tie_word_embeddings: bool


def describe_biogpt(c: BioGptConfig) -> Architecture:
    """BioGPT: fairseq layers, learned positions with 2 extra rows (fairseq offset), final norm."""
    d, v, ff, L = c.hidden_size, c.vocab_size, c.intermediate_size, c.num_hidden_layers
    embed = "biogpt.embed_tokens"
    return Architecture(
        shape=c.shape(tied=c.tie_word_embeddings),
        tensors=(
            embedding(embed, "embed/tokens", v, d),
            embedding(
                "biogpt.embed_positions", "embed/positions", c.max_position_embeddings + 2, d
            ),
            *norm("biogpt.layer_norm", "final_norm", d, bias=True),
            *_head("output_projection", v, d, embed, tied=c.tie_word_embeddings),
        ),
        layer_groups=uniform_layers(L, _fairseq_layer("biogpt.layers.{i}", d, ff), c.attention()),
        notes=("position table: max_position_embeddings + 2 rows (fairseq offset)",),
    )


# ---- GPT-NeoX-style names (GPT-NeoX-Japanese, Persimmon) -----------------------------------------


class GPTNeoXJapaneseConfig(FamilyConfig):
    transformers_class = "GPTNeoXJapaneseConfig"

    hidden_size: Size
    num_hidden_layers: Size
    num_attention_heads: Size
    vocab_size: Size
    intermediate_multiple_size: Size
    max_position_embeddings: Size | None = None
    tie_word_embeddings: bool


def describe_gpt_neox_japanese(c: GPTNeoXJapaneseConfig) -> Architecture:
    """GPT-NeoX-Japanese: query_key_value 3d × d and dense d × d without bias, except one output
    bias [d] (attention.dense_bias) on the last layer; MLP d·m wide without bias; head embed_out."""
    d, v, L = c.hidden_size, c.vocab_size, c.num_hidden_layers
    ff = d * c.intermediate_multiple_size
    p = "gpt_neox_japanese.layers.{i}"
    layer = [
        *norm(f"{p}.input_layernorm", "attn/norm", d, bias=True),
        *norm(f"{p}.post_attention_layernorm", "mlp/norm", d, bias=True),
        *fused_mha(f"{p}.attention.query_key_value", f"{p}.attention.dense", d, bias=False),
        *fc_mlp(f"{p}.mlp.dense_h_to_4h", f"{p}.mlp.dense_4h_to_h", d, ff, bias=False),
    ]
    last = [*layer, Tensor(f"{p}.attention.dense_bias", (d,), "attn/o_proj")]
    attention = _mha(
        d, c.num_attention_heads, hidden_field="hidden_size", heads_field="num_attention_heads"
    )
    plan = split_plan(L, at=L - 1, before="decoder", after="last")
    groups = tuple(
        LayerGroup(kind, layers, tuple(last if kind == "last" else layer), attention)
        for kind, layers in plan.items()
    )
    embed = "gpt_neox_japanese.embed_in"
    return Architecture(
        shape=_shape(
            L,
            d,
            c.num_attention_heads,
            ff,
            v,
            tied=c.tie_word_embeddings,
            positions=c.max_position_embeddings,
        ),
        tensors=(
            embedding(embed, "embed/tokens", v, d),
            *norm("gpt_neox_japanese.final_layer_norm", "final_norm", d, bias=True),
            *_head("embed_out", v, d, embed, tied=c.tie_word_embeddings),
        ),
        layer_groups=groups,
    )


class PersimmonConfig(DecoderConfig):
    transformers_class = "PersimmonConfig"

    qk_layernorm: bool
    tie_word_embeddings: bool


def describe_persimmon(c: PersimmonConfig) -> Architecture:
    """Persimmon: query_key_value 3d × d and dense d × d with bias, LayerNorm(hd) on queries and
    keys (``qk_layernorm``), a biased ReLU² MLP; LayerNorms with bias; partial rotary (buffers)."""
    d, v, ff, L = c.hidden_size, c.vocab_size, c.intermediate_size, c.num_hidden_layers
    # PersimmonAttention: head_dim = hidden_size // heads, which must divide (it raises otherwise),
    # and its q/k LayerNorms are sized so, whatever head_dim a config gives
    hd = resolve_head_dim(d, c.num_attention_heads)
    p = "model.layers.{i}"
    a = f"{p}.self_attn"
    layer = [
        *fused_mha(f"{a}.query_key_value", f"{a}.dense", d, bias=True),
        *(
            [
                *norm(f"{a}.q_layernorm", "attn/q_norm", hd, bias=True),
                *norm(f"{a}.k_layernorm", "attn/k_norm", hd, bias=True),
            ]
            if c.qk_layernorm
            else []
        ),
        *fc_mlp(f"{p}.mlp.dense_h_to_4h", f"{p}.mlp.dense_4h_to_h", d, ff, bias=True),
        *norm(f"{p}.input_layernorm", "attn/norm", d, bias=True),
        *norm(f"{p}.post_attention_layernorm", "mlp/norm", d, bias=True),
    ]
    embed = "model.embed_tokens"
    return Architecture(
        shape=replace(c.shape(tied=c.tie_word_embeddings), head_dim=hd),
        tensors=(
            embedding(embed, "embed/tokens", v, d),
            *norm("model.final_layernorm", "final_norm", d, bias=True),
            *_head("lm_head", v, d, embed, tied=c.tie_word_embeddings),
        ),
        # its cache and attention FLOPs at hd too, not at a config's head_dim
        layer_groups=uniform_layers(L, layer, replace(c.attention(), qk_head_dim=hd,
                                                      v_head_dim=hd)),
    )


# ---- ModernBERT-decoder ---------------------------------------------------------------------------


class ModernBertDecoderConfig(DecoderConfig):
    transformers_class = "ModernBertDecoderConfig"

    tie_word_embeddings: bool
    norm_bias: bool
    attention_bias: bool
    mlp_bias: bool
    classifier_bias: bool
    decoder_bias: bool
    local_attention: Size | None
    global_attn_every_n_layers: Size = 3
    layer_types: list[str] | None = None
    sliding_window: int | None = None  # undeclared; given, it wins over local_attention / 2


def describe_modernbert_decoder(c: ModernBertDecoderConfig) -> Architecture:
    """ModernBERT-decoder: q, k, v, Wo d × d; GeGLU Wi 2ff × d, Wo d × ff; LayerNorms (bias with
    ``norm_bias``), none before attention in layer 0; a norm after the embedding; the head is
    lm_head.dense d × d, lm_head.norm, then decoder V × d (tied) with a bias [V]. Every
    ``global_attn_every_n_layers``-th layer from 0 is global; the others see local_attention / 2."""
    d, v, ff = c.hidden_size, c.vocab_size, c.intermediate_size
    nb, ab, mb = c.norm_bias, c.attention_bias, c.mlp_bias
    p = "model.layers.{i}"
    body = [
        *linear(f"{p}.attn.q_proj", "attn/q_proj", d, d, bias=ab),
        *linear(f"{p}.attn.k_proj", "attn/k_proj", d, d, bias=ab),
        *linear(f"{p}.attn.v_proj", "attn/v_proj", d, d, bias=ab),
        *linear(f"{p}.attn.Wo", "attn/o_proj", d, d, bias=ab),
        *norm(f"{p}.mlp_norm", "mlp/norm", d, bias=nb),
        *linear(f"{p}.mlp.Wi", "mlp/gate_up_proj", 2 * ff, d, bias=mb),
        *linear(f"{p}.mlp.Wo", "mlp/down_proj", d, ff, bias=mb),
    ]
    embed = "model.embeddings.tok_embeddings"
    return Architecture(
        shape=c.shape(tied=c.tie_word_embeddings),
        tensors=(
            embedding(embed, "embed/tokens", v, d),
            *norm("model.embeddings.norm", "embed/norm", d, bias=nb),
            *norm("model.final_norm", "final_norm", d, bias=nb),
            *linear("lm_head.dense", "lm_head/dense", d, d, bias=c.classifier_bias),
            *norm("lm_head.norm", "lm_head/norm", d, bias=nb),
            *_head("decoder", v, d, embed, tied=c.tie_word_embeddings, bias=c.decoder_bias),
        ),
        layer_groups=modernbert_layers(c, body, lambda window: c.attention(window=window)),
    )


# ---- CPM-Ant (OpenBMB 2022): pre-norm, gated FFN, relative position buckets, prompt tokens ---------


class CpmAntConfig(FamilyConfig):
    transformers_class = "CpmAntConfig"

    hidden_size: Size
    num_hidden_layers: Size
    num_attention_heads: Size
    dim_head: Size
    dim_ff: Size
    vocab_size: Size
    position_bias_num_buckets: Count
    segment_types: Count
    prompt_types: Count
    prompt_length: Count


def describe_cpmant(c: CpmAntConfig) -> Architecture:
    """CpmAntForCausalLM (cpmant/modeling_cpmant.py): input_embedding [V + prompt_types ·
    prompt_length, d] (the vocabulary, then the prompt tokens' rows), segment_embedding [S, d],
    position_bias.relative_attention_bias [S² + buckets, h] (looked up, no matmul); per layer a
    weight-only norm [d] before attention, project_q, project_k, project_v [h·dh, d] and
    attention_out [d, h·dh], a weight-only norm [d] before the gated FFN w_in.w_0, w_in.w_1 [ff, d]
    and w_out [d, ff]; output_layernorm [d]; lm_head [V, d], never tied (the embedding holds more
    rows than the vocabulary).

    Its forward (CpmAntModel.forward) prepends prompt_length prompt tokens to every sequence: the
    layers run on P + n tokens [P + n, d], each query scores all P + n keys, the cache keeps their
    keys and values [h, P + n, dh] per layer, and the prompt's outputs are dropped before the
    head, which sees the n tokens alone (ModelSpec.prefix_tokens)."""
    d, h, hd, ff, v = c.hidden_size, c.num_attention_heads, c.dim_head, c.dim_ff, c.vocab_size
    s = c.segment_types
    p = "cpmant.encoder.layers.{i}"
    a, f = f"{p}.self_att", f"{p}.ffn"
    layer = [
        *norm(f"{a}.layernorm_before_attention", "attn/norm", d, bias=False),
        *(t for x in ("project_q", "project_k", "project_v")
          for t in linear(f"{a}.self_attention.{x}", f"attn/{x}", h * hd, d, bias=False)),
        *linear(f"{a}.self_attention.attention_out", "attn/o_proj", d, h * hd, bias=False),
        *norm(f"{f}.layernorm_before_ffn", "mlp/norm", d, bias=False),
        *linear(f"{f}.ffn.w_in.w_0", "mlp/gate_proj", ff, d, bias=False),
        *linear(f"{f}.ffn.w_in.w_1", "mlp/up_proj", ff, d, bias=False),
        *linear(f"{f}.ffn.w_out", "mlp/down_proj", d, ff, bias=False),
    ]
    return Architecture(
        shape=Shape(c.num_hidden_layers, d, h, h, hd, ff, v, False),
        tensors=(
            embedding("cpmant.input_embedding", "embed/tokens", v + c.prompt_types * c.prompt_length, d),
            embedding("cpmant.segment_embedding", "embed/segments", s, d),
            Tensor("cpmant.position_bias.relative_attention_bias", (s * s + c.position_bias_num_buckets, h),
                   "embed/position_bias"),
            *norm("cpmant.encoder.output_layernorm", "final_norm", d, bias=False),
            *lm_head("lm_head", v, d, tied_to=None),
        ),
        layer_groups=uniform_layers(c.num_hidden_layers, layer, Attention(h, h, hd, hd)),
        prefix_tokens=c.prompt_length,
    )
