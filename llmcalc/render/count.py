"""`llmcalc count` output: the shape, one layer by tensor group, all layers, the outer tensors, totals."""

from __future__ import annotations

from typing import Any

from rich.console import Group, RenderableType
from rich.table import Table
from rich.text import Text

from llmcalc.formulas.counting import ParamCount, percent_off
from llmcalc.model.spec import LAYER, ModelSpec, Tensor
from llmcalc.render import figures_table, n, pct, short
from llmcalc.render.grid import Cell, Col, Fig, Fitted, Grid

OUTER_LABELS = {
    "embed/tokens": "token embeddings",
    "embed/positions": "position embeddings",
    "final_norm": "final norm",
    "lm_head": "lm_head",
}


ORIGIN_WORDS = {
    "path": "read from {path}",
    "bundled": "bundled config {path}",
    "sibling": "its base model's bundled config {path} (its own config.json unread)",
    "cache": "config.json from the local Hugging Face cache",
    "hub": "config.json downloaded from the Hub (cached for next time)",
    "ollama": "the GGUF file of a model Ollama pulled, {path}",
}


def origin_line(spec: ModelSpec) -> str | None:
    """Where the config came from, and whether a formula or a measurement gave the figures."""
    parts = []
    if spec.origin is not None:
        parts.append(ORIGIN_WORDS[spec.origin.source].format(path=spec.origin.path))
    if spec.method == "measured":
        parts.append(
            f"measured: transformers' model built on the meta device in {spec.measured_seconds:.1f} s "
            f"(llmcalc has no formula for {spec.model_type})"
        )
    return " · ".join(parts) or None


def origin_json(spec: ModelSpec) -> dict[str, Any] | None:
    o = spec.origin
    if o is None:
        return None
    return {"source": o.source, "path": o.path, "repo_id": o.repo_id, "revision": o.revision}


def provenance(spec: ModelSpec) -> dict[str, Any]:
    """Where the config came from and how the figures were found, for every command's --json."""
    return {
        "origin": origin_json(spec),
        "method": spec.method,
        "measured_seconds": round(spec.measured_seconds, 3) if spec.method == "measured" else None,
    }


def header(spec: ModelSpec) -> Text:
    s = spec.shape
    text = Text()
    text.append(spec.name, style="bold")
    text.append(f"  ({spec.model_type}, family {spec.family})")
    line = origin_line(spec)
    if line:
        text.append("\n" + line, style="dim")
    if not spec.layer_groups:  # a part without layers (a projector, a head): no shape to show
        return text
    text.append("\n")
    heads = (
        f"heads {s.num_heads} · kv heads {s.num_kv_heads} · head_dim {s.head_dim} · "
        if s.num_heads else ""
    )
    text.append(
        f"layers {s.num_layers} · d_model {n(s.hidden_size)} · {heads}"
        f"d_ff {n(s.intermediate_size)} · "
        f"vocab {n(s.vocab_size)} · tied {'yes' if s.tied_embeddings else 'no'}"
    )
    text.append(layer_kinds(spec))
    if spec.moe:
        m = spec.moe
        top = "top-k unset" if m.experts_per_tok is None else f"top-{m.experts_per_tok}"
        text.append(f" · experts {m.num_experts} ({top}")
        text.append(f", {m.shared_experts} shared)" if m.shared_experts else ")")
    return text


def layer_kinds(spec: ModelSpec) -> str:
    """`` · attention 4 · mamba 28`` for models with layers that are not softmax attention."""
    if all(g.mixer is None for g in spec.layer_groups):
        return ""
    kinds: dict[str, int] = {}
    for g in spec.layer_groups:
        for kind in (
            *(["attention"] if g.attention is not None else []),
            *([g.mixer.kind] if g.mixer is not None else []),
        ):
            kinds[kind] = kinds.get(kind, 0) + len(g.layers)
    mixer = next(g.mixer for g in spec.layer_groups if g.mixer is not None)
    parts = " · ".join(f"{kind} layers {count}" for kind, count in kinds.items())
    return f"\n{parts} · state {mixer.state_size} · conv {mixer.conv_kernel}"


def _split(tensors: tuple[Tensor, ...], component: str) -> tuple[int, int]:
    weight = bias = 0
    for t in tensors:
        if t.component == component and t.tied_to is None:
            if t.name.endswith((".bias", "_bias")):  # gpt-oss experts: gate_up_proj_bias
                bias += t.numel
            else:
                weight += t.numel
    return weight, bias


