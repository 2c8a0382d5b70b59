"""Nonsense refused in one line, exit 2."""

from __future__ import annotations

from typing import Any


def test_latency_tp_must_divide_the_heads(cli: Any) -> None:
    r = cli("latency", "llama", "--gpu", "h100", "--tp", "1099511627776")
    assert (r.code, r.stdout) == (2, "")
    assert r.stderr == (
        "error: --tp 1099511627776: llama (transformers defaults)'s 32 attention heads and 32 KV "
        "heads do not split evenly over 1099511627776 GPUs; use a --tp that divides them\n")
    r = cli("latency", "llama-3-8b", "--gpu", "h100", "--tp", "3")
    assert (r.code, r.stderr) == (2, (
        "error: --tp 3: meta-llama/Meta-Llama-3-8B's 32 attention heads and 8 KV heads do not "
        "split evenly over 3 GPUs; use a --tp that divides them\n"))
    ok = cli("latency", "llama-3-8b", "--gpu", "h100", "--tp", "8", "--json")
    assert (ok.code, ok.json()["inputs"]["tp"]) == (0, 8)


def test_train_tp_must_divide_the_heads(cli: Any) -> None:
    """As Megatron-LM asserts: 2^40-way tensor parallelism of 32 heads is refused, not planned
    at 2 B of weights a GPU; a --tp dividing the heads but not Llama-3-8B's 8 KV heads too."""
    r = cli("train", "llama", "--gpu", "h100", "--gpus", "1099511627776", "--tp",
            "1099511627776", "--ctx", "2k")
    assert (r.code, r.stdout) == (2, "")
    assert r.stderr == (
        "error: --tp 1099511627776: llama (transformers defaults)'s 32 attention heads and 32 KV "
        "heads do not split evenly over 1099511627776 GPUs; use a --tp that divides them\n")
    r = cli("train", "llama-3-8b", "--gpu", "h100", "--gpus", "16", "--tp", "16", "--json")
    assert (r.code, r.stderr) == (2, (
        "error: --tp 16: meta-llama/Meta-Llama-3-8B's 32 attention heads and 8 KV heads do not "
        "split evenly over 16 GPUs; use a --tp that divides them\n"))
    ok = cli("train", "llama-3-8b", "--gpu", "h100", "--gpus", "8", "--tp", "8", "--json")
    assert (ok.code, ok.json()["parallelism"]["tp"]) == (0, 8)


def test_fp4_on_an_moe_says_the_experts_stay_bf16(cli: Any) -> None:
    # Qwen3.6-35B-A3B: 40 layers × 256 experts × 3 projections × 2,048 × 512 in fused parameters,
    # 2 bytes each in bf16
    experts = 40 * 256 * 3 * 2048 * 512
    note = (f"fp4: bitsandbytes quantizes only nn.Linear, so the fused expert weights "
            f"({experts:,} parameters, {2 * experts:,} bytes) stay bf16")
    assert (experts, 2 * experts) == (32_212_254_720, 64_424_509_440)
    model = ("qwen3.6-35b-a3b", "--dtype", "fp4")
    for command in (("memory", *model), ("memory", *model, "--format", "csv"),
                    ("fit", *model, "--gpu", "h100"), ("latency", *model, "--gpu", "h100")):
        r = cli(*command)
        assert r.code == 0 and " ".join(r.stderr.split()) == f"note: {note}", command
        assert "note:" not in r.stdout and "bitsandbytes" not in r.stdout
        if "--format" not in command:
            assert cli(*command, "--json").json()["notes"] == [note], command
    # a comparison names the model in each note
    r = cli("fit", "qwen3.6-35b-a3b", "llama-3-8b", "--gpu", "h100", "--dtype", "fp4")
    assert (r.code, " ".join(r.stderr.split())) == (0, f"note: qwen3.6-35b-a3b: {note}")
    assert cli("memory", "llama-3-8b", "--dtype", "nf4", "--json").json()["notes"] == []
    assert cli("fit", "qwen3.6-35b-a3b", "--gpu", "h100", "--dtype", "nvfp4",
               "--json").json()["notes"] == []
    # QLoRA's frozen NF4 base: the same experts stay bf16
    nf4 = note.replace("fp4:", "nf4:", 1)
    r = cli("train", "qwen3.6-35b-a3b", "--gpu", "h100", "--method", "qlora")
    assert (r.code, " ".join(r.stderr.split())) == (0, f"note: {nf4}")
    assert cli("train", "qwen3.6-35b-a3b", "--gpu", "h100", "--method", "qlora",
               "--json").json()["notes"] == [nf4]
    assert cli("fit", "qwen3.6-35b-a3b", "--gpu", "h200", "--method", "qlora",
               "--json").json()["plan"]["notes"] == [nf4]


