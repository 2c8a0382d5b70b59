"""LoRA counts against peft: the model built on the meta device, get_peft_model applied."""

from __future__ import annotations

from typing import Any

import pytest

from llmcalc import load_spec
from llmcalc.formulas.lora import lora_config, lora_count, resolve_targets
from llmcalc.model.spec import ModelSpec

ATTN = ("q_proj", "k_proj", "v_proj", "o_proj")


def _peft(spec: ModelSpec, **kw: Any) -> tuple[int, int]:
    pytest.importorskip("peft")
    import warnings

    from peft import LoraConfig, get_peft_model

    from llmcalc.verify.reference import build_meta_model

    model = build_meta_model(spec)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        peft_model = get_peft_model(model, LoraConfig(**kw))
    return peft_model.get_nb_trainable_parameters()


def _ours(spec: ModelSpec, **kw: Any) -> tuple[int, int]:
    targets = kw.get("target_modules") or ()
    targets = [targets] if isinstance(targets, str) else list(targets)
    c = lora_config(
        r=kw.get("r", 8), alpha=kw.get("lora_alpha", 8),
        targets=resolve_targets(spec, targets),
        experts=bool(kw.get("target_parameters")),
        modules_to_save=kw.get("modules_to_save") or (), dora=kw.get("use_dora", False),
    )
    lc = lora_count(spec, c)
    return lc.trainable, lc.total


def _cut(name: str, layers: int = 2) -> ModelSpec:
    field = {"gpt2": "n_layer", "gpt-j": "n_layer", "bloom": "n_layer", "mpt-": "n_layers",
             "starcoder": "n_layer"}.get(next((k for k in ("gpt2", "gpt-j", "bloom", "mpt-",
                                                            "starcoder") if name.startswith(k)), ""),
                                         "num_hidden_layers")
    return load_spec(name, overrides=[f"{field}={layers}"])


CASES = [
    ("llama-2-7b", {"r": 16, "target_modules": list(ATTN)}),  # dense, multi-head
    ("llama-3-8b", {"r": 16, "target_modules": "all-linear"}),  # GQA
    ("llama-3.2-1b", {"r": 8, "target_modules": "all-linear", "use_dora": True}),  # tied, DoRA
    ("llama-3.2-1b", {"r": 8, "target_modules": ["q_proj", "v_proj", "embed_tokens"],
                      "modules_to_save": ["lm_head"]}),
    ("mixtral-8x7b", {"r": 8, "target_modules": "all-linear"}),  # MoE, experts not targeted
    ("mixtral-8x7b", {"r": 8, "target_modules": list(ATTN),
                      "target_parameters": ["experts.gate_up_proj", "experts.down_proj"]}),
    ("deepseek-v2-lite", {"r": 16, "target_modules": "all-linear"}),  # MLA
    ("qwen1.5-moe-a2.7b", {"r": 8, "target_modules": "all-linear"}),  # shared expert, no bridge
    ("phi-3.5-moe", {"r": 8, "target_modules": "all-linear"}),  # an nn.Linear router
    ("olmoe-1b-7b", {"r": 8, "target_modules": "all-linear"}),
    ("gpt2", {"r": 4, "target_modules": ["c_attn"], "use_dora": True}),  # Conv1D
    ("gemma-2-2b", {"r": 16, "target_modules": "all-linear", "use_rslora": True}),
]


@pytest.mark.torch
@pytest.mark.parametrize("name,kw", CASES, ids=[f"{n}-{i}" for i, (n, _) in enumerate(CASES)])
def test_trainable_and_total_equal_peft(name: str, kw: dict[str, Any]) -> None:
    spec = _cut(name)
    assert _ours(spec, **kw) == _peft(spec, **kw)


def test_llama_2_7b_attention_r16() -> None:
    # 32 layers × 4 projections × 16 · (4096 + 4096) = 16,777,216 trainable
    lc = lora_count(load_spec("llama-2-7b"), lora_config(r=16, targets=ATTN))
    assert lc.trainable == 16_777_216
    assert lc.total == 6_738_415_616 + 16_777_216
    assert [(a.component, a.modules, a.params) for a in lc.adapters] == [
        (f"attn/{p}", 32, 4_194_304) for p in ATTN
    ]
    assert round(lc.trainable_percent, 4) == 0.2484
    rs = lora_count(load_spec("llama-2-7b"), lora_config(r=16, targets=ATTN, rslora=True))
    assert rs.trainable == lc.trainable


def test_cli_count_lora(cli) -> None:
    r = cli("count", "llama-2-7b", "--lora-r", "16", "--json")
    assert r.code == 0
    d = r.json()
    assert (d["trainable"], d["total"], d["frozen"]) == (16_777_216, 6_755_192_832, 6_738_415_616)
    assert d["lora"]["targets"] == list(ATTN)
    assert d["adapters"]["attn/q_proj"] == {"modules": 32, "params": 4_194_304}
    r = cli("count", "llama-2-7b", "--lora-r", "16", "--lora-targets", "foo")
    assert (r.code, r.stderr) == (
        2,
        "error: --lora-targets foo: no module of this model matches (names as in the "
        "transformers module tree, e.g. q_proj; or all-linear)\n",
    )
    r = cli("count", "llama-2-7b", "--lora-r", "0")
    assert (r.code, r.stderr) == (2, "error: --lora-r 0: must be 1 or more\n")
    r = cli("count", "mixtral-8x7b", "--lora-r", "8", "--lora-targets", "w1")
    assert (r.code, r.stderr) == (
        2, "error: --lora-targets: w1 is fused with w3 in this model; target both\n"
    )
    r = cli("count", "olmoe-1b-7b", "--lora-r", "8", "--lora-targets", "all-linear", "--dora")
    assert (r.code, r.stderr) == (
        2, "error: --dora: peft cannot put DoRA on fused expert tensors or routers reached as "
        "parameters (target_parameters); target the attention only, e.g. q_proj,v_proj\n"
    )
