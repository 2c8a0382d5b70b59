"""A measured answer where llmcalc has no formula: transformers' model, built on the meta device,
read into the same named-tensor description a family module writes.

For a ``model_type`` missing from :data:`llmcalc.families.MODEL_TYPES`, the causal-LM model is built
from the config on the meta device (shapes only, no weights, no network; ``trust_remote_code`` off
unless asked) and its ``named_parameters()`` (a tied weight once) become :class:`Tensor` s:

- decoder layers are the largest ``<prefix>.<i>.<rest>`` list; layers with the same tensor names and
  shapes form one :class:`LayerGroup` (named by ``layer_types`` when the config has one);
- a tensor is a matmul (2 FLOPs per element per token) when it is a 2-D ``…weight`` of any module
  but an embedding table (``nn.Linear``, GPT-2's ``Conv1D``, routers calling ``F.linear``), or a
  stacked ``[E, …]`` expert tensor; the lm_head is the output embedding;
- attention and the KV cache come from the standard fields only (``num_attention_heads``,
  ``num_key_value_heads``, ``head_dim``) and only for layers with attention tensors; where those
  fields do not determine them they are left out, and the notes say so.

torch and transformers are imported lazily; without them :class:`MissingExtraError` names the extra.
"""

from __future__ import annotations

import re
import time
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from llmcalc.errors import ConfigError, MissingExtraError
from llmcalc.limits import MAX_MEASURED_LAYERS, MAX_MEASURED_MODULES, MAX_MEASURED_TENSORS
from llmcalc.model.spec import (
    LAYER,
    Attention,
    LayerGroup,
    LayerSet,
    ModelSpec,
    MoE,
    Origin,
    Shape,
    Tensor,
)

METHOD = "measured"
LAYER_NAME = re.compile(r"^(?P<head>.+?)\.(?P<i>\d+)\.(?P<rest>.+)$")
ATTENTION_PART = re.compile(r"(^|\.)(self_attn|attn|attention|self_attention|mixer\.attn)(\.|$)")
# the field a config names its experts-per-token with, in the order tried
TOP_K_FIELDS = ("num_experts_per_tok", "num_experts_per_token", "top_k", "moe_topk", "moe_top_k")
# the fields a config names its layer count with (checked before anything is built)
LAYER_FIELDS = ("num_hidden_layers", "n_layer", "num_layers", "n_layers", "num_decoder_layers",
                "decoder_layers")


def _import() -> tuple[Any, Any]:
    try:
        import torch
        import transformers
    except ImportError:
        return None, None
    transformers.logging.set_verbosity_error()  # type: ignore[no-untyped-call]
    return torch, transformers


def measure(
    *,
    label: str,
    name: str,
    model_type: str,
    fields: Mapping[str, Any],
    notes: Sequence[str] = (),
    source: str | None = None,
    origin: Origin | None = None,
    trust_remote_code: bool = False,
) -> ModelSpec:
    """``fields`` (a config of a type llmcalc has no formula for) described by building its model.

    What is built is bounded: at most ``MAX_MEASURED_LAYERS`` layers (checked on the config before
    torch is imported), ``MAX_MEASURED_TENSORS`` parameter tensors and ``MAX_MEASURED_MODULES``
    modules (counted while transformers builds, which stops at the first one past the cap).
    """
    check_layers(label, fields)
    torch, transformers = _import()
    if torch is None:
        raise MissingExtraError(
            f"{label}: llmcalc has no formula for model_type {model_type!r}; measuring it "
            "(building transformers' model on the meta device)"
        )
    start = time.perf_counter()
    config = _config(transformers, label, model_type, fields, origin, trust_remote_code)
    try:
        text = config.get_text_config() if hasattr(config, "get_text_config") else config
    except ValueError:  # several text configs (MusicGen's text encoder and decoder): its own fields
        text = config
    check_layers(label, {f: _get(text, f) for f in LAYER_FIELDS})
    try:
        with torch.device("meta"), _bounded_build(label, torch):
            model = transformers.AutoModelForCausalLM.from_config(
                config, trust_remote_code=trust_remote_code
            )
    except ConfigError:
        raise
    except Exception as e:  # noqa: BLE001 - transformers rejected the config: one line, no traceback
        raise ConfigError(
            label, f"transformers cannot build a causal-LM model of this config: {_first_line(e)}"
        ) from None
    try:
        shape, tensors, groups, moe, more = describe_model(model, config, torch, transformers)
    except Exception as e:  # noqa: BLE001 - a model llmcalc cannot read: one line, no traceback
        raise ConfigError(label, f"cannot read the built model's parameters: {_first_line(e)}") from None
    seconds = time.perf_counter() - start
    return ModelSpec(
        name=name,
        model_type=model_type,
        family=METHOD,
        shape=shape,
        tensors=tensors,
        layer_groups=groups,
        moe=moe,
        source=source,
        notes=(
            *notes,
            f"measured: llmcalc has no formula for {model_type}; transformers "
            f"{transformers.__version__} {type(model).__name__} built on the meta device "
            f"({seconds:.1f} s)",
            *more,
        ),
        config=dict(fields),
        origin=origin,
        method=METHOD,
        measured_seconds=seconds,
    )


