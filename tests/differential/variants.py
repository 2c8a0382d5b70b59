"""Changed configs of every counted model type, for differential tests against transformers.

From each type's default config (the declared defaults of its transformers config class, sub-configs
included) the generator makes one-change variants: each integer size field set to a few other
values (one of them odd), each optional field left out (so that the class default or a derived
value applies), each nullable field set to null; each field the class's ``attribute_map`` names
or its modelling source reads with getattr that the default config leaves out set (a changed value,
its own, null); then a few combinations of those changes. The
order and the values chosen depend only on the type and ``seed``.

Imported by the count test beside it, by ``bench/differential.py`` and by other differential checks
(FLOPs, cache bytes): ``iter_variants``, ``Variant``, ``counted_types`` and ``default_config`` are
their interface. transformers is imported on the first call, never at import.
"""

from __future__ import annotations

import copy
import dataclasses
import json
import random
import re
from collections.abc import Iterator
from typing import Any

from llmcalc.families import MODEL_TYPES


@dataclasses.dataclass(frozen=True)
class Variant:
    """One changed config: ``label`` names it uniquely (``type/change``), ``config`` is the whole
    config dict (with ``model_type``), ``change`` says what differs from the type's default."""

    label: str
    config: dict[str, Any]
    change: str


# Integer fields that are no sizes: token ids and indices, seeds, generation settings
NOT_SIZES = re.compile(
    r"(_id$|_ids$|_index$|_idx$|^bos_|^eos_|^pad_|token|seed|^output_|^use_|^return_|"
    r"^pretraining_tp$|^tp_|^max_length|^min_length|^num_beams|^num_return|^no_repeat|"
    r"^decoder_start|^forced_|^_)"
)
# PreTrainedConfig's own fields (run-time switches, label maps): no part of a model's shape
BASE_FIELDS = frozenset({
    "architectures", "chunk_size_feed_forward", "dtype", "id2label", "is_encoder_decoder",
    "label2id", "output_hidden_states", "problem_type", "return_dict", "transformers_version",
    "output_attentions", "torchscript", "use_return_dict",
})
# Fields whose absence changes no tensor in any model (run-time settings, initialisation, norms'
# epsilons, token ids): not left out one by one
NO_SHAPE = re.compile(r"(dropout|_eps$|epsilon|initializer|_std$|^use_cache$|_id$|_ids$|_index$)")
VALUES_PER_SIZE = 2  # changed values tried for each size field
COMBINATIONS = 4  # variants that combine several changes
CHANGES_PER_COMBINATION = 3


def counted_types() -> list[str]:
    """Every model type llmcalc counts by formula (decoders, hybrids, whole models), sorted."""
    return sorted(MODEL_TYPES)


def default_config(model_type: str) -> dict[str, Any]:
    """transformers' default config of ``model_type`` as a plain dict: the declared defaults of its
    config class (fields whose default is None left out), each sub-config as its own dict with its
    ``model_type``."""
    from transformers import CONFIG_MAPPING

    return {"model_type": model_type, **_declared(CONFIG_MAPPING[model_type])}


def _declared(cls: Any, init_kwargs: dict[str, Any] | None = None) -> dict[str, Any]:
    out: dict[str, Any] = {}
    subs = dict(getattr(cls, "sub_configs_defaults", None) or {})
    for f in dataclasses.fields(cls):
        if f.name in BASE_FIELDS or f.name in subs or f.name.startswith("_"):
            continue
        if f.default is not dataclasses.MISSING:
            value = f.default
        elif f.default_factory is not dataclasses.MISSING:
            value = f.default_factory()
        else:
            continue
        value = _plain(value)
        if value is not None:
            out[f.name] = value
    for key, value in (init_kwargs or {}).items():
        if (plain := _plain(value)) is not None:
            out[key] = plain
    for key, spec in subs.items():
        if key == "backbone_config":
            continue
        sub_cls = spec.get_config_class(spec.model_type)
        out[key] = {"model_type": spec.model_type, **_declared(sub_cls, spec.init_kwargs)}
    return out


def _plain(value: Any) -> Any:
    """``value`` as JSON would hold it, or None for what JSON cannot (a class, a function)."""
    try:
        return json.loads(json.dumps(value))
    except (TypeError, ValueError):
        return None


