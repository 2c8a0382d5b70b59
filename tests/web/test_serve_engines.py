"""The page's serving-engine rows: fit --engine at the page's context and GPUs."""

from __future__ import annotations

from typing import Any

from llmcalc.web import api


def test_engine_rows_equal_the_cli_and_a_refusal_has_no_command(cli: Any) -> None:
    got = api.calculate({"model": {"name": "llama-3.1-8b"}, "ctx": "128k", "batch": "1",
                         "gpu": "rtx-3090", "gpus": 1})
    vllm = got["engine_vllm"]
    assert vllm["starts"] is False and "engine_vllm" not in got["commands"]
    assert vllm["kv_cache_tokens"] == 39072
    run = cli("fit", "llama-3.1-8b", "--gpu", "rtx-3090", "--engine", "vllm", "--tp", "1",
              "--max-model-len", "128k", "--json")
    assert run.code == 1 and run.json() == vllm
    assert got["commands"]["engine_sglang"] == (
        "llmcalc fit llama-3.1-8b --gpu rtx-3090 --engine sglang --tp 1 --max-model-len 128k "
        "--json")


def test_a_hybrid_model_is_unavailable_in_the_engines_words(cli: Any) -> None:
    # Granite 4.0-H's Mamba-2 follows vLLM's hybrid allocator now (the CLI's figure);
    # TensorRT-LLM's hybrid cache is not followed yet, in its words
    got = api.calculate({"model": {"name": "granite-4.0-h-small"}, "ctx": "4k", "batch": "1",
                         "gpu": "h200", "gpus": 2})
    run = cli("fit", "granite-4.0-h-small", "--gpu", "h200", "--engine", "vllm", "--tp", "2",
              "--max-model-len", "4k", "--json")
    assert got["engine_vllm"]["kv_cache_tokens"] == run.json()["kv_cache_tokens"] == 5514179
    assert got["unavailable"]["engine_trtllm"] == (
        "--engine trtllm: ibm-granite/granite-4.0-h-small keeps recurrent state beside its KV "
        "cache; llmcalc does not follow that engine's hybrid allocator yet")


def test_the_offload_panel_is_the_clis(cli: Any) -> None:
    # fit --offload at the page's context: llama.cpp's -ngl with the output layer counted first
    got = api.calculate({"model": {"name": "llama-2-70b"}, "ctx": "4k", "batch": "1",
                         "gpu": "rtx-4090", "gpus": 1, "dtype": "q4_k_m"})
    assert got["commands"]["offload"] == ("llmcalc fit llama-2-70b --gpu rtx-4090 --offload --ctx "
                                          "4k --dtype q4_k_m --json")
    run = cli("fit", "llama-2-70b", "--gpu", "rtx-4090", "--offload", "--ctx", "4k", "--dtype",
              "q4_k_m", "--json")
    assert run.code == 0 and run.json() == got["offload"]
    assert (got["offload"]["ngl"], got["offload"]["gpu_layers"]) == (44, 43)


def test_quantized_weights_take_each_engines_own_cache(cli: Any) -> None:
    """The engine rows size the cache fit --engine sizes: TensorRT-LLM's FP8 beside NVFP4 weights
    (Model Optimizer's), vLLM's and SGLang's bf16 beside FP8 weights (their "auto"); weights an
    engine does not run are its row's refusal, in the CLI's words."""
    got = api.calculate({"model": {"name": "llama-3.1-8b"}, "ctx": "4k", "batch": "1",
                         "gpu": "b200", "gpus": 1, "dtype": "nvfp4"})
    per_token = {n: got[f"engine_{n}"]["kv_bytes_per_token"] for n in ("vllm", "sglang", "trtllm")}
    assert per_token == {"vllm": 131_072, "sglang": 131_072, "trtllm": 65_536}
    for n in ("vllm", "trtllm"):
        run = cli("fit", "llama-3.1-8b", "--gpu", "b200", "--engine", n, "--tp", "1",
                  "--max-model-len", "4k", "--dtype", "nvfp4", "--json")
        assert run.code == 0 and run.json() == got[f"engine_{n}"]
    gguf = api.calculate({"model": {"name": "llama-3.1-8b"}, "ctx": "4k", "batch": "1",
                          "gpu": "h100", "gpus": 1, "dtype": "q4_k_m"})
    run = cli("fit", "llama-3.1-8b", "--gpu", "h100", "--engine", "trtllm", "--tp", "1",
              "--max-model-len", "4k", "--dtype", "q4_k_m")
    assert gguf["unavailable"]["engine_trtllm"] == run.stderr.removeprefix("error: ").strip()
    assert "engine_trtllm" not in gguf["commands"]
