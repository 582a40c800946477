"""`livetrace tail --format jsonl` into a pipe: every line whole, whatever
the timing. A slow reader on a busy machine, the output's file descriptor
non-blocking, and the compiled encoder's cached stack and string JSON
staying valid for the whole of each call."""

from __future__ import annotations

import json
import math
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest
import trio

import livetrace
from livetrace._cli.render.jsonl import JsonlEncoder, event_dict
from livetrace._trace.modern.decoder import ModernDecoder

from . import textform
from .conftest import demo
from .test_consumer_hardening import serve_trace
from .test_hostile_peer import Peer, finish

# Reads slowly (small reads, a pause after each) and parses every line.
SLOW_READER = r"""
import json, os, sys, time
lines, bad, rest = 0, [], b""
while True:
    data = os.read(0, 8192)
    if not data:
        break
    time.sleep(0.0005)
    *whole, rest = (rest + data).split(b"\n")
    for line in whole:
        lines += 1
        try:
            obj = json.loads(line)
            if not isinstance(obj, dict) or "kind" not in obj:
                raise ValueError("not an event")
        except ValueError:
            bad.append(line[:300].decode("utf-8", "replace"))
print(json.dumps({"lines": lines, "bad": len(bad), "examples": bad[:3], "rest": len(rest)}))
"""
HOG = "while True: pass"


def hogs_for_a_busy_machine() -> int:
    """CPU hogs enough to keep every core busy: one a core on an idle
    machine, none where the load already does (the suite's other workers,
    in CI). Two hogs there took 40 to 80 CPU-seconds from the other tests."""
    return max(0, math.ceil(len(os.sched_getaffinity(0)) - os.getloadavg()[0]))


@pytest.mark.slow
@pytest.mark.once  # the writer and the pipe are shared by both twins
async def test_tail_jsonl_into_a_slow_pipe_on_a_busy_machine_keeps_every_line_whole() -> None:
    # Full load (the demo's default workers), a CPU hog for each idle core, a reader that lags:
    # the tail blocks on the pipe, the helper sheds generations, batches and
    # writes interleave every way they can. Two bounded rounds (6 s of
    # tracing, at most 300,000 events shown): a pipe as a shell makes it,
    # then one whose write end is non-blocking with Python unbuffered, where
    # short writes used to cut lines.
    async with demo("1.26", args=["-queue-mb", "16"]) as d:
        for nonblocking in (False, True):
            result, err = await trio.to_thread.run_sync(tail_through_slow_reader, d.trace_address, nonblocking)
            assert result["bad"] == 0 and result["rest"] == 0, result
            assert result["lines"] > 10_000, (result, err)


def tail_through_slow_reader(address: str, nonblocking: bool) -> tuple[dict[str, Any], str]:
    r, w = os.pipe()
    os.set_blocking(w, not nonblocking)
    hogs = [subprocess.Popen([sys.executable, "-c", HOG]) for _ in range(hogs_for_a_busy_machine())]
    try:
        reader = subprocess.Popen([sys.executable, "-c", SLOW_READER], stdin=r, stdout=subprocess.PIPE, text=True)
        tail = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "livetrace",
                "tail",
                address,
                "--format",
                "jsonl",
                "--duration",
                "6",
                "--limit",
                "300000",
            ],
            stdout=w,
            stderr=subprocess.PIPE,
            text=True,
            env=tail_env(nonblocking),
        )
        os.close(r)
        os.close(w)
        code, _, err = finish(tail, 600)
        summary, _ = reader.communicate(timeout=600)
    finally:
        for h in hogs:
            h.kill()
            h.wait()
    assert code == 0, err
    return json.loads(summary), err


def tail_env(unbuffered: bool) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONUNBUFFERED", "LIVETRACE_TOKEN")}
    return {**env, "PYTHONUNBUFFERED": "1"} if unbuffered else env


def expected_lines(trace: bytes) -> int:
    d = ModernDecoder()
    return len(d.feed(trace) + d.close())


def whole_lines(data: bytes) -> list[dict[str, Any]]:
    text = data.decode()
    assert text.endswith("\n")
    return [json.loads(line) for line in text[:-1].split("\n")]


# 1.5 MB of jsonl: more than a pipe holds, even widened to 1 MiB.
BIG = "go122-gc-stress.test"


@pytest.mark.slow  # a CLI in another process, and a reader that waits in real time for the pipe to fill
@pytest.mark.parametrize("unbuffered", [True, False], ids=["unbuffered", "buffered"])
def test_tail_jsonl_into_a_non_blocking_pipe_loses_nothing(tmp_path: Path, unbuffered: bool) -> None:
    """The pipe's write end is O_NONBLOCK (a parent that shares it made it
    so): writes come back short or with EAGAIN, and the tail waits for room
    instead of dropping what did not fit (unbuffered Python: a line cut
    mid-field, the next glued on) or failing (buffered: BlockingIOError)."""
    trace = textform.load(textform.CORPUS / BIG).data
    r, w = os.pipe()
    os.set_blocking(w, False)
    with Peer(serve_trace(trace), tmp_path) as peer:
        proc = subprocess.Popen(
            [sys.executable, "-m", "livetrace", "tail", peer.address, "--format", "jsonl"],
            stdout=w,
            stderr=subprocess.PIPE,
            text=True,
            env=tail_env(unbuffered),
        )
        os.close(w)
        chunks: list[bytes] = []
        with os.fdopen(r, "rb", buffering=0) as reader:
            while not chunks or chunks[-1]:
                if len(chunks) % 64 == 0:
                    time.sleep(0.2)  # let the pipe fill up: the writer meets EAGAIN
                chunks.append(reader.read(4096))
        code, _, err = finish(proc)
    assert code == 0, err
    assert len(whole_lines(b"".join(chunks))) == expected_lines(trace)


