"""A live session keeps the memory its batches free for the next ones
(glibc's trim and mmap thresholds, ``pool.keep_freed_memory``), with one
job as with many: given back at once, every batch's columns and lines
fault their pages in again, which cost one job's `tail --format text` 12%
of its CPU (docs/decoder.md). Checked on the C library itself: a block
freed after a session ran stays in the process, where it is given back in
a process that ran none."""

from __future__ import annotations

import json
import platform
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = [pytest.mark.slow, pytest.mark.once]  # two fresh interpreters

ROOT = Path(__file__).resolve().parent.parent
BLOCK = 16 << 20  # under glibc's highest mmap threshold, over its default

SCRIPT = """
import ctypes, json, sys, time
from pathlib import Path

def rss():
    line = next(l for l in Path("/proc/self/status").read_text().splitlines() if l.startswith("VmRSS:"))
    return int(line.split()[1]) << 10

if sys.argv[1] == "session":
    import trio
    from livetrace._protocol.address import parse_address
    from livetrace._protocol.frames import Chunk, End, SessionInfo
    from livetrace._session.session import Session
    from tests.wirechunks import modern_chunks

    trace = Path("tests/corpus/runtime/go126-generations.trace").read_bytes()
    chunks = modern_chunks(trace)

    class Source:
        def __init__(self):
            frames = [Chunk(seq, time.time_ns(), gen, data) for seq, (gen, data) in enumerate(chunks)]
            self._frames = iter(frames + [End("duration", True, len(chunks), len(trace))])

        async def next_frame(self):
            return next(self._frames, None)

        async def stop(self):
            pass

    info = SessionInfo(
        protocol=1, helper="livetrace", go_version="go1.26.0", goos="linux", goarch="amd64", pid=0,
        executable="", gomaxprocs=2, start_unix_ns=time.time_ns(), queue_bytes=0, session=0,
    )

    async def run():
        async with trio.open_nursery() as n:
            session = Session(Source(), parse_address("unix:/nowhere"), info, n, jobs=1)
            async with session.subscribe(what="batches", lossless=True) as sub:
                async for _ in sub:
                    pass

    trio.run(run)

libc = ctypes.CDLL(None)
libc.malloc.restype = ctypes.c_void_p
libc.free.argtypes = [ctypes.c_void_p]
block = int(sys.argv[2])
p = libc.malloc(block)
ctypes.memset(p, 1, block)
held = rss()
libc.free(p)
print(json.dumps({"given_back": held - rss()}))
"""


def given_back(kind: str) -> int:
    out = subprocess.run(
        [sys.executable, "-c", SCRIPT, kind, str(BLOCK)], cwd=ROOT, capture_output=True, text=True, check=True
    )
    return int(json.loads(out.stdout)["given_back"])


@pytest.mark.skipif(
    platform.system() != "Linux" or platform.libc_ver()[0] != "glibc",
    reason="glibc's thresholds: another C library keeps memory as it does",
)
def test_a_live_session_with_one_job_keeps_freed_memory() -> None:
    # The check tells the two apart: without a session, glibc gives a freed 16 MiB back at once.
    assert given_back("none") > BLOCK // 2
    assert given_back("session") < BLOCK // 4
