"""`llmcalc flops` output: the per-token, per-sequence and training tables, the catalog, JSON, explain."""

from __future__ import annotations

from typing import Any

from rich.console import Group, RenderableType
from rich.table import Table

from llmcalc.formulas.flops import (
    FLOPS_PER_MAC,
    STATE_READS,
    TRAINING_MULTIPLIER,
    AttentionTerm,
    FlopsResult,
    position_flops,
    relative_proj_flops,
)
from llmcalc.model.spec import CCA, MLSTM, RWKV, Mixer, ModelSpec
from llmcalc.render import ctx_label, figures_table, n, note_lines, pct, plural, sci
from llmcalc.render.count import header
from llmcalc.render.grid import Col, Fig, Grid

SI_FLOPS = (("Z", 10**21), ("E", 10**18), ("P", 10**15), ("T", 10**12), ("G", 10**9),
            ("M", 10**6), ("K", 10**3))


def flop(value: int) -> str:
    """FLOPs in decimal SI units: 15.36 GFLOP, 1.09 PFLOP."""
    for unit, size in SI_FLOPS:
        if value >= size:
            return f"{value / size:,.2f} {unit}FLOP"
    return f"{value} FLOP"


def _pair_dims(a: AttentionTerm) -> str:
    """One query–key pair's head dims, "(d_qk + d_v)", times the maps of differential attention."""
    dims = f"({a.qk_head_dim} + {a.v_head_dim})"
    return dims if a.maps == 1 else f"{a.maps} maps × {dims}"


def _mixer_expression(m: Mixer) -> str:
    """One layer's per-token mixer FLOPs as the sum it is: conv, state reads, (mLSTM) q·n."""
    if m.kind == RWKV:
        return "0: token shift and WKV are elementwise"
    reads = STATE_READS.get(m.kind, 1)
    conv = m.conv_dim - m.elementwise_conv_dim  # per-token taps (Inkling 2) are elementwise
    parts = [f"2 × {n(conv)} × {m.conv_kernel}"] if conv and m.conv_kernel else []
    if reads:
        times = f"{reads} × " if reads > 1 else ""
        parts.append(f"{times}2 × {n(m.heads)} × {m.head_dim} × {m.state_size}")
    if m.kind == MLSTM:
        parts.append(f"2 × {n(m.heads)} × {m.state_size}")
    return " + ".join(parts) or "0"


def _table(title: str) -> Table:
    t = figures_table(title, "figure", "FLOPs", "")
    return t


def flops_view(spec: ModelSpec, r: FlopsResult) -> RenderableType:
    per_token = _table(f"per token at context {ctx_label(r.ctx)} (one token attending to {n(r.ctx)})")
    per_token.add_row("weights: 2 × matrix elements", n(r.weight_flops_per_token),
                      flop(r.weight_flops_per_token))
    per_token.add_row("attention: QKᵀ and weighted sum of V", n(r.attention_flops_per_token),
                      flop(r.attention_flops_per_token))
    if r.source_len is not None:
        per_token.add_row(f"  of which cross-attention over {n(r.source_len)} "
                          f"{r.source_tokens} tokens",
                          n(r.cross_attention_flops_per_token),
                          flop(r.cross_attention_flops_per_token))
    if r.mixer_terms:
        per_token.add_row("SSM mixers: convolution + state readout (any context)",
                          n(r.mixer_flops_per_token), flop(r.mixer_flops_per_token))
    per_token.add_section()
    per_token.add_row("forward per token", n(r.forward_flops_per_token),
                      flop(r.forward_flops_per_token), style="bold")
    per_token.add_row("seed rule 2N + 4·n·d·L", n(r.seed_rule_per_token),
                      pct(r.seed_rule_percent_off))
    share = r.attention_flops_per_token / r.forward_flops_per_token
    per_token.add_row("attention share", "", f"{share:.1%}")
    per_token.add_row("attention overtakes weights at context",
                      never(r) if r.attention_crossover_ctx is None
                      else n(r.attention_crossover_ctx), "")

    seqs = f"{n(r.batch)} sequences" if r.batch > 1 else "one sequence"
    per_seq = _table(f"per forward pass over {seqs} of {n(r.ctx)} tokens")
    per_seq.add_row("prefill, full attention (as FlopCounterMode counts)",
                    n(r.forward_flops_per_sequence), flop(r.forward_flops_per_sequence))
    encoder = bool(spec.layer_groups) and all(
        g.attention is not None and not g.attention.causal for g in spec.layer_groups
    )
    if encoder:  # an encoder LM: bidirectional, every token attends to every token; no decoding
        per_seq.add_row("bidirectional (pairs the mask keeps: all, or within local windows)",
                        n(r.forward_flops_per_sequence_causal),
                        flop(r.forward_flops_per_sequence_causal))
    else:
        per_seq.add_row("prefill, causal (pairs the mask keeps)",
                        n(r.forward_flops_per_sequence_causal),
                        flop(r.forward_flops_per_sequence_causal))
        per_seq.add_row(f"decode: one new token per sequence at position {n(r.ctx)}",
                        n(r.decode_flops_per_step), flop(r.decode_flops_per_step))

    train = _table("training (forward + backward = 3 × forward)")
    train.add_row("per token", n(r.training_flops_per_token), flop(r.training_flops_per_token))
    if r.tokens is not None and r.training_flops is not None:
        train.add_row(f"for {n(r.tokens)} tokens", n(r.training_flops), flop(r.training_flops),
                      style="bold")
    tables: list[RenderableType] = [per_token, per_seq, train]
    if r.source_len is not None:
        tables.insert(0, encoder_table(r))
    if r.parts:
        tables.insert(0, image_table(r))
    if r.audio_parts:
        tables.insert(0, audio_table(r))
    return Group(header(spec), *tables, *note_lines(r.notes))