def check_layers(label: str, fields: Mapping[str, Any]) -> None:
    """Refuse a config of more than ``MAX_MEASURED_LAYERS`` layers (its own fields, or its
    ``text_config``'s) before any of it is built."""
    text = fields.get("text_config")
    for where, data in (("", fields), ("text_config.", text if isinstance(text, Mapping) else {})):
        for key in LAYER_FIELDS:
            value = data.get(key)
            if isinstance(value, int) and not isinstance(value, bool) and value > MAX_MEASURED_LAYERS:
                raise ConfigError(
                    label,
                    f"{where}{key} is {value:,}; a model without a formula is measured by building "
                    f"it, up to {MAX_MEASURED_LAYERS:,} layers",
                )


@contextmanager
def _bounded_build(label: str, torch: Any) -> Iterator[None]:
    """Count the modules and parameter tensors transformers registers while it builds a model,
    and stop the build (a :class:`ConfigError`) at the first one past its cap."""
    seen = {"modules": 0, "tensors": 0}
    caps = {"modules": MAX_MEASURED_MODULES, "tensors": MAX_MEASURED_TENSORS}
    words = {"modules": "modules", "tensors": "parameter tensors"}

    def counted(kind: str) -> Any:
        def hook(*_: Any) -> None:
            seen[kind] += 1
            if seen[kind] > caps[kind]:
                raise ConfigError(
                    label,
                    f"a model without a formula is measured by building it, up to "
                    f"{caps[kind]:,} {words[kind]}; this config makes more",
                )

        return hook

    nn = torch.nn.modules.module
    handles = [nn.register_module_module_registration_hook(counted("modules")),
               nn.register_module_parameter_registration_hook(counted("tensors"))]
    try:
        yield
    finally:
        for h in handles:
            h.remove()


def _config(
    transformers: Any,
    label: str,
    model_type: str,
    fields: Mapping[str, Any],
    origin: Origin | None,
    trust_remote_code: bool,
) -> Any:
    known = model_type in transformers.models.auto.configuration_auto.CONFIG_MAPPING_NAMES
    remote = isinstance(fields.get("auto_map"), dict)
    try:
        if not known and trust_remote_code and remote and origin is not None:
            where = origin.repo_id or str(Path(origin.path).parent)
            return transformers.AutoConfig.from_pretrained(
                where, revision=origin.revision, trust_remote_code=True
            )
        if not known:
            hint = " (its code is in the model's repo: --trust-remote-code runs it)" if remote else ""
            raise ConfigError(
                label,
                f"unknown model_type {model_type!r}: llmcalc has no formula for it and "
                f"transformers {transformers.__version__} does not know it{hint}; to count it "
                "as a known family, pass --family",
            )
        return transformers.AutoConfig.for_model(
            model_type, **{k: v for k, v in fields.items() if k != "model_type"}
        )
    except ConfigError:
        raise
    except Exception as e:  # noqa: BLE001
        raise ConfigError(label, f"transformers rejects this config: {_first_line(e)}") from None


