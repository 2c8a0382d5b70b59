"""The page's weight formats: nvfp4 in its list, its figures the CLI's, the fp4 note in its JSON."""

from __future__ import annotations

from typing import Any

from llmcalc.web import api


def test_nvfp4_on_the_page_is_the_cli(cli: Any) -> None:
    formats = api.catalog()["weight_formats"]
    assert formats.index("nvfp4") == formats.index("fp8-fp4") + 1
    got = api.calculate({"model": {"name": "llama-3.1-8b"}, "dtype": "nvfp4", "gpu": "h100"})
    want = cli("memory", "llama-3.1-8b", "--ctx", "4k", "--batch", "1", "--dtype", "nvfp4",
               "--json").json()
    assert got["memory"] == want
    assert (want["dtype"], want["weights_bytes"]) == ("nvfp4", 6_027_749_120)


def test_fp4_note_reaches_the_page() -> None:
    note = ("fp4: bitsandbytes quantizes only nn.Linear, so the fused expert weights "
            "(32,212,254,720 parameters, 64,424,509,440 bytes) stay bf16")
    got = api.calculate({"model": {"name": "qwen3.6-35b-a3b"}, "dtype": "fp4", "gpu": "h100"})
    assert got["memory"]["notes"] == got["fit"]["notes"] == got["latency"]["notes"] == [note]
