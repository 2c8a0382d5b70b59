"""A GGUF file's metadata → the transformers config it was converted from.

llama.cpp's converter (``convert_hf_to_gguf.py``) writes a Hugging Face config's sizes under
``{arch}.*`` keys (``llama.block_count`` ← ``num_hidden_layers`` …); this module reads them back into
the config fields of the transformers class that architecture came from, so that every figure
(KV cache, FLOPs, fit) follows the same model description as a config.json would. What the
metadata does not carry is read off the tensor table: the vocabulary (``token_embd.weight`` is
[d_model, vocab] in ggml order), tied embeddings (no ``output.weight``), attention and MLP biases
(``blk.0.attn_q.bias``, ``blk.0.ffn_up.bias``).

The weights stay as the file stores them: the config carries a ``quantization_config`` of method
``gguf`` with the file's bytes by ggml type, so ``memory`` and ``fit`` use the stored bytes
(:class:`llmcalc.formulas.quant.StoredFormat`), and the parameter count of the description is held to the
tensor table (a difference is said in a note).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from llmcalc.errors import ConfigError
from llmcalc.inputs.gguf_file import ArrayInfo, GgufHeader
from llmcalc.limits import shown

# llama.cpp keeps a few tensors that are not parameters in transformers: the Llama 3.1 RoPE scaling
# factors it precomputes (``rope_freqs.weight``, a buffer there).
NOT_PARAMETERS = ("rope_freqs.weight", "rope_factors_long.weight", "rope_factors_short.weight")
MAX_LAYERS_LISTED = 65_536


class Hp:
    """The ``{arch}.*`` hyperparameters of one header, read with the key named on failure."""

    def __init__(self, header: GgufHeader) -> None:
        self.header = header
        self.arch = header.architecture
        self.names = {t.name: t for t in header.tensors}

    def get(self, key: str, default: Any = None) -> Any:
        value = self.header.metadata.get(f"{self.arch}.{key}", default)
        if isinstance(value, ArrayInfo):
            raise ConfigError(self.header.label, f"{self.arch}.{key} is an array of "
                              f"{value.length:,}; a per-layer value is not supported")
        return value

    def whole(self, key: str, default: int | None = None) -> int:
        value = self.get(key, default)
        if isinstance(value, list):
            if value and all(v == value[0] for v in value):
                value = value[0]
            else:
                raise ConfigError(self.header.label, f"{self.arch}.{key}: per-layer values "
                                  f"{shown(str(value))} are not supported")
        if isinstance(value, bool) or not isinstance(value, int):
            if value is None:
                raise ConfigError(self.header.label, f"{self.arch}.{key}: missing")
            raise ConfigError(self.header.label, f"{self.arch}.{key}: {shown(repr(value))} is not "
                              "a whole number")
        return value

    def has(self, tensor: str) -> bool:
        return tensor in self.names

    def vocab(self) -> int:
        embd = self.names.get("token_embd.weight")
        if embd is None or len(embd.shape) != 2:
            return self.whole("vocab_size")
        return embd.shape[1]


def _attention(hp: Hp) -> dict[str, Any]:
    heads = hp.whole("attention.head_count")
    hidden = hp.whole("embedding_length")
    fields: dict[str, Any] = {
        "hidden_size": hidden,
        "num_hidden_layers": hp.whole("block_count"),
        "num_attention_heads": heads,
        "num_key_value_heads": hp.whole("attention.head_count_kv", heads),
        "vocab_size": hp.vocab(),
        "max_position_embeddings": hp.whole("context_length"),
        "tie_word_embeddings": not hp.has("output.weight"),
    }
    # src/llama-model.cpp: load_hparams — the head size is key_length, else n_embd / n_head (what
    # a transformers class defaults to otherwise may differ: Gemma2's 256)
    key = hp.get("attention.key_length")
    fields["head_dim"] = hp.whole("attention.key_length") if key is not None else hidden // heads
    eps = hp.get("attention.layer_norm_rms_epsilon")
    if isinstance(eps, float):
        fields["rms_norm_eps"] = eps
    theta = hp.get("rope.freq_base")
    if isinstance(theta, (int, float)):
        fields["rope_theta"] = theta
    return fields


def _llama(hp: Hp) -> dict[str, Any]:
    fields = _attention(hp)
    fields["intermediate_size"] = hp.whole("feed_forward_length")
    experts = hp.get("expert_count") or 0
    if experts:  # Mixtral is written as llama with experts
        return {**fields, "model_type": "mixtral", "num_local_experts": hp.whole("expert_count"),
                "num_experts_per_tok": hp.whole("expert_used_count")}
    return {**fields, "model_type": "llama", "attention_bias": hp.has("blk.0.attn_q.bias"),
            "mlp_bias": hp.has("blk.0.ffn_up.bias")}


def _qwen2(hp: Hp) -> dict[str, Any]:
    return {**_attention(hp), "model_type": "qwen2",
            "intermediate_size": hp.whole("feed_forward_length")}


def _qwen3(hp: Hp) -> dict[str, Any]:
    return {**_attention(hp), "model_type": "qwen3",
            "intermediate_size": hp.whole("feed_forward_length")}


def _moe(hp: Hp, model_type: str) -> dict[str, Any]:
    fields = {**_attention(hp), "model_type": model_type,
              "num_experts": hp.whole("expert_count"),
              "num_experts_per_tok": hp.whole("expert_used_count"),
              "moe_intermediate_size": hp.whole("expert_feed_forward_length"),
              "decoder_sparse_step": 1, "mlp_only_layers": []}
    ff = hp.get("feed_forward_length")
    if ff is not None:
        fields["intermediate_size"] = hp.whole("feed_forward_length")
    shared = hp.get("expert_shared_feed_forward_length")
    if model_type == "qwen2_moe":
        fields["shared_expert_intermediate_size"] = (
            hp.whole("expert_shared_feed_forward_length") if shared is not None else 0)
    return fields


def _swa_layer_types(hp: Hp, period: int) -> list[str] | None:
    """llama.cpp's sliding-window layers (src/llama-hparams.cpp: set_swa_pattern, the period from
    ``attention.sliding_window_pattern`` or the model's default: every layer but each period-th)
    as transformers' ``layer_types``; None without a window."""
    n = hp.whole("block_count")
    pattern = hp.get("attention.sliding_window_pattern")
    if isinstance(pattern, list):
        if len(pattern) != n:
            raise ConfigError(hp.header.label, f"{hp.arch}.attention.sliding_window_pattern: "
                              f"{len(pattern)} values for {n} layers")
        return ["sliding_attention" if v else "full_attention" for v in pattern]
    if pattern is not None:
        period = int(pattern)
    return ["sliding_attention" if period == 0 or il % period < period - 1 else "full_attention"
            for il in range(n)]


