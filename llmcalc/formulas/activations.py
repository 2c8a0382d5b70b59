"""What a training step and a prefill really hold in PyTorch: activations by layer kind, logits and
loss, gradients, optimizer temporaries — the peak of transformers' eager modules on PyTorch's
allocator.

Pure functions; nothing here prints. Every term below was derived from the tensors autograd saves
(``torch.autograd.graph.saved_tensors_hooks`` over transformers 5 modules on torch 2.13) and is
checked against the allocator by tests/memory_harness.py (MemTracker, the profiler; on a GPU
``torch.cuda.max_memory_allocated``); docs/memory-model.md lists the measured ratios. The shapes,
per token of one layer: h hidden, a heads, g KV heads, d head dim, f MLP width, k routed experts
of E, s keys per query, c bytes of an activation (4 fp32, 2 under bf16 or bf16 autocast), r bytes
of the residual stream (4 unless the weights themselves are 16-bit).

Modelled: decoder layers of full attention (multi-head, GQA) with RMSNorm or LayerNorm, a dense
MLP (gated or not) or routed experts (MoE); dropout where :data:`DROPOUT_SITES` places a type's
dropouts. Other layer kinds (SSM mixers, MLA, linear attention, cross-attention, encoders) and
other dropouts are refused by :func:`unsupported` with the reason.
"""

from __future__ import annotations

from dataclasses import dataclass

from llmcalc.choices import Kernel as Kernel
from llmcalc.choices import Loss as Loss
from llmcalc.choices import Method as Method
from llmcalc.choices import Optimizer as Optimizer
from llmcalc.choices import OptimizerImpl as OptimizerImpl
from llmcalc.errors import ParameterError
from llmcalc.inputs.family_defaults import defaults
from llmcalc.model.spec import LayerGroup, ModelSpec


@dataclass(frozen=True)
class Precision:
    """Weights at ``weight_bytes`` (4 fp32, 2 bf16/fp16); ``amp``: bf16 autocast over fp32 weights."""

    weight_bytes: int = 4
    amp: bool = False
    cuda: bool = True  # the device: where dropout keeps a 1-byte mask (mask_bytes)

    @property
    def act(self) -> int:
        """c: matmul outputs are 16-bit under autocast, else the weights' dtype."""
        return 2 if self.amp else self.weight_bytes

    @property
    def residual(self) -> int:
        """r: the residual stream stays at the weights' dtype (fp32 under autocast)."""
        return self.weight_bytes

    def mask_bytes(self, dropped: int) -> int:
        """Bytes dropout keeps per element of a tensor of ``dropped`` bytes per element: on a GPU
        the bool mask of torch's fused kernel (``native_dropout``, which at::dropout runs on CUDA:
        ATen/native/Dropout.cpp is_fused_kernel_acceptable; its backward reads only that mask,
        derivatives.yaml), 1 B; on the CPU the scaled noise ``_dropout_impl`` multiplies by,
        ``empty_like(input).bernoulli_(1 − p).div_(1 − p)``, which the multiply keeps at the
        input's dtype."""
        return 1 if self.cuda else dropped


# Bytes per element of what one matmul reads under autocast: each linear casts its (fp32) input to
# bf16 itself, so a norm read by n linears keeps n bf16 copies (torch.autocast caches only casts
# of leaf tensors: the weights).
AMP_CAST_BYTES = 2

# A non-gated MLP activation's saved ffn-wide tensors per token, fc's output included. Fused
# kernels save their input only; transformers' NewGELUActivation (gelu_new, GPT-2) is
# 0.5·x·(1 + tanh(√(2/π)·(x + 0.044715·x³))) in separate ops: x, x³, the tanh, 1 + tanh.
ACTIVATION_KEEPS: dict[str, int] = {
    "gelu": 1, "relu": 1, "silu": 1, "swish": 1, "gelu_pytorch_tanh": 1, "gelu_new": 4,
}
# Activations whose backward reads their output (relu: threshold_backward of the result), the very
# tensor fc_out keeps as its input: one ffn-wide tensor whether or not fc_out trains (OPT).
ACTIVATION_KEEPS_OUTPUT = frozenset({"relu"})

