"""Checking llmcalc against the real thing: a transformers model built from the same config.

The model is built on the meta device (shapes only, no weights, no network). torch and transformers
are imported here alone, lazily; without them the functions raise :class:`MissingExtraError`.
"""

from __future__ import annotations

import itertools
import math
import re
import time
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, Literal

from llmcalc.errors import ConfigError, LLMCalcError, MissingExtraError
from llmcalc.formulas.counting import LM_HEAD
from llmcalc.formulas.flops import FLOPS_PER_MAC
from llmcalc.formulas.memory import has_cross_attention
from llmcalc.inputs.safetensors_index import Checkpoint, read_checkpoint
from llmcalc.model.spec import LAYER, LayerGroup, ModelSpec


@dataclass(frozen=True)
class ModelFigures:
    """Figures read off an instantiated model, independently of llmcalc's tensor names."""

    total: int
    embedding: int  # every nn.Embedding table (token and position)
    lm_head: int  # output projection parameters not shared with the input embedding
    per_layer: tuple[int, ...]  # parameters of each decoder layer, in order
    named_shapes: dict[str, tuple[int, ...]]  # named_parameters(), tied weights once


def _import() -> tuple[Any, Any]:
    try:
        import torch
        import transformers
    except ImportError:
        raise MissingExtraError("building the transformers model") from None
    transformers.logging.set_verbosity_error()  # type: ignore[no-untyped-call]
    return torch, transformers


# What verify builds, at most: transformers makes a Python object per parameter and module, so a
# model is refused before the build when it is larger than these (DeepSeek-V3 has about 1,200
# parameter tensors; the --flops and cache checks hold real weights of the cut model on the CPU).
MAX_VERIFY_TENSORS = 50_000
MAX_TENSOR_ELEMENTS = 2**60  # torch's storage size is a signed 64-bit count of bytes
MAX_CPU_BYTES = 4 * 1024**3  # weights of the 1–2-layer copies that --flops runs


@contextmanager
def transformers_errors(spec: ModelSpec, what: str = "build") -> Iterator[None]:
    """Whatever transformers or torch raise for a config they cannot take, as one ConfigError."""
    try:
        yield
    except LLMCalcError:
        raise
    except (RecursionError, MemoryError) as e:
        raise ConfigError(spec.name, f"transformers cannot {what} this model: "
                          f"{type(e).__name__}") from None
    except Exception as e:  # its own exception types vary by model and version
        detail = (str(e).strip().splitlines() or [""])[0]
        detail = detail if len(detail) <= 200 else detail[:200] + " …"
        raise ConfigError(
            spec.name, f"transformers cannot {what} this model: {type(e).__name__}: {detail}"
        ) from None


def check_buildable(spec: ModelSpec, *, cpu_layers: int | None = None) -> None:
    """Refuse, before any work, a model too large to build within verify's stated limits."""
    tensors = spec.num_named_tensors
    if tensors > MAX_VERIFY_TENSORS:
        raise ConfigError(
            spec.name,
            f"verify builds models of at most {MAX_VERIFY_TENSORS:,} parameter tensors; "
            f"this one has {tensors:,}",
        )
    for t, _ in spec.all_tensors():
        if t.numel > MAX_TENSOR_ELEMENTS:
            raise ConfigError(
                spec.name, f"tensor {t.name} has {t.numel:,} elements, more than torch can hold"
            )
    if cpu_layers is not None and spec.parts and spec.main_part == "language":
        raise ConfigError(
            spec.name,
            "--flops and --cache run a cut copy of a causal LM; this is a whole model ("
            + ", ".join(spec.part_names) + "), which they do not cut yet (its names, shapes "
            "and totals are verified without them)",
        )
    if cpu_layers is not None:
        from llmcalc.formulas.counting import count
        from llmcalc.inputs.config import spec_from_dict

        cut = spec_from_dict({**spec.config, **cut_fields(spec, num_layers=cpu_layers)},
                             name=spec.name)
        nbytes = count(cut).total * 4  # fp32 at most
        if nbytes > MAX_CPU_BYTES:
            raise ConfigError(
                spec.name,
                f"the {cpu_layers}-layer copy that --flops runs needs {nbytes / 1024**3:,.1f} GiB "
                f"of weights; verify runs copies of at most {MAX_CPU_BYTES // 1024**3} GiB",
            )


def hf_config(spec: ModelSpec, **changes: Any) -> Any:
    """The transformers config object for ``spec``'s config fields (plus ``changes``)."""
    _, transformers = _import()
    fields = {k: v for k, v in spec.config.items() if k != "model_type"}
    fields.update(changes)
    with transformers_errors(spec, "configure"):
        return transformers.AutoConfig.for_model(spec.model_type, **fields)


# The auto classes of whole models, tried in this order for a spec with parts (a vision–language
# model, an encoder–decoder): the first whose mapping holds the model_type builds it.
WHOLE_MODEL_AUTO = (
    "AutoModelForImageTextToText",
    "AutoModelForSeq2SeqLM",
    "AutoModelForSpeechSeq2Seq",
    "AutoModelForMaskedLM",
)


def model_class(spec: ModelSpec) -> Any:
    """The auto class that builds ``spec``'s model: a whole model's (parts and all), else the
    causal LM."""
    _, transformers = _import()
    if spec.parts:
        for name in WHOLE_MODEL_AUTO:
            auto = getattr(transformers, name)
            if spec.model_type in auto._model_mapping._model_mapping:
                return auto
    return transformers.AutoModelForCausalLM


