"""Small configs: quick to build on the meta device or run on the CPU, exact numbers easy to check
by hand. :func:`tiny` is the one maker; the bases below are the sizes the tests start from."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

# 106,816 parameters: embeddings 2 × 256·64, per layer q 64·64, k/v 32·64, o 64·64, MLP 3 × 64·128,
# two norms of 64; final norm 64.
TINY_LLAMA = {
    "model_type": "llama",
    "hidden_size": 64,
    "intermediate_size": 128,
    "num_hidden_layers": 2,
    "num_attention_heads": 4,
    "num_key_value_heads": 2,
    "vocab_size": 256,
    "max_position_embeddings": 512,
    "tie_word_embeddings": False,
}

# vocab 100, d = 32: the sizes a family's own switches are put over
MINIMAL: dict[str, Any] = {"vocab_size": 100, "hidden_size": 32}
# the same with 3 layers
THREE_LAYERS: dict[str, Any] = {**MINIMAL, "num_hidden_layers": 3}
# the same with the special token ids some config classes require below the vocabulary size
THREE_LAYERS_TOKENS: dict[str, Any] = {**THREE_LAYERS, "pad_token_id": 0, "bos_token_id": 1,
                                       "eos_token_id": 2}
# 3 layers, d = 64, 8 heads of 8, ff 96, vocab 1000
DENSE: dict[str, Any] = {"vocab_size": 1000, "num_hidden_layers": 3, "hidden_size": 64,
                         "num_attention_heads": 8, "intermediate_size": 96}
# 4 layers, d = 64, 8 heads (2 kv heads), ff 96, vocab 1000
DECODER: dict[str, Any] = {"vocab_size": 1000, "num_hidden_layers": 4, "hidden_size": 64,
                           "num_attention_heads": 8, "num_key_value_heads": 2,
                           "intermediate_size": 96}


def tiny(model_type: str, /, *, base: Mapping[str, Any] = MINIMAL, **fields: Any) -> dict[str, Any]:
    """A small config of ``model_type``: ``base`` with ``fields`` put over it. A test module binds
    its own sizes once: ``tiny = partial(configs.tiny, base=configs.DENSE)``."""
    return {"model_type": model_type, **base, **fields}