# A routed token's small tensors (MixtralSparseMoeBlock): the top-k index (int64), its position in
# the grouped batch (int64, twice) and its routing weight (fp32).
MOE_INDEX_BYTES = 8 + 8 + 8 + 4

# SDPA saves its output (o_proj reads it as a view) and the log-sum-exp of each query and head.
LSE_BYTES = 4
NORM_STAT_BYTES = {True: 4, False: 8}  # per token: RMSNorm's rsqrt; LayerNorm's mean and rstd
# LayerNorm's mean and rstd are fp32 on a GPU (layer_norm_cuda: toAccumulateType(input, is_cuda))
# but on the CPU at the input's dtype when input and weight share it (layer_norm_cpu:
# param_scalar_type(input, mixed_type)): 2 + 2 B per token with 16-bit weights there.
SOFTMAX_BYTES = 4  # eager attention: softmax(dtype=float32) keeps fp32 probabilities
# Types whose eager attention runs the softmax in the scores' dtype (no dtype=torch.float32):
# GPT-2 (modeling_gpt2.eager_attention_forward: softmax(attn_weights) then .type(value.dtype)),
# so its probabilities are kept at the weights' width (fp32 under autocast, softmax being on
# autocast's fp32 list) and the cast to V's dtype is a no-op outside autocast.
# The same softmax(attn_weights, dim=-1) without dtype in modeling_biogpt.eager_attention_forward
# and modeling_gpt_neox_japanese.GPTNeoXJapaneseAttention._attn; gpt-sw3 is GPT2LMHeadModel.
SOFTMAX_IN_SCORES_DTYPE = frozenset({"gpt2", "gpt-sw3", "biogpt", "gpt_neox_japanese"})
# Types whose RMSNorm multiplies by its weight in fp32 and casts after (GemmaRMSNorm:
# (x·rsqrt · (1 + w.float())).type_as(x); HeliumRMSNorm: (w.to(fp32) · x·rsqrt).to(input_dtype)),
# so the weight's multiply keeps the normalized tensor at 4 B, not the residual's width.
NORM_WEIGHT_IN_FP32 = frozenset({"gemma", "helium"})
# Types whose decoder layers hold tensors the layer kinds do not describe (each measured against
# autograd's saved tensors on the CPU, eager attention at fp32 and bf16 and sdpa at bf16, and found
# to differ every time): the training plan refuses them rather than give a wrong figure.
NOT_MEASURED: dict[str, str] = {
    **dict.fromkeys(("qwen3", "qwen3_moe", "olmoe", "mellum", "minimax_m2", "hunyuan_v1_dense",
                     "lfm2"), "its attention normalizes q and k per head (q_norm, k_norm)"),
    **dict.fromkeys(("olmo2", "flex_olmo"), "its attention normalizes q and k (q_norm, k_norm) and "
                    "its layers norm each block's output (post-norms)"),
    **dict.fromkeys(("glm4", "hyperclovax"), "its layers norm each block's output (post-norms)"),
    **dict.fromkeys(("gptj", "codegen"), "attention and the MLP read one norm in parallel, and "
                    "the eager scores are computed from fp32 copies of q and k"),
    **dict.fromkeys(("phi", "cohere", "gpt_neox"), "attention and the MLP run in parallel "
                    "(one shared norm or norm input)"),
    "bitnet": "its attention and MLP each norm their inner activations (attn_sub_norm, "
              "ffn_sub_norm)",
    "diffllama": "its differential attention runs two softmaxes and a group norm per head",
    "doge": "its attention adds a dynamic mask (dt_proj) and its MLP routes experts per token",
    "jetmoe": "its attention is a mixture of expert heads (MoA)",
    "olmo": "its LayerNorm has no weights (no normalized tensor kept for them)",
    "xglm": "its eager attention clamps the masked scores (torch.max) and runs the softmax in "
            "fp32 only for fp16",
}


