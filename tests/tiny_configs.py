"""Small configs shared by tests: quick to build, exact numbers easy to check by hand."""

from __future__ import annotations

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
