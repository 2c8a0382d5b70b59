"""GPT-Neo (``model_type: gpt_neo``): GPT-2 blocks with global and local (windowed) attention layers.

Source: Black et al. 2021 (GPT-Neo); tensor names and shapes as in transformers ``GPTNeoForCausalLM``.
``attention_types`` such as ``[[["global", "local"], 12]]`` expands to the per-layer kinds; local
layers attend to the last ``window_size`` tokens. Both kinds hold the same tensors.
"""

from __future__ import annotations

from typing import Any

from pydantic import AliasChoices
from pydantic import Field

from llmcalc.families._base import Architecture
from llmcalc.families._base import FamilyConfig
from llmcalc.families._base import FieldError
from llmcalc.families._base import LayerPlan
from llmcalc.families._base import Size
from llmcalc.families._base import fc_mlp
from llmcalc.families._base import gpt2_outer_tensors
from llmcalc.families._base import linear
from llmcalc.families._base import norm
from llmcalc.families._base import planned_layers
from llmcalc.families._base import require
from llmcalc.families._base import resolve_head_dim
from llmcalc.model.spec import Attention
from llmcalc.model.spec import LayerSet
from llmcalc.model.spec import Run
from llmcalc.model.spec import Shape
from llmcalc.model.spec import Tensor

ATTENTION_KINDS = ("global", "local")


class GPTNeoConfig(FamilyConfig):
    transformers_class = "GPTNeoConfig"

    hidden_size: Size
    num_layers: Size = Field(validation_alias=AliasChoices("num_layers", "num_hidden_layers"))
    num_heads: Size = Field(validation_alias=AliasChoices("num_heads", "num_attention_heads"))
    vocab_size: Size
    max_position_embeddings: Size
    intermediate_size: Size | None = None  # null means 4 · hidden_size
    attention_types: list[Any] | None = None  # null means [[["global", "local"], 12]]
    window_size: Size
    tie_word_embeddings: bool


def expand_attention_types(attention_types: list[Any] | None) -> tuple[LayerPlan, int]:
    """``[[kinds, repeat], …]`` → the layers of each kind, as transformers expands it (each item
    repeats its pattern: a run per pattern position, never a list per layer), and the layer count."""
    if attention_types is None:
        attention_types = [[list(ATTENTION_KINDS), 12]]
    runs: dict[str, list[Run]] = {}
    start = 0
    for item in attention_types:
        if not (
            isinstance(item, list | tuple)
            and len(item) == 2
            and isinstance(item[0], list | tuple)
            and all(k in ATTENTION_KINDS for k in item[0])
            and isinstance(item[1], int)
            and not isinstance(item[1], bool)
            and item[1] >= 0
        ):
            raise FieldError(
                "attention_types",
                f'expected [[kinds, repeat], …] with kinds from "global", "local", got {item!r}',
            )
        pattern, times = list(item[0]), item[1]
        stop = start + len(pattern) * times
        for j, kind in enumerate(pattern):
            if times:
                runs.setdefault(kind, []).append(Run(start + j, stop, start + j, len(pattern), 1))
        start = stop
    return {kind: LayerSet(tuple(rs)) for kind, rs in runs.items()}, start


def describe(c: GPTNeoConfig) -> Architecture:
    d, v, h = c.hidden_size, c.vocab_size, c.num_heads
    hd = resolve_head_dim(d, h, heads_field="num_heads")
    ff = c.intermediate_size if c.intermediate_size is not None else 4 * d
    plan, expanded = expand_attention_types(c.attention_types)
    require(
        expanded == c.num_layers,
        "attention_types",
        f"expands to {expanded} layers but num_layers is {c.num_layers}",
    )
    p = "transformer.h.{i}"
    # q, k, v: d × d without bias;  out_proj: d × d with bias;  c_fc: ff × d, c_proj: d × ff
    layer = [
        *norm(f"{p}.ln_1", "attn/norm", d, bias=True),
        *linear(f"{p}.attn.attention.q_proj", "attn/q_proj", d, d, bias=False),
        *linear(f"{p}.attn.attention.k_proj", "attn/k_proj", d, d, bias=False),
        *linear(f"{p}.attn.attention.v_proj", "attn/v_proj", d, d, bias=False),
        *linear(f"{p}.attn.attention.out_proj", "attn/o_proj", d, d, bias=True),
        *norm(f"{p}.ln_2", "mlp/norm", d, bias=True),
        *fc_mlp(f"{p}.mlp.c_fc", f"{p}.mlp.c_proj", d, ff, bias=True),
    ]
    windows = {"global": None, "local": c.window_size}

    def build(kind: str) -> tuple[list[Tensor], Attention]:
        return layer, Attention(h, h, hd, hd, window=windows[kind])

    notes = (
        ("intermediate_size=null: d_ff = 4 · hidden_size",) if c.intermediate_size is None else ()
    )
    return Architecture(
        shape=Shape(c.num_layers, d, h, h, hd, ff, v,
                    c.tie_word_embeddings, c.max_position_embeddings),
        tensors=gpt2_outer_tensors(v, d, c.max_position_embeddings, tied=c.tie_word_embeddings),
        layer_groups=planned_layers(plan, build),
        notes=notes,
    )
