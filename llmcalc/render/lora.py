"""LoRA counts: trainable, total and trainable %, by adapted module kind; JSON and explain."""

from __future__ import annotations

from typing import Any

from rich.console import Group, RenderableType

from llmcalc.formulas.lora import LoraCount
from llmcalc.model.spec import ModelSpec
from llmcalc.render import figures_table, n
from llmcalc.render.count import header

RSLORA_NOTE = "rsLoRA scales the update by α/√r instead of α/r: no parameter count changes"


def lora_view(spec: ModelSpec, lc: LoraCount) -> RenderableType:
    c = lc.config
    t = figures_table(f"LoRA r={c.r} α={c.alpha}" + (" DoRA" if c.dora else "")
                      + (" rsLoRA" if c.rslora else ""), "adapted", "modules", "parameters")
    for a in lc.adapters:
        t.add_row(a.component, n(a.modules), n(a.params))
    if lc.saved_params:
        t.add_row("modules_to_save (full copies)", str(len(c.modules_to_save)),
                  n(lc.saved_params))
    t.add_section()
    t.add_row("trainable", "", n(lc.trainable), style="bold")
    t.add_row("frozen base", "", n(lc.base_params))
    t.add_row("total", "", n(lc.total))
    t.add_row("trainable %", "", f"{lc.trainable_percent:.4f}%")
    notes = [RSLORA_NOTE] if c.rslora else []
    return Group(header(spec), t, *notes)


def lora_json(spec: ModelSpec, lc: LoraCount) -> dict[str, Any]:
    c = lc.config
    return {
        "model": spec.name,
        "lora": {
            "r": c.r, "alpha": c.alpha, "targets": list(c.targets), "embeddings": c.embeddings,
            "experts": c.experts, "modules_to_save": list(c.modules_to_save), "dora": c.dora,
            "rslora": c.rslora,
        },
        "adapters": {a.component: {"modules": a.modules, "params": a.params}
                     for a in lc.adapters},
        "modules_to_save_params": lc.saved_params,
        "trainable": lc.trainable,
        "frozen": lc.base_params,
        "total": lc.total,
        "trainable_percent": lc.trainable_percent,
    }


def lora_explain(lc: LoraCount) -> list[str]:
    r = lc.config.r
    lines = [f"each adapted W [out, in] gets A [{r}, in] + B [out, {r}] = {r} · (in + out) "
             "parameters (Hu et al. 2021)" + ("; DoRA adds out magnitudes" if lc.config.dora else "")]
    for a in lc.adapters:
        lines.append(f"  {a.component}: {n(a.modules)} modules → {n(a.params)}")
    lines.append(f"trainable = {n(lc.adapter_params)} + {n(lc.saved_params)} (modules_to_save) "
                 f"= {n(lc.trainable)}; total = {n(lc.base_params)} + {n(lc.trainable)} = "
                 f"{n(lc.total)}; {n(lc.trainable)} / {n(lc.total)} = "
                 f"{lc.trainable_percent:.4f}%")
    return lines
