"""Building blocks shared by the family modules: config fields, tensor constructors, layer groups.

The shapes follow torch and transformers: ``nn.Linear(in, out)`` holds weight [out, in] and bias [out];
transformers' GPT-2 ``Conv1D(out, in)`` holds weight [in, out]; ``nn.Embedding(n, d)`` holds [n, d].
"""

from __future__ import annotations

import os
from collections.abc import Callable
from collections.abc import Collection
from collections.abc import Mapping
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Annotated
from typing import Any
from typing import ClassVar
from typing import TypeVar

from pydantic import AliasChoices
from pydantic import BaseModel
from pydantic import ConfigDict
from pydantic import Field

from llmcalc.model.spec import Attention
from llmcalc.model.spec import LayerGroup
from llmcalc.model.spec import LayerSet
from llmcalc.model.spec import MoE
from llmcalc.model.spec import Part
from llmcalc.model.spec import Run
from llmcalc.model.spec import Shape
from llmcalc.model.spec import Tensor

# The largest size or count a config may give: 2⁵³ − 1, the largest integer a JSON reader in any
# language keeps exact. Every product llmcalc forms from such numbers stays well inside a float's
# range, and no figure is computed by walking that many layers (layer sets are runs, see spec.py).
MAX_SIZE = 2**53 - 1
# A size: a strictly positive integer (no floats, no strings, no booleans).
Size = Annotated[int, Field(strict=True, gt=0, le=MAX_SIZE)]
# A count that may be zero (e.g. number of shared experts, dense layers before the MoE ones).
Count = Annotated[int, Field(strict=True, ge=0, le=MAX_SIZE)]
# A probability-like float field (dropout etc.) is never needed for counting and is not read.


class FieldError(Exception):
    """A field (or a combination of fields) that is invalid; the loader adds the file name."""

    def __init__(self, field: str, message: str) -> None:
        self.field = field
        super().__init__(message if field in message else f"{field}: {message}")


C = TypeVar("C", bound="FamilyConfig")


class FamilyConfig(BaseModel):
    """Base for the fields one family reads; unknown keys are ignored, types are strict.

    A field with a default is a stated default: the notes list every default that was used. A
    row's transformers class defaults are not restated here: the loader fills a field the config
    leaves out from ``family_defaults.json`` (``config.with_declared_defaults``), so a field
    declared there has no default in its class; a class default is for what the table leaves out
    (a class that serves several rows, a sub-config, a default derived by a rule).
    """

    # defer_build: a schema is built for the one family config a run validates, not for the bases
    model_config = ConfigDict(
        extra="ignore", frozen=True, strict=True, populate_by_name=True, defer_build=True
    )

    # The transformers config class this mirrors, for messages and notes.
    transformers_class: ClassVar[str] = ""
    # Fields the class leaves null when a config does not give them, though its model cannot be
    # built without them (HunYuanDenseV1Config's head_dim): refused, as transformers fails
    needed: ClassVar[tuple[str, ...]] = ()

    @classmethod
    def read(cls: type[C], fields: Mapping[str, Any]) -> C:
        """Validate ``fields``. Pydantic plugins are left out (as typer does for its options):
        looking for them scans every installed package's metadata, a good part of a CLI start."""
        previous = os.environ.get("PYDANTIC_DISABLE_PLUGINS")
        os.environ["PYDANTIC_DISABLE_PLUGINS"] = "1"
        try:
            config = cls.model_validate(fields)
        finally:
            if previous is None:
                del os.environ["PYDANTIC_DISABLE_PLUGINS"]
            else:
                os.environ["PYDANTIC_DISABLE_PLUGINS"] = previous
        for name in cls.needed:
            require(getattr(config, name) is not None, name,
                    f"{name} is not given: {cls.transformers_class} leaves it null, and "
                    "transformers cannot build the model without it")
        return config

    def defaulted(self, declared: Collection[str] = ()) -> list[str]:
        """``field=value`` for every field that took its default (``declared``: the fields given
        the transformers class's declared default before validation), in declaration order."""
        out = []
        for name, field in type(self).model_fields.items():
            if name not in self.model_fields_set or name in declared:
                value = getattr(self, name)
                if value is not None:
                    # a field read under another name shows that name (the config's)
                    alias = field.validation_alias
                    out.append(f"{alias if isinstance(alias, str) else name}={_show(value)}")
        return out