def audio_table(r: FlopsResult) -> Table:
    """A whole model's audio parts, each per input as its family defines one (Part.clip)."""
    t = _table("per audio input (not in the figures below, whose context is text and image tokens)")
    for p in r.audio_parts:
        what = (f"weights ({n(p.tokens)} tokens)" if p.tokens else "weights") + (
            " + attention" if p.attention else "")
        t.add_row(f"{p.part}, {p.clip}: {what}", n(p.total), flop(p.total))
        if p.context_tokens:
            t.add_row("  tokens it adds to the context", n(p.context_tokens), "")
    return t


def encoder_table(r: FlopsResult) -> Table:
    """An encoder–decoder: what one source sequence costs before the decoder's tokens."""
    if r.source_tokens == "vision":  # the images' tokens: the tower's FLOPs are per image above
        t = _table(f"per sequence: the {n(r.source_len or 0)} vision tokens of its images (once; "
                   "in the per-sequence figures below)")
    else:
        t = _table(f"per source sequence of {n(r.source_len or 0)} encoder tokens (once; in the "
                   "per-sequence figures below)")
        t.add_row("encoder: weights + bidirectional attention", n(r.encoder_flops_per_sequence),
                  flop(r.encoder_flops_per_sequence))
    t.add_row("cross-attention K and V projections (once per source token, cached)",
              n(r.cross_kv_flops_per_sequence), flop(r.cross_kv_flops_per_sequence))
    return t


def image_table(r: FlopsResult) -> Table:
    """A whole model's parts, per image, and the tokens one image adds to the context."""
    size = next((p.input_size for p in r.parts if p.input_size), None)
    at = f" at {size}×{size} pixels" if size else ""
    t = _table(f"per image{at} (the language model's figures below; its tokens are in the context)")
    for p in r.parts:
        what = (f"weights ({n(p.tokens)} tokens)" if p.tokens else "weights") + (
            " + attention" if p.attention else "")
        t.add_row(f"{p.part}: {what}", n(p.total), flop(p.total))
    t.add_section()
    t.add_row("image tokens added to the context", n(r.image_tokens), "")
    if r.images:
        t.add_row(f"this sequence: {n(r.images)} × {n(r.image_tokens)} image + "
                  f"{n(r.text_tokens or 0)} text tokens", n(r.ctx), "")
    return t


def never(r: FlopsResult) -> str:
    """Why attention never overtakes the weights."""
    return "never (every layer is windowed)" if r.attention_terms else "never (no attention layer)"


