"""Quantized weight formats: bytes against published checkpoints and the real quantizers' tensors."""

from __future__ import annotations

import math
from typing import Any

import pytest

from llmcalc import load_spec
from llmcalc.errors import UsageError
from llmcalc.formulas.quant import (
    FORMATS,
    breakdown,
    from_config,
    parse_weight_format,
    role,
    tensor_bytes,
    weight_bytes,
)
from llmcalc.inputs.config import spec_from_dict
from llmcalc.units import DType

TINY_LLAMA = {
    "model_type": "llama", "hidden_size": 256, "intermediate_size": 688,
    "num_hidden_layers": 2, "num_attention_heads": 4, "num_key_value_heads": 2,
    "vocab_size": 1000, "max_position_embeddings": 512, "tie_word_embeddings": False,
}


def test_gpt_oss_mxfp4_is_the_published_checkpoint() -> None:
    # safetensors index metadata.total_size of openai/gpt-oss-120b and -20b (huggingface.co):
    # MXFP4 experts (uint8 blocks + uint8 scales), everything else bf16; read from the config's
    # quantization_config by default.
    big, small = load_spec("gpt-oss-120b"), load_spec("gpt-oss-20b")
    assert from_config(big.config) is not None
    assert weight_bytes(big, from_config(big.config)) == 65_248_815_744
    assert weight_bytes(small, from_config(small.config)) == 13_761_264_768


def test_gguf_files_of_llama_2_7b() -> None:
    # TheBloke/Llama-2-7B-GGUF file sizes: Q4_K_M 4,081,004,224 and Q8_0 7,161,089,728 bytes; both
    # hold the same header and vocabulary metadata, 741,056 bytes, beside the tensor data.
    spec = load_spec("llama-2-7b")
    header = 741_056
    assert weight_bytes(spec, FORMATS["q4_k_m"]) == 4_081_004_224 - header
    assert weight_bytes(spec, FORMATS["q8_0"]) == 7_161_089_728 - header


