"""BART, mBART and Whisper (``bart``, ``mbart``, ``whisper``): the whole ``…ForConditionalGeneration``.

Source: Lewis et al. 2019 (BART), Liu et al. 2020 (mBART); tensor names and shapes as in
transformers 5.24 ``models/bart/modeling_bart.py`` and ``models/mbart/modeling_mbart.py``. A token
embedding ``model.shared`` [V, d]; each stack's embed_tokens and the lm_head are tied to it (with
``tie_word_embeddings``; untied, each is a tensor of its own); learned positions
[max_position_embeddings + 2, d] per stack (BART's offset of 2); a LayerNorm after the embeddings;
post-norm layers (mBART: pre-norm, with a final LayerNorm per stack) whose attention projections
q, k, v, out_proj are d × d with biases; fc1 ffn × d, fc2 d × ffn. ``final_logits_bias`` is a
buffer, not a parameter.

Whisper (Radford et al. 2022; ``models/whisper/modeling_whisper.py``) has BART's layers pre-norm,
no bias on k_proj, no norm after the embeddings, a final LayerNorm per stack; its encoder reads
num_mel_bins × 2·max_source_positions log-mel frames through conv1 (d × mels × 3) and conv2
(d × d × 3, stride 2) into max_source_positions positions (sinusoidal, stored [P_src, d]); the
decoder has its own embed_tokens [V, d] and learned positions [max_target_positions, d];
proj_out is tied to embed_tokens.

Parts as in :mod:`llmcalc.families.t5`: the decoder (with the shared embedding and the lm_head)
is the main part, the encoder the other; decoder layers cross-attend to the encoder's output.
"""

from __future__ import annotations

from dataclasses import replace
from typing import ClassVar

from llmcalc.families._base import BLOCK_SPARSE
from llmcalc.families._base import Architecture
from llmcalc.families._base import Count
from llmcalc.families._base import FamilyConfig
from llmcalc.families._base import Size
from llmcalc.families._base import block_sparse_threshold
from llmcalc.families._base import embedding
from llmcalc.families._base import fc_mlp
from llmcalc.families._base import linear
from llmcalc.families._base import lm_head
from llmcalc.families._base import norm
from llmcalc.families._base import require
from llmcalc.families._base import resolve_head_dim
from llmcalc.model.spec import Attention
from llmcalc.model.spec import LayerGroup
from llmcalc.model.spec import LayerSet
from llmcalc.model.spec import Part
from llmcalc.model.spec import Shape
from llmcalc.model.spec import Tensor

POSITION_OFFSET = 2  # BartLearnedPositionalEmbedding.offset


class BartConfig(FamilyConfig):
    """BART's fields, and the switches its near-copies set as class attributes (a row each)."""

    transformers_class = "BartConfig"

    vocab_size: Size
    max_position_embeddings: Size
    d_model: Size
    encoder_layers: Size
    encoder_ffn_dim: Size
    encoder_attention_heads: Size
    decoder_layers: Size
    decoder_ffn_dim: Size
    decoder_attention_heads: Size
    tie_word_embeddings: bool

    # rows past max_position_embeddings in each position table (BART's learned offset of 2; 0 for
    # the sinusoidal tables of Pegasus and Marian and the learned ones of Blenderbot)
    position_offset: ClassVar[int] = POSITION_OFFSET
    sinusoidal: ClassVar[bool] = False  # frozen sinusoidal positions, still a parameter
    embedding_norm: ClassVar[bool] = True  # layernorm_embedding after the embeddings
    final_norm: ClassVar[bool] = False  # pre-norm layers and a layer_norm closing each stack

    def token_tables(self) -> tuple[list[Tensor], list[Tensor], list[Tensor], str]:
        """(shared, encoder's own, decoder's own) token embeddings, and what lm_head is tied to:
        ``model.shared`` [V, d]; untied, each stack's embed_tokens and the lm_head of their own."""
        d, v, shared = self.d_model, self.vocab_size, "model.shared"
        own: list[list[Tensor]] = [
            [] if self.tie_word_embeddings
            else [embedding(f"model.{stack}.embed_tokens", "embed/tokens", v, d)]
            for stack in ("encoder", "decoder")
        ]
        return [embedding(shared, "embed/tokens", v, d)], own[0], own[1], f"{shared}.weight"

    @property
    def output_vocab(self) -> int:
        return self.vocab_size


