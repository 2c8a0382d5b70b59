"""GGUF files: params, bytes by ggml type and KV cache read exactly from a file's header.

The files are written here with the ``gguf`` package's own writer (llama.cpp's), from the tensor
list of the model transformers builds on the meta device (names mapped with gguf's own
``TensorNameMap``), so a count is held to transformers and a byte figure to the arrays written.
"""

from __future__ import annotations

import json
import struct
from pathlib import Path
from typing import Any

import numpy as np
import pytest

gguf = pytest.importorskip("gguf")
torch = pytest.importorskip("torch")
transformers = pytest.importorskip("transformers")

pytestmark = [pytest.mark.torch, pytest.mark.filterwarnings("ignore::DeprecationWarning")]

Q = gguf.GGMLQuantizationType

LLAMA = {
    "model_type": "llama", "hidden_size": 256, "intermediate_size": 512, "num_hidden_layers": 3,
    "num_attention_heads": 4, "num_key_value_heads": 2, "vocab_size": 320,
    "max_position_embeddings": 2048, "rms_norm_eps": 1e-5, "rope_theta": 500000.0,
    "tie_word_embeddings": False,
}
QWEN2 = {**LLAMA, "model_type": "qwen2", "tie_word_embeddings": True}
QWEN3 = {**LLAMA, "model_type": "qwen3", "head_dim": 128}
QWEN3_MOE = {**QWEN3, "model_type": "qwen3_moe", "num_experts": 4, "num_experts_per_tok": 2,
             "moe_intermediate_size": 256, "decoder_sparse_step": 1, "mlp_only_layers": []}
MIXTRAL = {**LLAMA, "model_type": "mixtral", "num_local_experts": 4, "num_experts_per_tok": 2}

ARCH = {"llama": "llama", "qwen2": "qwen2", "qwen3": "qwen3", "qwen3_moe": "qwen3moe",
        "mixtral": "llama"}
MODEL_ARCH = {"llama": gguf.MODEL_ARCH.LLAMA, "qwen2": gguf.MODEL_ARCH.QWEN2,
              "qwen3": gguf.MODEL_ARCH.QWEN3, "qwen3moe": gguf.MODEL_ARCH.QWEN3MOE}

# Fused expert tensors of transformers 5 (experts.gate_up_proj [E, 2·ff, d], experts.down_proj
# [E, d, ff]) are split by llama.cpp's converter into ffn_{gate,up,down}_exps.
EXPERTS = {"mlp.experts.gate_up_proj": ("ffn_gate_exps", "ffn_up_exps"),
           "mlp.experts.down_proj": ("ffn_down_exps",)}


def hf_tensors(config: dict[str, Any]) -> dict[str, tuple[int, ...]]:
    """Parameter name → shape of the model transformers builds (meta device), tied ones once."""
    cfg = transformers.AutoConfig.for_model(**config)
    with torch.device("meta"):
        model = transformers.AutoModelForCausalLM.from_config(cfg)
    return {n: tuple(p.shape) for n, p in model.named_parameters()}