def flops_json(r: FlopsResult) -> dict[str, Any]:
    return {
        "model": r.model,
        "ctx": r.ctx,
        "batch": r.batch,
        "tokens": r.tokens,
        "weight_flops_per_token": r.weight_flops_per_token,
        "attention_flops_per_token": r.attention_flops_per_token,
        "mixer_flops_per_token": r.mixer_flops_per_token,
        **({"source_len": r.source_len,
            "cross_attention_flops_per_token": r.cross_attention_flops_per_token,
            "encoder_flops_per_sequence": r.encoder_flops_per_sequence,
            "cross_kv_flops_per_sequence": r.cross_kv_flops_per_sequence}
           if r.source_len is not None else {}),
        "forward_flops_per_token": r.forward_flops_per_token,
        "forward_flops_per_sequence": r.forward_flops_per_sequence,
        "forward_flops_per_sequence_causal": r.forward_flops_per_sequence_causal,
        "decode_flops_per_step": r.decode_flops_per_step,
        "training_flops_per_token": r.training_flops_per_token,
        "training_flops": r.training_flops,
        "attention_crossover_ctx": r.attention_crossover_ctx,
        "seed_rule": {
            "formula": "2*N + 4*n*d*L",
            "flops_per_token": r.seed_rule_per_token,
            "percent_off": round(r.seed_rule_percent_off, 4),
        },
        "weight_breakdown": r.weight_breakdown,
        **({"per_image": {p.part: {"flops": p.total, "weight_flops": p.weight,
                                   "attention_flops": p.attention, "tokens": p.tokens,
                                   "image_size": p.input_size} for p in r.parts},
            "image_tokens": r.image_tokens, "images": r.images, "text_tokens": r.text_tokens}
           if r.parts else {}),
        **({"per_audio_input": {p.part: {"input": p.clip, "flops": p.total,
                                         "weight_flops": p.weight, "attention_flops": p.attention,
                                         "tokens": p.tokens, "context_tokens": p.context_tokens}
                                for p in r.audio_parts}}
           if r.audio_parts else {}),
        "notes": list(r.notes),
    }


