"""`fit --engine vllm|sglang|trtllm`: the engines' own settings, under the names each engine gives
them, and the branch of `fit` that plans with them (llmcalc.planning.engines)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Annotated, Optional

import typer

from llmcalc.choices import Engine, EngineName
from llmcalc.errors import UsageError
from llmcalc.formulas.quant import WeightFormat, serving_kv_default
from llmcalc.model.spec import ModelSpec
from llmcalc.planning.engines.budget import EngineBudget
from llmcalc.planning.hardware import Accelerator, parse_bytes
from llmcalc.units import DType, kv_option, named, parse_context

_H = "(with --engine vllm)"
_S = "(with --engine sglang)"
_T = "(with --engine trtllm)"

GpuMemoryUtilizationOpt = Annotated[
    Optional[float],  # noqa: UP045 - typer reads this annotation at run time
    typer.Option("--gpu-memory-utilization", hidden=True, metavar="F", show_default=False,
                 help=f"Share of the GPU vLLM may use (default 0.9) {_H}."),
]
MaxModelLenOpt = Annotated[
    Optional[str],  # noqa: UP045
    typer.Option("--max-model-len", "--context-length", "--max-seq-len", metavar="CTX",
                 show_default=False,
                 help="With --engine: the longest request (4k = 4,096; default: the model's window); the "
                 "engine's own settings: docs/serving-engines.md."),
]
MaxNumSeqsOpt = Annotated[
    Optional[int],  # noqa: UP045
    typer.Option("--max-num-seqs", hidden=True, metavar="N", min=1, show_default=False,
                 help=f"Sequences scheduled at once (default 1024 on an 80 GB card, else 256) {_H}."),
]
MaxNumBatchedTokensOpt = Annotated[
    Optional[int],  # noqa: UP045
    typer.Option("--max-num-batched-tokens", hidden=True, metavar="N", min=1, show_default=False,
                 help=f"Tokens per step; the profiling run's size (default 8192 on an 80 GB "
                 f"card, else 2048) {_H}."),
]
BlockSizeOpt = Annotated[
    Optional[int],  # noqa: UP045
    typer.Option("--block-size", hidden=True, metavar="N", min=1, show_default=False,
                 help=f"Tokens per KV block (default 16) {_H}."),
]
EnforceEagerOpt = Annotated[
    bool, typer.Option("--enforce-eager", hidden=True, help=f"No CUDA graphs {_H}."),
]
EnablePrefixCachingOpt = Annotated[
    bool, typer.Option("--enable-prefix-caching", hidden=True,
                       help=f"Prefix caching (matters for Mamba hybrids' state pages) {_H}."),
]
MambaCacheModeOpt = Annotated[
    Optional[str],  # noqa: UP045
    typer.Option("--mamba-cache-mode", hidden=True, metavar="MODE", show_default=False,
                 help=f"none, align or all: state pages a request holds with prefix caching "
                 f"{_H}."),
]
MambaSsmCacheDtypeOpt = Annotated[
    Optional[str],  # noqa: UP045
    typer.Option("--mamba-ssm-cache-dtype", hidden=True, metavar="DTYPE", show_default=False,
                 help=f"auto, float32, float16 or bfloat16: the Mamba temporal state's dtype "
                 f"{_H}."),
]
MemFractionStaticOpt = Annotated[
    Optional[float],  # noqa: UP045
    typer.Option("--mem-fraction-static", hidden=True, metavar="F", show_default=False,
                 help=f"Share for weights + KV pool (default: SGLang's rule from the card) {_S}."),
]
ChunkedPrefillSizeOpt = Annotated[
    Optional[int],  # noqa: UP045
    typer.Option("--chunked-prefill-size", hidden=True, metavar="N", min=1, show_default=False,
                 help=f"Prefill chunk (default by card: 8192 on 80 GB) {_S}."),
]
MaxRunningRequestsOpt = Annotated[
    Optional[int],  # noqa: UP045
    typer.Option("--max-running-requests", hidden=True, metavar="N", min=1, show_default=False,
                 help=f"Requests running at once {_S}."),
]
PageSizeOpt = Annotated[
    Optional[int],  # noqa: UP045
    typer.Option("--page-size", hidden=True, metavar="N", min=1, show_default=False,
                 help=f"Tokens per page (default 1) {_S}."),
]
KvFractionOpt = Annotated[
    Optional[float],  # noqa: UP045
    typer.Option("--kv-cache-free-gpu-memory-fraction", hidden=True, metavar="F", show_default=False,
                 help=f"Share of the free memory for the KV cache (default 0.9) {_T}."),
]
MaxBatchSizeOpt = Annotated[
    Optional[int],  # noqa: UP045
    typer.Option("--max-batch-size", hidden=True, metavar="N", min=1, show_default=False,
                 help=f"Requests at once (default 2048) {_T}."),
]
MaxNumTokensOpt = Annotated[
    Optional[int],  # noqa: UP045
    typer.Option("--max-num-tokens", hidden=True, metavar="N", min=1, show_default=False,
                 help=f"Tokens per step (default 8192) {_T}."),
]
TokensPerBlockOpt = Annotated[
    Optional[int],  # noqa: UP045
    typer.Option("--tokens-per-block", hidden=True, metavar="N", min=1, show_default=False,
                 help=f"Tokens per KV block (default 32; 64 in builds before 0.17) {_T}."),
]
KvMemoryOpt = Annotated[
    Optional[str],  # noqa: UP045
    typer.Option("--kv-memory", metavar="SIZE", show_default=False,
                 help="With --engine: the KV cache memory per GPU your engine's log gave "
                 "(e.g. 20.5GiB); tokens follow exactly."),
]

VLLM_ONLY = ("--gpu-memory-utilization", "--max-num-seqs", "--max-num-batched-tokens",
             "--block-size", "--enforce-eager", "--enable-prefix-caching", "--mamba-cache-mode",
             "--mamba-ssm-cache-dtype")
SGLANG_ONLY = ("--mem-fraction-static", "--chunked-prefill-size", "--max-running-requests",
               "--page-size")
TRTLLM_ONLY = ("--kv-cache-free-gpu-memory-fraction", "--max-batch-size", "--max-num-tokens",
               "--tokens-per-block")
OWN = {EngineName.vllm: VLLM_ONLY, EngineName.sglang: SGLANG_ONLY,
       EngineName.trtllm: TRTLLM_ONLY}


@dataclass(frozen=True)
class EngineSettings:
    """The engine options as given (None: not given)."""

    gpu_memory_utilization: float | None = None
    max_model_len: str | None = None
    max_num_seqs: int | None = None
    max_num_batched_tokens: int | None = None
    block_size: int | None = None
    enforce_eager: bool = False
    mem_fraction_static: float | None = None
    chunked_prefill_size: int | None = None
    max_running_requests: int | None = None
    page_size: int | None = None
    kv_cache_free_gpu_memory_fraction: float | None = None
    max_batch_size: int | None = None
    max_num_tokens: int | None = None
    tokens_per_block: int | None = None
    kv_memory: str | None = None
    enable_prefix_caching: bool = False
    mamba_cache_mode: str | None = None
    mamba_ssm_cache_dtype: str | None = None

    def given(self) -> dict[str, object]:
        """Each option given, by its flag."""
        flags = {"--gpu-memory-utilization": self.gpu_memory_utilization,
                 "--max-num-seqs": self.max_num_seqs,
                 "--max-num-batched-tokens": self.max_num_batched_tokens,
                 "--block-size": self.block_size,
                 "--enforce-eager": self.enforce_eager or None,
                 "--mem-fraction-static": self.mem_fraction_static,
                 "--chunked-prefill-size": self.chunked_prefill_size,
                 "--max-running-requests": self.max_running_requests,
                 "--page-size": self.page_size,
                 "--kv-cache-free-gpu-memory-fraction": self.kv_cache_free_gpu_memory_fraction,
                 "--max-batch-size": self.max_batch_size, "--max-num-tokens": self.max_num_tokens,
                 "--tokens-per-block": self.tokens_per_block,
                 "--max-model-len": self.max_model_len, "--kv-memory": self.kv_memory,
                 "--enable-prefix-caching": self.enable_prefix_caching or None,
                 "--mamba-cache-mode": self.mamba_cache_mode,
                 "--mamba-ssm-cache-dtype": self.mamba_ssm_cache_dtype}
        return {k: v for k, v in flags.items() if v is not None}


def check_given(engine: Engine | None, s: EngineSettings) -> None:
    """An engine's setting given without that engine is refused, naming the engine it needs."""
    given = s.given()
    for name, flags in OWN.items():
        if engine is not None and engine.name is name:
            continue
        for flag in flags:
            if flag in given:
                raise UsageError(f"{flag}: a setting of --engine {name.value}")
    if engine is None:
        for flag in ("--max-model-len", "--kv-memory"):
            if flag in given:
                raise UsageError(f"{flag}: goes with --engine vllm, sglang or trtllm")


