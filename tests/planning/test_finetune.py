"""Fine-tuning plans: LoRA/QLoRA memory per GPU and FLOPs, train --method and fit --method."""

from __future__ import annotations

import pytest

from llmcalc import load_spec
from llmcalc.formulas.flops import weight_flops_per_token
from llmcalc.formulas.lora import lora_config, resolve_targets
from llmcalc.planning.finetune import Method, Optimizer, plan_finetune
from llmcalc.planning.hardware import lookup


def _qlora_7b(**kw):  # type: ignore[no-untyped-def]
    spec = load_spec("llama-2-7b")
    c = lora_config(r=64, targets=resolve_targets(spec, ["all-linear"]))
    return spec, plan_finetune(spec, method=Method.qlora, lora=c, accelerator=lookup("rtx4090"),
                               ctx=2048, **kw)


def test_qlora_llama_2_7b_memory_parts() -> None:
    spec, p = _qlora_7b(checkpointing=True)
    # peft prints "trainable params: 159,907,840" for Llama-2-7B, r=64, all linear layers (QLoRA)
    assert p.trainable == 159_907_840
    assert p.frozen_bytes == 3_865_835_520  # NF4 + absmax + double quantization, bf16 embeddings
    assert p.states_total == 16 * 159_907_840
    h, s, L = 4096, 2048, 32
    assert p.activations == L * 2 * s * h + 34 * s * h  # inputs kept + one layer recomputed
    assert p.logits == 12 * s * 32_000  # fp32 log-probabilities and two fp32 gradients
    assert p.memory_per_gpu == p.frozen_bytes + p.states_total + p.activations + p.logits
    assert p.fits


def test_frozen_base_is_4n_and_adapters_6() -> None:
    spec, p = _qlora_7b(checkpointing=False)
    assert p.weight_flops_per_token == 2 * weight_flops_per_token(spec) + 6 * 159_907_840
    _, ck = _qlora_7b(checkpointing=True)
    assert ck.weight_flops_per_token == 3 * weight_flops_per_token(spec) + 8 * 159_907_840
    full = plan_finetune(spec, method=Method.full, lora=None, accelerator=lookup("h100"),
                         ctx=2048, checkpointing=False)
    assert full.weight_flops_per_token == 3 * weight_flops_per_token(spec)
    assert full.states_total == 16 * 6_738_415_616 and full.frozen_bytes == 0


def test_8bit_optimizer_bytes() -> None:
    _, p = _qlora_7b(optimizer=Optimizer.paged_adamw_8bit)
    assert p.states_total == 10 * 159_907_840


def test_cli_train_and_fit(cli) -> None:
    r = cli("train", "llama-2-7b", "--method", "lora", "--gpu", "a100", "--lora-r", "16",
            "--ctx", "2k", "--tokens", "10000000", "--json")
    assert r.code == 0
    d = r.json()
    assert d["inputs"]["lora"]["targets"] == ["q_proj", "k_proj", "v_proj", "o_proj"]
    assert (d["trainable"], d["inputs"]["base_format"], d["inputs"]["ctx"]) == (
        16_777_216, "bf16", 2048)
    assert d["memory_per_gpu"]["frozen_base"] == 2 * 6_738_415_616
    assert d["training_flops"] == 10**7 * d["flops_per_token"]["total"]
    assert d["gpu_hours"] == pytest.approx(d["training_flops"] / (312e12 * 0.4) / 3600)
    r = cli("fit", "llama-3-8b", "--method", "qlora", "--gpu", "rtx4090", "--json")
    assert (r.json()["solve_for"], r.json()["ctx"]) == ("ctx", 8192)
    r = cli("fit", "llama-2-70b", "--method", "qlora", "--gpu", "rtx4090", "--json")
    assert r.json()["ctx"] is None  # 36.4 GB of NF4 weights alone
    r = cli("fit", "llama-2-7b", "--method", "qlora", "--gpu", "rtx4090", "--ctx", "4k", "--json")
    assert r.json()["solve_for"] == "micro_batch" and r.json()["micro_batch"] >= 1
