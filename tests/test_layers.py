"""The package's import graph, read with ast: no circle between modules,
and no layer that imports one above it (docs/architecture.md).

The rule: every import that runs counts, at module level or inside a
function. An import deferred into a function defers its cost, not the
dependency, so it may not close a circle either (``session`` importing
``pprof_windows`` in a function while ``pprof_windows`` imports
``session`` was one). Only the imports under ``if TYPE_CHECKING:`` are left
out: they name types for mypy and never run (the base modules name the
event model that way: a ``TraceFormatError``'s partial events, a
``Provisional``'s batch).
"""

from __future__ import annotations

import ast
from functools import cache
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = ROOT / "livetrace"

# The layers, lowest first: a module may import its own layer and those
# below. A package stands for every module in it; the longest prefix wins.
LAYERS: list[tuple[str, ...]] = [
    # The base, shared by every layer: errors, the stream's items, buffers, output files, trio's nursery, plurals,
    # the C library's memory.
    (
        "livetrace._errors",
        "livetrace._items",
        "livetrace._streambuf",
        "livetrace._outfile",
        "livetrace._dataset",
        "livetrace._nursery",
        "livetrace._plural",
        "livetrace._host",
        "livetrace._version",
    ),
    # The sans-IO core: trace decoding and the session protocol.
    ("livetrace._trace", "livetrace._protocol", "livetrace._ccore"),
    # The Go toolchain, finding processes, whole trace files.
    ("livetrace._go", "livetrace._attach", "livetrace._files"),
    # The trio shell: sessions.
    ("livetrace._session",),
    # Views and the flight recorder.
    ("livetrace._views", "livetrace._flight", "livetrace._tables"),
    # The fleet agent: discovery, sessions, views, the flight recorder and the tables, into its sinks.
    ("livetrace._agent",),
    # The command line.
    ("livetrace._cli", "livetrace.__main__"),
    # The public API, which re-exports from every layer.
    ("livetrace",),
]


def module_name(path: Path) -> str:
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


@cache
def modules() -> dict[str, Path]:
    return {module_name(p): p for p in PACKAGE.rglob("*.py")}


def _absolute(module: str, node: ast.ImportFrom) -> str:
    if not node.level:
        return node.module or ""
    base = module.split(".")
    if modules()[module].name != "__init__.py":
        base.pop()
    base = base[: len(base) - node.level + 1]
    return ".".join([*base, *([node.module] if node.module else [])])


def _is_type_checking(test: ast.expr) -> bool:
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"
    )


def _runtime_imports(module: str, node: ast.AST) -> list[tuple[str, int]]:
    """The livetrace modules ``node`` and what it holds import when they
    run: (module, line)."""
    if isinstance(node, ast.If) and _is_type_checking(node.test):
        return [i for stmt in node.orelse for i in _runtime_imports(module, stmt)]
    out: list[tuple[str, int]] = []
    if isinstance(node, ast.Import):
        out += [(a.name, node.lineno) for a in node.names if a.name.split(".")[0] == "livetrace"]
    elif isinstance(node, ast.ImportFrom):
        source = _absolute(module, node)
        if source.split(".")[0] == "livetrace":
            for a in node.names:
                sub = f"{source}.{a.name}"  # `from package import module` imports the module
                out.append((sub if sub in modules() else source, node.lineno))
    for child in ast.iter_child_nodes(node):
        if not isinstance(child, ast.expr):  # imports are statements: no expression holds one
            out += _runtime_imports(module, child)
    return out


@cache
def graph() -> dict[str, list[tuple[str, int]]]:
    return {
        m: [(t, line) for t, line in _runtime_imports(m, ast.parse(p.read_text())) if t != m and t in modules()]
        for m, p in modules().items()
    }


def layer(module: str) -> int:
    best: tuple[int, int] | None = None  # (prefix length, layer)
    for i, names in enumerate(LAYERS):
        for name in names:
            if (module == name or module.startswith(name + ".")) and (best is None or len(name) > best[0]):
                best = (len(name), i)
    assert best is not None, f"{module} is in no layer: add it to LAYERS (and docs/architecture.md)"
    return best[1]


def circles(edges: dict[str, list[str]]) -> list[list[str]]:
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
        for w in edges[v]:
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

    for v in sorted(edges):
        if v not in index:
            visit(v)
    return found


def test_no_import_circle() -> None:
    edges = {m: sorted({t for t, _ in imports}) for m, imports in graph().items()}
    assert circles(edges) == []


def test_no_layer_imports_one_above_it() -> None:
    upward = [
        f"{m}:{line} imports {t}"
        for m, imports in sorted(graph().items())
        for t, line in imports
        if layer(t) > layer(m)
    ]
    assert upward == []


def test_every_module_is_in_a_layer() -> None:
    for m in modules():
        layer(m)


# The checks themselves, on made-up graphs: they would catch what they look for.


def test_a_circle_through_a_deferred_import_is_found() -> None:
    source = "def f():\n    from livetrace._session import session\n"
    imports = [t for t, _ in _runtime_imports("livetrace._session.pprof_windows", ast.parse(source))]
    assert imports == ["livetrace._session.session"]
    edges = {"a": ["b"], "b": ["c"], "c": ["a"], "d": ["a"]}
    assert circles(edges) == [["a", "b", "c"]]


def test_type_checking_imports_are_left_out() -> None:
    source = (
        "from typing import TYPE_CHECKING\n"
        "if TYPE_CHECKING:\n    from livetrace._cli import main\nelse:\n    import livetrace._cli.tail\n"
    )
    assert [t for t, _ in _runtime_imports("livetrace._errors", ast.parse(source))] == ["livetrace._cli.tail"]


@pytest.mark.parametrize(
    ("module", "above"),
    [("livetrace._trace.decoder", "livetrace._session.live"), ("livetrace._attach.probe", "livetrace._cli.main")],
)
def test_an_upward_import_is_one(module: str, above: str) -> None:
    assert layer(above) > layer(module)