def _gemma(hp: Hp, model_type: str, period: int) -> dict[str, Any]:
    # src/models/gemma2.cpp, gemma3.cpp: load_arch_hparams — gemma2's window defaults to 4,096
    # (pattern 2), gemma3's to none (pattern 6)
    fields = {**_attention(hp), "model_type": model_type,
              "intermediate_size": hp.whole("feed_forward_length")}
    if model_type == "gemma2":  # gemma2.cpp loads no output.weight: token_embd is the output
        fields["tie_word_embeddings"] = True
    window = hp.get("attention.sliding_window", 4096 if model_type == "gemma2" else 0)
    if window:
        fields["sliding_window"] = hp.whole("attention.sliding_window", window)
        fields["layer_types"] = _swa_layer_types(hp, period)
    else:
        fields["layer_types"] = ["full_attention"] * hp.whole("block_count")
    return fields


def _phi3(hp: Hp) -> dict[str, Any]:
    # the fused qkv and gate_up are Phi3's own; its window is read (src/models/phi3.cpp disables it)
    fields = {**_attention(hp), "model_type": "phi3",
              "intermediate_size": hp.whole("feed_forward_length")}
    window = hp.get("attention.sliding_window")
    if window:
        fields["sliding_window"] = hp.whole("attention.sliding_window")
    return fields


