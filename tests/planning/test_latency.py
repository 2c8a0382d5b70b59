"""Serving latency bounds: published TensorRT-LLM measurements are never faster than the roofline."""

from __future__ import annotations

import json
from typing import Any

import pytest

from llmcalc import load_spec
from llmcalc.formulas import flops, memory
from llmcalc.formulas.quant import ENCODER_PARTS, resolve_format, tower_bytes
from llmcalc.planning.hardware import INTERCONNECTS, interconnect, lookup
from llmcalc.planning.latency import all_reduce_bytes, compute_peak, latency, step_weight_bytes
from llmcalc.units import DType

A100 = lookup("a100-80gb")
NVLINK3 = interconnect(None, A100)
FP16 = {"dtype": DType.fp16, "kv_dtype": DType.fp16}

# NVIDIA TensorRT-LLM docs/source/performance.md (v0.6.1 peak throughput; v0.5 low latency),
# A100 GPUs, FP16, "LLaMA 7B" = Llama-2-7b per its methodology section.


def test_published_throughput_llama_7b_a100() -> None:
    # batch 384, TP 1, input 128, output 128: 5,586 output tokens/s
    r = latency(load_spec("llama-2-7b"), accelerator=A100, interconnect=NVLINK3, batch=384,
                ctx=128, gen=128, **FP16)
    assert r.throughput_per_gpu >= 5_586
    # measured: 47% of the bound, which lets the prefill overlap the decode steps (in-flight
    # batching); 60% of the stages' sum, TTFT + (gen − 1) × TPOT
    assert round(5_586 / r.throughput_per_gpu, 2) == 0.47
    assert round(5_586 / (384 * 128 / r.e2e_s), 2) == 0.60
    assert (r.prefill.bound, r.decode.bound) == ("compute", "memory")


def test_published_first_token_latency_a100() -> None:
    # batch 1, input 2,048: LLaMA 7B TP 1 133 ms, LLaMA 70B TP 4 377 ms
    small = latency(load_spec("llama-2-7b"), accelerator=A100, interconnect=NVLINK3, ctx=2048,
                    gen=1, **FP16)
    assert small.ttft_s <= 0.133
    assert round(small.ttft_s / 0.133, 2) == 0.67
    big = latency(load_spec("llama-2-70b"), accelerator=A100, interconnect=NVLINK3, tp=4,
                  ctx=2048, gen=1, **FP16)
    assert big.ttft_s <= 0.377
    assert round(big.ttft_s / 0.377, 2) == 0.68
    # 2 all-reduces × 80 layers × 2,048 tokens × 8,192 × 2 B × 2·3/4 per GPU
    assert big.prefill.comm_bytes == 2 * 80 * 2048 * 8192 * 2 * 3 // 2
    assert big.prefill.comm_s == pytest.approx(big.prefill.comm_bytes / 300e9)


def test_decode_reads_weights_and_cache_and_ridge() -> None:
    spec = load_spec("llama-3-8b")
    h100 = lookup("h100")
    r = latency(spec, accelerator=h100, interconnect=interconnect(None, h100), batch=8,
                ctx=128, gen=1)
    assert r.decode_ctx == 128
    # the weights less the embedding table (128,256 × 4,096 bf16), of which the step reads the 8
    # rows its tokens look up (a gather), and 8 sequences' cache
    table = 128_256 * 4_096 * 2
    assert r.decode.bytes == 16_060_522_496 - table + 8 * 4_096 * 2 + 8 * 128 * 131_072
    assert r.tpot_s == pytest.approx(r.decode.bytes / 3.35e12)
    ridge = r.ridge_batch
    assert ridge is not None
    at = latency(spec, accelerator=h100, interconnect=interconnect(None, h100), batch=ridge,
                 ctx=128, gen=1)
    below = latency(spec, accelerator=h100, interconnect=interconnect(None, h100),
                    batch=ridge - 1, ctx=128, gen=1)
    # at 1,024 tokens a sequence's cache costs more to read than its FLOPs: never compute bound
    assert latency(spec, accelerator=h100, interconnect=interconnect(None, h100), ctx=1024,
                   gen=1).ridge_batch is None
    assert (at.decode.bound, below.decode.bound) == ("compute", "memory")


