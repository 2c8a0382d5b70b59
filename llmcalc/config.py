"""From what a user types to a :class:`ModelSpec`: find the file, parse it, validate it, describe it.

Accepted sources: a ``config.json``, a checkpoint folder holding one, a YAML file with the same keys
(plus optional ``name``, ``source`` and ``expected``), or the name of a bundled config. Every failure
is a :class:`ConfigError` naming the file and the field.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml
from pydantic import ValidationError

from llmcalc import bundled
from llmcalc.errors import ConfigError, UsageError
from llmcalc.families import MODEL_TYPES, Family, FieldError
from llmcalc.spec import ModelSpec

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


def load_spec(
    model: str,
    *,
    overrides: Sequence[str] = (),
    family: str | None = None,
) -> ModelSpec:
    """Resolve ``model`` (path, folder or bundled name), apply ``--set`` overrides, describe it."""
    return spec_from_raw(read_config(model), overrides=overrides, family=family)


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


def read_config(model: str) -> RawConfig:
    """Find and parse the config behind ``model`` (no validation of its fields yet)."""
    path = Path(model).expanduser()
    if path.is_dir():
        folder = path
        path = folder / "config.json"
        if not path.is_file():
            raise ConfigError(str(folder), "folder has no config.json")
        label = str(path)
    elif path.is_file():
        label = model
    else:
        found = bundled.find(model)
        if found is None:
            if path.suffix in (".json", *YAML_SUFFIXES) or model.startswith((".", "/", "~")):
                raise ConfigError(model, "no such file")
            bundled.raise_unknown(model)
        path, label = found, bundled.label(found)
    data = parse_file(path, label)
    meta_name = data.pop("name", None)
    source = data.pop("source", None)
    expected = data.pop("expected", None) or {}
    if meta_name is not None and not isinstance(meta_name, str):
        raise ConfigError(label, f"name must be a string, got {_json(meta_name)}")
    if source is not None and not isinstance(source, str):
        raise ConfigError(label, f"source must be a string, got {_json(source)}")
    if not isinstance(expected, dict):
        raise ConfigError(label, "expected must be a mapping of figure names to values")
    name = meta_name or data.get("_name_or_path") or _default_name(path)
    return RawConfig(path, label, data, str(name), source, expected)


def parse_file(path: Path, label: str) -> dict[str, Any]:
    """JSON or YAML (by suffix) into a mapping; safe YAML only."""
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as e:
        raise ConfigError(label, f"cannot read file ({e.strerror})") from None
    except UnicodeDecodeError:
        raise ConfigError(label, "file is not UTF-8 text") from None
    if not text.strip():
        raise ConfigError(label, "file is empty")
    if path.suffix in YAML_SUFFIXES:
        data = _parse_yaml(text, label)
        kind = "YAML"
    else:
        try:
            data = json.loads(text, object_pairs_hook=_unique_keys)
        except _DuplicateKey as e:
            raise ConfigError(label, f"duplicate key {e.key!r} in JSON (which value is meant?)") from None
        except json.JSONDecodeError as e:
            raise ConfigError(
                label, f"invalid JSON at line {e.lineno}, column {e.colno}: {e.msg}"
            ) from None
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
    """The safe YAML loader (no Python objects), refusing a key given twice in one mapping."""

    def construct_mapping(self, node: Any, deep: bool = False) -> Any:
        seen = set()
        for key_node, _ in node.value:
            key = self.construct_object(key_node, deep=deep)
            if key in seen:
                raise _DuplicateYAMLKey(key, key_node.start_mark)
            seen.add(key)
        return super().construct_mapping(node, deep)


class _DuplicateYAMLKey(yaml.MarkedYAMLError):
    def __init__(self, key: Any, mark: Any) -> None:
        super().__init__(problem=f"duplicate key {key!r}", problem_mark=mark)


def _parse_yaml(text: str, label: str) -> Any:
    try:
        return yaml.load(text, Loader=_Loader)  # noqa: S506 - a safe loader, never constructs objects
    except yaml.MarkedYAMLError as e:
        mark = e.problem_mark or e.context_mark
        where = f" at line {mark.line + 1}, column {mark.column + 1}" if mark else ""
        problem = (e.problem or e.context or "parse error").strip()
        if isinstance(e, yaml.constructor.ConstructorError):
            problem = "tags that construct Python objects are not allowed"
        raise ConfigError(label, f"invalid YAML{where}: {problem}") from None
    except yaml.YAMLError as e:
        raise ConfigError(label, f"invalid YAML: {e}") from None


def spec_from_raw(
    raw: RawConfig, *, overrides: Sequence[str] = (), family: str | None = None
) -> ModelSpec:
    """Validate ``raw`` for its family and describe it as named tensors."""
    fields = dict(raw.fields)
    notes: list[str] = []
    fam, model_type, fields = _pick_family(raw.label, fields, family, notes)
    fields = apply_overrides(fields, overrides, fam)
    if overrides:
        notes.append("changed with --set: " + ", ".join(overrides))
    try:
        cfg = fam.config.read(fields)
        arch = fam.describe(cfg)
    except ValidationError as e:
        raise ConfigError(raw.label, _validation_message(e)) from None
    except FieldError as e:
        raise ConfigError(raw.label, str(e)) from None
    defaulted = cfg.defaulted()
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
        expected={} if overrides else raw.expected,
        config=fields,
    )


def _pick_family(
    label: str, fields: dict[str, Any], family: str | None, notes: list[str]
) -> tuple[Family, str, dict[str, Any]]:
    model_type = fields.get("model_type")
    if model_type is not None and not isinstance(model_type, str):
        raise ConfigError(label, f"model_type must be a string, got {_json(model_type)}")
    text = fields.get("text_config")
    if model_type not in MODEL_TYPES and isinstance(text, dict):
        inner = text.get("model_type")
        if isinstance(inner, str) and inner in MODEL_TYPES:
            notes.append(f"multimodal {model_type}: counted its text model ({inner}) only")
            model_type, fields = inner, dict(text)
    if family is not None:
        if family not in MODEL_TYPES:
            raise UsageError(f"--family {family}: unknown family; supported: {_supported()}")
        if model_type != family:
            notes.append(f"counted as {family} (--family); model_type is {model_type!r}")
        return MODEL_TYPES[family], family, fields
    if model_type is None:
        raise ConfigError(label, f"missing required field model_type (one of: {_supported()})")
    if model_type not in MODEL_TYPES:
        raise ConfigError(
            label,
            f"unknown model_type {model_type!r}; supported: {_supported()} "
            "(to count it as a known family, pass --family)",
        )
    return MODEL_TYPES[model_type], model_type, fields


def apply_overrides(
    fields: dict[str, Any], overrides: Sequence[str], fam: Family
) -> dict[str, Any]:
    """``--set key=value`` (value read as YAML: 48, true, null); dotted keys reach nested mappings."""
    out = dict(fields)
    known = set(fields) | _field_names(fam)
    for item in overrides:
        key, sep, text = item.partition("=")
        key = key.strip()
        if not sep or not key:
            raise UsageError(f"--set {item}: expected key=value, e.g. --set num_hidden_layers=48")
        try:
            value = yaml.safe_load(text) if text.strip() else None
        except yaml.YAMLError:
            raise UsageError(f"--set {item}: cannot read the value {text!r}") from None
        head, *rest = key.split(".")
        if head not in known:
            import difflib  # only to suggest a name: not on the path of a good call
            close = difflib.get_close_matches(head, sorted(known), n=1)
            hint = f" (did you mean {close[0]}?)" if close else ""
            raise UsageError(f"--set {key}: not a field of this {fam.module} config{hint}")
        target = out
        for part in [head, *rest][:-1]:
            nested = target.get(part)
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


def _supported() -> str:
    return ", ".join(sorted(MODEL_TYPES))


def _json(value: Any) -> str:
    try:
        return json.dumps(value)
    except (TypeError, ValueError):
        return repr(value)


def _kind_of(value: Any) -> str:
    names = {list: "a list", str: "a string", int: "a number", float: "a number", bool: "a boolean"}
    return "null" if value is None else names.get(type(value), type(value).__name__)


def _default_name(path: Path) -> str:
    return path.parent.name if path.name == "config.json" else path.stem
