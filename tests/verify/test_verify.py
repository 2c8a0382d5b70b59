"""`llmcalc verify`: against the transformers model and against real (tiny) safetensors checkpoints.

The checkpoints are written here with transformers' ``save_pretrained`` from small variants of
bundled configs (2 layers, width 32): the real file layout, in a few KB, without the network.
"""

from __future__ import annotations

import json
import math
import os
import shutil
import struct
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from helpers import REPO

from llmcalc import count, load_spec
from llmcalc.errors import ConfigError
from llmcalc.families._base import embedding, linear, lm_head, norm, stacked_experts, uniform_layers
from llmcalc.inputs.safetensors_index import read_checkpoint, read_header
from llmcalc.model.spec import Attention, ModelSpec, MoE, Shape
from llmcalc.verify.reference import compare, hf_config

# A Llama 3.2 1B shrunk to 2 layers of width 32 (tied head, GQA 4/2 heads of 8).
TINY_LLAMA = [
    "num_hidden_layers=2",
    "hidden_size=32",
    "intermediate_size=64",
    "num_attention_heads=4",
    "num_key_value_heads=2",
    "head_dim=8",
    "vocab_size=128",
]
# Its parameters by hand: embedding 128·32; per layer q,o 32·32, k,v 16·32, gate/up/down 64·32,
# two norms 32; final norm 32; head tied.
EMB, LAYER = 128 * 32, 2 * 32 * 32 + 2 * 16 * 32 + 3 * 64 * 32 + 2 * 32
TINY_TOTAL = EMB + 2 * LAYER + 32


def _save(model: Any, folder: Path, **kwargs: Any) -> Path:
    model.save_pretrained(folder, **kwargs)
    return folder


@pytest.fixture(scope="module")
def llama_ckpt(tmp_path_factory: pytest.TempPathFactory) -> Path:
    import transformers

    spec = load_spec("llama-3.2-1b", overrides=TINY_LLAMA)
    model = transformers.AutoModelForCausalLM.from_config(hf_config(spec))
    return _save(model, tmp_path_factory.mktemp("ckpt") / "tiny-llama")


def _tamper(src: Path, dst: Path, **changes: Any) -> str:
    """A copy of a checkpoint folder whose config.json says something else than its weights."""
    shutil.copytree(src, dst)
    config = json.loads((dst / "config.json").read_text())
    config.update(changes)
    (dst / "config.json").write_text(json.dumps(config))
    return str(dst)


def test_tiny_total_by_hand() -> None:
    assert TINY_TOTAL == 22_688
    assert count(load_spec("llama-3.2-1b", overrides=TINY_LLAMA)).total == TINY_TOTAL


@pytest.mark.torch
def test_checkpoint_matches(cli: Any, llama_ckpt: Path) -> None:
    r = cli("verify", str(llama_ckpt), "--json")
    assert r.code == 0, r.stdout
    data = r.json()
    assert data["kind"] == "checkpoint"
    assert data["match"] is True
    assert data["matched_tensors"] == 2 + 2 * 9  # embedding, final norm, 9 tensors per layer
    parts = {p["part"]: (p["llmcalc"], p["checkpoint"]) for p in data["parts"]}
    assert parts == {
        "embedding": (EMB, EMB),
        "layers 0..1 (decoder)": (2 * LAYER, 2 * LAYER),
        "final norm, other": (32, 32),
        "lm_head (tied: shares the embedding)": (0, 0),
        "total": (TINY_TOTAL, TINY_TOTAL),
    }
    assert data["differences"] == []


@pytest.mark.torch
def test_checkpoint_table(cli: Any, llama_ckpt: Path) -> None:
    r = cli("verify", str(llama_ckpt))
    assert r.code == 0
    assert "match: all 20 tensors equal in name and shape; 22,688 parameters" in r.stdout
    assert "took " in r.stdout


