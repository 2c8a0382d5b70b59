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
NOT_PARAMETERS = ("rope_freqs.weight",)
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
    key = hp.get("attention.key_length")
    if key is not None:
        fields["head_dim"] = hp.whole("attention.key_length")
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


# general.architecture → the transformers config it reads back into
ARCHITECTURES: dict[str, Callable[[Hp], dict[str, Any]]] = {
    "llama": _llama,
    "qwen2": _qwen2,
    "qwen3": _qwen3,
    "qwen2moe": lambda hp: _moe(hp, "qwen2_moe"),
    "qwen3moe": lambda hp: _moe(hp, "qwen3_moe"),
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