class MBartConfig(BartConfig):
    transformers_class = "MBartConfig"
    final_norm = True


class PLBartConfig(BartConfig):
    transformers_class = "PLBartConfig"


class MvpConfig(BartConfig):
    """MVP (Tang et al. 2022) is BART's tensors; with use_prompt, layer-wise prompts (prefix
    tuning) that llmcalc does not count."""

    transformers_class = "MvpConfig"
    use_prompt: bool


class PegasusConfig(BartConfig):
    transformers_class = "PegasusConfig"
    position_offset = 0
    sinusoidal = True
    embedding_norm = False
    final_norm = True


class BlenderbotConfig(BartConfig):
    transformers_class = "BlenderbotConfig"
    position_offset = 0
    embedding_norm = False
    final_norm = True


class BlenderbotSmallConfig(BartConfig):
    transformers_class = "BlenderbotSmallConfig"
    position_offset = 0


class MarianConfig(BartConfig):
    """Marian (Junczys-Dowmunt et al. 2018; the Helsinki-NLP OPUS-MT models): BART's post-norm
    layers, sinusoidal positions, no layernorm_embedding. share_encoder_decoder_embeddings (the
    default) shares ``model.shared`` [V, d] as BART does; unshared, the encoder's embed_tokens
    [V, d], the decoder's [decoder_vocab_size, d], and the lm_head over decoder_vocab_size, tied
    to the decoder's table."""

    transformers_class = "MarianConfig"
    decoder_vocab_size: Size | None = None  # null means vocab_size
    share_encoder_decoder_embeddings: bool
    position_offset = 0
    sinusoidal = True
    embedding_norm = False

    def token_tables(self) -> tuple[list[Tensor], list[Tensor], list[Tensor], str]:
        if self.share_encoder_decoder_embeddings:
            return super().token_tables()
        d, dec = self.d_model, "model.decoder.embed_tokens"
        return (
            [],
            [embedding("model.encoder.embed_tokens", "embed/tokens", self.vocab_size, d)],
            [embedding(dec, "embed/tokens", self.output_vocab, d)],
            f"{dec}.weight",
        )

    @property
    def output_vocab(self) -> int:
        if self.share_encoder_decoder_embeddings:
            return self.vocab_size
        return self.decoder_vocab_size or self.vocab_size


def attention(
    p: str, d: int, *, cross: bool = False, k_bias: bool = True, kv_in: int | None = None
) -> list[Tensor]:
    """BartAttention: k, v, q, out_proj d × d with biases (Whisper: none on k); in cross-attention
    k and v project the encoder's output, once per source token (per_source); TrOCR's k and v read
    an encoder kv_in wide (d × kv_in)."""
    a = "cross_attn" if cross else "attn"
    e = kv_in or d
    kv = [
        *linear(f"{p}.k_proj", f"{a}/k_proj", d, e, bias=k_bias),
        *linear(f"{p}.v_proj", f"{a}/v_proj", d, e, bias=True),
    ]
    return [
        *[Tensor(t.name, t.shape, t.component, matmul=t.matmul, per_source=cross) for t in kv],
        *linear(f"{p}.q_proj", f"{a}/q_proj", d, d, bias=True),
        *linear(f"{p}.out_proj", f"{a}/o_proj", d, d, bias=True),
    ]