def test_moe_reads_only_the_experts_reached() -> None:
    spec = load_spec("mixtral-8x7b")
    one, many = (step_weight_bytes(spec, DType.bf16, tokens=t) for t in (1, 10_000))
    # 10,000 tokens reach every expert; of the 32,000 × 4,096 embedding table they read their rows
    assert one < many == 2 * 46_702_792_704 - (32_000 - 10_000) * 4_096 * 2
    assert all_reduce_bytes(spec, tokens=1, tp=1) == 0


def test_a_decode_step_writes_the_recurrent_state_back() -> None:
    # Qwen3.5-35B-A3B: 30 Gated DeltaNet layers, each a sequence's 32 heads × 128 × 128 fp32 state
    # and 8,192 × 4 bf16 conv state, read with the cache and written back whole every token
    spec = load_spec("qwen3.5-35b-a3b")
    h100 = lookup("h100")
    r = latency(spec, accelerator=h100, interconnect=interconnect(None, h100), batch=2, ctx=1000,
                gen=1)
    state = 30 * (32 * 128 * 128 * 4 + 8_192 * 4 * 2)
    assert state == 64_880_640
    read = step_weight_bytes(spec, DType.bf16, tokens=2) + memory.kv_cache_bytes(
        spec, batch=2, ctx=1000, dtype=DType.bf16)
    assert r.decode.bytes == read + 2 * state


def test_a_text_step_reads_no_vision_tower() -> None:
    # Qwen3.6-35B-A3B's whole checkpoint: Qwen3.5-35B-A3B's language model beside a 27-layer vision
    # tower (415,891,440 parameters) and its patch merger (30,679,808), which a text prompt never
    # runs: its prefill and decode steps read the bytes of the text model alone
    whole, text = load_spec("qwen3.6-35b-a3b"), load_spec("qwen3.5-35b-a3b")
    assert tower_bytes(whole, DType.bf16) == (415_891_440 + 30_679_808) * 2 == 893_142_496
    assert tower_bytes(text, DType.bf16) == 0
    h100 = lookup("h100")
    a, b = (latency(s, accelerator=h100, interconnect=interconnect(None, h100), batch=4, ctx=512,
                    gen=64) for s in (whole, text))
    assert a.weight_bytes - b.weight_bytes == 893_142_496  # held in memory all the same
    assert (a.decode.bytes, a.prefill.bytes) == (b.decode.bytes, b.prefill.bytes)
    assert a.decode.bytes == step_weight_bytes(text, DType.bf16, tokens=4) + memory.kv_cache_bytes(
        text, batch=4, ctx=512 + 31, dtype=DType.bf16) + 4 * 64_880_640  # + the recurrent state written


@pytest.mark.parametrize(("whole", "text"), [("dots3-note-whole-default", "dots3-note-text-default"),
                                             ("gemma-4-e2b-whole", "gemma-4-e2b")])
@pytest.mark.parametrize("fmt", ["bf16", "q4_k_m"])
def test_a_text_step_reads_no_tower_of_any_kind(whole: str, text: str, fmt: str) -> None:
    # dots3-note's vision tower routes patches to its own experts (not the language model's), and
    # Gemma 4 E2B's whole checkpoint holds an audio tower and its projector beside the vision
    # tower: a text step reads the language model's bytes alone, experts and all
    a, b = load_spec(whole), load_spec(text)
    f = resolve_format(a, fmt)
    assert tower_bytes(a, f) > 0 == tower_bytes(b, f)
    assert {p.name for p in a.parts} >= ({"vision", "audio"} if "gemma" in whole else {"vision"})
    for tokens in (1, 4, 512):
        assert step_weight_bytes(a, f, tokens=tokens) == step_weight_bytes(b, f, tokens=tokens)