def explain_lines(spec: ModelSpec, r: FlopsResult) -> list[str]:
    """Each formula with this model's numbers put in."""
    lines = ["weight FLOPs per token = 2 × elements of every matrix a token is multiplied by:"]
    for w in r.weight_terms:
        dims = " × ".join(n(d) for d in w.shape)
        if w.experts:
            k, e = w.experts_per_tok, w.experts
            # stacked [E, …]: k/E of it is used; one tensor per expert ({e}): k of the E copies
            dims = f"{dims} × {k}/{e} (active experts)" if w.stacked else (
                f"{dims} × {k} of {e} experts")
        layers = f"{plural(w.num_layers, 'layer')} × " if w.num_layers is not None else ""
        tied = f" (tied to {w.tied_to}: still multiplied by)" if w.tied_to else ""
        lines.append(f"  {w.name}: {FLOPS_PER_MAC} × {layers}{dims} = {n(w.flops)}{tied}")
    lines.append(f"  sum = {n(r.weight_flops_per_token)}")
    lines.append(f"attention FLOPs per token at n = {n(r.ctx)}: per layer 2·keys·h·d_qk + 2·keys·h·d_v")
    seen = f"({n(r.ctx)} + {r.prefix_tokens} prompt tokens)" if r.prefix_tokens else n(r.ctx)
    for a in r.attention_terms:
        keys = f"min({n(r.ctx)}, window {n(a.window)})" if a.window else seen
        if a.compress:  # the window and the pooled entries (at most index_topk of them)
            pooled = f"⌊{n(r.ctx)} / {a.compress}⌋"
            pooled = f"min({pooled}, index_topk {n(a.topk)})" if a.topk is not None else pooled
            keys = f"({keys} + {pooled} pooled)"
        elif a.topk is not None:
            keys = f"min({keys}, index_topk {n(a.topk)})"
            if a.index_block:  # QSA: the budget plus the incomplete block's keys
                keys = f"min({n(r.ctx)}, {n(a.topk)} + {n(r.ctx)} mod {a.index_block})"
        scored = (f"blocks of {a.index_block} scored" if a.index_block
                  else "pooled entries scored" if a.compress else "keys scored")
        index = (
            f" + {n(a.index_keys)} {scored} × {n(a.index_pair_flops)} (indexer)"
            if a.index_pair_flops
            else ""
        )
        lines.append(
            f"  {a.group}: {plural(a.num_layers, 'layer')} × (2 × {keys} × {a.heads} heads × "
            f"{_pair_dims(a)}{index}) = {n(a.num_layers * a.per_layer)}"
            if a.topk is not None or a.index_pair_flops
            else f"  {a.group}: {plural(a.num_layers, 'layer')} × 2 × {keys} × {a.heads} heads × "
            f"{_pair_dims(a)} = {n(a.num_layers * a.per_layer)}"
        )
    if any(a.index_block for a in r.attention_terms):
        lines.append(
            "  Qwen4-Exp QSA (transformers modeling_qwen4_exp.py, Qwen4ExpTextQSAIndexer): the "
            "indexer scores one mean-pooled key per complete block at 2·indexer_n_heads·"
            "indexer_head_dim FLOPs; the softmax reads the indexer_budget tokens of the blocks it "
            "picks plus the incomplete block"
        )
    if any(a.compress for a in r.attention_terms):
        lines.append(
            "  DeepSeek-V4 compressed attention (transformers modeling_deepseek_v4.py): besides "
            "its window, a query reads one entry pooled from each complete window of m tokens "
            "(CSA: at most index_topk of them, which its indexer picks after scoring every entry "
            "at 2·index_n_heads·index_head_dim FLOPs; the pooling and the indexer's sum over heads "
            "are elementwise)"
        )
    if any(a.topk is not None and not a.index_block and not a.compress for a in r.attention_terms):
        lines.append(
            "  DeepSeek sparse attention (DeepSeek-V3.2-Exp §2.1; transformers "
            "modeling_deepseek_v32.py): each query's softmax reads at most index_topk keys; the "
            "lightning indexer scores every earlier key at 2·index_n_heads·(index_head_dim + 1) "
            "FLOPs (q·k per indexer head, then the weighted sum over heads); layers that share "
            "an indexer's choice score nothing"
        )
    for g in spec.layer_groups:
        if g.attention is not None and (g.attention.position_keys or g.attention.relative_proj):
            att = g.attention
            positions = att.position_keys + att.relative_count(r.ctx)
            table = att.sequence_flops + relative_proj_flops(att, ctx=r.ctx)
            lines.append(
                f"  {g.name}, relative positions: {plural(len(g.layers), 'layer')} × 2 × "
                f"{n(positions)} positions × {att.heads} heads × {att.qk_head_dim} = "
                f"{n(len(g.layers) * position_flops(att, ctx=r.ctx))} (and {n(table)} per layer "
                "and sequence projecting the position table)"
            )
    if r.source_len is not None:
        lines.append(f"  cross-attention over {n(r.source_len)} {r.source_tokens} tokens, every "
                     "cross-attending "
                     f"layer: {n(r.cross_attention_flops_per_token)} (its K and V projections: "
                     f"{n(r.cross_kv_flops_per_sequence)} once per source sequence)")
    lines.append(f"  sum = {n(r.attention_flops_per_token)}")
    mixer = ""
    if r.mixer_terms:
        lines.append("SSM mixer FLOPs per token (any context): per layer 2·conv_dim·kernel "
                     "+ 2·h·p·N per read of the state (readout y = C·h; the gated delta rule and "
                     "KDA also read S·k, lightning attention and the mLSTM also form k·vᵀ, the "
                     "mLSTM also reads its normalizer; state updates, gates and RWKV's WKV are "
                     "elementwise, not counted)")
        for t in r.mixer_terms:
            m = t.mixer
            if m.kind == CCA:
                lines.append(
                    f"  {t.group} (cca): {plural(t.num_layers, 'layer')} × {n(m.step_flops)} "
                    f"(depthwise convolution positions recomputed from the state) "
                    f"= {n(t.num_layers * t.per_layer)}"
                )
                continue
            lines.append(
                f"  {t.group} ({t.mixer.kind}): {plural(t.num_layers, 'layer')} × "
                f"({_mixer_expression(t.mixer)}) = {n(t.num_layers * t.per_layer)}"
            )
        if spec.depth_flops_per_token:
            lines.append(f"  {spec.depth_flops_what} (any context) = "
                         f"{n(spec.depth_flops_per_token)}")
        lines.append(f"  sum = {n(r.mixer_flops_per_token)}")
        mixer = f" + {n(r.mixer_flops_per_token)}"
    elif spec.depth_flops_per_token:
        lines.append(f"FLOPs per token across depth, any context: {spec.depth_flops_what} = "
                     f"{n(spec.depth_flops_per_token)}")
        mixer = f" + {n(r.mixer_flops_per_token)}"
    lines.append(
        f"forward per token = {n(r.weight_flops_per_token)} + {n(r.attention_flops_per_token)}"
        f"{mixer} = {n(r.forward_flops_per_token)}"
    )
    s = spec.shape
    lines.append(
        f"seed rule = 2 × {n(r.active_params)} + 4 × {n(r.ctx)} × {n(s.hidden_size)} × "
        f"{s.num_layers} = {n(r.seed_rule_per_token)} ({pct(r.seed_rule_percent_off)})"
    )
    depth = ([f"{n(r.ctx)} × {n(spec.depth_flops_per_token)} ({spec.depth_flops_what})"]
             if spec.depth_flops_per_token else [])
    # the model's own prompt tokens through the layers (CPM-Ant), its once-a-sequence matmuls
    depth += ([f"{r.prefix_tokens} prompt tokens × {n(r.layer_weight_flops_per_token)} (the "
               "layers' weights)"] if r.prefix_tokens else [])
    depth += [f"{n(r.sequence_flops)} (once per sequence: the pooler)"] if r.sequence_flops else []
    # relative positions (DeBERTa, XLNet): every query's scores, the table projected once a layer
    depth += [f"{len(g.layers)} × ({n(r.ctx)} × {n(position_flops(g.attention, ctx=r.ctx))} + "
              f"{n(g.attention.sequence_flops + relative_proj_flops(g.attention, ctx=r.ctx))}) "
              "(relative positions)"
              for g in spec.layer_groups if g.attention is not None
              and (g.attention.position_keys or g.attention.relative_proj)]
    actx = r.ctx + r.prefix_tokens  # the tokens the layers attend over
    full = " + ".join(
        [f"{a.num_layers} × {n(actx)}² × 2 × {a.heads} × {_pair_dims(a)}"
         if not a.compress else
         f"{a.num_layers} × {n(a.full_pairs)} pairs ({n(r.ctx)} × ({n(r.ctx)} + "
         f"⌊{n(r.ctx)} / {a.compress}⌋)) × 2 × {a.heads} × {_pair_dims(a)}"
         for a in r.attention_terms]
        + [f"{a.num_layers} × {n(r.ctx)}² × {n(a.index_pair_flops)} (indexer)"
           if not a.index_block and not a.compress else
           f"{a.num_layers} × {n(r.ctx)} × ⌊{n(r.ctx)} / {a.compress}⌋ × "
           f"{n(a.index_pair_flops)} (indexer)"
           if a.compress else
           f"{a.num_layers} × {n(a.index_causal_pairs)} query–block pairs × "
           f"{n(a.index_pair_flops)} (QSA indexer)"
           for a in r.attention_terms if a.index_pair_flops]
        + [f"{t.num_layers} × {n(t.full_per_layer)} ({t.mixer.kind} scan"
           + (f" in chunks of {t.mixer.chunk}" if t.mixer.chunk else "")
           + f", conv over {n(r.ctx)} + {t.mixer.conv_kernel - 1} padded positions)"
           if t.mixer.kind != CCA else
           f"{t.num_layers} × {n(t.full_per_layer)} (cca: the padded depthwise positions and "
           "the first delayed value)"
           for t in r.mixer_terms]
        + depth
    )
    causal = " + ".join(
        [f"{a.num_layers} × {n(a.causal_pairs)} pairs × 2 × {a.heads} × "
         f"{_pair_dims(a)}" for a in r.attention_terms]
        + [f"{a.num_layers} × {n(a.index_causal_pairs)} pairs × {n(a.index_pair_flops)} (indexer)"
           for a in r.attention_terms if a.index_pair_flops]
        + [f"{m.num_layers} × {n(r.ctx)} steps × {n(m.per_layer)}" for m in r.mixer_terms]
        + depth
    )
    def times_batch(expr: str) -> str:
        return f"{n(r.batch)} × ({expr})" if r.batch > 1 else expr

    lines.append(
        f"prefill, full = {times_batch(f'{n(r.ctx)} × {n(r.weight_flops_per_token)}' + plus(full))} "
        f"= {n(r.forward_flops_per_sequence)}"
    )
    pairs = "n(n+1)/2 pairs" + (", window w: w(w+1)/2 + (n−w)·w" if any(
        a.window for a in r.attention_terms) else "") + (
        ", QSA budget B in blocks of b: Σ min(i, B + i mod b)" if any(
            a.index_block for a in r.attention_terms) else "") + (
        ", pooled entries Σ min(⌊i/m⌋, index_topk)" if any(
            a.compress for a in r.attention_terms) else "")
    causal_sum = f"{n(r.ctx)} × {n(r.weight_flops_per_token)}" + plus(causal)
    lines.append(
        f"prefill, causal ({pairs}) = {times_batch(causal_sum)} "
        f"= {n(r.forward_flops_per_sequence_causal)}"
    )
    lines.append(
        f"training per token = {TRAINING_MULTIPLIER} × {n(r.forward_flops_per_token)} "
        f"= {n(r.training_flops_per_token)}"
    )
    if r.tokens is not None and r.training_flops is not None:
        lines.append(
            f"training for {n(r.tokens)} tokens = {n(r.tokens)} × {n(r.training_flops_per_token)} "
            f"= {n(r.training_flops)}"
        )
    return lines