def build_meta_model(spec: ModelSpec, *, trust_remote_code: bool = False) -> Any:
    """The model for ``spec`` on the meta device: every parameter, no storage. A whole model (with
    parts) is built with its own class (:data:`WHOLE_MODEL_AUTO`), else the causal LM."""
    torch, _ = _import()
    check_buildable(spec)
    config = hf_config(spec)
    with transformers_errors(spec), torch.device("meta"):
        return model_class(spec).from_config(config, trust_remote_code=trust_remote_code)


def figures(model: Any, num_layers: int) -> ModelFigures:
    """Total, embedding, lm_head and per-layer counts of an instantiated model."""
    torch, _ = _import()
    params = dict(model.named_parameters())
    total = sum(p.numel() for p in params.values())
    embedding = sum(
        m.weight.numel() for m in model.modules() if isinstance(m, torch.nn.Embedding)
    )
    inp, out = model.get_input_embeddings(), model.get_output_embeddings()
    lm_head = 0
    if out is not None:
        lm_head = sum(
            p.numel() for p in out.parameters() if not (inp is not None and p is inp.weight)
        )
    layers = _decoder_layers(model, num_layers, torch)
    per_layer = tuple(sum(p.numel() for p in layer.parameters()) for layer in layers)
    return ModelFigures(
        total=total,
        embedding=embedding,
        lm_head=lm_head,
        per_layer=per_layer,
        named_shapes={name: tuple(p.shape) for name, p in params.items()},
    )


def _decoder_layers(model: Any, num_layers: int, torch: Any) -> Any:
    """The ModuleList of decoder layers: the largest one holding exactly ``num_layers`` modules."""
    lists = [
        m for m in model.modules() if isinstance(m, torch.nn.ModuleList) and len(m) == num_layers
    ]
    if not lists:
        return []
    return max(lists, key=lambda m: sum(p.numel() for p in m.parameters()))


# ---- comparison: llmcalc's named tensors against a model or a checkpoint --------------------------
#
# Pure Python: the model's side arrives as a name → shape mapping (named_parameters() of the model
# built on the meta device, or the headers of a safetensors checkpoint), so only building the model
# needs torch.

EXPERT_TENSOR = re.compile(r"^(?P<prefix>.+\.experts)\.(?P<e>\d+)\.(?P<rest>.+)$")

# Module paths a checkpoint spells differently from the transformers v5 module tree, by model_type
# (transformers conversion_mapping.py: the renamings it applies when loading).
_MIXTRAL = ((r"\.block_sparse_moe\.", ".mlp."),)
CHECKPOINT_RENAMES: dict[str, tuple[tuple[str, str], ...]] = {
    "mixtral": _MIXTRAL,
    "minimax": _MIXTRAL,
    "phimoe": (*_MIXTRAL, (r"\.mlp\.gate\.weight$", ".mlp.router.weight")),
    "gpt_neox": ((r"^embed_out\.", "lm_head."),),
    "granitemoe": (
        # stored fused already, under other names
        (r"\.block_sparse_moe\.input_linear\.weight$", ".block_sparse_moe.experts.gate_up_proj"),
        (r"\.block_sparse_moe\.output_linear\.weight$", ".block_sparse_moe.experts.down_proj"),
        (r"\.block_sparse_moe\.router\.layer\.weight$", ".block_sparse_moe.router.weight"),
    ),
}

# Buffers some checkpoints store beside the parameters; not parameters, so not compared.
CHECKPOINT_BUFFERS = re.compile(
    r"(\.rotary_emb\.inv_freq|\.attn\.bias|\.attn\.masked_bias|\.e_score_correction_bias)$"
)

DiffKind = Literal["missing", "extra", "shape"]
OTHER = "final norm, other"  # the row of tensors outside the embedding, the layers and the head


@dataclass(frozen=True)
class TensorDiff:
    """A tensor llmcalc predicts and the model lacks (missing), the reverse (extra), or both with
    other shapes (shape)."""

    name: str
    ours: tuple[int, ...] | None
    theirs: tuple[int, ...] | None

    @property
    def kind(self) -> DiffKind:
        if self.theirs is None:
            return "missing"
        if self.ours is None:
            return "extra"
        return "shape"


@dataclass(frozen=True)
class MergedExperts:
    """Per-expert checkpoint tensors (``….experts.{e}.…``) held against llmcalc's fused [E, …] ones.

    Their names cannot match (transformers v5 fuses the experts when loading), so they are compared
    by the number of experts and by total elements.
    """

    prefix: str  # e.g. model.layers.1.mlp.experts
    experts: int  # distinct expert indices in the checkpoint
    stored: int  # per-expert tensors in the checkpoint
    fused: tuple[str, ...]  # llmcalc's fused tensor names under the prefix
    ours: int  # elements of the fused tensors
    theirs: int  # elements of the per-expert tensors
    expected_experts: int

    @property
    def ok(self) -> bool:
        return self.ours == self.theirs and self.experts == self.expected_experts


@dataclass(frozen=True)
class GroupRow:
    """Parameters of one part of the model: llmcalc's figure, the model's, and model − llmcalc."""

    label: str
    ours: int
    theirs: int

    @property
    def difference(self) -> int:
        return self.theirs - self.ours


@dataclass(frozen=True)
class Comparison:
    """The outcome of one verification, as plain data; ``ok`` when everything matches."""

    model: str
    against: str  # what llmcalc was held against, in words
    kind: Literal["transformers", "checkpoint"]
    rows: tuple[GroupRow, ...]  # embedding, each layer group, other, lm_head, total
    matched: int  # tensors equal in name and shape
    differences: tuple[TensorDiff, ...]
    merged: tuple[MergedExperts, ...] = ()
    ignored: tuple[str, ...] = ()  # checkpoint tensors that are not parameters
    notes: tuple[str, ...] = ()
    seconds: float = 0.0
    # tensors in the totals but not compared: taken from llmcalc's own description where the other
    # side cannot be built (Gemma 3n's timm tower); never counted in ``matched``
    unchecked: int = 0

    @property
    def ok(self) -> bool:
        return (
            not self.differences
            and all(m.ok for m in self.merged)
            and all(r.difference == 0 for r in self.rows)
        )

    def by_kind(self, kind: DiffKind) -> list[TensorDiff]:
        return [d for d in self.differences if d.kind == kind]