def test_a_decode_step_reads_no_encoder() -> None:
    # whisper-tiny: its audio encoder (16,416,768 fp16 bytes) runs once over the input, in the
    # prefill, whose FLOPs count it; a decode step runs the decoder alone
    spec = load_spec("whisper-tiny")
    assert tower_bytes(spec, DType.fp16, ENCODER_PARTS) == 16_416_768
    whole = step_weight_bytes(spec, DType.fp16, tokens=1)
    assert step_weight_bytes(spec, DType.fp16, tokens=1, decode=True) == whole - 16_416_768
    r = latency(spec, accelerator=A100, interconnect=NVLINK3, batch=1, ctx=100, gen=9, **FP16)
    assert r.decode.bytes == whole - 16_416_768 + memory.kv_cache_bytes(
        spec, batch=1, ctx=104, dtype=DType.fp16)


def test_speculative_decoding_formula() -> None:
    r = latency(load_spec("llama-2-70b"), accelerator=A100, interconnect=NVLINK3, tp=4, ctx=512,
                gen=128, draft=load_spec("llama-3.2-1b"), accept_rate=0.8, draft_tokens=5)
    s = r.speculation
    assert s is not None
    assert s.tokens_per_step == pytest.approx((1 - 0.8**6) / 0.2)
    assert s.speedup == pytest.approx(s.tokens_per_step / (5 * s.cost_ratio + 1))
    assert set(INTERCONNECTS) >= {"nvlink3", "nvlink4", "pcie4", "pcie5"}


def test_cli_latency(cli) -> None:
    r = cli("latency", "llama-2-7b", "--gpu", "a100", "--batch", "384", "--ctx", "128", "--gen",
            "128", "--dtype", "fp16", "--json")
    assert r.code == 0
    d = r.json()
    assert d["inputs"]["batch"] == 384 and d["inputs"]["dtype"] == "fp16"
    assert d["inputs"]["interconnect"]["name"] == "NVLink 3 (A100 SXM)"
    assert d["throughput_per_gpu"] >= 5_586
    r = cli("latency", "llama-2-7b", "--gpu", "a100", "--compute-efficiency", "1.5")
    assert (r.code, r.stderr) == (
        2, "error: --compute-efficiency 1.5: must be a fraction in (0, 1]\n")
    r = cli("latency", "llama-2-7b", "--gpu", "a100", "--tp", "2", "--interconnect", "token-ring")
    assert r.code == 2 and r.stderr.startswith("error: --interconnect token-ring: unknown link")
    r = cli("latency", "llama-2-7b", "--gpu", "h100", "--dtype", "nf4", "--explain")
    assert r.code == 0 and "Williams et al. 2009" in " ".join(r.stdout.split())


def test_the_heading_names_the_link_only_where_gpus_share_the_work(cli) -> None:
    """One GPU sends no all-reduce: its heading names no link (an Apple chip has no PCIe x16 to
    name); with tp 2 the link the all-reduces cross is named."""
    one = cli("latency", "llama-2-7b", "--gpu", "apple-m4-max", "--dtype", "q4_0")
    assert one.code == 0
    assert "1 × Apple M4 Max (128GB) (tp 1) · batch 1" in " ".join(one.stdout.split())
    two = cli("latency", "llama-2-7b", "--gpu", "a100", "--tp", "2")
    assert two.code == 0
    assert "2 × NVIDIA A100 80GB SXM (tp 2, NVLink 3 (A100 SXM)) · batch 1" in " ".join(
        two.stdout.split())


