"""From what a user types to a :class:`ModelSpec`: find the file, parse it, validate it, describe it.

Accepted sources, tried in this order: a ``config.json``, a checkpoint folder holding one, or a YAML
file with the same keys (plus optional ``name``, ``source`` and ``expected``); the name of a bundled
config; a Hugging Face repo id (``org/name``), from the local cache or the Hub (:mod:`llmcalc.hub`,
imported only then). Every failure is a :class:`ConfigError` naming the file and the field, or a
:class:`HubError`.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml
from pydantic import ValidationError

from llmcalc import bundled
from llmcalc.errors import ConfigError, UsageError
from llmcalc.families import MODEL_TYPES, Family, FieldError
from llmcalc.limits import (
    MAX_CONFIG_BYTES,
    MAX_EXPANDED,
    MAX_LIST_ITEMS,
    MAX_META_CHARS,
    MAX_MODEL_ARG,
    MAX_NESTING,
    MAX_SHOWN,
    MiB,
    longest_list,
    nesting_and_size,
    shown,
)
from llmcalc.spec import ModelSpec, Origin

META_KEYS = ("name", "source", "expected")
YAML_SUFFIXES = (".yaml", ".yml")


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


def load_spec(
    model: str,
    *,
    overrides: Sequence[str] = (),
    family: str | None = None,
    revision: str | None = None,
    trust_remote_code: bool = False,
) -> ModelSpec:
    """Resolve ``model`` (path, folder, bundled name or Hugging Face repo id at ``revision``), apply
    ``--set`` overrides, describe it (by its family's formula, else measured: :mod:`llmcalc.measured`)."""
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


def read_config(model: str, *, revision: str | None = None) -> RawConfig:
    """Find and parse the config behind ``model`` (no validation of its fields yet).

    A path first, then a bundled name, then a repo id in the local Hugging Face cache or on the Hub.
    ``revision`` (a branch, tag or commit) asks for a repo id at that revision, skipping bundled names.
    """
    if len(model) > MAX_MODEL_ARG:
        raise UsageError(
            f"model {shown(model[:40])}: {len(model):,} characters; names and paths are read up "
            f"to {MAX_MODEL_ARG:,}"
        )
    if "\x00" in model:
        raise UsageError(f"model {shown(model)}: contains a NUL character")
    path = Path(model).expanduser()
    hub_name: str | None = None
    if revision is not None and (_is_dir(path) or _is_file(path)):
        raise UsageError(f"--revision {revision}: only for a Hugging Face repo id, not a path")
    if _is_dir(path):
        folder = path
        path = folder / "config.json"
        if not _is_file(path):
            raise ConfigError(str(folder), "folder has no config.json")
        from llmcalc.safetensors_index import within

        if not within(path, folder):
            raise ConfigError(str(path), "links to a file outside the folder")
        label = str(path)
        origin = Origin("path", str(path))
    elif _is_file(path):
        label = model
        origin = Origin("path", str(path))
    else:
        found = bundled.find(model) if revision is None else None
        if found is None and revision is None and (raw := _family_default(model)) is not None:
            return raw
        if found is None:
            if path.suffix in (".json", *YAML_SUFFIXES) or model.startswith((".", "/", "~")):
                raise ConfigError(model, "no such file")
            from llmcalc import hub  # huggingface_hub only for names that need it

            if not hub.looks_like_repo_id(model):
                if revision is not None:
                    raise UsageError(f"--revision {revision}: only for a Hugging Face repo id (org/name)")
                bundled.raise_unknown(model)
            where = hub.find_config(model, revision)
            path, label, hub_name = where.path, where.name, where.name
            origin = Origin(where.kind, str(path), where.repo_id, where.revision)
        else:
            path, label = found, bundled.label(found)
            origin = Origin("bundled", label)
    data = parse_file(path, label)
    meta_name = data.pop("name", None)
    source = data.pop("source", None)
    expected = data.pop("expected", None) or {}
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
    return RawConfig(path, label, data, str(name), source, expected, origin)


def _family_default(model: str) -> RawConfig | None:
    """A supported model_type given as MODEL: its transformers class's default config."""
    from llmcalc import family_defaults

    fields = family_defaults.defaults(model.strip())
    if fields is None:
        return None
    name = f"{model.strip()} (transformers defaults)"
    return RawConfig(Path(name), name, fields, name, family_defaults.source(model.strip()), {})


def _is_dir(path: Path) -> bool:
    try:
        return path.is_dir()
    except OSError:  # a name too long for the file system, a loop of links …
        return False


def _is_file(path: Path) -> bool:
    try:
        return path.is_file()
    except OSError:
        return False


def read_text(path: Path, label: str, *, limit: int = MAX_CONFIG_BYTES) -> str:
    """A text file of at most ``limit`` bytes (the cap is checked before it is read whole)."""
    try:
        with path.open("rb") as f:
            raw = f.read(limit + 1)
    except OSError as e:
        raise ConfigError(label, f"cannot read file ({e.strerror})") from None
    if len(raw) > limit:
        raise ConfigError(label, f"file is larger than {limit // MiB} MiB, the most llmcalc reads")
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError:
        raise ConfigError(label, "file is not UTF-8 text") from None


def parse_json(text: str, label: str) -> Any:
    """JSON with unique keys, integers of up to 4,300 digits and bounded nesting."""
    try:
        data = json.loads(text, object_pairs_hook=_unique_keys)
    except _DuplicateKey as e:
        raise ConfigError(
            label, f"duplicate key {shown(e.key)} in JSON (which value is meant?)"
        ) from None
    except json.JSONDecodeError as e:
        raise ConfigError(
            label, f"invalid JSON at line {e.lineno}, column {e.colno}: {e.msg}"
        ) from None
    except RecursionError:
        raise ConfigError(label, f"JSON nests more than {MAX_NESTING} levels deep") from None
    except ValueError:  # int() of more than 4,300 digits (sys.get_int_max_str_digits)
        raise ConfigError(label, "invalid JSON: a number has more than 4,300 digits") from None
    _check_shape(data, label, "JSON")
    return data


def _check_shape(data: Any, label: str, kind: str) -> None:
    depth, size = nesting_and_size(data)
    if depth > MAX_NESTING:
        raise ConfigError(label, f"{kind} nests more than {MAX_NESTING} levels deep")
    if size > MAX_EXPANDED:
        raise ConfigError(
            label,
            f"{kind} expands to more than {MAX_EXPANDED:,} values and characters "
            "(aliases repeating aliases?)",
        )
    if longest_list(data) > MAX_LIST_ITEMS:
        raise ConfigError(label, f"{kind} has a list of more than {MAX_LIST_ITEMS:,} entries")


def parse_file(path: Path, label: str) -> dict[str, Any]:
    """JSON or YAML (by suffix) into a mapping; safe YAML only."""
    text = read_text(path, label)
    if not text.strip():
        raise ConfigError(label, "file is empty")
    if path.suffix in YAML_SUFFIXES:
        data = _parse_yaml(text, label)
        kind = "YAML"
    else:
        data = parse_json(text, label)
        kind = "JSON"
    if not isinstance(data, dict):
        raise ConfigError(
            label, f"expected a {kind} mapping of config fields, got {_kind_of(data)}"
        )
    return data


class _DuplicateKey(Exception):
    def __init__(self, key: str) -> None:
        self.key = key


def _unique_keys(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    """A JSON object whose keys are all different (json keeps the last of two silently)."""
    out: dict[str, Any] = {}
    for key, value in pairs:
        if key in out:
            raise _DuplicateKey(key)
        out[key] = value
    return out


class _Loader(getattr(yaml, "CSafeLoader", yaml.SafeLoader)):  # type: ignore[misc]
    """The safe YAML loader (no Python objects), refusing a key given twice in one mapping and a
    key that is a list or mapping. Merge keys (``<<: *base``) are YAML and work: a key given in the
    mapping itself overrides a merged one, as the merge-key spec says."""

    def construct_mapping(self, node: Any, deep: bool = False) -> Any:
        seen = set()
        for key_node, _ in node.value:
            if key_node.tag == "tag:yaml.org,2002:merge":
                continue
            key = self.construct_object(key_node, deep=deep)
            try:
                hash(key)
            except TypeError:
                raise _BadYAMLKey("a mapping key must be a string or number, not a list or mapping",
                                  key_node.start_mark) from None
            if key in seen:
                raise _BadYAMLKey(f"duplicate key {shown(key)}", key_node.start_mark)
            seen.add(key)
        return super().construct_mapping(node, deep)


class _BadYAMLKey(yaml.MarkedYAMLError):
    def __init__(self, problem: str, mark: Any) -> None:
        super().__init__(problem=problem, problem_mark=mark)


def _parse_yaml(text: str, label: str) -> Any:
    try:
        data = yaml.load(text, Loader=_Loader)  # noqa: S506 - a safe loader, never constructs objects
    except yaml.MarkedYAMLError as e:
        mark = e.problem_mark or e.context_mark
        where = f" at line {mark.line + 1}, column {mark.column + 1}" if mark else ""
        problem = (e.problem or e.context or "parse error").strip()
        if isinstance(e, yaml.constructor.ConstructorError) and not isinstance(e, _BadYAMLKey):
            problem = "tags that construct Python objects are not allowed"
        raise ConfigError(label, f"invalid YAML{where}: {problem}") from None
    except yaml.YAMLError as e:  # the reader's errors span two lines: keep them to one
        raise ConfigError(label, "invalid YAML: " + " ".join(str(e).split())) from None
    except RecursionError:
        raise ConfigError(label, f"YAML nests more than {MAX_NESTING} levels deep") from None
    except ValueError:  # int() of more than 4,300 digits (sys.get_int_max_str_digits)
        raise ConfigError(label, "invalid YAML: a number has more than 4,300 digits") from None
    _check_shape(data, label, "YAML")
    return data


def spec_from_raw(
    raw: RawConfig,
    *,
    overrides: Sequence[str] = (),
    family: str | None = None,
    trust_remote_code: bool = False,
) -> ModelSpec:
    """Validate ``raw`` for its family and describe it as named tensors; a model_type without a
    family is measured on transformers' model instead (:mod:`llmcalc.measured`)."""
    fields = dict(raw.fields)
    notes: list[str] = []
    fam, model_type, fields = _pick_family(raw.label, fields, family, notes)
    fields = apply_overrides(fields, overrides, fam)
    if overrides:
        notes.append("changed with --set: " + ", ".join(overrides))
    if fam is None:
        from llmcalc import measured  # torch/transformers only for a model without a formula

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
    read, filled = with_declared_defaults(fields, model_type, fam)
    try:
        cfg = fam.config.read(read)
        arch = fam.describe(cfg)
    except ValidationError as e:
        raise ConfigError(raw.label, _validation_message(e)) from None
    except FieldError as e:
        raise ConfigError(raw.label, str(e)) from None
    defaulted = cfg.defaulted(filled)
    if defaulted:
        notes.append(f"not in config, {fam.config.transformers_class} default: " + ", ".join(defaulted))
    return ModelSpec(
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
        expected={} if overrides else raw.expected,
        config=fields,
        origin=raw.origin,
        parts=arch.parts,
        main_part=arch.main_part,
    )


def with_declared_defaults(
    fields: dict[str, Any], model_type: str, fam: Family
) -> tuple[dict[str, Any], set[str]]:
    """``fields`` with each field the family reads and the config leaves out set to its declared
    default in ``model_type``'s transformers class (:mod:`llmcalc.family_defaults`, the one home of
    class defaults), and the names of the family fields so filled. A field declared None stays out:
    the family derives it by its class's rule. Sub-configs (``…_config``) are left to the family."""
    from llmcalc import family_defaults

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
        if isinstance(inner, str) and inner in MODEL_TYPES:
            notes.append(f"multimodal {model_type}: counted its text model ({inner}) only")
            model_type, fields = inner, dict(text)
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


# Fields that change the tensors when a family does not read them: --family refuses for these …
COUNT_CHANGING = re.compile(
    r"^(num_(local_|routed_)?experts|n_routed_experts|moe_num_experts|num_experts_per_tok|"
    r"layers_block_type|hybrid_override_pattern|block_types|attn_layer_(period|offset)|"
    r"expert_layer_(period|offset)|mamba_.*|ssm_.*|linear_.*heads?)$"
)
# … and layer types that are not attention (Mamba, linear attention, convolution …).
ATTENTION_LAYER_TYPES = ("full_attention", "sliding_attention", "attention", "global", "local")
# … and warns, naming them, for these size-like ones.
SIZE_LIKE = re.compile(r"(^num_|^n_|_size$|_dim$|_dims$|_layers$|_heads$|_rank$|experts|_types$)")


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
    sized = [k for k in unread if SIZE_LIKE.search(k) or isinstance(fields[k], dict)]
    if sized:
        notes.append(f"--family {family} does not read: {', '.join(sized)} (check the total)")


def apply_overrides(
    fields: dict[str, Any], overrides: Sequence[str], fam: Family | None
) -> dict[str, Any]:
    """``--set key=value`` (value read as YAML: 48, true, null); dotted keys reach nested mappings.
    Without a family (a measured model) only the config's own fields can be set."""
    out = dict(fields)
    known = set(fields) | (_field_names(fam) if fam is not None else set())
    for item in overrides:
        key, sep, text = item.partition("=")
        key = key.strip()
        if not sep or not key:
            raise UsageError(f"--set {item}: expected key=value, e.g. --set num_hidden_layers=48")
        try:
            value = yaml.safe_load(text) if text.strip() else None
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


# pydantic error type → the message a person reads ({field}, {value} filled in)
VALIDATION_MESSAGES = {
    "missing": "missing required field {field}",
    "int_type": "{field} must be an integer, got {value}",
    "int_from_float": "{field} must be an integer, got {value}",
    "int_parsing": "{field} must be an integer, got {value}",
    "greater_than": "{field} must be a positive integer, got {value}",
    "greater_than_equal": "{field} must be zero or more, got {value}",
    "less_than_equal": "{field} must be at most 2^53 - 1 (9,007,199,254,740,991), got {value}",
    "bool_type": "{field} must be true or false, got {value}",
    "bool_parsing": "{field} must be true or false, got {value}",
    "float_type": "{field} must be a number, got {value}",
    "float_parsing": "{field} must be a number, got {value}",
    "string_type": "{field} must be a string, got {value}",
    "list_type": "{field} must be a list, got {value}",
    "dict_type": "{field} must be a mapping, got {value}",
}


def _validation_message(e: ValidationError) -> str:
    errors = e.errors()
    first = errors[0]
    field = ".".join(str(p) for p in first["loc"]) or "config"
    template = VALIDATION_MESSAGES.get(first["type"], "{field}: " + first["msg"])
    msg = template.format(field=field, value=_json(first.get("input")))
    if len(errors) > 1:
        msg += f" (and {len(errors) - 1} more)"
    return msg


def _supported(near: str | None = None) -> str:
    """The supported types in a few words (all of them no longer fit one line): the ones closest
    to ``near``, or a few well-known ones, and where the whole list is."""
    import difflib

    close = difflib.get_close_matches(near, list(MODEL_TYPES), n=5) if near else []
    named = ", ".join(close or ["llama", "mistral", "qwen2", "gpt2", "t5"])
    lead = "closest" if close else "e.g."
    return (f"{len(MODEL_TYPES)} model types, {lead} {named}; the README's "
            "\"Supported model types\" lists them all")


def _json(value: Any) -> str:
    """A value from a config as a message quotes it: JSON-like, escaped, cut short."""
    if isinstance(value, str):
        text = json.dumps(value[:MAX_SHOWN])  # control characters come out as \u001b
        return text if len(value) <= MAX_SHOWN else text[:-1] + '…"'
    if isinstance(value, bool) or value is None or isinstance(value, float):
        return json.dumps(value)
    return shown(value)


def _kind_of(value: Any) -> str:
    names = {list: "a list", str: "a string", int: "a number", float: "a number", bool: "a boolean"}
    return "null" if value is None else names.get(type(value), type(value).__name__)


def _default_name(path: Path) -> str:
    return path.parent.name if path.name == "config.json" else path.stem
