"""The compiled core's layout (livetrace/_ccore/, docs/architecture.md):
every twin a C file names exists, each folder includes only the folders
below it, and every C path the Python sources and docs name is there."""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

pytestmark = pytest.mark.once  # reads source text; no core runs

ROOT = Path(__file__).resolve().parent.parent
PACKAGE = ROOT / "livetrace"
CCORE = PACKAGE / "_ccore"
# The folders in the order they may include one another: each the ones
# before it (module.c, on top, all of them).
FOLDERS = ("common", "decode", "spans", "select", "render", "views", "tables")

# "_cli/render/text.py's event_text", "_views/pprof.py's ProfileBuilder.feed
# and end_trace", "_trace/select/events.py": a Python file from livetrace/,
# and the function (or class, or Class.method) it names, and another after
# "and" where there is one.
_POINTER = re.compile(r"(?<![\w/.])((?:\w+/)*\w+\.py)\b(?:'s ([A-Za-z_][\w.]*)(?: and ([A-Za-z_]\w*)\b(?![/.]))?)?")
_INCLUDE = re.compile(r'^#include "([^"]+)"', re.MULTILINE)


def c_sources() -> list[Path]:
    return sorted([*CCORE.rglob("*.c"), *CCORE.rglob("*.h")])


def _defined(tree: ast.Module, dotted: str) -> bool:
    """Whether dotted (f, C, C.m) is a def, class or assignment of the module."""
    body: list[ast.stmt] = tree.body
    for part in dotted.split("."):
        found: ast.stmt | None = None
        for node in body:
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef) and node.name == part:
                found = node
            elif isinstance(node, ast.Assign | ast.AnnAssign):
                targets = node.targets if isinstance(node, ast.Assign) else [node.target]
                if any(isinstance(t, ast.Name) and t.id == part for t in targets):
                    found = node
        if found is None:
            return False
        body = found.body if isinstance(found, ast.ClassDef) else []
    return True


def stale_pointers(sources: list[Path], package: Path) -> list[str]:
    """Each twin pointer in sources whose file (from package) or function is
    not there."""
    bad = []
    for src in sources:
        text = src.read_text()
        for m in _POINTER.finditer(text):
            path, name, other = m.groups()
            where = f"{src.name}:{text.count(chr(10), 0, m.start()) + 1}: {m.group(0)!r}"
            py = package / path.removeprefix("livetrace/")
            if not py.is_file():
                bad.append(f"{where}: no livetrace/{path}")
                continue
            if name is None:
                continue
            tree = ast.parse(py.read_text())
            if not _defined(tree, name):
                bad.append(f"{where}: no {name} in livetrace/{path}")
            # "C.m and n" names C.n or a module-level n
            elif other and not (_defined(tree, other) or _defined(tree, f"{name.split('.')[0]}.{other}")):
                bad.append(f"{where}: no {other} in livetrace/{path}")
    return bad


def test_every_twin_pointer_names_a_file_and_function_that_exist() -> None:
    assert len([m for s in c_sources() for m in _POINTER.finditer(s.read_text())]) >= 40
    assert stale_pointers(c_sources(), PACKAGE) == []


def test_the_pointer_check_sees_a_stale_one(tmp_path: Path) -> None:
    src = tmp_path / "x.c"
    src.write_text(
        "/* twin: _trace/legacy/read.py's _check_states; _trace/legacy/checks.py's check_states;\n"
        " * _trace/legacy/convert.py's ModelConverter.convert and legacy_events; legacy/read.py;\n"
        " * _views/pprof.py's ProfileBuilder.feed and end_trace; _trace/select/events.py's nothing_here */\n"
    )
    assert [b.split(": ", 2)[2] for b in stale_pointers([src], PACKAGE)] == [
        "no _check_states in livetrace/_trace/legacy/read.py",
        "no livetrace/legacy/read.py",
        "no nothing_here in livetrace/_trace/select/events.py",
    ]


def test_each_folder_includes_only_those_below_it() -> None:
    for src in c_sources():
        folder = src.relative_to(CCORE).parts[0]
        for header in _INCLUDE.findall(src.read_text()):
            assert (CCORE / header).is_file(), f"{src}: {header} is not under livetrace/_ccore"
            if src.name == "module.c":
                continue
            assert folder in FOLDERS, f"{src}: a C file outside the folders of docs/architecture.md"
            assert FOLDERS.index(header.split("/")[0]) <= FOLDERS.index(folder), f"{src} includes {header}"


def test_every_named_c_path_exists() -> None:
    """The Python sources, tests and docs name C files by their path under
    _ccore/: a move that forgets one fails here."""
    texts = [*PACKAGE.rglob("*.py"), *PACKAGE.rglob("*.pyi"), *(ROOT / "tests").glob("*.py"), *ROOT.glob("*.md")]
    texts += [*(ROOT / "docs").glob("*.md"), ROOT / "setup.py", ROOT / "dev.py"]
    named = {
        (t.name, m.group(1)) for t in texts for m in re.finditer(r"_ccore/((?:\w+/)*[\w*]+\.[ch])\b", t.read_text())
    }
    assert len(named) >= 20
    missing = [(where, p) for where, p in sorted(named) if not list(CCORE.glob(p))]
    assert missing == []
