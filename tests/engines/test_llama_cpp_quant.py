"""An HF config as llama.cpp would convert and quantize it (llama_cpp_quant), held to a published
file: TheBloke's llama-2-7b Q4_K_M and Q8_0 tensor tables (tests/data/llama-2-7b.*.gguf.tsv), and
to vendor/llama.cpp src/llama-quant.cpp's rules (fallbacks, the 8-expert bumps)."""

from __future__ import annotations

from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from llmcalc import load_spec
from llmcalc.planning.engines import llama_cpp as L
from llmcalc.planning.engines.llama_cpp_quant import convert

DATA = Path(__file__).parents[1] / "data"


def _published(quant: str) -> list[tuple[str, str, tuple[int, ...]]]:
    rows = []
    for line in (DATA / f"llama-2-7b.{quant}.gguf.tsv").read_text().splitlines():
        if line.startswith("tensor\t"):
            _, name, kind, *ne = line.split("\t")
            rows.append((name, kind, tuple(int(x) for x in ne)))
    return rows


def test_llama_2_7b_is_thebloke_s_q8_0_table_tensor_by_tensor() -> None:
    h = convert(load_spec("llama-2-7b"), "q8_0").header
    assert sorted((t.name, t.type, t.shape) for t in h.tensors) == sorted(_published("Q8_0"))
    assert sum(t.nbytes for t in h.tensors) == 7_160_348_672


def test_llama_2_7b_q4_k_m_has_the_published_mix() -> None:
    c = convert(load_spec("llama-2-7b"), "q4_k_m")
    ours = {(t.name, t.shape) for t in c.header.tensors}
    published = _published("Q4_K_M")
    assert ours == {(n, s) for n, _, s in published}
    # llama_tensor_get_type_impl: output Q6_K; attn_v and ffn_down Q6_K in 16 of 32 layers
    # (use_more_bits), the rest Q4_K, norms F32 — the published counts and bytes
    count = Counter(t.type for t in c.header.tensors)
    assert count == Counter(k for _, k, _ in published) == {"Q4_K": 193, "Q6_K": 33, "F32": 65}
    by_type = Counter[str]()
    for t in c.header.tensors:
        by_type[t.type] += t.nbytes
    assert by_type == {"Q4_K": 3_159_687_168, "Q6_K": 919_511_040, "F32": 1_064_960}
    assert c.mix == "llama.cpp's default GGUF Q4_K_M mix"
    assert c.approximate.startswith("approximate: the tensors' order in the quantized file")
    # every tensor size is whole 32-byte units: the mapped range is the published data section
    assert L.model_buffer_bytes(c.header, mmap=True) == 4_080_263_168


def test_row_lengths_that_are_not_whole_blocks_fall_back() -> None:
    # Qwen1.5-MoE's experts are 1,408 wide: ffn_down_exps rows are not whole 256-blocks, so
    # tensor_type_fallback gives Q4_K → Q5_0 and Q6_K → Q8_0 (use_more_bits' layers)
    h = convert(load_spec("qwen1.5-moe-a2.7b"), "q4_k_m").header
    down = Counter(t.type for t in h.tensors if "ffn_down_exps" in t.name)
    assert down == {"Q5_0": 12, "Q8_0": 12}
    assert {t.type for t in h.tensors if "ffn_gate_exps" in t.name} == {"Q4_K"}
    assert {t.type for t in h.tensors if "ffn_gate_inp" in t.name} == {"F32"}


def test_an_eight_expert_model_gets_llama_cpps_bumps() -> None:
    h = convert(load_spec("mixtral-8x7b"), "q4_k_m").header
    types = {t.name: t.type for t in h.tensors}
    assert {types[f"blk.{i}.attn_v.weight"] for i in range(32)} == {"Q8_0"}
    assert {types[f"blk.{i}.attn_k.weight"] for i in range(32)} == {"Q8_0"}
    assert {types[f"blk.{i}.attn_output.weight"] for i in range(32)} == {"Q5_K"}
    # the experts split from the fused gate_up_proj: [d, ff, E] in ggml order
    gate = next(t for t in h.tensors if t.name == "blk.0.ffn_gate_exps.weight")
    assert gate.shape == (4096, 14336, 8)


