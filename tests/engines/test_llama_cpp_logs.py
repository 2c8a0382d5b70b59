"""fit --engine llama.cpp held to real llama.cpp start-up logs (the llama.cpp rows of
tests/data/engine_logs.json): the cells the log counts (kv_cache_tokens), the KV size it prints
("llama_kv_cache_unified: size = … MiB", "KV self size"), the per-device KV buffers of a layer
split, and the keys every engine's fit prints (kv_cache_bytes, kv_cache_tokens, max_concurrency)."""

from __future__ import annotations

import json
import statistics
from pathlib import Path
from typing import Any

import pytest

from llmcalc.choices import parse_engine
from llmcalc.errors import UsageError
from llmcalc.planning.engines import llama_cpp as L

MiB = 2**20
LOGS = [r for r in json.loads((Path(__file__).parents[1] / "data" / "engine_logs.json")
                              .read_text())["logs"] if r["engine"].startswith("llama.cpp")]
BY_ID = {r["id"]: r for r in LOGS}
DOC = Path(__file__).parents[2] / "docs" / "serving-engines.md"

# llmcalc's cells and KV MiB for each log (docs/serving-engines.md states each with its error)
PREDICTED = {
    "llamacpp-b6209-rpc2-llama31-70b-q4_0": (4096, "1280.00"),
    "llamacpp-b5935-rpc2-llama31-405b-q4_0": (4096, "2016.00"),
    "llamacpp-server-mistral7b-32k": (32768, "4096.00"),
    "llamacpp-server-mistral7b-2k": (2048, "256.00"),
    "llamacpp-b7495-3090-qwen3-0.6b-q8kv": (20224, "1175.12"),
    "llamacpp-b5558-rtx5000x4-command-a-240k": (240000, "7932.00"),  # its log gives no MiB
    "llamacpp-b9966-qwen36-35b-a3b-np3": (98304, "1020.00"),  # nor this one: 3 × 32,768
    "llamacpp-qwen3-tts-32k": (32768, "3584.00"),
    "llamacpp-qwen3-tts-4k": (4096, "448.00"),
    "llamacpp-strix-halo-qwen3-next-300k": (300032, "7032.00"),
    "llamacpp-b10107-gemma3-270m-np3": (1536, "27.00"),
    "llamacpp-b10107-gemma3-270m-np4": (1024, "18.00"),
    "llamacpp-8gpu-deepseek-r1-np8-q4k": (16384, "308.81"),  # its MiB: pre-MLA, not compared
    # held out (docs/serving-engines.md, "Held out")
    "llamacpp-b8247-cpu-llama32-3b-f16": (4096, "448.00"),
    "llamacpp-b8247-cpu-llama32-3b-q8k": (4096, "343.00"),
    "llamacpp-b8247-cpu-llama32-3b-q4kv-fa": (4096, "126.00"),
    "llamacpp-b5581-cpu-llama3-8b-q8": (4096, "512.00"),
}


def _args(row: dict[str, Any], *extra: str) -> list[str]:
    where = ["--gpu", row["gpu"]] if "gpu" in row else ["--gpu-mem", row["gpu_mem"]]
    return ["fit", row["model"], "--engine", row["engine"], "--tp", str(row["tp"]), *where,
            *row["flags"], "--json", *extra]


def test_every_llama_cpp_row_is_predicted() -> None:
    assert set(PREDICTED) == set(BY_ID)


@pytest.mark.parametrize("log_id", sorted(PREDICTED))
def test_cells_and_kv_size_per_log(cli: Any, log_id: str) -> None:
    row = BY_ID[log_id]
    r = cli(*_args(row))
    assert r.code == 0, r.stderr
    data = json.loads(r.stdout)
    cells, mib = PREDICTED[log_id]
    assert data["kv_cache_tokens"] == cells == row["tokens"]
    assert f"{data['kv_cache_logged_bytes'] / MiB:.2f}" == mib
    assert row["kv_mib"] in (mib, None)
    streams = row.get("streams", 1)
    assert (data["kv_cache_streams"], data["max_concurrency"]) == (streams, float(streams))
    assert data["kv_cache_cells"] == row.get("cells", cells)  # one stream's, as the log counts


