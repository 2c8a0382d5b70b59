"""The causal-LM model types of transformers 5.24 that llmcalc does not count, each with the reason.

``tests/families/test_every_causal_lm.py`` walks transformers' ``MODEL_FOR_CAUSAL_LM_MAPPING_NAMES``
and requires every type to be either counted exactly (it is in ``MODEL_TYPES``) or listed here;
docs/models.md shows this table (checked by the same test). A type leaves the table when a family
counts it.
"""

from __future__ import annotations

ENC_DEC = "decoder of an encoder–decoder model (cross-attention)"
ENCODER = "encoder (masked-LM) model with a causal-LM head"
MULTIMODAL = "multimodal or composite model"
NO_DEFAULT = "transformers 5.24 cannot build its default config"

NOT_COUNTED: dict[str, str] = {
    "musicgen": ENC_DEC,
    "musicgen_melody": ENC_DEC,
}