def _mamba(hp: Hp) -> dict[str, Any]:
    # src/models/mamba.cpp: ssm.conv_kernel, ssm.inner_size, ssm.state_size, ssm.time_step_rank
    hidden = hp.whole("embedding_length")
    return {
        "model_type": "mamba", "hidden_size": hidden, "num_hidden_layers": hp.whole("block_count"),
        "vocab_size": hp.vocab(), "state_size": hp.whole("ssm.state_size"),
        "intermediate_size": hp.whole("ssm.inner_size"),
        "expand": max(1, hp.whole("ssm.inner_size") // hidden),
        "conv_kernel": hp.whole("ssm.conv_kernel"), "time_step_rank": hp.whole("ssm.time_step_rank"),
        "use_bias": hp.has("blk.0.ssm_in.bias"), "use_conv_bias": hp.has("blk.0.ssm_conv1d.bias"),
        "tie_word_embeddings": not hp.has("output.weight"),
    }


def _lfm2(hp: Hp) -> dict[str, Any]:
    # src/models/lfm2.cpp: a layer without KV heads (head_count_kv per layer) is a short conv
    n = hp.whole("block_count")
    heads = hp.whole("attention.head_count")
    kv = hp.header.metadata.get(f"{hp.arch}.attention.head_count_kv", heads)
    kv_list = kv if isinstance(kv, list) else [kv] * n
    if len(kv_list) != n or not all(isinstance(v, int) for v in kv_list):
        raise ConfigError(hp.header.label, f"{hp.arch}.attention.head_count_kv: one whole number "
                          f"per layer expected for {n} layers")
    attn = [v for v in kv_list if v]
    if len(set(attn)) > 1:
        raise ConfigError(hp.header.label, f"{hp.arch}.attention.head_count_kv: attention layers "
                          f"with different KV heads {shown(str(sorted(set(attn))))} are not "
                          "supported")
    return {
        "model_type": "lfm2", "hidden_size": hp.whole("embedding_length"),
        "num_hidden_layers": n, "num_attention_heads": heads,
        "num_key_value_heads": attn[0] if attn else heads, "vocab_size": hp.vocab(),
        "max_position_embeddings": hp.whole("context_length"),
        "intermediate_size": hp.whole("feed_forward_length"), "block_auto_adjust_ff_dim": False,
        "conv_L_cache": hp.whole("shortconv.l_cache"),
        "conv_bias": hp.has("blk.0.shortconv.in_proj.bias"),
        "tie_word_embeddings": not hp.has("output.weight"),
        "layer_types": ["full_attention" if v else "conv" for v in kv_list],
    }


def _gpt_oss(hp: Hp) -> dict[str, Any]:
    # src/models/openai-moe.cpp (llama.cpp's gpt-oss), load_arch_hparams: the experts' width
    # expert_feed_forward_length, a sliding window on each layer but every second
    # (set_swa_pattern(2): layers 0, 2, … slide, as transformers' GptOssConfig layer_types);
    # load_arch_tensors: q/k/v/o biases, a sink per head, the router's and the experts' biases
    fields = {**_attention(hp), "model_type": "gpt_oss",
              "num_local_experts": hp.whole("expert_count"),
              "num_experts_per_tok": hp.whole("expert_used_count"),
              "intermediate_size": hp.whole("expert_feed_forward_length"),
              "attention_bias": hp.has("blk.0.attn_q.bias"),
              "sliding_window": hp.whole("attention.sliding_window")}
    fields["layer_types"] = _swa_layer_types(hp, 2)
    return fields


# general.architecture → the transformers config it reads back into
ARCHITECTURES: dict[str, Callable[[Hp], dict[str, Any]]] = {
    "llama": _llama,
    "qwen2": _qwen2,
    "qwen3": _qwen3,
    "qwen2moe": lambda hp: _moe(hp, "qwen2_moe"),
    "qwen3moe": lambda hp: _moe(hp, "qwen3_moe"),
    "gemma2": lambda hp: _gemma(hp, "gemma2", 2),
    "gemma3": lambda hp: _gemma(hp, "gemma3_text", 6),
    "phi3": _phi3,
    "mamba": _mamba,
    "lfm2": _lfm2,
    "gpt-oss": _gpt_oss,
}


def quantization_config(header: GgufHeader) -> dict[str, Any]:
    """The file's own storage, as the ``quantization_config`` :func:`llmcalc.formulas.quant.from_config`
    reads: bytes by ggml type and the bytes of the routed experts (``*_exps``)."""
    return {
        "quant_method": "gguf",
        "file_type": header.file_type or "",
        "types": {k: list(v) for k, v in header.bytes_by_type().items()},
        "expert_bytes": sum(t.nbytes for t in header.tensors if "_exps." in t.name),
        "parameters": header.parameters,
        "not_parameters": sum(t.elements for t in header.tensors if t.name in NOT_PARAMETERS),
        "layer_bytes": layer_bytes(header),
        "head_bytes": sum(t.nbytes for t in header.tensors
                          if t.name in ("output.weight", "output_norm.weight", "output_norm.bias")),
        "embed_bytes": sum(t.nbytes for t in header.tensors if t.name == "token_embd.weight"),
    }


def layer_bytes(header: GgufHeader) -> list[int]:
    """Bytes of each block's tensors (``blk.N.*``), N = 0 … the block count − 1."""
    count = header.metadata.get(f"{header.architecture}.block_count")
    if not isinstance(count, int) or not 0 < count <= MAX_LAYERS_LISTED:
        return []
    out = [0] * count
    for t in header.tensors:
        if t.name.startswith("blk."):
            index = t.name.split(".", 2)[1]
            if index.isdigit() and int(index) < count:
                out[int(index)] += t.nbytes
    return out


def summary(header: GgufHeader) -> str:
    """Parameters and bytes by type, in one phrase (for messages)."""
    kinds = ", ".join(f"{k} {b:,} B" for k, (_, _, b) in header.bytes_by_type().items())
    return f"{header.parameters:,} parameters in {header.tensor_bytes:,} bytes ({kinds})"


def config_fields(header: GgufHeader) -> dict[str, Any]:
    """The transformers config fields the header describes; a ConfigError for an architecture
    llmcalc does not read back, with what the file does tell."""
    arch = header.architecture
    build = ARCHITECTURES.get(arch)
    if build is None:
        known = ", ".join(ARCHITECTURES)
        raise ConfigError(
            header.label,
            f"general.architecture {shown(arch) or '(missing)'} is not described (known: {known}); "
            f"the file holds {summary(header)}; its KV cache and FLOPs cannot be computed",
        )
    fields = build(Hp(header))
    fields["quantization_config"] = quantization_config(header)
    return fields


def parameter_note(q: Mapping[str, Any], counted: int) -> str | None:
    """How the description's count and the file's tensor table (``quantization_config`` of method
    gguf) compare, when they differ or the file holds tensors that are not parameters."""
    total, extra = int(q.get("parameters", 0)), int(q.get("not_parameters", 0))
    stored = total - extra
    if stored == counted:
        if extra:
            return (f"the GGUF file also holds {extra:,} elements of llama.cpp's precomputed "
                    "RoPE factors (rope_freqs.weight, a buffer in transformers)")
        return None
    return (f"the GGUF file's tensor table holds {stored:,} parameters; the architecture it "
            f"describes has {counted:,} ({stored - counted:+,}): figures follow the description")


def name_of(header: GgufHeader, path: Path) -> str:
    name = header.metadata.get("general.name")
    return name if isinstance(name, str) and name else path.name

