"""llama.cpp's quant mix (formulas.gguf_mix), read by two paths that must weigh the same weights
alike: the bytes of an HF config at ``--dtype q4_k_m`` (formulas.quant, no engine) and the GGUF
llama.cpp's converter and llama-quantize would write of it (planning.engines.llama_cpp_quant, for
``--engine llama.cpp``) — each walking the model its own way (HF tensors by layer runs; GGUF names in
the quantizer's order). The rules are held to vendor/llama.cpp src/llama-quant.cpp (llama-cpp-python
0.3.36) and, through the published TheBloke tables, in tests/engines and tests/inputs."""

from __future__ import annotations

from collections import Counter
from typing import Any

import pytest

from llmcalc import load_spec
from llmcalc.formulas import gguf_mix
from llmcalc.formulas.quant import FORMATS, breakdown, layer_weight_bytes, weight_bytes
from llmcalc.planning.engines.llama_cpp_quant import convert

# dense; 8-expert MoE (llama.cpp's bumps); 128-expert MoE; shared experts with rows of 1,408;
# fused qkv (phi3); rows of 1,152 with tied embeddings and two attention groups (gemma3); rows of
# 896, tied (qwen2); an 80-layer qwen2 (LLM_TYPE_70B's Q5_K attn_v)
MODELS = ["llama-2-7b", "mixtral-8x7b", "qwen3-30b-a3b", "qwen1.5-moe-a2.7b", "phi-3-mini-4k",
          "gemma-3-1b", "qwen2.5-0.5b", "qwen2.5-72b-instruct"]
TYPE_OF_LAYOUT = {"f32": "F32", "fp16": "F16"}


def _converted(model: str, quant: str) -> Any:
    h = convert(load_spec(model), quant).header
    # the RoPE factors the converter precomputes are not model parameters
    return [t for t in h.tensors if not t.name.startswith("rope_")]


@pytest.mark.parametrize("quant", ["q4_k_m", "q4_0", "q8_0"])
@pytest.mark.parametrize("model", MODELS)
def test_both_paths_give_every_type_the_same_elements_and_bytes(model: str, quant: str) -> None:
    spec = load_spec(model)
    tensors = _converted(model, quant)
    by_type: dict[str, list[int]] = {}
    by_layer = [0] * spec.num_layers
    for t in tensors:
        row = by_type.setdefault(t.type, [0, 0])
        row[0] += t.elements
        row[1] += t.nbytes
        if t.name.startswith("blk."):
            by_layer[int(t.name.split(".")[1])] += t.nbytes
    ours = {TYPE_OF_LAYOUT.get(p.layout, p.layout): [p.elements, p.bytes]
            for p in breakdown(spec, FORMATS[quant])}
    assert ours == by_type
    assert layer_weight_bytes(spec, FORMATS[quant]) == by_layer


@pytest.mark.parametrize("quant", [q for q in gguf_mix.QUANT_TYPES
                                   if q not in ("q4_k_m", "q4_0", "q8_0")])
@pytest.mark.parametrize("model", MODELS)
def test_every_llama_quantize_type_weighs_the_same_on_both_paths(model: str, quant: str) -> None:
    test_both_paths_give_every_type_the_same_elements_and_bytes(model, quant)


@pytest.mark.parametrize("model", ["phi-3-mini-4k", "qwen1.5-moe-a2.7b"])
def test_memory_without_an_engine_weighs_the_converted_file(cli: Any, model: str) -> None:
    plain = cli("memory", model, "--dtype", "q4_k_m", "--json")
    engine = cli("memory", model, "--engine", "llama.cpp", "--dtype", "q4_k_m", "--json")
    assert plain.code == engine.code == 0, plain.stderr + engine.stderr
    data = sum(t.nbytes for t in _converted(model, "q4_k_m"))
    assert plain.json()["weights_bytes"] == data
    # the engine's buffer: the same tensors, each padded to the file's 32-byte alignment
    assert engine.json()["model_buffer_bytes"] >= data


def test_fused_qkv_is_attn_v_like() -> None:
    # category_is_attn_v takes ATTENTION_QKV, so the ATTENTION_QKV branch (Q5_K) is never reached:
    # phi-3-mini's qkv [9,216 × 3,072] is Q6_K in the 16 layers use_more_bits picks, Q4_K in 16
    spec = load_spec("phi-3-mini-4k")
    qkv = weight_bytes(spec, FORMATS["q4_k_m"], select=lambda t: t.component == "attn/qkv")
    assert qkv == 9216 * 16 * (12 * 210 + 12 * 144) == 626_393_088


