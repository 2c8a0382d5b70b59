"""A supported ``model_type`` as a model: the config its transformers class builds with no arguments.

``llmcalc count llama --set hidden_size=2048`` starts from ``LlamaConfig()`` (which mirrors
Llama-2-7B), as ``AutoConfig.for_model("llama")`` would build it. The fields are stored in
``family_defaults.json`` beside this module, so transformers is not imported at run time;
``python -m llmcalc.inputs.family_defaults`` regenerates the file from the installed transformers, and a
test checks that it has not drifted.
"""

from __future__ import annotations

import dataclasses
import functools
import json
from collections.abc import Collection
from pathlib import Path
from typing import Any

DATA = Path(__file__).with_name("family_defaults.json")


@functools.cache
def _table() -> dict[str, Any]:
    data: dict[str, Any] = json.loads(DATA.read_text(encoding="utf-8"))
    return data


def transformers_version() -> str:
    """The transformers version the stored defaults were taken from."""
    return str(_table()["transformers_version"])


def model_types() -> list[str]:
    """The model types that have stored defaults."""
    return sorted(_table()["classes"])


def defaults(model_type: str) -> dict[str, Any] | None:
    """The default config of ``model_type`` (a fresh copy): its class's declared defaults and its
    model_type, or None if it has none. A field whose declared default is None is left out: the
    class derives it from the others (LlamaConfig's head_dim from hidden_size and the heads), so
    ``--set hidden_size=…`` re-derives it as ``LlamaConfig(hidden_size=…)`` would."""
    if model_type not in _table()["classes"]:
        return None
    return {"model_type": model_type, **(sub_defaults(model_type) or {})}


# Sub-configs of whole models that are no model of their own here (vision towers); their class
# defaults are stored with those of every supported type, for a composite config whose
# text_config / vision_config names only some fields.
SUB_CONFIG_TYPES = (
    "clip_vision_model", "siglip_vision_model", "pixtral", "internvl_vision", "idefics3_vision",
    "smolvlm_vision", "got_ocr2_vision", "qwen2_vl_vision", "qwen2_vl_text", "qwen2_5_vl_vision",
    "qwen2_5_vl_text", "llama4_vision_model", "qwen3_vl_vision", "qwen3_vl_text",
    "qwen3_vl_moe_vision", "qwen3_vl_moe_text", "qwen3_5_vision", "qwen3_5_moe_vision",
    "phi4_multimodal_vision", "phi4_multimodal_audio", "moss_transcribe_diarize_audio",
    "qwen4_exp_vision", "gemma3n_vision", "gemma3n_audio", "gemma4_vision", "gemma4_audio",
    "gemma4_unified_vision", "gemma4_unified_audio",
    "mllama_text_model", "mllama_vision_model", "emu3_text_model",
    "blt_patcher", "blt_local_encoder", "blt_local_decoder", "blt_global_transformer",
    "git_vision_model",
)


def sub_defaults(model_type: str) -> dict[str, Any] | None:
    """The declared class defaults of ``model_type`` (a supported type's; a sub-config's: a vision
    tower's, a text model's; a composite's own sub-configs under text_config / vision_config, each
    with its model_type), or None."""
    fields = _table()["declared"].get(model_type)
    return None if fields is None else dict(json.loads(json.dumps(fields)))


def dealiased(fields: dict[str, Any], model_type: str | None = None,
              keep: Collection[str] = ()) -> dict[str, Any]:
    """``fields`` read through the class's ``attribute_map`` as transformers reads them, sub-configs
    (a dict with a ``model_type``) walked into: the one place aliases are resolved, so a family reads
    the declared names alone. transformers' dataclass ``__init__`` (configuration_utils.py) sets the
    declared fields first, through ``__setattr__``, which maps an alias to its field; the keys it
    does not declare are set after them (``__post_init__``): so of a declared name and an undeclared
    one that name one attribute, the undeclared one wins, null or not (Kolibri-1 declares
    ``num_experts`` and maps it to ``num_local_experts``; Zamba 2 declares ``layers_block_type``
    and maps ``layer_types`` to it). The table stores each alias as undeclared → declared. ``keep``:
    names a family reads itself (what the class derives from the declared one before the alias
    lands: Zamba 2's hybrid layers)."""
    aliases = _table()["aliases"].get(model_type or fields.get("model_type"), {})
    out = {k: v for k, v in fields.items() if k not in aliases or k in keep}
    for key, value in fields.items():
        if key in aliases and key not in keep:
            out[aliases[key]] = value
    for key, value in out.items():
        if isinstance(value, dict) and "model_type" in value:
            out[key] = dealiased(value)
    return out


def declared_names(model_type: str) -> set[str]:
    """The names ``model_type``'s class maps through its ``attribute_map`` (both sides), where the
    table stores them; the declared fields themselves are :func:`sub_defaults`'s keys."""
    aliases: dict[str, str] = _table().get("aliases", {}).get(model_type, {})
    return set(aliases) | set(aliases.values())


def source(model_type: str) -> str:
    """Where the defaults come from, as the output states it."""
    cls = _table()["classes"][model_type]
    return (f"{cls}() defaults of transformers {transformers_version()} "
            f"(AutoConfig.for_model({model_type!r})), not a published checkpoint")


def generate() -> dict[str, Any]:
    """Build the table from the installed transformers (only for regenerating the data file): the
    declared defaults of each config class (its dataclass fields' defaults, as
    ``default_config_fields`` collects them), not the attributes ``__init__`` derives from them."""
    from transformers import CONFIG_MAPPING, PretrainedConfig, __version__

    from llmcalc.families import MODEL_TYPES

    base = PretrainedConfig().to_dict()
    out: dict[str, Any] = {"transformers_version": __version__, "classes": {}, "declared": {},
                           "aliases": {}}
    for model_type in (*MODEL_TYPES, *SUB_CONFIG_TYPES):
        cls = CONFIG_MAPPING[model_type]  # the class, even one whose defaults it refuses itself
        if cls.attribute_map:  # as undeclared name → declared one (see dealiased)
            declared = {f.name for f in dataclasses.fields(cls)}
            out["aliases"][model_type] = {
                (v if k in declared and v not in declared else k): (k if k in declared and v not in declared else v)
                for k, v in cls.attribute_map.items()
            }
        if model_type in MODEL_TYPES:
            out["classes"][model_type] = cls.__name__
        fields = json.loads(json.dumps(cls.default_config_fields(), default=str))  # type: ignore[no-untyped-call]
        for key, spec in (getattr(cls, "sub_configs_defaults", None) or {}).items():
            if isinstance(fields.get(key), dict):  # which class the sub-config's defaults are
                fields[key] = {"model_type": spec.model_type, **fields[key]}
        out["declared"][model_type] = {
            k: v for k, v in fields.items()
            if k not in base or v != base[k] or k == "tie_word_embeddings"
        }
    return out


if __name__ == "__main__":
    DATA.write_text(json.dumps(generate(), indent=1, sort_keys=True) + "\n", encoding="utf-8")