def ssm_dtype(value: str | None) -> str | None:
    """--mamba-ssm-cache-dtype as vLLM names it (vllm/config/cache.py MambaDType)."""
    if value is not None and value not in ("auto", "float32", "float16", "bfloat16"):
        raise UsageError(f"--mamba-ssm-cache-dtype {value}: expected auto, float32, float16 or "
                         "bfloat16")
    return value


def engine_plan(spec: ModelSpec, engine: Engine, s: EngineSettings, *, acc: Accelerator,
                dtype: WeightFormat, kv_dtype: DType, tp: int) -> EngineBudget:
    """The engine's budget (llmcalc.planning.engines.<engine>.plan) with the options given."""
    model_len = (parse_context(s.max_model_len, option="--max-model-len")
                 if s.max_model_len is not None else None)
    kv = parse_bytes(s.kv_memory, option="--kv-memory") if s.kv_memory is not None else None
    if engine.name is EngineName.vllm:
        from llmcalc.planning.engines import vllm

        return vllm.plan(spec, accelerator=acc, dtype=dtype, kv_dtype=kv_dtype, tp=tp,
                         version=engine.version,
                         gpu_memory_utilization=s.gpu_memory_utilization,
                         max_model_len=model_len, max_num_seqs=s.max_num_seqs,
                         max_num_batched_tokens=s.max_num_batched_tokens,
                         block_size=s.block_size, enforce_eager=s.enforce_eager, kv_memory=kv,
                         enable_prefix_caching=s.enable_prefix_caching or None,
                         mamba_cache_mode=s.mamba_cache_mode,
                         mamba_ssm_cache_dtype=ssm_dtype(s.mamba_ssm_cache_dtype))
    if engine.name is EngineName.sglang:
        from llmcalc.planning.engines import sglang

        return sglang.plan(spec, accelerator=acc, dtype=dtype, kv_dtype=kv_dtype, tp=tp,
                           version=engine.version, mem_fraction_static=s.mem_fraction_static,
                           chunked_prefill_size=s.chunked_prefill_size,
                           max_running_requests=s.max_running_requests,
                           page_size=s.page_size, context_length=model_len, kv_memory=kv)
    if engine.name is EngineName.trtllm:
        from llmcalc.planning.engines import trtllm

        return trtllm.plan(spec, accelerator=acc, dtype=dtype, kv_dtype=kv_dtype, tp=tp,
                           version=engine.version,
                           kv_cache_free_gpu_memory_fraction=s.kv_cache_free_gpu_memory_fraction,
                           max_batch_size=s.max_batch_size, max_num_tokens=s.max_num_tokens,
                           tokens_per_block=s.tokens_per_block, max_seq_len=model_len,
                           kv_memory=kv)
    raise UsageError(f"fit --engine {engine}: fit follows llama.cpp, vllm, sglang and trtllm")