def describe_model(
    model: Any, config: Any, torch: Any, transformers: Any
) -> tuple[Shape, tuple[Tensor, ...], tuple[LayerGroup, ...], MoE | None, list[str]]:
    """The named-tensor description of an instantiated model (see the module docstring)."""
    notes: list[str] = []
    text = config.get_text_config() if hasattr(config, "get_text_config") else config
    params = dict(model.named_parameters())
    modules = dict(model.named_modules())
    inp, out = model.get_input_embeddings(), model.get_output_embeddings()
    tied = out is not None and inp is not None and out.weight is inp.weight
    embed_name = _param_name(params, inp)
    head_name = next((f"{k}.weight" for k, m in modules.items() if m is out), None) if out is not None else None

    layer_list = _layer_list(params)
    top_k = next((_get(text, f) for f in TOP_K_FIELDS if isinstance(_get(text, f), int)), None)

    def tensor(name: str, p: Any, component: str, real: str | None = None) -> Tensor:
        """``real``: the concrete name (layer index filled in) whose module says what it is."""
        path = real or name
        owner = modules.get(path.rsplit(".", 1)[0]) if "." in path else model
        matmul, experts = _matmul(path, p, owner, torch)
        if experts and top_k is None:
            experts = 0
        return Tensor(name, tuple(p.shape), component, matmul=matmul, experts=experts)

    outer: list[Tensor] = []
    per_layer: dict[int, list[tuple[str, Any]]] = {}
    for name, p in params.items():
        m = LAYER_NAME.match(name)
        if layer_list is not None and m and m["head"] == layer_list:
            per_layer.setdefault(int(m["i"]), []).append((m["rest"], p))
        else:
            outer.append(tensor(name, p, _outer_component(name, embed_name, head_name, modules)))
    if tied and head_name is not None and embed_name is not None:
        outer.append(
            Tensor(head_name, tuple(inp.weight.shape), "lm_head", matmul=True, tied_to=embed_name)
        )
    num_layers = len(modules[layer_list]) if layer_list is not None else 0

    # layers alike in names and shapes share a group (LayerSet.of: indices of built layers only)
    signatures: dict[tuple[tuple[str, tuple[int, ...]], ...], list[int]] = {}
    for i in range(num_layers):
        sig = tuple(sorted((rest, tuple(p.shape)) for rest, p in per_layer.get(i, [])))
        signatures.setdefault(sig, []).append(i)
    attention, attn_note = _attention(text)
    if attn_note:
        notes.append(attn_note)
    kinds = _get(text, "layer_types")
    groups: list[LayerGroup] = []
    without: list[int] = []  # layers without attention tensors
    for k, (sig, indices) in enumerate(signatures.items()):
        first = indices[0]
        layer_tensors = tuple(
            tensor(f"{layer_list}.{LAYER}.{rest}", p, _component(rest), f"{layer_list}.{first}.{rest}")
            for rest, p in per_layer.get(first, [])
        )
        group_name = _group_name(kinds, indices, k, len(signatures), num_layers)
        if any(g.name == group_name for g in groups):
            group_name = f"{group_name}, kind {k + 1}"
        has_attention = any(ATTENTION_PART.search(rest) for rest, _ in sig)
        window = _get(text, "sliding_window")
        att = attention
        if has_attention and group_name == "sliding_attention" and isinstance(window, int):
            att = Attention(attention.heads, attention.kv_heads, attention.qk_head_dim,
                            attention.v_head_dim, window=window)
        if not has_attention and attention.heads:
            att = Attention(0, 0, 0, 0)
            without.extend(indices)
        groups.append(LayerGroup(group_name, LayerSet.of(indices), layer_tensors, att))
    if without:
        notes.append(
            f"layers {LayerSet.of(without).describe()} have no attention tensors: no attention "
            "FLOPs or KV cache counted for them (any recurrent state is not measured)"
        )

    moe = None
    expert_tensors = [t for g in groups for t in g.tensors if t.experts]
    if expert_tensors and top_k is not None:
        moe = MoE(num_experts=expert_tensors[0].experts, experts_per_tok=top_k)
    elif any(p.dim() == 3 and "expert" in n for n, p in params.items()):
        notes.append("experts found but no experts-per-token field: active parameters = total")

    hidden = _int(text, "hidden_size", "d_model", "n_embd") or (
        int(inp.weight.shape[1]) if inp is not None else 0
    )
    shape = Shape(
        num_layers=num_layers,
        hidden_size=hidden,
        num_heads=attention.heads,
        num_kv_heads=attention.kv_heads,
        head_dim=attention.qk_head_dim,
        intermediate_size=_int(text, "intermediate_size", "ffn_dim", "n_inner", "d_ff") or 0,
        vocab_size=int(inp.weight.shape[0]) if inp is not None else _int(text, "vocab_size") or 0,
        tied_embeddings=tied,
        max_position_embeddings=_int(text, "max_position_embeddings"),
    )
    return shape, tuple(outer), tuple(groups), moe, notes