def gguf_tensors(config: dict[str, Any]) -> dict[str, tuple[int, ...]]:
    """The same tensors under llama.cpp's names, shapes in ggml order (row length first)."""
    arch = ARCH[config["model_type"]]
    names = gguf.get_tensor_name_map(MODEL_ARCH[arch], config["num_hidden_layers"])
    out: dict[str, tuple[int, ...]] = {}
    for name, shape in hf_tensors(config).items():
        fused = next((k for k in EXPERTS if name.endswith(k)), None)
        if fused is not None:
            i = int(name.split(".layers.")[1].split(".")[0])
            parts = EXPERTS[fused]
            e, rows, cols = shape
            for part in parts:
                out[f"blk.{i}.{part}.weight"] = (cols, rows // len(parts), e)
            continue
        base, suffix = name.rsplit(".", 1)
        mapped = names.get_name(base)
        assert mapped is not None, name
        out[f"{mapped}.{suffix}"] = tuple(reversed(shape))
    return out


def write_gguf(path: Path, config: dict[str, Any], types: dict[str, Any] | None = None,
               *, file_type: Any = None, extra: dict[str, tuple[int, ...]] | None = None
               ) -> tuple[dict[str, tuple[int, ...]], int]:
    """A GGUF file of ``config``'s tensors: 2-D and 3-D weights in ``types`` by name suffix (default
    Q8_0), vectors in F32. Returns the tensors and the bytes of the arrays written."""
    arch = ARCH[config["model_type"]]
    tensors = {**gguf_tensors(config), **(extra or {})}
    w = gguf.GGUFWriter(str(path), arch)
    w.add_block_count(config["num_hidden_layers"])
    w.add_context_length(config["max_position_embeddings"])
    w.add_embedding_length(config["hidden_size"])
    w.add_feed_forward_length(config["intermediate_size"])
    w.add_head_count(config["num_attention_heads"])
    w.add_head_count_kv(config["num_key_value_heads"])
    w.add_layer_norm_rms_eps(config["rms_norm_eps"])
    w.add_rope_freq_base(config["rope_theta"])
    if "head_dim" in config:
        w.add_key_length(config["head_dim"])
        w.add_value_length(config["head_dim"])
    experts = config.get("num_experts") or config.get("num_local_experts")
    if experts:
        w.add_expert_count(experts)
        w.add_expert_used_count(config["num_experts_per_tok"])
    if "moe_intermediate_size" in config:
        w.add_expert_feed_forward_length(config["moe_intermediate_size"])
    if file_type is not None:
        w.add_file_type(file_type)
    w.add_array("tokenizer.ggml.tokens", [f"t{i}" for i in range(config["vocab_size"])])
    written = 0
    for name, shape in tensors.items():
        kind = Q.F32 if len(shape) == 1 else next(
            (t for suffix, t in sorted((types or {}).items(), key=lambda kv: -len(kv[0]))
             if name.endswith(suffix)), Q.Q8_0)
        numpy_shape = tuple(reversed(shape))
        if kind in (Q.F32, Q.F16):
            arr = np.zeros(numpy_shape, dtype=np.float32 if kind == Q.F32 else np.float16)
            w.add_tensor(name, arr)
        else:
            byte_shape = gguf.quant_shape_to_byte_shape(numpy_shape, kind)
            arr = np.zeros(byte_shape, dtype=np.uint8)
            w.add_tensor(name, arr, raw_dtype=kind)
        written += arr.nbytes
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()
    return tensors, written


def numel(config: dict[str, Any]) -> int:
    return sum(int(np.prod(s)) for s in hf_tensors(config).values())


@pytest.mark.parametrize("config", [LLAMA, QWEN2, QWEN3, QWEN3_MOE, MIXTRAL],
                         ids=lambda c: c["model_type"])
def test_count_and_bytes_of_a_gguf_file(cli: Any, tmp_path: Path, config: dict[str, Any]) -> None:
    path = tmp_path / "model.gguf"
    types = {"ffn_down.weight": Q.Q6_K, "attn_v.weight": Q.Q6_K, "output.weight": Q.Q6_K,
             "_exps.weight": Q.Q4_K, "token_embd.weight": Q.F16}
    _, written = write_gguf(path, config, {"": Q.Q4_K, **types},
                            file_type=gguf.LlamaFileType.MOSTLY_Q4_K_M)
    count = cli("count", str(path), "--json")
    assert count.code == 0, count.stderr
    data = count.json()
    assert data["total_params"] == numel(config)
    assert data["model_type"] == config["model_type"]
    memory = cli("memory", str(path), "--json", "--ctx", "1000")
    assert memory.code == 0, memory.stderr
    m = memory.json()
    assert m["weights_bytes"] == written
    assert m["dtype"] == "gguf Q4_K_M"
    hd = config.get("head_dim", config["hidden_size"] // config["num_attention_heads"])
    per_token = 2 * config["num_hidden_layers"] * config["num_key_value_heads"] * hd * 2  # f16
    assert m["kv_cache_bytes_per_token"] == per_token
    assert m["kv_cache_bytes"] == per_token * 1000


def test_a_q8_0_llama_file_by_type(cli: Any, tmp_path: Path) -> None:
    path = tmp_path / "llama-q8_0.gguf"
    tensors, written = write_gguf(path, LLAMA, file_type=gguf.LlamaFileType.MOSTLY_Q8_0)
    m = cli("memory", str(path), "--json").json()
    vectors = sum(int(np.prod(s)) for s in tensors.values() if len(s) == 1)
    matrices = numel(LLAMA) - vectors
    assert matrices % 32 == 0
    # Q8_0: 34 bytes per 32 weights (an fp16 scale and 32 int8); vectors f32
    assert m["weights_bytes"] == written == matrices // 32 * 34 + vectors * 4
    assert m["dtype"] == "gguf Q8_0"
    table = cli("memory", str(path))
    assert table.code == 0
    assert "Q8_0" in table.stdout


def test_rope_factors_are_said_not_counted(cli: Any, tmp_path: Path) -> None:
    path = tmp_path / "llama31.gguf"
    write_gguf(path, LLAMA, extra={"rope_freqs.weight": (32,)})
    data = cli("count", str(path), "--json").json()
    assert data["total_params"] == numel(LLAMA)
    assert any("32 elements of llama.cpp's precomputed RoPE factors" in n for n in data["notes"])


def test_a_description_short_of_the_file_says_so(cli: Any, tmp_path: Path) -> None:
    path = tmp_path / "odd.gguf"
    write_gguf(path, LLAMA, extra={"blk.0.attn_extra.weight": (256, 32)})
    data = cli("count", str(path), "--json").json()
    assert data["total_params"] == numel(LLAMA)
    assert (f"the GGUF file's tensor table holds {numel(LLAMA) + 8192:,} parameters; the "
            f"architecture it describes has {numel(LLAMA):,} (+8,192): figures follow the "
            "description") in data["notes"]


def test_flops_and_fit_of_a_gguf_file(cli: Any, tmp_path: Path) -> None:
    path = tmp_path / "model.gguf"
    write_gguf(path, LLAMA)
    config = tmp_path / "config.json"
    config.write_text(json.dumps(LLAMA))
    from_file = cli("flops", str(path), "--ctx", "512", "--json").json()
    from_config = cli("flops", str(config), "--ctx", "512", "--json").json()
    assert from_file["forward_flops_per_sequence"] == from_config["forward_flops_per_sequence"]
    fit = cli("fit", str(path), "--gpu", "rtx4090", "--json")
    assert fit.code == 0, fit.stderr


def test_an_architecture_not_described_still_gets_params_and_bytes(cli: Any, tmp_path: Path
                                                                     ) -> None:
    path = tmp_path / "rwkv.gguf"
    w = gguf.GGUFWriter(str(path), "rwkv7")
    w.add_tensor("token_embd.weight", np.zeros((10, 64), dtype=np.float32))
    w.add_tensor("blk.0.x.weight", np.zeros((2, 34), dtype=np.uint8), raw_dtype=Q.Q8_0)
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()
    run = cli("count", str(path))
    assert run.code == 2
    assert run.stderr.strip() == (
        f"error: {path}: general.architecture 'rwkv7' is not described (known: llama, qwen2, qwen3, "
        "qwen2moe, qwen3moe, gemma2, gemma3, phi3, mamba, lfm2, gpt-oss); the file holds 704 parameters in 2,628 bytes (F32 2,560 B, "
        "Q8_0 68 B); its KV cache and FLOPs cannot be computed"
    )


def _header(version: int = 3, tensors: int = 0, keys: int = 0) -> bytes:
    return b"GGUF" + struct.pack("<IQQ", version, tensors, keys)


def _kv(key: str, vtype: int, payload: bytes) -> bytes:
    k = key.encode()
    return struct.pack("<Q", len(k)) + k + struct.pack("<I", vtype) + payload


@pytest.mark.parametrize(("content", "message"), [
    (b"", "not a GGUF file (shorter than its 24-byte header)"),
    (b"PK\x03\x04" + bytes(40), "not a GGUF file (it does not start with GGUF)"),
    (_header(version=9), "GGUF version 9 is not supported (2 and 3 are)"),
    (_header(tensors=2**40), "1,099,511,627,776 tensors; at most 2,000,000 are read"),
    (_header(keys=2**33), "8,589,934,592 metadata keys; at most 65,536 are read"),
    (_header(keys=1) + _kv("general.architecture", 8, struct.pack("<Q", 2**50)),
     "the GGUF header runs past the end of the file"),
    (_header(keys=1) + _kv("x", 9, struct.pack("<IQ", 9, 3)),
     "not a readable GGUF file (a metadata array of arrays)"),
    (_header(keys=1) + _kv("x", 9, struct.pack("<IQ", 0, 2**60)),
     "not a readable GGUF file (a metadata array of 1,152,921,504,606,846,976 elements (at most "
     "16,000,000))"),
    (_header(keys=1) + _kv("x", 99, b""), "not a readable GGUF file (99 is not a valid "
     "GGUFValueType)"),
])
def test_a_malformed_gguf_is_one_line(cli: Any, tmp_path: Path, content: bytes, message: str
                                      ) -> None:
    path = tmp_path / "bad.gguf"
    path.write_bytes(content)
    run = cli("count", str(path))
    assert run.code == 2
    assert run.stderr.strip() == f"error: {path}: {message}"


def _run(tmp_path: Path, endpoint: str, *args: str, **env: str) -> Any:
    import os
    import subprocess
    import sys

    base = {k: v for k, v in os.environ.items() if not k.startswith(("HF_", "HUGGING"))}
    base.update(PYTHONPATH=str(Path(__file__).resolve().parents[2]), HF_HOME=str(tmp_path / "hf"),
                HF_ENDPOINT=endpoint, HF_HUB_DISABLE_TELEMETRY="1", HF_HUB_DISABLE_XET="1",
                HF_HUB_ETAG_TIMEOUT="5", LLMCALC_CACHE_DIR=str(tmp_path / "cache"), **env)
    return subprocess.run([sys.executable, "-m", "llmcalc", *args], capture_output=True,
                          text=True, env=base, cwd=tmp_path, timeout=120)


def test_a_gguf_repo_is_read_by_range_requests(tmp_path: Path) -> None:
    from helpers.fake_hub import FakeHub, serve

    big = {**LLAMA, "vocab_size": 4096}  # 2.9 MB of Q8_0, far more than the first 1 MiB read
    q8, q4 = tmp_path / "a-Q8_0.gguf", tmp_path / "a-Q4_K_M.gguf"
    _, q8_bytes = write_gguf(q8, big, file_type=gguf.LlamaFileType.MOSTLY_Q8_0)
    _, q4_bytes = write_gguf(q4, big, {"": Q.Q4_K, "output.weight": Q.Q6_K},
                             file_type=gguf.LlamaFileType.MOSTLY_Q4_K_M)
    fake = FakeHub()
    fake.add("org/a-GGUF", {q8.name: q8.read_bytes(), q4.name: q4.read_bytes(), "README.md": b""})
    for hub in serve(fake):
        r = _run(tmp_path, hub.url, "memory", "org/a-GGUF", "--json")
        assert r.returncode == 0, r.stderr
        data = json.loads(r.stdout)
        assert data["model"] == "org/a-GGUF:a-Q4_K_M.gguf"
        assert data["weights_bytes"] == q4_bytes
        r = _run(tmp_path, hub.url, "count", "org/a-GGUF:Q8_0", "--json")
        assert json.loads(r.stdout)["total_params"] == numel(big)
        r = _run(tmp_path, hub.url, "memory", "org/a-GGUF:a-Q8_0.gguf", "--json")
        assert json.loads(r.stdout)["weights_bytes"] == q8_bytes
        gets = [(m, p, rng) for m, p, rng in hub.log if p.endswith(".gguf") and m == "GET"]
        assert gets == [("GET", f"/org/a-GGUF/resolve/main/{q4.name}", "bytes=0-1048575"),
                        ("GET", f"/org/a-GGUF/resolve/main/{q8.name}", "bytes=0-1048575")]
        # the headers are kept: offline, the same answers
        r = _run(tmp_path, hub.url, "memory", "org/a-GGUF:Q8_0", "--json", HF_HUB_OFFLINE="1")
        assert r.returncode == 0, r.stderr
        assert json.loads(r.stdout)["weights_bytes"] == q8_bytes
        r = _run(tmp_path, hub.url, "count", "org/a-GGUF:Q2_K")
        mb = [f"{p.stat().st_size / 10**6:.1f} MB" for p in (q4, q8)]
        assert (r.returncode, r.stderr) == (2, "error: org/a-GGUF: no GGUF file 'Q2_K'; its "
                                            f"files: Q4_K_M ({mb[0]}), Q8_0 ({mb[1]})\n")


def test_offload_of_a_gguf_file_uses_its_layers_bytes(cli: Any, tmp_path: Path) -> None:
    path = tmp_path / "model.gguf"
    write_gguf(path, LLAMA, {"": Q.Q4_K, "ffn_down.weight": Q.Q6_K})
    header = __import__("llmcalc.inputs.gguf_file", fromlist=["read_header"]).read_header(path)
    blk = [sum(t.nbytes for t in header.tensors if t.name.startswith(f"blk.{i}."))
           for i in range(3)]
    head = sum(t.nbytes for t in header.tensors if t.name.startswith("output"))
    kv = 2 * 3 * 2 * 64 * 2 * 1024 // 3  # f16 K and V of 1,024 tokens, a third per layer
    # llama.cpp counts the output layer as one of -ngl's and places it first (vendor/llama.cpp
    # src/llama-model.cpp: load_tensors, i_gpu_start = max(n_layer + 1 - ngl, 0)): room for the
    # output layer and the last two layers is -ngl 3
    run = cli("fit", str(path), "--offload", "--ctx", "1024", "--gpu-mem",
              f"{(head + blk[1] + blk[2] + 2 * kv) * 10 // 9 + 9}B", "--gpu-bandwidth",
              "100GB/s", "--json")
    assert run.code == 0, run.stderr
    data = run.json()
    assert (data["layers"], data["gpu_layers"], data["ngl"], data["output_on_gpu"]) == (3, 2, 3,
                                                                                         True)
    assert data["gpu_bytes"] == head + blk[1] + blk[2] + 2 * kv
