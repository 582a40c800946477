"""The public API, as trio's _tests/test_exports.py checks its own: every
name in ``livetrace.__all__`` resolves, the imports type checkers read
agree with the table the lazy look-ups use, and nothing is exported that
docs/reference.md does not document."""

from __future__ import annotations

import ast
import importlib
import re
import warnings
from pathlib import Path

import pytest

import livetrace

ROOT = Path(__file__).resolve().parents[1]
INIT = ROOT / "livetrace" / "__init__.py"
REFERENCE = ROOT / "docs" / "reference.md"

pytestmark = pytest.mark.once


def type_checking_imports() -> dict[str, str]:
    """What ``if TYPE_CHECKING:`` in __init__.py imports: name -> module."""
    tree = ast.parse(INIT.read_text())
    blocks = [n for n in tree.body if isinstance(n, ast.If) and ast.unparse(n.test) == "TYPE_CHECKING"]
    assert len(blocks) == 1
    out: dict[str, str] = {}
    for stmt in blocks[0].body:
        assert isinstance(stmt, ast.ImportFrom) and stmt.module is not None
        for alias in stmt.names:
            # `X as X`: the form that re-exports a name to type checkers.
            assert alias.asname == alias.name, (
                f"{alias.name} from {stmt.module}: write it `{alias.name} as {alias.name}`"
            )
            assert alias.name not in out, f"{alias.name} imported twice"
            out[alias.name] = stmt.module
    return out


def public_table() -> dict[str, str]:
    return {name: module for module, names in livetrace._PUBLIC.items() for name in names}


def test_every_public_name_resolves() -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # a public name is not a deprecated one
        for name in livetrace.__all__:
            assert getattr(livetrace, name) is not None, name


def test_every_public_name_is_its_modules_own() -> None:
    for name, module in public_table().items():
        assert getattr(livetrace, name) is getattr(importlib.import_module(module), name), name


def test_all_the_lazy_table_and_the_type_checking_imports_agree() -> None:
    table = public_table()
    assert type_checking_imports() == table
    assert livetrace.__all__ == sorted(table)
    assert len(livetrace.__all__) == len(set(livetrace.__all__))
    eager = {name for module in livetrace._EAGER for name in livetrace._PUBLIC[module]}
    assert set(livetrace._LAZY) | eager == set(table)
    assert set(livetrace._LAZY).isdisjoint(eager)
    assert set(dir(livetrace)) >= set(table)


def test_every_public_name_is_documented() -> None:
    text = REFERENCE.read_text()
    undocumented = [n for n in livetrace.__all__ if not re.search(rf"`{re.escape(n)}\b", text)]
    assert undocumented == []


def test_nothing_private_is_public() -> None:
    """No name beyond the table is exported: a private module's object can
    become public only by being listed, and so documented."""
    assert not [n for n in livetrace.__all__ if n.startswith("_") and n != "__version__"]
    for name in livetrace._DEPRECATED:
        assert name not in livetrace.__all__ and name not in type_checking_imports()


@pytest.mark.parametrize("name", sorted(livetrace._DEPRECATED))
def test_a_name_no_longer_public_still_works_with_a_warning(name: str) -> None:
    module, attribute, _ = livetrace._DEPRECATED[name]
    with pytest.warns(DeprecationWarning, match=f"livetrace.{name} is deprecated"):
        value = getattr(livetrace, name)
    assert value is getattr(importlib.import_module(module), attribute)


def test_an_unknown_name_is_an_attribute_error() -> None:
    with pytest.raises(AttributeError, match="no attribute 'Nope'"):
        livetrace.Nope  # noqa: B018  # the look-up is the test
