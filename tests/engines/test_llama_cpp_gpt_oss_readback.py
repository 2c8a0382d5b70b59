"""A gpt-oss GGUF read back (llmcalc.inputs.gguf_model: general.architecture gpt-oss) held to the
real llama.cpp (llama-cpp-python 0.3.36): the parameters it prints ("model params"), its mapped
model buffer and which layers it gives a sliding window ("is_swa") are those of the description
llmcalc counts. llmcalc does not yet follow llama.cpp's own buffers for gpt-oss (memory --engine
llama.cpp refuses it); its figures are transformers' convention. Marked `llamacpp`."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest
from helpers import tiny_gguf

pytestmark = pytest.mark.llamacpp

SHAPES = {"n_layer": 4, "d": 256, "n_head": 8, "n_kv": 2, "head": 64, "ff": 384, "n_expert": 4,
          "vocab": 1000, "swa": 128}


def test_llama_cpp_loads_the_model_llmcalc_describes(cli: Any, tmp_path: Path) -> None:
    from helpers import llama_engine

    path = tiny_gguf.write(tmp_path / "gpt-oss.gguf", "gpt-oss", **SHAPES)
    engine = llama_engine.run(str(path), n_ctx=1024)
    count = cli("count", str(path), "--json").json()
    memory = cli("memory", str(path), "--json").json()
    printed = re.search(r"model params\s+=\s+([\d.]+) M", engine["log"])
    assert printed is not None and float(printed.group(1)) == round(count["total_params"] / 1e6, 2)
    assert engine["model"] == round(memory["weights_bytes"] / 2**20, 2)
    swa = re.findall(r"layer +(\d+) assigned to device CPU, is_swa = (\d)", engine["log"])
    layers = count["num_layers"]
    assert [int(s) for i, s in swa if int(i) < layers] == [1, 0, 1, 0]
    assert [(g["name"], g["num_layers"]) for g in count["groups"]] == [
        ("sliding_attention", 2), ("full_attention", 2)]
