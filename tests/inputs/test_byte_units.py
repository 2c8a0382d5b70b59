"""Sizes in the unit they reach (KiB/MiB/GiB/TiB): one function for tables, plots and the page."""

from __future__ import annotations

from typing import Any

from llmcalc.render.plot import gib_label
from llmcalc.units import byte_unit, size_text


def test_the_unit_by_size() -> None:
    assert [byte_unit(b) for b in (0, 1023, 1024, 2**20 - 1, 2**20, 2**30, 2**40, 2**50)] == [
        ("B", 1), ("B", 1), ("KiB", 1024), ("KiB", 1024), ("MiB", 2**20), ("GiB", 2**30),
        ("TiB", 2**40), ("TiB", 2**40)]
    assert size_text(230_016) == "224.62 KiB"  # 230,016 / 1,024
    assert size_text(512) == "512 B"
    assert size_text(849_678_994_014) == "791.33 GiB"
    assert size_text(2 * 2**40 + 2**39) == "2.50 TiB"
    # an axis keeps one unit: the one its top reaches
    assert (gib_label(512 * 2**10, 2 * 2**20), gib_label(2 * 2**20, 2 * 2**20)) == (
        "0.5 MiB", "2 MiB")


def test_a_tiny_model_in_kib_and_mib(cli: Any, write: Any) -> None:
    yaml = write("tiny.yaml", "model_type: llama\nhidden_size: 64\nintermediate_size: 128\n"
                 "num_hidden_layers: 2\nnum_attention_heads: 4\nvocab_size: 256\n")
    out = cli("memory", yaml).stdout
    # 115,008 bf16 parameters = 230,016 B; the cache 2 · 2 · 4 · 16 · 2 B × 4,096 = 2,097,152 B
    assert "│   230,016 │ 224.62 KiB │" in out
    assert "│ 2,097,152 │   2.00 MiB │" in out
    assert "│ 2,327,168 │   2.22 MiB │" in out
    assert "0.00 GiB" not in out