def _nullable(model_type: str) -> dict[str, set[str]]:
    """Per config path ("" for the top, "text_config" …): the fields declared ``… | None`` whose
    default is not None."""
    from transformers import CONFIG_MAPPING

    out: dict[str, set[str]] = {}

    def walk(cls: Any, path: str) -> None:
        subs = dict(getattr(cls, "sub_configs_defaults", None) or {})
        names = set()
        for f in dataclasses.fields(cls):
            if f.name in BASE_FIELDS or f.name in subs:
                continue
            annotation = f.type if isinstance(f.type, str) else repr(f.type)
            if re.search(r"\bNone\b|Optional", annotation):
                names.add(f.name)
        out[path] = names
        for key, spec in subs.items():
            if key != "backbone_config":
                walk(spec.get_config_class(spec.model_type), f"{path}.{key}".lstrip("."))

    walk(CONFIG_MAPPING[model_type], "")
    return out


# ---- the changes -------------------------------------------------------------------------------

Change = tuple[str, str, Any]  # (dotted path, kind: "set" | "drop", value)
DROP = "drop"
SET = "set"


def _fields(config: dict[str, Any], prefix: str = "") -> Iterator[tuple[str, Any]]:
    """(dotted path, value) of every field, sub-configs walked into (model_type left alone)."""
    for key, value in config.items():
        if key == "model_type":
            continue
        path = f"{prefix}{key}"
        if isinstance(value, dict) and "model_type" in value:
            yield path, value
            yield from _fields(value, path + ".")
        else:
            yield path, value