def test_prefill_runs_the_lm_head_for_the_last_prompt_token_only() -> None:
    """Engines multiply only the sampled position by the LM head (llama.cpp, vLLM, SGLang,
    TensorRT-LLM: llmcalc.planning.latency.PREFILL_HEAD_NOTE); a decode step still runs it."""
    h100 = lookup("h100")
    link = interconnect(None, h100)
    spec = load_spec("llama-3.2-1b")  # lm_head [128,256, 2,048], tied to the embedding
    head = 2 * 128_256 * 2_048
    assert flops.lm_head_flops_per_token(spec) == head
    r = latency(spec, accelerator=h100, interconnect=link, batch=2, ctx=512, gen=16)
    whole = flops.forward_flops_per_sequence(spec, ctx=512, causal=True)
    assert r.prefill.flops == 2 * (whole - 511 * head) == 2_028_342_345_728
    assert round(1 - r.prefill.flops / (2 * whole), 3) == 0.209  # a fifth of transformers' forward
    assert r.decode.flops == 2 * flops.forward_flops_per_token(spec, ctx=r.decode_ctx)
    assert r.prefill_note == "LM head for the last prompt token only, as engines run it"
    gemma = latency(load_spec("gemma-3-4b"), accelerator=h100, interconnect=link, ctx=512, gen=1)
    assert flops.lm_head_flops_per_token(load_spec("gemma-3-4b")) == 2 * 262_208 * 2_560
    assert round(1 - gemma.prefill.flops / flops.forward_flops_per_sequence(
        load_spec("gemma-3-4b"), ctx=512, causal=True), 3) == 0.171
    # an encoder's masked-LM head reads every position: its prefill is the whole forward
    bert = load_spec("bert-base-uncased")
    enc = latency(bert, accelerator=h100, interconnect=link, ctx=512, gen=1)
    assert flops.lm_head_flops_per_token(bert) == 0 and enc.prefill_note == ""
    assert enc.prefill.flops == flops.forward_flops_per_sequence(bert, ctx=512, causal=True)


def test_the_prefill_says_it_runs_the_head_once(cli: Any) -> None:
    args = ("latency", "llama-3.2-1b", "--gpu", "h100", "--ctx", "512", "--gen", "1")
    d = cli(*args, "--json").json()
    assert d["prefill"]["note"] == "LM head for the last prompt token only, as engines run it"
    assert d["prefill"]["flops_per_gpu"] == 1_014_171_172_864
    assert d["notes"] == []  # not an assumption: --strict still answers
    text = " ".join(cli(*args, "--explain").stdout.split())
    assert ("prefill compute = batch × causal forward FLOPs (LM head for the last prompt token "
            "only, as engines run it) / tp / (peak of bf16's compute format × eff) = "
            "1,014,171,172,864 / ") in text


@pytest.mark.parametrize(("gpu", "dtype", "peak"), [
    ("rtx-4090", "q4_0", 660_600 * 10**9),  # GGUF blocks on INT8 tensor cores (llama.cpp's MMQ)
    ("rtx-4090", "bf16", 330_300 * 10**9),  # FP16 with FP16 accumulation: twice the FP32-acc 165.2T
    ("rtx-3090", "q4_0", 284_700 * 10**9),  # INT8 (GA102 whitepaper's dense figure)
    ("rtx-3090", "fp16", 142 * 10**12),  # FP16 with FP16 accumulation
    ("h100", "fp8", 1_979 * 10**12),
    ("h100", "bf16", 989 * 10**12),
    ("apple-m2-ultra", "q4_0", 27_200 * 10**9),  # Apple: one (derived) figure for every format
])
def test_bound_runs_at_the_weight_formats_compute_peak(gpu: str, dtype: str, peak: int) -> None:
    spec = load_spec("llama-2-7b")
    assert compute_peak(lookup(gpu), resolve_format(spec, dtype)) == peak


def test_gpu_flops_replaces_only_the_bf16_peak(cli: Any) -> None:
    """RTX 5090: no FP32-accumulate bf16 figure; its INT8 peak (838T) bounds a Q4_0 prefill."""
    r = cli("latency", "llama-2-7b", "--gpu", "rtx-5090", "--gpu-flops", "100T", "--dtype", "q4_0",
            "--ctx", "512", "--gen", "1", "--json")
    acc = json.loads(r.stdout)["inputs"]["accelerator"]
    assert (acc["peak_flops"], acc["compute_peak_flops"]) == (100 * 10**12, 838 * 10**12)