def _show(value: object) -> str:
    return str(value).lower() if isinstance(value, bool) else str(value)


@dataclass(frozen=True)
class Architecture:
    """What a family returns: the shape, the tensors outside the layers, the layer groups."""

    shape: Shape
    tensors: tuple[Tensor, ...]
    layer_groups: tuple[LayerGroup, ...]
    moe: MoE | None = None
    notes: tuple[str, ...] = ()
    # parameters a checkpoint holds that transformers does not build, by name (mtp_params)
    unbuilt: tuple[tuple[str, int], ...] = ()
    # a whole model: its parts besides the main one (vision tower, projector …); the fields above
    # are the main part, named main_part
    parts: tuple[Part, ...] = ()
    main_part: str = "language"
    depth_flops_per_token: int = 0  # ModelSpec.depth_flops_per_token
    depth_flops_what: str = "attention over the layers' block outputs"  # ModelSpec.depth_flops_what
    cache_bytes_per_token: int = 0  # ModelSpec.cache_bytes_per_token
    forward_unmodelled: str = ""  # ModelSpec.forward_unmodelled
    prefix_tokens: int = 0  # ModelSpec.prefix_tokens
    sequence_flops: int = 0  # ModelSpec.sequence_flops
    sparse_what: str = ""  # ModelSpec.sparse_what


# The query and key width a head of one element has in transformers' forward, by model type: 2
# where the rotary step multiplies the whole head by cos and sin of 2 · len(inv_freq) = 2 elements
# (``apply_rotary_pos_emb``: q·cos + rotate_half(q)·sin broadcasts the 1-wide head to 2); 0 where
# its table has no frequency (a rotary of int(1 · factor) = 0 dimensions, cos and sin 0 wide, the
# head broadcast to nothing); 1 where nothing widens it (no rotary embedding, or a partial rotary
# sliced off the head). Each held to a measured forward at head_dim 1 with its class's rotary
# settings (tests/differential); a type not listed, or a config that sets its own rotary part
# (ROTARY_FIELDS), is refused at head_dim 1 (inputs/config.py: _one_element_heads).
ONE_ELEMENT_HEAD_QK: dict[str, int] = {
    "apertus": 2, "apertus1p5_text": 2, "arcee": 2, "aria_text": 2, "cwm": 2, "diffllama": 2,
    "doge": 2, "dory": 2, "emu3": 2, "exaone": 2, "falcon_h1": 2, "flex_olmo": 2, "gemma": 2,
    "gemma2": 2, "gemma3": 2, "gemma3_text": 2, "gemma3n_text": 2, "gemma4": 2, "gemma4_text": 2,
    "gemma4_unified": 2, "gemma4_unified_text": 2, "got_ocr2": 2, "granite": 2, "granite_swa": 2,
    "granitemoe": 2, "granitemoe_swa": 2, "granitemoeshared": 2, "hrm_text": 2,
    "hunyuan_v1_dense": 2, "hunyuan_v1_moe": 2, "hy_v3": 2, "hyperclovax": 2, "idefics3": 2,
    "internlm3": 2, "internvl": 2, "iquestcoder": 2, "jais2": 2, "jetmoe": 2, "lara_mini": 2,
    "lfm2": 2, "llama": 2, "llava": 2, "llava_next": 2, "llava_onevision": 2, "mellum": 2,
    "minimax": 2, "minimax_m2": 2, "minimax_m3_vl_text": 2, "ministral": 2, "mistral": 2,
    "mistral3": 2, "mixtral": 2, "moshi": 2, "moss_transcribe_diarize": 2, "nanochat": 2,
    "nemotron_h": 2, "olmo": 2, "olmo2": 2, "olmo3": 2, "olmo_hybrid": 2, "paligemma": 2,
    "phi3": 2, "phi4_multimodal": 2, "phimoe": 2, "qwen2": 2, "qwen2_moe": 2, "qwen3": 2,
    "qwen3_5": 2, "qwen3_5_moe": 2, "qwen3_moe": 2, "qwen3_vl": 2, "qwen3_vl_moe": 2,
    "sarvam_moe": 2, "seed_oss": 2, "smolvlm": 2, "solar_open": 2, "starcoder2": 2,
    "vaultgemma": 2,
    "glm": 1, "glm4": 1, "glm4_moe": 1, "inkling2_loop_text": 1, "inkling2_text": 1, "jamba": 1,
    "laguna": 1, "mimo_v2_flash": 1, "mt5": 1, "phi": 1, "qwen3_5_moe_text": 1, "qwen3_5_text": 1,
    "qwen3_next": 1, "recurrent_gemma": 1, "t5": 1, "umt5": 1, "zamba2": 1, "zaya": 1,
    "lfm3": 0, "ministral3": 0,
}
# Config fields that change how much of a head rotates (or how): the widths above were measured
# without them
ROTARY_FIELDS = ("partial_rotary_factor", "rotary_pct", "rotary_dim", "rope_parameters",
                 "rope_scaling")