def test_memory_with_an_hf_config(cli: Any) -> None:
    run = cli("memory", "llama-2-7b", "--engine", "llama.cpp", "--dtype", "q4_k_m", "--ctx",
              "4096", "--parallel", "1", "--json")
    assert run.code == 0, run.stderr
    d = run.json()
    assert d["model_buffer_bytes"] == 4_080_263_168
    assert d["kv_k_bytes"] == 32 * 4096 * 4096 * 2  # 32 layers × 4,096 wide × 4,096 cells × f16
    assert d["notes"] == ["weights as llama.cpp's default GGUF Q4_K_M mix gives them; "
                          "approximate: the tensors' order in the quantized file is taken as "
                          "the converter's; it decides where the CPU buffer's mapped range ends "
                          "(totals do not depend on it)"]


@pytest.mark.parametrize(("model", "dtype", "message"), [
    ("gpt2", "q4_k_m", "error: openai-community/gpt2: model_type 'gpt2' as a GGUF for --engine "
     "llama.cpp is followed for gemma2, gemma3_text, llama, mistral, mixtral, phi3, qwen2, "
     "qwen2_moe, qwen3, qwen3_moe; name a GGUF file"),
    ("llama-2-7b", "nf4", "error: --dtype nf4: with --engine llama.cpp an HF config takes a GGUF "
     "quant type: q4_0, q4_1, q5_0, q5_1, q8_0, mxfp4_moe, q2_k, q2_k_s, q3_k_s, q3_k_m, q3_k_l, "
         "q4_k_s, q4_k_m, q5_k_s, q5_k_m, q6_k, iq2_xxs, iq2_xs, iq2_s, iq2_m, iq3_xxs, iq3_xs, "
         "iq3_s, iq3_m, iq1_s, iq1_m, iq4_nl, iq4_xs, tq1_0, tq2_0, fp16, bf16, fp32"),
])
def test_refusals(cli: Any, model: str, dtype: str, message: str) -> None:
    run = cli("memory", model, "--engine", "llama.cpp", "--dtype", dtype)
    assert (run.code, run.stderr.strip()) == (2, message)


def test_an_hf_moe_config_runs_every_engine_rule(cli: Any) -> None:
    # the converter's metadata carries expert_used_count, which the reserved graphs route by
    run = cli("memory", "qwen3-30b-a3b", "--engine", "llama.cpp", "--dtype", "q4_k_m", "--json")
    assert run.code == 0, run.stderr
    d = run.json()
    h = convert(load_spec("qwen3-30b-a3b"), "q4_k_m").header
    assert h.metadata["qwen3moe.expert_used_count"] == 8
    assert d["model_buffer_bytes"] == sum(t.nbytes for t in h.tensors)  # all 32-byte multiples
    assert d["compute_buffer_bytes"] is not None
    fit = cli("fit", "qwen3-30b-a3b", "--engine", "llama.cpp", "--dtype", "q4_k_m", "--gpu",
              "rtx-3060", "--json")
    assert fit.code == 0, fit.stderr
    assert fit.json()["command"].startswith("llama-server --model qwen3-30b-a3b-Q4_K_M.gguf ")


@pytest.mark.parametrize(("model", "extra"), [("gemma-2-9b", 0), ("gemma-3-1b", 0),
                                              ("phi-3-mini-4k", 0), ("llama-3.1-8b", 64),
                                              ("qwen3-30b-a3b", 0), ("mixtral-8x7b", 0)])
