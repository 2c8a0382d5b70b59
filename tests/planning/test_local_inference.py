"""Local inference: what fits a machine, llama.cpp's offload split, consumer GPUs and Apple silicon."""

from __future__ import annotations

import json
from typing import Any

import pytest

from llmcalc import load_spec
from llmcalc.formulas.memory import kv_cache_bytes, weight_bytes
from llmcalc.formulas.quant import FORMATS, is_routed_expert, layer_weight_bytes
from llmcalc.planning.hardware import GiB, lookup, usable_memory
from llmcalc.planning.local import (
    DEFAULT_RAM_BANDWIDTH,
    LADDER,
    best_fit,
    layer_split,
    layer_unread,
    offload,
)
from llmcalc.units import DType


def test_fit_answers_on_apple_silicon(cli: Any) -> None:
    run = cli("fit", "llama-3-8b", "--gpu", "apple-m3-max", "--json")
    assert run.code == 0, run.stderr
    data = run.json()
    # 3/4 of 128 GiB of unified memory is the GPU's; 10% of that is headroom
    assert data["memory_bytes"] == 96 * GiB
    assert data["usable_bytes"] == usable_memory(96 * GiB, headroom=0.1)
    assert data["ctx"] == 8192  # the model's limit
    table = cli("fit", "llama-3-8b", "--gpu", "apple-m3-max")
    assert "GPU memory (of 128.00 GiB unified)" in table.stdout


def test_what_fits_a_card_lists_models(cli: Any) -> None:
    run = cli("fit", "--gpu", "rtx-4090", "--match", "llama-*", "--json")
    assert run.code == 0, run.stderr
    data = run.json()
    rows = {r["model"]: r for r in data["models"]}
    assert {"llama-2-7b", "llama-2-13b", "llama-3-8b"} <= set(rows)
    assert "llama-2-70b" not in rows  # 70B does not fit 24 GiB even at q4_0
    # each row is what `fit MODEL --dtype FORMAT` says for that model
    for name in ("llama-2-13b", "llama-3-8b"):
        row = rows[name]
        one = cli("fit", name, "--gpu", "rtx-4090", "--dtype", row["format"], "--json").json()
        assert row["weights_bytes"] == one["weight_bytes"]
        assert row["largest_ctx"] == one["ctx"]
    assert rows["llama-2-13b"]["format"] == "fp16" or rows["llama-2-13b"]["format"] == "q8_0"
    # sorted by parameters, largest first
    params = [r["params"] for r in data["models"]]
    assert params == sorted(params, reverse=True)
    table = cli("fit", "--gpu", "rtx-4090", "--match", "llama-2-*")
    assert table.code == 0
    assert "llama-2-13b" in table.stdout and "q8_0" in table.stdout


def test_the_best_format_is_the_first_that_fits() -> None:
    spec = load_spec("llama-2-13b")
    acc = lookup("rtx-4090")
    row = best_fit("llama-2-13b", spec, accelerator=acc)
    usable = usable_memory(acc.memory_bytes, headroom=0.1)
    # fp16 does not fit 24 GiB; q8_0 does, with 4,096 tokens of cache
    assert weight_bytes(spec, dtype=DType.fp16) > usable
    q8 = FORMATS["q8_0"]
    assert row.format == q8
    need = weight_bytes(spec, dtype=q8) + kv_cache_bytes(spec, batch=1, ctx=4096,
                                                         dtype=DType.bf16)
    assert need <= usable
    assert LADDER[1] == q8


def test_offload_splits_layers_by_bytes() -> None:
    spec = load_spec("llama-2-70b")
    acc = lookup("rtx-4090")
    q4 = FORMATS["q4_k_m"]
    o = offload(spec, accelerator=acc, dtype=q4, kv_dtype=DType.fp16, ctx=4096)
    total = weight_bytes(spec, dtype=q4) + kv_cache_bytes(spec, batch=1, ctx=4096,
                                                          dtype=DType.fp16)
    assert o.gpu_bytes + o.cpu_bytes == total
    assert o.gpu_bytes <= o.usable
    # llama.cpp's rule (vendor/llama.cpp src/llama-model.cpp: load_tensors, i_gpu_start =
    # max(n_layer + 1 - ngl, 0)): -ngl counts the output layer as one and places it first, so 43
    # layers and the output layer are -ngl 44 (the old rule kept the output off the GPU)
    assert (o.layers, o.gpu_layers, o.output_on_gpu, o.ngl) == (80, 43, True, 44)
    layer, head, _ = layer_split(spec, q4)
    kv = kv_cache_bytes(spec, batch=1, ctx=4096, dtype=DType.fp16)
    assert o.gpu_bytes == head + sum(layer[80 - 43:]) + kv * 43 // 80
    # a dense model reads every weight it holds but the token embeddings: a row of them (8,192
    # Q4_K elements, 4,608 bytes)
    assert (o.gpu_read, o.cpu_read) == (o.gpu_bytes, o.cpu_bytes - 147_456_000 + 4_608)
    assert o.seconds_per_token == o.gpu_read / acc.bandwidth + o.cpu_read / DEFAULT_RAM_BANDWIDTH
    one_more = offload(spec, accelerator=acc, dtype=q4, kv_dtype=DType.fp16, ctx=4096, ngl=45)
    assert one_more.gpu_bytes > o.usable  # the 44th layer would not fit
    assert offload(spec, accelerator=acc, dtype=q4, kv_dtype=DType.fp16, ctx=4096,
                   ngl=1).gpu_bytes == head  # -ngl 1: the output layer alone