# Config classes whose attention takes head_dim = hidden_size // num_attention_heads when no
# head_dim is given, whatever the remainder (transformers' ``getattr(config, "head_dim", None) or
# config.hidden_size // config.num_attention_heads``), with projections of heads · head_dim: each
# held to the model transformers builds from a width its heads do not divide (tests/differential)
FLOOR_HEAD_DIM: frozenset[str] = frozenset({
    "Apertus1p5TextConfig", "ApertusConfig", "BambaConfig", "BitNetConfig", "Cohere2Config",
    "CohereConfig", "DogeConfig", "Emu3TextConfig", "Exaone4Config", "FalconH1Config", "GraniteConfig",
    "GraniteMoeHybridConfig", "GraniteSWAConfig", "JambaConfig", "Lfm2Config", "MistralConfig",
    "NanoChatConfig", "Olmo2Config", "Olmo3Config", "OlmoHybridConfig", "Phi3Config",
    "Phi4MultimodalConfig", "PhiConfig", "Qwen2Config", "SmolLM3Config", "Starcoder2Config",
})


# ---- checks shared by families ------------------------------------------------------------------


def require(condition: bool, field: str, message: str) -> None:
    if not condition:
        raise FieldError(field, message)


def block_sparse_threshold(attention_type: str, *, block_size: int, num_random_blocks: int) -> int | None:
    """The longest sequence BigBird's block_sparse attention_type runs in full (None: original_full
    runs in full at any length). transformers BigBirdModel.forward / BigBirdPegasusEncoder.forward
    switch to original_full when seq_len <= (5 + 2·num_random_blocks)·block_size: 2 global, 3
    window and 2·r random blocks of block_size tokens."""
    require(attention_type in ("original_full", "block_sparse"), "attention_type",
            f"attention_type {attention_type!r} must be original_full or block_sparse (transformers)")
    if attention_type == "original_full":
        return None
    return (5 + 2 * num_random_blocks) * block_size


BLOCK_SPARSE = "BigBird's block-sparse attention (global, window and random blocks)"


def resolve_head_dim(
    hidden: int,
    heads: int,
    head_dim: int | None = None,
    *,
    hidden_field: str = "hidden_size",
    heads_field: str = "num_attention_heads",
    floor: bool = False,
) -> int:
    """head_dim as given, else hidden / heads, which must then divide exactly — or, ``floor``,
    hidden // heads, as a class that builds heads · (hidden // heads)-wide projections whatever
    the remainder computes it (FLOOR_HEAD_DIM).

    Messages name the standard Hugging Face fields unless a family reads others.
    """
    if head_dim is not None:
        return head_dim
    if floor:
        require(hidden >= heads, heads_field, f"{heads_field} ({heads}) exceeds {hidden_field} "
                f"({hidden}): heads of hidden // heads = 0 elements")
        return hidden // heads
    require(
        hidden % heads == 0,
        heads_field,
        f"{heads_field} ({heads}) must divide {hidden_field} ({hidden}) when head_dim is not given",
    )
    return hidden // heads


def resolve_kv_heads(
    heads: int,
    kv_heads: int | None,
    *,
    heads_field: str = "num_attention_heads",
    kv_field: str = "num_key_value_heads",
) -> int:
    """kv heads as given (GQA/MQA), else equal to the heads (multi-head attention). KV heads that
    do not divide the heads are counted as given: transformers builds k/v projections of
    kv·head_dim whatever the heads (only its attention forward, repeating each KV head
    heads // kv times, fails)."""
    return heads if kv_heads is None else kv_heads


# ---- the standard decoder config ------------------------------------------------------------------


