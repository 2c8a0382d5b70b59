"""llama.cpp's compute buffer: the worst-case graphs the engine reserves, built op for op as its
model code builds them, and the bytes ggml's allocator places them in (ggml_graph.reserve).
Sources: llama-cpp-python 0.3.36's ``vendor/llama.cpp``, cited as ``src/<file>: <function>``.

src/llama-context.cpp: llama_context::sched_reserve — the scheduler's buffer is sized by three
reservations, a prompt graph of n_tokens = min(n_ctx, n_ubatch) tokens in n_seq_max sequences
with n_outputs = min(n_tokens, n_batch), a generation graph of n_seq_max tokens and the prompt
graph again; ggml_gallocr_reserve_n keeps the largest. graph_reserve rounds n_tokens up to a
multiple of n_seqs. The CPU backend alone: one graph, one buffer (no splits, no copies).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from llmcalc.errors import UsageError
from llmcalc.inputs.gguf_file import GgufHeader
from llmcalc.planning.engines import ggml_graph as g
from llmcalc.planning.engines.ggml_graph import Graph, Tensor

if TYPE_CHECKING:
    from llmcalc.planning.engines.llama_cpp import Cache, Context, Hparams

# the architectures whose graphs are built here (src/models/<arch>.cpp)
GRAPHS = ("llama", "qwen2", "qwen3", "qwen2moe", "qwen3moe", "phi3", "gemma2", "gemma3", "lfm2",
          "mamba")


@dataclass(frozen=True)
class Setup:
    """One reservation: the ubatch and the caches' views (src/llama-graph.cpp: llm_graph_context)."""

    n_tokens: int
    n_seqs: int
    n_outputs: int
    n_stream: int  # KV streams: 1 with a unified cache, else n_seqs
    n_kv: int  # cells of the full cache (src/llama-kv-cache.cpp: init_full → get_size)
    n_kv_swa: int  # cells of the sliding-window cache
    flash_attn: bool
    type_k: str
    type_v: str


class Weights:
    """The GGUF's tensors as external graph leaves, by name (ne in ggml order)."""

    def __init__(self, header: GgufHeader):
        self.label = header.label
        self._shapes: dict[str, tuple[int, ...]] = {t.name: tuple(t.shape)
                                                    for t in header.tensors}
        self._made: dict[str, Tensor] = {}

    def has(self, name: str) -> bool:
        return name in self._shapes

    def __call__(self, name: str, fallback: str | None = None) -> Tensor:
        if name not in self._shapes and fallback is not None:
            name = fallback  # a tied output: token_embd created again (TENSOR_DUPLICATED)
        if name not in self._shapes:
            raise UsageError(f"{self.label}: tensor {name} is missing (llama.cpp's graph uses "
                             "it)")
        t = self._made.get(name)
        if t is None:
            t = self._made[name] = g.weight(*self._shapes[name], name=name)
        return t

    def opt(self, name: str) -> Tensor | None:
        return self(name) if name in self._shapes else None


def _contiguous(t: Tensor) -> bool:
    """ggml/src/ggml.c: ggml_is_contiguous."""
    return t.nb == Tensor(t.type, t.ne).nb


