"""Where the tables' bytes come from. pyarrow's default pool on Linux,
mimalloc, backs its arenas with transparent huge pages, and clearing them
doubled the time `livetrace.tables`, `livetrace sql` and `export --to
parquet` took over a 92 MB trace (docs/sql.md, "A sixth pass"). So the
compiled kernels' columns, most of the tables' bytes, come from malloc's
pool whatever the process's default (``kernels._alloc``), and the CLI
gives pyarrow malloc's pool for the rest (``_host.arrow_from_malloc``)
unless the user chose one in the environment. Checked on the pools
pyarrow reports after the call, in fresh interpreters."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = [pytest.mark.slow, pytest.mark.once]  # fresh interpreters

ROOT = Path(__file__).resolve().parent.parent
TRACE = "tests/corpus/runtime/go126-generations.trace"

SCRIPT = """
import contextlib, io, sys
from livetrace._cli.main import main
with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
    code = main(sys.argv[1:])
import pyarrow
print(code, pyarrow.default_memory_pool().backend_name)
"""


def pool_after(*argv: str, chosen: str | None = None) -> str:
    env = {k: v for k, v in os.environ.items() if k != "ARROW_DEFAULT_MEMORY_POOL"}
    if chosen is not None:
        env["ARROW_DEFAULT_MEMORY_POOL"] = chosen
    out = subprocess.run(
        [sys.executable, "-c", SCRIPT, *argv], cwd=ROOT, env=env, capture_output=True, text=True, check=True
    )
    code, pool = out.stdout.split()
    assert code == "0", out
    return pool


def own_default() -> str:
    """The pool pyarrow gives a process that is not the CLI."""
    env = {k: v for k, v in os.environ.items() if k != "ARROW_DEFAULT_MEMORY_POOL"}
    code = "import pyarrow; print(pyarrow.default_memory_pool().backend_name)"
    return subprocess.run(
        [sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True
    ).stdout.strip()


def test_the_cli_gives_pyarrow_malloc_and_leaves_a_chosen_pool_alone() -> None:
    pytest.importorskip("pyarrow")
    default = own_default()
    if default == "system":
        pytest.skip("this pyarrow's own default is malloc: nothing tells the CLI's choice apart")
    query = ["sql", TRACE, "-c", "SELECT count(*) FROM events"]
    assert pool_after(*query) == "system"
    assert pool_after(*query, chosen=default) == default


API = """
import sys
import livetrace, pyarrow
tables = livetrace.tables(sys.argv[1])
print(pyarrow.system_memory_pool().bytes_allocated(), sum(t.nbytes for t in tables.values()))
"""


def test_the_kernels_columns_come_from_malloc_in_a_program_that_calls_the_api() -> None:
    pytest.importorskip("pyarrow")
    if own_default() == "system":
        pytest.skip("this pyarrow's own default is malloc: nothing tells the kernels' pool apart")
    env = {k: v for k, v in os.environ.items() if k != "ARROW_DEFAULT_MEMORY_POOL"}
    out = subprocess.run(
        [sys.executable, "-c", API, TRACE], cwd=ROOT, env=env, capture_output=True, text=True, check=True
    )
    from_malloc, held = map(int, out.stdout.split())
    assert from_malloc > held // 2, (from_malloc, held)