def test_the_converted_tensors_hold_the_models_parameters(model: str, extra: int) -> None:
    # a second count: llmcalc's own (held to transformers) against the converted table's elements;
    # Llama 3.1's file also holds rope_freqs [head_dim / 2] (conversion/llama.py, rope_type llama3)
    from llmcalc import count

    spec = load_spec(model)
    h = convert(spec, "q4_k_m").header
    assert sum(t.elements for t in h.tensors) == count(spec).total + extra
    assert ("rope_freqs.weight" in {t.name for t in h.tensors}) == (extra > 0)


def test_gemma_and_phi3_as_llama_cpp_reads_them() -> None:
    g = convert(load_spec("gemma-3-1b"), "q4_k_m").header
    hp = L.hparams(g)
    # transformers' layer_types (five sliding layers of each six) written as the pattern array
    assert hp.n_swa == 512 and sum(hp.is_swa) == 22 and not hp.is_swa[5]
    # rows of 1,152 are not whole 256-blocks: Q4_K falls back to Q5_0 (tensor_type_fallback), the
    # tied token_embd takes the output's Q6_K → Q8_0
    types = {t.name: t.type for t in g.tensors}
    assert types["blk.0.attn_q.weight"] == "Q5_0" and types["token_embd.weight"] == "Q8_0"
    assert "output.weight" not in types
    p = convert(load_spec("phi-3-mini-4k"), "q4_k_m").header
    types = {t.name: t.type for t in p.tensors}
    # category_is_attn_v: a fused attn_qkv gets attn_v's Q6_K in use_more_bits' layers
    assert [types[f"blk.{i}.attn_qkv.weight"] for i in (0, 4, 6)] == ["Q6_K", "Q4_K", "Q6_K"]
    assert next(t.shape for t in p.tensors if t.name == "blk.0.ffn_up.weight") == (3072, 16384)


# llama.cpp tools/quantize/README.md ("Quantization", meta-llama/Llama-3.1-8B; llama-cpp-python
# 0.3.36's vendor/llama.cpp, https://github.com/ggml-org/llama.cpp/blob/master/tools/quantize/
# README.md): llama-bench's "bits/weight" and "size (GiB)" rows for every file type, e.g.
# "| bits/weight | 2.0042 | 2.1460 | 2.3824 | 2.5882 | 2.7403 | 2.9294 |" (IQ1_S … IQ2_M)
LLAMA_31_8B_BPW = {
    "iq1_s": (2.0042, 1.87), "iq1_m": (2.1460, 2.01), "iq2_xxs": (2.3824, 2.23),
    "iq2_xs": (2.5882, 2.42), "iq2_s": (2.7403, 2.56), "iq2_m": (2.9294, 2.74),
    "iq3_xxs": (3.2548, 3.04), "iq3_xs": (3.4977, 3.27), "iq3_s": (3.6606, 3.42),
    "iq3_m": (3.7628, 3.52), "iq4_xs": (4.4597, 4.17), "iq4_nl": (4.6818, 4.38),
    "q2_k_s": (2.9697, 2.78), "q2_k": (3.1593, 2.95), "q3_k_s": (3.6429, 3.41),
    "q3_k_m": (3.9960, 3.74), "q3_k_l": (4.2979, 4.02), "q4_k_s": (4.6672, 4.36),
    "q4_k_m": (4.8944, 4.58), "q5_k_s": (5.5704, 5.21), "q5_k_m": (5.7036, 5.33),
    "q6_k": (6.5633, 6.14), "q8_0": (8.5008, 7.95), "fp16": (16.0005, 14.96)}


@pytest.mark.parametrize("quant", list(LLAMA_31_8B_BPW))
def test_llama_3_1_8b_weighs_what_llama_bench_printed_for_every_type(quant: str) -> None:
    # llama-bench's size is the tensors' bytes (llama_model_size), its bits/weight those bytes × 8
    # over every tensor's elements (llama_model_n_params, rope_freqs included); 0.0001 bpw is
    # 100 kB here, less than any one tensor changing type
    h = convert(load_spec("llama-3.1-8b"), quant).header
    data = sum(t.nbytes for t in h.tensors)
    elements = sum(t.elements for t in h.tensors)
    assert (f"{data * 8 / elements:.4f}", f"{data / 2**30:.2f}") == (
        f"{LLAMA_31_8B_BPW[quant][0]:.4f}", f"{LLAMA_31_8B_BPW[quant][1]:.2f}")