# Where a type's dropouts act, by config key (the others a config may hold are refused when
# nonzero): GPT-2 (transformers models/gpt2/modeling_gpt2.py) drops the attention probabilities
# (attn_pdrop: eager_attention_forward, after the softmax's cast to V's dtype), both residual
# branches of a block after their c_proj (resid_pdrop: GPT2Attention.resid_dropout,
# GPT2MLP.dropout) and the sum of token and position embeddings (embd_pdrop: GPT2Model.drop);
# Llama (models/llama/modeling_llama.py) only the attention probabilities (attention_dropout).
DROPOUT_SITES: dict[str, dict[str, str]] = {
    "gpt2": {"attn_pdrop": "attention", "resid_pdrop": "residual", "embd_pdrop": "embedding"},
    "llama": {"attention_dropout": "attention"},
}
DROPOUT_KEYS = ("attention_dropout", "attn_pdrop", "resid_pdrop", "embd_pdrop", "hidden_dropout",
                "dropout")
RESIDUAL_DROPOUTS = 2  # per block: after attention's output projection and after the MLP's


@dataclass(frozen=True)
class LayerKind:
    """What one layer group is built from, as far as its saved tensors go."""

    hidden: int
    heads: int
    kv_heads: int
    qk_dim: int
    v_dim: int
    rms_norm: bool  # RMSNorm (fp32 upcast) or LayerNorm
    attn_readers: int  # linears reading the attention norm's output (q, k, v: 3; fused qkv: 1)
    ffn: int  # MLP width (of one expert for MoE)
    gated: bool  # SwiGLU/GeGLU: act(gate) · up
    act_keeps: int  # ACTIVATION_KEEPS of a non-gated MLP
    experts: int = 0  # routed experts (0: dense)
    top_k: int = 0
    attn_dropout: bool = False  # the attention probabilities dropped (DROPOUT_SITES)
    rotary: bool = False  # rotary positions: q·cos in the residual's dtype (fp32 under autocast)
    resid_dropout: bool = False  # both residual branches dropped
    softmax_fp32: bool = True  # eager softmax upcast to fp32 (SOFTMAX_IN_SCORES_DTYPE: not)
    norm_weight_fp32: bool = False  # RMSNorm's weight multiply in fp32 (NORM_WEIGHT_IN_FP32)
    act_keeps_output: bool = False  # the activation's output is what it keeps (relu)


def _config_value(spec: ModelSpec, *keys: str) -> object:
    base: dict[str, object] | None = None  # the class defaults, read only when needed
    for key in keys:
        if key in spec.config:
            return spec.config[key]
        if base is None:
            base = defaults(spec.model_type) or {}
        if key in base:
            return base[key]
    return None


def dropouts(spec: ModelSpec) -> dict[str, float]:
    """The nonzero dropout probabilities of ``spec``'s config (and its class defaults), by key."""
    values = {k: _config_value(spec, k) for k in DROPOUT_KEYS}
    return {k: float(v) for k, v in values.items()
            if isinstance(v, int | float) and not isinstance(v, bool) and v > 0}


def _dropped(spec: ModelSpec, site: str) -> bool:
    """Whether ``spec`` drops at ``site`` (attention, residual, embedding: DROPOUT_SITES)."""
    sites = DROPOUT_SITES.get(spec.model_type, {})
    return any(sites.get(k) == site for k in dropouts(spec))


