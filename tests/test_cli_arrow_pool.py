"""The CLI's pyarrow takes its buffers from the C library's malloc
(``_host.arrow_from_malloc``): pyarrow's default pool, mimalloc, backs its
arenas with transparent huge pages, and clearing them doubled the time
`livetrace sql` and `export --to parquet` took over a 92 MB trace
(docs/sql.md, "Speed"). A pool the user chose in the environment stays
theirs. Checked on the pool pyarrow hands out after the command ran."""

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
