"""Reading a config file: capped in size before it is read whole, then strict JSON (unique keys,
bounded digits and nesting) or safe YAML (no Python objects, no duplicate keys, aliases bounded when
expanded). A leaf below everything that reads a file: configs, checkpoint indexes, the web page.
Every failure is a :class:`ConfigError` naming the file.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import yaml

from llmcalc.errors import ConfigError
from llmcalc.limits import (
    MAX_CONFIG_BYTES,
    MAX_EXPANDED,
    MAX_LIST_ITEMS,
    MAX_NESTING,
    MiB,
    longest_list,
    nesting_and_size,
    shown,
)

YAML_SUFFIXES = (".yaml", ".yml")


def is_dir(path: Path) -> bool:
    try:
        return path.is_dir()
    except OSError:  # a name too long for the file system, a loop of links …
        return False


def is_file(path: Path) -> bool:
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
    check_shape(data, label, "JSON")
    return data


def check_shape(data: Any, label: str, kind: str) -> None:
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
    check_shape(data, label, "YAML")
    return data


def _kind_of(value: Any) -> str:
    names = {list: "a list", str: "a string", int: "a number", float: "a number", bool: "a boolean"}
    return "null" if value is None else names.get(type(value), type(value).__name__)
