"""The flight recorder's captures without a Go service: a real Session fed by a
frame source written here (a trace header and generations of bytes, which
the ring keeps without decoding), real files, real filesystems, and trio's
autojump clock. Triggers that never stop firing, a full disk, a directory
that goes away (issue 24, findings 8 and 10)."""

from __future__ import annotations

import errno
import itertools
import json
import math
import os
import subprocess
import sys
import time
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager, contextmanager
from pathlib import Path
from typing import Any

import pytest
import trio
import trio.testing

from livetrace._cli.flight import summary
from livetrace._errors import OutputPathError
from livetrace._flight.capture import CAPTURE_NAME, Capture, Firing, now_ns, stem, write_capture
from livetrace._flight.capture_writer import FINISH_WITHIN, FIRST_RETRY, CaptureFailure
from livetrace._flight.recorder import FlightRecorder
from livetrace._flight.ring import FlightRing, Layout
from livetrace._flight.triggers import parse_trigger
from livetrace._plural import plural
from livetrace._protocol.address import parse_address
from livetrace._protocol.frames import Chunk, End, SessionInfo
from livetrace._session.session import Frame, Session

pytestmark = pytest.mark.once  # no decoding: the same whichever core runs

TRIGGER = parse_trigger("gc>1ms")
# The autojump clock moves on to the recorder's timers whenever the event loop waits, a thread's
# write included, so trio's seconds say nothing of how long a write takes: the tests wait, and
# bound the stop, in real seconds.
# Past a full disk the retries back off 1, 2, 4, 8, 16 s: a loaded machine that sees one more
# failure than the test waits for meets the next retry after 16 s, and the one after 32 s.
REAL_LIMIT = 90.0
HEADER = b"go 1.26 trace\x00\x00\x00"


class Frames:
    """A helper's side of a session, in memory: frames as the test sends them."""

    def __init__(self) -> None:
        self._send, self._recv = trio.open_memory_channel[Frame | End](math.inf)
        self.seq = 0

    async def next_frame(self) -> Frame | End | None:
        try:
            return await self._recv.receive()
        except trio.EndOfChannel:
            return None

    async def stop(self) -> None:
        self._send.send_nowait(End("client-stop", True, self.seq, 0))

    def chunk(self, gen: int, data: bytes) -> None:
        self._send.send_nowait(Chunk(self.seq, time.time_ns(), gen, data))
        self.seq += 1


async def generations(frames: Frames, size: int) -> None:
    """A header, then a generation of ``size`` bytes every 0.5 s (each completes the one before)."""
    frames.chunk(0, HEADER)
    for g in itertools.count(1):
        frames.chunk(g, bytes([g % 256]) * size)
        await trio.sleep(0.5)


def info() -> SessionInfo:
    # This process: the RSS trigger is then polled with psutil, and nothing is decoded.
    return SessionInfo(
        protocol=1, helper="test", go_version="go1.26.6", goos="linux", goarch="amd64", pid=os.getpid(),
        executable=sys.executable, gomaxprocs=2, start_unix_ns=time.time_ns(), queue_bytes=1 << 20,
        session=1, advance_ms=500,
    )  # fmt: skip


class Run:
    def __init__(self, rec: FlightRecorder, frames: Frames, failures: list[CaptureFailure]) -> None:
        self.rec, self.frames, self.failures = rec, frames, failures
        self.ended = trio.Event()

    def fire(self) -> bool:
        return self.rec.fire(Firing(TRIGGER, now_ns()))

    async def stop(self) -> tuple[float, float]:
        """Stop as Ctrl-C does; the seconds until the recorder's run returned,
        on trio's clock and in real time."""
        t0, real = trio.current_time(), time.monotonic()
        await self.rec.session.stop()
        await self.until(self.ended.is_set)
        return trio.current_time() - t0, time.monotonic() - real

    async def until(self, what: Any) -> None:
        t0 = time.monotonic()
        while not what():
            assert time.monotonic() - t0 < REAL_LIMIT, f"the recorder did not get there in {REAL_LIMIT:g} s"
            await trio.sleep(0.05)


@asynccontextmanager
async def recording(out: Path, *, size: int = 1000, **kw: Any) -> AsyncIterator[Run]:
    frames = Frames()
    failures: list[CaptureFailure] = []
    async with trio.open_nursery() as n:
        session = Session(frames, parse_address("unix:/nowhere"), info(), n)
        kw = {"keep": 5.0, "after": 1.0, "cooldown": 0.0} | kw
        rec = FlightRecorder(session, triggers=["rss>1TiB"], out_dir=out, on_error=failures.append, **kw)
        assert rec.process is not None
        run = Run(rec, frames, failures)

        async def record() -> None:
            await rec.run()
            run.ended.set()

        n.start_soon(generations, frames, size)
        n.start_soon(record)
        await trio.sleep(2.0)  # a few generations kept
        yield run
        if not run.ended.is_set():
            await run.stop()
        n.cancel_scope.cancel()