def writing_to_a_full_pipe(pid: int) -> bool:
    """Whether a thread of the process waits for room in a pipe (Linux)."""
    for wchan in Path(f"/proc/{pid}/task").glob("*/wchan"):
        try:
            if "pipe_write" in wchan.read_text():
                return True
        except OSError:
            pass
    return False


@pytest.mark.slow
async def test_the_first_ctrl_c_during_a_blocked_write_keeps_every_line_whole() -> None:
    """A blocking pipe nobody reads fills up: the write waits in the kernel
    with part of its data out, and the first Ctrl-C (which asks the helper
    to stop, and must leave the output whole) interrupts it there."""
    # A light load fills the pipe all the same, and leaves less queued to decode after the stop.
    async with demo("1.26", args=["-workers", "1"]) as d:
        r, w = os.pipe()
        proc = subprocess.Popen(
            [sys.executable, "-m", "livetrace", "tail", d.trace_address, "--format", "jsonl"],
            stdout=w,
            stderr=subprocess.PIPE,
            text=True,
            env=tail_env(True),
        )
        os.close(w)
        with trio.fail_after(60):
            while not writing_to_a_full_pipe(proc.pid):
                await trio.sleep(0.05)
        proc.send_signal(signal.SIGINT)

        def read_all() -> bytes:
            with os.fdopen(r, "rb") as reader:
                return reader.read()

        data = await trio.to_thread.run_sync(read_all)
        code, _, err = await trio.to_thread.run_sync(finish, proc)
    assert code == 0, err
    assert "stopping" in err and "session ended: client-stop" in err
    assert len(whole_lines(data)) > 1000


@pytest.mark.slow
@pytest.mark.once  # signal handling, shared by both twins
async def test_a_stop_that_output_nobody_reads_holds_up_is_given_up_on() -> None:
    """One SIGTERM, as a supervisor sends it, to a tail whose reader went
    away without closing the pipe: the stop cannot finish writing, and
    the tail gives up once the stop's grace is over rather than hang."""
    async with demo("1.26") as d:
        r, w = os.pipe()
        proc = subprocess.Popen(
            [sys.executable, "-m", "livetrace", "tail", d.trace_address, "--stop-timeout", "1"],
            stdout=w,
            stderr=subprocess.PIPE,
            text=True,
            env=tail_env(False),
        )
        os.close(w)
        try:
            with trio.fail_after(60):
                while not writing_to_a_full_pipe(proc.pid):
                    await trio.sleep(0.05)
            proc.send_signal(signal.SIGTERM)
            code, _, err = await trio.to_thread.run_sync(finish, proc)
        finally:
            os.close(r)
    assert code == 1, err  # incomplete: decoded lines were never printed
    assert "stopping" in err and "is the output blocked?): aborting" in err, err


@pytest.mark.compiled_core
@pytest.mark.parametrize("name", ["go122-annotations.test", "go122-gc-stress.test"])
def test_the_compiled_encoder_keeps_its_cached_json_valid_for_the_whole_call(name: str) -> None:
    """The core copies stack and string JSON out of the encoder's caches
    and remembers where; a line it asks Python for in the middle of a call
    (here a Sync of no generation, as a stitched stream has) must neither
    free what it copies from nor switch the tables its misses are made
    from."""
    d = ModernDecoder()
    events = d.feed(textform.load(textform.CORPUS / name).data) + d.close()
    final_sync = events[-1]
    assert final_sync.gen is None
    gen = events[0].gen
    first = [e for e in events if e.gen is gen]
    for cut in range(1, len(first), max(1, len(first) // 7)):
        batch = livetrace.EventBatch.from_events(gen, [*first[:cut], final_sync, *first[cut:]])
        encoder = JsonlEncoder()
        got = [json.loads(line) for piece in encoder.encode_batch(batch) for line in piece.decode().splitlines()]
        assert got == [event_dict(e) for e in batch], cut


@pytest.mark.slow  # a CLI in another process, and a reader that waits in real time for the pipe to fill
@pytest.mark.parametrize("unbuffered", [True, False], ids=["unbuffered", "buffered"])
def test_decode_into_a_non_blocking_pipe_loses_nothing(unbuffered: bool) -> None:
    """``decode`` prints through a text stream: unbuffered, it must not drop
    what a short write left over either."""
    path = textform.CORPUS.parent / "legacy" / "go-testdata" / "stress_1_21_good"
    command = [sys.executable, "-m", "livetrace", "decode", str(path), "--dump", "legacy"]
    expected = subprocess.run(command, check=True, capture_output=True).stdout
    r, w = os.pipe()
    os.set_blocking(w, False)
    proc = subprocess.Popen(command, stdout=w, stderr=subprocess.PIPE, env=tail_env(unbuffered))
    os.close(w)
    chunks: list[bytes] = []
    with os.fdopen(r, "rb", buffering=0) as reader:
        while not chunks or chunks[-1]:
            if len(chunks) % 64 == 0:
                time.sleep(0.05)  # let the pipe fill up: the writer meets EAGAIN
            chunks.append(reader.read(4096))
    _, err = proc.communicate(timeout=120)
    assert proc.returncode == 0, err.decode(errors="replace")
    assert b"".join(chunks) == expected