def unsupported(spec: ModelSpec) -> str | None:
    """Why the layer-kind model cannot describe ``spec``, or None when it can."""
    if spec.parts:
        return "a model with vision/audio towers or an encoder"
    if spec.prefix_tokens:  # CPM-Ant: its own prompt tokens through the layers
        return f"its {spec.prefix_tokens} prompt tokens run through the layers of every sequence"
    for g in spec.layer_groups:
        a = g.attention
        if g.mixer is not None or a is None:
            return f"{g.name} layers are not attention layers (SSM / linear mixers)"
        if a.kv_latent_dim or a.compress or a.topk or a.window or not a.causal:
            return f"{g.name} layers use latent, sparse, windowed or bidirectional attention"
        if g.cross_attention is not None:
            return f"{g.name} layers use cross-attention"
        if g.repeats != 1:
            return f"{g.name} layers are looped"
        if any(t.component.startswith("moe/shared") for t in g.tensors):
            return f"{g.name} layers have shared experts"
    act = _config_value(spec, "hidden_act", "activation_function")
    if not all(_layer_kind(spec, g).gated for g in spec.layer_groups) and act not in ACTIVATION_KEEPS:
        return f"the MLP activation {act!r} is not measured"
    return None


def _layer_kind(spec: ModelSpec, g: LayerGroup) -> LayerKind:
    a = g.attention
    assert a is not None  # unsupported() refuses the rest
    comps = {t.component for t in g.tensors}
    rms = not any(t.component.endswith("norm") and t.name.endswith(".bias") for t in g.tensors)
    readers = sum(1 for c in comps if c.split("/")[-1] in ("q_proj", "k_proj", "v_proj", "qkv"))
    gated = any(c.split("/")[-1] in ("gate_proj", "gate_up_proj") for c in comps)
    experts = spec.moe.num_experts if spec.moe and any(c.startswith("moe/") for c in comps) else 0
    top_k = (g.experts_per_tok or spec.experts_per_tok()) if experts else 0
    ffn = spec.shape.intermediate_size
    if experts:
        down = [t for t in g.tensors if t.component.endswith("experts/down_proj")]
        ffn = down[0].shape[-1] if down else ffn
    act = _config_value(spec, "hidden_act", "activation_function")
    return LayerKind(
        hidden=spec.shape.hidden_size, heads=a.heads, kv_heads=a.kv_heads, qk_dim=a.qk_head_dim,
        v_dim=a.v_head_dim, rms_norm=rms, attn_readers=max(readers, 1), ffn=ffn, gated=gated,
        act_keeps=ACTIVATION_KEEPS.get(str(act), 1), experts=experts, top_k=top_k,
        attn_dropout=_dropped(spec, "attention"), resid_dropout=_dropped(spec, "residual"),
        rotary=_rotary(spec), softmax_fp32=spec.model_type not in SOFTMAX_IN_SCORES_DTYPE,
        norm_weight_fp32=spec.model_type in NORM_WEIGHT_IN_FP32,
        act_keeps_output=str(act) in ACTIVATION_KEEPS_OUTPUT,
    )


def _rotary(spec: ModelSpec) -> bool:
    """Rotary positions: no learned position table (GPT-2's wpe)."""
    return not any(t.component == "embed/positions" for t in spec.tensors)


def serving_kernel(spec: ModelSpec) -> Kernel | None:
    """The kernel ``fit`` counts a prefill for by default: sdpa where the layer kinds are
    modelled, else none (weights + cache only)."""
    return Kernel.sdpa if unsupported(spec) is None else None


def require_supported(spec: ModelSpec, *, training: bool = True) -> None:
    """Refuse, in one line, a model the layer-kind model does not describe (dropout only matters
    when ``training``)."""
    why = unsupported(spec)
    if why is not None:
        raise ParameterError("{attention}: {name}: {why}; only the default estimate applies",
                             name=spec.name, why=why)
    if training and spec.model_type in NOT_MEASURED:
        raise ParameterError("{attention}: {name}: {why}; the layer-kind training plan does not "
                             "describe it, only the default estimate applies", name=spec.name,
                             why=NOT_MEASURED[spec.model_type])
    sites = DROPOUT_SITES.get(spec.model_type, {})
    other = {k: p for k, p in dropouts(spec).items() if k not in sites}
    if training and other:
        key, p = next(iter(other.items()))
        raise ParameterError("{attention}: {name}: dropout {p:g} ({key}) in the config is not "
                             "modelled; set it to 0 (--set) or use the default estimate",
                             name=spec.name, p=p, key=key)