def _stack(
    c: BartConfig, stack: str, tokens: list[Tensor]
) -> tuple[tuple[Tensor, ...], LayerGroup]:
    """One stack's tensors outside its layers (its own embed_tokens, positions, the norm after the
    embeddings, the final norm of pre-norm rows) and its layers."""
    d = c.d_model
    decoder = stack == "decoder"
    layers = c.decoder_layers if decoder else c.encoder_layers
    ff = c.decoder_ffn_dim if decoder else c.encoder_ffn_dim
    h = c.decoder_attention_heads if decoder else c.encoder_attention_heads
    heads_field = f"{stack}_attention_heads"
    hd = resolve_head_dim(d, h, hidden_field="d_model", heads_field=heads_field)
    m = f"model.{stack}"
    outer = [
        *tokens,
        # positions: (max_position_embeddings + offset) × d, learned or sinusoidal
        embedding(f"{m}.embed_positions", "embed/positions",
                  c.max_position_embeddings + c.position_offset, d),
        *(norm(f"{m}.layernorm_embedding", "embed/norm", d, bias=True) if c.embedding_norm else []),
        *(norm(f"{m}.layer_norm", "final_norm", d, bias=True) if c.final_norm else []),
    ]
    p = f"{m}.layers.{{i}}"
    layer = [
        *attention(f"{p}.self_attn", d),
        *norm(f"{p}.self_attn_layer_norm", "attn/norm", d, bias=True),
    ]
    if decoder:
        layer += [
            *attention(f"{p}.encoder_attn", d, cross=True),
            *norm(f"{p}.encoder_attn_layer_norm", "cross_attn/norm", d, bias=True),
        ]
    layer += [
        *fc_mlp(f"{p}.fc1", f"{p}.fc2", d, ff, bias=True),
        *norm(f"{p}.final_layer_norm", "mlp/norm", d, bias=True),
    ]
    group = LayerGroup(
        stack,
        LayerSet.span(0, layers),
        tuple(layer),
        Attention(h, h, hd, hd, causal=decoder),
        cross_attention=Attention(h, h, hd, hd, causal=False) if decoder else None,
    )
    return tuple(outer), group


def describe(c: BartConfig) -> Architecture:
    """A BART row's …ForConditionalGeneration (BART, mBART, PLBART, MVP, Pegasus, Marian,
    Blenderbot, Blenderbot-small): the switches of its config class pick the tensors."""
    if isinstance(c, MvpConfig):
        require(not c.use_prompt, "use_prompt",
                "MVP's layer-wise prompts (prefix tuning) are not counted; use_prompt must be false")
    shared, enc_tokens, dec_tokens, head_tied_to = c.token_tables()
    enc_outer, enc_layers = _stack(c, "encoder", enc_tokens)
    dec_outer, dec_layers = _stack(c, "decoder", dec_tokens)
    tied = c.tie_word_embeddings
    encoder = Part(
        "encoder", enc_outer, (enc_layers,), shape=_shape(c, c.encoder_layers, c.encoder_ffn_dim,
                                                          c.encoder_attention_heads),
    )
    positions = (
        "sinusoidal position tables of max_position_embeddings rows (frozen parameters)"
        if c.sinusoidal else
        f"position tables: max_position_embeddings + {c.position_offset} rows"
        + (" (BART offset)" if c.position_offset else "")
    )
    return Architecture(
        shape=_shape(c, c.decoder_layers, c.decoder_ffn_dim, c.decoder_attention_heads),
        tensors=(
            *shared,
            *dec_outer,
            *lm_head("lm_head", c.output_vocab, c.d_model, tied_to=head_tied_to if tied else None),
        ),
        layer_groups=(dec_layers,),
        parts=(encoder,),
        main_part="decoder",
        notes=(positions,),
    )


describe_mbart = describe  # mBART is a row: pre-norm with a final norm per stack


def _shape(c: BartConfig, layers: int, ff: int, heads: int) -> Shape:
    return Shape(layers, c.d_model, heads, heads, c.d_model // heads, ff, c.output_vocab,
                 c.tie_word_embeddings, c.max_position_embeddings)


# ---- Whisper ------------------------------------------------------------------------------------


