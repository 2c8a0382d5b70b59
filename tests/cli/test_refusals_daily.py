"""Nonsense refused in one line, exit 2 (issue 35)."""

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
