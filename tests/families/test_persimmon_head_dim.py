"""Persimmon (and Fuyu's text model) attend at hidden_size // heads whatever head_dim a config
gives (PersimmonAttention: self.head_dim = hidden_size // num_heads); the differential sweep found
its cache and FLOPs counted at a config's head_dim 65."""

from __future__ import annotations

from typing import Any


def test_a_configs_head_dim_is_not_persimmons(cli: Any) -> None:
    # 36 layers × K and V × 64 heads × 64 × 2 bytes, with or without head_dim=65 in the config
    for extra in ([], ["--set", "head_dim=65"]):
        out = cli("memory", "persimmon-default", "--ctx", "64", "--json", *extra).json()
        assert out["kv_cache_bytes_per_token"] == 36 * 2 * 64 * 64 * 2 == 589_824
