"""The measured path: a model_type without a formula, read off transformers' model on the meta device.

To hold the measurement to an independent figure, a supported type is taken out of MODEL_TYPES for
the test: what is measured must equal what the formula says, total, active, per layer and FLOPs.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from helpers import REPO
from helpers.configs import TINY_LLAMA

from llmcalc.errors import ConfigError
from llmcalc.families import MODEL_TYPES
from llmcalc.formulas.counting import count
from llmcalc.formulas.flops import attention_flops_per_token, weight_flops_per_token
from llmcalc.formulas.memory import kv_cache_bytes_per_token
from llmcalc.inputs.config import spec_from_dict
from llmcalc.units import DType

pytest.importorskip("transformers")
pytestmark = pytest.mark.torch

LLAMA = TINY_LLAMA
QWEN3_MOE = {
    "model_type": "qwen3_moe",
    "hidden_size": 64,
    "intermediate_size": 128,
    "moe_intermediate_size": 32,
    "num_hidden_layers": 3,
    "num_attention_heads": 4,
    "num_key_value_heads": 2,
    "head_dim": 16,
    "num_experts": 8,
    "num_experts_per_tok": 2,
    "decoder_sparse_step": 1,
    "mlp_only_layers": [1],
    "vocab_size": 256,
    "max_position_embeddings": 512,
    "tie_word_embeddings": True,
}


def formula_then_measured(monkeypatch: pytest.MonkeyPatch, config: dict[str, Any]) -> tuple[Any, Any]:
    formula = spec_from_dict(config)
    monkeypatch.delitem(MODEL_TYPES, config["model_type"])
    measured = spec_from_dict(config)
    assert (formula.method, measured.method) == ("formula", "measured")
    return formula, measured


@pytest.mark.parametrize("config", [LLAMA, QWEN3_MOE], ids=["llama", "qwen3_moe-tied"])
def test_measured_equals_the_formula(monkeypatch: pytest.MonkeyPatch, config: dict[str, Any]) -> None:
    formula, measured = formula_then_measured(monkeypatch, config)
    a, b = count(formula), count(measured)
    assert (b.total, b.active, b.embedding, b.lm_head, b.layers) == (
        a.total, a.active, a.embedding, a.lm_head, a.layers
    )
    assert sorted(g.per_layer for g in b.groups) == sorted(g.per_layer for g in a.groups)
    assert dict(measured.named_shapes()) == dict(formula.named_shapes())
    assert weight_flops_per_token(measured) == weight_flops_per_token(formula)
    assert attention_flops_per_token(measured, ctx=4096) == attention_flops_per_token(formula, ctx=4096)
    assert kv_cache_bytes_per_token(measured, dtype=DType.bf16) == kv_cache_bytes_per_token(
        formula, dtype=DType.bf16
    )
    assert measured.shape.tied_embeddings is config["tie_word_embeddings"]


def test_moe_groups_and_active(monkeypatch: pytest.MonkeyPatch) -> None:
    _, measured = formula_then_measured(monkeypatch, QWEN3_MOE)
    assert [(g.name, list(g.layers)) for g in measured.layer_groups] == [
        ("kind 1", [0, 2]), ("kind 2", [1])
    ]
    assert measured.moe is not None
    assert (measured.moe.num_experts, measured.moe.experts_per_tok) == (8, 2)
    assert count(measured).active == 103_968  # 177,696 less 6 of 8 experts in 2 layers


def test_cli_says_measured_and_how_long(cli: Any, write: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delitem(MODEL_TYPES, "llama")
    path = write("config.json", LLAMA)
    r = cli("count", path, "--json")
    assert r.code == 0, r.stderr
    data = r.json()
    assert (data["method"], data["family"], data["total_params"]) == ("measured", "measured", 106_816)
    assert data["measured_seconds"] > 0
    assert data["notes"][0].startswith(
        "measured: llmcalc has no formula for llama; transformers 5.24.0 LlamaForCausalLM built "
        "on the meta device ("
    )
    table = " ".join(cli("count", path).stdout.split())  # the console wraps long lines
    assert "measured: transformers' model built on the meta device in " in table
    assert "(llmcalc has no formula for llama)" in table
    memory = cli("memory", path, "--json")
    assert memory.json()["kv_cache_bytes_per_token"] == 2 * 2 * 2 * 16 * 2
    assert any("standard fields only" in n for n in memory.json()["notes"])


def test_no_attention_fields_leaves_attention_out(
    cli: Any, write: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """BLT measured (its formula taken out): no num_attention_heads in its config: no KV cache,
    said in a note."""
    monkeypatch.delitem(MODEL_TYPES, "blt")
    path = write("config.json", {
        "model_type": "blt", "hidden_size": 32, "num_hidden_layers": 2, "vocab_size": 128,
    })
    r = cli("memory", path, "--json")
    assert r.code == 0, r.stderr
    assert r.json()["kv_cache_bytes"] == 0
    assert (
        "attention FLOPs and the KV cache are left out: the config's standard fields "
        "(num_attention_heads, hidden_size) do not determine them"
    ) in r.json()["notes"]
    flops = cli("flops", path, "--json")
    assert flops.code == 0, flops.stderr


def test_model_type_unknown_to_transformers(cli: Any, write: Any) -> None:
    path = write("config.json", {**LLAMA, "model_type": "no_such_arch"})
    r = cli("count", path)
    assert (r.code, r.stderr) == (
        2,
        f"error: {path}: unknown model_type 'no_such_arch': llmcalc has no formula for it and "
        "transformers 5.24.0 does not know it; to count it as a known family, pass --family\n",
    )
    remote = write("remote.json", {**LLAMA, "model_type": "no_such_arch", "auto_map": {"AutoConfig": "x.Y"}})
    r = cli("count", remote)
    assert r.stderr.endswith(
        "does not know it (its code is in the model's repo: --trust-remote-code runs it); to "
        "count it as a known family, pass --family\n"
    )


def test_without_the_verify_extra_the_error_names_it(tmp_path: Path) -> None:
    (tmp_path / "sitecustomize.py").write_text(
        "import sys\nfor m in ('torch', 'transformers'):\n    sys.modules[m] = None\n"
    )
    config = tmp_path / "config.json"
    config.write_text('{"model_type": "musicgen", "hidden_size": 32}')
    out = subprocess.run(
        [sys.executable, "-m", "llmcalc", "count", str(config)],
        capture_output=True, text=True,
        env={**os.environ, "PYTHONPATH": f"{tmp_path}:{REPO}"},
    )
    assert (out.returncode, out.stderr) == (
        2,
        f"error: {config}: llmcalc has no formula for model_type 'musicgen'; measuring it (building "
        "transformers' model on the meta device) needs the 'verify' extra: "
        f"pip install -e '{REPO}[verify]'\n",
    )


XLNET_SMALL = {"model_type": "xlnet", "n_layer": 3, "d_model": 32, "n_head": 2, "d_inner": 64,
               "vocab_size": 128}


def test_what_is_built_is_bounded(cli: Any, write: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    """Layers are refused from the config before torch is imported; modules and parameter tensors
    are counted while transformers builds, which stops at the first one past the cap."""
    from llmcalc.verify import measured

    formula = count(spec_from_dict(XLNET_SMALL)).total
    monkeypatch.delitem(MODEL_TYPES, "xlnet")  # measured, its formula taken out
    path = write("config.json", {**XLNET_SMALL, "n_layer": 10**12})
    r = cli("count", path)
    assert (r.code, r.stdout, r.stderr) == (2, "", (
        f"error: {path}: n_layer is 1,000,000,000,000; a model without a formula is measured by "
        "building it, up to 1,024 layers\n"))
    nested = write("nested.json", {"model_type": "llava_like", "text_config": {"num_hidden_layers": 5000}})
    r = cli("count", nested)
    assert (r.code, r.stderr) == (2, (
        f"error: {nested}: text_config.num_hidden_layers is 5,000; a model without a formula is "
        "measured by building it, up to 1,024 layers\n"))
    # built whole under the caps: a layer is q, k, v, o, r (32 × 2·16 each), three 2×16 biases,
    # seg_embed 2×2×16, two LayerNorms, FFN 32·64+64 + 64·32+32; then 128×32 words (tied
    # head), mask_emb 32, the head's bias 128
    layer = 5 * 32 * 32 + 3 * 32 + 64 + 2 * 64 + (32 * 64 + 64) + (64 * 32 + 32)
    assert count(spec_from_dict(XLNET_SMALL)).total == 3 * layer + 128 * 32 + 32 + 128 == formula
    monkeypatch.setattr(measured, "MAX_MEASURED_TENSORS", 20)
    with pytest.raises(ConfigError) as e:
        spec_from_dict(XLNET_SMALL, name="xl")
    assert str(e.value) == ("xl: a model without a formula is measured by building it, up to 20 "
                            "parameter tensors; this config makes more")
    monkeypatch.setattr(measured, "MAX_MEASURED_MODULES", 10)
    with pytest.raises(ConfigError) as e:
        spec_from_dict(XLNET_SMALL, name="xl")
    assert str(e.value) == ("xl: a model without a formula is measured by building it, up to 10 "
                            "modules; this config makes more")