def compare(
    spec: ModelSpec,
    theirs: Mapping[str, tuple[int, ...]],
    *,
    against: str,
    kind: Literal["transformers", "checkpoint"],
    seconds: float = 0.0,
) -> Comparison:
    """Hold ``spec``'s named tensors against ``theirs`` (name → shape), tensor by tensor.

    For a model (``kind="transformers"``) names and shapes must be equal. A checkpoint is first read
    as transformers reads it: module paths renamed (``CHECKPOINT_RENAMES``), a missing base-model
    prefix added, buffers set aside, a stored copy of a tied weight accepted, and per-expert
    tensors compared with the fused ones by total elements (:class:`MergedExperts`).
    """
    ours = dict(spec.named_shapes())
    theirs = dict(theirs)
    notes: list[str] = []
    ignored: list[str] = []
    merged: list[MergedExperts] = []
    if kind == "checkpoint":
        theirs = _checkpoint_names(spec, theirs, ours, notes, ignored)
    matched = 0
    differences: list[TensorDiff] = []
    for name in ours.keys() & theirs.keys():
        if ours[name] == theirs[name]:
            matched += 1
        else:
            differences.append(TensorDiff(name, ours[name], theirs[name]))
    ours_only = {k: v for k, v in ours.items() if k not in theirs}
    theirs_only = {k: v for k, v in theirs.items() if k not in ours}
    if kind == "checkpoint":
        merged = _merge_experts(spec, ours_only, theirs_only)
        if merged:
            notes.append(
                f"{sum(m.stored for m in merged)} per-expert checkpoint tensors compared with "
                f"{sum(len(m.fused) for m in merged)} fused parameters by total elements "
                "(transformers v5 fuses the experts when loading)"
            )
    differences += [TensorDiff(k, v, None) for k, v in ours_only.items()]
    differences += [TensorDiff(k, None, v) for k, v in theirs_only.items()]
    order = {name: i for i, name in enumerate(ours)}
    differences.sort(key=lambda d: (order.get(d.name, len(order)), _natural(d.name)))
    return Comparison(
        model=spec.name,
        against=against,
        kind=kind,
        rows=_rows(spec, ours, theirs),
        matched=matched,
        differences=tuple(differences),
        merged=tuple(merged),
        ignored=tuple(sorted(ignored, key=_natural)),
        notes=tuple(notes),
        seconds=seconds,
    )


def _checkpoint_names(
    spec: ModelSpec,
    theirs: dict[str, tuple[int, ...]],
    ours: dict[str, tuple[int, ...]],
    notes: list[str],
    ignored: list[str],
) -> dict[str, tuple[int, ...]]:
    renames = CHECKPOINT_RENAMES.get(spec.model_type, ())
    roots = {name.split(".", 1)[0] for name in ours}
    base = _base_prefix(spec) or ""
    add_base = (
        base != ""
        and not any(name.startswith(base) for name in theirs)
        and any(name.split(".", 1)[0] not in roots for name in theirs)
    )
    if add_base:
        notes.append(f"checkpoint names read with the {base!r} prefix (saved from the base model)")
    tied = {t.name: t.shape for t, _ in spec.all_tensors() if t.tied_to is not None}
    # a shared tensor listed under its tied entry's name (Tensor.named_first): its owner's stored
    # name is that tensor too
    listed = spec.listed_names()
    tied.update({owner: tied[alias] for owner, alias in listed.items()})
    out: dict[str, tuple[int, ...]] = {}
    renamed = 0
    for name, shape in theirs.items():
        if add_base and name.split(".", 1)[0] not in roots:
            name = base + name
        if name not in ours:
            stored = name
            for pattern, repl in renames:
                name = re.sub(pattern, repl, name)
            renamed += name != stored
        if name in listed and listed[name] not in theirs:
            name = listed[name]
        if name not in ours and name in tied and tied[name] == shape:
            notes.append(f"{name} is stored although the model ties it; not counted again")
            continue
        if name not in ours and CHECKPOINT_BUFFERS.search(name):
            ignored.append(name)
            continue
        out[name] = shape
    if renamed:
        notes.append(
            f"{renamed} checkpoint names read as transformers renames them when loading "
            f"{spec.model_type} (e.g. {_example(renames)})"
        )
    if ignored:
        notes.append(f"{len(ignored)} stored buffers are not parameters and were not compared")
    return out


def _example(renames: tuple[tuple[str, str], ...]) -> str:
    pattern, repl = renames[0]
    return f"{pattern.replace(chr(92), '').strip('^$')} → {repl}"


def _base_prefix(spec: ModelSpec) -> str | None:
    """``model.`` for ``model.layers.{i}…``: the base model's name in the causal-LM wrapper."""
    for g in spec.layer_groups:
        for t in g.tensors:
            head = t.name.split(LAYER, 1)[0]
            if head.count(".") >= 2:
                return head.split(".", 1)[0] + "."
    return None