# ---- training: what one layer keeps for its backward pass ---------------------------------------


def norm_bytes(k: LayerKind, p: Precision, *, readers: int, trained: bool, read: bool) -> int:
    """One norm, per token: its input, its normalized tensor and its output as the linears keep it.

    RMSNorm (LlamaRMSNorm) upcasts: x.to(fp32) is kept by pow (4 B, the residual itself when it is
    fp32), x · rsqrt (r B; 4 B where the multiply is in fp32: NORM_WEIGHT_IN_FP32) by the weight's
    multiply when the weight trains; LayerNorm keeps its
    input (r B). The output is kept by the linears that read it when they train (``read``): once
    (c B), or, under autocast, one bf16 cast per linear.
    """
    h = k.hidden
    stats = NORM_STAT_BYTES[k.rms_norm]
    if not k.rms_norm and not p.cuda and not p.amp:  # CPU: mean and rstd at the input's dtype
        stats = 2 * p.weight_bytes
    kept = (4 if k.rms_norm else p.residual) * h + stats
    if k.rms_norm and trained:
        kept += (4 if k.norm_weight_fp32 else p.residual) * h
    if read:
        kept += (AMP_CAST_BYTES * readers if p.amp else p.act) * h
    return kept


def attention_bytes(k: LayerKind, p: Precision, *, kernel: Kernel, keys: int) -> int:
    """The attention block's saved tensors per token; ``keys``: keys per query (the sequence).

    sdpa / flash: q (a·d), k and v (g·d each, GQA unexpanded), the output (a·d) and its log-sum-
    exp (a · 4 B).
    eager: q and k, v repeated to all a heads (repeat_kv), fp32 probabilities a·s (and their
    16-bit cast when c = 2; GPT-2's at the weights' width: SOFTMAX_IN_SCORES_DTYPE), the output as o_proj reads it. Dropped probabilities
    (``attn_dropout``): the softmax keeps its fp32 output, dropout its mask (Precision.mask_bytes)
    of the probabilities cast to V's dtype (GPT-2: c B) or the query's (a rotary model's query is
    q·cos, in the residual stream's dtype: r B), and the ·V matmul the dropped probabilities as it
    reads them (c B) instead of the cast.
    """
    c = p.act
    q, o = k.heads * k.qk_dim, k.heads * k.v_dim
    kv = k.kv_heads * (k.qk_dim + k.v_dim)
    # a fused qkv projection (GPT-2's c_attn): q, k and v are views of one output, which SDPA
    # keeps whole beside contiguous copies of the k and v views (k + v wide again); eager's
    # matmuls copy all three (at batch 1 they keep views of the whole output: + k + v there)
    fused = kv * c if k.attn_readers == 1 else 0
    if kernel is Kernel.eager:
        soft = SOFTMAX_BYTES if k.softmax_fp32 or p.amp else p.weight_bytes
        dropped = p.residual if k.rotary else c
        kept = c + p.mask_bytes(dropped) if k.attn_dropout else c if c < soft else 0
        scores = k.heads * keys * (soft + kept)
        return (2 * q + 2 * o) * c + scores
    return (q + kv + o) * c + k.heads * LSE_BYTES + fused