@pytest.mark.torch
def test_tampered_checkpoint_names_the_missing_layer(
    cli: Any, llama_ckpt: Path, tmp_path: Path
) -> None:
    folder = _tamper(llama_ckpt, tmp_path / "tampered", num_hidden_layers=3)
    r = cli("verify", folder, "--json")
    assert r.code == 1
    data = r.json()
    assert data["match"] is False
    missing = [d["name"] for d in data["differences"] if d["kind"] == "missing"]
    assert missing == [
        "model.layers.2.input_layernorm.weight",
        "model.layers.2.self_attn.q_proj.weight",
        "model.layers.2.self_attn.k_proj.weight",
        "model.layers.2.self_attn.v_proj.weight",
        "model.layers.2.self_attn.o_proj.weight",
        "model.layers.2.post_attention_layernorm.weight",
        "model.layers.2.mlp.gate_proj.weight",
        "model.layers.2.mlp.up_proj.weight",
        "model.layers.2.mlp.down_proj.weight",
    ]
    assert len(data["differences"]) == 9
    layers = next(p for p in data["parts"] if p["part"] == "layers 0..2 (decoder)")
    assert (layers["llmcalc"], layers["checkpoint"], layers["difference"]) == (
        3 * LAYER,
        2 * LAYER,
        -LAYER,
    )
    table = cli("verify", folder)
    assert table.code == 1
    assert "9 missing (llmcalc predicts them, the checkpoint lacks them):" in table.stdout
    assert "  model.layers.2.self_attn.q_proj.weight  [32, 32]" in table.stdout
    assert "differs: 9 tensors differ between llmcalc and the checkpoint" in table.stdout


@pytest.mark.torch
def test_fewer_layers_claimed_names_extra_tensors(
    cli: Any, llama_ckpt: Path, tmp_path: Path
) -> None:
    folder = _tamper(llama_ckpt, tmp_path / "short", num_hidden_layers=1)
    data = cli("verify", folder, "--json").json()
    extra = {d["name"] for d in data["differences"] if d["kind"] == "extra"}
    assert len(extra) == 9 and all(name.startswith("model.layers.1.") for name in extra)
    total = data["parts"][-1]
    assert total["difference"] == LAYER


@pytest.mark.torch
def test_other_shape_is_named(cli: Any, llama_ckpt: Path, tmp_path: Path) -> None:
    folder = _tamper(llama_ckpt, tmp_path / "wide", intermediate_size=48)
    r = cli("verify", folder)
    assert r.code == 1
    assert "6 other shape (llmcalc → checkpoint):" in r.stdout
    assert "  model.layers.0.mlp.gate_proj.weight  [48, 32] → [64, 32]" in r.stdout


@pytest.mark.torch
def test_sharded_checkpoint_with_index(cli: Any, llama_ckpt: Path, tmp_path: Path) -> None:
    import transformers

    spec = load_spec(str(llama_ckpt))
    model = transformers.AutoModelForCausalLM.from_config(hf_config(spec))
    folder = _save(model, tmp_path / "sharded", max_shard_size="20KB")
    ckpt = read_checkpoint(folder)
    assert (folder / "model.safetensors.index.json").is_file()
    assert len(ckpt.files) > 1
    assert ckpt.numel == TINY_TOTAL
    r = cli("verify", str(folder))
    assert r.code == 0
    assert f"({len(ckpt.files)} safetensors files)" in r.stdout


@pytest.mark.torch
def test_transformers_path(cli: Any) -> None:
    args = ["verify", "llama-3.2-1b", "--json", *(f"--set={s}" for s in TINY_LLAMA)]
    r = cli(*args)
    assert r.code == 0, r.stdout
    data = r.json()
    assert data["kind"] == "transformers"
    assert data["against"] == "transformers 5.24.0 LlamaForCausalLM (meta device)"
    assert data["parts"][-1] == {
        "part": "total",
        "llmcalc": TINY_TOTAL,
        "model": TINY_TOTAL,
        "difference": 0,
    }


@pytest.mark.torch
def test_transformers_path_on_a_checkpoint_folder(cli: Any, llama_ckpt: Path) -> None:
    data = cli("verify", str(llama_ckpt), "--against", "transformers", "--json").json()
    assert data["kind"] == "transformers" and data["match"] is True