def test_mxfp4_on_a_dense_model_says_every_weight_stays_bf16(cli: Any) -> None:
    note = ("mxfp4: gpt-oss's layout puts only a mixture's experts in MXFP4; "
            "meta-llama/Llama-3.1-8B has no experts, so every weight stays bf16 (a GGUF file of "
            "llama-quantize's MXFP4_MOE type is --dtype mxfp4_moe)")
    for command in (("memory", "llama-3.1-8b", "--dtype", "mxfp4"),
                    ("latency", "llama-3.1-8b", "--gpu", "rtx-4090", "--dtype", "mxfp4",
                     "--engine", "llama.cpp")):
        r = cli(*command)
        assert r.code == 0 and " ".join(r.stderr.split()) == f"note: {note}", command
        out = cli(*command, "--json").json()
        assert out["notes"] == [note], command
    # 8,030,261,248 parameters, 2 bytes each: the bf16 bytes, as the note says
    assert cli("memory", "llama-3.1-8b", "--dtype", "mxfp4", "--json").json()["weights_bytes"] == (
        2 * 8_030_261_248)
    # a mixture's experts do go to MXFP4: no note; llama.cpp's MXFP4_MOE type has none either
    assert cli("memory", "gpt-oss-20b", "--dtype", "mxfp4", "--json").json()["notes"] == []
    assert cli("memory", "llama-3.1-8b", "--dtype", "mxfp4_moe", "--json").json()["notes"] == []


def test_a_set_error_blames_the_set(cli: Any) -> None:
    r = cli("count", "gpt2", "--set", "n_layer=-1")
    assert (r.code, r.stdout, r.stderr) == (
        2, "", "error: --set n_layer=-1: n_layer must be a positive integer, got -1\n")
    r = cli("count", "gpt2", "--set", "n_head=7")
    assert (r.code, r.stderr) == (2, "error: --set n_head=7: n_head (7) must divide n_embd (768) "
                                     "when head_dim is not given\n")


def test_not_planned_gives_its_reason(cli: Any) -> None:
    reason = ("llama-3.2-11b-vision (reads images through cross-attention, whose cache and FLOPs "
              "depend on the images: size it with memory --images)")
    r = cli("fit", "--gpu", "h100", "--match", "llama-3.2-11b*")
    assert r.code == 0
    assert f"not planned (1): {reason}" in " ".join(r.stdout.split())
    assert cli("fit", "--gpu", "h100", "--match", "llama-3.2-11b*", "--json").json()[
        "skipped"] == [reason]


def test_an_offload_split_of_a_trillion_layers_names_the_model(cli: Any) -> None:
    r = cli("fit", "llama", "--gpu", "h100", "--offload", "--set",
            "num_hidden_layers=1000000000000")
    assert (r.code, r.stdout) == (2, "")
    assert r.stderr == ("error: --offload: llama (transformers defaults) has 1,000,000,000,000 "
                        "layers; a split is searched layer by layer, over at most 65,536\n")


def test_latency_engine_refuses_what_it_does_not_run(cli: Any) -> None:
    """No expected speed on an engine that does not run the model, by its plan's own rule:
    TensorRT-LLM 1.0 (1.0.1 too) and vLLM before 0.11 have no DeepSeek sparse attention, vLLM
    before V1 no gated-delta layers; later releases are given a figure."""
    refusals = [  # (model, card, tp, --engine, the line), each exit 2 with nothing on stdout
        ("deepseek-v3.2-exp", "h200", "8", "trtllm",
         "error: --engine trtllm==1.0: deepseek-ai/DeepSeek-V3.2-Exp has DeepSeek sparse "
         "attention, which TensorRT-LLM 1.0 does not run (it came after 1.0: "
         "NVIDIA/TensorRT-LLM#9141); use --engine vllm or --engine sglang\n"),
        ("deepseek-v3.2-exp", "h200", "8", "vllm==0.10.2",
         "error: --engine vllm==0.10.2: deepseek-ai/DeepSeek-V3.2-Exp has DeepSeek sparse "
         "attention, which vLLM runs (with its indexer cache) from 0.11; use --engine vllm==0.11 "
         "or later\n"),
        ("qwen3-next-80b-a3b", "h100", "4", "vllm==0.7",
         "error: --engine vllm: Qwen/Qwen3-Next-80B-A3B-Instruct keeps gated-delta state, which "
         "vLLM runs on V1 (--engine vllm==0.8 or later) beside attention only\n"),
        ("glm-5", "h200", "8", "trtllm==1.0.1",
         "error: --engine trtllm==1.0.1: zai-org/GLM-5 has DeepSeek sparse attention, which "
         "TensorRT-LLM 1.0 does not run (it came after 1.0: NVIDIA/TensorRT-LLM#9141); use "
         "--engine vllm or --engine sglang\n"),
    ]
    for model, card, tp, engine, line in refusals:
        r = cli("latency", model, "--gpu", card, "--tp", tp, "--engine", engine)
        assert (r.code, r.stdout, r.stderr) == (2, "", line)
    for engine in ("vllm", "trtllm==1.1"):
        ok = cli("latency", "deepseek-v3.2-exp", "--gpu", "h200", "--tp", "8", "--engine", engine,
                 "--json")
        assert (ok.code, ok.stderr) == (0, "")
        assert ok.json()["expected"]["prefill_tokens_per_s"] > 0