def _merge_experts(
    spec: ModelSpec, ours_only: dict[str, tuple[int, ...]], theirs_only: dict[str, tuple[int, ...]]
) -> list[MergedExperts]:
    experts = spec.moe.num_experts if spec.moe else 0
    groups: dict[str, list[tuple[str, int]]] = {}
    for name in theirs_only:
        m = EXPERT_TENSOR.match(name)
        if m:
            groups.setdefault(m["prefix"], []).append((name, int(m["e"])))
    merged = []
    for prefix, stored in groups.items():
        fused = [k for k in ours_only if k.startswith(prefix + ".") and "." not in k[len(prefix) + 1 :]]
        if not fused:
            continue
        merged.append(
            MergedExperts(
                prefix=prefix,
                experts=len({e for _, e in stored}),
                stored=len(stored),
                fused=tuple(fused),
                ours=sum(math.prod(ours_only[k]) for k in fused),
                theirs=sum(math.prod(theirs_only[k]) for k, _ in stored),
                expected_experts=experts,
            )
        )
        for k in fused:
            del ours_only[k]
        for k, _ in stored:
            del theirs_only[k]
    return merged


def _rows(
    spec: ModelSpec, ours: dict[str, tuple[int, ...]], theirs: dict[str, tuple[int, ...]]
) -> tuple[GroupRow, ...]:
    """Both sides summed by part: embedding, each layer group, other, lm_head, total."""
    tied = any(t.tied_to is not None and t.component == LM_HEAD for t in spec.tensors)
    head = f"{LM_HEAD} (tied: shares the embedding)" if tied else LM_HEAD
    labels = ["embedding", *(_group_label(g) for g in spec.layer_groups), OTHER, head]
    where: dict[str, str] = {}
    for t in spec.tensors:
        kind = "embedding" if t.component.startswith("embed") else t.component
        where[t.name] = {"embedding": "embedding", LM_HEAD: head}.get(kind, OTHER)
    labels_of = [(g.layers, _group_label(g)) for g in spec.layer_groups]
    heads = sorted({t.name.split(LAYER, 1)[0] for g in spec.layer_groups for t in g.tensors})
    # a whole model's other parts: one row each (its tensors by name, its layers by their prefix)
    labels[1:1] = [f"{p.name} (whole part)" for p in spec.parts]
    part_heads: list[tuple[str, str]] = []
    for p in spec.parts:
        for t, g in p.all_tensors():
            if g is None:
                where[t.name] = f"{p.name} (whole part)"
            else:
                part_heads.append((t.name.split(LAYER, 1)[0], f"{p.name} (whole part)"))

    def part(name: str) -> str:
        if name in where:
            return where[name]
        for head, label in part_heads:
            if name.startswith(head):
                return label
        for head in heads:
            if name.startswith(head):
                index = name[len(head) :].split(".", 1)[0]
                if index.isdigit() and len(index) <= 18:
                    found = next((lab for layers, lab in labels_of if int(index) in layers), None)
                    if found is not None:
                        return found
        return OTHER

    sums = {label: [0, 0] for label in labels}
    for side, shapes in enumerate((ours, theirs)):
        for name, shape in shapes.items():
            sums[part(name)][side] += math.prod(shape)
    rows = [GroupRow(label, a, b) for label, (a, b) in sums.items() if a or b or label != OTHER]
    rows.append(GroupRow("total", sum(r.ours for r in rows), sum(r.theirs for r in rows)))
    return tuple(rows)


def _group_label(g: LayerGroup) -> str:
    return f"layers {g.layers.describe()} ({g.name})"


def _natural(name: str) -> tuple[object, ...]:
    """Sort key that puts layers.2 before layers.10."""
    return tuple((0, int(p), "") if p.isdigit() else (1, 0, p) for p in name.split("."))


def verify_transformers(spec: ModelSpec, *, trust_remote_code: bool = False) -> Comparison:
    """Build ``spec``'s transformers model on the meta device and compare every parameter."""
    start = time.perf_counter()
    _, transformers = _import()
    if spec.model_type == "gemma3n" and not _importable("timm"):
        theirs, against, unchecked = _gemma3n_without_timm(spec, transformers)
        c = compare(spec, theirs, against=against, kind="transformers",
                    seconds=time.perf_counter() - start)
        return replace(c, matched=c.matched - unchecked, unchecked=unchecked)
    model = build_meta_model(spec, trust_remote_code=trust_remote_code)
    theirs = {name: tuple(p.shape) for name, p in model.named_parameters()}
    against = f"transformers {transformers.__version__} {type(model).__name__} (meta device)"
    return compare(
        spec, theirs, against=against, kind="transformers", seconds=time.perf_counter() - start
    )


def _importable(module: str) -> bool:
    try:
        __import__(module)
    except Exception:  # noqa: BLE001 - timm fails in several ways beside a mismatched torchvision
        return False
    return True


def _gemma3n_without_timm(
    spec: ModelSpec, transformers: Any
) -> tuple[dict[str, tuple[int, ...]], str, int]:
    """Gemma3nForConditionalGeneration needs timm for its MobileNetV5 tower; without it, its other
    modules built alone (the text model, the audio encoder, both embedders), named as in the
    whole model, and the tower's tensors as llmcalc describes them, said in ``against``."""
    torch, _ = _import()
    from transformers.models.gemma3n import modeling_gemma3n as m

    config = hf_config(spec)
    with transformers_errors(spec), torch.device("meta"):
        built = {
            "model.language_model.": transformers.AutoModel.from_config(config.text_config),
            "model.audio_tower.": m.Gemma3nAudioEncoder(config.audio_config),
            "model.embed_vision.": m.Gemma3nMultimodalEmbedder(config.vision_config,
                                                                config.text_config),
            "model.embed_audio.": m.Gemma3nMultimodalEmbedder(config.audio_config,
                                                               config.text_config),
        }
    theirs = {prefix + n: tuple(p.shape) for prefix, mod in built.items()
              for n, p in mod.named_parameters()}
    if not config.tie_word_embeddings:  # the whole model's own head
        text = config.text_config
        theirs["lm_head.weight"] = (text.vocab_size, text.hidden_size)
    tower = {n: s for n, s in spec.named_shapes() if n.startswith("model.vision_tower.")}
    against = (f"transformers {transformers.__version__} Gemma3n modules but the vision tower "
               f"(meta device; timm cannot be imported, so the tower's {len(tower)} tensors are "
               "not compared)")
    return {**theirs, **tower}, against, len(tower)