def test_against_checkpoint_needs_one(cli: Any) -> None:
    r = cli("verify", "gpt2", "--against", "checkpoint")
    assert r.code == 2
    assert r.stderr == (
        "error: --against checkpoint: gpt2 is not a folder with *.safetensors files\n"
    )


# ---- a base-model GPT-2 checkpoint (names without ``transformer.``, causal-mask buffers) ----------


@pytest.mark.torch
def test_base_model_checkpoint_gets_its_prefix(cli: Any, tmp_path: Path) -> None:
    import transformers

    overrides = ["n_layer=2", "n_embd=32", "n_head=4", "vocab_size=100", "n_positions=64"]
    spec = load_spec("gpt2", overrides=overrides)
    folder = _save(transformers.GPT2Model(hf_config(spec)), tmp_path / "gpt2-base")
    names = read_checkpoint(folder).tensors
    assert "h.0.attn.c_attn.weight" in names and "lm_head.weight" not in names
    data = cli("verify", str(folder), "--json").json()
    assert data["match"] is True
    assert "checkpoint names read with the 'transformer.' prefix (saved from the base model)" in (
        data["notes"]
    )
    # by hand: wte 100·32, wpe 64·32; per layer 2 LayerNorms 4·32, c_attn 32·96+96, c_proj 32·32+32,
    # c_fc 32·128+128, c_proj 128·32+32; ln_f 2·32
    layer = 4 * 32 + (32 * 96 + 96) + (32 * 32 + 32) + (32 * 128 + 128) + (128 * 32 + 32)
    assert data["parts"][-1]["checkpoint"] == 100 * 32 + 64 * 32 + 2 * layer + 64


# ---- mixture of experts: per-expert checkpoint tensors vs the fused v5 parameters --------------


def _tiny_mixtral_spec(num_experts: int) -> ModelSpec:
    """Mixtral as transformers 5 builds it: experts fused to gate_up_proj [E, 2ff, d], down [E, d, ff]."""
    d, ff, v = 32, 64, 100
    p = "model.layers.{i}"
    layer = [
        *norm(f"{p}.input_layernorm", "attn/norm", d, bias=False),
        *linear(f"{p}.self_attn.q_proj", "attn/q_proj", 32, d, bias=False),
        *linear(f"{p}.self_attn.k_proj", "attn/k_proj", 16, d, bias=False),
        *linear(f"{p}.self_attn.v_proj", "attn/v_proj", 16, d, bias=False),
        *linear(f"{p}.self_attn.o_proj", "attn/o_proj", d, 32, bias=False),
        *norm(f"{p}.post_attention_layernorm", "mlp/norm", d, bias=False),
        *linear(f"{p}.mlp.gate", "mlp/router", num_experts, d, bias=False),
        stacked_experts(f"{p}.mlp.experts.gate_up_proj", "mlp/experts", num_experts, 2 * ff, d),
        stacked_experts(f"{p}.mlp.experts.down_proj", "mlp/experts", num_experts, d, ff),
    ]
    return ModelSpec(
        name="tiny-mixtral",
        model_type="mixtral",
        family="test",
        shape=Shape(2, d, 4, 2, 8, ff, v, False),
        tensors=(
            embedding("model.embed_tokens", "embed/tokens", v, d),
            *norm("model.norm", "final_norm", d, bias=False),
            *lm_head("lm_head", v, d, tied_to=None),
        ),
        layer_groups=uniform_layers(2, layer, Attention(4, 2, 8, 8)),
        moe=MoE(num_experts, 2),
    )


@pytest.fixture(scope="module")
def mixtral_ckpt(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[str, Any]]:
    import transformers

    config = transformers.AutoConfig.for_model(
        "mixtral",
        hidden_size=32,
        intermediate_size=64,
        num_hidden_layers=2,
        num_attention_heads=4,
        num_key_value_heads=2,
        vocab_size=100,
        num_local_experts=4,
        num_experts_per_tok=2,
    )
    model = transformers.AutoModelForCausalLM.from_config(config)
    params = {name: tuple(p.shape) for name, p in model.named_parameters()}
    return _save(model, tmp_path_factory.mktemp("moe") / "tiny-mixtral"), params


