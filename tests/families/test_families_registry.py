"""Every registered model type points at a real config class and describe function."""

from __future__ import annotations

import pytest

from llmcalc.families import MODEL_TYPES, FamilyConfig


@pytest.mark.parametrize("model_type", sorted(MODEL_TYPES))
def test_family_entry_resolves(model_type: str) -> None:
    fam = MODEL_TYPES[model_type]
    assert issubclass(fam.config, FamilyConfig)
    assert callable(fam.describe)
    assert fam.config.transformers_class, model_type


def test_the_table_is_in_alphabetical_order() -> None:
    assert list(MODEL_TYPES) == sorted(MODEL_TYPES)