def _gptq_tensors(out_f: int, in_f: int, group: int, *, awq: bool) -> int:
    """Bytes of the buffers a 4-bit GPTQ QuantLinear / AWQ WQLinear_GEMM registers."""
    groups = math.ceil(in_f / group)
    shapes = (
        [((in_f, out_f // 8), 4), ((groups, out_f // 8), 4), ((groups, out_f), 2)]
        if awq
        else [((in_f // 8, out_f), 4), ((groups, out_f // 8), 4), ((groups, out_f), 2),
              ((in_f,), 4)]
    )
    return sum(math.prod(s) * size for s, size in shapes)


@pytest.mark.parametrize("kind", ["gptq", "awq"])
def test_gptq_awq_buffers(kind: str) -> None:
    spec = spec_from_dict(TINY_LLAMA)
    expected = 0
    for t, g in spec.all_tensors():
        times = len(g.layers) if g is not None else 1
        if role(t) == "linear":
            expected += times * _gptq_tensors(*t.shape, 128, awq=kind == "awq")
        elif t.tied_to is None:
            expected += times * t.numel * 2  # fp16
    assert weight_bytes(spec, parse_weight_format(kind)) == expected
    assert weight_bytes(spec, parse_weight_format(f"{kind}-g64")) > expected


@pytest.mark.torch
@pytest.mark.parametrize("name,double", [("nf4", True), ("nf4-nodq", False), ("fp4", True)])
def test_bitsandbytes_4bit_tensors(name: str, double: bool) -> None:
    torch = pytest.importorskip("torch")
    bnb = pytest.importorskip("bitsandbytes.functional")
    spec = spec_from_dict(TINY_LLAMA)
    expected = 0
    for t, g in spec.all_tensors():
        times = len(g.layers) if g is not None else 1
        if t.tied_to is not None:
            continue
        if role(t) != "linear":
            expected += times * t.numel * 2  # bf16, as transformers keeps them
            continue
        w = torch.zeros(t.shape, dtype=torch.bfloat16).normal_()
        packed, state = bnb.quantize_4bit(
            w, blocksize=64, compress_statistics=double, quant_type=name[:3]
        )
        stored = packed.nbytes + sum(
            v.nbytes for k, v in state.as_dict(packed=True).items()
            if not k.startswith("quant_state.")  # the packed JSON of shapes and dtypes
        )
        expected += times * stored
    assert weight_bytes(spec, parse_weight_format(name)) == expected


def test_breakdown_adds_up_and_llama_70b_nf4() -> None:
    spec = load_spec("llama-2-70b")
    nf4 = parse_weight_format("nf4")
    parts = breakdown(spec, nf4)
    assert sum(p.bytes for p in parts) == weight_bytes(spec, nf4) == 36_363_602_944
    assert sum(p.elements for p in parts) == 68_976_648_192
    assert weight_bytes(spec, DType.bf16) == 2 * 68_976_648_192


def test_names_people_type() -> None:
    assert parse_weight_format("bfloat16") is DType.bf16
    assert parse_weight_format("float8_e4m3fn") is DType.fp8
    assert parse_weight_format("fp8_e5m2") is DType.fp8
    assert parse_weight_format("Q4_K_M").name == "q4_k_m"
    assert parse_weight_format("gptq-g32").name == "gptq-g32"
    with pytest.raises(UsageError, match=r"--dtype 'q3': unknown dtype; use one of fp32, fp16, "
                       r"bf16, fp8, int8, int4, or a quantized format: nf4, fp4"):
        parse_weight_format("q3")
    with pytest.raises(UsageError, match="group size 100 must be a power of two"):
        parse_weight_format("awq-g100")


@pytest.mark.parametrize("name", ["UD-Q4_K_XL", "Q4_K_XL", "ud-iq2_m"])
def test_an_unsloth_dynamic_mix_is_not_a_type(name: str) -> None:
    """Unsloth's UD-* / *_K_XL GGUFs set each tensor's type per model: refused, never read as the
    llama-quantize type they are named after."""
    with pytest.raises(UsageError) as e:
        parse_weight_format(name)
    assert str(e.value) == (
        f"--dtype {name!r}: an Unsloth dynamic mix, whose tensor types differ by model (no "
        "llama-quantize type); give the .gguf file as the model, whose header has each tensor's "
        "type")


def test_cli_reads_quantization_config_and_refuses_block_kv(cli) -> None:
    r = cli("memory", "gpt-oss-120b", "--json")
    assert r.code == 0
    assert (r.json()["dtype"], r.json()["weights_bytes"]) == ("mxfp4", 65_248_815_744)
    assert cli("memory", "gpt-oss-120b", "--dtype", "bf16", "--json").json()["weights_bytes"] == (
        2 * 116_829_156_672
    )
    r = cli("memory", "llama-2-7b", "--kv-dtype", "nf4")
    assert r.code == 2
    assert r.stderr.strip() == (
        "error: --kv-dtype 'nf4': unknown dtype; use one of fp32, fp16, bf16, fp8, int8, int4"
    )
    r = cli("memory", "llama-2-70b", "--dtype", "nf4", "--explain")
    assert "(4.127 bits each)" in " ".join(r.stdout.split())


@pytest.mark.torch
@pytest.mark.parametrize("fields", [
    TINY_LLAMA,
    {**TINY_LLAMA, "model_type": "mixtral", "intermediate_size": 512, "num_local_experts": 4,
     "num_experts_per_tok": 2},
], ids=["llama", "mixtral"])
def test_transformers_bitsandbytes_quantizer(tmp_path, fields) -> None:  # type: ignore[no-untyped-def]
    """The state dict ``from_pretrained(..., BitsAndBytesConfig(nf4, double quant))`` loads on the
    CPU: quantized linears, and what it keeps in bf16 (embeddings, lm_head, norms, and under
    transformers v5 a MoE model's router and fused experts)."""
    torch = pytest.importorskip("torch")
    pytest.importorskip("bitsandbytes")
    import transformers

    cls = {"llama": "LlamaConfig", "mixtral": "MixtralConfig"}[fields["model_type"]]
    config = getattr(transformers, cls)(**{k: v for k, v in fields.items() if k != "model_type"})
    model = transformers.AutoModelForCausalLM.from_config(config).to(torch.bfloat16)
    model.save_pretrained(tmp_path)
    quantized = transformers.AutoModelForCausalLM.from_pretrained(
        tmp_path, device_map="cpu", dtype=torch.bfloat16,
        quantization_config=transformers.BitsAndBytesConfig(
            load_in_4bit=True, bnb_4bit_quant_type="nf4", bnb_4bit_use_double_quant=True,
            bnb_4bit_compute_dtype=torch.bfloat16),
    )
    stored = sum(v.nbytes for k, v in quantized.state_dict().items() if "quant_state." not in k)
    assert weight_bytes(spec_from_dict(fields), parse_weight_format("nf4")) == stored


def test_fp8_block_scales_from_quantization_config() -> None:
    fields = {**TINY_LLAMA, "quantization_config": {
        "quant_method": "fp8", "fmt": "e4m3", "weight_block_size": [128, 128]}}
    spec = spec_from_dict(fields)
    fmt = from_config(spec.config)
    assert fmt is not None and fmt.name == "fp8-block"
    expected = 0
    for t, g in spec.all_tensors():
        times = len(g.layers) if g is not None else 1
        if role(t) == "linear":  # e4m3 weight + fp32 weight_scale_inv [⌈out/128⌉, ⌈in/128⌉]
            out_f, in_f = t.shape
            expected += times * (out_f * in_f + 4 * math.ceil(out_f / 128) * math.ceil(in_f / 128))
        elif t.tied_to is None:
            expected += times * 2 * t.numel
    assert weight_bytes(spec, fmt) == expected
    odd = spec_from_dict({**TINY_LLAMA, "quantization_config": {"quant_method": "hqq"}})
    with pytest.raises(UsageError, match=r"^quantization_config: quant_method 'hqq' is not "
                       r"supported; pass --dtype \(one of nf4, fp4"):
        from_config(odd.config)


# DeepSeek-V4's published quantization_config, with the config's expert_dtype beside it
DEEPSEEK_V4_FP8 = {"activation_scheme": "dynamic", "fmt": "e4m3", "quant_method": "fp8",
                   "scale_fmt": "ue8m0", "weight_block_size": [128, 128]}
TINY_MIXTRAL = {
    "model_type": "mixtral", "hidden_size": 256, "intermediate_size": 192,
    "num_hidden_layers": 2, "num_attention_heads": 4, "num_key_value_heads": 2,
    "num_local_experts": 4, "num_experts_per_tok": 2, "vocab_size": 1000,
    "max_position_embeddings": 512, "tie_word_embeddings": False,
}


def test_fp8_with_fp4_experts_from_quantization_config() -> None:
    """expert_dtype fp4 (DeepSeek-V4): linears e4m3 with a 1-byte ue8m0 scale per 128 × 128 tile,
    routed experts two FP4 codes a byte with a 1-byte ue8m0 scale per 32 inputs, the rest bf16."""
    spec = spec_from_dict({**TINY_MIXTRAL, "quantization_config": DEEPSEEK_V4_FP8,
                           "expert_dtype": "fp4"})
    fmt = from_config(spec.config)
    assert fmt is not None and fmt.name == "fp8-fp4"
    assert parse_weight_format("fp8-fp4") is FORMATS["fp8-fp4"]
    expected = 0
    for t, g in spec.all_tensors():
        times = len(g.layers) if g is not None else 1
        if role(t) == "linear":  # weight [out, in] + scale [⌈out/128⌉, ⌈in/128⌉], 1 byte each
            out_f, in_f = t.shape
            expected += times * (out_f * in_f + math.ceil(out_f / 128) * math.ceil(in_f / 128))
        elif role(t) == "experts":  # [E, out, in]: in/2 bytes of codes + in/32 scales a row
            e, out_f, in_f = t.shape
            expected += times * e * out_f * (in_f // 2 + in_f // 32)
        elif t.tied_to is None:
            expected += times * 2 * t.numel
    # 2 layers × 4 experts × ([384, 256] + [256, 192]): 384·(128 + 8) + 256·(96 + 6) bytes each
    assert [(p.layout, p.elements, p.bytes) for p in breakdown(spec, fmt)] == [
        ("bf16", 515_328, 1_030_656),
        ("fp8 e4m3, 128×128 tiles, ue8m0 scale", 393_216, 393_216 + 24),
        ("fp4 e2m1, 32-blocks, e8m0 scale", 1_179_648, 8 * (384 * 136 + 256 * 102)),
    ]
    assert weight_bytes(spec, fmt) == expected == 2_050_584
    # fp8 experts (or no expert_dtype, DeepSeek-V3) keep the fp32 scales of fp8-block
    for experts in ({"expert_dtype": "fp8"}, {}):
        plain = spec_from_dict({**TINY_MIXTRAL, "quantization_config": DEEPSEEK_V4_FP8, **experts})
        assert from_config(plain.config) == FORMATS["fp8-block"]
    odd = spec_from_dict({**TINY_MIXTRAL, "quantization_config": DEEPSEEK_V4_FP8,
                          "expert_dtype": "int2"})
    with pytest.raises(UsageError) as err:
        from_config(odd.config)
    assert str(err.value) == ("quantization_config: fp8 with expert_dtype 'int2' is not supported "
                              "(fp8 or fp4); pass --dtype")


# NVFP4 as vLLM creates a linear's parameters (modelopt.py ModelOptNvFp4LinearMethod.create_weights;
# compressed_tensors_w4a4_nvfp4.py): weight uint8 [N, K/2], weight_scale e4m3 [N, K/16], and per
# matrix weight_scale_2 and input_scale, fp32 scalars (W4A16: no input_scale)
def _nvfp4_matrix(out_f: int, in_f: int, *, scalars: int = 2) -> int:
    return out_f * (in_f // 2) + out_f * (in_f // 16) + 4 * scalars


# ModelOpt's config.json quantization_config (the flat form its NVFP4 checkpoints carry, read by
# vLLM's ModelOptQuantConfigBase.from_config) and its older hf_quant_config.json form, as
# Firworks/gpt-oss-120b-nvfp4 (ModelOpt 0.37.0) publishes it
MODELOPT_NVFP4 = {
    "producer": {"name": "modelopt"}, "quant_method": "modelopt", "quant_algo": "NVFP4",
    "ignore": ["lm_head"],
    "config_groups": {"group_0": {
        "targets": ["Linear"],
        "weights": {"type": "float", "num_bits": 4, "dynamic": False, "group_size": 16},
        "input_activations": {"type": "float", "num_bits": 4, "dynamic": False,
                              "group_size": 16}}},
}
HF_QUANT_CONFIG = {"producer": {"name": "modelopt", "version": "0.37.0"},
                   "quantization": {"quant_algo": "NVFP4", "group_size": 16,
                                    "exclude_modules": ["lm_head"]}}
# llm-compressor's NVFP4A16 scheme: compressed-tensors, weights only
CT_NVFP4A16 = {
    "quant_method": "compressed-tensors", "format": "nvfp4-pack-quantized",
    "ignore": ["lm_head", "re:.*mlp.gate$"],
    "config_groups": {"group_0": {
        "targets": ["Linear"], "format": "nvfp4-pack-quantized",
        "weights": {"type": "float", "num_bits": 4, "strategy": "tensor_group", "group_size": 16,
                    "symmetric": True, "dynamic": False},
        "input_activations": None}},
}


def _nvfp4_expected(spec, *, scalars: int = 2) -> int:  # type: ignore[no-untyped-def]
    """Bytes of the tensors an NVFP4 checkpoint of ``spec`` holds: each linear matrix and each
    expert's gate, up and down projections in NVFP4, everything else bf16."""
    total = 0
    for t, g in spec.all_tensors():
        times = len(g.layers) if g is not None else 1
        if t.tied_to is not None:
            continue
        if role(t) == "linear" and t.matmul and "shared_expert_gate" not in t.name:
            total += times * _nvfp4_matrix(*t.shape, scalars=scalars)
        elif role(t) == "experts" and t.component.endswith("gate_up_proj"):
            e, two_i, d = t.shape  # gate_proj and up_proj [i, d] apart, per expert
            total += times * 2 * e * _nvfp4_matrix(two_i // 2, d, scalars=scalars)
        elif role(t) == "experts":
            e, out_f, in_f = t.shape
            total += times * e * _nvfp4_matrix(out_f, in_f, scalars=scalars)
        else:
            total += times * 2 * t.numel
    return total


def test_nvfp4_is_the_tensors_vllm_loads() -> None:
    for fields in (TINY_LLAMA, TINY_MIXTRAL):
        spec = spec_from_dict(fields)
        assert weight_bytes(spec, FORMATS["nvfp4"]) == _nvfp4_expected(spec)
    # TINY_MIXTRAL by hand: per layer q, o [256, 256], k, v [128, 256] and 4 experts × (gate, up
    # [192, 256], down [256, 192]); embeddings, lm_head, routers [4, 256] and norms bf16
    per_layer = (2 * _nvfp4_matrix(256, 256) + 2 * _nvfp4_matrix(128, 256)
                 + 4 * (2 * _nvfp4_matrix(192, 256) + _nvfp4_matrix(256, 192)))
    wide = 2 * (2 * 1000 * 256 + 2 * (4 * 256 + 2 * 256) + 256)
    spec = spec_from_dict(TINY_MIXTRAL)
    assert weight_bytes(spec, parse_weight_format("NVFP4")) == 2 * per_layer + wide == 1_915_648
    assert [(p.layout, p.elements, p.bytes) for p in breakdown(spec, FORMATS["nvfp4"])] == [
        ("bf16", 515_328, 1_030_656),
        ("fp4 e2m1, 16-blocks, e4m3 scale, 2 fp32 per matrix", 1_572_864, 2 * per_layer),
    ]


def test_nvfp4_of_llama_3_1_8b() -> None:
    # nvidia/Llama-3.1-8B-Instruct-FP4 (ModelOpt, lm_head excluded): 32 layers × 7 linears,
    # 6,979,321,856 weights at 4.5 bits + 8 bytes each; embed_tokens, lm_head [128256, 4096] and
    # 65 norms [4096] bf16. The published files hold 6,027,861,376 bytes: these plus the
    # safetensors headers (and the FP8 KV cache's k_scale and v_scale per layer), not read here.
    spec = load_spec("llama-3.1-8b")
    linears = 32 * (2 * 4096 * 4096 + 2 * 1024 * 4096 + 3 * 14336 * 4096)
    assert linears == 6_979_321_856
    expected = linears * 9 // 16 + 32 * 7 * 8 + 2 * (2 * 128256 * 4096 + 65 * 4096)
    assert weight_bytes(spec, FORMATS["nvfp4"]) == expected == 6_027_749_120
    assert 0 < 6_027_861_376 - expected < 963 * 128  # 963 tensors' header entries


def test_nvfp4_layer_of_deepseek_r1_0528_fp4() -> None:
    """nvidia/DeepSeek-R1-0528-FP4's first (dense) layer as its safetensors header lists it:
    gate_proj, up_proj weight U8 [18432, 3584] + weight_scale F8_E4M3 [18432, 448], down_proj U8
    [7168, 9216] + F8_E4M3 [7168, 1152], each with weight_scale_2 and input_scale F32 []; the
    attention (excluded by the checkpoint) and norms BF16; k_scale and v_scale F32 [] belong to the
    KV cache, not counted."""
    spec = load_spec("deepseek-r1")
    fmt = from_config({"quantization_config": {**HF_QUANT_CONFIG, "quantization": {
        "quant_algo": "NVFP4", "group_size": 16,
        "exclude_modules": ["lm_head", "model.layers.*.self_attn*"]}}})
    assert fmt is not None and fmt.name == "nvfp4"
    header = (2 * (18432 * 3584 + 18432 * 448 + 8) + 7168 * 9216 + 7168 * 1152 + 8
              + 2 * (2 * 7168 + 1536 + 512)  # input/post_attention, q_a, kv_a layernorms
              + 2 * (1536 * 7168 + 24576 * 1536 + 576 * 7168 + 32768 * 512 + 7168 * 16384))
    [dense] = [g for g in spec.layer_groups if g.name == "dense"]
    assert sum(tensor_bytes(fmt.layout(t), t) for t in dense.tensors) == header == 597_196_824
    # the attention stays bf16 in the MoE layers too; their experts and shared experts are NVFP4
    [moe] = [g for g in spec.layer_groups if g.name == "moe"]
    assert {t.name.split(".")[3] for t in moe.tensors
            if fmt.layout(t) is not fmt.rest} == {"mlp"}
    assert all(fmt.layout(t) is fmt.rest for t in moe.tensors if ".self_attn." in t.name)


def test_nvfp4_from_quantization_config() -> None:
    spec = spec_from_dict({**TINY_MIXTRAL, "quantization_config": MODELOPT_NVFP4})
    fmt = from_config(spec.config)
    assert fmt is not None and fmt.name == "nvfp4"
    assert weight_bytes(spec, fmt) == weight_bytes(spec, FORMATS["nvfp4"]) == 1_915_648
    nested = from_config({"quantization_config": HF_QUANT_CONFIG})
    assert nested is not None and weight_bytes(spec, nested) == 1_915_648
    # weight-only: no input_scale, 4 bytes a matrix less (2 layers × (4 + 4 × 3) matrices)
    for q in ({**MODELOPT_NVFP4, "quant_algo": "W4A16_NVFP4"}, CT_NVFP4A16):
        a16 = from_config({"quantization_config": q})
        assert a16 is not None and a16.name == "nvfp4-a16"
        assert weight_bytes(spec, a16) == _nvfp4_expected(spec, scalars=1) == 1_915_648 - 128
    w4a4 = from_config({"quantization_config": {**CT_NVFP4A16, "config_groups": {"group_0": {
        **CT_NVFP4A16["config_groups"]["group_0"],  # type: ignore[index]
        "input_activations": {"type": "float", "num_bits": 4, "dynamic": "local"}}}}})
    assert w4a4 is not None and weight_bytes(spec, w4a4) == 1_915_648


def test_nvfp4_exclusions_by_layer() -> None:
    spec = spec_from_dict({**TINY_LLAMA, "num_hidden_layers": 4})
    whole = weight_bytes(spec, FORMATS["nvfp4"])
    q = {**MODELOPT_NVFP4, "ignore": ["lm_head", "model.layers.1.mlp.down_proj",
                                      "model.layers.3.mlp.down_proj", "model.layers.2.self_attn*"]}
    fmt = from_config({"quantization_config": q})
    assert fmt is not None
    # down_proj [256, 688] in layers 1 and 3, q, k, v, o in layer 2 back to bf16
    down = 2 * 256 * 688 - _nvfp4_matrix(256, 688)
    attn = (2 * 2 * 256 * 256 - 2 * _nvfp4_matrix(256, 256)
            + 2 * 2 * 128 * 256 - 2 * _nvfp4_matrix(128, 256))
    assert weight_bytes(spec, fmt) == whole + 2 * down + attn
    assert sum(p.bytes for p in breakdown(spec, fmt)) == weight_bytes(spec, fmt)
    regex = from_config({"quantization_config": {**CT_NVFP4A16, "ignore": [
        "re:model\\.layers\\.\\d+\\.mlp\\.down_proj"]}})
    assert regex is not None and weight_bytes(spec, regex) == (
        _nvfp4_expected(spec, scalars=1) + 4 * (2 * 256 * 688 - _nvfp4_matrix(256, 688, scalars=1)))


@pytest.mark.parametrize(("q", "message"), [
    ({**MODELOPT_NVFP4, "quant_algo": "FP8"},
     "quantization_config: modelopt quant_algo 'FP8' is not supported (NVFP4 or W4A16_NVFP4); "
     "pass --dtype"),
    ({**MODELOPT_NVFP4, "group_size": 32},
     "quantization_config: NVFP4 group_size 32 is not supported (16); pass --dtype"),
    ({**MODELOPT_NVFP4, "ignore": "lm_head"},
     "quantization_config: ignore must be a list of module names"),
    ({**MODELOPT_NVFP4, "ignore": ["model.layers.0.mlp.experts.3.down_proj"]},
     "quantization_config: ignore entry 'model.layers.0.mlp.experts.3.down_proj' names one expert "
     "or sub-block of a layer, which is not supported; pass --dtype"),
    ({**CT_NVFP4A16, "format": "pack-quantized", "config_groups": {}},
     "quantization_config: compressed-tensors format 'pack-quantized' is not supported "
     "(nvfp4-pack-quantized); pass --dtype"),
    ({**CT_NVFP4A16, "config_groups": {"group_0": {
        "format": "nvfp4-pack-quantized", "weights": {"type": "int", "num_bits": 4}}}},
     "quantization_config: compressed-tensors weights 'int' 4-bit are not NVFP4 (float 4-bit); "
     "pass --dtype"),
])
def test_nvfp4_configs_refused(q: dict, message: str) -> None:  # type: ignore[type-arg]
    with pytest.raises(UsageError) as err:
        from_config({"quantization_config": q})
    assert str(err.value) == message


def test_nvfp4_regex_by_layer_number_refused() -> None:
    spec = spec_from_dict(TINY_LLAMA)
    fmt = from_config({"quantization_config": {**CT_NVFP4A16, "ignore": [
        "re:model\\.layers\\.0\\.mlp"]}})
    assert fmt is not None
    with pytest.raises(UsageError) as err:
        weight_bytes(spec, fmt)
    assert str(err.value) == ("quantization_config: ignore entry 're:model\\.layers\\.0\\.mlp' "
                              "picks layers by number, which is not supported; pass --dtype")


def test_nvfp4_keeps_routers_gates_convolutions_and_towers_wide() -> None:
    spec = load_spec("qwen3.6-35b-a3b")
    fmt = FORMATS["nvfp4"]
    wide = {t.name for t, _ in spec.all_tensors() if fmt.layout(t) is fmt.rest and len(t.shape) > 1}
    assert {"model.language_model.layers.{i}.mlp.gate.weight",
            "model.language_model.layers.{i}.mlp.shared_expert_gate.weight",
            "model.language_model.layers.{i}.linear_attn.conv1d.weight",
            "model.visual.blocks.{i}.attn.qkv.weight", "lm_head.weight",
            "model.language_model.embed_tokens.weight"} <= wide
    assert not any(".mlp.experts." in n or "self_attn" in n or "in_proj" in n for n in wide)


def test_cli_reads_nvfp4_configs(cli, write) -> None:  # type: ignore[no-untyped-def]
    path = write("config.json", {**TINY_MIXTRAL, "quantization_config": MODELOPT_NVFP4})
    r = cli("memory", path, "--json")
    assert r.code == 0
    assert (r.json()["dtype"], r.json()["weights_bytes"]) == ("nvfp4", 1_915_648)
    assert cli("memory", path, "--dtype", "bf16", "--json").json()["weights_bytes"] == 2 * (
        515_328 + 1_572_864)
    r = cli("memory", path, "--explain")
    assert ("fp4 e2m1, 16-blocks, e4m3 scale, 2 fp32 per matrix: 1,572,864 parameters → 884,992 "
            "bytes") in " ".join(r.stdout.split())
    bad = write("bad.json", {**TINY_MIXTRAL, "quantization_config": {
        **MODELOPT_NVFP4, "quant_algo": "INT4_AWQ"}})
    r = cli("memory", bad)
    assert (r.code, r.stdout) == (2, "")
    assert r.stderr == ("error: quantization_config: modelopt quant_algo 'INT4_AWQ' is not "
                        "supported (NVFP4 or W4A16_NVFP4); pass --dtype\n")


def test_auto_is_the_checkpoints_own(cli: Any) -> None:
    """--dtype auto, as vLLM and transformers spell their default: the format the command reads
    without the option (gpt-oss-20b's quantization_config: MXFP4 experts)."""
    auto = cli("memory", "gpt-oss-20b", "--dtype", "auto", "--json")
    assert auto.code == 0 and auto.json() == cli("memory", "gpt-oss-20b", "--json").json()
    assert auto.json()["dtype"] == "mxfp4"