@pytest.mark.torch
def test_moe_spec_matches_the_v5_module_tree(mixtral_ckpt: tuple[Path, dict[str, Any]]) -> None:
    _, params = mixtral_ckpt
    c = compare(_tiny_mixtral_spec(4), params, against="model", kind="transformers")
    assert c.ok and c.matched == len(params) == 21


@pytest.mark.torch
def test_moe_checkpoint_per_expert_tensors(mixtral_ckpt: tuple[Path, dict[str, Any]]) -> None:
    folder, _ = mixtral_ckpt
    stored = read_checkpoint(folder).tensors
    # transformers 5.24 saves the per-expert layout under Mixtral's original module names
    assert "model.layers.1.block_sparse_moe.experts.3.w2.weight" in stored
    assert "model.layers.1.mlp.experts.down_proj" not in stored
    c = compare(_tiny_mixtral_spec(4), read_checkpoint(folder).shapes(), against="ckpt",
                kind="checkpoint")
    assert c.ok, c.differences
    assert [(m.prefix, m.experts, m.stored, m.ours, m.theirs) for m in c.merged] == [
        (f"model.layers.{i}.mlp.experts", 4, 12, 4 * 3 * 64 * 32, 4 * 3 * 64 * 32) for i in (0, 1)
    ]
    assert c.notes == (
        "26 checkpoint names read as transformers renames them when loading mixtral "
        "(e.g. .block_sparse_moe. → .mlp.)",
        "24 per-expert checkpoint tensors compared with 4 fused parameters by total elements "
        "(transformers v5 fuses the experts when loading)",
    )
    assert c.rows[-1].ours == c.rows[-1].theirs == sum(
        t.numel for t in read_checkpoint(folder).tensors.values()
    )


@pytest.mark.torch
def test_moe_checkpoint_with_other_expert_count_fails(
    mixtral_ckpt: tuple[Path, dict[str, Any]],
) -> None:
    folder, _ = mixtral_ckpt
    c = compare(_tiny_mixtral_spec(8), read_checkpoint(folder).shapes(), against="ckpt",
                kind="checkpoint")
    assert not c.ok
    m = c.merged[0]
    assert (m.experts, m.expected_experts, m.ours, m.theirs) == (4, 8, 8 * 3 * 64 * 32, 4 * 3 * 64 * 32)
    # the router shape differs too: [8, 32] predicted, [4, 32] stored
    assert [(d.name, d.ours, d.theirs) for d in c.differences[:1]] == [
        ("model.layers.0.mlp.gate.weight", (8, 32), (4, 32))
    ]


# ---- safetensors headers -------------------------------------------------------------------------


def _write_safetensors(path: Path, header: dict[str, Any], *, pad: int = 0) -> Path:
    raw = json.dumps(header).encode()
    path.write_bytes(struct.pack("<Q", len(raw)) + raw + b"\0" * pad)
    return path


def test_header_read_without_weights(tmp_path: Path) -> None:
    path = _write_safetensors(
        tmp_path / "model.safetensors",
        {
            "__metadata__": {"format": "pt"},
            "a.weight": {"dtype": "BF16", "shape": [3, 4], "data_offsets": [0, 24]},
            "b.bias": {"dtype": "F32", "shape": [4], "data_offsets": [24, 40]},
        },
        pad=40,
    )
    tensors = read_header(path)
    assert {k: (t.shape, t.dtype, t.nbytes, t.numel) for k, t in tensors.items()} == {
        "a.weight": ((3, 4), "BF16", 24, 12),
        "b.bias": ((4,), "F32", 16, 4),
    }