class Builder:
    """The parts of src/llama-graph.cpp: llm_graph_context every model here uses."""

    def __init__(self, header: GgufHeader, s: Setup, *, is_swa: Sequence[bool],
                 n_head: Sequence[int], n_head_kv: Sequence[int], head_k: int, head_v: int):
        self.w = Weights(header)
        self.s = s
        self.gf = Graph()
        self.is_swa = is_swa
        self.n_head = n_head
        self.n_head_kv = n_head_kv
        self.head_k = head_k
        self.head_v = head_v
        self.v_trans = not s.flash_attn
        attn = [il for il, kv in enumerate(n_head_kv) if kv > 0]
        # src/llama-kv-cache.cpp: llama_kv_cache — a transposed V cache row is as wide as the
        # widest layer's; Hadamard rotations of a quantized cache whose head size divides by 64
        self.n_embd_v_max = max((n_head_kv[il] * head_v for il in attn), default=0)
        self.rot_k = _quantized(s.type_k) and head_k % 64 == 0
        self.rot_v = _quantized(s.type_v) and head_v % 64 == 0
        self.caches: dict[tuple[int, str], Tensor] = {}
        self.n_kv_of: dict[int, int] = {}

    # --- inputs (src/llama-graph.cpp: build_inp_*) ---
    def inp_embd(self, tok_embd: Tensor, n_embd: int) -> Tensor:
        """build_inp_embd: the token ids and an embeddings input (allocated, never used in a
        token batch: ggml_build_forward_select keeps it a leaf), the rows gathered."""
        n = self.s.n_tokens
        tokens = g.new_input("i32", n, name="inp_tokens")
        embd = g.new_input("f32", n_embd, n, name="inp_embd")
        rows = g.get_rows(tok_embd, tokens)
        self.gf.expand(rows)
        self.gf.expand(embd)
        return rows

    def inp_pos(self) -> Tensor:
        return g.new_input("i32", self.s.n_tokens, name="inp_pos")

    def inp_out_ids(self) -> Tensor:
        return g.new_input("i32", self.s.n_outputs, name="out_ids")

    def attn_inp(self, swa: bool = False, rot: bool = True) -> dict[str, Tensor]:
        """build_attn_inp_kv_impl (one per cache; build_attn_inp_kv_iswa: the full and the
        sliding-window cache's): k/v row indices, the mask [n_kv, n_tokens/n_stream, 1,
        n_stream] (f16 for flash attention), the Hadamard rotations of a quantized cache
        (src/llama-kv-cache.cpp: build_input_k_idxs, build_input_v_idxs, build_input_k_rot,
        build_input_v_rot; llama_kv_cache: attn_rot_k/v for a quantized type and a head size
        that divides by 64; build_inp_mem_hybrid_iswa builds no rotations: rot False)."""
        s = self.s
        n_kv = s.n_kv_swa if swa else s.n_kv
        inp = {"k_idxs": g.new_input("i64", s.n_tokens),
               "v_idxs": g.new_input("i64", s.n_tokens * (self.n_embd_v_max if self.v_trans
                                                          else 1)),
               "mask": g.new_input("f16" if s.flash_attn else "f32", n_kv,
                                   s.n_tokens // s.n_stream, 1, s.n_stream)}
        if self.rot_k and rot:
            nrot = 64
            while self.head_k % (nrot * 2) == 0:
                nrot *= 2
            inp["k_rot"] = g.new_input("f32", nrot, nrot)
        if self.rot_v and rot:
            inp["v_rot"] = g.new_input("f32", 64, 64)
        self.n_kv_of[id(inp["mask"])] = n_kv
        return inp

    # --- blocks ---
    def norm(self, cur: Tensor, w: Tensor | None, b: Tensor | None = None,
             op: str = "RMS_NORM") -> Tensor:
        """build_norm: (RMS) norm, then × weight, + bias."""
        cur = g.unary(op, cur)
        if w is not None:
            cur = g.binary("MUL", cur, w)
        if b is not None:
            cur = g.binary("ADD", cur, b)
        return cur

    def mm(self, w: Tensor, cur: Tensor, b: Tensor | None = None) -> Tensor:
        """build_lora_mm (+ a bias)."""
        out = g.mul_mat(w, cur)
        return g.binary("ADD", out, b) if b is not None else out

    def qkv(self, p: str, cur: Tensor, il: int) -> tuple[Tensor, Tensor, Tensor]:
        """build_qkv: fused (a view of each part) or separate projections, reshaped to heads."""
        w, n = self.w, self.s.n_tokens
        hq, hk = self.n_head[il], self.n_head_kv[il]
        dk, dv = self.head_k, self.head_v
        if w.has(p + "attn_qkv.weight"):
            qkv = self.mm(w(p + "attn_qkv.weight"), cur, w.opt(p + "attn_qkv.bias"))
            nb1 = qkv.nb[1]
            q = g.view(qkv, (dk, hq, n), (g.row_size(qkv.type, dk), nb1))
            k = g.view(qkv, (dk, hk, n), (g.row_size(qkv.type, dk), nb1))
            v = g.view(qkv, (dv, hk, n), (g.row_size(qkv.type, dv), nb1))
            return q, k, v
        q = self.mm(w(p + "attn_q.weight"), cur, w.opt(p + "attn_q.bias"))
        k = self.mm(w(p + "attn_k.weight"), cur, w.opt(p + "attn_k.bias"))
        v = self.mm(w(p + "attn_v.weight"), cur, w.opt(p + "attn_v.bias"))
        return g.reshape(q, dk, hq, n), g.reshape(k, dk, hk, n), g.reshape(v, dv, hk, n)

    def _cache(self, il: int, kind: str, inp: dict[str, Tensor]) -> Tensor:
        key = (il, kind)
        t = self.caches.get(key)
        if t is None:
            cells = self.n_kv_of[id(inp["mask"])]
            width = (self.n_head_kv[il] * self.head_k if kind == "k" else
                     self.n_embd_v_max if self.v_trans else self.n_head_kv[il] * self.head_v)
            typ = self.s.type_k if kind == "k" else self.s.type_v
            t = Tensor(typ, (width, cells, self.s.n_stream), external=True)
            self.caches[key] = t
        return t

    def hadamard(self, cur: Tensor, rot: Tensor) -> Tensor:
        """src/llama-impl.h: llama_mul_mat_hadamard."""
        n = rot.ne[0]
        total = cur.ne[0] * cur.ne[1] * cur.ne[2] * cur.ne[3]
        res = (g.reshape(cur, n, total // n) if _contiguous(cur)
               else g.cont(cur, n, total // n))
        res = g.mul_mat(rot, res)
        return g.reshape(res, *cur.ne)

    def attn(self, inp: dict[str, Tensor], il: int, q: Tensor, k: Tensor, v: Tensor,
             wo: Tensor | None, wo_b: Tensor | None = None, *, iswa: bool = False,
             soft_cap: bool = False, sinks: Tensor | None = None) -> Tensor:
        """build_attn (a KV cache): the new K and V stored into the cache (src/llama-kv-cache.cpp:
        cpy_k, cpy_v), attention over the cache's views (get_k, get_v), the output projection."""
        s, gf = self.s, self.gf
        if "k_rot" in inp:
            q = self.hadamard(q, inp["k_rot"])
            k = self.hadamard(k, inp["k_rot"])
        if "v_rot" in inp:
            v = self.hadamard(v, inp["v_rot"])
        # build_attn expands q, v, k; its iswa overload q, k, v
        for t in ((q, k, v) if iswa else (q, v, k)):
            gf.expand(t)
        kc, vc = self._cache(il, "k", inp), self._cache(il, "v", inp)
        gf.expand(self._cpy_k(kc, k, inp["k_idxs"]))
        gf.expand(self._cpy_v(vc, v, inp["v_idxs"]))
        kv_size = kc.ne[1]
        dk, dv, hk = self.head_k, self.head_v, self.n_head_kv[il]
        n_kv, ns = self.n_kv_of[id(inp["mask"])], s.n_stream
        kview = g.view(kc, (dk, hk, n_kv, ns),
                       (g.row_size(kc.type, dk), g.row_size(kc.type, dk * hk),
                        g.row_size(kc.type, dk * hk * kv_size)))
        if not self.v_trans:
            vview = g.view(vc, (dv, hk, n_kv, ns),
                           (g.row_size(vc.type, dv), g.row_size(vc.type, dv * hk),
                            g.row_size(vc.type, vc.ne[0] * kv_size)))
        else:
            vview = g.view(vc, (n_kv, hk, dv, ns),
                           (g.row_size(vc.type, kv_size * dv),
                            g.row_size(vc.type, kv_size),
                            g.row_size(vc.type, kv_size * vc.ne[0])))
        cur = self.mha(q, kview, vview, inp["mask"], soft_cap, sinks)
        if "v_rot" in inp:
            cur = self.hadamard(cur, inp["v_rot"])
        if wo is not None:
            cur = self.mm(wo, cur, wo_b)
        return cur

    def _cpy_k(self, kc: Tensor, k: Tensor, idxs: Tensor) -> Tensor:
        n_gqa = k.ne[0] * k.ne[1]
        k2 = g.view(k, (n_gqa, k.ne[2]), (k.nb[2],))
        if kc.ne[2] > 1:
            kc = g.reshape(kc, kc.ne[0], kc.ne[1] * kc.ne[2])
        return g.set_rows(kc, k2, idxs)

    def _cpy_v(self, vc: Tensor, v: Tensor, idxs: Tensor) -> Tensor:
        n_gqa = v.ne[0] * v.ne[1]
        if not self.v_trans:
            v2 = g.view(v, (n_gqa, v.ne[2]), (v.nb[2],))
            if vc.ne[2] > 1:
                vc = g.reshape(vc, vc.ne[0], vc.ne[1] * vc.ne[2])
            return g.set_rows(vc, v2, idxs)
        if g.row_size(v.type, n_gqa) == v.nb[2]:
            v2 = g.reshape(v, n_gqa, v.ne[2])
        else:
            v2 = g.cont(v, n_gqa, v.ne[2])
        if n_gqa < vc.ne[0]:
            v2 = g.pad(v2, vc.ne[0] - n_gqa)
        n_v = vc.ne[0] * vc.ne[1] * vc.ne[2]
        vview = g.reshape(vc, 1, n_v)
        v2 = g.reshape(v2, 1, v2.ne[0] * v2.ne[1])
        return g.set_rows(vview, v2, idxs)

    def mha(self, q: Tensor, k: Tensor, v: Tensor, mask: Tensor, soft_cap: bool,
            sinks: Tensor | None) -> Tensor:
        """build_attn_mha: flash attention (one fused op) or the score matrix
        [n_kv, n_tokens, n_head] soft-maxed and multiplied into V."""
        ns = k.ne[3]
        q = g.view(q, (q.ne[0], q.ne[1], q.ne[2] // ns, ns),
                   (q.nb[1], q.nb[2], q.nb[2] * (q.ne[2] // ns)))
        q = g.permute(q, 0, 2, 1, 3)
        k = g.permute(k, 0, 2, 1, 3)
        v = g.permute(v, 0, 2, 1, 3)
        if self.s.flash_attn:
            if k.type == "f32":
                k = g.cast(k, "f16")
            if v.type == "f32":
                v = g.cast(v, "f16")
            cur = g.flash_attn_ext(q, k, v, mask, sinks)
            cur = g.reshape(cur, cur.ne[0] * cur.ne[1], cur.ne[2] * cur.ne[3])
            self.gf.expand(cur)
            return cur
        kq = g.mul_mat(k, q)
        if soft_cap:
            kq = g.unary("SCALE", kq)
            kq = g.unary("UNARY", kq)
            kq = g.unary("SCALE", kq)
        kq = g.soft_max_ext(kq, mask)
        if sinks is not None:
            kq.src = kq.src + (sinks,)
        kqv = g.mul_mat(v, kq)
        cur = g.permute(kqv, 0, 2, 1, 3)
        cur = g.cont(cur, cur.ne[0] * cur.ne[1], cur.ne[2] * cur.ne[3])
        self.gf.expand(cur)
        return cur

    def ffn(self, p: str, cur: Tensor, suffix: str = "") -> Tensor:
        """build_ffn with a parallel gate: up, gate, the GLU of the two (swiglu/geglu split),
        down (suffix "_shexp": a shared expert's)."""
        w = self.w
        if suffix:
            up = self.mm(w(p + f"ffn_up{suffix}.weight"), cur)
            gate = self.mm(w(p + f"ffn_gate{suffix}.weight"), cur)
            return self.mm(w(p + f"ffn_down{suffix}.weight"), g.glu_split(gate, up))
        if not w.has(p + "ffn_gate.weight"):  # phi3: one fused up+gate matrix, LLM_FFN_SWIGLU
            up = self.mm(w(p + "ffn_up.weight"), cur)
            cur = g.Tensor(up.type, (up.ne[0] // 2,) + up.ne[1:], "GLU", [up])
            return self.mm(w(p + "ffn_down.weight"), cur, w.opt(p + "ffn_down.bias"))
        up = self.mm(w(p + "ffn_up.weight"), cur, w.opt(p + "ffn_up.bias"))
        gate = self.mm(w(p + "ffn_gate.weight"), cur, w.opt(p + "ffn_gate.bias"))
        cur = g.glu_split(gate, up)
        return self.mm(w(p + "ffn_down.weight"), cur, w.opt(p + "ffn_down.bias"))

    def moe(self, p: str, cur: Tensor, n_expert_used: int, norm_w: bool) -> Tensor:
        """build_moe_ffn (softmax gating, no groups): the router's top-k, the experts' up/gate/
        down by ids, weighted, summed over the chosen experts."""
        w, gf = self.w, self.gf
        n_embd, n_tokens = cur.ne[0], cur.ne[1]
        logits = self.mm(w(p + "ffn_gate_inp.weight"), cur)
        n_expert = logits.ne[0]
        probs = g.unary("SOFT_MAX", logits)
        order = g.argsort(probs)
        selected = g.view(order, (n_expert_used, n_tokens), (order.nb[1],))
        weights = g.get_rows(g.reshape(probs, 1, n_expert, n_tokens), selected)
        if norm_w:
            weights = g.reshape(weights, n_expert_used, n_tokens)
            total = g.unary("CLAMP", g.sum_rows(weights))
            weights = g.binary("DIV", weights, total)
            weights = g.reshape(weights, 1, n_expert_used, n_tokens)
        gf.expand(weights)
        cur = g.reshape(cur, n_embd, 1, n_tokens)
        up = g.mul_mat_id(w(p + "ffn_up_exps.weight"), cur, selected)
        gate = g.mul_mat_id(w(p + "ffn_gate_exps.weight"), cur, selected)
        cur = g.glu_split(gate, up)
        experts = g.mul_mat_id(w(p + "ffn_down_exps.weight"), cur, selected)
        experts = g.binary("MUL", experts, weights)
        gf.expand(experts)
        parts = [g.view(experts, (n_embd, n_tokens), (experts.nb[2],))
                 for _ in range(n_expert_used)]
        for part in parts:
            gf.expand(part)
        out = parts[0]
        for part in parts[1:]:
            out = g.binary("ADD", out, part)
            gf.expand(out)
        if n_expert_used == 1:
            out = g.cont(out)
        return out

    def finish(self, embd: Tensor, logits: Tensor) -> Graph:
        """llm_graph_result::set_outputs: t_embd and t_logits are outputs (never freed)."""
        embd.flags |= g.OUTPUT
        logits.flags |= g.OUTPUT
        self.gf.expand(logits)
        return self.gf


def _quantized(type_name: str) -> bool:
    return type_name not in ("f32", "f16", "bf16")


def build_llama(b: Builder, n_layer: int, n_embd: int, meta: Mapping[str, Any],
                arch: str) -> Graph:
    """src/models/llama.cpp (and qwen2.cpp, qwen3.cpp, qwen2moe.cpp, qwen3moe.cpp: the same
    block with q/k norms, biases, a shared expert): embeddings, per layer RMS norm → Q/K/V (RoPE) → attention → + residual →
    RMS norm → FFN or MoE → + residual; the last layer's rows cut to the outputs; norm, lm_head."""
    w = b.w
    inp_l = b.inp_embd(w("token_embd.weight"), n_embd)
    pos = b.inp_pos()
    inp = b.attn_inp()
    out_ids = b.inp_out_ids()
    n_used = int(meta.get(f"{arch}.expert_used_count", 0) or 0)
    factors = w.opt("rope_freqs.weight")
    for il in range(n_layer):
        p = f"blk.{il}."
        inp_sa = inp_l
        cur = b.norm(inp_l, w(p + "attn_norm.weight"))
        q, k, v = b.qkv(p, cur, il)
        if w.has(p + "attn_q_norm.weight"):
            q = b.norm(q, w(p + "attn_q_norm.weight"))
        q = g.rope(q, pos, factors)
        if w.has(p + "attn_k_norm.weight"):
            k = b.norm(k, w(p + "attn_k_norm.weight"))
        k = g.rope(k, pos, factors)
        cur = b.attn(inp, il, q, k, v, w(p + "attn_output.weight"), w.opt(p + "attn_output.bias"))
        if il == n_layer - 1:
            cur = g.get_rows(cur, out_ids)
            inp_sa = g.get_rows(inp_sa, out_ids)
        ffn_inp = g.binary("ADD", cur, inp_sa)
        cur = b.norm(ffn_inp, w(p + "ffn_norm.weight"))
        if w.has(p + "ffn_gate_inp.weight"):
            # src/models/llama.cpp, qwen3moe.cpp: build_moe_ffn(…, LLM_FFN_SILU, norm_w = true);
            # qwen2moe.cpp: norm_w false, then a shared expert gated by silu(x)/x of its router
            moe_out = b.moe(p, cur, n_used, arch != "qwen2moe")
            if w.has(p + "ffn_gate_inp_shexp.weight"):
                gate_inp = b.mm(w(p + "ffn_gate_inp_shexp.weight"), cur)
                gate = g.binary("DIV", g.unary("UNARY", gate_inp), gate_inp)
                shared = b.ffn(p, cur, suffix="_shexp")
                moe_out = g.binary("ADD", moe_out, g.binary("MUL", shared, gate))
            cur = moe_out
        else:
            cur = b.ffn(p, cur)
        inp_l = g.binary("ADD", cur, ffn_inp)
    embd = b.norm(inp_l, w("output_norm.weight"))
    logits = b.mm(w("output.weight", "token_embd.weight"), embd)
    return b.finish(embd, logits)


def build_phi3(b: Builder, n_layer: int, n_embd: int) -> Graph:
    """src/models/phi3.cpp: one fused QKV matrix (views of its rows), Q scaled after RoPE, the
    residual added first ((residual, cur) sources), a fused up+gate FFN (LLM_FFN_SWIGLU)."""
    w = b.w
    inp_l = b.inp_embd(w("token_embd.weight"), n_embd)
    pos = b.inp_pos()
    inp = b.attn_inp()
    out_ids = b.inp_out_ids()
    factors = w.opt("rope_factors_long.weight")
    for il in range(n_layer):
        p = f"blk.{il}."
        residual = inp_l
        cur = b.norm(inp_l, w(p + "attn_norm.weight"), w.opt(p + "attn_norm.bias"))
        q, k, v = b.qkv(p, cur, il)
        q = g.rope(q, pos, factors)
        k = g.rope(k, pos, factors)
        q = g.unary("SCALE", q)
        cur = b.attn(inp, il, q, k, v, w(p + "attn_output.weight"), w.opt(p + "attn_output.bias"))
        if il == n_layer - 1:
            cur = g.get_rows(cur, out_ids)
            residual = g.get_rows(residual, out_ids)
        cur = g.binary("ADD", cur, residual)
        residual = cur
        cur = b.norm(cur, w(p + "ffn_norm.weight"), w.opt(p + "ffn_norm.bias"))
        cur = b.ffn(p, cur)
        inp_l = g.binary("ADD", residual, cur)
    embd = b.norm(inp_l, w("output_norm.weight"), w.opt("output_norm.bias"))
    logits = b.mm(w("output.weight", "token_embd.weight"), embd, w.opt("output.bias"))
    return b.finish(embd, logits)


def build_gemma(b: Builder, n_layer: int, n_embd: int, meta: Mapping[str, Any],
                arch: str) -> Graph:
    """src/models/gemma2.cpp, gemma3.cpp: embeddings scaled, per layer RMS norm → Q/K/V (gemma3:
    q/k norms) → RoPE → Q scaled → attention (gemma2: soft-capped scores) over the full or the
    sliding-window cache (build_attn_inp_kv_iswa) → post-attention norm → + residual → norm →
    GELU FFN → post-FFN norm → + residual; the logits soft-capped (gemma2 always, gemma3 where
    final_logit_softcapping is set)."""
    w = b.w
    inp_l = g.unary("SCALE", b.inp_embd(w("token_embd.weight"), n_embd))
    pos = b.inp_pos()
    iswa = any(b.is_swa)
    inp_full = b.attn_inp()
    inp_swa = b.attn_inp(True) if iswa else inp_full
    out_ids = b.inp_out_ids()
    for il in range(n_layer):
        p = f"blk.{il}."
        cur = b.norm(inp_l, w(p + "attn_norm.weight"))
        q, k, v = b.qkv(p, cur, il)
        if w.has(p + "attn_q_norm.weight"):
            q = b.norm(q, w(p + "attn_q_norm.weight"))
        q = g.rope(q, pos)
        if w.has(p + "attn_k_norm.weight"):
            k = b.norm(k, w(p + "attn_k_norm.weight"))
        k = g.rope(k, pos)
        q = g.unary("SCALE", q)
        cur = b.attn(inp_swa if b.is_swa[il] else inp_full, il, q, k, v,
                     w(p + "attn_output.weight"), iswa=iswa, soft_cap=arch == "gemma2")
        if il == n_layer - 1:
            cur = g.get_rows(cur, out_ids)
            inp_l = g.get_rows(inp_l, out_ids)
        cur = b.norm(cur, w(p + "post_attention_norm.weight"))
        sa_out = g.binary("ADD", cur, inp_l)
        cur = b.norm(sa_out, w(p + "ffn_norm.weight"))
        cur = b.ffn(p, cur)
        cur = b.norm(cur, w(p + "post_ffw_norm.weight"))
        inp_l = g.binary("ADD", cur, sa_out)
    embd = b.norm(inp_l, w("output_norm.weight"))
    logits = b.mm(w("output.weight", "token_embd.weight"), embd)
    if arch == "gemma2" or meta.get(f"{arch}.final_logit_softcapping"):
        logits = g.unary("SCALE", g.unary("UNARY", g.unary("SCALE", logits)))
    return b.finish(embd, logits)


class _Rs:
    """build_rs_inp_impl: the state-copy ids (one per state row; its first n_seqs the main
    sequences' rows, the rest the others') and build_rs: a recurrent layer's states gathered."""

    def __init__(self, b: Builder, n_rs: int):
        self.b = b
        self.n_rs = n_rs
        self.s_copy = g.new_input("i32", n_rs, name="rs_s_copy")
        n = b.s.n_seqs
        self.main = g.view(self.s_copy, (n,))
        self.extra = g.view(self.s_copy, (n_rs - n,))

    def state(self, n_embd: int, name: str) -> Tensor:
        """src/llama-memory-recurrent.cpp: a layer's R or S cache [n_embd, mem_size], f32."""
        return g.weight(n_embd, self.n_rs, name=name)

    def build(self, s: Tensor, state_size: int,
              get_rows: Callable[[Tensor, Tensor], Tensor] = g.get_rows) -> Tensor:
        """src/llama-graph.cpp: build_rs — the zeroed row (a view, scaled in place), the main
        rows gathered (get_rows, or the layer's own function), the other rows copied back."""
        gf, n_seqs = self.b.gf, self.b.s.n_seqs
        states = g.reshape(s, state_size, s.ne[1])
        gf.expand(g.inplace("SCALE", g.view(states, (state_size,))))
        out = get_rows(states, self.main)
        gf.expand(out)
        extra = g.get_rows(states, self.extra)
        gf.expand(g.cpy(extra, g.view(s, (state_size, self.n_rs - n_seqs), (s.nb[1],))))
        return out


def build_lfm2(b: Builder, n_layer: int, n_embd: int, is_recr: Sequence[bool], n_rs: int,
               d_conv: int) -> Graph:
    """src/models/lfm2.cpp: short-convolution layers (in_proj → B·x gated, concatenated after the
    conv state, the last d_conv columns stored back, SSM_CONV, × C, out_proj) between attention
    layers (q/k norms, RoPE; build_inp_mem_hybrid / _iswa), each with an SwiGLU FFN; the residual
    added first."""
    w, gf, s = b.w, b.gf, b.s
    cur = b.inp_embd(w("token_embd.weight"), n_embd)
    iswa = any(b.is_swa)
    rs = _Rs(b, n_rs)
    inp_full = b.attn_inp(rot=not iswa)
    inp_swa = b.attn_inp(True, rot=False) if iswa else inp_full
    pos = b.inp_pos()
    out_ids = b.inp_out_ids()
    n_seqs, n_st = s.n_seqs, s.n_tokens // s.n_seqs
    for il in range(n_layer):
        p = f"blk.{il}."
        prev = cur
        cur = b.norm(cur, w(p + "attn_norm.weight"))
        if is_recr[il]:
            cur = g.reshape(cur, cur.ne[0], n_st, n_seqs)
            bcx = b.mm(w(p + "shortconv.in_proj.weight"), cur)
            chunk = bcx.ne[0] // 3
            bv, cv, xv = (g.view(bcx, (chunk, bcx.ne[1], bcx.ne[2]), (bcx.nb[1], bcx.nb[2]))
                          for _ in range(3))
            bx = g.transpose(g.binary("MUL", bv, xv))
            r = rs.state(n_embd * d_conv, f"cache_r_l{il}")
            conv = g.reshape(rs.build(r, n_embd * d_conv), d_conv, n_embd, n_seqs)
            bx = g.concat(conv, bx, 0)
            snap = g.view(bx, (d_conv, bx.ne[1], bx.ne[2]), (bx.nb[1], bx.nb[2]))
            gf.expand(g.cpy(snap, g.view(r, (d_conv * n_embd, n_seqs), (r.nb[1],))))
            conv_out = g.ssm_conv(bx, w(p + "shortconv.conv.weight"))
            y = b.mm(w(p + "shortconv.out_proj.weight"), g.binary("MUL", cv, conv_out))
            cur = g.reshape(y, y.ne[0], n_st * n_seqs)
        else:
            q, k, v = b.qkv(p, cur, il)
            q = g.rope(b.norm(q, w(p + "attn_q_norm.weight")), pos)
            k = g.rope(b.norm(k, w(p + "attn_k_norm.weight")), pos)
            cur = b.attn(inp_swa if b.is_swa[il] else inp_full, il, q, k, v,
                         w(p + "attn_output.weight"), iswa=iswa)
        if il == n_layer - 1:
            cur = g.get_rows(cur, out_ids)
            prev = g.get_rows(prev, out_ids)
        cur = g.binary("ADD", prev, cur)
        ffn_out = b.ffn(p, b.norm(cur, w(p + "ffn_norm.weight")))
        cur = g.binary("ADD", cur, ffn_out)
    embd = b.norm(cur, w("token_embd_norm.weight"))
    logits = b.mm(w("output.weight", "token_embd.weight"), embd)
    return b.finish(embd, logits)


def build_mamba(b: Builder, n_layer: int, n_embd: int, n_rs: int, d_conv: int, d_inner: int,
                d_state: int, dt_rank: int, dt_b_c_rms: bool) -> Graph:
    """src/models/mamba.cpp, mamba-base.cpp: build_mamba_layer — in_proj to x and z, x after the
    conv state (concat, the last d_conv − 1 columns stored back), SSM_CONV + bias, SiLU, x_proj to
    dt/B/C, dt_proj, the selective scan over the gathered SSM states (build_rs), its final states
    stored back, y + x·D gated by SiLU(z), out_proj; the residual added last."""
    w, gf, s = b.w, b.gf, b.s
    inp_l = b.inp_embd(w("token_embd.weight"), n_embd)
    rs = _Rs(b, n_rs)
    out_ids = b.inp_out_ids()
    n_seqs, n_st = s.n_seqs, s.n_tokens // s.n_seqs
    for il in range(n_layer):
        p = f"blk.{il}."
        cur = b.norm(inp_l, w(p + "attn_norm.weight"))
        r = rs.state((d_conv - 1) * d_inner, f"cache_r_l{il}")
        st = rs.state(d_state * d_inner, f"cache_s_l{il}")
        conv = g.reshape(rs.build(r, (d_conv - 1) * d_inner), d_conv - 1, d_inner, n_seqs)
        cur = g.reshape(cur, cur.ne[0], n_st, n_seqs)
        xz = b.mm(w(p + "ssm_in.weight"), cur)
        x = g.view(xz, (d_inner, xz.ne[1], xz.ne[2]), (xz.nb[1], xz.nb[2]))
        z = g.view(xz, (d_inner, xz.ne[1], xz.ne[2]), (xz.nb[1], xz.nb[2]))
        conv_x = g.concat(conv, g.transpose(x), 0)
        last = g.view(conv_x, (d_conv - 1, d_inner, n_seqs), (conv_x.nb[1], conv_x.nb[2]))
        gf.expand(g.cpy(last, g.view(r, ((d_conv - 1) * d_inner * n_seqs,))))
        x = g.ssm_conv(conv_x, w(p + "ssm_conv1d.weight"))
        x = g.unary("UNARY", g.binary("ADD", x, w(p + "ssm_conv1d.bias")))
        x_db = b.mm(w(p + "ssm_x.weight"), x)
        dt = g.view(x_db, (dt_rank, n_st, n_seqs), (x_db.nb[1], x_db.nb[2]))
        bb = g.view(x_db, (d_state, 1, n_st, n_seqs), (d_state * 4, x_db.nb[1], x_db.nb[2]))
        cc = g.view(x_db, (d_state, 1, n_st, n_seqs), (d_state * 4, x_db.nb[1], x_db.nb[2]))
        if dt_b_c_rms:  # falcon-mamba: dt, B and C RMS-normed (no weights) instead
            dt, bb, cc = g.unary("RMS_NORM", dt), g.unary("RMS_NORM", bb), g.unary("RMS_NORM", cc)
        else:
            dt = g.cont(dt)
        dt = g.binary("ADD", b.mm(w(p + "ssm_dt.weight"), dt), w(p + "ssm_dt.bias"))
        xs = x
        x4 = g.reshape(x, 1, d_inner, n_st, n_seqs)
        a = w(p + "ssm_a")

        def scan(states: Tensor, ids: Tensor, x4: Tensor = x4, dt: Tensor = dt,
                 a: Tensor = a, bb: Tensor = bb, cc: Tensor = cc) -> Tensor:
            ssm = g.reshape(states, d_state, 1, d_inner, n_rs)
            return g.ssm_scan(ssm, x4, dt, a, bb, cc, ids)

        y_ssm = rs.build(st, d_state * d_inner, scan)
        gf.expand(g.cpy(g.view(y_ssm, (d_state * d_inner * n_seqs,)),
                        g.view(st, (d_state * d_inner * n_seqs,))))
        y = g.view(y_ssm, (d_inner, n_st, n_seqs), (x4.nb[2], x4.nb[3]))
        y = g.binary("ADD", y, g.binary("MUL", xs, w(p + "ssm_d")))
        y = g.glu_split(g.cont(z), y)
        cur = b.mm(w(p + "ssm_out.weight"), y)
        cur = g.reshape(cur, cur.ne[0], n_st * n_seqs)
        if il == n_layer - 1:
            cur = g.get_rows(cur, out_ids)
            inp_l = g.get_rows(inp_l, out_ids)
        inp_l = g.binary("ADD", cur, inp_l)
    embd = b.norm(inp_l, w("output_norm.weight"))
    logits = b.mm(w("output.weight", "token_embd.weight"), embd)
    return b.finish(embd, logits)


def setups(ctx: Context, n_kv: int, n_kv_swa: int, type_k: str, type_v: str) -> list[Setup]:
    """src/llama-context.cpp: sched_reserve — the prompt graph and the generation graph."""
    n_seqs = ctx.n_seq
    n_tokens = min(ctx.n_ctx, ctx.n_ubatch)
    n_outputs = min(n_tokens, ctx.n_batch)  # n_outputs_max: n_batch
    pp_tokens = -(-n_tokens // n_seqs) * n_seqs  # graph_reserve: a multiple of n_seqs
    common = (ctx.n_stream, n_kv, n_kv_swa, ctx.flash_attn, type_k, type_v)
    return [Setup(pp_tokens, n_seqs, n_outputs, *common),
            Setup(n_seqs, n_seqs, n_seqs, *common)]


def build(header: GgufHeader, hp: Hparams, s: Setup) -> Graph:
    """The graph src/models/<arch>.cpp builds for one reservation."""
    arch, meta = header.architecture, header.metadata
    b = Builder(header, s, is_swa=hp.is_swa, n_head=hp.n_head, n_head_kv=hp.n_head_kv,
                head_k=hp.head_k, head_v=hp.head_v)
    if arch in ("llama", "qwen2", "qwen3", "qwen2moe", "qwen3moe"):
        return build_llama(b, hp.n_layer, hp.n_embd, meta, arch)
    if arch in ("gemma2", "gemma3"):
        return build_gemma(b, hp.n_layer, hp.n_embd, meta, arch)
    if arch == "phi3":
        return build_phi3(b, hp.n_layer, hp.n_embd)
    n_rs = max(1, s.n_seqs)  # src/llama-memory-recurrent.cpp: mem_size = max(1, n_seq_max)
    if arch == "lfm2":
        d_conv = int(meta.get("lfm2.shortconv.l_cache", 0)) - 1
        return build_lfm2(b, hp.n_layer, hp.n_embd, hp.is_recr, n_rs, d_conv)
    if arch == "mamba":
        def key(name: str) -> int:
            return int(meta.get(f"mamba.ssm.{name}", 0))
        return build_mamba(b, hp.n_layer, hp.n_embd, n_rs, key("conv_kernel"),
                           key("inner_size"), key("state_size"), key("time_step_rank"),
                           bool(meta.get("mamba.ssm.dt_b_c_rms", False)))
    raise UsageError(f"{header.label}: llama.cpp's compute graph of {arch} is not modelled")


def compute_bytes(header: GgufHeader, hp: Hparams, ctx: Context, caches: Sequence[Cache],
                  type_k: str, type_v: str) -> int:
    """The CPU compute buffer (sched_reserve: "CPU compute buffer size"): the largest of the
    reserved graphs as ggml's allocator lays it out."""
    n_kv = next((c.cells for c in caches if c.name == "full"), 0)
    n_kv_swa = next((c.cells for c in caches if c.name == "swa"), 0)
    return max(g.reserve(build(header, hp, s))
               for s in setups(ctx, n_kv, n_kv_swa, type_k, type_v))