def check_files(out: Path, captures: list[Capture], other: frozenset[str] = frozenset()) -> None:
    """Each capture's traces and JSON are there, under one stem of its own, and nothing else."""
    names = sorted(p.name for p in out.iterdir() if p.name not in other)
    stems = [d.json_path.name[: -len(".json")] for d in captures]
    assert len(set(stems)) == len(stems)
    want = []
    for d in captures:
        info = json.loads(d.json_path.read_text())
        assert info["traces"] == [p.name for p in d.traces]
        assert all(p.name.startswith(d.json_path.name[: -len("json")]) for p in d.traces)
        assert all(p.read_bytes().startswith(HEADER) for p in d.traces)
        want += [p.name for p in (*d.traces, d.json_path)]
    assert names == sorted(want)


async def test_triggers_that_never_stop_join_the_pending_capture(
    tmp_path: Path, autojump_clock: trio.testing.MockClock
) -> None:
    # cooldown 0, a trigger every 20 ms for 10 s (the finding: 1679 captures in 15 s, names that collided)
    async with recording(tmp_path, after=2.0) as run:
        t0, fired = trio.current_time(), 0
        while trio.current_time() - t0 < 10:
            run.fire()
            fired += 1
            await trio.sleep(0.02)
            # Hold trio's clock while a capture is written: the write takes real time, and on a loaded
            # machine the autojump clock would otherwise run the 10 s out, and the stop's bound after
            # them, before the first capture is on disk (CI saw one abandoned and none written).
            while run.rec.capture_writer.writing:
                time.sleep(0.002)
                await trio.sleep(0)
        _, real = await run.stop()
    st = run.rec.state
    # one capture at a time: each waits its 2 s of tail (and the generation then arriving)
    assert 1 <= st.fired <= 7, st
    assert st.fired + st.joined + st.suppressed == fired and st.suppressed == 0
    # the stop: the pending capture is written with the tail it has, or abandoned, within the bound
    assert real < 10
    assert st.fired == len(st.captures) + st.abandoned and st.failed == st.empty == 0
    assert st.abandoned == len([f for f in run.failures if f.abandoned]) == len(run.failures)
    check_files(tmp_path, st.captures)
    joined = [json.loads(d.json_path.read_text())["joined"] for d in st.captures]
    assert sum(joined) == sum(d.joined for d in st.captures) and sum(joined) > 10 * len(st.captures)
    assert sum(d.joined + d.joined_late for d in st.captures) <= st.joined  # an abandoned one's: in no file
    line = summary(st)
    assert line.startswith(
        f"stopped: {plural(fired, 'trigger')} fired ({st.fired} started a capture, {st.joined} joined one)"
    )
    assert f"; {plural(len(st.captures), 'capture')} written" in line


def test_a_capture_never_overwrites_another(tmp_path: Path) -> None:
    ring = FlightRing(Layout.GENERATIONS, keep_ns=10**12)
    for g in range(3):
        ring.feed(Chunk(g, 0, g, HEADER if g == 0 else b"gen%d" % g))
    firing = Firing(TRIGGER, 1_700_000_000_123_456_789)
    first = write_capture(tmp_path, firing, ring.snapshot(), 0, False)
    ring.feed(Chunk(3, 0, 3, b"gen3"))
    second = write_capture(tmp_path, firing, ring.snapshot(), 0, False)  # the same trigger, the same millisecond
    assert first.json_path.name == stem(firing) + ".json"
    assert second.json_path.name == stem(firing) + "_2.json" and CAPTURE_NAME.match(second.json_path.name)
    assert first.traces[0].read_bytes() == HEADER + b"gen1"
    assert second.traces[0].read_bytes() == HEADER + b"gen1gen2"
    check_files(tmp_path, [first, second])


async def test_a_missing_directory_is_a_clear_error_at_the_start(tmp_path: Path) -> None:
    async with trio.open_nursery() as n:
        session = Session(Frames(), parse_address("unix:/nowhere"), info(), n)
        with pytest.raises(OutputPathError, match=f"cannot write captures to {tmp_path / 'gone'}: it does not exist"):
            FlightRecorder(session, keep=1, triggers=["rss>1TiB"], out_dir=tmp_path / "gone")
        (tmp_path / "file").write_text("")
        with pytest.raises(OutputPathError, match="it is not a directory"):
            FlightRecorder(session, keep=1, triggers=["rss>1TiB"], out_dir=tmp_path / "file")
        n.cancel_scope.cancel()


