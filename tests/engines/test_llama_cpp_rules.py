"""llama.cpp's rules without the engine: `memory --engine llama.cpp`'s figures and refusals, and
placement (-ngl, --n-cpu-moe, --override-tensor) held to the pinned source's rule
(vendor/llama.cpp src/llama-model.cpp: load_tensors, i_gpu_start = max(n_layer + 1 − ngl, 0)).

A CPU build has no GPU device: act_gpu_layers is 0 and its log assigns every layer to the CPU
whatever -ngl says, so placement is held to the source (llama-cpp-python 0.3.36's vendor/llama.cpp,
ggml-org/llama.cpp@0c1e57098): src/llama-model.cpp:1589-1590 (i_gpu_start, act_gpu_layers),
:1603-1614 (input layer on the CPU, the repeating layers, then the output layer);
src/llama-model-loader.cpp:1166-1168 (a TENSOR_DUPLICATED token_embd is the output layer's),
:1234-1260 (-ot: the first regex_search match decides, CPU → the CPU list), :1371-1376 (a
duplicated tensor once per buffer type); src/llama-arch.cpp:727-745 (LLM_TENSOR_INFOS: input and
output layers); ggml-cuda.cu:897-920 (alignment 128, MATRIX_ROW_PADDING 512 from common.cuh:186);
common/common.h LLM_FFN_EXPS_REGEX (--n-cpu-moe's pattern)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from helpers import tiny_gguf

from llmcalc.inputs.gguf_file import read_header
from llmcalc.planning.engines import llama_cpp as L


@pytest.fixture(scope="module")
def llama(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tiny_gguf.write(tmp_path_factory.mktemp("g") / "llama.gguf", "llama")  # 2 layers


@pytest.fixture(scope="module")
def moe(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tiny_gguf.write(tmp_path_factory.mktemp("g") / "moe.gguf", "qwen3moe", n_expert=4,
                           n_layer=3)


def test_memory_prints_the_engines_buffers(cli: Any, llama: Path) -> None:
    run = cli("memory", str(llama), "--engine", "llama.cpp", "--json")
    assert run.code == 0, run.stderr
    d = run.json()
    # llama-server's defaults: --parallel auto = 4 sequences in one unified cache; --ctx 4k
    assert (d["n_ctx"], d["n_ctx_seq"], d["parallel"], d["kv_unified"]) == (4096, 4096, 4, True)
    # K per layer: 2 KV heads × 64 × f16 × 4,096 cells; 2 layers
    assert d["kv_k_bytes"] == d["kv_v_bytes"] == 2 * (2 * 64 * 2 * 4096) == 2 * 2**20
    # the compute buffer of the reserved graphs: the engine prints 8.01 MiB for it
    # (test_llama_cpp_compute.py holds the model to the engine)
    assert d["recurrent_state_bytes"] == 0 and d["compute_buffer_bytes"] == 8_402_944
    header = read_header(llama)
    first = min(t.offset for t in header.tensors)
    assert d["model_buffer_bytes"] == max(t.offset + t.nbytes for t in header.tensors) - first
    assert d["total_bytes"] == (d["model_buffer_bytes"] + d["kv_k_bytes"] + d["kv_v_bytes"]
                                + d["compute_buffer_bytes"])
    assert list(d["devices"]) == ["CPU"] and d["devices"]["CPU"]["total_bytes"] == d["total_bytes"]


def test_memory_flags(cli: Any, llama: Path) -> None:
    run = cli("memory", str(llama), "--engine", "llama.cpp", "--ctx-size", "3000", "--parallel",
              "3", "--no-kv-unified", "--cache-type-k", "q8_0", "--cache-type-v", "q4_0", "--json")
    assert run.code == 0, run.stderr
    d = run.json()
    # 3,000 → 3,072 (pad 256); 1,024 per sequence; q8_0: 34 bytes per 32, q4_0: 18 per 32
    assert (d["n_ctx"], d["n_ctx_seq"]) == (3072, 1024)
    assert d["kv_k_bytes"] == 2 * (128 // 32 * 34) * 1024 * 3
    assert d["kv_v_bytes"] == 2 * (128 // 32 * 18) * 1024 * 3
    table = cli("memory", str(llama), "--engine", "llama.cpp", "--n-gpu-layers", "1")
    assert table.code == 0, table.stderr
    assert "│ KV K                  │     2.00 MiB │" in table.stdout  # the output layer has no KV


@pytest.mark.parametrize(("args", "message"), [
    (["--engine", "llama.cpp", "--batch", "2"],
     "error: --batch: with --engine llama.cpp, sequences are --parallel N"),
    (["--engine", "llama.cpp", "--kv-dtype", "fp8"],
     "error: --kv-dtype: with --engine llama.cpp, the cache types are --cache-type-k and "
     "--cache-type-v"),
    (["--parallel", "2"], "error: --parallel: llama.cpp's flags go with --engine llama.cpp"),
    (["--engine", "llama.cpp", "--cache-type-v", "q8_0", "--flash-attn", "off"],
     "error: --cache-type-v q8_0: llama.cpp refuses a quantized V cache without flash attention "
     "(--flash-attn on or auto)"),
    (["--engine", "llama.cpp", "--cache-type-k", "q3_k"],
     "error: cache type 'q3_k': llama.cpp takes f32, f16, bf16, q8_0, q4_0, q4_1, iq4_nl, q5_0, "
     "q5_1"),
    (["--engine", "llama.cpp==0.2"],
     "error: --engine llama.cpp==0.2: llmcalc follows llama-cpp-python 0.3.36's llama.cpp only"),
    (["--engine", "vllm"], "error: --engine vllm: memory follows llama.cpp's rules only "
     "(--engine llama.cpp)"),
])
def test_memory_refusals(cli: Any, llama: Path, args: list[str], message: str) -> None:
    run = cli("memory", str(llama), *args)
    assert (run.code, run.stderr.strip()) == (2, message)


def test_an_hf_config_needs_a_gguf_quant_type(cli: Any) -> None:
    # an HF config is read as llama.cpp would convert and quantize it (llama_cpp_quant), so it
    # needs the quant type; without one it is refused in one line
    run = cli("memory", "llama-3-8b", "--engine", "llama.cpp")
    assert run.code == 2
    assert run.stderr.strip() == ("error: llama-3-8b: --engine llama.cpp reads a GGUF file, or an "
                                  "HF config with a GGUF quant type (--dtype q4_k_m, q8_0, q4_0, "
                                  "fp16, bf16)")


def _gpu(header: Any, n_layer: int, ngl: int, rules: Any = ()) -> set[str]:
    return {n for n, d in L.placement(header, n_layer, ngl, rules).items() if d == "GPU"}


def test_ngl_counts_the_output_layer_first(llama: Path) -> None:
    h = read_header(llama)
    out = {"output.weight", "output_norm.weight"}
    blk1 = {t.name for t in h.tensors if t.name.startswith("blk.1.")}
    blk0 = {t.name for t in h.tensors if t.name.startswith("blk.0.")}
    assert _gpu(h, 2, 0) == set()
    assert _gpu(h, 2, 1) == out
    assert _gpu(h, 2, 2) == out | blk1
    assert _gpu(h, 2, 3) == _gpu(h, 2, 99) == out | blk1 | blk0  # token_embd stays on the CPU
    assert [L.gpu_layer_start(2, n) for n in range(5)] == [3, 2, 1, 0, 0]


def test_n_cpu_moe_and_override_tensor(moe: Path) -> None:
    h = read_header(moe)
    gpu = _gpu(h, 3, 99, L.overrides(2, []))
    exps = {t.name for t in h.tensors if "_exps" in t.name}
    assert exps - gpu == {f"blk.{i}.ffn_{p}_exps.weight" for i in (0, 1)
                          for p in ("gate", "up", "down")}
    assert "blk.0.ffn_gate_inp.weight" in gpu and "blk.0.attn_q.weight" in gpu
    # -ot: the first pattern found in the name decides; CPU keeps the tensor in RAM
    gpu = _gpu(h, 3, 99, L.overrides(0, [r"blk\.2\.ffn_down=CPU,attn_q\.=CUDA0"]))
    assert {"blk.2.ffn_down_exps.weight"} == {t.name for t in h.tensors} - gpu - {"token_embd.weight"}
    with pytest.raises(Exception, match=r"^--override-tensor 'ffn': <tensor name pattern>=<buffer type>$"):
        L.overrides(0, ["ffn"])
    plan = L.plan(h, L.Params(n_ctx=512, n_gpu_layers=99), n_cpu_moe=3)
    assert [d.name for d in plan.devices] == ["CPU", "GPU"]
    assert sum(d.model for d in plan.devices) == plan.model
    assert plan.devices[0].kv_k == 0 and plan.devices[1].kv_k == plan.kv_k


def test_a_tied_output_is_copied_to_the_gpu(tmp_path: Path) -> None:
    h = read_header(tiny_gguf.write(tmp_path / "t.gguf", "llama", tied=True))
    embd = next(t for t in h.tensors if t.name == "token_embd.weight")
    place = L.placement(h, 2, 1)
    assert place[L.TIED] == "GPU" and place["token_embd.weight"] == "CPU"
    gpu = L.model_buffers(h, place, mmap=True)["GPU"]
    assert gpu == sum(-(-t.nbytes // 128) * 128 for t in h.tensors
                      if t.name == "output_norm.weight") + embd.nbytes


def test_per_layer_head_counts_are_read_from_the_gguf(tmp_path: Path) -> None:
    h = read_header(tiny_gguf.write(tmp_path / "lfm2.gguf", "lfm2", n_layer=4))
    assert h.metadata["lfm2.attention.head_count_kv"] == [0, 2, 0, 2]
    assert L.hparams(h).is_recr == (True, False, True, False)


def _header(arch: str, tensors: list[tuple[str, str, tuple[int, ...]]], n_layer: int) -> Any:
    """A header of (name, ggml type, ggml shape) laid out back to back, 32-byte aligned."""
    from llmcalc.inputs.gguf_file import GgufHeader, GgufTensor

    out, offset = [], 0
    for name, kind, shape in tensors:
        nbytes = L.row_bytes(kind, shape[0]) * (1 if len(shape) == 1 else shape[1])
        out.append(GgufTensor(name, kind.upper(), shape, shape[0] * (shape[1:] or (1,))[0],
                              nbytes, offset))
        offset += -(-nbytes // 32) * 32
    return GgufHeader("t.gguf", 3, {"general.architecture": arch, f"{arch}.block_count": n_layer},
                      tuple(out), 0)


def test_per_layer_tensors_get_a_copy_on_each_device() -> None:
    # src/models/llama.cpp: load_arch_tensors — rope_freqs is created for every layer, layer 0's
    # first and the others TENSOR_DUPLICATED: one copy per buffer type the layers use
    # (src/llama-model-loader.cpp: create_tensor looks the name up in that buffer type's context)
    h = _header("llama", [("token_embd.weight", "f32", (64, 32)), ("rope_freqs.weight", "f32", (32,)),
                          ("blk.0.attn_norm.weight", "f32", (64,)),
                          ("blk.1.attn_norm.weight", "f32", (64,)),
                          ("output_norm.weight", "f32", (64,)), ("output.weight", "f32", (64, 32))], 2)
    assert "rope_freqs.weight (copy)" not in L.placement(h, 2, 1)  # no layer on the GPU
    place = L.placement(h, 2, 2)  # output + blk.1 on the GPU, blk.0 on the CPU
    assert (place["rope_freqs.weight"], place["rope_freqs.weight (copy)"]) == ("CPU", "GPU")
    assert L.placement(h, 2, 3)["rope_freqs.weight"] == "GPU"  # every layer there: one copy
    gpu = L.model_buffers(h, place, mmap=True)["GPU"]
    # 128 (rope_freqs 32 × f32) + 256 (attn_norm) + 256 (output_norm) + 8,192 (output)
    assert gpu == 128 + 256 + 256 + 8192


def test_lfm2s_token_embd_norm_is_its_output_norm() -> None:
    # src/llama-arch.cpp: LLM_TENSOR_OUTPUT_NORM_LFM2 is named "token_embd_norm" and is an
    # output-layer tensor; LLM_TENSOR_TOKEN_EMBD_NORM (other models) is loaded with block 0
    assert L.tensor_layers("token_embd_norm.weight", 4, "lfm2") == (4,)
    assert L.tensor_layers("token_embd_norm.weight", 4, "bloom") == (0,)
    assert L.tensor_layers("token_embd.weight", 4, "lfm2") == (-1,)
    assert L.tensor_layers("output.bias", 4, "qwen2") == (4,)
    with pytest.raises(Exception, match=r"^tensor 'mystery.weight': llmcalc does not know which "
                       r"layer llama.cpp loads it with \(src/llama-arch.cpp: LLM_TENSOR_INFOS\)$"):
        L.tensor_layers("mystery.weight", 4, "llama")


def test_a_cuda_buffer_pads_quantized_rows_and_aligns_to_128() -> None:
    # ggml-cuda.cu: ggml_backend_cuda_buffer_type_get_alloc_size — a quantized tensor whose ne0 is
    # not a multiple of 512 gets one row part more (q8_0: 34 bytes per 32); alignment 128
    assert L.gpu_alloc_bytes("q8_0", 256, 256 // 32 * 34 * 10) == -(-(2720 + 272) // 128) * 128
    assert L.gpu_alloc_bytes("q8_0", 1024, 1024 // 32 * 34) == -(-1088 // 128) * 128
    assert L.gpu_alloc_bytes("f16", 100, 200) == 256  # not quantized: only aligned


def test_the_kv_cache_on_the_gpu_is_padded_per_tensor(llama: Path) -> None:
    h = read_header(llama)
    base = L.Params(n_ctx=512, n_parallel=1, type_k="q8_0", type_v="q8_0", n_gpu_layers=99)
    plan = L.plan(h, base)
    [gpu] = [d for d in plan.devices if d.name == "GPU"]
    # K per layer: 128-wide rows of q8_0 (136 bytes) × 512 cells, + a row part of 384 (408 bytes)
    assert gpu.kv_k == 2 * -(-(136 * 512 + 408) // 128) * 128
    assert plan.kv_k == gpu.kv_k and plan.total == sum(d.total for d in plan.devices)


def test_memory_table_shows_the_compute_buffer(cli: Any, llama: Path) -> None:
    run = cli("memory", str(llama), "--engine", "llama.cpp")
    assert run.code == 0, run.stderr
    assert "│ compute │  8.01 MiB │" in run.stdout and "│ sum     │ 17.52 MiB │" in run.stdout
    # with layers on a GPU the split compute buffers are not modelled: said, not guessed
    run = cli("memory", str(llama), "--engine", "llama.cpp", "--n-gpu-layers", "1", "--json")
    d = run.json()
    assert d["compute_buffer_bytes"] is None
    assert [v["compute_buffer_bytes"] for v in d["devices"].values()] == [None, None]
    assert d["total_bytes"] == d["model_buffer_bytes"] + d["kv_k_bytes"] + d["kv_v_bytes"]


def test_the_batch_is_limited_by_the_context_as_given() -> None:
    # src/llama-context.cpp: n_batch = min(n_ctx, n_batch) before n_ctx is padded to 256
    c = L.context(L.Params(n_ctx=300, n_batch=512, n_ubatch=333), n_ctx_train=8192)
    assert (c.n_ctx, c.n_batch, c.n_ubatch) == (512, 300, 300)
    c = L.context(L.Params(n_ctx=0, n_batch=4096, n_ubatch=4096), n_ctx_train=1000)
    assert (c.n_ctx, c.n_batch, c.n_ubatch) == (1024, 1000, 1000)
