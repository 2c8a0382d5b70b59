"""A supported ``model_type`` as a model: the config its transformers class builds with no arguments.

``llmcalc count llama --set hidden_size=2048`` starts from ``LlamaConfig()`` (which mirrors
Llama-2-7B), as ``AutoConfig.for_model("llama")`` would build it. The fields are stored in
``family_defaults.json`` beside this module, so transformers is not imported at run time;
``python -m llmcalc.family_defaults`` regenerates the file from the installed transformers, and a
test checks that it has not drifted.
"""

from __future__ import annotations

import functools
import json
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
    return sorted(_table()["defaults"])


def defaults(model_type: str) -> dict[str, Any] | None:
    """The default config fields of ``model_type`` (a fresh copy), or None if it has none."""
    fields = _table()["defaults"].get(model_type)
    return None if fields is None else json.loads(json.dumps(fields))


# Sub-configs of whole models that are no model of their own here (vision towers); their class
# defaults are stored with those of every supported type, for a composite config whose
# text_config / vision_config names only some fields.
SUB_CONFIG_TYPES = (
    "clip_vision_model", "siglip_vision_model", "pixtral", "internvl_vision", "idefics3_vision",
    "smolvlm_vision", "got_ocr2_vision", "qwen2_vl_vision", "qwen2_vl_text", "qwen2_5_vl_vision",
    "qwen2_5_vl_text", "llama4_vision_model", "qwen3_vl_vision", "qwen3_vl_text",
    "qwen3_vl_moe_vision", "qwen3_vl_moe_text", "qwen3_5_vision", "qwen3_5_moe_vision",
    "phi4_multimodal_vision", "phi4_multimodal_audio", "moss_transcribe_diarize_audio",
    "qwen4_exp_vision",
    "mllama_text_model", "mllama_vision_model",
)


def sub_defaults(model_type: str) -> dict[str, Any] | None:
    """The declared class defaults of a sub-config's ``model_type`` (a vision tower's, a text
    model's; a composite's own sub-configs under text_config / vision_config), or None."""
    fields = _table()["sub_configs"].get(model_type)
    return None if fields is None else dict(json.loads(json.dumps(fields)))


def source(model_type: str) -> str:
    """Where the defaults come from, as the output states it."""
    cls = _table()["classes"][model_type]
    return (f"{cls}() defaults of transformers {transformers_version()} "
            f"(AutoConfig.for_model({model_type!r})), not a published checkpoint")


def generate() -> dict[str, Any]:
    """Build the table from the installed transformers (only for regenerating the data file)."""
    from transformers import AutoConfig, PretrainedConfig, __version__

    from llmcalc.families import MODEL_TYPES

    base = PretrainedConfig().to_dict()
    out: dict[str, Any] = {"transformers_version": __version__, "classes": {}, "defaults": {}}
    for model_type in MODEL_TYPES:
        cfg = AutoConfig.for_model(model_type)
        fields = cfg.to_dict()
        # keep what the class sets; PretrainedConfig's generic bookkeeping is left out
        out["defaults"][model_type] = {
            k: v for k, v in fields.items()
            if k not in base or v != base[k] or k in ("model_type", "tie_word_embeddings")
        }
        out["classes"][model_type] = type(cfg).__name__
    # a sub-config is built from its class's declared defaults (derived fields such as head_dim
    # are left unset, to follow the sub-config's own sizes), so these are stored apart
    out["sub_configs"] = {}
    for model_type in (*MODEL_TYPES, *SUB_CONFIG_TYPES):
        cls = type(AutoConfig.for_model(model_type))
        fields = json.loads(json.dumps(cls.default_config_fields(), default=str))  # type: ignore[no-untyped-call]
        out["sub_configs"][model_type] = {
            k: v for k, v in fields.items() if k not in base or v != base[k]
        }
    return out


if __name__ == "__main__":
    DATA.write_text(json.dumps(generate(), indent=1, sort_keys=True) + "\n", encoding="utf-8")
