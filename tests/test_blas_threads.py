"""numpy's OpenBLAS starts a thread for every core when it loads, and
livetrace does no linear algebra: the CLI asks it for none
(``_host.one_blas_thread``) unless the user chose a count in the
environment. Checked by the threads numpy's loading starts in a fresh
interpreter after the CLI ran a command (one that does not load numpy
itself), against an interpreter that is not the CLI."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from livetrace._host import BLAS_THREADS_VARIABLE, usable_cores

pytestmark = [pytest.mark.slow, pytest.mark.once]  # fresh interpreters

ROOT = Path(__file__).resolve().parent.parent
TRACE = "tests/corpus/runtime/go126-generations.trace"

# The threads numpy's loading starts, after the CLI ran a command that does
# not load it (a plain interpreter's, without one).
SCRIPT = """
import contextlib, io, os, sys
if sys.argv[1:]:
    from livetrace._cli.main import main
    with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
        assert main(sys.argv[1:]) == 0
assert "numpy" not in sys.modules
before = len(os.listdir("/proc/self/task"))
import numpy
print(os.environ.get("OPENBLAS_NUM_THREADS"), len(os.listdir("/proc/self/task")) - before)
"""


def blas_threads(*argv: str, chosen: str | None = None) -> tuple[str, int]:
    env = {k: v for k, v in os.environ.items() if k != BLAS_THREADS_VARIABLE}
    if chosen is not None:
        env[BLAS_THREADS_VARIABLE] = chosen
    out = subprocess.run(
        [sys.executable, "-c", SCRIPT, *argv], cwd=ROOT, env=env, capture_output=True, text=True, check=True
    )
    variable, started = out.stdout.split()
    return variable, int(started)


@pytest.mark.skipif(not Path("/proc/self/task").is_dir(), reason="threads are counted in /proc")
@pytest.mark.skipif(usable_cores() < 2, reason="OpenBLAS starts no thread of its own on one core")
def test_the_cli_starts_no_blas_threads_and_leaves_a_chosen_count_alone() -> None:
    pytest.importorskip("numpy")
    decode = ["decode", TRACE, "--dump", "parsed"]
    assert blas_threads()[1] >= 1  # a plain interpreter's numpy starts threads here
    assert blas_threads(*decode) == ("1", 0)
    assert blas_threads(*decode, chosen="2") == ("2", 1)