def _layer_list(params: Mapping[str, Any]) -> str | None:
    """The module path of the decoder layers: the ``<head>.<i>.`` prefix holding most parameters."""
    sizes: dict[str, int] = {}
    for name, p in params.items():
        m = LAYER_NAME.match(name)
        if m:
            sizes[m["head"]] = sizes.get(m["head"], 0) + p.numel()
    return max(sizes, key=lambda h: sizes[h]) if sizes else None


def _matmul(name: str, p: Any, owner: Any, torch: Any) -> tuple[bool, int]:
    """(a token is multiplied by it, routed experts stacked on its first dimension)."""
    if p.dim() == 3 and owner is not None and "expert" in type(owner).__name__.lower():
        return True, int(p.shape[0])
    # nn.Linear, GPT-2's Conv1D, routers that call F.linear on their own weight …: any 2-D weight
    # but an embedding table (a lookup) is a matrix a token is multiplied by
    table = isinstance(owner, torch.nn.Embedding)
    return bool(name.endswith("weight") and p.dim() == 2 and not table), 0


def _attention(text: Any) -> tuple[Attention, str | None]:
    heads = _int(text, "num_attention_heads", "n_head", "num_heads")
    hidden = _int(text, "hidden_size", "d_model", "n_embd")
    if not heads or not hidden:
        return Attention(0, 0, 0, 0), (
            "attention FLOPs and the KV cache are left out: the config's standard fields "
            "(num_attention_heads, hidden_size) do not determine them"
        )
    kv = _int(text, "num_key_value_heads") or heads
    head_dim = _int(text, "head_dim") or hidden // heads
    return Attention(heads, kv, head_dim, head_dim), (
        f"attention FLOPs and the KV cache are from the standard fields only ({heads} heads, "
        f"{kv} kv heads, head_dim {head_dim}), not read off the model"
    )


def _group_name(kinds: Any, indices: list[int], k: int, groups: int, num_layers: int) -> str:
    if isinstance(kinds, list) and len(kinds) == num_layers:
        names = {kinds[i] for i in indices}
        if len(names) == 1:
            return str(names.pop())
    return "decoder" if groups == 1 else f"kind {k + 1}"


def _component(rest: str) -> str:
    """``self_attn.q_proj.weight`` → ``self_attn/q_proj`` (a breakdown key)."""
    head, _, last = rest.rpartition(".")
    return (head if last in ("weight", "bias") and head else rest).replace(".", "/")


def _outer_component(
    name: str, embed: str | None, head: str | None, modules: Mapping[str, Any]
) -> str:
    if name == embed:
        return "embed/tokens"
    if name == head:
        return "lm_head"
    module = modules.get(name.rsplit(".", 1)[0])
    kind = type(module).__name__.lower()
    if "embedding" in kind:
        return "embed/positions" if "pos" in name else "embed/" + _component(name)
    if "norm" in kind:
        return "final_norm"
    return _component(name)


def _param_name(params: Mapping[str, Any], module: Any) -> str | None:
    if module is None:
        return None
    return next((k for k, p in params.items() if p is module.weight), None)


def _get(obj: Any, name: str) -> Any:
    """A config attribute, or None; per-layer configs (transformers 5) raise on global reads."""
    try:
        return getattr(obj, name, None)
    except Exception:  # noqa: BLE001 - e.g. AmbiguousGlobalPerLayerAttributeError
        return None


def _int(obj: Any, *names: str) -> int | None:
    for n in names:
        value = _get(obj, n)
        if isinstance(value, int) and not isinstance(value, bool) and value > 0:
            return value
    return None


def _first_line(e: BaseException) -> str:
    detail = (str(e).strip().splitlines() or [""])[0]
    detail = detail if len(detail) <= 200 else detail[:200] + " …"
    return f"{type(e).__name__}: {detail}"