class DecoderConfig(FamilyConfig):
    """The fields most Hugging Face decoder configs name alike, in the order they declare them.

    A family subclasses it, overrides a default where its transformers config differs (Gemma 2:
    ``head_dim: Size = 256``) and adds its own fields after these. ``tie_word_embeddings`` is one of
    them: its default differs by family, and where it is declared sets its place in the notes.
    """

    hidden_size: Size
    num_hidden_layers: Size
    num_attention_heads: Size
    num_key_value_heads: Size | None = None  # absent: equal to the heads (MHA)
    head_dim: Size | None = None  # absent: hidden_size / num_attention_heads
    intermediate_size: Size
    vocab_size: Size
    max_position_embeddings: Size | None = None

    @property
    def resolved_head_dim(self) -> int:
        return resolve_head_dim(self.hidden_size, self.num_attention_heads, self.head_dim,
                                floor=self.transformers_class in FLOOR_HEAD_DIM)

    @property
    def resolved_kv_heads(self) -> int:
        return resolve_kv_heads(self.num_attention_heads, self.num_key_value_heads)

    def attention(self, *, window: int | None = None) -> Attention:
        """h query heads, kv key/value heads, one head_dim for q·k and for v."""
        hd = self.resolved_head_dim
        return Attention(self.num_attention_heads, self.resolved_kv_heads, hd, hd, window=window)

    def shape(self, *, tied: bool) -> Shape:
        return Shape(
            num_layers=self.num_hidden_layers,
            hidden_size=self.hidden_size,
            num_heads=self.num_attention_heads,
            num_kv_heads=self.resolved_kv_heads,
            head_dim=self.resolved_head_dim,
            intermediate_size=self.intermediate_size,
            vocab_size=self.vocab_size,
            tied_embeddings=tied,
            max_position_embeddings=self.max_position_embeddings,
        )


class GPT2StyleConfig(FamilyConfig):
    """The GPT-2 field names that GPT-J and GPT-BigCode kept; each is also read by its standard name.

    A family overrides ``n_positions`` where its transformers default differs.
    """

    n_embd: Size = Field(validation_alias=AliasChoices("n_embd", "hidden_size"))
    n_layer: Size = Field(validation_alias=AliasChoices("n_layer", "num_hidden_layers"))
    n_head: Size = Field(validation_alias=AliasChoices("n_head", "num_attention_heads"))
    vocab_size: Size
    n_positions: Size | None = Field(
        None, validation_alias=AliasChoices("n_positions", "max_position_embeddings")
    )
    n_inner: Size | None = None  # null means 4 · n_embd

    @property
    def resolved_head_dim(self) -> int:
        return resolve_head_dim(
            self.n_embd, self.n_head, hidden_field="n_embd", heads_field="n_head"
        )

    @property
    def d_ff(self) -> int:
        return self.n_inner if self.n_inner is not None else 4 * self.n_embd

    def d_ff_notes(self) -> tuple[str, ...]:
        return ("n_inner=null: d_ff = 4 · n_embd",) if self.n_inner is None else ()


# ---- tensor constructors -------------------------------------------------------------------------


def linear(name: str, component: str, out_f: int, in_f: int, *, bias: bool) -> list[Tensor]:
    """nn.Linear(in_f, out_f): weight [out_f, in_f] (+ bias [out_f])."""
    ts = [Tensor(f"{name}.weight", (out_f, in_f), component, matmul=True)]
    if bias:
        ts.append(Tensor(f"{name}.bias", (out_f,), component))
    return ts


def conv1d(name: str, component: str, in_f: int, out_f: int, *, bias: bool = True) -> list[Tensor]:
    """transformers Conv1D (GPT-2): weight [in_f, out_f] (+ bias [out_f])."""
    ts = [Tensor(f"{name}.weight", (in_f, out_f), component, matmul=True)]
    if bias:
        ts.append(Tensor(f"{name}.bias", (out_f,), component))
    return ts


def norm(name: str, component: str, dim: int, *, bias: bool) -> list[Tensor]:
    """LayerNorm (weight + bias) or RMSNorm (weight only) over ``dim``."""
    ts = [Tensor(f"{name}.weight", (dim,), component)]
    if bias:
        ts.append(Tensor(f"{name}.bias", (dim,), component))
    return ts


def embedding(name: str, component: str, num: int, dim: int) -> Tensor:
    """nn.Embedding(num, dim): a lookup table [num, dim], no FLOPs."""
    return Tensor(f"{name}.weight", (num, dim), component)