def test_a_prompt_past_the_window_is_noted_as_flops_notes_it(cli) -> None:
    """latency gpt2 --ctx 4k: the roofline is computed as asked, with flops' own note on stderr
    (in --json, only in notes); --strict refuses it; a prompt inside the window has no note."""
    note = ("note: context 4,096 is above the model's max_position_embeddings (1,024); the "
            "figures assume it runs there anyway\n")
    flops = cli("flops", "gpt2", "--ctx", "4k")
    r = cli("latency", "gpt2", "--gpu", "h100", "--ctx", "4k")
    assert (r.code, r.stderr) == (0, note) and flops.stderr == note
    assert "note:" not in r.stdout and "time to first token" in r.stdout
    d = cli("latency", "gpt2", "--gpu", "h100", "--ctx", "4k", "--json")
    assert (d.code, d.stderr) == (0, "")
    assert d.json()["notes"] == [note[len("note: "):-1]] and d.json()["inputs"]["ctx"] == 4096
    assert cli("latency", "gpt2", "--gpu", "h100", "--ctx", "1k", "--json").json()["notes"] == []
    for extra in ((), ("--json",)):
        s = cli("latency", "gpt2", "--gpu", "h100", "--ctx", "4k", "--strict", *extra)
        assert (s.code, s.stdout) == (2, "")
        assert s.stderr == "error: --strict: the output: " + note[len("note: "):]


@pytest.mark.parametrize(("model", "fmt", "unread"), [
    # GPT-2: wte is tied to the LM head (its matmul reads it whole); wpe [1,024, 768] is a gather
    ("gpt2", DType.bf16, (1_024 - 1) * 768 * 2),
    # Gemma 3n: the tied token table read whole; the per-layer table [262,144, 30 × 256] a gather
    ("gemma-3n-text-defaults", DType.bf16, (262_144 - 1) * 8_960 * 2),
    # gpt-oss-20b (MXFP4 keeps the embedding bf16): an untied [201,088, 2,880] table, one row read
    ("gpt-oss-20b", DType.bf16, (201_088 - 1) * 2_880 * 2),
])
def test_a_step_reads_the_rows_an_embedding_looks_up(model: str, fmt: DType, unread: int) -> None:
    """nn.Embedding and ggml_get_rows read the rows looked up, not the table (a dense step of one
    token reads all the weights but the rest of each untied lookup table)."""
    spec = load_spec(model)
    full = step_weight_bytes(spec, fmt, tokens=10**9)  # every row and expert reached
    if spec.moe is None:
        assert step_weight_bytes(spec, fmt, tokens=1) == full - unread
    else:  # one token reaches k of E experts: the tables' share is the same
        assert full - step_weight_bytes(spec, fmt, tokens=1) > unread


def test_published_gpt_oss_tg128_below_the_bound(cli: Any) -> None:
    """gpt-oss-20b tg128 (llama.cpp discussion #15396): RTX 4090 225.22 tokens/s, M4 Max 32-core
    92.36 — above the bound that read the whole 201,088 × 2,880 embedding table each step (207.0,
    84.2 tokens/s); below the bound that reads the row looked up."""
    for gpu, measured, bound in (("rtx-4090", 225.22, 271.6), ("apple-m4-max-32c", 92.36, 110.5)):
        r = cli("latency", "gpt-oss-20b", "--gpu", gpu, "--ctx", "1", "--gen", "128", "--batch",
                "1", "--json")
        d = r.json()
        assert measured <= d["tokens_per_s"] and round(d["tokens_per_s"], 1) == bound


@pytest.mark.parametrize(("gpu", "dtype", "peak"), [
    ("b200", "nvfp4", 9_000 * 10**12),  # W4A4 NVFP4 on FP4 tensor cores (vLLM, TensorRT-LLM)
    ("gb200", "nvfp4", 10_000 * 10**12),
    ("rtx-5090", "nvfp4", 1_676 * 10**12),
    ("rtx-5060-ti-16gb", "nvfp4", 379_500 * 10**9),
    ("h100", "nvfp4", 989 * 10**12),  # Hopper has no FP4 tensor cores: FP16
    ("b200", "mxfp4", 4_500 * 10**12),  # MXFP4 runs W4A8 (MXFP8 activations): the FP8 rate
    ("rtx-4070-super", "q4_k_m", 284 * 10**12),  # a new Ada card's INT8 peak
])
def test_fp4_weights_run_at_the_fp4_peak_on_blackwell(gpu: str, dtype: str, peak: int) -> None:
    spec = load_spec("llama-3.1-8b")
    assert compute_peak(lookup(gpu), resolve_format(spec, dtype)) == peak


