"""ggml's graph allocator in Python (llmcalc/planning/engines/ggml_graph.py), against hand-worked
layouts of ggml-alloc.c's rules: 32-byte alignment, best fit among the free blocks before the
endless tail, neighbours merged on free, in-place reuse of a parent used once, outputs kept."""

from __future__ import annotations

from llmcalc.planning.engines import ggml_graph as g


def test_best_fit_before_the_tail_and_merging() -> None:
    a = g.DynAllocator()
    assert a.alloc(100) == 0  # 100 → 128 (aligned to 32)
    assert a.alloc(64) == 128
    assert a.alloc(256) == 192
    a.free(0, 100)  # a hole [0, 128)
    assert a.alloc(32) == 0  # the hole fits: no growth
    assert a.alloc(200) == 448  # no hole fits 224: the tail grows the buffer
    assert a.max_size == 672
    a.free(128, 64)  # [128, 192) merges with the hole's rest [32, 128)
    assert [(b.offset, b.size) for b in a.blocks[:-1]] == [(32, 160)]
    assert a.alloc(160) == 32


def test_ties_go_to_the_later_block() -> None:
    a = g.DynAllocator()
    for _ in range(4):
        a.alloc(64)  # 0, 64, 128, 192
    a.free(0, 64)
    a.free(128, 64)
    assert a.alloc(64) == 128  # two equal holes: ggml takes the last one (<=)


def _chain(op: str) -> g.Graph:
    """x (input, 128 B) → mul_mat (256 B) → op → op → output."""
    x = g.new_input("f32", 8, 4)
    a = g.mul_mat(g.weight(8, 16), x)
    b = g.cont(a) if op == "CONT" else g.unary(op, a)
    c = g.cont(b) if op == "CONT" else g.unary(op, b)
    c.flags |= g.OUTPUT
    graph = g.Graph()
    graph.expand(c)
    return graph


def test_in_place_ops_reuse_their_parent() -> None:
    # UNARY may run in place (ggml_op_can_inplace): x 128 B + the product 256 B is the peak
    assert g.reserve(_chain("UNARY")) == 128 + 256
    # CONT may not: b after a, a's bytes freed and merged with x's for c
    assert g.reserve(_chain("CONT")) == 128 + 256 + 256


def test_graph_order_is_depth_first_sources_left_to_right() -> None:
    x = g.new_input("f32", 4)
    y = g.new_input("f32", 4)
    s = g.binary("ADD", g.unary("SQR", y), g.unary("SQRT", x))
    graph = g.Graph()
    graph.expand(s)
    assert [t.op for t in graph.nodes] == ["SQR", "SQRT", "ADD"]
    assert graph.leafs == [y, x]