def verify_checkpoint(spec: ModelSpec, folder: Path) -> Comparison:
    """Compare ``spec`` with the tensors stored in the safetensors checkpoint in ``folder``."""
    start = time.perf_counter()
    return compare_checkpoint(spec, read_checkpoint(folder), where=str(folder), start=start)


def compare_checkpoint(spec: ModelSpec, ckpt: Checkpoint, *, where: str, start: float) -> Comparison:
    """Compare ``spec`` with checkpoint tensors already read (a folder's, or the Hub's headers)."""
    files = len(ckpt.files)
    against = f"checkpoint {where} ({files} safetensors file{'s' if files != 1 else ''})"
    return compare(
        spec, ckpt.shapes(), against=against, kind="checkpoint",
        seconds=time.perf_counter() - start,
    )


# A short sequence: long enough for every matmul to show, short enough for a CPU in seconds.
FLOPS_SEQ_LEN = 32
FLOPS_DEPTHS = (1, 2)


@dataclass(frozen=True)
class FlopsCheck:
    """Full-attention forward FLOPs of one ``seq_len``-token sequence: llmcalc's formula against
    torch's FlopCounterMode on copies cut to 1 and 2 layers (random weights, CPU), and the
    measured per-layer step extrapolated to full depth."""

    seq_len: int
    num_layers: int
    ours: tuple[int, ...]  # llmcalc at each of FLOPS_DEPTHS layers
    measured: tuple[int, ...]  # FlopCounterMode at each of FLOPS_DEPTHS layers
    full: int  # llmcalc at full depth
    extrapolated: int | None  # None when the layers are not all alike (the step is not every layer's)
    seconds: float = 0.0

    @property
    def ok(self) -> bool:
        return self.ours == self.measured and self.extrapolated in (None, self.full)


def verify_flops(spec: ModelSpec, *, seq_len: int = FLOPS_SEQ_LEN) -> FlopsCheck:
    """Hold llmcalc's forward FLOPs (full attention, no cache) to FlopCounterMode's count."""
    from llmcalc.formulas.flops import forward_flops_per_sequence
    from llmcalc.inputs.config import spec_from_dict

    start = time.perf_counter()
    check_buildable(spec, cpu_layers=max(FLOPS_DEPTHS))
    ours, measured = [], []
    for depth in FLOPS_DEPTHS:
        cut = spec_from_dict({**spec.config, **cut_fields(spec, num_layers=depth)}, name=spec.name)
        ours.append(forward_flops_per_sequence(cut, ctx=seq_len, causal=False))
        measured.append(measure_forward_flops(spec, num_layers=depth, seq_len=seq_len))
    one, two = measured[0], measured[1]
    uniform = len(spec.layer_groups) == 1
    return FlopsCheck(
        seq_len=seq_len,
        num_layers=spec.num_layers,
        ours=tuple(ours),
        measured=tuple(measured),
        full=forward_flops_per_sequence(spec, ctx=seq_len, causal=False),
        extrapolated=extrapolate_layers(one, two, num_layers=spec.num_layers) if uniform else None,
        seconds=time.perf_counter() - start,
    )


# ---- FLOPs and KV cache measured on a real forward pass ----
#
# A copy of the config cut to a few layers, built on the CPU with random weights, run on a short
# sequence. Attention runs "eager" (two torch.matmul calls, which FlopCounterMode counts as bmm);
# torch has no FLOP formula for the CPU SDPA kernel, so with "sdpa" the attention would count 0.

# The field a family spells its layer count with, in the order tried.
LAYER_COUNT_FIELDS = ("num_hidden_layers", "n_layer", "num_layers", "n_layers")
# An encoder–decoder's layer counts per stack (T5: num_layers and num_decoder_layers).
STACK_LAYER_FIELDS = ("encoder_layers", "decoder_layers", "num_decoder_layers")
# Fields that count a model's last layers (Gemma 3n, Gemma 4: the layers that reuse an earlier
# layer's keys and values).
LAST_LAYER_FIELDS = ("num_kv_shared_layers",)
# Floating dtypes a model can run in on the CPU (DType value → torch dtype name).
TORCH_DTYPES = {"fp32": "float32", "fp16": "float16", "bf16": "bfloat16"}


@dataclass(frozen=True)
class ForwardMeasurement:
    """What one real forward pass did: FLOPs as FlopCounterMode counts them, and the cache it left."""

    flops: int
    flops_by_op: dict[str, int]  # aten op → FLOPs (mm, addmm, bmm …)
    kv_cache_bytes: int | None  # nbytes of every key, value and SSM state in the cache (None: none)
    cache_layers: tuple[str, ...]  # the cache's layer classes, e.g. DynamicSlidingWindowLayer


# Sections whose sizes must sum to the layer count (Dory: input, looped, output layers), filled one
# layer each in this order when a config is cut (the looped section first), the rest to the first.
SECTION_FIELDS = {"dory": ("n_recurrent_layers", "n_input_layers", "n_output_layers")}


def cut_fields(spec: ModelSpec, *, num_layers: int) -> dict[str, Any]:
    """The config fields that cut ``spec`` to ``num_layers`` decoder layers (per-layer lists too).
    A whole model's language model is cut inside its ``text_config`` (its towers kept whole)."""
    text = spec.config.get("text_config")
    if spec.parts and spec.main_part == "language" and isinstance(text, dict):
        return {"text_config": {**text, **_cut_fields(text, spec, num_layers=num_layers)}}
    return _cut_fields(spec.config, spec, num_layers=num_layers)