@pytest.mark.parametrize("gpu", ["rtx-5070-ti", "rtx-5070", "rtx-5060-ti-16gb", "rtx-5060",
                                 "rtx-4060", "rtx-4070-super", "l40", "gb200"])
def test_the_added_cards_give_a_bound_and_an_expected_speed(cli: Any, gpu: str) -> None:
    """Each added card has a FLOP rate, so `latency --engine` answers on it without --gpu-flops,
    the expected figures below the bound."""
    r = cli("latency", "llama-3.2-3b", "--gpu", gpu, "--dtype", "q4_k_m", "--ctx", "512", "--gen",
            "128", "--engine", "llama.cpp", "--json")
    assert r.code == 0, r.stderr
    d = json.loads(r.stdout)
    e = d["expected"]
    assert e["backend"] == "cuda"
    assert 0 < e["decode_tokens_per_s"] <= d["tokens_per_s"]
    assert 0 < e["prefill_tokens_per_s"] <= d["inputs"]["batch"] * 512 / d["prefill"]["seconds"]


@pytest.mark.parametrize(("args", "notes"), [
    # DeepSeek-V3 at Q4_K_M: 376.65 GiB of weights on a 24 GiB card
    (("--gpu", "rtx-3090", "--dtype", "q4_k_m"),
     ["the weights, 376.65 GiB, are more than the NVIDIA GeForce RTX 3090's 24.00 GiB of memory: "
      "these times are for a card that holds them (llmcalc fit sizes what runs)"]),
    # FP8 (624.94 GiB) at tp 4: 156.24 GiB a GPU, at tp 8 78.12 GiB of an 80 GiB card's
    (("--gpu", "h100", "--dtype", "fp8", "--tp", "4"),
     ["the weights, 624.94 GiB (156.24 GiB a GPU at --tp 4), are more than the NVIDIA H100 SXM's "
      "80.00 GiB of memory: these times are for a card that holds them (llmcalc fit sizes what "
      "runs)"]),
    (("--gpu", "h100", "--dtype", "fp8", "--tp", "8"), []),
    # a card given by its figures alone states no memory
    (("--gpu-flops", "1P", "--gpu-bandwidth", "3TB/s", "--dtype", "fp8"), []),
])
def test_weights_a_card_cannot_hold_are_noted(cli: Any, args: tuple[str, ...],
                                              notes: list[str]) -> None:
    out = cli("latency", "deepseek-v3", *args, "--ctx", "4096", "--gen", "256", "--json").json()
    assert [n for n in out["notes"] if not n.startswith("a card not in the table")] == notes


@pytest.mark.parametrize(("engine", "peak"), [
    ("vllm", 989_000_000_000_000),  # llama.cpp b2899's dp4a MMQ, or dequantised: the bf16 peak
    ("sglang", 989_000_000_000_000),  # vLLM's kernels
    ("llama.cpp", 1_979_000_000_000_000),  # its MMQ on the INT8 tensor cores
    (None, 1_979_000_000_000_000),  # the bound: the highest any engine reaches
])
def test_gguf_weights_compute_at_the_peak_the_engine_reaches(engine: str | None, peak: int) -> None:
    h100 = lookup("h100")
    q4_k_m = resolve_format(load_spec("llama-3.1-8b"), "q4_k_m")
    assert compute_peak(h100, q4_k_m, engine=engine, backend="cuda") == peak


