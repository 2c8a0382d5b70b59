"""Quantized weight formats: bytes against published checkpoints and the real quantizers' tensors."""

from __future__ import annotations

import math

import pytest

from llmcalc import load_spec
from llmcalc.errors import UsageError
from llmcalc.formulas.quant import (
    FORMATS,
    breakdown,
    from_config,
    parse_weight_format,
    role,
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
