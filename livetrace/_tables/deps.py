"""pyarrow and duckdb, imported where the tables need them: a missing one
is a typed error that says what to install, not an ImportError's traceback."""

from __future__ import annotations

import importlib
from types import ModuleType

from livetrace._errors import MissingDependencyError


def need(module: str) -> ModuleType:
    """The module, or MissingDependencyError naming the package to install."""
    try:
        return importlib.import_module(module)
    except ImportError as e:
        raise MissingDependencyError(
            f"livetrace's tables need {module}, which is not installed: pip install 'livetrace[sql]'"
        ) from e
