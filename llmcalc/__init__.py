"""llmcalc: exact parameter counts, FLOPs and memory of transformer decoders from their configs.

    >>> import llmcalc
    >>> spec = llmcalc.load_spec("gpt2-medium")        # a bundled name, a config.json, a folder, YAML
    >>> llmcalc.count(spec).total
    354823168
    >>> llmcalc.kv_cache_bytes_per_token(llmcalc.load_spec("llama-2-7b"), dtype=llmcalc.DType.bf16)
    524288
"""

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from llmcalc.errors import (
        ConfigError,
        LLMCalcError,
        MissingExtraError,
        UnknownModelError,
        UsageError,
    )
    from llmcalc.formulas.counting import GroupCount, ParamCount, count
    from llmcalc.formulas.flops import (
        attention_flops_per_token,
        forward_flops_per_sequence,
        forward_flops_per_token,
        training_flops_per_token,
        weight_flops_per_token,
    )
    from llmcalc.formulas.memory import kv_cache_bytes, kv_cache_bytes_per_token, weight_bytes
    from llmcalc.inputs.config import load_spec, spec_from_dict
    from llmcalc.model.spec import Attention, LayerGroup, ModelSpec, MoE, Shape, Tensor
    from llmcalc.units import DType, parse_context, parse_count, parse_dtype

# public name → the module that defines it; imported on first use, so that the command line
# (llmcalc.cli) loads only what a command needs
_HOME = {
    **dict.fromkeys(("load_spec", "spec_from_dict"), "inputs.config"),
    **dict.fromkeys(("GroupCount", "ParamCount", "count"), "formulas.counting"),
    **dict.fromkeys(("ConfigError", "LLMCalcError", "MissingExtraError", "UnknownModelError",
                     "UsageError"), "errors"),
    **dict.fromkeys(("attention_flops_per_token", "forward_flops_per_sequence",
                     "forward_flops_per_token", "training_flops_per_token",
                     "weight_flops_per_token"), "formulas.flops"),
    **dict.fromkeys(("kv_cache_bytes", "kv_cache_bytes_per_token", "weight_bytes"), "formulas.memory"),
    **dict.fromkeys(("Attention", "LayerGroup", "ModelSpec", "MoE", "Shape", "Tensor"), "model.spec"),
    **dict.fromkeys(("DType", "parse_context", "parse_count", "parse_dtype"), "units"),
}


def __getattr__(name: str) -> Any:
    if name in _HOME:
        import importlib

        value = getattr(importlib.import_module(f"llmcalc.{_HOME[name]}"), name)
        globals()[name] = value
        return value
    raise AttributeError(f"module 'llmcalc' has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted([*globals(), *_HOME])


__version__ = "0.1.0"

__all__ = [
    "Attention",
    "ConfigError",
    "DType",
    "GroupCount",
    "LLMCalcError",
    "LayerGroup",
    "MissingExtraError",
    "ModelSpec",
    "MoE",
    "ParamCount",
    "Shape",
    "Tensor",
    "UnknownModelError",
    "UsageError",
    "attention_flops_per_token",
    "count",
    "forward_flops_per_sequence",
    "forward_flops_per_token",
    "kv_cache_bytes",
    "kv_cache_bytes_per_token",
    "load_spec",
    "parse_context",
    "parse_count",
    "parse_dtype",
    "spec_from_dict",
    "training_flops_per_token",
    "weight_bytes",
    "weight_flops_per_token",
]
