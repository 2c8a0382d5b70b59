"""What the serving engines (vLLM, SGLang, TensorRT-LLM) share: the KV budget one of them lays out
on one GPU, term by term, and the model facts each engine's rules read (KV bytes per token on one
tensor-parallel rank, the profiling run's activation peak).

Each engine module (vllm.py, sglang.py, trtllm.py) turns its own settings into an
:class:`EngineBudget`; the terms are bytes per GPU, named with slash keys, and the budget's
``kv_cache_bytes`` is the card's usable share less them (``budget_adds_up`` checks it)."""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from fractions import Fraction

from llmcalc.errors import ParameterError, UsageError
from llmcalc.formulas.memory import weight_bytes
from llmcalc.formulas.quant import WeightFormat
from llmcalc.model.spec import LayerGroup, ModelSpec
from llmcalc.planning.hardware import Accelerator, GiB
from llmcalc.units import DType, nbytes

# An H100 80GB reports 79.19 GiB to CUDA (hardware.json's h100 row: vLLM 0.19.0's H100 sweep in
# github.com/llm-d-incubation/llm-d-planner): the share a card without a logged figure keeps (the
# driver and ECC reserve scale with the memory).
CUDA_SHARE = Fraction("79.19") / 80

ACTIVATION_BYTES = 2  # bf16/fp16 activations in every engine's forward
ENGINE_NAMES = {"vllm": "vLLM", "sglang": "SGLang", "trtllm": "TensorRT-LLM"}  # as each spells it


@dataclass(frozen=True)
class EngineBudget:
    """One GPU's budget as the engine lays it out.

    ``usable`` is what the engine lets itself hold (vLLM: total × gpu_memory_utilization); the
    ``terms`` (slash keys → bytes) are what it takes out before the KV cache; ``kv_cache_bytes``
    is the rest (or the figure the user's log gave with ``--kv-memory``); ``kv_cache_tokens`` the
    token capacity the engine logs (whole blocks/pages); ``max_concurrency`` the requests of
    ``max_model_len`` tokens that fit at once. ``refusal``: the engine's own message where it would
    refuse to start (None: it starts)."""

    engine: str  # "vllm", "sglang", "trtllm"
    version: str  # the version whose rules apply
    cuda_memory_bytes: int  # the card as CUDA reports it
    usable_bytes: int
    terms: dict[str, int]
    kv_cache_bytes: int
    bytes_per_token: int  # KV bytes one token takes on one GPU, all layers
    block_tokens: int  # tokens per block/page
    kv_cache_tokens: int
    max_model_len: int
    max_concurrency: float
    settings: dict[str, object] = field(default_factory=dict)  # the engine's own names
    command: str = ""
    refusal: str | None = None
    from_log: bool = False  # kv_cache_bytes came from --kv-memory
    # how kv_cache_tokens is counted where not whole blocks (vLLM's hybrids: concurrency × length)
    tokens_rule: str = ""


def version_tuple(version: str | None, default: str) -> tuple[int, ...]:
    """``--engine NAME==0.10.2`` → (0, 10, 2); no version → the engine's followed ``default``
    (llmcalc.choices.parse_engine has checked the text is digits and dots)."""
    return tuple(int(p) for p in (version or default).split("."))


def budget_adds_up(b: EngineBudget) -> bool:
    """usable − Σ terms = the KV cache (where the budget was computed, not given)."""
    return b.from_log or b.usable_bytes - sum(b.terms.values()) == b.kv_cache_bytes


def cuda_memory(acc: Accelerator) -> int:
    """The card's memory as CUDA reports it (torch.cuda.mem_get_info's total): the row's
    ``cuda_gib`` in hardware.json where a log gives it, else the datasheet size less the reserve the
    H100 row's log shows (CUDA_SHARE)."""
    if acc.cuda_bytes:
        return acc.cuda_bytes
    return int(acc.memory_bytes * CUDA_SHARE)