def fit_engine(models: list[str] | None, engine_text: str | None, s: EngineSettings, *,
               gpu: str | None, gpus: int, gpu_mem: str | None, dtype: str | None,
               kv_dtype: str | None, tp: int | None, how: object, refused: dict[str, bool],
               set_: list[str] | None, family: str | None, revision: str | None,
               trust_remote_code: bool) -> None:
    """`fit MODEL --engine NAME`: one model, the engine's budget on one GPU; exit 1 with the
    engine's own message where it would refuse to start."""
    from llmcalc.choices import parse_engine
    from llmcalc.cli._common import Format, one_model, print_json, show, specs_for, takes_text
    from llmcalc.formulas.quant import resolve_format
    from llmcalc.planning.engines.budget import check_serving_tp
    from llmcalc.planning.hardware import require, resolve
    from llmcalc.planning.latency import engine_weights
    from llmcalc.render.engine import engine_json, engine_view

    engine = parse_engine(engine_text) if engine_text is not None else None
    check_given(engine, s)
    if engine is None:
        raise UsageError("the engine settings go with --engine vllm, sglang or trtllm")
    for flag, given in refused.items():
        if given:
            why = {"--headroom": "the engine's own reserve replaces it",
                   "--ctx": "use --max-model-len", "--batch": "use the engine's batch setting"}
            raise UsageError(f"{flag} does not go with --engine"
                             + (f": {why[flag]}" if flag in why else ""))
    if not models:
        raise UsageError("--engine needs a MODEL")
    one_model(models, "--engine")
    [(_, spec)] = [(m, takes_text(sp, "fit")) for m, sp in
                   specs_for(models, set_, family, revision, trust_remote_code)]
    acc = resolve(gpu, memory=gpu_mem, bandwidth=None, needs=("memory",))
    require(acc, "memory_bytes")
    weights = resolve_format(spec, dtype)
    # weights the engine does not run as stored (or not on this card): latency --engine's rule
    engine_weights(weights, engine.name.value, acc, given=named(dtype))
    kv = kv_option(kv_dtype) or serving_kv_default(engine.name.value, weights, spec.config,
                                                    given=named(dtype))
    n_tp = tp if tp is not None else gpus
    check_serving_tp(spec, n_tp)  # the tp the engines refuse (one rule with latency's)
    budget = engine_plan(spec, engine, s, acc=acc, dtype=weights, kv_dtype=kv, tp=n_tp)
    if how is Format.json:
        print_json(engine_json(spec, budget, accelerator=acc))
    elif how is Format.table:
        show(engine_view(spec, budget, accelerator=acc))
    else:
        raise UsageError(f"--format {getattr(how, 'value', how)}: an engine's budget prints as "
                         "a table or JSON")
    if budget.refusal is not None:
        if how is Format.json:
            from llmcalc.render import console

            console(stderr=True).print(budget.refusal, markup=False)
        raise typer.Exit(1)