def plus(expr: str) -> str:
    return f" + {expr}" if expr else ""


def past_limit(spec: ModelSpec, ctx: int) -> bool:
    """The context is above the model's max_position_embeddings."""
    limit = spec.shape.max_position_embeddings
    return limit is not None and ctx > limit


def flops_grid(items: list[tuple[str, ModelSpec, FlopsResult]]) -> Grid:
    """One column per model: per token, per sequence, decode and training FLOPs."""
    g = Grid("FLOPs", [Col("figure"), *(Col(label, right=True, wrap=True) for label, _, _ in items)], keep=1)
    rs = [r for _, _, r in items]
    g.add("context", *(Fig(ctx_label(r.ctx), r.ctx) for r in rs))
    g.add("max_position_embeddings", *(s.shape.max_position_embeddings for _, s, _ in items))
    g.add("weights per token", *(r.weight_flops_per_token for r in rs), section=True)
    g.add("attention per token", *(r.attention_flops_per_token for r in rs))
    g.add("forward per token", *(r.forward_flops_per_token for r in rs), bold=True)
    g.add("attention share", *(Fig(f"{r.attention_flops_per_token / r.forward_flops_per_token:.1%}",
                                   round(r.attention_flops_per_token / r.forward_flops_per_token, 6))
                               for r in rs))
    g.add("seed rule 2N + 4·n·d·L", *(r.seed_rule_per_token for r in rs))
    g.add("attention overtakes weights at", *(
        "never" if r.attention_crossover_ctx is None else r.attention_crossover_ctx for r in rs))
    g.add(f"prefill, full (batch {rs[0].batch})", *(r.forward_flops_per_sequence for r in rs),
          section=True)
    g.add("prefill, causal", *(r.forward_flops_per_sequence_causal for r in rs))
    g.add("decode step", *(r.decode_flops_per_step for r in rs))
    g.add("training per token", *(r.training_flops_per_token for r in rs), section=True)
    if rs[0].tokens is not None:
        g.add(f"training for {n(rs[0].tokens)} tokens", *(
            Fig(f"{sci(r.training_flops)} FLOPs", r.training_flops) if r.training_flops else None
            for r in rs), bold=True)
    return g  # a context past a model's window: its note, on stderr (the CLI says each model's)


