"""``--family X`` never gives a silently wrong total: unread size-like fields are named in a
warning; unread experts or non-attention layer types refuse."""

from __future__ import annotations

from typing import Any

from helpers.configs import TINY_LLAMA

LLAMA_LIKE = {**TINY_LLAMA, "model_type": "foo"}


def test_unread_size_fields_are_named_in_a_warning(cli: Any, write: Any) -> None:
    path = write("c.json", {**LLAMA_LIKE, "adapter_dim": 16, "vision_config": {"hidden_size": 8}})
    r = cli("count", path, "--family", "llama", "--json")
    assert r.code == 0
    assert r.stderr == (
        "warning: fields this count does not model: adapter_dim, vision_config\n"
    )
    assert r.json()["total_params"] == 106_816
    assert "fields this count does not model: adapter_dim, vision_config" in r.json()["notes"]


def test_a_plain_llama_like_config_gets_no_warning(cli: Any, write: Any) -> None:
    r = cli("count", write("c.json", LLAMA_LIKE), "--family", "llama", "--json")
    assert (r.code, r.stderr) == (0, "")


def test_experts_the_family_does_not_read_refuse(cli: Any, write: Any) -> None:
    path = write("c.json", {**LLAMA_LIKE, "num_local_experts": 8, "num_experts_per_tok": 2})
    r = cli("count", path, "--family", "llama")
    assert (r.code, r.stdout, r.stderr) == (
        2,
        "",
        "error: --family llama: the config has num_local_experts, num_experts_per_tok, which llama "
        "does not read and which change the count; leave out --family to measure it with "
        "transformers\n",
    )


def test_hybrid_layer_types_refuse(cli: Any, write: Any) -> None:
    path = write("c.json", {**LLAMA_LIKE, "layer_types": ["mamba", "full_attention"]})
    r = cli("count", path, "--family", "llama")
    assert (r.code, r.stderr) == (
        2,
        "error: --family llama: the config has layer_types (mamba), which llama does not read and "
        "which change the count; leave out --family to measure it with transformers\n",
    )


def test_a_bundled_models_unread_fields_are_said_alike_cold_warm_or_uncached(
        cli: Any, tmp_path: Any, monkeypatch: Any) -> None:
    """MiniMax-M2.5's config has fields no count reads: `count` says so once, as its answer's note,
    whether the spec cache is cold, warm or off; `fit`'s list of every bundled model says nothing
    either way (a cold cache had it print a warning for it, a warm one not)."""
    note = ("note: fields this count does not model: rotary_dim, use_qk_norm, use_routing_bias, "
            "num_mtp_modules\n")
    for cache in (str(tmp_path / "c"), str(tmp_path / "c"), ""):  # cold, warm, off
        monkeypatch.setenv("LLMCALC_CACHE_DIR", cache)
        r = cli("count", "minimax-m2.5")
        assert (r.code, r.stderr) == (0, note)
    for cache in (str(tmp_path / "f"), str(tmp_path / "f"), ""):
        monkeypatch.setenv("LLMCALC_CACHE_DIR", cache)
        r = cli("fit", "--gpu", "h100", "--match", "minimax-m2*", "--json")
        assert (r.code, r.stderr) == (0, "")