def test_llama_2_7b_q5_k_m_is_the_published_file_to_the_byte() -> None:
    # TheBloke/Llama-2-7B-Chat-GGUF llama-2-7b-chat.Q5_K_M.gguf: 4,783,156,928 bytes (sha256
    # e0b99920…b997f), as a public model catalog lists it (Size: 4783156928); the same conversion
    # as the Q4_K_M and Q8_0 files above, whose 741,056-byte header (32-aligned) holds the same
    # keys and tensor infos whatever the type: header + the tensors' bytes is the file
    h = convert(load_spec("llama-2-7b"), "q5_k_m").header
    assert 741_056 + sum(t.nbytes for t in h.tensors) == 4_783_156_928
    # llama_tensor_get_type_impl: Q5_K_M gives Q6_K where Q4_K_M does (attn_v, ffn_down in
    # use_more_bits' layers, output)
    assert Counter(t.type for t in h.tensors) == {"Q5_K": 193, "Q6_K": 33, "F32": 65}


# bartowski's Llama-3.1-70B GGUFs (quantized with an importance matrix), as his README table lists
# them and https://ozeki.chat/p_8590-understanding-ai-model-files.html quotes it:
# "Llama-3.1-70B-Q4_K_M.gguf | Q4_K_M | 42.52GB", "Llama-3.1-70B-IQ4_XS.gguf | IQ4_XS | 37.90GB" …
BARTOWSKI_70B_GB = {"q8_0": 74.98, "q6_k": 57.89, "q5_k_m": 49.95, "q5_k_s": 48.66,
                    "q4_k_m": 42.52, "q4_k_s": 40.35, "q4_0": 40.12, "iq4_xs": 37.90,
                    "q3_k_l": 37.14, "q3_k_m": 34.27, "iq3_m": 31.94, "q3_k_s": 30.91}


@pytest.mark.parametrize("quant", list(BARTOWSKI_70B_GB))
def test_llama_3_1_70b_with_an_imatrix_is_bartowskis_files(quant: str) -> None:
    # LLM_TYPE_70B's Q5_K attn_v, and with an importance matrix Q4_0's first eighth of ffn_down
    # Q4_1 and IQ4_XS's IQ4_XS (without one: Q5_K), llama-quant.cpp's has_imatrix rules; the
    # file is the tensors plus a header of the Llama 3 tokenizer's ~9 MB: every published size
    # (to 10 MB) is 4–14 MB above the tensors' bytes; without the matrix Q4_0 and IQ4_XS are not
    import dataclasses
    import math

    from llmcalc.formulas import gguf_mix
    from llmcalc.planning.engines.llama_cpp_quant import _gguf_tensors, mix_types

    spec = load_spec("llama-3.1-70b")
    tensors = list(_gguf_tensors(spec))

    def data(imatrix: bool) -> int:
        m = dataclasses.replace(gguf_mix.model_of(spec, quant), imatrix=imatrix)
        kinds = mix_types(tensors, m, gguf_mix.QUANT_TYPES[quant], 80)
        return sum(L.row_bytes(k, ne[0]) * (math.prod(ne) // ne[0])
                   for (_, ne), k in zip(tensors, kinds, strict=True))

    header = BARTOWSKI_70B_GB[quant] * 1e9 - data(True)
    assert 4e6 < header < 14e6
    if quant in ("q4_0", "iq4_xs"):
        assert not 4e6 < BARTOWSKI_70B_GB[quant] * 1e9 - data(False) < 14e6
