"""config.json files as current transformers writes them (every default spelled out, renamed keys,
``layer_types`` lists) count the same as the bundled configs they came from."""

from __future__ import annotations

from pathlib import Path

import pytest

from llmcalc import count, load_spec
from llmcalc.inputs import bundled
from llmcalc.verify.reference import hf_config

CONFIGS = [p.stem for p in bundled.paths()]


@pytest.mark.torch
@pytest.mark.parametrize("name", CONFIGS)
def test_saved_config_counts_the_same(name: str, tmp_path: Path) -> None:
    spec = load_spec(name)
    hf_config(spec).save_pretrained(tmp_path)
    again = load_spec(str(tmp_path))
    assert count(again).breakdown == count(spec).breakdown
    assert again.layer_groups == spec.layer_groups