@pytest.mark.parametrize(("model", "refused"), [
    ("bert-base-uncased", True), ("modernbert-base", True), ("xlm-roberta-base", True),
    ("xlnet-default", False),  # bidirectional, but its mems are a cache it generates over
    ("gpt2", False), ("falcon-mamba-7b", False),  # causal; no attention at all
    ("flan-t5-base", False), ("bart-base", False),  # a bidirectional encoder, a causal decoder
])
def test_an_encoder_generates_no_tokens(cli: Any, model: str, refused: bool) -> None:
    r = cli("latency", model, "--gpu", "h100", "--ctx", "512", "--gen", "16")
    name = load_spec(model).name
    assert (r.code, r.stderr) == ((2, f"error: {name}: an encoder (every attention layer "
                                      "bidirectional, no cache): it generates no tokens; --gen 1 "
                                      "gives one forward pass over --ctx tokens\n")
                                  if refused else (0, r.stderr))
    assert cli("latency", model, "--gpu", "h100", "--ctx", "512", "--gen", "1").code == 0


def test_whole_requests_let_the_prefill_overlap_the_decode_steps(cli) -> None:
    """vLLM 0.19 on an A100 80GB PCIe, Qwen2.5-7B FP16, 2,048 tokens in, 128 out, concurrency 16:
    906.6 output tokens/s (github.com/cssnoeasy/a100-vllm-benchmark-blog), past the stages' sum
    (prefill, then the decode steps: 829.4 tokens/s) because chunked prefill runs one request's
    prompt in the passes that decode the others: the bound takes all the FLOPs or all the bytes
    (here the FLOPs: 1,354.9 tokens/s), and at least one request's own path."""
    out = cli("latency", "qwen2.5-7b-instruct", "--gpu", "a100-pcie-80gb", "--dtype", "fp16",
              "--ctx", "2048", "--gen", "128", "--batch", "16", "--json").json()
    assert round(16 * 128 / out["e2e_s"], 1) == 829.4
    assert round(out["throughput_per_gpu"], 1) == 1_354.9
    p, d = out["prefill"], out["decode_step"]
    assert out["whole_s"] == pytest.approx(p["compute_s"] + 127 * d["compute_s"])
    assert out["whole_s"] == pytest.approx(16 * 128 / out["throughput_per_gpu"])


@pytest.mark.parametrize(("model", "gpu", "tp", "batch", "ctx", "gen"), [
    ("llama-3.1-8b", "h100", 1, 1, 32768, 128), ("llama-3.1-8b", "h100", 2, 1, 8192, 128),
    ("llama-3.1-8b", "h100", 2, 8, 8192, 128), ("llama-2-7b", "a100", 1, 384, 128, 128),
    ("mixtral-8x7b", "h100", 4, 64, 1000, 50), ("qwen3-30b-a3b", "l40s", 1, 16, 4096, 512),
])
def test_whole_requests_are_at_most_the_stages_sum_and_at_least_one_requests_path(
        model: str, gpu: str, tp: int, batch: int, ctx: int, gen: int) -> None:
    """A request's decode steps cannot overlap its own prefill, nor one another: at batch 1 the
    bound is the stages' sum (TTFT + (gen − 1) × TPOT), at a larger batch between one request's
    path and the batch's stages' sum; the all-reduces count in full (tp > 1)."""
    acc = lookup(gpu)
    kw = dict(accelerator=acc, interconnect=interconnect(None, acc), tp=tp, ctx=ctx, gen=gen,
              **FP16)
    r = latency(load_spec(model), batch=batch, **kw)  # type: ignore[arg-type]
    one = latency(load_spec(model), batch=1, **kw)  # type: ignore[arg-type]
    assert one.whole_s == one.e2e_s
    assert one.e2e_s <= r.whole_s <= r.e2e_s
    assert r.throughput_per_gpu == batch * gen / r.whole_s / tp
    lower = (max(r.prefill.compute_s + (gen - 1) * r.decode.compute_s,
                 r.prefill.memory_s + (gen - 1) * r.decode.memory_s)
             + r.prefill.comm_s + (gen - 1) * r.decode.comm_s)
    assert r.whole_s == max(lower, one.e2e_s)
    if tp > 1:
        assert r.prefill.comm_s > 0 and r.decode.comm_s > 0