def test_docs_state_each_log_and_its_error() -> None:
    doc = DOC.read_text()
    errors = [abs(c - BY_ID[i]["tokens"]) / BY_ID[i]["tokens"] for i, (c, _) in PREDICTED.items()]
    assert (statistics.median(errors), sum(e > 0.10 for e in errors), len(errors)) == (0, 0, 17)
    assert "Every row is exact: median error 0.0% over these 17, none off by more than 10%." in doc
    lines = {line.split(" | ")[0]: line for line in DOC.read_text().splitlines()
             if line.startswith("| llamacpp-")}
    for log_id, (cells, mib) in PREDICTED.items():
        row = BY_ID[log_id]
        error = (cells - row["tokens"]) / row["tokens"]
        assert lines[f"| {log_id}"].endswith(
            f"| {row['tokens']:,} | {cells:,} | {'+' if error >= 0 else '−'}{abs(error):.1%} | "
            f"{row['kv_mib'] or '—'} | {mib} |"), log_id


def test_the_layer_split_over_two_devices_is_the_logs(cli: Any) -> None:
    """src/llama-model.cpp: load_tensors — 81 layers (the output one counted) over two equal
    devices: layers 0…40 on the first (41 × 16 MiB = 656), 41…79 on the second (624)."""
    row = BY_ID["llamacpp-b6209-rpc2-llama31-70b-q4_0"]
    data = json.loads(cli(*_args(row)).stdout)
    per_device = [f"{data['kv_cache_bytes_by_device'][d] / MiB:.2f}" for d in ("CUDA0", "CUDA1")]
    assert per_device == row["kv_mib_per_device"] == ["656.00", "624.00"]
    assert data["kv_cache_bytes"] == 656 * MiB  # per GPU: the most one card holds
    assert L.layer_gpus(80, 999, 2) == (0,) * 41 + (1,) * 40
    assert L.layer_gpus(4, 2, 2) == (-1, -1, -1, 0, 1)


def test_layers_per_card_over_eight_cards(cli: Any) -> None:
    """llama.cpp#9390: 61 layers and the output one over 8 equal cards hold 8, 8, 8 and 7 layers
    on the first four (5,824 MiB thrice, then 5,096: 7/8 of it); llmcalc's split is the same."""
    row = BY_ID["llamacpp-8gpu-deepseek-r1-np8-q4k"]
    per = json.loads(cli(*_args(row)).stdout)["kv_cache_bytes_by_device"]
    logged = [float(x) for x in row["kv_mib_per_device"]]
    ours = [per[f"CUDA{i}"] for i in range(4)]
    assert [round(8 * b / ours[0]) for b in ours] == [round(8 * m / logged[0]) for m in logged] \
        == [8, 8, 8, 7]
    assert L.layer_gpus(61, 1000, 8)[:32] == (0,) * 8 + (1,) * 8 + (2,) * 8 + (3,) * 7 + (4,)


def test_cells_from_a_logged_kv_size(cli: Any) -> None:
    """--kv-memory: the cells a logged "size = … MiB" holds (one cell of Llama 3.1 70B is
    0.3125 MiB), and every log's own figure gives back its cells."""
    row = BY_ID["llamacpp-b6209-rpc2-llama31-70b-q4_0"]
    for size, cells in (("1280MiB", 4096), ("1280.1MiB", 4096), ("1279.6MiB", 4095)):
        data = json.loads(cli(*_args(row, "--kv-memory", size)).stdout)
        assert (data["kv_cache_tokens"], data["kv_cache_tokens_from_log"]) == (cells, True)
    for log_id in PREDICTED:
        other = BY_ID[log_id]
        if other["kv_mib"] is not None:
            back = json.loads(cli(*_args(other, "--kv-memory", f"{other['kv_mib']}MiB")).stdout)
            assert back["kv_cache_tokens"] == other["tokens"], log_id