class WhisperConfig(FamilyConfig):
    transformers_class = "WhisperConfig"

    vocab_size: Size
    num_mel_bins: Size
    encoder_layers: Size
    encoder_attention_heads: Size
    decoder_layers: Size
    decoder_attention_heads: Size
    decoder_ffn_dim: Size
    encoder_ffn_dim: Size
    d_model: Size
    max_source_positions: Size
    max_target_positions: Size
    tie_word_embeddings: bool


def _whisper_layers(
    p: str, d: int, stack: str, layers: int, ff: int, h: int, *, heads_field: str
) -> LayerGroup:
    """Whisper's pre-norm layers under ``p`` (``model.encoder.layers``): BART's, no bias on k_proj;
    a decoder's cross-attend to the encoder's output."""
    hd = resolve_head_dim(d, h, hidden_field="d_model", heads_field=heads_field)
    decoder = stack == "decoder"
    p = f"{p}.{{i}}"
    layer = [
        *attention(f"{p}.self_attn", d, k_bias=False),
        *norm(f"{p}.self_attn_layer_norm", "attn/norm", d, bias=True),
    ]
    if decoder:
        layer += [
            *attention(f"{p}.encoder_attn", d, cross=True, k_bias=False),
            *norm(f"{p}.encoder_attn_layer_norm", "cross_attn/norm", d, bias=True),
        ]
    layer += [
        *fc_mlp(f"{p}.fc1", f"{p}.fc2", d, ff, bias=True),
        *norm(f"{p}.final_layer_norm", "mlp/norm", d, bias=True),
    ]
    return LayerGroup(
        stack,
        LayerSet.span(0, layers),
        tuple(layer),
        Attention(h, h, hd, hd, causal=decoder),
        cross_attention=Attention(h, h, hd, hd, causal=False) if decoder else None,
    )


def whisper_encoder(
    prefix: str, *, d: int, mels: int, src: int, layers: int, ff: int, heads: int,
    name: str = "encoder", heads_field: str = "encoder_attention_heads",
) -> Part:
    """Whisper's audio encoder under ``prefix`` as a part (also the audio tower of whole models
    built on it: MOSS-Transcribe-Diarize). Its per-input figures are one 30 s window: 2·src mel
    frames through conv1, src positions after conv2 and through every layer."""
    return Part(
        name,
        (
            # nn.Conv1d(mels, d, 3, padding=1) over 2·P_src frames; nn.Conv1d(d, d, 3, stride=2)
            # down to P_src: weights [d, in, 3], each a matmul of its elements per output position
            Tensor(f"{prefix}.conv1.weight", (d, mels, 3), "conv/conv1", matmul=True),
            Tensor(f"{prefix}.conv1.bias", (d,), "conv/conv1"),
            Tensor(f"{prefix}.conv2.weight", (d, d, 3), "conv/conv2", matmul=True),
            Tensor(f"{prefix}.conv2.bias", (d,), "conv/conv2"),
            embedding(f"{prefix}.embed_positions", "embed/positions", src, d),
            *norm(f"{prefix}.layer_norm", "final_norm", d, bias=True),
        ),
        (_whisper_layers(f"{prefix}.layers", d, name, layers, ff, heads, heads_field=heads_field),),
        shape=Shape(num_layers=layers, hidden_size=d, num_heads=heads, num_kv_heads=heads,
                    head_dim=d // heads, intermediate_size=ff, vocab_size=0,
                    tied_embeddings=False, max_position_embeddings=src),
        # 30 s of audio: 2·P_src mel frames through conv1, P_src positions after conv2
        input_tokens=(("conv/conv1", 2 * src), ("", src)),
    )


