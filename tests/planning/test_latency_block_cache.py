"""latency --kv-dtype q8_0 …: llama.cpp's block cache types (-ctk/-ctv), their bytes as ggml
stores them and llama.cpp's refusals."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from llmcalc import load_spec
from llmcalc.errors import UsageError
from llmcalc.formulas import memory
from llmcalc.planning.engines import llama_cpp
from llmcalc.units import BLOCK_TYPES, DType, nbytes, parse_cache_dtype, parse_dtype


def test_block_types_are_ggml_s() -> None:
    from gguf import GGML_QUANT_SIZES, GGMLQuantizationType

    for name, t in BLOCK_TYPES.items():
        assert GGML_QUANT_SIZES[GGMLQuantizationType[name.upper()]] == (t.block, t.size)
    assert set(llama_cpp.CACHE_TYPES) == {"f32", "f16", "bf16", *BLOCK_TYPES}


def test_bytes_are_whole_blocks() -> None:
    q8 = BLOCK_TYPES["q8_0"]
    assert (nbytes(64, q8), nbytes(65, q8), nbytes(64, BLOCK_TYPES["q4_0"])) == (68, 102, 36)
    assert parse_cache_dtype(" Q8_0 ") is q8
    assert parse_cache_dtype("f16") is DType.fp16


def test_llama_3_1_8b_cache_at_q8_0_is_llama_cpps() -> None:
    # 32 layers × 8 KV heads × 128 × (K + V) = 65,536 values a token: 2,048 q8_0 blocks of 34 B
    spec = load_spec("llama-3.1-8b")
    q8 = BLOCK_TYPES["q8_0"]
    assert memory.kv_cache_bytes(spec, batch=1, ctx=4096, dtype=q8) == 4096 * 69_632
    plan = llama_cpp.spec_plan(spec, llama_cpp.Params(n_ctx=4096, type_k="q8_0", type_v="q8_0",
                                                      flash_attn="on"), n_gpu_layers=99)
    assert llama_cpp.kv_summary(plan).logged_bytes == 4096 * 69_632


def test_latency_reads_the_block_cache(cli) -> None:
    args = ("latency", "llama-3.1-8b", "--gpu", "rtx-4090", "--dtype", "q4_k_m", "--ctx", "32k",
            "--gen", "128", "--engine", "llama.cpp", "--backend", "cuda", "--json")
    f16, q8 = (cli(*args, "--kv-dtype", kv).json() for kv in ("f16", "q8_0"))
    assert (f16["inputs"]["kv_dtype"], q8["inputs"]["kv_dtype"]) == ("f16", "q8_0")  # ggml's names
    # the decode step at the mean context 32,768 + 63 reads its cache: 131,072 B a token at f16,
    # 69,632 at q8_0
    saved = 32_831 * (131_072 - 69_632)
    assert f16["decode_step"]["bytes_per_gpu"] - q8["decode_step"]["bytes_per_gpu"] == saved
    assert q8["expected"]["decode_tokens_per_s"] > f16["expected"]["decode_tokens_per_s"]


@pytest.mark.parametrize(("args", "message"), [
    (("latency", "llama-3.1-8b", "--gpu", "h100", "--kv-dtype", "q8_0", "--engine", "vllm"),
     "error: --kv-dtype q8_0: a llama.cpp cache type (-ctk/-ctv); --engine vllm keeps its cache "
     "in fp16, bf16 or fp8\n"),
    (("latency", "phi-2", "--gpu", "h100", "--kv-dtype", "q4_0"),  # the llama.cpp plan's rule
     "error: microsoft/phi-2: --cache-type-k q4_0: llama.cpp refuses a cache whose block of 32 "
     "does not divide the head size 80 with flash attention (--flash-attn on or auto)\n"),
    (("latency", "gpt2", "--gpu", "h100", "--kv-dtype", "q3_k"),
     "error: --kv-dtype 'q3_k': unknown dtype; use one of fp32, fp16, bf16, fp8, int8, int4, "
     "q8_0, q4_0, q4_1, q5_0, q5_1, iq4_nl\n"),
    (("memory", "llama-2-7b", "--kv-dtype", "Q8_0"),
     "error: --kv-dtype 'Q8_0': a llama.cpp cache type, which latency and fit --engine llama.cpp "
     "take; here use one of fp32, fp16, bf16, fp8, int8, int4\n"),
])
def test_refusals(cli, args: tuple[str, ...], message: str) -> None:
    r = cli(*args)
    assert (r.code, r.stdout, r.stderr) == (2, "", message)


def test_parse_dtype_names_the_block_types_elsewhere() -> None:
    with pytest.raises(UsageError, match="a llama.cpp cache type"):
        parse_dtype("iq4_nl", option="--kv-dtype")


@pytest.mark.parametrize(("given", "kept"), [(None, "f16"), ("auto", "f16"), ("fp16", "f16"),
                                             ("bf16", "bf16"), ("int8", "q8_0"), ("int4", "q4_0"),
                                             ("q5_1", "q5_1")])
def test_llama_cpp_keeps_its_own_cache_types(cli: Any, given: str | None, kept: str) -> None:
    """As `fit --engine llama.cpp` reads --kv-dtype: its default f16 (whatever the weights), int8
    and int4 its q8_0 and q4_0 blocks."""
    args = ("latency", "llama-3.1-8b", "--gpu", "h100", "--dtype", "bf16", "--engine", "llama.cpp",
            "--json", *(["--kv-dtype", given] if given else []))
    assert cli(*args).json()["inputs"]["kv_dtype"] == kept


@pytest.mark.parametrize(("engine", "kept"), [(None, "fp8"), ("llama.cpp", "f16"), ("vllm", "bf16"),
                                              ("sglang", "bf16"), ("trtllm", "fp8")])
def test_auto_is_the_engines_default_cache(cli: Any, engine: str | None, kept: str) -> None:
    """--kv-dtype auto is each engine's default: vLLM's and SGLang's "model data type" (bf16
    beside FP8 weights, as fit --engine keeps it); TensorRT-LLM's the checkpoint's
    kv_cache_quant_algo, FP8 beside the FP8 weights Model Optimizer writes (as its FP8 rows
    state); without an engine, or with llama.cpp, the cache the command keeps without the
    option."""
    args = ("latency", "llama-3.1-8b", "--gpu", "h100", "--dtype", "q8_0" if engine == "llama.cpp"
            else "fp8", "--json", *(["--engine", engine] if engine else []))
    auto = cli(*args, "--kv-dtype", "auto").json()
    assert auto["inputs"]["kv_dtype"] == kept
    assert auto == cli(*args).json()


@pytest.mark.parametrize(("dtype", "kept", "per_token"), [
    ("nvfp4", "fp8", 65_536), ("fp8", "fp8", 65_536), ("fp8-block", "bf16", 131_072),
    ("awq", "fp16", 131_072),
    ("bf16", "bf16", 131_072), ("fp16", "fp16", 131_072)])
def test_trtllms_cache_beside_weights_named_by_dtype(cli: Any, dtype: str, kept: str,
                                                     per_token: int) -> None:
    """Model Optimizer's FP8 and NVFP4 checkpoints carry an FP8 cache unless told otherwise
    (hf_ptq.py --kv_cache_qformat fp8), which TensorRT-LLM's "auto" takes; DeepSeek's block-scaled
    FP8 checkpoints state none. fit --engine trtllm keeps the same cache: Llama-3.1-8B's 32 layers
    × 8 KV heads × 128 × K and V, a byte each."""
    args = ("llama-3.1-8b", "--gpu", "b200", "--dtype", dtype, "--engine", "trtllm", "--json")
    assert cli("latency", *args).json()["inputs"]["kv_dtype"] == kept
    assert cli("fit", *args).json()["kv_bytes_per_token"] == per_token


def _modelopt_checkpoint(folder: Path, kv: dict[str, Any]) -> Path:
    """Llama-3.1-8B's config.json with the quantization_config Model Optimizer writes for NVFP4
    weights, its cache as given (kv_cache_quant_algo beside exclude_modules, or its newer
    kv_cache_scheme beside ignore)."""
    key = "exclude_modules" if "kv_cache_quant_algo" in kv else "ignore"
    config = {**load_spec("llama-3.1-8b").config, "quantization_config": {
        "quant_method": "modelopt", "quant_algo": "NVFP4", "group_size": 16, key: ["lm_head"],
        **kv}}
    (folder / "config.json").write_text(json.dumps(config), encoding="utf-8")
    return folder


FP8_SCHEME = {"kv_cache_scheme": {"num_bits": 8, "type": "float", "dynamic": False}}


@pytest.mark.parametrize(("kv", "kept"), [({"kv_cache_quant_algo": "FP8"}, "fp8"), (FP8_SCHEME, "fp8"),
                                          ({"kv_cache_quant_algo": None}, "bf16")])
@pytest.mark.parametrize("engine", ["trtllm", "vllm", "sglang"])
def test_the_checkpoints_kv_cache_quant_algo(cli: Any, tmp_path: Path, engine: str,
                                             kv: dict[str, Any], kept: str) -> None:
    """A Model Optimizer NVFP4 checkpoint's quantization_config says its cache: FP8, or (null)
    the model's dtype, which TensorRT-LLM's "auto" (llmapi/llm_utils.py,
    _update_from_hf_quant_config), vLLM's (utils/torch_utils.py, resolve_kv_cache_dtype_string)
    and SGLang's (model_runner.py, configure_kv_cache_dtype) take, and fit --engine sizes;
    --dtype nvfp4 (weights named, not the checkpoint's) leaves vLLM and SGLang at bf16."""
    path = str(_modelopt_checkpoint(tmp_path, kv))
    args = ("--gpu", "b200", "--engine", engine, "--json")
    assert cli("latency", path, *args).json()["inputs"]["kv_dtype"] == kept
    assert cli("fit", path, *args).json()["kv_bytes_per_token"] == {"fp8": 65_536,
                                                                    "bf16": 131_072}[kept]
    named = cli("latency", path, *args, "--dtype", "nvfp4").json()["inputs"]["kv_dtype"]
    assert named == ("fp8" if engine == "trtllm" else "bf16")


@pytest.mark.parametrize(("value", "shown"), [("NVFP4", "'NVFP4'"), ("\x1b[31mx", "'\\x1b[31mx'"),
                                              (["FP8"], "of type list"), (8, "of type int")])
def test_trtllm_refuses_a_cache_it_does_not_size(cli: Any, tmp_path: Path, value: Any,
                                                 shown: str) -> None:
    path = str(_modelopt_checkpoint(tmp_path, {"kv_cache_quant_algo": value}))
    r = cli("latency", path, "--gpu", "b200", "--engine", "trtllm")
    assert (r.code, r.stdout) == (2, "")
    assert r.stderr == (f"error: quantization_config: kv_cache_quant_algo {shown} is not sized "
                        "(TensorRT-LLM's FP8 is); pass --kv-dtype\n")
    assert cli("latency", path, "--gpu", "b200", "--engine", "trtllm", "--kv-dtype",
               "fp8").code == 0
    assert cli("latency", path, "--gpu", "b200", "--engine", "vllm", "--json").json()[
        "inputs"]["kv_dtype"] == "bf16"


def test_llama_cpp_has_no_fp8_cache(cli: Any) -> None:
    r = cli("latency", "llama-3.1-8b", "--gpu", "h100", "--kv-dtype", "fp8", "--engine",
            "llama.cpp")
    assert (r.code, r.stdout) == (2, "")
    assert r.stderr == ("error: --kv-dtype fp8: llama.cpp's cache types are bf16, f16, f32, "
                        "iq4_nl, q4_0, q4_1, q5_0, q5_1, q8_0\n")


def test_llama_cpps_recurrent_state_is_f32_whatever_the_cache(cli: Any) -> None:
    """Falcon-Mamba-7B at batch 64: its conv and SSM states in F32 beside an f16 or a q8_0 cache
    alike (src/llama-model.cpp: create_memory), so the step reads the same bytes."""
    args = ("latency", "falcon-mamba-7b", "--gpu", "rtx-4090", "--engine", "llama.cpp",
            "--batch", "64", "--json", "--kv-dtype")
    steps = {kv: cli(*args, kv).json()["decode_step"]["bytes_per_gpu"] for kv in ("f16", "q8_0")}
    assert steps == {"f16": 19_381_886_976, "q8_0": 19_381_886_976}


def test_a_drafts_heads_are_held_to_the_block_too(cli: Any) -> None:
    r = cli("latency", "phi-3-mini-4k", "--gpu", "h100", "--draft", "phi-2", "--kv-dtype", "q8_0")
    assert (r.code, r.stderr) == (2, "error: microsoft/phi-2: --cache-type-k q8_0: llama.cpp "
                                     "refuses a cache whose block of 32 does not divide the head "
                                     "size 80 with flash attention (--flash-attn on or auto)\n")
