"""llama.cpp's rules without the engine: `memory --engine llama.cpp`'s figures and refusals, and
placement (-ngl, --n-cpu-moe, --override-tensor) held to the pinned source's rule
(vendor/llama.cpp src/llama-model.cpp: load_tensors, i_gpu_start = max(n_layer + 1 − ngl, 0))."""

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


def test_an_hf_config_is_refused_in_one_line(cli: Any) -> None:
    run = cli("memory", "llama-3-8b", "--engine", "llama.cpp")
    assert run.code == 2
    assert run.stderr.strip() == ("error: llama-3-8b: --engine llama.cpp reads a local GGUF file "
                                  "(an HF config with a GGUF quant type is not modelled for this "
                                  "engine yet)")


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