def test_offload_reads_a_tokens_experts_not_all() -> None:
    """Qwen3.6-35B-A3B Q4_K_M on an 8 GB card: 14 of its 40 layers on the GPU, the rest in system
    memory; a token reaches 8 of each layer's 256 experts, so a step reads 248/256 of them less
    than it holds (19.5 GB of experts), and llama.cpp's file holds no vision tower (893 MB BF16)."""
    spec, q4 = load_spec("qwen3.6-35b-a3b"), FORMATS["q4_k_m"]
    o = offload(spec, accelerator=lookup("rtx-4060-ti-8gb"), dtype=q4, kv_dtype=DType.fp16,
                ctx=4096)
    assert (o.gpu_layers, o.ngl) == (14, 15)
    experts = layer_weight_bytes(spec, q4, select=is_routed_expert)
    assert sum(experts) == 19_503_513_600
    unread = layer_unread(spec, q4)
    assert unread == [b * 248 // 256 for b in experts]
    assert o.gpu_read == o.gpu_bytes - sum(unread[26:]) == 993_680_896
    assert o.cpu_read == 1_067_970_688  # of 13,568,109,568 bytes held
    assert round(o.tokens_per_sec, 1) == 65.1  # 5.5 from every byte held


def test_offload_cli(cli: Any) -> None:
    run = cli("fit", "llama-2-70b", "--gpu", "rtx-4090", "--offload", "--dtype", "q4_k_m",
              "--ram-bandwidth", "51.2GB/s", "--json")
    assert run.code == 0, run.stderr
    data = run.json()
    # -ngl counts the output layer first (llama.cpp load_tensors: i_gpu_start =
    # max(n_layer + 1 - ngl, 0)): 43 of the 80 layers and the output layer are -ngl 44
    assert (data["gpu_layers"], data["ngl"], data["ram_bandwidth_bytes_per_sec"]) == (
        43, 44, 51_200_000_000)
    table = cli("fit", "llama-2-70b", "--gpu", "rtx-4090", "--offload", "--dtype", "q4_k_m")
    assert "layers on the GPU (-ngl 44)" in table.stdout
    assert "43 of 80" in table.stdout
    bad = cli("fit", "llama-2-70b", "--gpu", "rtx-4090", "--gpu-layers", "3")
    assert (bad.code, bad.stderr.strip()) == (
        2, "error: --ram-bandwidth and --gpu-layers go with --offload")


def test_a_custom_card_without_flops_asks_for_it(cli: Any) -> None:
    """A card given by its bandwidth alone has no FLOP rate: latency names the option it needs."""
    run = cli("latency", "llama-3-8b", "--gpu-bandwidth", "1.792T")
    assert (run.code, run.stderr.strip()) == (
        2, "error: --gpu-flops is required without --gpu (or pick one with --gpu h100)")
    ok = cli("latency", "llama-3-8b", "--gpu-bandwidth", "1.792T", "--gpu-flops", "209.5T", "--json")
    assert ok.code == 0, ok.stderr


def test_a_card_without_a_published_flops_asks_for_it(cli: Any, flopless_5090: None) -> None:
    run = cli("latency", "llama-3-8b", "--gpu", "rtx-5090")
    assert run.code == 2
    assert run.stderr.strip() == (
        "error: --gpu-flops is required: the table has no published figure for NVIDIA GeForce "
        "RTX 5090 (rtx-5090)")
    ok = cli("latency", "llama-3-8b", "--gpu", "rtx-5090", "--gpu-flops", "209.5T", "--json")
    assert ok.code == 0, ok.stderr


@pytest.mark.parametrize("name", ["rtx-3060", "rtx-4090", "apple-m3-max", "l40s", "a10g",
                                  "rx-7900-xtx", "mi325x"])
def test_the_cards_the_issue_names_are_there(cli: Any, name: str) -> None:
    run = cli("fit", "llama-3.2-3b", "--gpu", name, "--json")
    assert run.code == 0, run.stderr
    assert json.loads(run.stdout)["accelerator"]["name"] == lookup(name).name
