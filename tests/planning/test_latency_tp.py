"""Tensor parallelism past a model's KV heads: each GPU holds one head whole, as vLLM, SGLang and
TensorRT-LLM replicate them (llmcalc.planning.engines.budget), in the latency bound, the expected
speed and the engines' KV budgets alike; a tp the engines refuse is refused."""

from __future__ import annotations

from typing import Any

from llmcalc import load_spec
from llmcalc.formulas import memory
from llmcalc.formulas.quant import step_weight_bytes
from llmcalc.planning.engines.budget import kv_heads_per_rank
from llmcalc.planning.hardware import interconnect, lookup
from llmcalc.planning.latency import latency
from llmcalc.units import DType

H100 = lookup("h100")
QWEN3_235B = "Qwen/Qwen3-235B-A22B"  # 94 layers, 64 attention heads, 4 KV heads of 128


def test_kv_heads_per_rank_is_the_engines_rule() -> None:
    # vLLM get_num_kv_heads: max(1, total // tp); 4 heads over 8 GPUs: one each, twice over
    assert [kv_heads_per_rank(4, tp) for tp in (1, 2, 4, 8, 16)] == [4, 2, 1, 1, 1]


def test_latency_holds_one_kv_head_a_gpu_past_the_kv_heads() -> None:
    spec = load_spec(QWEN3_235B)
    kw = dict(accelerator=H100, interconnect=interconnect(None, H100), batch=4, ctx=4096, gen=257,
              dtype=DType.bf16, kv_dtype=DType.bf16)
    ctx = 4096 + (257 - 1) // 2  # the decode step's mean context
    per_gpu_kv = 94 * 1 * (128 + 128) * 2 * 4 * ctx  # layers × 1 head × (K + V) × 2 B × batch × ctx
    assert per_gpu_kv == 813_170_688
    for tp in (4, 8):
        r = latency(load_spec(QWEN3_235B), tp=tp, **kw)  # type: ignore[arg-type]
        weights = step_weight_bytes(spec, DType.bf16, tokens=4)
        assert r.decode.bytes == -(-(weights + tp * per_gpu_kv) // tp)
    # a plain split of the whole cache over 8 GPUs would leave each half a head
    whole = memory.kv_cache_bytes(spec, batch=4, ctx=ctx, dtype=DType.bf16)
    assert whole == 4 * per_gpu_kv
    assert r.decode.bytes - -(-(weights + whole) // 8) == per_gpu_kv // 2


def test_cli_latency_tp_8_on_4_kv_heads(cli: Any) -> None:
    r = cli("latency", QWEN3_235B, "--gpu", "h100", "--tp", "8", "--ctx", "1k", "--gen", "256",
            "--dtype", "fp8", "--engine", "vllm", "--json")
    assert (r.code, r.stderr) == (0, "")
    out = r.json()
    assert out["inputs"]["tp"] == 8
    # one rank's cache of 1 head, at vLLM's default (auto: the model's bf16 beside FP8 weights):
    # 94 × 256 × 2 B a token, at the mean context 1,024 + 127
    weights = step_weight_bytes(load_spec(QWEN3_235B), DType.fp8, tokens=1)
    assert out["decode_step"]["bytes_per_gpu"] == -(-(weights + 8 * 94 * 256 * 2 * 1_151) // 8)
    assert out["expected"]["decode_tokens_per_s"] < out["tokens_per_s"]


def test_engine_budget_uses_the_same_rule(cli: Any) -> None:
    # vLLM's page per token on one rank: 94 layers × 1 KV head × (128 + 128) × 2 B (bf16 cache)
    for tp in ("4", "8"):
        r = cli("fit", QWEN3_235B, "--gpu", "h200", "--engine", "vllm", "--tp", tp, "--dtype",
                "fp8", "--json")
        assert (r.code, r.json()["kv_bytes_per_token"]) == (0, 94 * 256 * 2)


def test_tp_the_engines_refuse(cli: Any) -> None:
    # dbrx-base: 48 attention heads, 8 KV heads; tp 6 divides the heads, but neither divides
    # the KV heads nor is a multiple of them (vLLM's divide() asserts; SGLang asserts)
    want = ("error: --tp 6: databricks/dbrx-base's 8 KV heads neither split evenly over 6 GPUs "
            "nor replicate evenly on them (vLLM, SGLang and TensorRT-LLM refuse it); use a --tp "
            "that divides them or a multiple of them\n")
    r = cli("latency", "dbrx-base", "--gpu", "h100", "--tp", "6")
    assert (r.code, r.stdout, r.stderr) == (2, "", want)
    r = cli("fit", "dbrx-base", "--gpu", "h100", "--engine", "vllm", "--tp", "6")
    assert (r.code, r.stdout, r.stderr) == (2, "", want)
    ok = cli("latency", "dbrx-base", "--gpu", "h100", "--tp", "16", "--json")  # 2 GPUs a head
    assert (ok.code, ok.json()["inputs"]["tp"]) == (0, 16)


def test_a_latent_cache_is_read_whole_on_every_gpu() -> None:
    """MLA caches one latent a token with no heads to split: every tensor-parallel rank holds and
    reads all of it (vLLM's and SGLang's KV budgets: kv_elements_per_token_rank), so a decode step
    at tp 8 reads the whole cache on each GPU beside an eighth of the weights."""
    spec = load_spec("deepseek-ai/DeepSeek-V3")  # 61 layers, a latent of 512 + 64 rope dims
    ctx = 8192 + (257 - 1) // 2
    latent = 61 * (512 + 64) * 2 * 16 * ctx  # layers × latent × 2 B (bf16) × batch 16 × ctx
    assert latent == 9_354_608_640
    assert memory.kv_cache_bytes(spec, batch=16, ctx=ctx, dtype=DType.bf16) == latent
    r = latency(spec, accelerator=lookup("h200"), interconnect=interconnect(None, lookup("h200")),
                tp=8, batch=16, ctx=8192, gen=257, dtype=DType.fp8, kv_dtype=DType.bf16)
    weights = step_weight_bytes(spec, DType.fp8, tokens=16)
    assert r.decode.bytes == -(-(weights + 8 * latent) // 8)
    assert r.decode_kv_bytes == 8 * latent  # over the 8 GPUs together, as a replicated head's


def test_a_sparse_attention_indexer_key_is_whole_on_every_gpu() -> None:
    """An indexer's key (DeepSeek-V3.2's lightning indexer: one 128-wide key a token and layer) has
    no heads to split either: at tp 8 every GPU holds DeepSeek-V3.2-Exp's latent and index keys
    whole; Qwen3.8-Flash-Next's 12 indexer layers keep their key whole at tp 2 while their 2 KV
    heads split."""
    h200 = lookup("h200")
    kw = dict(accelerator=h200, interconnect=interconnect(None, h200), batch=4, ctx=1000, gen=128,
              dtype=DType.bf16, kv_dtype=DType.bf16)
    ctx = 1000 + 127 // 2
    v32 = load_spec("deepseek-v3.2-exp")  # 61 layers: 576 latent + 128 index key elements
    whole = memory.kv_cache_bytes(v32, batch=4, ctx=ctx, dtype=DType.bf16)
    assert whole == 61 * (576 + 128) * 2 * 4 * ctx == 365_195_776
    assert latency(v32, tp=8, **kw).decode_kv_bytes == 8 * whole  # type: ignore[arg-type]
    flash = load_spec("qwen3.8-flash-next")
    index = 12 * 128 * 2 * 4 * ctx  # its indexer layers' keys
    assert index == 13_062_144
    heads = memory.kv_cache_bytes(flash, batch=4, ctx=ctx, dtype=DType.bf16) - index
    assert latency(flash, tp=2, **kw).decode_kv_bytes == heads + 2 * index  # type: ignore[arg-type]
