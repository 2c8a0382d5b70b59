"""A compute graph as ggml builds it and the bytes ggml's graph allocator reserves for it, pure
Python: the few ops llama.cpp's model graphs use (shapes, strides, views) and ggml-alloc.c's
allocator run over the graph in its order. Sources: llama-cpp-python 0.3.36's ``vendor/llama.cpp``,
cited as ``ggml/src/<file>: <function>``.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from llmcalc.units import BLOCK_TYPES

# ggml/src/ggml-impl.h: TENSOR_ALIGNMENT — the CPU buffer type's alignment
# (ggml/src/ggml-backend.cpp: ggml_backend_cpu_buffer_type_get_alignment)
ALIGNMENT = 32

# ggml/src/ggml.c: type_traits — (block size, bytes per block); the cache's block types as
# llmcalc.units.BLOCK_TYPES reads them from ggml-common.h
TYPES: dict[str, tuple[int, int]] = {
    "f32": (1, 4), "f16": (1, 2), "bf16": (1, 2), "i32": (1, 4), "i64": (1, 8),
    **{name: (t.block, t.size) for name, t in BLOCK_TYPES.items()},
}

# ggml/src/ggml-alloc.c: ggml_op_can_inplace — ops whose result may take a source's memory
INPLACE = frozenset({"FILL", "SCALE", "DIAG_MASK_ZERO", "DIAG_MASK_INF", "ADD", "ADD_ID", "ADD1",
                     "SUB", "MUL", "DIV", "SQR", "SQRT", "LOG", "UNARY", "ROPE", "ROPE_BACK",
                     "SILU_BACK", "RMS_NORM", "RMS_NORM_BACK", "CLAMP", "SOFT_MAX",
                     "SOFT_MAX_BACK"})
VIEW_OPS = frozenset({"VIEW", "RESHAPE", "PERMUTE", "TRANSPOSE"})

INPUT, OUTPUT = 1, 2  # ggml.h: GGML_TENSOR_FLAG_INPUT, GGML_TENSOR_FLAG_OUTPUT


def row_size(type_name: str, n: int) -> int:
    """ggml/src/ggml.c: ggml_row_size — bytes of n elements (whole blocks)."""
    block, size = TYPES[type_name]
    return n // block * size


class Tensor:
    """One ggml_tensor: its type, shape [ne0..ne3], strides, op and sources; ``external`` marks a
    tensor with memory of its own (weights, the KV cache): the allocator never places it."""

    __slots__ = ("type", "ne", "nb", "op", "src", "view_src", "flags", "external", "name",
                 "children", "views", "allocated", "offset")

    def __init__(self, type_name: str, ne: Sequence[int], op: str = "NONE",
                 src: Sequence[Tensor] = (), *, view_src: Tensor | None = None,
                 nb: Sequence[int] | None = None, external: bool = False, name: str = ""):
        self.type = type_name
        self.ne = tuple(ne) + (1,) * (4 - len(ne))
        if nb is None:  # ggml/src/ggml.c: ggml_new_tensor_impl — contiguous strides
            block, size = TYPES[type_name]
            strides = [size, size * (self.ne[0] // block)]
            strides += [strides[1] * self.ne[1], strides[1] * self.ne[1] * self.ne[2]]
            nb = strides
        self.nb = tuple(nb)
        self.op = op
        self.src = tuple(src)
        # ggml_view_impl: a view of a view points at the tensor with the memory
        self.view_src: Tensor | None = (view_src.view_src or view_src if view_src is not None
                                        else None)
        self.flags = 0
        self.external = external
        self.name = name
        # the allocator's per-tensor state (ggml-alloc.c: struct hash_node), set by reserve
        self.children = self.views = self.offset = 0
        self.allocated = False

    @property
    def nbytes(self) -> int:
        """ggml/src/ggml.c: ggml_nbytes (0 for an empty tensor)."""
        if min(self.ne) <= 0:
            return 0
        block, size = TYPES[self.type]
        if block == 1:
            n = size
            for i in range(4):
                n += (self.ne[i] - 1) * self.nb[i]
            return n
        n = self.ne[0] * self.nb[0] // block
        for i in range(1, 4):
            n += (self.ne[i] - 1) * self.nb[i]
        return n

    def same_layout(self, other: Tensor) -> bool:
        """ggml/src/ggml-impl.h: ggml_are_same_layout."""
        return self.type == other.type and self.ne == other.ne and self.nb == other.nb


class Graph:
    """ggml/src/ggml.c: ggml_build_forward_expand — nodes and leafs in the order a depth-first
    walk from each expanded tensor reaches them, sources left to right."""

    def __init__(self) -> None:
        self.nodes: list[Tensor] = []
        self.leafs: list[Tensor] = []
        self._seen: set[int] = set()

    def expand(self, tensor: Tensor) -> None:
        # ggml/src/ggml.c: ggml_visit_parents_graph (iterative, same order)
        stack: list[tuple[Tensor, int]] = [(tensor, 0)]
        while stack:
            t, i = stack.pop()
            if i == 0:
                if id(t) in self._seen:
                    continue
                self._seen.add(id(t))
            if i < len(t.src):
                stack.append((t, i + 1))
                stack.append((t.src[i], 0))
                continue
            (self.leafs if t.op == "NONE" else self.nodes).append(t)


class _Block:
    __slots__ = ("offset", "size")

    def __init__(self, offset: int, size: int):
        self.offset = offset
        self.size = size


_HUGE = (2**64 - 1) // 2  # SIZE_MAX/2: the last block of a chunk, as good as endless


class DynAllocator:
    """ggml/src/ggml-alloc.c: ggml_dyn_tallocr — one chunk (the CPU buffer type has no maximum
    size) with a free list sorted by offset whose last block is the endless tail."""

    def __init__(self, alignment: int = ALIGNMENT):
        self.alignment = alignment
        self.blocks = [_Block(0, _HUGE)]
        self.max_size = 0

    def _align(self, n: int) -> int:
        return (n + self.alignment - 1) // self.alignment * self.alignment

    def alloc(self, size: int) -> int:
        """ggml_dyn_tallocr_alloc: the smallest block that fits among all but the last (the later
        one on a tie), else the tail."""
        size = self._align(size)
        best, best_size = -1, None
        for i in range(len(self.blocks) - 1):
            b = self.blocks[i]
            if b.size >= size and (best_size is None or b.size <= best_size):
                best, best_size = i, b.size
        if best == -1:
            best = len(self.blocks) - 1
        block = self.blocks[best]
        offset = block.offset
        block.offset += size
        block.size -= size
        if block.size == 0:
            del self.blocks[best]
        self.max_size = max(self.max_size, offset + size)
        return offset

    def free(self, offset: int, size: int) -> None:
        """ggml_dyn_tallocr_free_bytes: merged with a neighbour where one touches it."""
        size = self._align(size)
        blocks = self.blocks
        for i, b in enumerate(blocks):
            if b.offset + b.size == offset:
                b.size += size
                if i < len(blocks) - 1 and b.offset + b.size == blocks[i + 1].offset:
                    b.size += blocks[i + 1].size
                    del blocks[i + 1]
                return
            if offset + size == b.offset:
                b.offset = offset
                b.size += size
                if i > 0 and blocks[i - 1].offset + blocks[i - 1].size == b.offset:
                    blocks[i - 1].size += b.size
                    del blocks[i]
                return
        pos = 0
        while pos < len(blocks) and blocks[pos].offset < offset:
            pos += 1
        blocks.insert(pos, _Block(offset, size))


def reserve(graph: Graph, alignment: int = ALIGNMENT) -> int:
    """The bytes ggml's graph allocator reserves for the graph: ggml/src/ggml-alloc.c:
    ggml_gallocr_alloc_graph_impl (leafs first, then inputs, then each node after its parents;
    a parent freed once its last child has run) and ggml_gallocr_allocate_node (an in-place op
    takes over a parent it alone uses)."""
    alloc = DynAllocator(alignment)
    for t in graph.leafs:
        t.children = t.views = t.offset = 0
        t.allocated = False
    for t in graph.nodes:
        t.children = t.views = t.offset = 0
        t.allocated = False

    def allocate(t: Tensor) -> None:
        if t.external or t.allocated or t.view_src is not None:
            return
        t.allocated = True
        if t.op in INPLACE:
            for parent in t.src:
                # a view is never "own" (its allocated flag is never set): only real parents;
                # not an output; the same layout, so no extra space is left to free
                if not parent.allocated or parent.flags & OUTPUT or not t.same_layout(parent):
                    continue
                if parent.children == 1 and parent.views == 0:
                    t.offset = parent.offset
                    parent.allocated = False
                    return
        t.offset = alloc.alloc(t.nbytes)

    def free(t: Tensor) -> None:
        if t.flags & OUTPUT:  # graph outputs are never freed
            return
        alloc.free(t.offset, t.nbytes)
        t.allocated = False

    for leaf in graph.leafs:
        allocate(leaf)
    for node in graph.nodes:
        if node.view_src is not None and node.op != "NONE":
            node.view_src.views += 1
        if node.flags & INPUT:
            allocate(node)
        for src in node.src:
            src.children += 1
            if src.flags & INPUT:
                allocate(src)
    for node in graph.nodes:
        for parent in node.src:
            allocate(parent)
        allocate(node)
        for parent in node.src:
            parent.children -= 1
            if parent.children == 0 and parent.views == 0:
                vs = parent.view_src
                if vs is not None:
                    vs.views -= 1
                    if vs.views == 0 and vs.children == 0 and vs.allocated:
                        free(vs)
                elif parent.allocated:
                    free(parent)
    return alloc.max_size


def total(graphs: Iterable[Graph]) -> int:
    """ggml/src/ggml-alloc.c: ggml_gallocr_reserve_n — a buffer grows to the largest graph
    reserved in it, never shrinks."""
    return max(reserve(g) for g in graphs)


# The ops llama.cpp's graphs use, with ggml/src/ggml.c's result shapes and sources (each op's
# function of the same name there); the op's arguments that do not size memory are left out.

def _new(type_name: str, ne: Sequence[int], op: str, *src: Tensor | None) -> Tensor:
    return Tensor(type_name, ne, op, [s for s in src if s is not None])


def new_input(type_name: str, *ne: int, name: str = "") -> Tensor:
    """ggml_new_tensor + ggml_set_input: a graph input the allocator places."""
    t = Tensor(type_name, ne, name=name)
    t.flags |= INPUT
    return t


def weight(*ne: int, name: str = "") -> Tensor:
    """A tensor with memory of its own (a weight, a cache): never placed by the allocator."""
    return Tensor("f32", ne, external=True, name=name)


def unary(op: str, a: Tensor) -> Tensor:
    """Elementwise ops of one source, the result shaped as it: RMS_NORM, NORM, SCALE, CLAMP,
    SOFT_MAX (no mask), UNARY (silu, gelu, tanh …), SQR, SQRT, CONT of a contiguous tensor."""
    return _new(a.type, a.ne, op, a)


def binary(op: str, a: Tensor, b: Tensor) -> Tensor:
    """ADD, MUL, DIV, SUB: the result shaped as a (b broadcast)."""
    return _new(a.type, a.ne, op, a, b)


def mul_mat(a: Tensor, b: Tensor) -> Tensor:
    """ggml_mul_mat: f32 [a.ne1, b.ne1, b.ne2, b.ne3]."""
    return _new("f32", (a.ne[1], b.ne[1], b.ne[2], b.ne[3]), "MUL_MAT", a, b)


def mul_mat_id(a: Tensor, b: Tensor, ids: Tensor) -> Tensor:
    """ggml_mul_mat_id: f32 [a.ne1, ids.ne0, b.ne2]."""
    return _new("f32", (a.ne[1], ids.ne[0], b.ne[2], 1), "MUL_MAT_ID", a, b, ids)


def get_rows(a: Tensor, b: Tensor) -> Tensor:
    """ggml_get_rows: [a.ne0, b.ne0, b.ne1, b.ne2], f32 (i32 rows stay i32)."""
    return _new("i32" if a.type == "i32" else "f32", (a.ne[0], b.ne[0], b.ne[1], b.ne[2]),
                "GET_ROWS", a, b)


def glu_split(a: Tensor, b: Tensor) -> Tensor:
    """ggml_glu_impl with a second source (swiglu_split, geglu_split): shaped as a."""
    return _new(a.type, a.ne, "GLU", a, b)


def rope(a: Tensor, pos: Tensor, factors: Tensor | None = None) -> Tensor:
    """ggml_rope_ext: shaped as a, sources a, positions, frequency factors."""
    return _new(a.type, a.ne, "ROPE", a, pos, factors)


def soft_max_ext(a: Tensor, mask: Tensor | None) -> Tensor:
    """ggml_soft_max_ext: shaped as a, sources a and the mask."""
    return _new(a.type, a.ne, "SOFT_MAX", a, mask)


def cont(a: Tensor, *ne: int) -> Tensor:
    """ggml_cont / ggml_cont_Nd: a contiguous copy, reshaped to ne when given."""
    return _new(a.type, ne or a.ne, "CONT", a)


def cast(a: Tensor, type_name: str) -> Tensor:
    """ggml_cast: a CPY to a new type whose second source is the result itself."""
    t = Tensor(type_name, a.ne, "CPY", [a])
    t.src = (a, t)
    return t


def concat(a: Tensor, b: Tensor, dim: int) -> Tensor:
    ne = list(a.ne)
    ne[dim] += b.ne[dim]
    return _new(a.type, ne, "CONCAT", a, b)


def pad(a: Tensor, p0: int) -> Tensor:
    return _new(a.type, (a.ne[0] + p0,) + a.ne[1:], "PAD", a)


def argsort(a: Tensor) -> Tensor:
    return _new("i32", a.ne, "ARGSORT", a)


def sum_rows(a: Tensor) -> Tensor:
    return _new(a.type, (1,) + a.ne[1:], "SUM_ROWS", a)


def view(a: Tensor, ne: Sequence[int], nb: Sequence[int] = (), op: str = "VIEW") -> Tensor:
    """ggml_view_Nd (op VIEW: strides nb1.. as given, nb0 the type's size, the rest packed) and
    ggml_reshape_Nd (RESHAPE: contiguous strides): no memory of its own, the source's view_src
    carried over."""
    ne4 = tuple(ne) + (1,) * (4 - len(ne))
    strides = None
    if op == "VIEW":
        block, size = TYPES[a.type]
        strides = [size] + list(nb) + [0] * (3 - len(nb))
        if len(nb) == 0:
            strides[1] = size * (ne4[0] // block)
        for i in range(max(len(nb) + 1, 2), 4):
            strides[i] = strides[i - 1] * ne4[i - 1]
    return Tensor(a.type, ne4, op, [a], view_src=a, nb=strides)


def reshape(a: Tensor, *ne: int) -> Tensor:
    return view(a, ne, op="RESHAPE")


def permute(a: Tensor, a0: int, a1: int, a2: int, a3: int) -> Tensor:
    """ggml_permute: axis i of a becomes axis a_i."""
    ne, nb = [0] * 4, [0] * 4
    for i, ax in enumerate((a0, a1, a2, a3)):
        ne[ax], nb[ax] = a.ne[i], a.nb[i]
    return Tensor(a.type, ne, "PERMUTE", [a], view_src=a, nb=nb)


def transpose(a: Tensor) -> Tensor:
    ne = (a.ne[1], a.ne[0], a.ne[2], a.ne[3])
    nb = (a.nb[1], a.nb[0], a.nb[2], a.nb[3])
    return Tensor(a.type, ne, "TRANSPOSE", [a], view_src=a, nb=nb)


def set_rows(a: Tensor, b: Tensor, c: Tensor) -> Tensor:
    """ggml_set_rows: a view of a (the cache), sources b, c, a in that order."""
    t = Tensor(a.type, a.ne, "SET_ROWS", [b, c, a], view_src=a, nb=a.nb)
    return t


def flash_attn_ext(q: Tensor, k: Tensor, v: Tensor, mask: Tensor | None,
                   sinks: Tensor | None = None) -> Tensor:
    """ggml_flash_attn_ext: f32 [v.ne0, q.ne2, q.ne1, q.ne3]."""
    return _new("f32", (v.ne[0], q.ne[2], q.ne[1], q.ne[3]), "FLASH_ATTN_EXT", q, k, v, mask,
                sinks)


def cpy(a: Tensor, b: Tensor) -> Tensor:
    """ggml_cpy: a written into b — a view of b, sources a, b."""
    return Tensor(b.type, b.ne, "CPY", [a, b], view_src=b, nb=b.nb)


def inplace(op: str, a: Tensor) -> Tensor:
    """ggml_scale_inplace and the like: a view of a."""
    return Tensor(a.type, a.ne, op, [a], view_src=a, nb=a.nb)


def ssm_conv(sx: Tensor, c: Tensor) -> Tensor:
    """ggml_ssm_conv: f32 [sx.ne1, sx.ne0 − c.ne0 + 1, sx.ne2]."""
    return _new("f32", (sx.ne[1], sx.ne[0] - c.ne[0] + 1, sx.ne[2]), "SSM_CONV", sx, c)


def ssm_scan(s: Tensor, x: Tensor, dt: Tensor, a: Tensor, b: Tensor, c: Tensor,
             ids: Tensor) -> Tensor:
    """ggml_ssm_scan: f32 1-D, the outputs y (x's elements) then the final states
    (s.ne0·s.ne1·s.ne2 per sequence)."""
    n = x.ne[0] * x.ne[1] * x.ne[2] * x.ne[3] + s.ne[0] * s.ne[1] * s.ne[2] * ids.ne[0]
    return _new("f32", (n,), "SSM_SCAN", s, x, dt, a, b, c, ids)