def lm_head(
    name: str, vocab: int, dim: int, *, tied_to: str | None, bias: bool = False
) -> list[Tensor]:
    """The output projection [vocab, dim]; when tied it is listed but counted once, at ``tied_to``."""
    ts = [Tensor(f"{name}.weight", (vocab, dim), "lm_head", matmul=True, tied_to=tied_to)]
    if bias:
        ts.append(Tensor(f"{name}.bias", (vocab,), "lm_head"))
    return ts


def stacked_experts(name: str, component: str, num_experts: int, *shape: int) -> Tensor:
    """Routed experts fused into one parameter [E, *shape] (transformers v5 MoE layout)."""
    return Tensor(name, (num_experts, *shape), component, matmul=True, experts=num_experts)


# ---- blocks shared by many families --------------------------------------------------------------


def gqa_projections(
    p: str, d: int, h: int, kv: int, hd: int, *, bias: bool, o_bias: bool | None = None
) -> list[Tensor]:
    """q, o: (h·hd) × d;  k, v: (kv·hd) × d  (GQA, Ainslie et al. 2023); ``o_bias`` defaults to ``bias``."""
    return [
        *linear(f"{p}.q_proj", "attn/q_proj", h * hd, d, bias=bias),
        *linear(f"{p}.k_proj", "attn/k_proj", kv * hd, d, bias=bias),
        *linear(f"{p}.v_proj", "attn/v_proj", kv * hd, d, bias=bias),
        *linear(f"{p}.o_proj", "attn/o_proj", d, h * hd, bias=bias if o_bias is None else o_bias),
    ]


def fused_mha(qkv: str, o: str, d: int, *, bias: bool) -> list[Tensor]:
    """Multi-head attention with q, k, v fused, by its modules' names: qkv 3d × d, o d × d."""
    return [
        *linear(qkv, "attn/qkv", 3 * d, d, bias=bias),
        *linear(o, "attn/o_proj", d, d, bias=bias),
    ]


def swiglu(p: str, component: str, d: int, ff: int, *, bias: bool = False) -> list[Tensor]:
    """gate, up: ff × d;  down: d × ff  (SwiGLU, Shazeer 2020)."""
    return [
        *linear(f"{p}.gate_proj", f"{component}/gate_proj", ff, d, bias=bias),
        *linear(f"{p}.up_proj", f"{component}/up_proj", ff, d, bias=bias),
        *linear(f"{p}.down_proj", f"{component}/down_proj", d, ff, bias=bias),
    ]


def fc_mlp(up: str, down: str, d: int, ff: int, *, bias: bool) -> list[Tensor]:
    """The two-matrix MLP (no gate), by its modules' names: up ff × d, down d × ff."""
    return [
        *linear(up, "mlp/fc_in", ff, d, bias=bias),
        *linear(down, "mlp/fc_out", d, ff, bias=bias),
    ]


def routed_experts(p: str, d: int, ff: int, num_experts: int) -> list[Tensor]:
    """E SwiGLU experts fused (transformers v5): gate_up_proj [E, 2·ff, d], down_proj [E, d, ff]."""
    return [
        stacked_experts(f"{p}.gate_up_proj", "moe/experts/gate_up_proj", num_experts, 2 * ff, d),
        stacked_experts(f"{p}.down_proj", "moe/experts/down_proj", num_experts, d, ff),
    ]


def router(name: str, d: int, num_experts: int, *, bias: bool = False) -> list[Tensor]:
    """The router: one logit per expert, E × d (+ bias [E])."""
    return linear(name, "moe/router", num_experts, d, bias=bias)


def qk_norms(p: str, q_dim: int, k_dim: int) -> list[Tensor]:
    """RMSNorm on queries and keys: over head_dim (Qwen3, Gemma 3) or all of q and k (OLMo 2, OLMoE)."""
    return [
        *norm(f"{p}.q_norm", "attn/q_norm", q_dim, bias=False),
        *norm(f"{p}.k_norm", "attn/k_norm", k_dim, bias=False),
    ]


