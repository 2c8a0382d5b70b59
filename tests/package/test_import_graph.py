"""The layers of the package, read from its imports: no import cycle, counting the imports inside
functions (they only defer one); the core never imports the command line, the renderers or the web
page; the family modules (config fields → named tensors) never import a formula module.

The imports are read from the source with ``ast`` (nothing is imported); those under
``if TYPE_CHECKING:`` are left out, as they never run.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

from helpers import REPO

PACKAGE = REPO / "llmcalc"
FRONT = ("llmcalc.cli", "llmcalc.render", "llmcalc.web", "llmcalc.__main__")
FORMULAS = ("llmcalc.formulas", "llmcalc.planning", "llmcalc.verify")


def module_name(path: Path) -> str:
    parts = path.relative_to(REPO).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


MODULES = {module_name(p): p for p in sorted(PACKAGE.rglob("*.py"))}


def _under(name: str, prefixes: tuple[str, ...]) -> bool:
    return any(name == p or name.startswith(p + ".") for p in prefixes)


def _runtime_nodes(tree: ast.AST) -> Iterator[ast.AST]:
    """Every node but those under ``if TYPE_CHECKING:``."""
    for node in ast.iter_child_nodes(tree):
        if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
            yield from (n for child in node.orelse for n in [child, *_runtime_nodes(child)])
            continue
        yield node
        yield from _runtime_nodes(node)


def imports(name: str) -> set[str]:
    """The package's modules that ``name`` imports, at its top or inside a function."""
    found = set()
    for node in _runtime_nodes(ast.parse(MODULES[name].read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            targets = [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            # `from llmcalc import bundled`: the submodule; `from llmcalc import count`: the package
            targets = [f"{node.module}.{a.name}" if f"{node.module}.{a.name}" in MODULES
                       else node.module for a in node.names]
        else:
            continue
        found |= {t for t in targets if t in MODULES and t != name}
    return found


GRAPH = {name: imports(name) for name in MODULES}


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in sorted(graph[v]):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return found


def test_the_graph_is_read() -> None:
    assert "llmcalc.inputs.safetensors_index" in GRAPH["llmcalc.inputs.hub"]
    assert "llmcalc.inputs.hub" in GRAPH["llmcalc.inputs.config"]  # an import inside a function counts
    assert len(MODULES) > 100


def test_cycles_are_found() -> None:
    assert cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]
    assert cycles({"a": {"b"}, "b": set()}) == []


def test_no_import_cycle() -> None:
    assert cycles(GRAPH) == []


def test_the_core_never_imports_the_front() -> None:
    wrong = sorted(f"{a} imports {b}" for a, targets in GRAPH.items() if not _under(a, FRONT)
                   for b in targets if _under(b, FRONT))
    assert wrong == []


def test_families_never_import_a_formula() -> None:
    """Nor a plan or the verification: a family is a description, below all of them."""
    wrong = sorted(f"{a} imports {b}" for a, targets in GRAPH.items()
                   if _under(a, ("llmcalc.families",)) for b in targets if _under(b, FORMULAS))
    assert wrong == []


def test_no_test_module_imports_another() -> None:
    """What test modules share lives in tests/helpers/, defined once."""
    tests = {p.stem for p in (REPO / "tests").rglob("test_*.py")} | {"conftest"}
    wrong = []
    for path in sorted((REPO / "tests").rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            names = ([a.name for a in node.names] if isinstance(node, ast.Import)
                     else [node.module or ""] if isinstance(node, ast.ImportFrom) else [])
            wrong += [f"{path.relative_to(REPO)} imports {n}" for n in names
                      if n.split(".")[0] in tests]
    assert wrong == []


LAYERS = ("inputs", "model", "formulas", "planning", "verify")


def test_the_core_is_in_its_layers() -> None:
    """The top level holds only the package's entry points and its four leaf modules; the rest lives
    in one of the layers (a package each), the families, or the front (cli, render, web)."""
    top = sorted(p.name for p in PACKAGE.glob("*.py"))
    assert top == ["__init__.py", "__main__.py", "choices.py", "errors.py", "limits.py", "units.py"]
    assert all((PACKAGE / layer / "__init__.py").is_file() for layer in LAYERS)


def test_the_model_description_imports_no_layer_above_it() -> None:
    above = ("llmcalc.inputs", "llmcalc.formulas", "llmcalc.planning", "llmcalc.verify",
             "llmcalc.families")
    wrong = sorted(f"{a} imports {b}" for a, targets in GRAPH.items()
                   if _under(a, ("llmcalc.model",)) for b in targets if _under(b, above))
    assert wrong == []