def layer_tables(spec: ModelSpec, pc: ParamCount) -> list[Fitted]:
    """One table per layer kind; on a narrow terminal biases, then weights, are left out (and the
    table says so) before a tensor group's name would be broken."""
    tables = []
    for group, gc in zip(spec.layer_groups, pc.groups, strict=True):
        a = group.attention
        window = f", window {n(a.window)}" if a is not None and a.window else ""
        title = (
            f"one layer ({group.name}{window}: {gc.num_layers} of {spec.num_layers} layers)"
            if len(pc.groups) > 1
            else f"one layer (all {gc.num_layers} alike{window})"
        )
        g = Grid(title, [Col("tensor group", wrap=True), Col("weights", right=True, drop=1),
                         Col("biases", right=True, drop=2), Col("one layer", right=True),
                         Col(f"× {gc.num_layers} layers", right=True)])
        for component, params in gc.components.items():
            weight, bias = _split(group.tensors, component)
            label = _expert_label(group.tensors, component, params)
            g.add(label, n(weight), n(bias) if bias else "-", n(params), n(params * gc.num_layers))
        g.add("layer total", "", "", n(gc.per_layer), n(gc.total), bold=True, section=True)
        if spec.moe and gc.per_layer_active is not None and gc.active is not None \
                and gc.per_layer_active != gc.per_layer:
            g.add("active per token", "", "", n(gc.per_layer_active), n(gc.active))
        tables.append(Fitted(g))
    return tables


def _expert_label(tensors: tuple[Tensor, ...], component: str, params: int) -> str:
    """A routed-expert component shows one expert and the count: ``… (64 experts × 2,883,584)``."""
    expert = next((x for x in tensors if x.component == component and x.experts), None)
    if expert is None:
        return component
    return f"{component} ({expert.experts} experts × {n(params // expert.experts)})"


def totals_table(spec: ModelSpec, pc: ParamCount) -> Table:
    t = figures_table("model", "part", "parameters", "share")
    layered = bool(spec.layer_groups)  # a part without layers (a projector): its tensors and total
    rows: list[tuple[str, int | None]] = []
    seen: set[str] = set()
    for x in spec.tensors:
        if x.component in seen:
            continue
        seen.add(x.component)
        label = OUTER_LABELS.get(x.component, x.component)
        if x.component == "lm_head" and pc.lm_head == 0 and x.tied_to:
            if layered:
                rows.append(("lm_head (tied: shares the embedding)", None))
        else:
            rows.append((label, pc.breakdown[x.component]))
    if layered:
        rows.insert(min(len(rows), _layers_position(spec)),
                    (f"all {spec.num_layers} layers", pc.layers))
    rows.extend((f"{name} (whole part)", params) for name, params in pc.parts.items()
                if name != spec.main_part)
    for label, params in rows:
        if params is None:
            t.add_row(label, "0", "")
        else:
            t.add_row(label, n(params), f"{params / pc.total:.1%}" if pc.total else "")
    t.add_section()
    t.add_row("total", n(pc.total), short(pc.total), style="bold")
    active = pc.active
    if spec.moe and active is None:
        t.add_row("active per token", "undefined", "num_experts_per_tok is null", style="bold")
    elif spec.moe and active is not None:
        t.add_row("active per token", n(active), short(active), style="bold")
    if not layered:
        return t
    rule = pc.rule_of_thumb
    if pc.parts:  # the rule describes the language model: held against that part
        main = pc.parts[spec.main_part]
        t.add_row(f"rule of thumb 12·L·d² + V·d (vs the {spec.main_part} model, {short(main)})",
                  n(rule), pct(percent_off(rule, main)))
    else:
        t.add_row("rule of thumb 12·L·d² + V·d", n(rule), pct(percent_off(rule, pc.total)))
    return t


def rule_base(spec: ModelSpec, pc: ParamCount) -> int:
    """What the rule of thumb 12·L·d² + V·d describes, and is held against: the language model
    (a whole model's main part; the whole of a model of one part)."""
    return pc.parts.get(spec.main_part, pc.total)


def other_outer(spec: ModelSpec, pc: ParamCount) -> int:
    """The main part's parameters outside its embeddings, layers and lm_head: the final norm and
    any other outer tensor (an embedding norm, a projection)."""
    return rule_base(spec, pc) - pc.embedding - pc.layers - pc.lm_head


def _layers_position(spec: ModelSpec) -> int:
    """Show the layers after the embeddings and before the final norm / head."""
    comps = list(dict.fromkeys(x.component for x in spec.tensors))
    return sum(1 for c in comps if c.startswith("embed"))