def test_llama_cpp_s_seventy_b_rule_and_fallbacks() -> None:
    # LLM_TYPE_70B (80 layers, GQA): attn_v Q5_K outside use_more_bits' layers; ffn_down rows of
    # 29,568 are not whole 256-blocks: Q6_K → Q8_0, Q4_K → Q5_0 (tensor_type_fallback)
    types = {t.name: t.type for t in _converted("qwen2.5-72b-instruct", "q4_k_m")}
    assert Counter(types[f"blk.{i}.attn_v.weight"] for i in range(80)) == {"Q6_K": 40, "Q5_K": 40}
    assert Counter(types[f"blk.{i}.ffn_down.weight"] for i in range(80)) == {"Q8_0": 40,
                                                                             "Q5_0": 40}
    # a tied token_embd takes the output's type: rows of 896 are not whole Q4_K blocks → Q8_0
    small = {t.name: t.type for t in _converted("qwen2.5-0.5b", "q4_k_m")}
    assert small["token_embd.weight"] == "Q8_0" and "output.weight" not in small


def test_the_counts_follow_the_attention_layers_not_the_layer_numbers() -> None:
    # llama_tensor_get_type_impl: use_more_bits(i_attention_wv, n_attention_wv) — the i-th attn_v
    # of all; in a model whose attention is in every 4th layer of 32, that is 8 tensors
    from llmcalc.model.spec import LayerSet, Tensor

    v = Tensor("model.layers.{i}.self_attn.v_proj.weight", (1024, 4096), "attn/v_proj",
               matmul=True)
    every_4th = LayerSet.of(range(3, 32, 4))
    counter = gguf_mix.Counter((((v.name, every_4th),)), 8, False)
    places = [counter.place(v.name, i) for i in every_4th]
    assert places == list(range(8))
    # use_more_bits(i, 8): the first and last eighth (0, 7) and every third between (3, 6)
    assert counter.more_count(v.name, every_4th) == 4
    assert [gguf_mix.use_more_bits(i, 8) for i in range(8)] == [True, False, False, True, False,
                                                                 False, True, True]


def test_gpt_oss_120b_mxfp4_moe_weighs_what_llama_bench_printed() -> None:
    # llama-quant.cpp, MXFP4_MOE: 3-D expert tensors MXFP4 (17 B per 32), every other quantized
    # tensor Q8_0, output Q8_0; llama-bench on ggml-org's file (llama.cpp PR #19922,
    # https://github.com/ggml-org/llama.cpp/pull/19922): "| gpt-oss 120B MXFP4 MoE | 59.02 GiB |
    # 116.83 B | ROCm | …"
    rows = {p.layout: (p.elements, p.bytes) for p in breakdown(load_spec("gpt-oss-120b"),
                                                               FORMATS["mxfp4_moe"])}
    assert set(rows) == {"MXFP4", "Q8_0", "f32"}
    size = sum(b for _, b in rows.values())
    params = sum(n for n, _ in rows.values())
    assert (f"{size / 2**30:.2f}", f"{params / 1e9:.2f}") == ("59.02", "116.83")
    # the experts: 36 layers × 128 experts × (gate_up 5,760 × 2,880 + down 2,880 × 2,880)
    assert rows["MXFP4"] == (114_661_785_600, 114_661_785_600 // 32 * 17)


@pytest.mark.parametrize(("name", "quant"), [
    ("Q4_K - Medium", "q4_k_m"), ("Q5_K - Small", "q5_k_s"), ("Q2_K - Medium", "q2_k"),
    ("IQ3_S mix - 3.66 bpw", "iq3_m"), ("MXFP4 MoE", "mxfp4_moe"), ("q5_k", "q5_k_m"),
    ("TQ1_0 - 1.69 bpw ternary", "tq1_0"), ("IQ4_XS", "iq4_xs")])
def test_llama_cpps_names_of_its_types_are_read(name: str, quant: str) -> None:
    # llama-model-loader.cpp llama_ftype_name (llama-bench's model column), quantize.cpp's aliases
    from llmcalc.formulas.quant import parse_weight_format

    assert parse_weight_format(name) is FORMATS[quant]


def test_llama_bench_s_name_runs_the_engine(cli: Any) -> None:
    named = cli("memory", "llama-2-7b", "--engine", "llama.cpp", "--dtype", "Q5_K - Medium",
                "--json")
    short = cli("memory", "llama-2-7b", "--engine", "llama.cpp", "--dtype", "q5_k_m", "--json")
    assert named.code == short.code == 0, named.stderr
    assert named.json()["model_buffer_bytes"] == short.json()["model_buffer_bytes"]


def test_block_sizes_are_ggmls() -> None:
    # gguf-py's GGML_QUANT_SIZES (ggml.c type_traits: elements and bytes per block); each layout
    # the bytes formula reads stores exactly that per block
    from gguf import GGML_QUANT_SIZES, GGMLQuantizationType

    from llmcalc.formulas.quant import GGML_LAYOUTS

    for kind, (block, nbytes) in gguf_mix.GGML_SIZES.items():
        assert GGML_QUANT_SIZES[GGMLQuantizationType[kind]] == (block, nbytes)
        if block > 1:
            assert GGML_LAYOUTS[kind].nbytes((3, 4 * block)) == 12 * nbytes
    assert set(gguf_mix.QUANT_TYPES.values()) <= set(GGML_LAYOUTS)
