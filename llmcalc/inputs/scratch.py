"""A model built from scratch: a few architecture knobs → a model type and ``--set`` fields.

The result is what ``llmcalc count MODEL_TYPE`` reads (the type's transformers defaults, see
:mod:`llmcalc.inputs.family_defaults`, or the bundled config of that name: ``gpt2``) with the knobs that
differ applied as ``--set`` overrides, so ``llmcalc count llama --set hidden_size=…`` reproduces it
exactly and every figure comes from the family's own description.

    positions  FFN     norm       experts  →  model type
    learned    GELU    LayerNorm  –           gpt2
    rotary     SwiGLU  RMSNorm    –           llama
    rotary     SwiGLU  RMSNorm    > 1         mixtral
    rotary     GELU    LayerNorm  –           gpt_neox
"""

from __future__ import annotations

from dataclasses import dataclass, fields, replace
from typing import Any

from llmcalc.errors import UsageError
from llmcalc.inputs import family_defaults

# (positions, ffn, norm, moe) → model type
ARCHITECTURES: dict[tuple[str, str, str, bool], str] = {
    ("learned", "gelu", "layernorm", False): "gpt2",
    ("rotary", "swiglu", "rmsnorm", False): "llama",
    ("rotary", "swiglu", "rmsnorm", True): "mixtral",
    ("rotary", "gelu", "layernorm", False): "gpt_neox",
}

# knob → the config key of each model type (absent: the type has no such field)
KEYS: dict[str, dict[str, str]] = {
    "gpt2": {"d_model": "n_embd", "layers": "n_layer", "heads": "n_head", "d_ff": "n_inner",
             "vocab": "vocab_size", "tied": "tie_word_embeddings", "max_positions": "n_positions"},
    "llama": {"d_model": "hidden_size", "layers": "num_hidden_layers",
              "heads": "num_attention_heads", "kv_heads": "num_key_value_heads",
              "head_dim": "head_dim", "d_ff": "intermediate_size", "vocab": "vocab_size",
              "tied": "tie_word_embeddings", "max_positions": "max_position_embeddings"},
    "gpt_neox": {"d_model": "hidden_size", "layers": "num_hidden_layers",
                 "heads": "num_attention_heads", "d_ff": "intermediate_size",
                 "vocab": "vocab_size", "tied": "tie_word_embeddings",
                 "max_positions": "max_position_embeddings"},
}
KEYS["mixtral"] = {**KEYS["llama"], "experts": "num_local_experts", "top_k": "num_experts_per_tok"}


@dataclass(frozen=True)
class Knobs:
    """What a person sets when building a model from scratch."""

    d_model: int
    layers: int
    heads: int
    kv_heads: int
    head_dim: int | None  # None: d_model / heads
    d_ff: int
    vocab: int
    tied: bool
    max_positions: int
    ffn: str = "swiglu"  # gelu | swiglu
    norm: str = "rmsnorm"  # layernorm | rmsnorm
    positions: str = "rotary"  # learned | rotary
    experts: int = 1  # 1: dense
    top_k: int = 1


def model_type_for(k: Knobs) -> str:
    key = (k.positions, k.ffn, k.norm, k.experts > 1)
    if key not in ARCHITECTURES:
        choices = "; ".join(
            f"{p} + {f} + {n}{' + experts' if moe else ''} ({mt})"
            for (p, f, n, moe), mt in ARCHITECTURES.items()
        )
        raise UsageError(f"no supported family has {k.positions} positions, a {k.ffn} MLP and "
                         f"{k.norm}{' with experts' if k.experts > 1 else ''}; "
                         f"supported: {choices}")
    return ARCHITECTURES[key]


def knobs_of(model_type: str) -> Knobs:
    """The knobs of the config ``llmcalc count MODEL_TYPE`` starts from (where the form starts):
    the transformers defaults, or the bundled config of that name (``gpt2``)."""
    defaults = family_defaults.defaults(model_type)
    if defaults is None or model_type not in KEYS:
        raise UsageError(f"cannot build {model_type!r} from scratch; "
                         f"choose one of: {', '.join(sorted(KEYS))}")
    from llmcalc.inputs.config import read_config

    cfg = {**defaults, **read_config(model_type).fields}  # a field left out takes the default
    keys = KEYS[model_type]
    pos, ffn, norm, _ = next(a for a, mt in ARCHITECTURES.items() if mt == model_type)
    d = cfg[keys["d_model"]]
    heads = cfg[keys["heads"]]
    d_ff = cfg.get(keys["d_ff"]) or 4 * d  # GPT-2: n_inner null means 4·d
    return Knobs(
        d_model=d, layers=cfg[keys["layers"]], heads=heads,
        kv_heads=cfg.get(keys.get("kv_heads", ""), heads) or heads,
        head_dim=cfg.get(keys.get("head_dim", "")),  # None: derived (d_model / heads)
        d_ff=d_ff, vocab=cfg[keys["vocab"]], tied=bool(cfg[keys["tied"]]),
        max_positions=cfg[keys["max_positions"]], ffn=ffn, norm=norm, positions=pos,
        experts=cfg.get(keys.get("experts", ""), 1) or 1,
        top_k=cfg.get(keys.get("top_k", ""), 1) or 1,
    )


def build(k: Knobs) -> tuple[str, list[str]]:
    """The model type and the ``--set`` overrides (only fields that differ from its defaults)."""
    model_type = model_type_for(k)
    keys = KEYS[model_type]
    # head_dim the class derives (d_model / heads, where its default leaves it null) is not set,
    # so the command re-derives it as building the class would; any other is set as given
    derived = k.d_model // k.heads if k.heads > 0 else 0
    start_derives = knobs_of(model_type).head_dim is None
    given_head_dim = None if start_derives and k.head_dim in (None, derived) else k.head_dim
    if k.head_dim is None:
        k = replace(k, head_dim=k.d_model // k.heads if k.heads > 0 else 0)
    if "kv_heads" not in keys and k.kv_heads != k.heads:
        raise UsageError(f"{model_type} has no grouped-query attention: KV heads ({k.kv_heads}) "
                         f"must equal heads ({k.heads})")
    if "head_dim" not in keys and (k.head_dim or 0) * k.heads != k.d_model:
        raise UsageError(f"{model_type} has no head_dim field: head_dim ({k.head_dim}) × heads "
                         f"({k.heads}) must equal d_model ({k.d_model})")
    start = knobs_of(model_type)
    sets = []
    for f in fields(Knobs):
        key = keys.get(f.name)
        value = given_head_dim if f.name == "head_dim" else getattr(k, f.name)
        if key is not None and value is not None and value != getattr(start, f.name):
            sets.append(f"{key}={_yaml(value)}")
    return model_type, sets


def _yaml(value: Any) -> str:
    return ("true" if value else "false") if isinstance(value, bool) else str(value)
