"""llama.cpp's mix for every file type llama-quantize writes (gguf_mix, llama_cpp_quant.mix_types)
held to the real quantizer (llama-cpp-python 0.3.36's ``llama_model_quantize`` with ``dry_run``:
the type it picks for each tensor, printed per tensor, nothing written): tiny GGUFs of dense, GQA,
fused-qkv, 4- and 8-expert, shared-expert and tied-embedding models, rows that are not whole 256-blocks, each quantized
with and without an importance matrix; every tensor's type must be the engine's. Marked
`llamacpp`: CI installs the engine, never skips."""

from __future__ import annotations

import ctypes
import re
from pathlib import Path
from typing import Any

import pytest
from helpers import llama_engine, tiny_gguf

from llmcalc.formulas import gguf_mix
from llmcalc.inputs.gguf_file import read_header
from llmcalc.planning.engines.llama_cpp_quant import mix_types

pytestmark = pytest.mark.llamacpp

# llama.h enum llama_ftype
FTYPE = {"q4_0": 2, "q4_1": 3, "q8_0": 7, "q5_0": 8, "q5_1": 9, "q2_k": 10, "q3_k_s": 11,
         "q3_k_m": 12, "q3_k_l": 13, "q4_k_s": 14, "q4_k_m": 15, "q5_k_s": 16, "q5_k_m": 17,
         "q6_k": 18, "iq2_xxs": 19, "iq2_xs": 20, "q2_k_s": 21, "iq3_xs": 22, "iq3_xxs": 23,
         "iq1_s": 24, "iq4_nl": 25, "iq3_s": 26, "iq3_m": 27, "iq2_s": 28, "iq2_m": 29,
         "iq4_xs": 30, "iq1_m": 31, "tq1_0": 36, "tq2_0": 37, "mxfp4_moe": 38}
# tiny models: (arch, writer's keywords); 16 and 24 layers so that use_more_bits, n/8 and n/16
# pick different layers
MODELS: dict[str, tuple[str, dict[str, Any]]] = {
    "llama-gqa4": ("llama", {"n_layer": 16, "n_head": 8, "n_kv": 2}),
    "llama-mha-tied": ("llama", {"n_layer": 24, "n_head": 4, "n_kv": 4, "tied": True}),
    "llama-8-experts": ("llama", {"n_layer": 16, "n_head": 4, "n_kv": 4, "n_expert": 8}),
    "qwen2moe-shared": ("qwen2moe", {"n_layer": 16, "n_head": 4, "n_kv": 2, "n_expert": 4}),
    "phi3-qkv": ("phi3", {"n_layer": 16, "n_head": 4, "n_kv": 4}),
    "qwen3moe-gqa": ("qwen3moe", {"n_layer": 24, "n_head": 8, "n_kv": 2, "n_expert": 4}),
    "gemma2-no-output": ("gemma2", {"n_layer": 16, "n_head": 4, "n_kv": 2}),
    # rows of 288 / 352: whole 32-blocks, not 256-blocks (tensor_type_fallback)
    "llama-odd-rows": ("llama", {"n_layer": 16, "d": 288, "n_head": 4, "n_kv": 4, "ff": 352,
                                 "vocab": 544}),
}


class _Imatrix(ctypes.Structure):
    _fields_ = [("name", ctypes.c_char_p), ("data", ctypes.POINTER(ctypes.c_float)),
                ("size", ctypes.c_size_t)]


def _engine_types(path: Path, quant: str, *, imatrix: bool) -> dict[str, str]:
    """The quantizer's dry run: each tensor's target type, from its per-tensor log lines."""
    L = llama_engine.L
    llama_engine._LOG.clear()
    params = L.llama_model_quantize_default_params()
    params.ftype, params.dry_run, params.nthread = FTYPE[quant], True, 1
    end = (_Imatrix * 1)()  # an empty importance matrix (its terminator): qs.has_imatrix
    if imatrix:
        params.imatrix = ctypes.cast(end, type(params.imatrix))
    rc = L.llama_model_quantize(str(path).encode(), str(path.with_suffix(".out")).encode(),
                                ctypes.byref(params))
    text = "".join(llama_engine._LOG)
    assert rc == 0, text[-2000:]
    out = {}
    for m in re.finditer(r"\]\s+(\S+)\s+- \[[^\]]*\], type =\s+(\w+), size =[^\n(]*(?:\((\w+)\))?",
                         text):
        out[m.group(1)] = (m.group(3) or m.group(2)).upper()
    return out


@pytest.fixture(scope="module")
def ggufs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    folder = tmp_path_factory.mktemp("quantizer")
    return {name: tiny_gguf.write(folder / f"{name}.gguf", arch, **kw)
            for name, (arch, kw) in MODELS.items()}


@pytest.mark.parametrize("imatrix", [False, True])
@pytest.mark.parametrize("model", list(MODELS))
def test_every_file_type_gives_the_quantizers_type_to_every_tensor(
        ggufs: dict[str, Path], model: str, imatrix: bool) -> None:
    arch, kw = MODELS[model]
    header = read_header(ggufs[model])
    tensors = [(t.name, t.shape) for t in header.tensors]
    n_layer, n_head = kw["n_layer"], kw["n_head"]
    names = {n for n, _ in tensors}
    differ: list[str] = []
    for quant in gguf_mix.QUANT_TYPES:
        engine = _engine_types(ggufs[model], quant, imatrix=imatrix)
        assert set(engine) == names
        m = gguf_mix.Model(quant, n_layer, kw.get("n_expert", 0), "output.weight" not in names,
                           False, n_head // kw["n_kv"], imatrix)
        ours = dict(zip(names_in_order := [n for n, _ in tensors],
                        mix_types(tensors, m, gguf_mix.QUANT_TYPES[quant], n_layer), strict=True))
        differ += [f"{quant} {n}: ours {ours[n]}, engine {engine[n]}" for n in names_in_order
                   if ours[n] != engine[n]]
    assert differ == []