# Layer patterns a class derives from a period rather than a list: the fields that make a 2-layer
# cut hold the pattern's second kind at layer 1 (Jamba: a Mamba layer, then an attention layer).
SECOND_KIND_FIELDS = {"jamba": {"attn_layer_period": 2, "attn_layer_offset": 1}}
# Patterns given as a cycle (RecurrentGemma's block_types: recurrent, recurrent, attention, …).
CYCLE_FIELDS = ("block_types",)


# The fields that list each layer's kind (Zamba's: layers_block_type)
KIND_FIELDS = ("layer_types", "layers_block_type")


def _layer_kinds(config: Mapping[str, Any], spec: ModelSpec) -> tuple[str, list[Any]] | None:
    """The field that lists each layer's kind and its list (given, or as transformers' class
    derives it), or None."""
    for field in KIND_FIELDS:
        listed = config.get(field)
        if isinstance(listed, list):
            return (field, listed) if len(listed) == spec.num_layers else None
    if spec.parts or not spec.model_type:
        return None
    try:
        _, transformers = _import()
        fields = {k: v for k, v in config.items() if k != "model_type"}
        hf = transformers.AutoConfig.for_model(spec.model_type, **fields)
    except Exception:  # noqa: BLE001 - no derived pattern to keep: the first layers as they are
        return None
    import dataclasses

    names = {f.name for f in dataclasses.fields(hf)}
    for field in KIND_FIELDS:  # a field, not a property the class computes from others
        derived = getattr(hf, field, None) if field in names else None
        if isinstance(derived, list) and len(derived) == spec.num_layers:
            return field, list(derived)
    return None


def kept_layers(kinds: list[Any] | None, *, num_layers: int) -> list[int]:
    """The layers a cut to ``num_layers`` keeps: the first ones, except that where those are all of
    one kind the last is the first layer of the pattern's next kind (a hybrid's first attention
    layer, a sliding pattern's first full layer), so that a 2-layer cut measures both."""
    first = list(range(num_layers))
    if not kinds or num_layers < 2 or num_layers >= len(kinds) or len(set(map(str, kinds[:num_layers]))) > 1:
        return first
    other = next((i for i, kind in enumerate(kinds) if str(kind) != str(kinds[0])), None)
    return first if other is None else [*first[:-1], other]


def _cut_fields(config: Mapping[str, Any], spec: ModelSpec, *, num_layers: int) -> dict[str, Any]:
    field = next((f for f in LAYER_COUNT_FIELDS if f in config), LAYER_COUNT_FIELDS[0])
    cut: dict[str, Any] = {field: num_layers}
    sections = SECTION_FIELDS.get(spec.model_type, ()) if num_layers != spec.num_layers else ()
    for j, name in enumerate(sections):
        cut[name] = min(1, max(0, num_layers - j)) + (max(0, num_layers - len(sections)) if j == 0 else 0)
    listed = _layer_kinds(config, spec) if num_layers < spec.num_layers else None
    kept = kept_layers(listed[1] if listed else None, num_layers=num_layers)
    # the kinds listed where the cut keeps other layers than the first, and where the class
    # would otherwise derive them for the whole depth (Zamba's layers_block_type)
    if listed is not None and (kept != list(range(num_layers)) or (
            listed[0] != "layer_types" and listed[0] not in config)):
        cut[listed[0]] = [listed[1][i] for i in kept]
    for key, value in config.items():  # per-layer lists: layer_types, attention_layers …
        if isinstance(value, list) and len(value) == spec.num_layers:
            # a config of fewer layers than the copy (1 layer, measured at 2) grows: its lists
            # repeat, as its layer count does
            cut[key] = [value[i % len(value)] for i in kept]
    if num_layers == 2 < spec.num_layers:
        cut.update(SECOND_KIND_FIELDS.get(spec.model_type, {}))
    for key in CYCLE_FIELDS:
        if isinstance(cycle := config.get(key), list) and cycle and num_layers < spec.num_layers:
            cycled = [cycle[i % len(cycle)] for i in range(spec.num_layers)]
            cut[key] = [cycled[i] for i in kept_layers(cycled, num_layers=num_layers)]
    for key in LAST_LAYER_FIELDS:  # the first layers hold those of the last ones they reach
        if isinstance(last := config.get(key), int):
            cut[key] = max(0, num_layers - max(0, spec.num_layers - last))
    for key in STACK_LAYER_FIELDS:  # an encoder–decoder: both stacks
        if key in config:
            cut[key] = num_layers
    runs = config.get("attention_types")  # GPT-Neo: [[["global", "local"], 12]] repeats a pattern
    if isinstance(runs, list):
        each = (kind for pattern, times in runs for _ in range(times) for kind in pattern)
        cut["attention_types"] = [[[kind], 1] for kind in itertools.islice(each, num_layers)]
    elif spec.model_type == "gpt_neo" and num_layers < spec.num_layers:
        # left out: the class's pattern, as the spec's layer groups (named for the kinds) hold it
        named = [next(g.name for g in spec.layer_groups if i in g.layers) for i in range(num_layers)]
        cut["attention_types"] = [[[kind], 1] for kind in named]
    return cut


def cut_config(spec: ModelSpec, *, num_layers: int, **changes: Any) -> Any:
    """``spec``'s transformers config cut to ``num_layers`` decoder layers (plus ``changes``)."""
    return hf_config(spec, **cut_fields(spec, num_layers=num_layers), **changes)


