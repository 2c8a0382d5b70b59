"""The supported architectures: ``model_type`` → the config fields it reads and the tensors it makes.

To add a family: write a module here with a :class:`FamilyConfig` subclass and a ``describe``
function returning an :class:`Architecture`, then list its model types in ``MODEL_TYPES`` below.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from llmcalc.families import gpt2, llama
from llmcalc.families._base import Architecture, FamilyConfig, FieldError


@dataclass(frozen=True)
class Family:
    """How one ``model_type`` is read (``config``) and described (``describe``)."""

    module: str
    config: type[FamilyConfig]
    describe: Callable[[Any], Architecture]


MODEL_TYPES: dict[str, Family] = {
    "gpt2": Family("gpt2", gpt2.GPT2Config, gpt2.describe),
    "llama": Family("llama", llama.LlamaConfig, llama.describe),
    "mistral": Family("llama", llama.MistralConfig, llama.describe),
    "gemma": Family("llama", llama.GemmaConfig, llama.describe),
    # -- dense families --
    # -- mixture-of-experts, MLA and layer-typed families --
}

__all__ = ["MODEL_TYPES", "Architecture", "Family", "FamilyConfig", "FieldError"]