def mlp_bytes(k: LayerKind, p: Precision, *, trained: bool) -> int:
    """The MLP's saved tensors per token.

    Gated (LlamaMLP): gate, act(gate), up and the product down_proj reads — 4·f (3·f when the
    weights are frozen: down_proj then keeps nothing). Not gated: what the activation keeps of
    fc's output (ACTIVATION_KEEPS) and, when fc_out trains, the activation's output.
    MoE (MixtralSparseMoeBlock, grouped): router logits (E, fp32) and, per routed token, its
    gathered input (h), the gated MLP (4·f) and the expert output weighted by the router (h), at
    the weights' dtype (the grouped experts run outside autocast); frozen (LoRA), the gate_up
    output (2·f), act(gate) and the expert output only.
    """
    c, f = p.act, k.ffn
    if k.experts:  # frozen experts keep neither their gathered input nor the product
        # the grouped experts escape autocast: they run in the weights' dtype; the router's logits
        # are kept in fp32 for the softmax (and in bf16 under autocast)
        routed = ((2 * k.hidden + 4 * f) if trained else (k.hidden + 3 * f)) * p.weight_bytes
        router = k.experts * (4 + (AMP_CAST_BYTES if p.amp else 0))
        return router + k.top_k * (routed + MOE_INDEX_BYTES)
    if k.gated:
        return (4 if trained else 3) * f * c
    if k.act_keeps_output:  # fc_out's input is the tensor the activation keeps
        return k.act_keeps * f * c
    return (k.act_keeps + (1 if trained else 0)) * f * c


def layer_bytes_per_token(
    k: LayerKind, p: Precision, *, kernel: Kernel, keys: int, trained: bool = True,
    adapters: int = 0, lora_r: int = 0,
) -> int:
    """All of one layer's saved tensors per token: two norms, attention, MLP; with LoRA
    (``trained`` False) the frozen base keeps less and each of ``adapters`` adapters keeps its
    r-wide A output (c B each). Dropped residual branches (``resid_dropout``) keep a mask of each
    output projection's h-wide c-byte output."""
    attn_norm = norm_bytes(k, p, readers=k.attn_readers, trained=trained, read=True)
    mlp_readers = 1 if k.experts or not k.gated else 2
    mlp_norm = norm_bytes(k, p, readers=mlp_readers, trained=trained, read=trained)
    masks = RESIDUAL_DROPOUTS * k.hidden * p.mask_bytes(p.act) if k.resid_dropout else 0
    return (attn_norm + attention_bytes(k, p, kernel=kernel, keys=keys)
            + mlp_norm + mlp_bytes(k, p, trained=trained) + adapters * lora_r * p.act + masks)


# ---- logits and loss ------------------------------------------------------------------------------

# transformers' ForCausalLMLoss upcasts the logits (logits.float()) and runs cross_entropy: the
# fp32 log-probabilities (kept by log_softmax), at the start of backward their gradient and the
# logits' gradient — 12 B per token and vocabulary entry, whatever the logits' dtype (16-bit
# logits are freed once upcast; their 16-bit gradient comes after the log-probabilities are gone).
LOSS_BYTES_FP32 = 4 + 4 + 4


def loss_bytes(*, tokens: int, vocab: int, loss: Loss = Loss.full,
               chunk: int = 1024) -> int:
    """Bytes of the logits and the loss at the start of backward; chunked: ``chunk`` tokens at a
    time (plus the fp32 hidden states the chunks read, counted with the final norm)."""
    n = tokens if loss is Loss.full else min(tokens, chunk)
    return n * vocab * LOSS_BYTES_FP32


# ---- a training step's peak -----------------------------------------------------------------------

# torch.optim.AdamW's step, beyond its states (measured: MemTracker over one step): foreach
# allocates one intermediate list the size of the parameters (exp_avg_sq.sqrt() / bias
# correction + eps); the plain loop the same for one tensor at a time, twice (its largest tensor);
# fused nothing.
OPTIMIZER_TEMP_COPIES: dict[OptimizerImpl, int] = {
    OptimizerImpl.foreach: 1, OptimizerImpl.loop: 2, OptimizerImpl.fused: 0,
}
ADAM_STATES = 2  # exp_avg, exp_avg_sq, each in the parameter's dtype (torch.optim.AdamW)
STEP_BYTES = 4  # AdamW's per-parameter step counter: an fp32 scalar tensor
PEFT_ADAPTER_BYTES = 4  # peft keeps adapters in fp32 (autocast_adapter_dtype=True)