def test_max_model_len_is_ctx_size(cli: Any) -> None:
    base = ["fit", "mistral-7b", "--engine", "llama.cpp", "--gpu", "rtx-4090", "--json"]
    a = json.loads(cli(*base, "--max-model-len", "10000").stdout)
    b = json.loads(cli(*base, "--ctx-size", "10000").stdout)
    assert a["kv_cache_tokens"] == b["kv_cache_tokens"] == 10240  # GGML_PAD(10000, 256)
    r = cli(*base, "-c", "4096", "--max-model-len", "4096")
    assert r.code == 2
    assert r.stderr.strip() == "error: --ctx-size and --max-model-len are the same flag: give one"


def test_separate_streams_and_their_concurrency(cli: Any) -> None:
    """-np 4 --no-kv-unified: each of 4 streams holds n_ctx / 4 cells (the log's "4096 cells,
    … 4/4 seqs"), 16,384 in all, 4 sequences of n_ctx_seq at once; unified: one stream of
    n_ctx."""
    base = ["fit", "mistral-7b", "--engine", "llama.cpp", "--gpu", "h100", "-c", "16384",
            "-np", "4", "--json"]
    split = json.loads(cli(*base, "--no-kv-unified").stdout)
    assert (split["kv_cache_tokens"], split["kv_cache_cells"], split["kv_cache_streams"],
            split["max_concurrency"], split["max_model_len"]) == (16384, 4096, 4, 4.0, 4096)
    unified = json.loads(cli(*base, "--kv-unified").stdout)
    assert (unified["kv_cache_tokens"], unified["kv_cache_streams"],
            unified["max_concurrency"]) == (16384, 1, 1.0)
    assert split["kv_cache_bytes"] == unified["kv_cache_bytes"] == 2048 * MiB


def test_a_model_without_a_gguf_conversion_gets_its_cache(cli: Any) -> None:
    """gpt-oss: llama_kv_cache_iswa — 12 full layers of n_ctx cells, 12 sliding ones of
    pad256(128 × 4 + 512) = 1024 cells with llama-server's 4 unified slots (768 with -np 1)."""
    base = ["fit", "gpt-oss-20b", "--engine", "llama.cpp", "--gpu", "h100", "-c", "32768",
            "--json"]
    data = json.loads(cli(*base).stdout)
    caches = [(c["kind"], c["cells"], c["layers"]) for c in data["plan"]["caches"]]
    assert caches == [("full", 32768, 12), ("swa", 1024, 12)]
    assert data["kv_cache_tokens"] == 32768
    # 12 × 32768 × 1024 B + 12 × 1024 × 1024 B (8 KV heads × 64, K and V, f16)
    assert data["kv_cache_bytes"] == 12 * 32768 * 2048 + 12 * 1024 * 2048
    one = json.loads(cli(*base, "-np", "1").stdout)
    assert [c["cells"] for c in one["plan"]["caches"]] == [32768, 768]


def test_table_shows_the_engine_keys(cli: Any) -> None:
    r = cli("fit", "mistral-7b", "--engine", "llama.cpp", "--gpu", "rtx-4090", "-c", "8192")
    assert r.code == 0
    assert "kv_cache_bytes" in r.stdout and "1,024.00 MiB on the GPU" in r.stdout
    assert "8,192 cells" in r.stdout and "1.00 × 8,192 tokens" in r.stdout


def test_padding_follows_the_build(cli: Any) -> None:
    """n_ctx's padding: 256 since llama.cpp#17046; 32 without flash attention (256 with it) in a
    build up to b6969 — the Command-A log's 240,000 cells at b5558, flash attention off."""
    row = BY_ID["llamacpp-b5558-rtx5000x4-command-a-240k"]
    base = ["fit", row["model"], "--gpu", "h100", "-c", "240000", "--json"]
    got = [json.loads(cli(*base, "--engine", engine, *extra).stdout)["kv_cache_tokens"]
           for engine, extra in (("llama.cpp==b5558", []), ("llama.cpp==b5558", ["-fa", "on"]),
                                 ("llama.cpp", []), ("llama.cpp==b7495", []))]
    assert got == [240000, 240128, 240128, 240128]