def build_random_model(
    spec: ModelSpec, *, num_layers: int, dtype: str = "bf16", seed: int = 0,
    experts: str = "eager",
) -> Any:
    """The causal-LM model of ``spec`` cut to ``num_layers``, on the CPU, weights uniform ±0.02.

    Every parameter is a view of one pool per dtype the size of the largest tensor, tiled from 2²⁰
    seeded uniform values: the figures measured depend on shapes only, and drawing or storing
    gigabytes of distinct weights would dominate the run time. Each parameter keeps the dtype
    transformers gave it (those it keeps in float32 at any dtype stay float32, as its cache then
    shows: DeepSeek-V4's compressor gates).
    """
    torch, transformers = _import()
    from transformers.initialization import no_init_weights

    config = cut_config(spec, num_layers=num_layers)
    torch_dtype = getattr(torch, TORCH_DTYPES[dtype])
    with no_init_weights():  # skip the (slow) init: every parameter is replaced below
        model = model_class(spec).from_config(
            config,
            attn_implementation="eager",  # two matmuls FlopCounterMode counts (no CPU SDPA formula)
            experts_implementation=experts,  # "eager": one linear per expert hit
            dtype=torch_dtype,
        )
    model.tie_weights()
    gen = torch.Generator().manual_seed(seed)
    chunk = torch.empty(1 << 20).uniform_(-0.02, 0.02, generator=gen)  # drawn once, then tiled
    sizes: dict[Any, int] = {}
    for p in model.parameters():
        sizes[p.dtype] = max(sizes.get(p.dtype, 0), p.numel())
    pools = {}
    for kind, size in sizes.items():
        pool = pools[kind] = torch.empty(size, dtype=kind)
        for start in range(0, size, chunk.numel()):
            stop = min(start + chunk.numel(), size)
            pool[start:stop].copy_(chunk[: stop - start])
    with torch.no_grad():
        for p in model.parameters():
            p.data = pools[p.dtype][: p.numel()].view(p.shape)
    return model.eval()


def measure_forward(
    spec: ModelSpec,
    *,
    num_layers: int,
    seq_len: int,
    batch: int = 1,
    use_cache: bool = False,
    static_cache: bool = False,
    dtype: str = "bf16",
    experts: str = "eager",
) -> ForwardMeasurement:
    """One forward pass of ``batch`` random sequences of ``seq_len`` tokens through a cut-down copy.

    ``static_cache`` preallocates transformers' ``StaticCache`` for ``seq_len`` tokens (sliding
    layers then hold their whole window); otherwise the default ``DynamicCache`` is used.
    ``experts``: transformers' experts implementation ("eager", or its default "grouped_mm",
    counted with :func:`grouped_mm_flops`).
    """
    with transformers_errors(spec, "run"):
        model = build_random_model(spec, num_layers=num_layers, dtype=dtype, experts=experts)
        return run_forward(model, seq_len=seq_len, batch=batch, use_cache=use_cache,
                           static_cache=static_cache, encoder_states=has_cross_attention(spec))


def run_forward(
    model: Any,
    *,
    seq_len: int,
    batch: int = 1,
    use_cache: bool = False,
    static_cache: bool = False,
    position_ids: bool = False,
    encoder_states: bool = False,
    cache: Any = None,
) -> ForwardMeasurement:
    """One forward pass of ``batch`` random sequences of ``seq_len`` tokens through ``model`` (one
    :func:`build_random_model` made), under FlopCounterMode; the cache it leaves (see
    :func:`measure_forward`). ``position_ids``: pass 0 … seq_len − 1 (a model cut to linear-attention
    layers only otherwise asks its new cache for a length only attention layers keep: Lara-Mini).
    ``encoder_states``: a decoder that cross-attends to an encoder it does not hold (TrOCR) reads
    ``seq_len`` random encoder states, as llmcalc's source length defaults to the context.
    ``cache``: a cache to pass, for a model that returns none (RecurrentGemma: its attention layers
    fill it, its recurrent layers keep their states in the modules, :data:`MODULE_STATES`).
    Raises what transformers raises."""
    torch, transformers = _import()
    from torch.utils.flop_counter import FlopCounterMode

    gen = torch.Generator().manual_seed(1)
    vocab = model.get_input_embeddings().weight.shape[0]
    ids = torch.randint(0, vocab, (batch, seq_len), generator=gen)
    if placeholders := _placeholder_ids(model.config, vocab):  # text only: no image token
        plain = next(i for i in range(vocab) if i not in placeholders)
        ids[torch.isin(ids, torch.tensor(sorted(placeholders)))] = plain
    kwargs: dict[str, Any] = {"use_cache": use_cache or static_cache}
    if cache is not None:
        kwargs["cache"] = cache
    if static_cache:
        kwargs["cache"] = transformers.StaticCache(config=model.config, max_cache_len=seq_len)
    inputs: dict[str, Any] = {"input_ids": ids}
    if position_ids:
        inputs["position_ids"] = torch.arange(seq_len).expand(batch, seq_len)
    c = model.config
    if encoder_states and not getattr(c, "is_encoder_decoder", False):
        width = getattr(c, "cross_attention_hidden_size", None) or c.hidden_size
        inputs["encoder_hidden_states"] = torch.randn(
            batch, seq_len, width, generator=gen, dtype=model.dtype)
    if getattr(model.config, "is_encoder_decoder", False):
        # an encoder–decoder: seq_len source tokens and seq_len decoder tokens (Whisper: 30 s
        # of log-mel frames, as its encoder requires)
        inputs["decoder_input_ids"] = ids
        if model.main_input_name == "input_features":
            frames = 2 * c.max_source_positions
            inputs.pop("input_ids")
            inputs["input_features"] = torch.randn(
                batch, c.num_mel_bins, frames, generator=gen, dtype=model.dtype
            )
    counter = FlopCounterMode(
        display=False, custom_mapping={torch.ops.aten._grouped_mm: grouped_mm_flops}
    )
    with torch.no_grad(), counter:
        out = model(**inputs, **kwargs)
    by_op = {str(op): int(n) for op, n in counter.get_flop_counts().get("Global", {}).items()}
    passed = cache
    cache = getattr(out, "cache", None) or getattr(out, "past_key_values", None) or passed
    kv_bytes = None
    layers: tuple[str, ...] = ()
    rnn_state = getattr(cache, "rnn_state", None)  # xLSTM: {layer: (C, n, m)}, no cache layers
    if isinstance(rnn_state, dict):
        kv_bytes = sum(t.nbytes for states in rnn_state.values() for t in states)
    elif cache is not None:
        # an EncoderDecoderCache: the decoder's self-attention cache and the cross-attention one
        parts = [getattr(cache, n) for n in ("self_attention_cache", "cross_attention_cache")
                 if hasattr(cache, n)] or [cache]
        kv_bytes = sum(t.nbytes for c in parts for layer in c.layers for t in _cached_tensors(layer))
        # MiniMax keeps its lightning-attention states beside the layers (MiniMaxCache.linear_cache)
        kv_bytes += sum(t.nbytes for t in getattr(cache, "linear_cache", []) if hasattr(t, "nbytes"))
        layers = tuple(type(layer).__name__ for c in parts for layer in c.layers)
    if passed is not None and kv_bytes is not None:  # states the modules keep beside the cache
        kv_bytes += sum(t.nbytes for m in model.modules() for name in MODULE_STATES
                        if isinstance(t := getattr(m, name, None), torch.Tensor))
    state = getattr(out, "state", None)  # RWKV returns its state tensors, not a cache object
    if cache is None and isinstance(state, (list, tuple)):
        kv_bytes = sum(t.nbytes for t in state if hasattr(t, "nbytes"))
    mems = getattr(out, "mems", None)  # XLNet: each layer's input hidden states, its memory
    if cache is None and isinstance(mems, (list, tuple)):
        kv_bytes = sum(t.nbytes for t in mems if hasattr(t, "nbytes"))
    return ForwardMeasurement(int(counter.get_total_flops()), by_op, kv_bytes, layers)


