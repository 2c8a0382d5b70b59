"""From what a user types to a :class:`ModelSpec`: find the file, parse it, validate it, describe it.

Accepted sources, tried in this order: a ``config.json``, a checkpoint folder holding one, or a YAML
file with the same keys (plus optional ``name``, ``source``, ``expected`` and ``class_defaults``);
the name of a bundled config; a model Ollama pulled (``llama3.1:8b``: its GGUF file,
:mod:`llmcalc.inputs.ollama`); a Hugging Face repo id (``org/name``), from the local cache or the
Hub (:mod:`llmcalc.inputs.hub`, imported only then). Every failure is a :class:`ConfigError` naming the
file and the field, or a :class:`HubError`.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import yaml
from pydantic import ValidationError

from llmcalc.errors import ConfigError, UsageError
from llmcalc.families import MODEL_TYPES, Family, FieldError
from llmcalc.families._base import ONE_ELEMENT_HEAD_QK, ROTARY_FIELDS
from llmcalc.inputs import bundled
from llmcalc.inputs.files import YAML_SUFFIXES, _Loader, parse_file
from llmcalc.inputs.files import check_shape as _check_shape
from llmcalc.inputs.files import is_dir as _is_dir
from llmcalc.inputs.files import is_file as _is_file
from llmcalc.inputs.validation import quoted as _json
from llmcalc.inputs.validation import validation_message as _validation_message
from llmcalc.limits import (
    MAX_META_CHARS,
    MAX_SET_CHARS,
    check_model_arg,
    shown,
)
from llmcalc.model.spec import ModelSpec, Origin

if TYPE_CHECKING:
    from llmcalc.inputs.ollama import Pulled

META_KEYS = ("name", "source", "expected", "class_defaults")


@dataclass(frozen=True)
class RawConfig:
    """A parsed config file: its fields, where it came from, and the YAML-only metadata."""

    path: Path
    label: str  # how messages name the file
    fields: dict[str, Any]
    name: str
    source: str | None
    expected: Mapping[str, Any]
    origin: Origin | None = None
    notes: tuple[str, ...] = ()


def load_spec(
    model: str,
    *,
    overrides: Sequence[str] = (),
    family: str | None = None,
    revision: str | None = None,
    trust_remote_code: bool = False,
) -> ModelSpec:
    """Resolve ``model`` (path, folder, bundled name or Hugging Face repo id at ``revision``), apply
    ``--set`` overrides, describe it (by its family's formula, else measured: :mod:`llmcalc.verify.measured`)."""
    return spec_from_raw(
        read_config(model, revision=revision),
        overrides=overrides,
        family=family,
        trust_remote_code=trust_remote_code,
    )


def spec_from_dict(
    fields: Mapping[str, Any],
    *,
    name: str = "config",
    overrides: Sequence[str] = (),
    family: str | None = None,
) -> ModelSpec:
    """Describe a config already in memory (messages name it ``name``)."""
    data = dict(fields)
    raw = RawConfig(
        path=Path(name),
        label=name,
        fields={k: v for k, v in data.items() if k not in META_KEYS},
        name=str(data.get("name") or name),
        source=data.get("source"),
        expected=data.get("expected") or {},
    )
    return spec_from_raw(raw, overrides=overrides, family=family)


def read_config(model: str, *, revision: str | None = None, paths: bool = True) -> RawConfig:
    """Find and parse the config behind ``model`` (no validation of its fields yet).

    A path first, then a bundled name, then a model Ollama pulled (``llama3.1:8b``:
    llmcalc.inputs.ollama), then a repo id in the local Hugging Face cache or on the Hub.
    ``revision`` (a branch, tag or commit) asks for a repo id at that revision, skipping bundled names.
    ``paths=False`` skips the first step: ``model`` is never looked up on the file system.
    """
    check_model_arg(model)
    path = Path(model).expanduser()
    hub_name: str | None = None
    notes: tuple[str, ...] = ()
    if revision is not None and paths and (_is_dir(path) or _is_file(path)):
        raise UsageError(f"--revision {revision}: only for a Hugging Face repo id, not a path")
    if paths and _is_dir(path):
        folder = path
        path = folder / "config.json"
        if not _is_file(path):
            raise ConfigError(str(folder), "folder has no config.json")
        from llmcalc.inputs.safetensors_index import within

        if not within(path, folder):
            raise ConfigError(str(path), "links to a file outside the folder")
        label = str(path)
        origin = Origin("path", str(path))
    elif paths and _is_file(path):
        label = model
        origin = Origin("path", str(path))
        from llmcalc.inputs.gguf_file import is_gguf_path

        if is_gguf_path(path):
            return _gguf_config(path, label, origin)
    else:
        found = bundled.find(model) if revision is None else None
        if found is None and revision is None and (raw := _family_default(model)) is not None:
            return raw
        if found is None:
            if path.suffix in (".json", *YAML_SUFFIXES) or model.startswith((".", "/", "~")):
                raise ConfigError(model, "no such file")
            from llmcalc.inputs import ollama

            if revision is None and (found_pulled := ollama.find(model)) is not None:
                return _ollama_config(found_pulled)  # llama3.1:8b, pulled here
            model = ollama.hub_selector(model) or model  # hf.co/org/repo:Q4_K_M, not pulled here
            from llmcalc.inputs import hub  # huggingface_hub only for names that need it

            if ":" in model:
                from llmcalc.inputs import hub_gguf

                picked = hub_gguf.split_selector(model)
                if picked is not None:
                    return _hub_gguf_config(picked[0], picked[1], revision)
            bare = None
            if not hub.looks_like_repo_id(model):
                if revision is not None:
                    raise UsageError(f"--revision {revision}: only for a Hugging Face repo id (org/name)")
                if (bare := bundled.bare_base(model)) is None:
                    bundled.raise_unknown(model, ollama.not_pulled(model))
            if bare is not None:  # Llama-3.1-8B-Instruct, llama-2-7b-chat: bundled.bare_base
                path, label, hub_name, origin, notes = _sibling(
                    bare[0], model, bare[1], f"{model} (as {bare[1]}) is not bundled")
            else:
                try:
                    where = hub.find_config(model, revision)
                except hub.GgufRepo:
                    return _hub_gguf_config(model, None, revision)
                except hub.HubUnreadable:  # offline, unreachable, gated without a token: no answer
                    base = bundled.base_of(model) if revision is None else None
                    if base is None:
                        raise
                    path, label, hub_name, origin, notes = _sibling(
                        base, model, model, f"{model}'s own config.json is not in the local cache "
                        "and the Hub is offline, unreachable or gated")
                else:
                    path, label, hub_name = where.path, where.name, where.name
                    origin = Origin(where.kind, str(path), where.repo_id, where.revision)
        else:
            path, label = found, bundled.label(found)
            origin = Origin("bundled", label)
    data = parse_file(path, label)
    meta_name = data.pop("name", None)
    source = data.pop("source", None)
    expected = data.pop("expected", None) or {}
    class_defaults = data.pop("class_defaults", False)  # a bundled file's mark: see bundled.py
    if not isinstance(class_defaults, bool):
        raise ConfigError(label, f"class_defaults must be true or false, got {_json(class_defaults)}")
    for key, value in (("name", meta_name), ("source", source)):
        if value is not None and not isinstance(value, str):
            raise ConfigError(label, f"{key} must be a string, got {_json(value)}")
        if isinstance(value, str) and len(value) > MAX_META_CHARS:
            raise ConfigError(
                label, f"{key} is {len(value):,} characters long; at most {MAX_META_CHARS:,}"
            )
    if not isinstance(expected, dict):
        raise ConfigError(label, "expected must be a mapping of figure names to values")
    name = hub_name or meta_name or data.get("_name_or_path") or _default_name(path)
    return RawConfig(path, label, data, str(name), source, expected, origin, notes)


def _sibling(base: Path, model: str, repo_id: str, why: str,
             ) -> tuple[Path, str, str, Origin, tuple[str, ...]]:
    """An instruction-tuned sibling read as its base's bundled config (``bundled.base_of``,
    ``bundled.bare_base``): the file, its label, the name as given, the origin and the note."""
    label = bundled.label(base)
    return base, label, model, Origin("sibling", label, repo_id), (
        f"{SIBLING_NOTE} {label}: {why}, and an instruction-tuned sibling has its base's "
        "architecture",)


def _hub_gguf_config(repo: str, selector: str | None, revision: str | None) -> RawConfig:
    """A GGUF file of a Hub repo, its header read by range requests (llmcalc.inputs.hub_gguf)."""
    from llmcalc.inputs import hub, hub_gguf

    header, label = hub_gguf.find_gguf(repo, selector, revision)
    rev = revision or hub.DEFAULT_REVISION
    return _gguf_raw(header, Path(label.split(":", 1)[1]), label,
                     Origin("hub", label, repo, rev), name=label)


def _gguf_config(path: Path, label: str, origin: Origin) -> RawConfig:
    """A GGUF file: the config its metadata describes, the weights as the file stores them."""
    from llmcalc.inputs import gguf_file

    return _gguf_raw(gguf_file.read_header(path, label), path, label, origin)


def pulled(model: str) -> Pulled | None:
    """The model Ollama pulled (llmcalc.inputs.ollama) that ``model`` names where
    :func:`read_config` reads one (no path, bundled name or model type by that name), else None."""
    from llmcalc.inputs import family_defaults, ollama

    path = Path(model).expanduser()
    if _is_dir(path) or _is_file(path) or bundled.find(model) is not None:
        return None
    return None if family_defaults.defaults(model.strip()) is not None else ollama.find(model)


def _ollama_config(pulled: Pulled) -> RawConfig:
    """A model Ollama pulled (llmcalc.inputs.ollama): its GGUF blob, read like a .gguf file."""
    from llmcalc.inputs import gguf_file

    label = str(pulled.blob)
    notes = () if pulled.projector_bytes is None else (
        f"{pulled.name} also holds a vision projector (a GGUF layer of its own, "
        f"{pulled.projector_bytes:,} bytes), not read: the figures are its language model's",)
    return _gguf_raw(gguf_file.read_header(pulled.blob, label), pulled.blob, label,
                     Origin("ollama", label), name=pulled.name,
                     what=f"Ollama model {pulled.name}: GGUF blob {pulled.blob.name}", notes=notes)


def _gguf_raw(header: Any, path: Path, label: str, origin: Origin, name: str | None = None, *,
              what: str | None = None, notes: tuple[str, ...] = ()) -> RawConfig:
    from llmcalc.inputs import gguf_model

    fields = gguf_model.config_fields(header)
    kind = header.file_type or ", ".join(header.bytes_by_type())
    source = f"{what or f'GGUF file {path.name}'} ({kind}; architecture {header.architecture})"
    return RawConfig(path, label, fields, name or gguf_model.name_of(header, path), source, {},
                     origin, notes)


def _family_default(model: str) -> RawConfig | None:
    """A supported model_type given as MODEL: its transformers class's default config."""
    from llmcalc.inputs import family_defaults

    fields = family_defaults.defaults(model.strip())
    if fields is None:
        return None
    name = f"{model.strip()} (transformers defaults)"
    return RawConfig(Path(name), name, fields, name, family_defaults.source(model.strip()), {})


def spec_from_raw(
    raw: RawConfig,
    *,
    overrides: Sequence[str] = (),
    family: str | None = None,
    trust_remote_code: bool = False,
) -> ModelSpec:
    """Validate ``raw`` for its family and describe it as named tensors; a model_type without a
    family is measured on transformers' model instead (:mod:`llmcalc.verify.measured`)."""
    fields = dict(raw.fields)
    notes: list[str] = list(raw.notes)
    fam, model_type, fields = _pick_family(raw.label, fields, family, notes)
    # custom code (auto_map), or a text model inside a type llmcalc does not list: keys no class
    # declares may size tensors this count has not
    outer = "auto_map" in raw.fields
    fields = apply_overrides(fields, overrides, fam)
    if overrides:
        notes.append("changed with --set: " + ", ".join(overrides))
    if fam is None:
        from llmcalc.verify import measured  # torch/transformers only for a model without a formula

        return measured.measure(
            label=raw.label,
            name=raw.name,
            model_type=model_type,
            fields=fields,
            notes=notes,
            source=f"{raw.source} (before --set)" if overrides and raw.source else raw.source,
            origin=raw.origin,
            trust_remote_code=trust_remote_code,
        )
    if family is None and (outer or "auto_map" in fields):
        _name_unmodelled(fields, model_type, fam, notes)
    from llmcalc.inputs import family_defaults

    # config keys read through the class's attribute_map (the one place aliases are resolved)
    # a field the family reads under the alias's own name alone knows what transformers derives
    # before the alias lands (Zamba 2's layer_types); one read under several names does not
    own = {n for n, info in fam.config.model_fields.items() if info.validation_alias is None}
    named = family_defaults.dealiased(fields, model_type, keep=own)
    read, filled = with_declared_defaults(named, model_type, fam)
    try:
        cfg = fam.config.read(read)
        arch = _one_element_heads(model_type, named, fam.describe(cfg))
    except ValidationError as e:
        raise _blame(raw.label, _validation_message(e), overrides) from None
    except FieldError as e:
        raise _blame(raw.label, str(e), overrides) from None
    defaulted = cfg.defaulted(filled)
    if defaulted:
        notes.append(f"not in config, {fam.config.transformers_class} default: " + ", ".join(defaulted))
    return _stored_parameters_note(ModelSpec(
        name=raw.name,
        model_type=model_type,
        family=fam.module,
        shape=arch.shape,
        tensors=arch.tensors,
        layer_groups=arch.layer_groups,
        moe=arch.moe,
        # A config changed with --set is no longer the published one its source and expected describe.
        source=f"{raw.source} (before --set)" if overrides and raw.source else raw.source,
        notes=(*notes, *arch.notes),
        unbuilt=arch.unbuilt,
        depth_flops_per_token=arch.depth_flops_per_token,
        depth_flops_what=arch.depth_flops_what,
        cache_bytes_per_token=arch.cache_bytes_per_token,
        forward_unmodelled=arch.forward_unmodelled,
        prefix_tokens=arch.prefix_tokens,
        sequence_flops=arch.sequence_flops,
        sparse_what=arch.sparse_what,
        expected={} if overrides else raw.expected,
        config=fields,
        origin=raw.origin,
        parts=arch.parts,
        main_part=arch.main_part,
    ))


def _one_element_heads(model_type: str, given: Mapping[str, Any], arch: Any) -> Any:
    """Attention heads of one element as transformers runs them (``ONE_ELEMENT_HEAD_QK``): where
    the rotary step widens them (transformers ``apply_rotary_pos_emb``,
    models/llama/modeling_llama.py: inv_freq over arange(0, 1, 2) is one frequency, cos and sin 2
    wide, and q·cos + rotate_half(q)·sin broadcasts a 1-wide query and key to 2) the scores cost
    2·h·2 per query–key pair and the cache keeps keys of 2 elements beside values of 1. A type
    not in the table is refused for FLOPs and memory at head_dim 1 (the count stands): rotary
    steps differ (a stacked interleave transformers cannot run, a partial rotary of no dimension)
    and whether a config rotates is not always in its fields; a config that sets its own rotary
    part (ROTARY_FIELDS) is refused too, as the widths were measured with the class's."""
    one = [g for g in arch.layer_groups if g.attention is not None and g.attention.qk_head_dim < 2]
    if not one:
        return arch
    from dataclasses import replace

    qk = ONE_ELEMENT_HEAD_QK.get(model_type)
    text = given.get("text_config")
    own = [k for fields in (given, text if isinstance(text, Mapping) else {}) for k in ROTARY_FIELDS
           if fields.get(k) is not None]
    if qk is None or own or any(g.attention.qk_head_dim != 1 for g in one):
        return replace(arch, forward_unmodelled=arch.forward_unmodelled or (
            f"head_dim {one[0].attention.qk_head_dim}: transformers' rotary step broadcasts a "
            "one-element head against its cos/sin table (to 2 elements, to none, or not at all), "
            "held to a measured forward for some types only"))
    if qk == 1:
        return arch
    groups = tuple(replace(g, attention=replace(g.attention, qk_head_dim=qk)) if g in one else g
                   for g in arch.layer_groups)
    return replace(arch, layer_groups=groups)


def _stored_parameters_note(spec: ModelSpec) -> ModelSpec:
    """A GGUF file's description held to its tensor table: a difference is said in a note."""
    q = spec.config.get("quantization_config")
    if not isinstance(q, Mapping) or q.get("quant_method") != "gguf":
        return spec
    from dataclasses import replace

    from llmcalc.formulas.memory import weight_elements
    from llmcalc.inputs import gguf_model

    note = gguf_model.parameter_note(q, weight_elements(spec))
    return replace(spec, notes=(*spec.notes, note)) if note else spec


def with_declared_defaults(
    fields: dict[str, Any], model_type: str, fam: Family
) -> tuple[dict[str, Any], set[str]]:
    """``fields`` with each field the family reads and the config leaves out set to its declared
    default in ``model_type``'s transformers class (:mod:`llmcalc.inputs.family_defaults`, the one home of
    class defaults), and the names of the family fields so filled. A field declared None stays out:
    the family derives it by its class's rule. Sub-configs (``…_config``) are left to the family."""
    from llmcalc.inputs import family_defaults

    declared = family_defaults.sub_defaults(model_type) or {}
    out, filled = dict(fields), set()
    for name, info in fam.config.model_fields.items():
        alias = info.validation_alias
        names = [c for c in getattr(alias, "choices", ()) if isinstance(c, str)]
        names = [alias] if isinstance(alias, str) else names or [name]
        if any(n in fields for n in names):
            continue
        for n in names:
            if n in declared and not n.endswith("_config"):
                out[n] = declared[n]
                filled.add(name)
                break
    return out, filled


def _pick_family(
    label: str, fields: dict[str, Any], family: str | None, notes: list[str]
) -> tuple[Family | None, str, dict[str, Any]]:
    """The family that describes ``fields``; None for a model_type without one (to be measured)."""
    model_type = fields.get("model_type")
    if model_type is not None and not isinstance(model_type, str):
        raise ConfigError(label, f"model_type must be a string, got {_json(model_type)}")
    text = fields.get("text_config")
    # a causal LM of its own that llmcalc does not count (Gemma 4's assistants: a text model and
    # more) is measured, never counted as its text_config alone
    from llmcalc.families.not_counted import NOT_COUNTED

    if model_type not in MODEL_TYPES and model_type not in NOT_COUNTED and isinstance(text, dict):
        inner = text.get("model_type")
        read_as = TEXT_TYPE_REWRITES.get((str(model_type), str(inner)))
        if read_as is not None:
            text = {**text, "model_type": read_as}
            inner = f"{read_as}: its model_type {inner!r} read so, as transformers reads it"
        if isinstance(inner, str) and text["model_type"] in MODEL_TYPES:
            notes.append(f"multimodal {model_type}: counted its text model ({inner}) only")
            model_type, fields = text["model_type"], dict(text)
    if family is not None:
        if family not in MODEL_TYPES:
            raise UsageError(f"--family {family}: unknown family; supported: {_supported(family)}")
        if model_type != family:
            notes.append(f"counted as {family} (--family); model_type is {model_type!r}")
            _check_family_fits(fields, family, MODEL_TYPES[family], notes)
        return MODEL_TYPES[family], family, fields
    if model_type is None:
        raise ConfigError(label, f"missing required field model_type ({_supported()})")
    if model_type not in MODEL_TYPES:
        return None, model_type, fields
    return MODEL_TYPES[model_type], model_type, fields


# A composite's text_config model_type that transformers' class rewrites before it builds the model:
# Kimi_K25Config.__post_init__ reads Moonshot's remote "kimi_k2" as deepseek_v3.
TEXT_TYPE_REWRITES = {("kimi_k25", "kimi_k2"): "deepseek_v3"}


# Fields that change the tensors when a family does not read them: --family refuses for these …
COUNT_CHANGING = re.compile(
    r"^(num_(local_|routed_)?experts|n_routed_experts|moe_num_experts|num_experts_per_tok|"
    r"layers_block_type|hybrid_override_pattern|block_types|attn_layer_(period|offset)|"
    r"expert_layer_(period|offset)|mamba_.*|ssm_.*|linear_.*heads?)$"
)
# … and layer types that are not attention (Mamba, linear attention, convolution …).
ATTENTION_LAYER_TYPES = ("full_attention", "sliding_attention", "attention", "global", "local")
# … and warns, naming them, for these size-like ones.
SIZE_LIKE = re.compile(
    r"(^num_|^n_|_size$|_dim$|_dims$|hidden|experts|heads|layers|rank|_ratio$|_types$)"
)


def _check_family_fits(fields: Mapping[str, Any], family: str, fam: Family, notes: list[str]) -> None:
    """``--family`` must not give a silently wrong total: refuse when an unread field clearly
    changes the count (experts, hybrid layer types), name the other unread size-like fields."""
    read = _field_names(fam)
    unread = [k for k in fields if k not in read and k not in META_KEYS]
    changing = [k for k in unread if COUNT_CHANGING.match(k) and fields[k] not in (None, 0, 1, [], "")]
    kinds = fields.get("layer_types")
    if "layer_types" not in read and isinstance(kinds, list):
        other = sorted({str(t) for t in kinds if t not in ATTENTION_LAYER_TYPES})
        if other:
            changing.append(f"layer_types ({', '.join(other)})")
    if changing:
        raise UsageError(
            f"--family {family}: the config has {', '.join(changing)}, which {family} does not "
            f"read and which change the count; leave out --family to measure it with transformers"
        )
    _name_unmodelled(fields, None, fam, notes)


# … and switches that may add tensors when on (Kimi-K3's mla_use_output_gate, latent_moe_use_norm).
SWITCH_LIKE = re.compile(r"(^|_)use_.*(norm|gate|bias|proj)")
# The keys every transformers config has (PretrainedConfig's own, for generation and heads): they
# size no tensor of the base model, whatever their names say.
GENERIC_KEYS = frozenset({
    "chunk_size_feed_forward", "num_beams", "num_beam_groups", "num_return_sequences", "num_labels",
    "output_hidden_states", "max_length", "min_length", "no_repeat_ngram_size",
    "encoder_no_repeat_ngram_size", "output_attentions", "return_dict", "torchscript", "dtype",
    "torch_dtype", "architectures", "auto_map", "transformers_version", "model_type",
    "quantization_config", "rope_scaling", "rope_parameters", "id2label", "label2id",
})
# the note a repo id read as its base model's bundled config carries (bundled.base_of): every
# command says it on stderr
SIBLING_NOTE = "read as the bundled config of its base model"
UNMODELLED_NOTE = "fields this count does not model: "
# Notes that say a figure rests on something assumed, left unmodelled or taken by default: what
# ``--strict`` refuses (the CLI's :func:`llmcalc.cli._common.refuse_assumed`).
ASSUMED = re.compile(
    r"^(fields this count does not model: |not in config, |--family |counted as |"
    r"experts found but no experts-per-token field|" + re.escape(SIBLING_NOTE) + r")|not modell|\bassum"
)


def is_assumed(note: str) -> bool:
    """Whether ``note`` says a figure rests on an assumption (see :data:`ASSUMED`). A class
    default taken for a missing switch (``tie_word_embeddings``) is what transformers takes too
    when it loads the file; one taken for a size (``hidden_size``) means the file does not say
    what model it is."""
    if note.startswith("not in config, "):
        names = [part.split("=")[0].strip() for part in note.split(": ", 1)[1].split(", ")]
        return any(SIZE_LIKE.search(name) for name in names)
    return ASSUMED.search(note) is not None


def unmodelled(fields: Mapping[str, Any], model_type: str | None, fam: Family) -> list[str]:
    """The size-like keys of ``fields`` (``*_size``, ``*_dim``, ``*hidden*``, ``*experts*``,
    ``*heads*``, ``*layers*``, ``*rank*``, ``*_ratio``, ``num_*`` …, and sub-configs) that neither
    the family reads nor ``model_type``'s transformers class declares or maps (attribute_map): keys of
    custom code, or of another type under ``--family``, that may size tensors this count has not."""
    from llmcalc.inputs import family_defaults

    known = _field_names(fam) | set(META_KEYS) | GENERIC_KEYS
    if model_type is not None:
        known |= set(family_defaults.sub_defaults(model_type) or {})
        known |= family_defaults.declared_names(model_type)
    # a key repeated in a sub-config is the old flat copy of it (Qwen2-VL's text fields)
    known |= {n for v in fields.values() if isinstance(v, dict) for n in v}
    return [k for k in fields if k not in known and not _off(fields[k])
            and (SIZE_LIKE.search(k) or SWITCH_LIKE.search(k)
                 or (isinstance(fields[k], dict) and not k.endswith("_map")))]


def _off(value: Any) -> bool:
    """A value that adds nothing whatever the key: unset, false, empty, or a count of 0 or 1."""
    if value is None or value is False or value in ("", [], {}):
        return True
    return type(value) is int and value in (0, 1)


def _name_unmodelled(
    fields: Mapping[str, Any], model_type: str | None, fam: Family, notes: list[str]
) -> None:
    """The one line naming :func:`unmodelled` keys, as a note (stderr and the JSON notes)."""
    names = unmodelled(fields, model_type, fam)
    if names:
        notes.append(UNMODELLED_NOTE + ", ".join(names))


def _blame(label: str, message: str, overrides: Sequence[str]) -> Exception:
    """A field's error names the ``--set`` that gave the field its value, else the file."""
    for item in reversed(overrides):  # the last --set of a key is the one that holds
        key = item.partition("=")[0].strip()
        if key and any(message.startswith(k) and message[len(k):len(k) + 1] in (" ", ":", ".", ",")
                       for k in (key, key.split(".")[-1])):
            return UsageError(f"--set {item}: {message}")
    return ConfigError(label, message)


def apply_overrides(
    fields: dict[str, Any], overrides: Sequence[str], fam: Family | None
) -> dict[str, Any]:
    """``--set key=value`` (value read as YAML: 48, true, null); dotted keys reach nested mappings.
    Without a family (a measured model) only the config's own fields can be set."""
    out = dict(fields)
    known = set(fields) | (_field_names(fam) if fam is not None else set())
    # the config class's declared defaults (GPT-2's attn_pdrop, left out of its config.json) are
    # its fields too: the dropout refusals ask for them to be set to 0 with --set
    from llmcalc.inputs.family_defaults import defaults

    known |= set(defaults(str(fields.get("model_type"))) or {})
    for item in overrides:
        key, sep, text = item.partition("=")
        key = key.strip()
        if not sep or not key:
            raise UsageError(f"--set {item}: expected key=value, e.g. --set num_hidden_layers=48")
        if len(text) > MAX_SET_CHARS:
            raise UsageError(
                f"--set {key}: the value is {len(text):,} characters; at most {MAX_SET_CHARS:,}"
            )
        try:  # the file loader's YAML (C where built) and caps
            value = yaml.load(text, Loader=_Loader) if text.strip() else None  # noqa: S506
            _check_shape(value, f"--set {key}", "the value")
        except (yaml.YAMLError, RecursionError, ValueError):
            raise UsageError(f"--set {item}: cannot read the value {shown(text)}") from None
        except ConfigError as e:
            raise UsageError(str(e)) from None
        head, *rest = key.split(".")
        if head not in known:
            import difflib  # only to suggest a name: not on the path of a good call
            close = difflib.get_close_matches(head, sorted(known), n=1)
            hint = f" (did you mean {close[0]}?)" if close else ""
            kind = fam.module if fam is not None else str(fields.get("model_type"))
            raise UsageError(f"--set {key}: not a field of this {kind} config{hint}")
        target = out
        for part in [head, *rest][:-1]:
            nested = target.get(part)
            if nested is None:  # a sub-config left out for the class defaults: start it empty
                nested = {}
            if not isinstance(nested, dict):
                raise UsageError(f"--set {key}: {part} is not a mapping in this config")
            target[part] = nested = dict(nested)
            target = nested
        target[[head, *rest][-1]] = value
    return out


def _field_names(fam: Family) -> set[str]:
    names: set[str] = set()
    for name, info in fam.config.model_fields.items():
        names.add(name)
        alias = info.validation_alias
        choices = getattr(alias, "choices", None)
        if choices:
            names.update(c for c in choices if isinstance(c, str))
    return names


def _supported(near: str | None = None) -> str:
    """The supported types in a few words (all of them no longer fit one line): the ones closest
    to ``near``, or a few well-known ones, and where the whole list is."""
    import difflib

    close = difflib.get_close_matches(near, list(MODEL_TYPES), n=5) if near else []
    named = ", ".join(close or ["llama", "mistral", "qwen2", "gpt2", "t5"])
    lead = "closest" if close else "e.g."
    return (f"{len(MODEL_TYPES)} model types, {lead} {named}; the README's "
            "\"Supported model types\" lists them all")


def _default_name(path: Path) -> str:
    return path.parent.name if path.name == "config.json" else path.stem