def _size_values(value: int, rng: random.Random) -> list[int]:
    """A few other values for a size: double, half, an odd one near it, a small one."""
    odd = value + 1 if value % 2 == 0 else value + 2
    pool = {value * 2, value // 2, odd, 1, 3}
    pool.discard(value)
    if value == 0:  # a count that may be zero (shared experts, dense layers first)
        pool = {1, 2, 3}
    candidates = sorted(v for v in pool if v >= 0)
    picked = rng.sample(candidates, min(VALUES_PER_SIZE, len(candidates)))
    if not any(v % 2 for v in picked) and odd in candidates:
        picked[-1] = odd
    return sorted(picked)


def _classes(model_type: str) -> dict[str, Any]:
    """Per config path ("" for the top, "text_config" …): its transformers config class."""
    from transformers import CONFIG_MAPPING

    out: dict[str, Any] = {}

    def walk(cls: Any, path: str) -> None:
        out[path] = cls
        for key, spec in (getattr(cls, "sub_configs_defaults", None) or {}).items():
            if key != "backbone_config":
                walk(spec.get_config_class(spec.model_type), f"{path}.{key}".lstrip("."))

    walk(CONFIG_MAPPING[model_type], "")
    return out


# A read of a config field with a fallback in a modelling file: getattr(config, "head_dim", …),
# getattr(self.config, …), getattr(config.text_config, …), getattr(text_config, …)
GETATTR = re.compile(r"getattr\(\s*(?:self\.)?[A-Za-z_]*config[A-Za-z_.]*\s*,\s*[\"'](\w+)[\"']")


def _read_names(cls: Any) -> dict[str, list[str]]:
    """The fields the modelling source of ``cls``'s model type reads with getattr (a key a
    config.json may hold though the class does not declare it), each with the source text of its
    fallbacks."""
    import ast
    import importlib
    import inspect

    module = cls.__module__.replace(".configuration_", ".modeling_")
    try:
        source = inspect.getsource(importlib.import_module(module))
    except (ImportError, OSError, TypeError):
        return {}
    out: dict[str, list[str]] = {name: [] for name in GETATTR.findall(source)}
    for node in ast.walk(ast.parse(source)):
        if (isinstance(node, ast.Call) and isinstance(node.func, ast.Name)
                and node.func.id == "getattr" and len(node.args) == 3
                and isinstance(node.args[1], ast.Constant) and node.args[1].value in out):
            out[node.args[1].value].append(ast.unparse(node.args[2]))
    return out


def _fallback(built: Any, texts: list[str]) -> Any:
    """The first of a getattr's fallbacks that evaluates on the config object ``built``."""
    import types

    for text in texts:
        try:
            value = eval(text, {"config": built, "self": types.SimpleNamespace(config=built)})  # noqa: S307
        except Exception:  # noqa: BLE001,S112 - a fallback that reads the module's own locals
            continue
        if value is not None:  # getattr(config, "head_dim", None) or …: the next one
            return value
    return None


def _undeclared(model_type: str, base: dict[str, Any]) -> list[tuple[str, Any]]:
    """(dotted path, value) of each field a config class's attribute_map names, or its modelling
    source reads with getattr, or it declares with a None default, that the default config does
    not hold: the value transformers'
    config object gives it (an alias: the field it stands for), None where it has none."""
    out: list[tuple[str, Any]] = []
    for path, cls in _classes(model_type).items():
        sub = base
        for part in filter(None, path.split(".")):
            sub = sub.get(part) if isinstance(sub, dict) else None
        if not isinstance(sub, dict):
            continue
        try:
            built = cls(**{k: v for k, v in sub.items() if k != "model_type"})
        except Exception:  # noqa: BLE001 - a class its own defaults do not build: no object to read
            built = None
        aliases = dict(getattr(cls, "attribute_map", None) or {})
        reads = _read_names(cls)
        # declared fields whose default is None (left out of the default config: the class
        # derives them, and a saved config.json holds what it derived)
        derived = {f.name for f in dataclasses.fields(cls) if f.default is None}
        # and what its __post_init__ derives and sets beside them (a saved config.json holds it)
        declared = {f.name for f in dataclasses.fields(cls)}
        extra = {k for k in vars(built) if k not in declared} if built is not None else set()
        names = set(aliases) | set(aliases.values()) | set(reads) | derived | extra
        for name in sorted(names):
            if name in sub or name in BASE_FIELDS or name.startswith("_") or name.endswith("_config"):
                continue
            value = getattr(built, name, None) if built is not None else None
            if value is None and built is not None:
                value = _fallback(built, reads.get(name, []))
            if value is None and name == "head_dim" and built is not None:  # … or d // heads
                value = _fallback(built, ["config.hidden_size // config.num_attention_heads"])
            if isinstance(value, (int, float, str, list)) or value is None:
                out.append((f"{path}.{name}".lstrip("."), _plain(value)))
    return out


def _changes(model_type: str, base: dict[str, Any], rng: random.Random) -> list[Change]:
    nullable = _nullable(model_type)
    out: list[Change] = []
    # each alias and each field read with getattr that the default config leaves out: given a
    # changed value (double, half, odd …; a switch flipped), its own value, and null
    for path, value in _undeclared(model_type, base):
        key = path.rsplit(".", 1)[-1]
        if isinstance(value, bool):
            out.append((path, SET, not value))
        elif isinstance(value, int) and not NOT_SIZES.search(key):
            out.extend((path, SET, v) for v in _size_values(value, rng) if v > 0)
            out.append((path, SET, value))
        elif value is not None and not NOT_SIZES.search(key) and not NO_SHAPE.search(key):
            out.append((path, SET, value))
        if value is not None and not NO_SHAPE.search(key):
            out.append((path, SET, None))
    for path, value in _fields(base):
        key = path.rsplit(".", 1)[-1]
        if isinstance(value, int) and not isinstance(value, bool) and not NOT_SIZES.search(key):
            out.extend((path, SET, v) for v in _size_values(value, rng))
    for path, _value in _fields(base):
        if not NO_SHAPE.search(path.rsplit(".", 1)[-1]):
            out.append((path, DROP, None))
    for path, value in _fields(base):
        parent, _, key = path.rpartition(".")
        if value is not None and not isinstance(value, dict) and key in nullable.get(parent, set()):
            out.append((path, SET, None))
    return out


def _apply(config: dict[str, Any], changes: list[Change]) -> dict[str, Any]:
    out = copy.deepcopy(config)
    for path, kind, value in changes:
        *parents, key = path.split(".")
        target = out
        for part in parents:
            nested = target.get(part)
            if not isinstance(nested, dict):
                break  # the sub-config was left out by an earlier change
            target = nested
        else:
            if kind == DROP:
                target.pop(key, None)
            else:
                target[key] = value
    return out


def _describe(base: dict[str, Any], change: Change) -> str:
    path, kind, value = change
    if kind == DROP:
        return f"without {path}"
    old: Any = base
    for part in path.split("."):
        old = old.get(part) if isinstance(old, dict) else None
    return f"{path}={json.dumps(value)} (default {json.dumps(old)})"


def iter_variants(model_type: str, *, seed: int = 0) -> Iterator[Variant]:
    """The default config of ``model_type`` and its changed configs, in a fixed order for a
    given ``seed``: one-change variants (sizes, left-out fields, nulls), then combinations."""
    base = default_config(model_type)
    rng = random.Random(f"{seed}:{model_type}")
    yield Variant(f"{model_type}/defaults", copy.deepcopy(base), "defaults")
    singles = _changes(model_type, base, rng)
    for change in singles:
        text = _describe(base, change)
        yield Variant(f"{model_type}/{text}", _apply(base, [change]), text)
    seen: set[str] = set()
    if len(singles) >= 2:
        for _ in range(COMBINATIONS):
            picked = rng.sample(singles, min(CHANGES_PER_COMBINATION, len(singles)))
            picked = [c for i, c in enumerate(picked) if c[0] not in {p[0] for p in picked[:i]}]
            text = " + ".join(_describe(base, c) for c in picked)
            if text not in seen:
                seen.add(text)
                yield Variant(f"{model_type}/{text}", _apply(base, picked), text)