def llama_outer_tensors(
    v: int,
    d: int,
    *,
    tied: bool,
    norm_bias: bool = False,
    head_bias: bool = False,
    final_norm: str | None = "model.norm",
    embed: str = "model.embed_tokens",
) -> tuple[Tensor, ...]:
    """Around Llama-style layers: the token embedding [V, d] (``embed``), the final norm [d]
    (RMSNorm, or LayerNorm with ``norm_bias``; none when ``final_norm`` is None) and lm_head [V, d]
    (+ bias [V]), tied to the embedding or not."""
    return (
        embedding(embed, "embed/tokens", v, d),
        *(norm(final_norm, "final_norm", d, bias=norm_bias) if final_norm else []),
        *lm_head("lm_head", v, d, tied_to=f"{embed}.weight" if tied else None, bias=head_bias),
    )


def gpt2_outer_tensors(v: int, d: int, positions: int, *, tied: bool) -> tuple[Tensor, ...]:
    """Around GPT-2-style layers: wte [V, d], learned positions wpe [P, d], ln_f [d] with bias,
    lm_head [V, d], tied to wte or not."""
    wte = "transformer.wte"
    return (
        embedding(wte, "embed/tokens", v, d),
        embedding("transformer.wpe", "embed/positions", positions, d),
        *norm("transformer.ln_f", "final_norm", d, bias=True),
        *lm_head("lm_head", v, d, tied_to=f"{wte}.weight" if tied else None),
    )


def check_top_k(k: int, num_experts: int, *, k_field: str, e_field: str) -> None:
    require(
        k <= num_experts,
        k_field,
        f"{k_field} ({k}) must not exceed {e_field} ({num_experts}): a router's top-k cannot "
        "pick more experts than there are (transformers' forward fails)",
    )


# ---- layer groups ---------------------------------------------------------------------------------
# Layer indices are LayerSets of runs, never lists as long as the model is deep: a config's layer
# count (up to MAX_SIZE) costs O(1), a per-layer list in a config costs O(its length).

LayerPlan = dict[str, LayerSet]  # layer kind → the layers of that kind, in order of first use


def uniform_layers(
    num_layers: int, tensors: Sequence[Tensor], attention: Attention, name: str = "decoder"
) -> tuple[LayerGroup, ...]:
    """All layers alike: one group."""
    return (LayerGroup(name, LayerSet.span(0, num_layers), tuple(tensors), attention),)


MAX_PATTERN = 64  # the longest repeating pattern a per-layer list is searched for