def parts_table(spec: ModelSpec, pc: ParamCount) -> Table:
    """A whole model's parts: the main one (language model) and each other part, adding up to total."""
    t = figures_table("parts (whole model)", "part", "parameters", "share")
    for name, params in pc.parts.items():
        t.add_row(name, n(params), f"{params / pc.total:.1%}")
    t.add_section()
    t.add_row("total", n(pc.total), short(pc.total), style="bold")
    return t


def count_view(spec: ModelSpec, pc: ParamCount) -> RenderableType:
    parts: list[RenderableType] = [header(spec), *layer_tables(spec, pc), totals_table(spec, pc)]
    if pc.parts:
        parts.append(parts_table(spec, pc))
    parts.extend(Text(f"note: {note}", style="dim") for note in spec.notes)
    if spec.source:
        parts.append(Text(f"source: {spec.source}", style="dim"))
    return Group(*parts)


def tensors_grid(spec: ModelSpec) -> Grid:
    """Every named tensor with its shape, as in the transformers module tree."""
    g = Grid(f"{spec.name}: named tensors",
             [Col("name"), Col("shape"), Col("numel", right=True, under=1),
              Col("repeats", wrap=True, under=0)])
    for x, grp in spec.all_tensors():
        shape = "[" + ", ".join(str(d) for d in x.shape) + "]"
        where = ""
        if grp is not None:
            where = f"{LAYER} in {grp.layers.describe()}"
        if x.copies > 1:
            where += f" × {x.copies} experts"
        if x.tied_to:
            where = f"tied to {x.tied_to}"
        g.add(x.name, shape, x.numel // x.copies, where.strip())
    return g


def explain_lines(spec: ModelSpec, pc: ParamCount) -> list[str]:
    """Each sum with this model's numbers put in."""
    lines = []
    for group, gc in zip(spec.layer_groups, pc.groups, strict=True):
        lines.append(f"one {group.name} layer:")
        for x in group.tensors:
            dims = " × ".join(n(d) for d in x.shape)
            copies = f" × {x.copies} experts" if x.copies > 1 else ""
            lines.append(f"  {x.name} = {dims}{copies} = {n(x.numel)}")
        lines.append(f"  sum = {n(gc.per_layer)}")
        lines.append(f"{gc.num_layers} {group.name} layers = {gc.num_layers} × {n(gc.per_layer)} = {n(gc.total)}")
        if spec.moe and gc.per_layer_active is not None and gc.per_layer_active != gc.per_layer:
            k, e = spec.moe.experts_per_tok, spec.moe.num_experts
            lines.append(f"  active: routed experts × {k}/{e}, the rest whole = {n(gc.per_layer_active)} per layer")
    for x in spec.tensors:
        dims = " × ".join(n(d) for d in x.shape)
        if x.tied_to:
            lines.append(f"{x.name} = {dims}, tied to {x.tied_to}: counted there, adds 0")
        else:
            lines.append(f"{x.name} = {dims} = {n(x.numel)}")
    others = {p.name for p in spec.parts}
    parts = [f"{k} {n(v)}" for k, v in pc.breakdown.items()
             if not k.startswith("layers/") and k.split("/", 1)[0] not in others]
    if spec.layer_groups:
        parts.insert(_layers_position(spec), f"layers {n(pc.layers)}")
    parts.extend(f"{name} {n(v)}" for name, v in pc.parts.items() if name in others)
    lines.append(f"total = {' + '.join(parts)} = {n(pc.total)}")
    if not spec.layer_groups:  # a part without layers: no L, d or V for the rule
        return lines
    s = spec.shape
    base = rule_base(spec, pc)
    against = f" vs the {spec.main_part} model, {n(base)}" if pc.parts else ""
    lines.append(
        f"rule of thumb = 12 × {s.num_layers} × {n(s.hidden_size)}² + {n(s.vocab_size)} × "
        f"{n(s.hidden_size)} = {n(pc.rule_of_thumb)} "
        f"({pct(percent_off(pc.rule_of_thumb, base))}{against})"
    )
    return lines


def count_json(spec: ModelSpec, pc: ParamCount) -> dict[str, Any]:
    s = spec.shape
    return {
        "model": spec.name,
        "model_type": spec.model_type,
        "family": spec.family,
        **provenance(spec),
        "total_params": pc.total,
        "active_params": pc.active,
        "embedding_params": pc.embedding,
        "lm_head_params": pc.lm_head,
        "layer_params": pc.layers,
        "tied_embeddings": s.tied_embeddings,
        "num_layers": s.num_layers,
        "hidden_size": s.hidden_size,
        "num_heads": s.num_heads,
        "num_kv_heads": s.num_kv_heads,
        "head_dim": s.head_dim,
        "intermediate_size": s.intermediate_size,
        "vocab_size": s.vocab_size,
        "moe": None
        if spec.moe is None
        else {
            "num_experts": spec.moe.num_experts,
            "experts_per_tok": spec.moe.experts_per_tok,
            "shared_experts": spec.moe.shared_experts,
        },
        "groups": [
            {
                "name": g.name,
                "num_layers": g.num_layers,
                "params_per_layer": g.per_layer,
                "active_params_per_layer": g.per_layer_active,
                "components": g.components,
            }
            for g in pc.groups
        ],
        "breakdown": pc.breakdown,
        **({"parts": pc.parts} if pc.parts else {}),
        "rule_of_thumb": {
            "formula": "12*L*d^2 + V*d",
            "params": pc.rule_of_thumb,
            # a whole model's rule describes its main part (the language model)
            "percent_off": round(percent_off(pc.rule_of_thumb, rule_base(spec, pc)), 4),
        },
        **dict(spec.unbuilt),  # e.g. mtp_params: in the checkpoint, not in the model transformers builds
        "notes": list(spec.notes),
        "source": spec.source,
    }


def count_grid(items: list[tuple[str, ModelSpec, ParamCount]]) -> Grid:
    """One column per model: shape, parameters by part (adding up to the total), total, active and
    the rule of thumb against the language model. A part without layers (--part audio_projector)
    leaves the shape, lm_head and rule-of-thumb cells empty."""
    g = Grid("parameters", [Col("figure"), *(Col(label, right=True, wrap=True) for label, _, _ in items)],
             keep=1)
    specs = [s for _, s, _ in items]
    counts = [pc for _, _, pc in items]
    layered = [bool(s.layer_groups) for s in specs]

    def row(label: str, values: list[Cell], **kw: bool) -> None:
        g.add(label, *values, **kw)

    def shape(values: list[Cell]) -> list[Cell]:
        return [v if has else None for v, has in zip(values, layered, strict=True)]

    row("model", [s.name if s.name != label else None for label, s, _ in items])
    row("model_type", [s.model_type for s in specs])
    row("layers", shape([s.shape.num_layers for s in specs]))
    row("d_model", shape([s.shape.hidden_size for s in specs]))
    row("heads / kv heads", shape([f"{s.shape.num_heads}/{s.shape.num_kv_heads}" for s in specs]))
    row("head_dim", shape([s.shape.head_dim for s in specs]))
    row("d_ff", shape([s.shape.intermediate_size for s in specs]))
    row("vocab", shape([s.shape.vocab_size for s in specs]))
    row("tied embeddings", shape([s.shape.tied_embeddings for s in specs]))
    row("experts (top-k)", [
        f"{s.moe.num_experts} (top-{s.moe.experts_per_tok or '?'})" if s.moe else "-" for s in specs
    ])
    # the parts, adding up to the total: the main part's embeddings, layers, lm_head and other
    # outer tensors (final norm …), then each other part of a whole model (vision, audio …)
    row("embeddings", shape([pc.embedding for pc in counts]), section=True)
    row("layers (all)", shape([pc.layers for pc in counts]))
    row("lm_head", shape([pc.lm_head for pc in counts]))
    row("final norm and other tensors", [other_outer(s, pc) for s, pc in zip(specs, counts, strict=True)])
    names = dict.fromkeys(name for s, pc in zip(specs, counts, strict=True)
                          for name in pc.parts if name != s.main_part)
    for name in names:
        row(f"{name} (whole part)", [pc.parts.get(name, "-") if pc.parts else "-" for pc in counts])
    row("total", [pc.total for pc in counts], bold=True, section=True)
    row("total (short)", [Fig(short(pc.total), short(pc.total)) for pc in counts])
    row("active per token", [pc.active for pc in counts])
    row("rule of thumb 12·L·d² + V·d", shape([pc.rule_of_thumb for pc in counts]))
    offs = [percent_off(pc.rule_of_thumb, rule_base(s, pc)) for s, pc in zip(specs, counts, strict=True)]
    row("rule of thumb off by (vs the language model)",
        shape([Fig(pct(off), round(off, 4)) for off in offs]))
    if all(r is None for r in g.rows[0][1:]):
        g.rows.pop(0)
        g.sections = {i - 1 for i in g.sections}
        g.bold = {i - 1 for i in g.bold}
    return g