def catalog_grid(rows: list[tuple[str, ModelSpec, FlopsResult]], *, ctx: int,
                 left_out: list[str] | None = None) -> Grid:
    """One row per bundled model; * marks a context past the model's max_position_embeddings;
    ``left_out``: the bundled models whose forward pass is not modelled, named in a note."""
    g = Grid(f"forward FLOPs per token at context {ctx_label(ctx)}", [
        Col("model"), Col("weights", right=True, drop=3), Col("attention", right=True),
        Col("SSM", right=True, drop=4), Col("forward", right=True), Col("attn share", right=True),
        Col("overtakes at", right=True, drop=2), Col("max ctx", right=True, drop=1),
    ])
    marked = 0
    for name, spec, r in rows:
        past = past_limit(spec, ctx)
        marked += past
        cross = r.attention_crossover_ctx
        limit = spec.shape.max_position_embeddings
        g.add(
            Fig(name + " *", name) if past else name,
            Fig(flop(r.weight_flops_per_token), r.weight_flops_per_token),
            Fig(flop(r.attention_flops_per_token), r.attention_flops_per_token),
            Fig(flop(r.mixer_flops_per_token), r.mixer_flops_per_token) if r.mixer_terms else "-",
            Fig(flop(r.forward_flops_per_token), r.forward_flops_per_token),
            Fig(f"{r.attention_flops_per_token / r.forward_flops_per_token:.1%}",
                round(r.attention_flops_per_token / r.forward_flops_per_token, 6)),
            "never" if cross is None else cross,
            limit,
        )
    if marked:
        g.notes.append(f"* {marked} of {len(rows)} models computed past their "
                       f"max_position_embeddings (max ctx); the figures assume they run there anyway")
    if left_out:
        g.notes.append(f"left out, their FLOPs not computed ({', '.join(left_out)}): "
                       "`llmcalc flops MODEL` says why")
    return g
