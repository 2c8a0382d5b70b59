"""Two public GGUF files — TheBloke's Llama-2-7B at Q4_K_M and at Q8_0 — from their recorded headers.

tests/data/llama-2-7b.*.gguf.tsv hold each file's metadata and tensor table as llama.cpp's loader
printed them, and the file's length in bytes (the sources are in each file's comments). The header
is written again here with the ``gguf`` package's writer: the same keys, types and values, the tensor
infos without their data, and 32,000 placeholder token strings of the recorded total length (llmcalc
skips them by their lengths). llmcalc reads it like any GGUF file: its parameters and bytes are the
table's, and the header it reads plus those bytes is the published file's length, to the byte.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from llmcalc.inputs.gguf_file import read_header

gguf = pytest.importorskip("gguf")

DATA = Path(__file__).resolve().parent.parent / "data"
LLAMA_2_7B_PARAMS = 6_738_415_616  # meta-llama/Llama-2-7b-hf, as `llmcalc count llama-2-7b` has it


@dataclass(frozen=True)
class Recorded:
    size: int
    kv: list[tuple[str, str, list[str]]]
    tensors: list[tuple[str, str, tuple[int, ...]]]


def recorded(quant: str) -> Recorded:
    size = 0
    kv: list[tuple[str, str, list[str]]] = []
    tensors: list[tuple[str, str, tuple[int, ...]]] = []
    for line in (DATA / f"llama-2-7b.{quant}.gguf.tsv").read_text(encoding="utf-8").splitlines():
        if not line or line.startswith("#"):
            continue
        kind, *cols = line.split("\t")
        if kind == "size":
            size = int(cols[0])
        elif kind == "kv":
            kv.append((cols[0], cols[1], cols[2:]))
        else:
            tensors.append((cols[0], cols[1], tuple(int(c) for c in cols[2:])))
    return Recorded(size, kv, tensors)


def placeholder_tokens(count: int, total: int) -> list[str]:
    """``count`` ASCII strings of ``total`` bytes in all."""
    short, extra = divmod(total, count)
    return [("x" * (short + (i < extra))) for i in range(count)]


def write_header(path: Path, rec: Recorded) -> None:
    """The recorded header as GGUF v2 (the writer's v3 has the same layout; the version is set)."""
    w = gguf.GGUFWriter(str(path), "llama")  # writes general.architecture first, as the file has it
    adders: dict[str, Any] = {"str": w.add_string, "u32": w.add_uint32, "f32": w.add_float32}
    for key, kind, value in rec.kv:
        if key == "general.architecture":
            assert value == ["llama"]
        elif kind in adders:
            adders[kind](key, value[0] if kind == "str" else float(value[0]) if kind == "f32"
                         else int(value[0]))
        elif kind == "arr[str]":
            w.add_array(key, placeholder_tokens(int(value[0]), int(value[1])))
        elif kind == "arr[f32]":
            w.add_array(key, [0.0] * int(value[0]))
        else:
            assert kind == "arr[i32]", kind
            w.add_array(key, [1] * int(value[0]))
    sizes = gguf.GGML_QUANT_SIZES
    for name, type_name, shape in rec.tensors:
        qtype = gguf.GGMLQuantizationType[type_name]
        block, block_bytes = sizes[qtype]
        nbytes = int(np.prod(shape)) // block * block_bytes
        w.add_tensor_info(name, tuple(reversed(shape)), np.dtype(np.float32), nbytes, raw_dtype=qtype)
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_ti_data_to_file()
    w.close()
    with open(path, "r+b") as fh:
        fh.seek(4)
        fh.write(struct.pack("<I", 2))


# (tensor bytes, {ggml type: (tensors, bytes)}) by file: from the tables, summed by hand below
Q4_K_M = (4_080_263_168, {"Q4_K": (193, 3_159_687_168), "Q6_K": (33, 919_511_040),
                          "F32": (65, 1_064_960)})
Q8_0 = (7_160_348_672, {"Q8_0": (226, 7_159_283_712), "F32": (65, 1_064_960)})


def test_the_recorded_bytes_by_type_are_ggml_block_arithmetic() -> None:
    # d 4096, ff 11008, vocab 32000, 32 layers. Q4_K: 144 B / 256 weights; Q6_K 210 / 256;
    # Q8_0 34 / 32; F32 4 per weight. attn q, k, v, o: d × d; ffn gate, up, down: d × ff.
    d, ff, vocab = 4096, 11008, 32000
    f32 = 65 * d * 4  # two norms a layer and the final one
    # Q4_K_M: Q6_K for output and for 16 attn_v and 16 ffn_down, Q4_K for the rest
    six = vocab * d + 16 * d * d + 16 * d * ff
    four = vocab * d + 32 * 3 * d * d + 16 * d * d + 32 * 2 * d * ff + 16 * d * ff
    assert Q4_K_M[1] == {"Q4_K": (193, four // 256 * 144), "Q6_K": (33, six // 256 * 210),
                         "F32": (65, f32)}
    matrices = 2 * vocab * d + 32 * (4 * d * d + 3 * d * ff)
    assert Q8_0[1] == {"Q8_0": (226, matrices // 32 * 34), "F32": (65, f32)}
    for total, by_type in (Q4_K_M, Q8_0):
        assert total == sum(b for _, b in by_type.values())


@pytest.mark.parametrize(("quant", "expected"), [("Q4_K_M", Q4_K_M), ("Q8_0", Q8_0)])
def test_a_published_file_from_its_tensor_table(cli: Any, tmp_path: Path, quant: str,
                                                expected: tuple[int, dict[str, tuple[int, int]]]
                                                ) -> None:
    rec = recorded(quant)
    path = tmp_path / f"llama-2-7b.{quant}.gguf"
    write_header(path, rec)
    header = read_header(path)
    assert header.version == 2
    assert header.file_type == quant
    assert len(header.tensors) == 291
    assert header.parameters == LLAMA_2_7B_PARAMS
    total, by_type = expected
    assert header.tensor_bytes == total
    assert {k: (c, b) for k, (c, _, b) in header.bytes_by_type().items()} == by_type
    # the header llmcalc read, aligned to 32, then the tensors: the published length to the byte
    assert header.data_offset % 32 == 0
    assert header.data_offset + header.tensor_bytes == rec.size

    count = cli("count", str(path), "--json")
    assert count.code == 0, count.stderr
    assert count.json()["total_params"] == LLAMA_2_7B_PARAMS
    assert cli("count", "llama-2-7b", "--json").json()["total_params"] == LLAMA_2_7B_PARAMS
    memory = cli("memory", str(path), "--json")
    assert memory.code == 0, memory.stderr
    m = memory.json()
    assert m["weights_bytes"] == total
    assert m["dtype"] == f"gguf {quant}"
    # the --dtype format of the same name on the bundled config: llama.cpp's rule gives Q6_K to
    # attn_v and ffn_down by layer where the file counts in its own order; the same bytes
    formula = cli("memory", "llama-2-7b", "--dtype", quant.lower(), "--json")
    assert formula.json()["weights_bytes"] == total