@dataclass(frozen=True)
class StepMemory:
    """Bytes of one training step of a transformers model on PyTorch's allocator: what is held
    (weights, gradients, optimizer states) and the two moments that can be the peak — the start
    of backward (activations + logits/loss) and the optimizer step (gradients + temporaries)."""

    weights: int
    gradients: int
    optimizer: int
    activations: int
    logits: int  # logits and loss at the start of backward
    temporaries: int  # the optimizer step's intermediates
    start_of_backward: int
    optimizer_step: int

    @property
    def peak(self) -> int:
        return max(self.start_of_backward, self.optimizer_step)

    @property
    def at_peak(self) -> dict[str, int]:
        """The parts held at the peak moment (slash keys, as the other breakdowns)."""
        held = {"weights": self.weights, "optimizer": self.optimizer}
        if self.start_of_backward >= self.optimizer_step:
            return {**held, "activations": self.activations, "logits/loss": self.logits}
        return {**held, "gradients": self.gradients, "optimizer/temporaries": self.temporaries}


def _param_tensors(spec: ModelSpec) -> int:
    top = sum(1 for t in spec.tensors if t.tied_to is None)
    return top + sum(len(g.layers) * len(g.tensors) for g in spec.layer_groups)


def _largest_tensor(spec: ModelSpec) -> int:
    return max(t.numel for g in (spec.tensors, *(g.tensors for g in spec.layer_groups)) for t in g)


def step_memory(
    spec: ModelSpec,
    *,
    batch: int,
    seq: int,
    precision: Precision,
    kernel: Kernel = Kernel.sdpa,
    recompute_full: bool = False,
    optimizer: OptimizerImpl = OptimizerImpl.foreach,
    loss: Loss = Loss.full,
    lora_params: int = 0,
    lora_adapters: int = 0,
    lora_r: int = 0,
) -> StepMemory:
    """One step (forward with labels, backward, AdamW) at ``batch`` × ``seq`` tokens.

    ``lora_params`` > 0: the base is frozen at its precision and only those adapter parameters
    (``lora_adapters`` modules of rank ``lora_r``, fp32 as peft keeps them) train. Gradient
    checkpointing (``recompute_full``) keeps each layer's input and recomputes one layer at a time
    (transformers' non-reentrant checkpoint).
    """
    from llmcalc.formulas.counting import count

    require_supported(spec)
    if batch < 1 or seq < 1:
        raise ParameterError("{batch} and {ctx}: must be 1 or more")
    if lora_params > 0 and dropouts(spec):
        raise ParameterError("{method}: {name}: dropout {p:g} ({key}) with a frozen base is not "
                             "measured; set it to 0 (--set)", name=spec.name,
                             p=next(iter(dropouts(spec).values())), key=next(iter(dropouts(spec))))
    sites = DROPOUT_SITES.get(spec.model_type, {})
    attn = [k for k in dropouts(spec) if sites.get(k) == "attention"]
    if kernel is not Kernel.eager and attn:
        raise ParameterError("{attention} {kernel}: {name}: the attention dropout ({key}) runs "
                             "inside the {kernel} kernel, whose saved state is not measured; use "
                             "--attention eager or set {key} to 0 (--set)",
                             name=spec.name, kernel=kernel.value, key=attn[0])
    p = precision
    tokens = batch * seq
    params = count(spec).total
    lora = lora_params > 0
    trainable = lora_params if lora else params
    state_bytes = PEFT_ADAPTER_BYTES if lora else p.weight_bytes
    weights = params * p.weight_bytes + (lora_params * PEFT_ADAPTER_BYTES if lora else 0)
    grads = trainable * state_bytes
    steps = STEP_BYTES * (2 * lora_adapters if lora else _param_tensors(spec))
    opt = ADAM_STATES * trainable * state_bytes + steps
    copies = OPTIMIZER_TEMP_COPIES[optimizer]
    temps = copies * state_bytes * (trainable if optimizer is OptimizerImpl.foreach
                                    else (0 if lora else _largest_tensor(spec)))
    h = spec.shape.hidden_size
    per_token = 0
    largest_layer = 0
    for g in spec.layer_groups:
        k = _layer_kind(spec, g)
        layer = layer_bytes_per_token(k, p, kernel=kernel, keys=seq, trained=not lora,
                                      adapters=lora_adapters // max(spec.shape.num_layers, 1),
                                      lora_r=lora_r)
        largest_layer = max(largest_layer, layer)
        per_token += len(g.layers) * (p.residual * h if recompute_full else layer)
    first = _layer_kind(spec, spec.layer_groups[0])
    per_token += norm_bytes(first, p, readers=1, trained=not lora, read=True)
    if _dropped(spec, "embedding"):  # the embeddings' sum, r B per element
        per_token += h * p.mask_bytes(p.residual)
    per_token += 2 * first.qk_dim * p.residual if first.rotary else 0
    casts = 0
    if p.amp:  # the bf16 copy of every matmul weight, cached by autocast for the backward pass
        casts = AMP_CAST_BYTES * sum(  # (not the routed experts': they run outside autocast)
            t.numel * (len(grp.layers) if grp is not None else 1)
            for grp, ts in ((None, spec.tensors), *((g, g.tensors) for g in spec.layer_groups))
            for t in ts if t.matmul and not t.experts)
    logits = loss_bytes(tokens=tokens, vocab=spec.shape.vocab_size, loss=loss)
    acts = tokens * per_token + casts
    recomputed = tokens * largest_layer if recompute_full else 0
    static = weights + opt
    return StepMemory(
        weights=weights, gradients=grads, optimizer=opt, activations=acts + recomputed,
        logits=logits, temporaries=temps,
        start_of_backward=static + acts + max(logits, recomputed),
        optimizer_step=static + grads + temps,
    )


