"""`llmcalc plot`: files read back (valid SVG/PNG/HTML with the expected series), terminal charts."""

from __future__ import annotations

import xml.etree.ElementTree as ET
from pathlib import Path
from typing import Any

import pytest

SVG = "{http://www.w3.org/2000/svg}"


def series_of(path: Path) -> dict[str, ET.Element]:
    root = ET.parse(path).getroot()
    assert root.tag == f"{SVG}svg"
    return {g.attrib["data-name"]: g for g in root.iter(f"{SVG}g")
            if g.attrib.get("class") == "series"}


def texts(path: Path) -> list[str]:
    return [t.text or "" for t in ET.parse(path).getroot().iter(f"{SVG}text")]


def test_flops_svg_has_every_series_and_the_crossover(cli: Any, tmp_path: Path) -> None:
    out = tmp_path / "flops.svg"
    run = cli("plot", "flops", "llama-2-7b", "mistral-7b", "--ctx-max", "1M", "-o", str(out))
    assert run.code == 0 and run.stdout == f"wrote {out}\n"
    groups = series_of(out)
    for model in ("meta-llama/Llama-2-7b-hf", "mistralai/Mistral-7B-v0.1"):
        for part in ("forward (weights + attention)", "weights", "attention"):
            line = groups[f"{model}: {part}"].find(f"{SVG}polyline")
            assert line is not None
            assert len(line.attrib["points"].split()) == 14  # 128 … 1M, doubling
    assert "attention > weights at 25,205" in texts(out)  # = llmcalc flops llama-2-7b's crossover


def test_memory_png_is_a_png_with_the_series_colours(cli: Any, tmp_path: Path) -> None:
    from PIL import Image

    out = tmp_path / "memory.png"
    run = cli("plot", "memory", "llama-3-8b", "mistral-7b", "--gpu", "h100", "--batch", "8",
              "-o", str(out))
    assert run.code == 0
    assert out.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    with Image.open(out) as im:
        im.verify()
    with Image.open(out) as im:
        rgb = im.convert("RGB")
        assert rgb.size[0] == 1520
        colours = {c for _, c in rgb.getcolors(maxcolors=1 << 20) or []}
    assert (0x25, 0x63, 0xEB) in colours and (0xDC, 0x26, 0x26) in colours  # model 1, model 2


def test_memory_svg_draws_the_gpu_and_what_fits(cli: Any, tmp_path: Path) -> None:
    out = tmp_path / "memory.svg"
    assert cli("plot", "memory", "llama-3-8b", "--gpu", "h100", "--batch", "8",
               "-o", str(out)).code == 0
    assert set(series_of(out)) == {"weights + KV cache", "weights (bf16)"}
    fit = cli("fit", "llama-3-8b", "--gpu", "h100", "--batch", "8", "--json").json()
    assert fit["max_ctx"] == 8192
    assert {"1 × NVIDIA H100 SXM", "fits up to 8k"} <= set(texts(out))


def test_params_html_holds_the_chart_and_exact_numbers(cli: Any, tmp_path: Path) -> None:
    out = tmp_path / "params.html"
    assert cli("plot", "params", "gpt2", "-o", str(out)).code == 0
    text = out.read_text(encoding="utf-8")
    assert text.startswith("<!doctype html>") and "<svg" in text and "<script" not in text
    assert "<td>layers/mlp/fc_in</td><td>28,348,416</td>" in text
    assert "openai-community/gpt2: 124,439,808 parameters" in text
    assert ("<code>llmcalc plot params gpt2 --ctx-max 128k --batch 1 --dtype bf16 -o params.html"
            "</code>") in text


def test_terminal_charts(cli: Any) -> None:
    run = cli("plot", "params", "gpt2")
    assert run.code == 0
    lines = run.stdout.splitlines()
    assert lines[0] == "Parameters by tensor group — openai-community/gpt2"
    assert lines[1].startswith("embed/tokens       │████") and lines[1].endswith(" 38.6M")
    assert lines[-1] == "  · openai-community/gpt2: 124,439,808 parameters"
    run = cli("plot", "flops", "llama-2-7b", "mistral-7b")
    assert run.code == 0
    assert "  * meta-llama/Llama-2-7b-hf: forward (weights + attention)" in run.stdout
    assert "  ┊ attention > weights at 25,205" in run.stdout


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["flops", "gpt2", "-o", "chart.pdf"],
         "error: -o chart.pdf: the file name must end in .svg, .png or .html\n"),
        (["params", *["gpt2"] * 7], "error: at most 6 models on one chart, got 7\n"),
        (["flops", "gpt2", "--ctx-max", "64"],
         "error: --ctx-max 64: must be from 128 to 2^30\n"),
    ],
)
def test_plot_errors_are_one_line(cli: Any, args: list[str], message: str) -> None:
    run = cli("plot", *args)
    assert (run.code, run.stderr) == (2, message)


def test_terminal_chart_escapes_names_from_input(cli: Any, write: Any) -> None:
    path = write("evil.yaml", "name: \"x\\e[31mred\"\nmodel_type: gpt2\nn_embd: 64\nn_layer: 2\n"
                 "n_head: 4\nvocab_size: 100\n")
    run = cli("plot", "params", path)
    assert run.code == 0
    assert "\x1b" not in run.stdout and "x\\x1b[31mred" in run.stdout
