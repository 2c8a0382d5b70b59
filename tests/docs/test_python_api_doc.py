"""docs/python-api.md documents every name in llmcalc.__all__, and its example's figures hold."""

from __future__ import annotations

import re

from helpers import REPO

import llmcalc
from llmcalc import DType

DOC = (REPO / "docs" / "python-api.md").read_text()


def test_every_exported_name_is_documented() -> None:
    listed = set(re.findall(r"^- `(\w+)", DOC, flags=re.M)) | set(
        re.findall(r"`(\w+)\(", DOC)) | set(re.findall(r"`(\w+)`[,:]", DOC))
    assert sorted(set(llmcalc.__all__) - listed) == []


def test_the_example_figures() -> None:
    spec = llmcalc.load_spec("gpt2")
    assert llmcalc.count(spec).total == 124_439_808
    assert llmcalc.weight_bytes(spec, dtype=DType.bf16) == 248_879_616
    assert llmcalc.kv_cache_bytes_per_token(spec, dtype=DType.bf16) == 36_864 == 2 * 12 * 768 * 2
    assert llmcalc.kv_cache_bytes(spec, batch=1, ctx=1024, dtype=DType.bf16) == 37_748_736
    assert llmcalc.weight_flops_per_token(spec) == 247_064_064
    assert llmcalc.forward_flops_per_token(spec, ctx=1024) == 284_812_800
    for figure in ("124,439,808", "248,879,616", "36,864", "37,748,736", "247,064,064",
                   "284,812,800"):
        assert f"# {figure}" in DOC, figure