def describe_whisper(c: WhisperConfig) -> Architecture:
    d, v, src = c.d_model, c.vocab_size, c.max_source_positions
    encoder = replace(
        whisper_encoder("model.encoder", d=d, mels=c.num_mel_bins, src=src, layers=c.encoder_layers,
                        ff=c.encoder_ffn_dim, heads=c.encoder_attention_heads),
        shape=_whisper_shape(c, c.encoder_layers, c.encoder_ffn_dim, c.encoder_attention_heads),
    )
    embed = "model.decoder.embed_tokens"
    return Architecture(
        shape=_whisper_shape(c, c.decoder_layers, c.decoder_ffn_dim, c.decoder_attention_heads),
        tensors=(
            embedding(embed, "embed/tokens", v, d),
            embedding("model.decoder.embed_positions", "embed/positions", c.max_target_positions, d),
            *norm("model.decoder.layer_norm", "final_norm", d, bias=True),
            *lm_head("proj_out", v, d, tied_to=f"{embed}.weight" if c.tie_word_embeddings else None),
        ),
        layer_groups=(_whisper_layers("model.decoder.layers", d, "decoder", c.decoder_layers,
                                      c.decoder_ffn_dim, c.decoder_attention_heads,
                                      heads_field="decoder_attention_heads"),),
        parts=(encoder,),
        main_part="decoder",
        notes=(
            f"the encoder reads 30 s of audio: {2 * src:,} mel frames, {src:,} positions "
            "(its FLOPs and the cross-attention over them, whatever --source-len)",
        ),
    )


def _whisper_shape(c: WhisperConfig, layers: int, ff: int, heads: int) -> Shape:
    return Shape(layers, c.d_model, heads, heads, c.d_model // heads, ff, c.vocab_size,
                 c.tie_word_embeddings, c.max_target_positions)


# ---- TrOCR's decoder ------------------------------------------------------------------------------


class TrOCRConfig(FamilyConfig):
    transformers_class = "TrOCRConfig"

    vocab_size: Size
    d_model: Size
    decoder_layers: Size
    decoder_attention_heads: Size
    decoder_ffn_dim: Size
    max_position_embeddings: Size
    use_learned_position_embeddings: bool
    layernorm_embedding: bool
    cross_attention_hidden_size: Size | None = None  # null: d_model
    tie_word_embeddings: bool


def describe_trocr(c: TrOCRConfig) -> Architecture:
    """TrOCRForCausalLM (Li et al. 2021, modeling_trocr.py): the decoder of a VisionEncoderDecoder
    alone. embed_tokens [V, d]; learned positions [P + 2, d] (BART's offset), or sinusoidal ones
    computed on the fly (no tensor); layernorm_embedding; BART's post-norm decoder layers, whose
    cross-attention k_proj and v_proj read the image encoder's output, d × cross_attention_hidden_size
    (TrOCRForCausalLM sets is_decoder: always there); output_projection V × d, no bias, tied to
    embed_tokens. The encoder is not in the model: --source-len is the image encoder's tokens
    (its ViT's patches, 577 for a 384 px image in 16 px patches plus its class token)."""
    d, v, L = c.d_model, c.vocab_size, c.decoder_layers
    h, ff = c.decoder_attention_heads, c.decoder_ffn_dim
    hd = resolve_head_dim(d, h, hidden_field="d_model", heads_field="decoder_attention_heads")
    m = "model.decoder"
    embed = f"{m}.embed_tokens"
    outer = [embedding(embed, "embed/tokens", v, d)]
    if c.use_learned_position_embeddings:
        outer.append(embedding(f"{m}.embed_positions", "embed/positions",
                               c.max_position_embeddings + POSITION_OFFSET, d))
    if c.layernorm_embedding:
        outer += norm(f"{m}.layernorm_embedding", "embed/norm", d, bias=True)
    outer += lm_head("output_projection", v, d,
                     tied_to=f"{embed}.weight" if c.tie_word_embeddings else None)
    p = f"{m}.layers.{{i}}"
    layer = [
        *attention(f"{p}.self_attn", d),
        *norm(f"{p}.self_attn_layer_norm", "attn/norm", d, bias=True),
        *attention(f"{p}.encoder_attn", d, cross=True, kv_in=c.cross_attention_hidden_size),
        *norm(f"{p}.encoder_attn_layer_norm", "cross_attn/norm", d, bias=True),
        *fc_mlp(f"{p}.fc1", f"{p}.fc2", d, ff, bias=True),
        *norm(f"{p}.final_layer_norm", "mlp/norm", d, bias=True),
    ]
    group = LayerGroup(
        "decoder", LayerSet.span(0, L), tuple(layer), Attention(h, h, hd, hd, causal=True),
        cross_attention=Attention(h, h, hd, hd, causal=False),
    )
    return Architecture(
        shape=Shape(
            num_layers=L, hidden_size=d, num_heads=h, num_kv_heads=h, head_dim=hd,
            intermediate_size=ff, vocab_size=v, tied_embeddings=c.tie_word_embeddings,
            max_position_embeddings=c.max_position_embeddings,
        ),
        tensors=tuple(outer),
        layer_groups=(group,),
        main_part="decoder",
        notes=("the decoder alone: its cross-attention reads an image encoder's output "
               "(--source-len tokens), whose own FLOPs are not counted",),
    )


