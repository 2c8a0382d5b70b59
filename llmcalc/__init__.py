"""llmcalc: exact parameter counts, FLOPs and memory of transformer decoders from their configs.

    >>> import llmcalc
    >>> spec = llmcalc.load_spec("gpt2-medium")        # a bundled name, a config.json, a folder, YAML
    >>> llmcalc.count(spec).total
    354823168
"""

from llmcalc.config import load_spec, spec_from_dict
from llmcalc.counting import GroupCount, ParamCount, count
from llmcalc.errors import (
    ConfigError,
    LLMCalcError,
    MissingExtraError,
    UnknownModelError,
    UsageError,
)
from llmcalc.spec import Attention, LayerGroup, ModelSpec, MoE, Shape, Tensor

__version__ = "0.1.0"

__all__ = [
    "Attention",
    "ConfigError",
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
    "count",
    "load_spec",
    "spec_from_dict",
]