@pytest.mark.parametrize(("content", "why"), [
    (b"\x01\x02", "shorter than its 8-byte header length"),
    (struct.pack("<Q", 1000) + b"{}", "its header length is past the end"),
    (struct.pack("<Q", 3) + b"abc", "its header is not JSON"),
], ids=["truncated", "header-past-the-end", "header-not-json"])
def test_not_a_safetensors_file(tmp_path: Path, content: bytes, why: str) -> None:
    path = tmp_path / "model.safetensors"
    path.write_bytes(content)
    with pytest.raises(ConfigError) as e:
        read_header(path)
    assert str(e.value) == f"{path}: not a safetensors file ({why})"


@pytest.mark.torch
def test_index_names_a_missing_shard(cli: Any, llama_ckpt: Path, tmp_path: Path) -> None:
    folder = tmp_path / "broken"
    shutil.copytree(llama_ckpt, folder)
    (folder / "model.safetensors.index.json").write_text(
        json.dumps({"weight_map": {"lm_head.weight": "model-00002-of-00002.safetensors"}})
    )
    r = cli("verify", str(folder))
    assert r.code == 2
    assert r.stderr == (
        f"error: {folder / 'model.safetensors.index.json'}: weight_map names "
        "'model-00002-of-00002.safetensors', which is not in the folder\n"
    )


# ---- without torch: the transformers path says how to install it, the checkpoint path works ------


def _run_without_torch(tmp_path: Path, *args: str) -> subprocess.CompletedProcess[str]:
    shim = tmp_path / "shim"
    shim.mkdir(exist_ok=True)
    (shim / "sitecustomize.py").write_text(
        "import sys\nfor _name in ('torch', 'transformers', 'safetensors'):\n"
        "    sys.modules[_name] = None  # import fails as if not installed\n"
    )
    env = {**os.environ, "PYTHONPATH": str(shim)}
    return subprocess.run(
        [sys.executable, "-m", "llmcalc", *args],
        capture_output=True,
        text=True,
        env=env,
        cwd=REPO,
        timeout=120,
    )


@pytest.mark.torch
def test_without_torch(tmp_path: Path, llama_ckpt: Path) -> None:
    r = _run_without_torch(tmp_path, "verify", "gpt2")
    assert (r.returncode, r.stdout) == (2, "")
    assert r.stderr == (
        "error: building the transformers model needs the 'verify' extra: "
        f"pip install -e '{REPO}[verify]'\n"
    )
    r = _run_without_torch(tmp_path, "verify", str(llama_ckpt), "--json")
    assert r.returncode == 0, r.stderr
    assert json.loads(r.stdout)["parts"][-1]["checkpoint"] == TINY_TOTAL


@pytest.mark.torch
def test_moe_checkpoint_through_the_cli(cli: Any, mixtral_ckpt: tuple[Path, dict[str, Any]]) -> None:
    folder, params = mixtral_ckpt
    r = cli("verify", str(folder))
    assert r.code == 0, r.stdout
    assert (
        "match: all 17 tensors equal in name and shape and 24 per-expert tensors by total "
        "elements; 62,112 parameters"
    ) in r.stdout
    assert count(load_spec(str(folder))).total == 62_112 == sum(
        math.prod(shape) for shape in params.values()
    )


@pytest.mark.torch
def test_flops_against_flop_counter(cli: Any) -> None:
    args = ["verify", "llama-3.2-1b", "--flops", "--json", *(f"--set={s}" for s in TINY_LLAMA)]
    r = cli(*args)
    assert r.code == 0, r.stdout
    flops = r.json()["flops"]
    # by hand, 32 tokens: 2 FLOPs per weight element a token meets (per layer q, o 32·32, k, v 16·32,
    # gate/up/down 64·32 = 9,216; the tied head 128·32 = 4,096) plus full attention per layer
    # 32² pairs · 2 · 4 heads · (8 + 8) = 131,072.
    one = 32 * 2 * (9_216 + 4_096) + 131_072
    two = 32 * 2 * (2 * 9_216 + 4_096) + 2 * 131_072
    assert flops["by_depth"] == [
        {"layers": 1, "llmcalc": one, "flop_counter": one},
        {"layers": 2, "llmcalc": two, "flop_counter": two},
    ]
    assert flops["full_depth"] == {"layers": 2, "llmcalc": two, "extrapolated": two}
    assert flops["match"] is True