# What the serving engines do with a layer's h attention heads and kv KV heads over tp GPUs:
# - vLLM, QKVParallelLinear.__init__ (vllm/model_executor/layers/linear.py): num_heads =
#   divide(total_num_heads, tp_size); "if tp_size >= self.total_num_kv_heads": num_kv_heads = 1 and
#   num_kv_head_replicas = divide(tp_size, total_num_kv_heads), else num_kv_heads =
#   divide(total_num_kv_heads, tp_size) (``divide`` asserts the remainder is 0);
#   ModelConfig.get_num_kv_heads: max(1, total_num_kv_heads // tensor_parallel_size);
# - SGLang, each model's attention (python/sglang/srt/models/llama.py, qwen3_moe.py, …): "assert
#   self.total_num_heads % tp_size == 0", then "assert self.total_num_kv_heads % tp_size == 0" where
#   the KV heads are at least tp ("we partition"), else "assert tp_size % self.total_num_kv_heads
#   == 0" ("we replicate"), and num_kv_heads = max(1, total_num_kv_heads // tp_size);
# - TensorRT-LLM, Attention.__init__ (tensorrt_llm/layers/attention.py): "assert
#   num_attention_heads % tp_size == 0", num_attention_kv_heads = (num_kv_heads + tp_size - 1) //
#   tp_size: one head a rank where tp exceeds them, kv/tp where tp divides them.
# So a rank holds max(1, kv // tp) KV heads, and tp must divide h and divide kv or be a multiple of it.
def kv_heads_per_rank(kv_heads: int, tp: int) -> int:
    """KV heads one tensor-parallel rank holds: kv/tp, replicated (one each) where tp exceeds them
    (vLLM ``ModelConfig.get_num_kv_heads``: max(1, total // tp); SGLang and TensorRT-LLM alike)."""
    return max(1, kv_heads // tp)


def check_serving_tp(spec: ModelSpec, tp: int) -> None:
    """Refuse a ``tp`` the serving engines refuse (above): one that does not divide every layer
    kind's attention heads, or whose KV heads it neither divides nor is a multiple of. A latent
    cache (MLA) has no KV heads to split."""
    if tp == 1:
        return
    kinds = [g.attention for g in spec.layer_groups if g.attention is not None]
    heads = sorted({a.heads for a in kinds})
    kv = sorted({a.kv_heads for a in kinds if not a.kv_latent_dim})
    if any(h % tp for h in heads):
        shown = "/".join(map(str, heads)) + " attention heads" + (
            f" and {'/'.join(map(str, kv))} KV heads" if kv else "")
        raise ParameterError("{tp} {value}: {name}'s {shown} do not split evenly over {value} "
                             "GPUs; use a {tp} that divides them", value=tp, name=spec.name,
                             shown=shown)
    if any(k % tp and tp % k for k in kv):
        raise ParameterError("{tp} {value}: {name}'s {kv} KV heads neither split evenly over "
                             "{value} GPUs nor replicate evenly on them (vLLM, SGLang and "
                             "TensorRT-LLM refuse it); use a {tp} that divides them or a multiple "
                             "of them", value=tp, name=spec.name, kv="/".join(map(str, kv)))


def replicated_kv(spec: ModelSpec, tp: int) -> ModelSpec:
    """``spec`` with each layer's KV heads as the tp ranks hold them together: kv_heads_per_rank ×
    tp, a replicated head counted once on each rank that holds it (kv itself where tp divides kv),
    so that its KV cache over tp is one rank's cache. A latent cache (MLA) and a sparse-attention
    indexer's key (one head) have no heads to split: every rank holds, writes and reads them whole
    (SGLang's model_runner_kv_cache_mixin.py ``get_cell_size_per_token``: kv_lora_rank +
    qk_rope_head_dim and the indexer's key per layer on each rank, not divided by tp; here
    ``kv_elements_per_token_rank``, ``sglang.indexer_bytes``), so they count tp times."""
    def held(g: LayerGroup) -> LayerGroup:
        a = g.attention
        if a is None:
            return g
        whole = replace(a, index_key_dim=a.index_key_dim * tp)
        if a.kv_latent_dim is not None:
            return replace(g, attention=replace(whole, kv_latent_dim=a.kv_latent_dim * tp))
        heads = kv_heads_per_rank(a.kv_heads, tp) * tp if a.kv_heads < tp else a.kv_heads
        return replace(g, attention=replace(whole, kv_heads=heads))

    if tp == 1:
        return spec
    return replace(spec, layer_groups=tuple(held(g) for g in spec.layer_groups))


def not_modelled(spec: ModelSpec, engine: str) -> None:
    """Refuse a model whose cache the engine lays out in a way llmcalc does not follow yet:
    recurrent (SSM / linear-attention) state beside attention, or no attention cache at all."""
    if any(g.mixer is not None for g in spec.layer_groups):
        raise UsageError(f"--engine {engine}: {spec.name} keeps recurrent state beside its KV "
                         "cache; llmcalc does not follow that engine's hybrid allocator yet")
    if kv_elements_per_token_rank(spec, tp=1) == 0:
        raise UsageError(f"--engine {engine}: {spec.name} keeps no KV cache")


def deepseek_sparse(spec: ModelSpec) -> bool:
    """Whether a layer has DeepSeek sparse attention (DeepSeek-V3.2): an MLA latent with an
    indexer (topk and index_key_dim)."""
    return any(g.attention is not None and g.attention.kv_latent_dim and g.attention.topk
               and g.attention.index_key_dim for g in spec.layer_groups)


def refuse_unfollowed_sparse(spec: ModelSpec, engine: str) -> None:
    """Refuse the sparse attention llmcalc does not follow in the engines: an indexer beside plain
    K/V heads (no MLA latent: Qwen3.8-Flash-Next's QSA layers), or DeepSeek's latent-and-indexer
    layers beside layers of another kind (sliding-window latents, layers reading another layer's
    indexer: dots3, Hy4). The engines' indexer caches followed here are DeepSeek-V3.2's, every
    layer a full-attention latent with its own indexer (``vllm.sparse_mla_bytes``,
    ``sglang.indexer_bytes``); anything else would be counted short or in the wrong pages."""
    cached = [g.attention for g in spec.layer_groups
              if g.attention is not None and not g.attention.kv_shared and g.attention.causal
              and g.cached_runs]
    if any(a.topk and a.index_key_dim and a.kv_latent_dim is None for a in cached):
        raise UsageError(f"--engine {engine}: {spec.name} caches a sparse-attention indexer's keys "
                         "beside plain K/V heads, a layout llmcalc does not follow in that engine")
    sparse = [a for a in cached if a.topk and a.index_key_dim and a.kv_latent_dim]
    if sparse and (len(sparse) < len(cached) or any(a.window for a in sparse)):
        raise UsageError(f"--engine {engine}: {spec.name} mixes DeepSeek sparse-attention layers "
                         "(an MLA latent with its own indexer) with layers of another kind, a "
                         "layout llmcalc does not follow in that engine")


def kv_layers(spec: ModelSpec) -> int:
    """Layers that hold a KV cache (each engine allocates every attention layer's pages)."""
    return sum(g.cached_runs for g in spec.layer_groups if g.attention is not None)


def kv_elements_per_token_rank(spec: ModelSpec, *, tp: int) -> int:
    """Cached elements one token adds on one rank, over all layers: K and V of the rank's kv heads
    (kv_heads_per_rank × (d_qk + d_v)), or MLA's latent (kv_lora_rank + rope dim: every rank
    holds all of it)."""
    total = 0
    for g in spec.layer_groups:
        a = g.attention
        if a is None or a.kv_shared or not a.causal:
            continue
        if a.kv_latent_dim is not None:
            per_layer = a.kv_latent_dim
        else:
            per_layer = kv_heads_per_rank(a.kv_heads, tp) * (a.qk_head_dim + a.v_head_dim)
        total += g.cached_runs * per_layer
    return total


def kv_bytes_per_token_rank(spec: ModelSpec, *, tp: int, kv_dtype: DType) -> int:
    return nbytes(kv_elements_per_token_rank(spec, tp=tp), kv_dtype)


def weights_per_gpu(spec: ModelSpec, *, dtype: WeightFormat, tp: int) -> int:
    """The weights one rank loads: the model's bytes split evenly over tp (the engines shard every
    projection and the vocabulary; the norms they replicate are a rounding error beside them)."""
    return -(-weight_bytes(spec, dtype=dtype) // tp)


def _config_int(spec: ModelSpec, *names: str) -> int:
    for name in names:
        value = spec.config.get(name)
        if isinstance(value, int) and value > 0:
            return value
    text = spec.config.get("text_config")
    if isinstance(text, dict):
        for name in names:
            value = text.get(name)
            if isinstance(value, int) and value > 0:
                return value
    return 0


def mlp_width_per_token(spec: ModelSpec) -> int:
    """The MLP's intermediate width one token passes through: a dense model's intermediate_size;
    a mixture-of-experts model's top-k experts × moe_intermediate_size (+ the shared experts')."""
    moe = spec.moe
    if moe is None or not moe.experts_per_tok:
        return spec.shape.intermediate_size
    expert = _config_int(spec, "moe_intermediate_size", "expert_intermediate_size")
    if not expert:
        expert = spec.shape.intermediate_size
    shared = _config_int(spec, "shared_expert_intermediate_size") or expert * moe.shared_experts
    return max(spec.shape.intermediate_size if moe.dense_run else 0,
               moe.experts_per_tok * expert + shared)


def forward_peak(spec: ModelSpec, *, tokens: int, tp: int) -> int:
    """The activation peak of one forward over ``tokens`` tokens on one rank: in one layer's MLP,
    the gate/up output (tokens × 2·I/tp), the activation's output (tokens × I/tp) and three
    hidden-state buffers (residual, normed input, output: tokens × 3·d), at 2 bytes.
    Checked against vLLM 0.6's own profile (vllm#10517: Llama-3.1-8B at 20,000 and 29,000
    tokens peaked 2.07 and 2.99 GiB above the weights; this gives 2.06 and 2.99)."""
    width = mlp_width_per_token(spec)
    per_token = 3 * -(-width // tp) + 3 * spec.shape.hidden_size
    return tokens * per_token * ACTIVATION_BYTES


def sampler_peak(spec: ModelSpec, *, seqs: int) -> int:
    """The sampler's peak for ``seqs`` sequences: the float32 logits over the whole vocabulary
    and the probabilities the sampler derives from them (two [seqs, vocab] fp32 tensors)."""
    return 2 * seqs * spec.shape.vocab_size * 4


def gib(n: int | float) -> float:
    return float(n) / GiB


def fraction(value: float, option: str) -> Fraction:
    """A memory fraction option (0 < f ≤ 1) as an exact fraction of its decimal text."""
    if not 0 < value <= 1:
        raise UsageError(f"{option} {value}: must be above 0 and at most 1")
    return Fraction(str(value))