async def test_a_directory_that_goes_away_fails_each_capture_and_recording_goes_on(
    tmp_path: Path, autojump_clock: trio.testing.MockClock
) -> None:
    out = tmp_path / "captures"
    out.mkdir()
    async with recording(out) as run:
        out.rmdir()
        assert run.fire()
        await run.until(lambda: run.failures)
        (f,) = run.failures
        assert f.path.parent == out and f.path.name.endswith(".trace") and not f.disk_full and f.retry_in is None
        assert f.reason == f"No such file or directory: the directory {out} is gone"
        assert run.fire()  # the recorder goes on, and so does each failure
        await run.until(lambda: len(run.failures) == 2)
        out.mkdir()
        await run.until(run.fire)
        await run.until(lambda: run.rec.state.captures)
    st = run.rec.state
    assert st.failed == 2 and len(st.captures) == 1 and st.fired == 3
    check_files(out, st.captures)


@contextmanager
def tmpfs(where: Path, size: str) -> Iterator[Path]:
    """A real filesystem of ``size`` (tmpfs) mounted at ``where`` for the test; needs root."""
    if os.geteuid() != 0:
        pytest.skip("mounting a small filesystem to fill needs root (CI runs as root)")
    where.mkdir()
    subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={size}", "tmpfs", str(where)], check=True)
    try:
        yield where
    finally:
        subprocess.run(["umount", "-l", str(where)], check=True)


@pytest.fixture
def small_disk(tmp_path: Path) -> Iterator[Path]:
    with tmpfs(tmp_path / "disk", "1m") as where:
        yield where


def fill(disk: Path) -> Path:
    filler = disk / "filler"
    with filler.open("wb", buffering=0) as f:
        try:
            while True:
                f.write(b"\0" * 65536)  # the last ones short, then none
        except OSError as e:
            assert e.errno == errno.ENOSPC
    return filler


async def test_a_full_disk_is_said_retried_and_written_once_there_is_room(
    small_disk: Path, autojump_clock: trio.testing.MockClock
) -> None:
    filler = fill(small_disk)
    # The ring keeps 5 s of wall-clock read time, but the autojump clock paces the generations: it
    # runs ahead while a write's thread is slow (a loaded machine), and the ring then kept generations
    # past the whole disk's size, a capture that no retry could ever write. max_memory holds the
    # snapshot under half the 1 MiB disk, however far trio's clock ran.
    async with recording(small_disk, size=20_000, max_memory=400_000) as run:
        assert run.fire()
        await run.until(lambda: len(run.failures) >= 3)
        f = run.failures[0]
        assert f.disk_full and f.path.parent == small_disk and f.path.name.endswith(".trace")
        assert f.reason == "No space left on device: the disk is full"
        assert [g.retry_in for g in run.failures[:3]] == [FIRST_RETRY, 2 * FIRST_RETRY, 4 * FIRST_RETRY]
        # nothing partial under a final name (a retry's temporary file may be there)
        assert [p.name for p in small_disk.iterdir() if not p.name.startswith(".")] == ["filler"]
        assert not run.fire()  # joins the capture waiting for room
        filler.unlink()
        await run.until(lambda: run.rec.state.captures)
        assert run.fire()  # and the recorder goes on
        await run.until(lambda: len(run.rec.state.captures) == 2)
    st = run.rec.state
    assert st.failed == st.abandoned == 0 and st.joined == 1 and st.captures[0].joined_late == 1
    check_files(small_disk, st.captures)


async def test_prune_makes_room_before_writing(small_disk: Path, autojump_clock: trio.testing.MockClock) -> None:
    # The ring holds about 3 generations of 100 kB; with --max-files 1 the next capture fits only
    # where the last one was.
    async with recording(small_disk, size=100_000, max_files=1, max_memory=400_000) as run:
        await trio.sleep(3)
        assert run.fire()
        await run.until(lambda: run.rec.state.captures)
        fill(small_disk)
        await run.until(run.fire)
        await run.until(lambda: len(run.rec.state.captures) == 2 or run.failures)
    st = run.rec.state
    assert not run.failures and len(st.captures) == 2 and st.removed == 2
    check_files(small_disk, st.captures[1:], frozenset({"filler"}))


async def test_a_stop_abandons_a_capture_the_full_disk_holds_up(
    small_disk: Path, autojump_clock: trio.testing.MockClock
) -> None:
    fill(small_disk)
    async with recording(small_disk, size=20_000) as run:
        assert run.fire()
        await run.until(lambda: run.failures)
        took, real = await run.stop()
    st = run.rec.state
    assert took >= FINISH_WITHIN and real < 10 and st.abandoned == 1 and not st.captures
    last = run.failures[-1]
    assert (
        last.abandoned
        and last.reason == "not written when the recorder stopped (No space left on device: the disk is full)"
    )
    assert sorted(p.name for p in small_disk.iterdir()) == ["filler"]