# ---- checkpoints whose stored names differ from the module tree, as transformers 5.24 writes them --

SMALL = dict(
    hidden_size=32,
    intermediate_size=64,
    num_hidden_layers=2,
    num_attention_heads=4,
    num_key_value_heads=2,
    vocab_size=100,
    num_experts_per_tok=2,
    pad_token_id=0,
)
STORED_DIFFERENTLY = {
    # model_type: (config changes, the note the checkpoint must produce)
    "gpt_neox": ({}, "1 checkpoint names read as transformers renames them when loading gpt_neox"),
    "granitemoe": (
        {"num_local_experts": 4},
        "6 checkpoint names read as transformers renames them when loading granitemoe",
    ),
    "phimoe": (
        {"num_local_experts": 4},
        "24 per-expert checkpoint tensors compared with 4 fused parameters by total elements",
    ),
    "deepseek_v3": (
        {
            "n_routed_experts": 4,
            "moe_intermediate_size": 16,
            "first_k_dense_replace": 1,
            "q_lora_rank": 16,
            "kv_lora_rank": 16,
            "qk_rope_head_dim": 4,
            "qk_nope_head_dim": 4,
            "v_head_dim": 8,
            "num_key_value_heads": 4,
            "n_group": 2,
            "topk_group": 1,
        },
        "1 stored buffers are not parameters and were not compared",
    ),
}


@pytest.mark.torch
@pytest.mark.parametrize("model_type", STORED_DIFFERENTLY)
def test_checkpoint_stored_differently(cli: Any, tmp_path: Path, model_type: str) -> None:
    import transformers

    changes, note = STORED_DIFFERENTLY[model_type]
    config = transformers.AutoConfig.for_model(model_type, **{**SMALL, **changes})
    model = transformers.AutoModelForCausalLM.from_config(config)
    folder = _save(model, tmp_path / model_type)
    stored = set(read_checkpoint(folder).tensors)
    params = dict(model.named_parameters())
    assert stored != set(params)  # the names differ from the module tree …
    r = cli("verify", str(folder), "--json")
    assert r.code == 0, r.stdout
    data = r.json()
    assert any(n.startswith(note) for n in data["notes"]), data["notes"]
    # … and yet the parameters add up to the model's, part by part
    assert data["parts"][-1]["checkpoint"] == sum(p.numel() for p in params.values())
    assert all(p["difference"] == 0 for p in data["parts"])


def test_header_entry_without_shape(tmp_path: Path) -> None:
    path = _write_safetensors(
        tmp_path / "model.safetensors", {"a.weight": {"dtype": "F32", "data_offsets": [0, 4]}}
    )
    with pytest.raises(ConfigError) as e:
        read_header(path)
    assert str(e.value) == f"{path}: tensor 'a.weight': header entry lacks a valid dtype, shape or data_offsets"


def test_a_one_layer_config_measured_at_two_layers_repeats_its_layer_list() -> None:
    """verify --flops/--cache measure 1- and 2-layer copies: a 1-layer config with its layer_types
    grows to 2 layers with the list repeated (it raised IndexError, an internal error)."""
    from llmcalc import spec_from_dict
    from llmcalc.verify.reference import cut_fields

    spec = spec_from_dict({"model_type": "qwen2", "hidden_size": 64, "intermediate_size": 128,
                           "num_attention_heads": 4, "num_key_value_heads": 2, "vocab_size": 256,
                           "num_hidden_layers": 1, "layer_types": ["full_attention"]}, name="q")
    assert cut_fields(spec, num_layers=2) == {
        "num_hidden_layers": 2, "layer_types": ["full_attention", "full_attention"]}
    assert cut_fields(spec, num_layers=1) == {"num_hidden_layers": 1, "layer_types": ["full_attention"]}