def test_kv_in_host_memory_and_one_gpu(cli: Any) -> None:
    """-nkvo: every layer's KV in host memory (0 on the GPUs); -sm none: the main GPU alone."""
    base = ["fit", "mistral-7b", "--engine", "llama.cpp", "--gpu", "h100", "-c", "8192",
            "--json"]
    host = json.loads(cli(*base, "-nkvo").stdout)
    assert host["kv_cache_bytes_by_device"] == {"CPU": 1024 * MiB, "CUDA0": 0}
    one = json.loads(cli(*base, "--gpus", "2", "-sm", "none").stdout)
    assert one["kv_cache_bytes_by_device"] == {"CPU": 0, "CUDA0": 1024 * MiB}
    split = json.loads(cli(*base, "--gpus", "2").stdout)
    # 33 layers (the output one counted) over two cards: blocks 0…16 and 17…31
    assert split["kv_cache_bytes_by_device"] == {"CPU": 0, "CUDA0": 17 * 32 * MiB,
                                                 "CUDA1": 15 * 32 * MiB}


def test_build_numbers_are_llama_cpp_versions() -> None:
    assert str(parse_engine("llama.cpp==b6209")) == "llama.cpp==b6209"
    with pytest.raises(UsageError, match="a version is digits and dots"):
        parse_engine("vllm==b6209")


def test_an_older_build_without_c_takes_4096(cli: Any) -> None:
    """Up to b6969 the default n_ctx was 4,096 (the Arm logs at b5935 and b6209 were run without
    -c); later llama-server takes the model's n_ctx_train (0) and --fit."""
    row = BY_ID["llamacpp-b6209-rpc2-llama31-70b-q4_0"]
    args = [a for a in _args(row) if a not in ("-c", "4096")]
    assert json.loads(cli(*args).stdout)["kv_cache_tokens"] == 4096
    new = json.loads(cli("fit", "mistral-7b", "--engine", "llama.cpp", "--gpu", "h100",
                         "--json").stdout)
    assert new["kv_cache_tokens"] == 32768  # mistral-7b's max_position_embeddings


def test_ngl_all_and_quant_types_not_written(cli: Any) -> None:
    base = ["fit", "mistral-7b", "--engine", "llama.cpp", "--gpu", "rtx-4090", "-c", "8192",
            "--json"]
    data = json.loads(cli(*base, "-ngl", "all").stdout)
    assert data["n_gpu_layers"] == 33 and data["kv_cache_bytes"] == 1024 * MiB
    q5 = json.loads(cli(*base, "--dtype", "q5_k_m").stdout)
    assert q5["kv_cache_tokens"] == 8192
    # every llama-quantize type is written as its own mix (gguf_mix); a type it does not write
    # (Q1_0, new in the engine) is still taken as the nearest one
    assert q5["notes"][0].startswith("weights as llama.cpp's default GGUF Q5_K_M mix gives them")
    q1 = json.loads(cli(*base, "--dtype", "q1_0").stdout)
    assert q1["kv_cache_tokens"] == 8192
    assert q1["notes"][0].startswith("--dtype q1_0: weights taken as q4_k_m (llmcalc writes the "
                                     "GGUF of q4_0, q4_1, q5_0, q5_1, q8_0, mxfp4_moe, q2_k, ")
    mx = json.loads(cli("fit", "qwen3-30b-a3b", "--engine", "llama.cpp", "--gpu", "h100", "-c",
                        "8192", "--dtype", "mxfp4", "--json").stdout)
    assert mx["notes"][0] == ("--dtype mxfp4: written as llama-quantize's MXFP4_MOE (3-D expert "
                              "tensors MXFP4, every other quantized tensor Q8_0)")
    r = cli(*base, "-ngl", "most")
    assert (r.code, r.stderr.strip()) == (
        2, "error: --n-gpu-layers most: a number of layers, all or auto")