def plan_from_kinds(kinds: Sequence[str]) -> LayerPlan:
    """A per-layer list (as a config spells it) → the runs of each kind: one strided run per
    position when the list repeats a pattern of up to ``MAX_PATTERN`` layers (sliding, sliding,
    full, …), else a run per stretch of equal kinds."""
    kinds = list(kinds)
    for p in range(1, min(MAX_PATTERN, len(kinds) // 2) + 1):
        if kinds[p:] == kinds[:-p]:  # period p (compared in C: cheap even for long lists)
            periodic: dict[str, list[Run]] = {}
            for j in range(p):
                periodic.setdefault(kinds[j], []).append(Run(j, len(kinds), j, p, 1))
            return {kind: LayerSet(tuple(rs)) for kind, rs in periodic.items()}
    runs: dict[str, list[Run]] = {}
    start = 0
    for i in range(1, len(kinds) + 1):
        if i == len(kinds) or kinds[i] != kinds[start]:
            runs.setdefault(kinds[start], []).append(Run(start, i, start, 1, 1))
            start = i
    return {kind: LayerSet(tuple(_strided(rs))) for kind, rs in runs.items()}


def _strided(runs: list[Run]) -> list[Run]:
    """Three or more single layers at one stride merged into one run every k-th layer (a list that
    alternates kinds after a prefix: DeepSeek-V4's compress_ratios)."""
    out: list[Run] = []
    i = 0
    while i < len(runs):
        j = i
        if len(runs[i]) == 1 and i + 1 < len(runs) and len(runs[i + 1]) == 1:
            step = runs[i + 1].start - runs[i].start
            while (j + 1 < len(runs) and len(runs[j + 1]) == 1
                   and runs[j + 1].start - runs[j].start == step):
                j += 1
        if j - i >= 2:
            out.append(Run(runs[i].start, runs[j].start + 1, runs[i].start, step, 1))
        else:
            out.extend(runs[i:j + 1])
        i = j + 1
    return out


def periodic_plan(num_layers: int, *, period: int, every: str, others: str) -> LayerPlan:
    """Layer i is ``every`` when (i + 1) is a multiple of ``period``, else ``others``
    (Gemma's "every 6th layer global", Qwen-MoE's decoder_sparse_step)."""
    marked = LayerSet((Run(period - 1, num_layers, period - 1, period, 1),))
    rest = LayerSet((Run(0, num_layers, 0, period, period - 1),)) if period > 1 else LayerSet(())
    plan = {others: rest, every: marked} if period > 1 else {every: marked}
    order = sorted(plan, key=lambda kind: next(iter(plan[kind]), num_layers))
    return {kind: plan[kind] for kind in order if plan[kind]}


def split_plan(num_layers: int, *, at: int, before: str, after: str) -> LayerPlan:
    """Layers below ``at`` are ``before``, the rest ``after`` (DeepSeek's first_k_dense_replace)."""
    plan = {before: LayerSet.span(0, min(at, num_layers)), after: LayerSet.span(at, num_layers)}
    return {kind: layers for kind, layers in plan.items() if layers}


def override_plan(plan: LayerPlan, indices: Sequence[int], kind: str) -> LayerPlan:
    """``plan`` with the listed layers (a config's list) moved to ``kind`` (Qwen's mlp_only_layers)."""
    moved = {i for i in indices}
    if not moved:
        return plan
    out: dict[str, list[Run]] = {}
    for k, layers in plan.items():
        for r in layers.runs:
            for piece in _cut(r, sorted(i for i in moved if i in r)):
                out.setdefault(k, []).append(piece)
    out.setdefault(kind, []).extend(LayerSet.of(moved).runs)
    result = {k: LayerSet(tuple(rs)) for k, rs in out.items()}
    order = sorted(result, key=lambda k: next(iter(result[k]), 0))
    return {k: result[k] for k in order if result[k]}


def _cut(run: Run, holes: Sequence[int]) -> list[Run]:
    """``run`` without the (sorted) indices ``holes``, keeping its pattern."""
    pieces, start = [], run.start
    for i in holes:
        pieces.append(Run(start, i, run.origin, run.period, run.width))
        start = i + 1
    pieces.append(Run(start, run.stop, run.origin, run.period, run.width))
    return [p for p in pieces if len(p)]


def planned_layers(
    plan: LayerPlan, build: Callable[[str], tuple[Sequence[Tensor], Attention]]
) -> tuple[LayerGroup, ...]:
    """One group per kind of ``plan``, built by ``build(kind)``."""
    groups = []
    for kind, layers in plan.items():
        tensors, attention = build(kind)
        groups.append(LayerGroup(kind, layers, tuple(tensors), attention))
    return tuple(groups)


# ---- attention layer types (Gemma 2/3, Cohere 2, gpt-oss) -------------------------------------

SLIDING, FULL = "sliding_attention", "full_attention"
LAYER_TYPES = (SLIDING, FULL)


def layer_kinds(layer_types: Sequence[str] | None, num_layers: int, *, pattern: int) -> LayerPlan:
    """Each layer's attention type: as listed, else every ``pattern``-th layer full, the rest sliding."""
    if layer_types is None:
        return periodic_plan(num_layers, period=pattern, every=FULL, others=SLIDING)
    return plan_from_kinds(listed_kinds(layer_types, num_layers, {t: t for t in LAYER_TYPES}))


def listed_kinds(
    layer_types: Sequence[str], num_layers: int, kind_of: Mapping[str, str],
    *, shown: Sequence[str] | None = None,
) -> list[str]:
    """A config's per-layer ``layer_types`` as the family's layer kinds (``kind_of``: a type → its
    kind), checked: one entry per layer, each a known type (the message lists ``shown``, else
    every type)."""
    require(len(layer_types) == num_layers, "layer_types",
            f"has {len(layer_types)} entries, num_hidden_layers is {num_layers}")
    for i, kind in enumerate(layer_types):
        require(kind in kind_of, f"layer_types.{i}",
                f"unknown layer type {kind!r} (one of: {', '.join(shown or kind_of)})")
    return [kind_of[kind] for kind in layer_types]


def sliding_full_layers(
    plan: LayerPlan, tensors: Sequence[Tensor], c: DecoderConfig, *, window: int | None
) -> tuple[LayerGroup, ...]:
    """One group per attention type, alike in tensors; the sliding layers attend within ``window``."""
    windows = {SLIDING: window, FULL: None}
    return planned_layers(plan, lambda kind: (tensors, c.attention(window=windows[kind])))