# ---- inference: the prefill's transients ----------------------------------------------------------

# Live h-wide tensors in a layer while a prompt runs through it without autograd (measured): the
# residual stream, the norm's output, the block's output and the next residual sum.
PREFILL_HIDDEN_LIVE = 4
# Live ffn-wide tensors at the MLP's busiest moment: gated, act(gate), up and their product
# (gate is freed once activated); a fused activation, fc's output and its own; gelu_new's ops four.
PREFILL_MLP_LIVE_GATED = 3


def _mlp_live(k: LayerKind) -> int:
    return PREFILL_MLP_LIVE_GATED if k.gated else 1 + k.act_keeps


def prefill_bytes(spec: ModelSpec, *, batch: int, tokens: int, act_bytes: int,
                  kernel: Kernel = Kernel.sdpa, chunk: int | None = None) -> int:
    """The largest transient of a prefill of ``batch`` prompts of ``tokens`` tokens, beside the
    weights and the cache: one layer's intermediates for every prompt token at once, or for
    ``chunk`` tokens at a time (chunked prefill, as vLLM's max_num_batched_tokens; a chunk's
    queries still attend to the whole prompt).

    MLP: live h- and ffn-wide tensors per token (PREFILL_*), MoE per routed token (its input, the
    gated MLP, its output). Eager attention adds the a × s scores and their softmax per query
    (fp32) and transformers' additive mask (c B per query and key); sdpa/flash never build them.
    """
    require_supported(spec, training=False)
    if chunk is not None and chunk < 1:
        raise ParameterError("{chunk} {value}: must be 1 or more", value=chunk)
    n = batch * tokens if chunk is None else min(batch * tokens, chunk)
    c, h = act_bytes, spec.shape.hidden_size
    worst = 0
    for g in spec.layer_groups:
        k = _layer_kind(spec, g)
        mlp = k.top_k * (2 * h + 4 * k.ffn) if k.experts else _mlp_live(k) * k.ffn
        attn = 3 * k.heads * k.qk_dim + k.heads * k.v_dim
        scores = n * tokens * (2 * SOFTMAX_BYTES * k.heads + c) if kernel is Kernel.eager else 0
        hidden = PREFILL_HIDDEN_LIVE * h
        worst = max(worst, n * (hidden + mlp) * c, n * (hidden + attn) * c + scores)
    return worst