# Recurrent states a model keeps in its modules, not in the cache it is given (RecurrentGemma's
# recurrent blocks: the convolution's last inputs and the RG-LRU state).
MODULE_STATES = ("conv1d_state", "recurrent_states")


def _placeholder_ids(config: Any, vocab: int) -> set[int]:
    """A whole model's special token ids (``image_token_id``, ``audio_token_index`` …, and its
    text_config's), which text-only random input must not hold: an image token asks for an image."""
    if getattr(config, "text_config", None) is None:
        return set()
    ids = set()
    for c in (config, config.text_config):
        for key, value in vars(c).items():
            if re.search(r"token_(id|index)s?$", key):
                for i in value if isinstance(value, list) else [value]:
                    if isinstance(i, int) and 0 <= i < vocab:
                        ids.add(i)
    return ids


def grouped_mm_flops(a: tuple[int, ...], b: tuple[int, ...], *_: Any, **__: Any) -> int:
    """FLOPs of ``torch._grouped_mm`` from its operands' shapes (torch 2.13's FlopCounterMode has
    no formula for it and counts 0: a model's routed experts under transformers' default experts
    implementation). Routed rows [T, K] against per-expert matrices [E, K, N]: each row meets one
    expert's matrix, 2·T·K·N; batched [E, M, K] × [E, K, N]: 2·E·M·K·N; [M, K] × [K, N] grouped
    along K: 2·M·K·N."""
    if len(a) == 2 and len(b) == 3:
        return FLOPS_PER_MAC * a[0] * a[1] * b[2]
    if len(a) == 3 and len(b) == 3:
        return FLOPS_PER_MAC * a[0] * a[1] * a[2] * b[2]
    if len(a) == 2 and len(b) == 2:
        return FLOPS_PER_MAC * a[0] * a[1] * b[1]
    raise ValueError(f"grouped_mm of shapes {a} and {b}: no FLOPs formula")


# A cache layer's per-name states beside its keys and values: an SSM layer's convolution and
# recurrent states; DeepSeek-V4's compressors' pooled entries, open windows and overlap series
# (DeepseekV4HCACache, DeepseekV4CSACache, each keyed "compressor" and "indexer").
CACHED_STATE_DICTS = ("conv_states", "recurrent_states", "compressed_kv", "buffer_kv",
                      "buffer_gate", "overlap_kv", "overlap_gate")


def _cached_tensors(layer: Any) -> list[Any]:
    """A cache layer's keys and values (and a sparse-attention indexer's keys: DeepSeek-V3.2's
    indexer_keys, MiniMax-M3's idx_keys, Qwen4-Exp's indexer_position_ids) and its other states
    (:data:`CACHED_STATE_DICTS`), each tensor once (DeepSeek-V4's compressed layers keep one tensor
    as their keys and values)."""
    names = ("keys", "values", "indexer_keys", "idx_keys", "indexer_position_ids")
    found = [getattr(layer, name, None) for name in names]
    for name in CACHED_STATE_DICTS:
        found += list((getattr(layer, name, None) or {}).values())
    tensors = [t for t in found if t is not None and hasattr(t, "nbytes")]
    return list({id(t): t for t in tensors}.values())


def measure_forward_flops(
    spec: ModelSpec, *, num_layers: int, seq_len: int, batch: int = 1
) -> int:
    """FlopCounterMode's total for a forward pass of ``spec`` cut to ``num_layers`` (no cache)."""
    return measure_forward(spec, num_layers=num_layers, seq_len=seq_len, batch=batch).flops


def extrapolate_layers(one: int, two: int, *, num_layers: int) -> int:
    """A figure measured with 1 and 2 layers, carried linearly to ``num_layers`` alike layers."""
    return one + (num_layers - 1) * (two - one)