class BigBirdPegasusConfig(BartConfig):
    """BigBird-Pegasus (Zaheer et al. 2020): Pegasus's pre-norm stacks with learned positions of
    max_position_embeddings rows, the closing norm named layernorm_embedding; the encoder's
    attention is BigBird's (self_attn.self.query, key, value and self_attn.output), and every
    attention projection is biased only with ``use_bias``."""

    transformers_class = "BigBirdPegasusConfig"
    position_offset = 0
    embedding_norm = False
    final_norm = True

    use_bias: bool
    attention_type: str
    block_size: Size
    num_random_blocks: Count


# BigBirdPegasusEncoderAttention's module names for BART's
BIGBIRD_ENCODER_ATTENTION = {"q_proj": "self.query", "k_proj": "self.key", "v_proj": "self.value",
                             "out_proj": "output"}


def describe_bigbird_pegasus(c: BigBirdPegasusConfig) -> Architecture:
    """BigBirdPegasusForConditionalGeneration (bigbird_pegasus/modeling_bigbird_pegasus.py): the
    BART row above, renamed and with the attention biases as use_bias says. Its forward is BART's
    where the encoder attends in full: always with original_full, and with block_sparse up to
    (5 + 2·num_random_blocks)·block_size source tokens (BigBirdPegasusEncoder.forward switches to
    full attention there); past them the encoder's FLOPs are refused (Attention.sparse_beyond).
    Its cache is BART's either way: the encoder's output is unpadded before the cross-attention."""
    arch = describe(c)

    def renamed(t: Tensor) -> Tensor | None:
        name = t.name.replace(".layer_norm.", ".layernorm_embedding.")
        for old, new in BIGBIRD_ENCODER_ATTENTION.items():
            if name.startswith("model.encoder.") and f".self_attn.{old}." in name:
                name = name.replace(f".self_attn.{old}.", f".self_attn.{new}.")
        attn = any(f".{x}.{p}." in t.name for x in ("self_attn", "encoder_attn")
                   for p in BIGBIRD_ENCODER_ATTENTION)
        if attn and name.endswith(".bias") and not c.use_bias:
            return None
        return replace(t, name=name)

    def stack(tensors: tuple[Tensor, ...]) -> tuple[Tensor, ...]:
        return tuple(r for t in tensors if (r := renamed(t)) is not None)

    (encoder,) = arch.parts
    full_upto = block_sparse_threshold(c.attention_type, block_size=c.block_size,
                                       num_random_blocks=c.num_random_blocks)

    def sparse(a: Attention | None) -> Attention | None:
        return None if a is None else replace(a, sparse_beyond=full_upto)

    return replace(
        arch,
        tensors=stack(arch.tensors),
        layer_groups=tuple(replace(g, tensors=stack(g.tensors)) for g in arch.layer_groups),
        parts=(replace(encoder, tensors=stack(encoder.tensors), layer_groups=tuple(
            replace(g, tensors=stack(g.tensors), attention=sparse(g.attention))
            for g in encoder.layer_groups)),),
        notes=("position tables: max_position_embeddings rows",),
        sparse_what=BLOCK_SPARSE,
    )
