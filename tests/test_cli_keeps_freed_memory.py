"""The CLI keeps the memory its batches free for the next ones (glibc's
trim and mmap thresholds, ``_host.keep_freed_memory``), with one job as
with many: given back at once, every batch's columns and lines fault their
pages in again, which cost one job's `tail --format text` 12% of its CPU
(docs/decoder.md). The agent gives it back: it checks its memory budget by
its RSS, which must come down after a peak. Checked on the C library
itself: a block freed after the command ran stays in the process, or goes
back as it does in a process that ran none."""

from __future__ import annotations

import json
import platform
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = [
    pytest.mark.slow,  # fresh interpreters
    pytest.mark.once,
    pytest.mark.skipif(
        platform.system() != "Linux" or platform.libc_ver()[0] != "glibc",
        reason="glibc's thresholds: another C library keeps memory as it does",
    ),
]

ROOT = Path(__file__).resolve().parent.parent
BLOCK = 16 << 20  # under glibc's highest mmap threshold, over its default
TRACE = "tests/corpus/runtime/go126-generations.trace"

SCRIPT = """
import contextlib, ctypes, io, json, sys
from pathlib import Path

def rss():
    line = next(l for l in Path("/proc/self/status").read_text().splitlines() if l.startswith("VmRSS:"))
    return int(line.split()[1]) << 10

if sys.argv[2:]:
    from livetrace._cli.main import main
    with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
        main(sys.argv[2:])
libc = ctypes.CDLL(None)
libc.malloc.restype = ctypes.c_void_p
libc.free.argtypes = [ctypes.c_void_p]
block = int(sys.argv[1])
p = libc.malloc(block)
ctypes.memset(p, 1, block)
held = rss()
libc.free(p)
print(json.dumps({"given_back": held - rss()}))
"""


def given_back(*argv: str) -> int:
    """The bytes of a freed block that went back to the system after ``livetrace ARGV`` ran (none: nothing ran)."""
    out = subprocess.run(
        [sys.executable, "-c", SCRIPT, str(BLOCK), *argv], cwd=ROOT, capture_output=True, text=True, check=True
    )
    return int(json.loads(out.stdout)["given_back"])


def test_the_cli_keeps_freed_memory_and_the_agent_gives_it_back() -> None:
    # The check tells the two apart: without the CLI, glibc gives a freed 16 MiB back at once.
    assert given_back() > BLOCK // 2
    assert given_back("decode", TRACE) < BLOCK // 4
    assert given_back("agent", "--check", "examples/agent.toml") > BLOCK // 2
