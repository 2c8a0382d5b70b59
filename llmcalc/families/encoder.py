"""Encoder language models: a masked-LM head on a bidirectional transformer encoder.

Covers ``bert`` (Devlin et al. 2018), ``roberta`` (Liu et al. 2019: BERT's layer, positions offset
by the padding id), ``deberta-v2`` (He et al. 2021, DeBERTa-v2/v3: disentangled relative-position
attention, no absolute positions in v3) and ``modernbert`` (Warner et al. 2024: fused Wqkv, GeGLU,
every third layer global, the others a local window). Tensor names and shapes as in each
transformers ``…ForMaskedLM`` (transformers 5.24 ``models/<type>/modeling_<type>.py``); the bare
encoder is the same without the masked-LM head. Attention is bidirectional (``causal=False``):
every token attends to every token of its sequence, and nothing is cached.

Parts: the main part is the bare encoder (``--part encoder``: transformers' ``…Model`` without
its pooler), the other the masked-LM head (``mlm_head``), which every token goes through
(``Part.per_token``): its dense transform and the V × d decoder are in the per-token FLOPs.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace
from typing import Any
from typing import ClassVar

from pydantic import AliasChoices
from pydantic import Field

from llmcalc.families._base import BLOCK_SPARSE
from llmcalc.families._base import FULL
from llmcalc.families._base import SLIDING
from llmcalc.families._base import Architecture
from llmcalc.families._base import Count
from llmcalc.families._base import FamilyConfig
from llmcalc.families._base import Size
from llmcalc.families._base import block_sparse_threshold
from llmcalc.families._base import embedding
from llmcalc.families._base import fc_mlp
from llmcalc.families._base import fused_mha
from llmcalc.families._base import layer_kinds
from llmcalc.families._base import linear
from llmcalc.families._base import lm_head
from llmcalc.families._base import norm
from llmcalc.families._base import override_plan
from llmcalc.families._base import plan_from_kinds
from llmcalc.families._base import planned_layers
from llmcalc.families._base import require
from llmcalc.families._base import resolve_head_dim
from llmcalc.families._base import uniform_layers
from llmcalc.families.decoder import first_of_plan
from llmcalc.limits import MAX_MODULE_COPIES
from llmcalc.limits import shown
from llmcalc.model.spec import Attention
from llmcalc.model.spec import LayerGroup
from llmcalc.model.spec import Part
from llmcalc.model.spec import Shape
from llmcalc.model.spec import Tensor

# ---- the BERT layer (bert, roberta, deberta-v2) --------------------------------------------------


class _BertFields(FamilyConfig):
    """The fields BERT, RoBERTa and DeBERTa-v2 name alike."""

    hidden_size: Size
    num_hidden_layers: Size
    num_attention_heads: Size
    intermediate_size: Size
    vocab_size: Size
    max_position_embeddings: Size = 512
    tie_word_embeddings: bool = True

    @property
    def head_dim(self) -> int:
        return resolve_head_dim(self.hidden_size, self.num_attention_heads)

    def shape(self, *, intermediate: int | None = None) -> Shape:
        h = self.num_attention_heads
        return Shape(
            num_layers=self.num_hidden_layers,
            hidden_size=self.hidden_size,
            num_heads=h,
            num_kv_heads=h,
            head_dim=self.head_dim,
            intermediate_size=intermediate or self.intermediate_size,
            vocab_size=self.vocab_size,
            tied_embeddings=self.tie_word_embeddings,
            max_position_embeddings=self.max_position_embeddings,
        )


class BertConfig(_BertFields):
    transformers_class = "BertConfig"

    type_vocab_size: Count = 2
    is_decoder: bool = False
    add_cross_attention: bool = False


class RobertaConfig(BertConfig):
    transformers_class = "RobertaConfig"


def bert_layer(p: str, d: int, ff: int, *, q: str = "query", k: str = "key", v: str = "value") -> list[Tensor]:
    """BertLayer (post-norm): self-attention query, key, value, output.dense d × d with biases, a
    LayerNorm after it; intermediate.dense ff × d, output.dense d × ff, a LayerNorm after it."""
    return [
        *linear(f"{p}.attention.self.{q}", "attn/q_proj", d, d, bias=True),
        *linear(f"{p}.attention.self.{k}", "attn/k_proj", d, d, bias=True),
        *linear(f"{p}.attention.self.{v}", "attn/v_proj", d, d, bias=True),
        *linear(f"{p}.attention.output.dense", "attn/o_proj", d, d, bias=True),
        *norm(f"{p}.attention.output.LayerNorm", "attn/norm", d, bias=True),
        *fc_mlp(f"{p}.intermediate.dense", f"{p}.output.dense", d, ff, bias=True),
        *norm(f"{p}.output.LayerNorm", "mlp/norm", d, bias=True),
    ]


def mlm_head(
    p: str, d: int, v: int, embed: str, *, tied: bool, width: int | None = None
) -> list[Tensor]:
    """BertLMPredictionHead: transform.dense (width × d, bias), a LayerNorm over width, then the
    decoder V × width (tied to the word embeddings, or its own) with a bias [V] (the decoder's bias
    is the head's ``bias``, one tensor, when tied; two when not)."""
    w = width or d
    return [
        Tensor(f"{p}.bias", (v,), "bias"),
        *linear(f"{p}.transform.dense", "dense", w, d, bias=True),
        *norm(f"{p}.transform.LayerNorm", "norm", w, bias=True),
        *lm_head(f"{p}.decoder", v, w, tied_to=None if not tied else f"{embed}.weight", bias=not tied),
    ]


def _with_head(arch: Architecture, head: list[Tensor], *, part: str = "mlm_head") -> Architecture:
    """The encoder as the main part, the (masked-)LM head as a part every token goes through."""
    return replace(arch, parts=(Part(part, tuple(head), per_token=True),), main_part="encoder")


def _bidirectional(c: _BertFields, *, causal: bool = False) -> Attention:
    h, hd = c.num_attention_heads, c.head_dim
    return Attention(h, h, hd, hd, causal=causal)


def _no_cross_attention(c: BertConfig) -> None:
    require(
        not c.add_cross_attention,
        "add_cross_attention",
        "cross-attention (an encoder–decoder's decoder) is not supported",
    )


def describe_bert(c: BertConfig) -> Architecture:
    """BertForMaskedLM: word [V, d], position [P, d] and token-type [T, d] embeddings, a LayerNorm;
    BERT layers; the masked-LM head (cls.predictions). No pooler (add_pooling_layer=False)."""
    _no_cross_attention(c)
    d, v = c.hidden_size, c.vocab_size
    embed = "bert.embeddings.word_embeddings"
    tensors = (
        embedding(embed, "embed/tokens", v, d),
        embedding("bert.embeddings.position_embeddings", "embed/positions", c.max_position_embeddings, d),
        embedding("bert.embeddings.token_type_embeddings", "embed/token_types", c.type_vocab_size, d),
        *norm("bert.embeddings.LayerNorm", "embed/norm", d, bias=True),
    )
    head = mlm_head("cls.predictions", d, v, embed, tied=c.tie_word_embeddings)
    layer = bert_layer("bert.encoder.layer.{i}", d, c.intermediate_size)
    return _with_head(Architecture(
        shape=c.shape(),
        tensors=tensors,
        layer_groups=uniform_layers(
            c.num_hidden_layers, layer, _bidirectional(c, causal=c.is_decoder), name="encoder"
        ),
        notes=_direction_note(c.is_decoder),
    ), head)


def _direction_note(is_decoder: bool) -> tuple[str, ...]:
    if is_decoder:
        return ("is_decoder=true: causal self-attention (the model used as a decoder)",)
    return ("encoder: bidirectional attention, every token attends to every token; no KV cache",)


def describe_roberta(c: RobertaConfig) -> Architecture:
    """RobertaForMaskedLM: BERT's embeddings and layers under ``roberta.``; the head is lm_head
    (dense d × d, layer_norm, decoder V × d tied or not, bias [V])."""
    _no_cross_attention(c)
    d, v = c.hidden_size, c.vocab_size
    embed = "roberta.embeddings.word_embeddings"
    tied = c.tie_word_embeddings
    tensors = (
        embedding(embed, "embed/tokens", v, d),
        embedding("roberta.embeddings.token_type_embeddings", "embed/token_types", c.type_vocab_size, d),
        *norm("roberta.embeddings.LayerNorm", "embed/norm", d, bias=True),
        embedding("roberta.embeddings.position_embeddings", "embed/positions", c.max_position_embeddings, d),
    )
    head = [
        Tensor("lm_head.bias", (v,), "bias"),
        *linear("lm_head.dense", "dense", d, d, bias=True),
        *norm("lm_head.layer_norm", "norm", d, bias=True),
        *lm_head("lm_head.decoder", v, d, tied_to=f"{embed}.weight" if tied else None, bias=not tied),
    ]
    layer = bert_layer("roberta.encoder.layer.{i}", d, c.intermediate_size)
    return _with_head(Architecture(
        shape=c.shape(),
        tensors=tensors,
        layer_groups=uniform_layers(
            c.num_hidden_layers, layer, _bidirectional(c, causal=c.is_decoder), name="encoder"
        ),
        notes=_direction_note(c.is_decoder),
    ), head)


# ---- DeBERTa-v2 / v3 ---------------------------------------------------------------------------


class DebertaV2Config(_BertFields):
    transformers_class = "DebertaV2Config"

    type_vocab_size: Count
    relative_attention: bool
    max_relative_positions: int = Field(strict=True, le=2**53 - 1)
    position_buckets: int = Field(-1, strict=True, le=2**53 - 1)
    position_biased_input: bool
    pos_att_type: str | list[str] | None = None
    share_att_key: bool = False
    norm_rel_ebd: str = "none"
    conv_kernel_size: Count = 0
    conv_groups: Size = 1
    embedding_size: Size | None = None  # null means hidden_size
    legacy: bool

    @property
    def att_types(self) -> list[str]:
        t = self.pos_att_type
        if t is None:
            return []
        return [x.strip() for x in t.lower().split("|")] if isinstance(t, str) else list(t)


def describe_deberta_v2(c: DebertaV2Config) -> Architecture:
    """DebertaV2ForMaskedLM (modeling_deberta_v2.py): word embeddings [V, E] (E = embedding_size),
    absolute positions [P, E] only with position_biased_input, token types [T, E] when T > 0,
    embed_proj d × E when E ≠ d, a LayerNorm; BERT layers with query_proj/key_proj/value_proj and,
    for relative attention without share_att_key, pos_key_proj (c2p) and pos_query_proj (p2c)
    d × d; the encoder's rel_embeddings [2·span, d] (span = position_buckets, else
    max_relative_positions, else max_position_embeddings), its LayerNorm with norm_rel_ebd
    "layer_norm", a ConvLayer (Conv1d d → d, kernel k, groups g, + LayerNorm) when
    conv_kernel_size > 0; the legacy head cls.predictions (E wide) or lm_predictions.lm_head.

    FLOPs of the disentangled attention (He et al. 2021 §3.1): per token and term (c2p, p2c) its
    scores against 2·span relative positions; per sequence and layer the projections of the
    2·span-row position table (FlopCounterMode equality in
    tests/families/test_encoders_and_seq2seq.py)."""
    _ = c.att_types  # validated by its type above
    d, v, h = c.hidden_size, c.vocab_size, c.num_attention_heads
    e = c.embedding_size or d
    embed = "deberta.embeddings.word_embeddings"
    outer: list[Tensor] = [embedding(embed, "embed/tokens", v, e)]
    if c.position_biased_input:
        outer.append(
            embedding("deberta.embeddings.position_embeddings", "embed/positions", c.max_position_embeddings, e)
        )
    if c.type_vocab_size > 0:
        outer.append(embedding("deberta.embeddings.token_type_embeddings", "embed/token_types", c.type_vocab_size, e))
    if e != d:
        outer += linear("deberta.embeddings.embed_proj", "embed/proj", d, e, bias=False)
    outer += norm("deberta.embeddings.LayerNorm", "embed/norm", d, bias=True)
    p = "deberta.encoder.layer.{i}"
    layer = bert_layer(p, d, c.intermediate_size, q="query_proj", k="key_proj", v="value_proj")
    notes = list(_direction_note(False))
    attention = Attention(h, h, c.head_dim, c.head_dim, causal=False)
    if c.relative_attention:
        span = c.max_relative_positions if c.max_relative_positions >= 1 else c.max_position_embeddings
        if c.position_buckets > 0:
            span = c.position_buckets
        if not c.share_att_key:
            att = c.att_types
            pos = []
            if "c2p" in att:
                pos += linear(f"{p}.attention.self.pos_key_proj", "attn/pos_k_proj", d, d, bias=True)
            if "p2c" in att:
                pos += linear(f"{p}.attention.self.pos_query_proj", "attn/pos_q_proj", d, d, bias=True)
            # they project the relative-position table, not the tokens: their FLOPs are the
            # attention's sequence_flops, not per token
            pos = [Tensor(t.name, t.shape, t.component) for t in pos]
            layer = [*layer[:6], *pos, *layer[6:]]
        outer.append(embedding("deberta.encoder.rel_embeddings", "embed/rel_positions", 2 * span, d))
        if "layer_norm" in [x.strip() for x in c.norm_rel_ebd.lower().split("|")]:
            outer += norm("deberta.encoder.LayerNorm", "embed/rel_norm", d, bias=True)
        # DisentangledSelfAttention.disentangled_attention_bias: the 2·span rows of rel_embeddings
        # through query_proj and key_proj (both with share_att_key, else pos_query_proj for p2c,
        # pos_key_proj for c2p): 2·2span·d·d each, once per sequence; then per token and term
        # (c2p: query · position keys, p2c: key · position queries) 2·h·d_head·2span
        terms = [t for t in ("c2p", "p2c") if t in c.att_types]
        projections = 2 if c.share_att_key else len(terms)
        attention = Attention(
            h, h, c.head_dim, c.head_dim, causal=False,
            position_keys=2 * span * len(terms),
            sequence_flops=projections * 2 * (2 * span) * d * d,
        )
    if c.conv_kernel_size > 0:
        require(d % c.conv_groups == 0, "conv_groups", f"conv_groups ({c.conv_groups}) must divide hidden_size ({d})")
        outer += [
            # nn.Conv1d(d, d, k, groups=g): weight [d, d/g, k] (a matmul of d·d/g·k per token), bias [d]
            Tensor("deberta.encoder.conv.conv.weight", (d, d // c.conv_groups, c.conv_kernel_size), "conv", matmul=True),
            Tensor("deberta.encoder.conv.conv.bias", (d,), "conv"),
            *norm("deberta.encoder.conv.LayerNorm", "conv/norm", d, bias=True),
        ]
    tied = c.tie_word_embeddings
    head: list[Tensor] = []
    if c.legacy:
        head += mlm_head("cls.predictions", d, v, embed, tied=tied, width=e)
    else:
        require(e == d, "embedding_size", f"the non-legacy head needs embedding_size = hidden_size ({d})")
        q = "lm_predictions.lm_head"
        head += [
            *linear(f"{q}.dense", "dense", d, d, bias=True),
            *norm(f"{q}.LayerNorm", "norm", d, bias=True),
            Tensor(f"{q}.bias", (v,), "bias"),
            # scores = hidden · word_embeddingsᵀ: always the embedding table, never a tensor of its own
            *lm_head(f"{q}.decoder", v, d, tied_to=f"{embed}.weight"),
        ]
    return _with_head(Architecture(
        shape=c.shape(),
        tensors=tuple(outer),
        layer_groups=uniform_layers(c.num_hidden_layers, layer, attention, name="encoder"),
        notes=tuple(notes),
    ), head)


# ---- ModernBERT ----------------------------------------------------------------------------------


class ModernBertConfig(_BertFields):
    transformers_class = "ModernBertConfig"

    max_position_embeddings: Size
    norm_bias: bool
    attention_bias: bool
    mlp_bias: bool
    classifier_bias: bool
    decoder_bias: bool
    local_attention: Size
    global_attn_every_n_layers: Size = 3
    layer_types: list[str] | None = None


def describe_modernbert(c: ModernBertConfig) -> Architecture:
    """ModernBertForMaskedLM: tok_embeddings [V, d] and a norm; layers with attn_norm (none in layer
    0), attn.Wqkv 3d × d, attn.Wo d × d, mlp_norm, GeGLU mlp.Wi 2ff × d, mlp.Wo d × ff; final_norm;
    head.dense d × d and head.norm; decoder V × d (tied) with a bias [V]. LayerNorms carry a bias
    with norm_bias. Layer i is global when i is a multiple of global_attn_every_n_layers, else it
    attends within local_attention / 2 tokens either side."""
    d, v, ff = c.hidden_size, c.vocab_size, c.intermediate_size
    nb, ab, mb = c.norm_bias, c.attention_bias, c.mlp_bias
    h, hd = c.num_attention_heads, c.head_dim
    p = "model.layers.{i}"
    body = [
        *fused_mha(f"{p}.attn.Wqkv", f"{p}.attn.Wo", d, bias=ab),
        *norm(f"{p}.mlp_norm", "mlp/norm", d, bias=nb),
        *linear(f"{p}.mlp.Wi", "mlp/gate_up_proj", 2 * ff, d, bias=mb),
        *linear(f"{p}.mlp.Wo", "mlp/down_proj", d, ff, bias=mb),
    ]
    embed = "model.embeddings.tok_embeddings"
    head = [
        *linear("head.dense", "dense", d, d, bias=c.classifier_bias),
        *norm("head.norm", "norm", d, bias=nb),
        *lm_head(
            "decoder",
            v,
            d,
            tied_to=f"{embed}.weight" if c.tie_word_embeddings else None,
            bias=c.decoder_bias,
        ),
    ]
    return _with_head(Architecture(
        shape=c.shape(),
        tensors=(
            embedding(embed, "embed/tokens", v, d),
            *norm("model.embeddings.norm", "embed/norm", d, bias=nb),
            *norm("model.final_norm", "final_norm", d, bias=nb),
        ),
        layer_groups=modernbert_layers(
            c, body, lambda window: Attention(h, h, hd, hd, window=window, causal=False)),
        notes=_direction_note(False),
    ), head)


def modernbert_layers(
    c: Any, body: list[Tensor], attention: Callable[[int | None], Attention]
) -> tuple[LayerGroup, ...]:
    """ModernBERT's layers (``c``: a ModernBertConfig or ModernBertDecoderConfig): ``body`` after
    an attention norm, which layer 0 lacks; global (full) as layer_types lists, else every
    global_attn_every_n_layers-th layer from 0; the others attend within local_attention / 2
    (ModernBertConfig.sliding_window: |i − j| ≤ window)."""
    L, d = c.num_hidden_layers, c.hidden_size
    layer = [*norm("model.layers.{i}.attn_norm", "attn/norm", d, bias=c.norm_bias), *body]
    if c.layer_types is not None:
        plan = layer_kinds(c.layer_types, L, pattern=1)
    else:
        plan = first_of_plan(L, c.global_attn_every_n_layers)
    first_kind = next(kind for kind, layers in plan.items() if 0 in layers)
    plan = override_plan(plan, [0], "first_layer")  # layer 0: no attention norm
    window = c.local_attention // 2 if c.local_attention else None
    # ModernBERT-decoder's class derives sliding_window so in __post_init__, then sets the keys it
    # does not declare: a config.json's sliding_window wins (a saved one: the same)
    explicit = getattr(c, "sliding_window", None)
    if explicit is not None and explicit > 0:
        window = explicit
    windows = {SLIDING: window, FULL: None, "first_layer": window if first_kind == SLIDING else None}
    return planned_layers(
        plan, lambda kind: (body if kind == "first_layer" else layer, attention(windows[kind])))


# ---- BERT's near-copies: rows (a config class, the fields it renames, the switches) -------------
#
# Each type below is BertForMaskedLM or RobertaForMaskedLM with a few tensors changed. A row names
# the model's attribute (``prefix``: its tensors' first name), where the LayerNorms sit
# (``layer_norms``), the masked-LM head it carries (``head``) and how wide its embeddings are; the
# one describe function below turns any row into its tensors. Tensor names as in transformers 5.24
# ``models/<type>/modeling_<type>.py``.

# where the LayerNorms sit, and their names: (after attention, before/after the MLP, final)
POST_LN = "post"  # BertLayer: attention.output.LayerNorm, output.LayerNorm; no final norm
PRE_LN = "pre"  # RoBERTa-PreLayerNorm: attention.LayerNorm, intermediate.LayerNorm; <prefix>.LayerNorm
XL_LN = "xl"  # XLM-R XL: attention.self_attn_layer_norm, layer.LayerNorm; encoder.LayerNorm
MEGATRON_LN = "megatron"  # Megatron-BERT: attention.ln, layer.ln; encoder.ln
LAYER_NORMS: dict[str, tuple[str, str, str | None]] = {
    POST_LN: ("attention.output.LayerNorm", "output.LayerNorm", None),
    PRE_LN: ("attention.LayerNorm", "intermediate.LayerNorm", "{prefix}.LayerNorm"),
    XL_LN: ("attention.self_attn_layer_norm", "LayerNorm", "{prefix}.encoder.LayerNorm"),
    MEGATRON_LN: ("attention.ln", "ln", "{prefix}.encoder.ln"),
}


class BertRowConfig(BertConfig):
    """A BERT near-copy: BertConfig's fields with transformers' BertConfig defaults, and the switches
    a row sets as class attributes."""

    transformers_class = "BertConfig"

    hidden_size: Size = 768
    num_hidden_layers: Size = 12
    num_attention_heads: Size = 12
    intermediate_size: Size = 3072
    vocab_size: Size = 30522

    prefix: ClassVar[str] = "bert"
    layer_norms: ClassVar[str] = POST_LN
    embedding_norm: ClassVar[bool] = True  # a LayerNorm after the embeddings
    # "bert": cls.predictions (transform.dense, transform.LayerNorm, decoder); "roberta": lm_head
    # (dense, layer_norm, decoder); "electra": generator_predictions + generator_lm_head; "rembert":
    # cls.predictions (dense, LayerNorm, decoder) over output_embedding_size, never tied;
    # "generation": lm_head (decoder and bias, no transform)
    head: ClassVar[str] = "bert"
    # the head is registered before the encoder (XLM-RoBERTa, CamemBERT): named_parameters names
    # the shared word embeddings lm_head.decoder.weight
    head_first: ClassVar[bool] = False
    # where the embedding_size → hidden_size projection sits, when the widths differ (or always)
    embed_proj: ClassVar[str] = "{prefix}.embeddings_project"
    project_always: ClassVar[bool] = False
    token_types: ClassVar[bool] = True  # a token-type table [T, E] (BertGeneration: none)
    head_part: ClassVar[str] = "mlm_head"  # the head's part name (BertGeneration: lm_head)

    @property
    def embedding_width(self) -> int:
        """The width of the embedding tables (hidden_size, unless the row has its own)."""
        return self.hidden_size

    @property
    def final_norm(self) -> str | None:
        final = LAYER_NORMS[self.layer_norms][2]
        return final.format(prefix=self.prefix) if final else None

    def extra_embeddings(self) -> list[Tensor]:
        """Embedding tables beyond word, position and token type (ERNIE's task types)."""
        return []

    def positions(self) -> list[Tensor]:
        """Absolute learned positions [P, E] (RoFormer: none; its rotary table is in the encoder)."""
        return [embedding(f"{self.prefix}.embeddings.position_embeddings", "embed/positions",
                          self.max_position_embeddings, self.embedding_width)]

    def layer_extra(self, p: str) -> list[Tensor]:
        """Tensors a row adds to each layer (X-MOD's language adapters)."""
        return []


class XLMRobertaConfig(BertRowConfig):
    transformers_class = "XLMRobertaConfig"
    prefix = "roberta"
    head = "roberta"
    head_first = True


class CamembertConfig(XLMRobertaConfig):
    transformers_class = "CamembertConfig"


class Data2VecTextConfig(BertRowConfig):
    transformers_class = "Data2VecTextConfig"
    prefix = "data2vec_text"
    head = "roberta"


class RobertaPreLayerNormConfig(BertRowConfig):
    transformers_class = "RobertaPreLayerNormConfig"
    vocab_size: Size
    prefix = "roberta_prelayernorm"
    head = "roberta"
    layer_norms = PRE_LN


class XLMRobertaXLConfig(BertRowConfig):
    transformers_class = "XLMRobertaXLConfig"
    vocab_size: Size
    hidden_size: Size
    num_hidden_layers: Size
    num_attention_heads: Size
    intermediate_size: Size
    max_position_embeddings: Size
    type_vocab_size: Count
    prefix = "roberta"
    head = "roberta"
    layer_norms = XL_LN
    embedding_norm = False


class ErnieConfig(BertRowConfig):
    transformers_class = "ErnieConfig"
    prefix = "ernie"
    task_type_vocab_size: Count
    use_task_id: bool

    def extra_embeddings(self) -> list[Tensor]:
        if not self.use_task_id:
            return []
        return [embedding("ernie.embeddings.task_type_embeddings", "embed/task_types",
                          self.task_type_vocab_size, self.hidden_size)]


class MegatronBertConfig(BertRowConfig):
    transformers_class = "MegatronBertConfig"
    vocab_size: Size
    hidden_size: Size
    num_hidden_layers: Size
    num_attention_heads: Size
    intermediate_size: Size
    layer_norms = MEGATRON_LN
    embedding_norm = False


class ElectraConfig(BertRowConfig):
    """ElectraForMaskedLM, the generator: embeddings embedding_size wide, projected to hidden_size
    when the widths differ; generator_predictions (dense E × d, LayerNorm over E) and
    generator_lm_head V × E (tied to the word embeddings) with a bias."""

    transformers_class = "ElectraConfig"
    embedding_size: Size
    hidden_size: Size
    num_attention_heads: Size
    intermediate_size: Size
    prefix = "electra"
    head = "electra"

    @property
    def embedding_width(self) -> int:
        return self.embedding_size


class RoFormerConfig(BertRowConfig):
    """RoFormerForMaskedLM: rotary positions — no learned position table; the encoder's frozen
    sinusoidal table embed_positions [P, d_head] is a parameter. Embeddings embedding_size wide
    (null: hidden_size), projected when the widths differ; the head's transform maps d → E."""

    transformers_class = "RoFormerConfig"
    vocab_size: Size
    max_position_embeddings: Size
    embedding_size: Size | None = None
    rotary_value: bool
    prefix = "roformer"

    @property
    def embedding_width(self) -> int:
        return self.embedding_size or self.hidden_size

    def positions(self) -> list[Tensor]:
        return [embedding("roformer.encoder.embed_positions", "embed/positions",
                          self.max_position_embeddings, self.head_dim)]


class RemBertConfig(BertRowConfig):
    """RemBertForMaskedLM: input embeddings input_embedding_size wide, mapped to hidden_size by
    encoder.embedding_hidden_mapping_in; an untied head over output_embedding_size (Chung et al.
    2020, decoupled embeddings)."""

    transformers_class = "RemBertConfig"
    vocab_size: Size
    hidden_size: Size
    num_hidden_layers: Size
    num_attention_heads: Size
    intermediate_size: Size
    input_embedding_size: Size
    output_embedding_size: Size
    tie_word_embeddings: bool
    prefix = "rembert"
    head = "rembert"
    embed_proj = "{prefix}.encoder.embedding_hidden_mapping_in"
    project_always = True

    @property
    def embedding_width(self) -> int:
        return self.input_embedding_size


class XmodConfig(BertRowConfig):
    """XmodForMaskedLM (Pfeiffer et al. 2022, X-MOD): RoBERTa with, in every layer's output, one
    bottleneck adapter per language (dense1 d/r × d, dense2 d × d/r, with biases; r =
    adapter_reduction_factor) and, with adapter_layer_norm, a LayerNorm before them; pre_norm puts
    the LayerNorms before attention and MLP and adds encoder.LayerNorm. A token goes through its
    own language's adapter only: the others are parameters without FLOPs for it."""

    transformers_class = "XmodConfig"
    pre_norm: bool
    adapter_reduction_factor: Size
    adapter_layer_norm: bool
    languages: list[str] = Field(default_factory=lambda: ["en_XX"])
    default_language: str | None = None
    prefix = "roberta"
    head = "roberta"

    @property
    def final_norm(self) -> str | None:
        return "roberta.encoder.LayerNorm" if self.pre_norm else None

    def layer_extra(self, p: str) -> list[Tensor]:
        d = self.hidden_size
        r = d // self.adapter_reduction_factor
        require(r > 0, "adapter_reduction_factor",
                f"adapter_reduction_factor ({self.adapter_reduction_factor}) leaves no bottleneck "
                f"at hidden_size {d}")
        require(len(self.languages) <= MAX_MODULE_COPIES, "languages",
                f"languages has {len(self.languages):,} entries, each an adapter in every layer; "
                f"llmcalc describes at most {MAX_MODULE_COPIES:,}")
        require(len(set(self.languages)) == len(self.languages), "languages",
                "each language is listed once")
        for k, lang in enumerate(self.languages):
            # torch refuses a module named "" or with a dot; braces would read as llmcalc's {i}
            require(lang != "" and not any(ch in lang for ch in ".{}"), f"languages.{k}",
                    f"{shown(lang)} cannot name an adapter module (empty, or with '.', '{{' or "
                    "'}')")
        out = norm(f"{p}.output.adapter_layer_norm", "adapter/norm", d, bias=True) if (
            self.adapter_layer_norm) else []
        for k, lang in enumerate(self.languages):
            a = f"{p}.output.adapter_modules.{lang}"
            ts = [*linear(f"{a}.dense1", "adapter/dense1", r, d, bias=True),
                  *linear(f"{a}.dense2", "adapter/dense2", d, r, bias=True)]
            # one adapter per token: the first stands for the token's own language
            out += ts if k == 0 else [Tensor(t.name, t.shape, t.component) for t in ts]
        return out


class BertGenerationConfig(BertRowConfig):
    """BertGenerationDecoder (Rothe et al. 2020, BERT checkpoints for sequence generation): BERT's
    layers without token types; the head is lm_head (decoder V × d, tied, and a bias [V]) with no
    transform. transformers' causal-LM class of the type; self-attention is causal only with
    is_decoder (false by default: bidirectional, as transformers builds it)."""

    transformers_class = "BertGenerationConfig"
    vocab_size: Size
    hidden_size: Size
    num_hidden_layers: Size
    num_attention_heads: Size
    intermediate_size: Size
    token_types = False
    head = "generation"
    head_part = "lm_head"


class RoCBertConfig(BertRowConfig):
    """RoCBertForMaskedLM (Su et al. 2022, RoCBert: glyph and pinyin inputs for Chinese): BERT with
    a pronunciation table [pronunciation_vocab_size, pronunciation_embed_dim] and a shape table
    [shape_vocab_size, shape_embed_dim]; with concat_input the word embedding and the enabled ones
    are concatenated and mapped back by map_inputs_layer d × (d + p + s) (with bias), per token."""

    transformers_class = "RoCBertConfig"
    prefix = "roc_bert"
    enable_pronunciation: bool
    enable_shape: bool
    pronunciation_embed_dim: Size
    pronunciation_vocab_size: Size
    shape_embed_dim: Size
    shape_vocab_size: Size
    concat_input: bool

    def extra_embeddings(self) -> list[Tensor]:
        d, p0 = self.hidden_size, self.prefix
        pron, shape = self.pronunciation_embed_dim, self.shape_embed_dim
        out = [
            embedding(f"{p0}.embeddings.pronunciation_embed", "embed/pronunciation",
                      self.pronunciation_vocab_size, pron),
            embedding(f"{p0}.embeddings.shape_embed", "embed/shape", self.shape_vocab_size, shape),
        ]
        if self.concat_input:
            width = d + (pron if self.enable_pronunciation else 0) + (
                shape if self.enable_shape else 0)
            out += linear(f"{p0}.embeddings.map_inputs_layer", "embed/map_inputs", d, width, bias=True)
        return out


def describe_bert_row(c: BertRowConfig) -> Architecture:
    """A BERT near-copy's …ForMaskedLM: word [V, E], positions, token types [T, E] (and the row's
    extra tables), the embeddings' LayerNorm over E, the E → d projection when E ≠ d; BERT layers
    with the row's LayerNorms (and adapters), its final norm; its masked-LM head."""
    _no_cross_attention(c)
    d, v, e, p0 = c.hidden_size, c.vocab_size, c.embedding_width, c.prefix
    embed = f"{p0}.embeddings.word_embeddings"
    outer: list[Tensor] = [
        embedding(embed, "embed/tokens", v, e),
        *c.positions(),
        *([embedding(f"{p0}.embeddings.token_type_embeddings", "embed/token_types",
                     c.type_vocab_size, e)] if c.token_types else []),
        *c.extra_embeddings(),
    ]
    if c.embedding_norm:
        outer += norm(f"{p0}.embeddings.LayerNorm", "embed/norm", e, bias=True)
    if e != d or c.project_always:
        outer += linear(c.embed_proj.format(prefix=p0), "embed/proj", d, e, bias=True)
    if c.final_norm is not None:
        outer += norm(c.final_norm, "final_norm", d, bias=True)
    p = f"{p0}.encoder.layer.{{i}}"
    attn_norm, mlp_norm, _ = LAYER_NORMS[c.layer_norms]
    layer = [
        *(t for t in bert_layer(p, d, c.intermediate_size) if not t.component.endswith("/norm")),
        *norm(f"{p}.{attn_norm}", "attn/norm", d, bias=True),
        *norm(f"{p}.{mlp_norm}", "mlp/norm", d, bias=True),
        *c.layer_extra(p),
    ]
    head = _row_head(c, embed)
    return _with_head(Architecture(
        shape=c.shape(),
        tensors=tuple(outer),
        layer_groups=uniform_layers(
            c.num_hidden_layers, layer, _bidirectional(c, causal=c.is_decoder), name="encoder"
        ),
        notes=_direction_note(c.is_decoder),
    ), head, part=c.head_part)


class BigBirdConfig(BertRowConfig):
    """BigBird (Zaheer et al. 2020): BERT's tensors, q/k/v biased as ``use_bias`` says, and a pooler
    (BigBirdForMaskedLM builds BigBirdModel with one: nn.Linear d × d on the first token)."""

    transformers_class = "BigBirdConfig"

    vocab_size: Size
    max_position_embeddings: Size
    use_bias: bool
    attention_type: str
    block_size: Size
    num_random_blocks: Count


def describe_big_bird(c: BigBirdConfig) -> Architecture:
    """BigBirdForMaskedLM (big_bird/modeling_big_bird.py): BERT's row under ``bert.`` without the
    q/k/v biases when use_bias is false, bert.pooler [d, d] + bias [d], which BigBirdModel.forward
    runs on each sequence's first token alone (2·d² FLOPs a sequence: ModelSpec.sequence_flops).
    Its attention is full below (5 + 2·num_random_blocks)·block_size tokens, block-sparse past
    them where attention_type is block_sparse (Attention.sparse_beyond: FLOPs there refused)."""
    arch = describe_bert_row(c)
    (group,) = arch.layer_groups
    assert group.attention is not None
    qkv = tuple(f".attention.self.{x}.bias" for x in ("query", "key", "value"))
    layer = tuple(t for t in group.tensors if c.use_bias or not t.name.endswith(qkv))
    d = c.hidden_size
    # the pooler's matmul: one token a sequence, not every token's
    pooler = [replace(t, matmul=False) for t in linear("bert.pooler", "pooler", d, d, bias=True)]
    attention = replace(group.attention, sparse_beyond=block_sparse_threshold(
        c.attention_type, block_size=c.block_size, num_random_blocks=c.num_random_blocks))
    return replace(
        arch, tensors=(*arch.tensors, *pooler),
        layer_groups=(replace(group, tensors=layer, attention=attention),),
        sequence_flops=2 * d * d, sparse_what=BLOCK_SPARSE)


def _row_head(c: BertRowConfig, embed: str) -> list[Tensor]:
    d, v, e, tied = c.hidden_size, c.vocab_size, c.embedding_width, c.tie_word_embeddings
    tied_to = f"{embed}.weight" if tied else None
    if c.head == "bert":
        return mlm_head("cls.predictions", d, v, embed, tied=tied, width=e)
    if c.head == "roberta":
        decoder = lm_head("lm_head.decoder", v, d, tied_to=tied_to, bias=not tied)
        if c.head_first and tied:
            decoder = [replace(decoder[0], named_first=True), *decoder[1:]]
        return [
            Tensor("lm_head.bias", (v,), "bias"),
            *linear("lm_head.dense", "dense", d, d, bias=True),
            *norm("lm_head.layer_norm", "norm", d, bias=True),
            *decoder,
        ]
    if c.head == "generation":
        # BertGenerationOnlyLMHead: decoder V × d, its bias the head's bias [V] (two when untied)
        return [
            Tensor("lm_head.bias", (v,), "bias"),
            *lm_head("lm_head.decoder", v, d, tied_to=tied_to, bias=not tied),
        ]
    if c.head == "electra":
        return [
            *linear("generator_predictions.dense", "dense", e, d, bias=True),
            *norm("generator_predictions.LayerNorm", "norm", e, bias=True),
            *lm_head("generator_lm_head", v, e, tied_to=tied_to, bias=True),
        ]
    assert isinstance(c, RemBertConfig)  # the rows above name every head
    o = c.output_embedding_size
    return [
        *linear("cls.predictions.dense", "dense", o, d, bias=True),
        *norm("cls.predictions.LayerNorm", "norm", o, bias=True),
        # transformers never ties it (its width is output_embedding_size, not the embeddings')
        *lm_head("cls.predictions.decoder", v, o, tied_to=None, bias=True),
    ]


# ---- XLM -----------------------------------------------------------------------------------------


class XLMConfig(FamilyConfig):
    """XLMConfig's fields under its own names (emb_dim, n_layers, n_heads; hidden_size and the
    other standard names are accepted too)."""

    transformers_class = "XLMConfig"

    emb_dim: Size = Field(validation_alias=AliasChoices("emb_dim", "hidden_size"))
    n_layers: Size = Field(validation_alias=AliasChoices("n_layers", "num_hidden_layers"))
    n_heads: Size = Field(validation_alias=AliasChoices("n_heads", "num_attention_heads"))
    vocab_size: Size = Field(validation_alias=AliasChoices("vocab_size", "n_words"))
    max_position_embeddings: Size
    n_langs: Size
    use_lang_emb: bool
    causal: bool
    asm: bool
    is_encoder: bool
    tie_word_embeddings: bool

    @property
    def head_dim(self) -> int:
        return resolve_head_dim(self.emb_dim, self.n_heads)


def describe_xlm(c: XLMConfig) -> Architecture:
    """XLMWithLMHeadModel (Lample & Conneau 2019, modeling_xlm.py): position embeddings [P, d],
    language embeddings [n_langs, d] when n_langs > 1 and use_lang_emb, word embeddings [V, d],
    layer_norm_emb; per layer (post-norm, four ModuleLists side by side) attentions.{i} q_lin,
    k_lin, v_lin, out_lin d × d with biases, layer_norm1.{i}, ffns.{i} lin1 4d × d and lin2 d × 4d
    with biases, layer_norm2.{i}; the head pred_layer.proj V × d (tied) with a bias [V].
    Bidirectional unless causal (a causal-LM pretraining run, CLM)."""
    require(c.is_encoder, "is_encoder",
            "XLM can only be used as an encoder (as in transformers); is_encoder must be true")
    require(not c.asm, "asm", "the adaptive-softmax head (asm) is not counted; asm must be false")
    d, v, h, hd = c.emb_dim, c.vocab_size, c.n_heads, c.head_dim
    ff = 4 * d  # XLMModel.hidden_dim
    p = "transformer"
    embed = f"{p}.embeddings"
    outer = [embedding(f"{p}.position_embeddings", "embed/positions", c.max_position_embeddings, d)]
    if c.n_langs > 1 and c.use_lang_emb:
        outer.append(embedding(f"{p}.lang_embeddings", "embed/languages", c.n_langs, d))
    outer += [embedding(embed, "embed/tokens", v, d),
              *norm(f"{p}.layer_norm_emb", "embed/norm", d, bias=True)]
    layer = [
        *linear(f"{p}.attentions.{{i}}.q_lin", "attn/q_proj", d, d, bias=True),
        *linear(f"{p}.attentions.{{i}}.k_lin", "attn/k_proj", d, d, bias=True),
        *linear(f"{p}.attentions.{{i}}.v_lin", "attn/v_proj", d, d, bias=True),
        *linear(f"{p}.attentions.{{i}}.out_lin", "attn/o_proj", d, d, bias=True),
        *norm(f"{p}.layer_norm1.{{i}}", "attn/norm", d, bias=True),
        *fc_mlp(f"{p}.ffns.{{i}}.lin1", f"{p}.ffns.{{i}}.lin2", d, ff, bias=True),
        *norm(f"{p}.layer_norm2.{{i}}", "mlp/norm", d, bias=True),
    ]
    head = lm_head("pred_layer.proj", v, d, tied_to=f"{embed}.weight" if c.tie_word_embeddings else None,
                   bias=True)
    shape = Shape(
        num_layers=c.n_layers, hidden_size=d, num_heads=h, num_kv_heads=h, head_dim=hd,
        intermediate_size=ff, vocab_size=v, tied_embeddings=c.tie_word_embeddings,
        max_position_embeddings=c.max_position_embeddings,
    )
    return _with_head(Architecture(
        shape=shape,
        tensors=tuple(outer),
        layer_groups=uniform_layers(c.n_layers, layer, Attention(h, h, hd, hd, causal=c.causal),
                                    name="encoder"),
        notes=_direction_note(c.causal),
    ), head)


# ---- XLNet (Yang et al. 2019): a permutation LM with two-stream relative attention ----------------


class XLNetConfig(FamilyConfig):
    transformers_class = "XLNetConfig"

    vocab_size: Size = Field(validation_alias=AliasChoices("vocab_size", "n_token"))
    d_model: Size = Field(validation_alias=AliasChoices("d_model", "hidden_size"))
    n_layer: Size = Field(validation_alias=AliasChoices("n_layer", "num_hidden_layers"))
    n_head: Size = Field(validation_alias=AliasChoices("n_head", "num_attention_heads"))
    d_inner: Size
    d_head: Size | None = None  # XLNetConfig: d_model // n_head, and nothing else
    tie_word_embeddings: bool
    attn_type: str
    mem_len: int | None
    reuse_len: int | None = None  # XLNetConfig: no cut
    use_mems_eval: bool


def describe_xlnet(c: XLNetConfig) -> Architecture:
    """XLNetLMHeadModel (xlnet/modeling_xlnet.py): transformer.word_embedding [V, d] and mask_emb
    [1, 1, d]; per layer rel_attn.q, k, v, o and r (the relative positions' keys) [d, h, hd] each,
    the biases r_w_bias, r_r_bias, r_s_bias [h, hd] and seg_embed [2, h, hd], a LayerNorm [d];
    ff.layer_1 [ff, d], layer_2 [d, ff] with biases and a LayerNorm [d]; lm_loss [V, d] (tied to
    the word embedding) with its bias [V]. No final norm.

    Its forward over n tokens without target_mapping (one stream: XLNetRelativeAttention.forward
    with g None, no segments): q, k, v, o and the FFN on every token; each query scores the n keys
    and a·n + b relative positions (attn_type bi: the 2n positions n … −n + 1; uni: n + 1), whose
    keys r [a·n + b, d] × [d, h·hd] are projected once per sequence (``relative_positions``; r is
    no per-token matmul). With use_mems_eval each layer returns its input hidden states as mems,
    [min(n, reuse_len, mem_len), batch, d] (XLNetModel.cache_mem; 0 or null: no cap): the cache
    (Attention.memory). Its two-stream forward (target_mapping, as generate runs it) and segment
    scores (token_type_ids) are not modelled."""
    d, h, L, v, ff = c.d_model, c.n_head, c.n_layer, c.vocab_size, c.d_inner
    require(d % h == 0, "n_head", f"n_head ({h}) must divide d_model ({d}) (XLNetConfig)")
    hd = d // h
    require(c.d_head in (None, hd), "d_head", f"d_head ({c.d_head}) must be d_model // n_head "
            f"({hd}) (XLNetConfig)")
    require(c.attn_type in XLNET_POSITIONS, "attn_type",
            f"attn_type {c.attn_type!r} must be bi or uni (XLNetModel)")
    for name in ("mem_len", "reuse_len"):
        value = getattr(c, name)
        require(value is None or value >= 0, name, f"{name} ({value}) must not be negative")
    caps = [x for x in (c.mem_len, c.reuse_len) if x]  # 0 and null: every token
    a, f = "transformer.layer.{i}.rel_attn", "transformer.layer.{i}.ff"
    embed = "transformer.word_embedding"
    attention = Attention(h, h, hd, hd, causal=False, relative_positions=XLNET_POSITIONS[c.attn_type],
                          relative_proj=d * h * hd, memory=d if c.use_mems_eval else 0,
                          memory_len=min(caps) if caps else None)
    layer = [
        *(Tensor(f"{a}.{x}", (d, h, hd), f"attn/{x}_proj", matmul=x != "r") for x in "qkvor"),
        *(Tensor(f"{a}.{x}", (h, hd), "attn/bias") for x in ("r_r_bias", "r_s_bias", "r_w_bias")),
        Tensor(f"{a}.seg_embed", (2, h, hd), "attn/seg_embed"),
        *norm(f"{a}.layer_norm", "attn/norm", d, bias=True),
        *norm(f"{f}.layer_norm", "mlp/norm", d, bias=True),
        *fc_mlp(f"{f}.layer_1", f"{f}.layer_2", d, ff, bias=True),
    ]
    return Architecture(
        shape=Shape(L, d, h, h, hd, ff, v, c.tie_word_embeddings),
        tensors=(
            Tensor("transformer.mask_emb", (1, 1, d), "embed/mask"),
            embedding(embed, "embed/tokens", v, d),
            *lm_head("lm_loss", v, d, tied_to=f"{embed}.weight" if c.tie_word_embeddings else None,
                     bias=True),
        ),
        layer_groups=uniform_layers(L, layer, attention),
    )


# XLNet's relative positions one query scores over n tokens, a·n + b, by attn_type
# (XLNetModel.relative_positional_encoding: arange(klen, −qlen, −1) or arange(klen, −1, −1))
XLNET_POSITIONS = {"bi": (2, 0), "uni": (1, 1)}


# ---- Reformer (Kitaev et al. 2020): reversible layers of LSH and chunked local attention ---------


class ReformerConfig(FamilyConfig):
    transformers_class = "ReformerConfig"

    vocab_size: Size
    hidden_size: Size
    num_attention_heads: Size
    attention_head_size: Size
    feed_forward_size: Size
    attn_layers: list[str]
    axial_pos_embds: bool
    axial_pos_shape: list[Size]
    axial_pos_embds_dim: list[Size]
    max_position_embeddings: Size
    is_decoder: bool
    local_attn_chunk_length: Size | None = None
    lsh_attn_chunk_length: Size | None = None
    num_hidden_layers: Size | None = None  # ReformerConfig derives it from attn_layers


# ReformerAttention's layer types: the projections each holds besides value (LSH shares q and k)
REFORMER_ATTENTION = {"local": ("query", "key"), "lsh": ("query_key",)}


def describe_reformer(c: ReformerConfig) -> Architecture:
    """ReformerForMaskedLM (reformer/modeling_reformer.py): word_embeddings [V, d]; axial position
    embeddings (one weight per axis k, [1, …, s_k, …, 1, e_k] with Σ e_k = d) or a table
    position_embeddings.embedding [P, d]; per layer (``attn_layers``: "local" or "lsh") a LayerNorm
    [d], query and key (local) or one shared query_key (LSH) and value [h·hs, d], output.dense
    [d, h·hs], all without bias; the feed-forward's LayerNorm [d], dense [ff, d] and output [d, ff]
    with biases; the encoder's closing LayerNorm over both reversible streams [2d]; the head's bias
    [V] and decoder [V, 2d] with a bias of its own, never tied (the table is d wide).

    Its forward over n tokens: each layer runs once (the reversible pair Y₁ = X₁ + Attention(X₂),
    Y₂ = X₂ + FFN(Y₁), no recomputation in a forward pass), its projections on every token; a
    layer whose chunk length (local_attn_chunk_length or lsh_attn_chunk_length) is n or more
    attends in full, n² pairs (LocalSelfAttention / LSHSelfAttention.forward:
    do_standard_self_attention, no hashing, no padding); past it, chunked local attention and LSH
    buckets run, which no formula here follows (Attention.sparse_beyond: refused). The head [V, 2d]
    on every token; ReformerForMaskedLM keeps no cache (use_cache=False)."""
    require(not c.is_decoder, "is_decoder", "is_decoder=true: ReformerForMaskedLM needs a "
            "bidirectional model (transformers refuses it)")
    d, v, h, hs, ff = (c.hidden_size, c.vocab_size, c.num_attention_heads, c.attention_head_size,
                       c.feed_forward_size)
    for i, kind in enumerate(c.attn_layers):
        require(kind in REFORMER_ATTENTION, f"attn_layers.{i}",
                f"unknown layer type {kind!r} (one of: local, lsh)")
        length = f"{kind}_attn_chunk_length"
        require(getattr(c, length) is not None, length, f"{length} is null: transformers cannot "
                f"build a model with {kind} layers without it")
    p0 = "reformer.embeddings"
    outer: list[Tensor] = [embedding(f"{p0}.word_embeddings", "embed/tokens", v, d)]
    if c.axial_pos_embds:
        shape, dims = c.axial_pos_shape, c.axial_pos_embds_dim
        require(sum(dims) == d, "axial_pos_embds_dim",
                f"axial_pos_embds_dim {dims} must sum to hidden_size ({d})")
        require(len(dims) <= len(shape), "axial_pos_embds_dim",
                f"axial_pos_embds_dim names {len(dims)} axes, axial_pos_shape {len(shape)}")
        for k, e in enumerate(dims):
            axes = tuple(shape[k] if j == k else 1 for j in range(len(shape)))
            outer.append(Tensor(f"{p0}.position_embeddings.weights.{k}", (*axes, e),
                                "embed/positions"))
    else:
        outer.append(embedding(f"{p0}.position_embeddings.embedding", "embed/positions",
                               c.max_position_embeddings, d))
    outer += norm("reformer.encoder.layer_norm", "final_norm", 2 * d, bias=True)
    L = len(c.attn_layers)
    require(L > 0, "attn_layers", "attn_layers must name at least one layer")
    require(c.num_hidden_layers in (None, L), "num_hidden_layers",
            f"num_hidden_layers ({c.num_hidden_layers}) differs from the {L} layers attn_layers "
            "lists: how transformers builds that is not modelled")

    def layer(kind: str) -> tuple[list[Tensor], Attention]:
        p = "reformer.encoder.layers.{i}"
        a, f = f"{p}.attention", f"{p}.feed_forward"
        return [
            *norm(f"{a}.layer_norm", "attn/norm", d, bias=True),
            *(t for x in (*REFORMER_ATTENTION[kind], "value")
              for t in linear(f"{a}.self_attention.{x}", f"attn/{x}", h * hs, d, bias=False)),
            *linear(f"{a}.output.dense", "attn/o_proj", d, h * hs, bias=False),
            *norm(f"{f}.layer_norm", "mlp/norm", d, bias=True),
            *fc_mlp(f"{f}.dense.dense", f"{f}.output.dense", d, ff, bias=True),
        ], Attention(h, h, hs, hs, causal=False,
                     sparse_beyond=getattr(c, f"{kind}_attn_chunk_length"))

    head = [
        Tensor("lm_head.bias", (v,), "bias"),
        *lm_head("lm_head.decoder", v, 2 * d, tied_to=None, bias=True),
    ]
    return _with_head(Architecture(
        shape=Shape(L, d, h, h, hs, ff, v, False, c.max_position_embeddings),
        tensors=tuple(outer),
        layer_groups=planned_layers(plan_from_kinds(c.attn_layers), layer),
        sparse_what="Reformer's chunked attention (local chunks, LSH buckets)",
    ), head)
