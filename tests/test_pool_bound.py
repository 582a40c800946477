"""The pool's pipeline holds a bounded number of generations, and a
bounded number of bytes of them, when a subscriber is slow, and a lossy subscriber that falls behind is told
exactly what it lost (issue 27: 1 and 5).

A real Session is fed a recorded trace of five generations
(tests/corpus/runtime/go126-generations.trace) by a frame source here, as
a helper sends it: a chunk per batch, with its generation."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from typing import Literal

import pytest
import trio

from livetrace._errors import LivetraceError, TraceFormatError
from livetrace._host import usable_memory
from livetrace._items import Notice, SubscriberGap
from livetrace._protocol.address import parse_address
from livetrace._protocol.frames import Chunk, End, Frame, SessionInfo
from livetrace._session import live, pool
from livetrace._session.pipeline import SPAN_BYTES
from livetrace._session.session import Session
from livetrace._trace.model.batch import EVENT_BYTES, EventBatch
from livetrace._trace.modern.parallel import COLUMN_BYTES_PER_WIRE_BYTE
from livetrace._trace.spans.batch import SpanBatch

from .test_pool_identity import MODERN
from .wirechunks import modern_chunks

# The trace's six units (five generations and the final Sync; the last two complete at its end): the
# first is delivered to the slow subscriber's buffer, the second waits to be, and the rest fill the line.


class Replay:
    """The trace's chunks, then the end."""

    def __init__(self) -> None:
        self._frames: list[Frame | End] = [
            Chunk(k, 0, gen, data) for k, (gen, data) in enumerate(modern_chunks(MODERN))
        ]
        self._frames.append(End("duration", True, len(self._frames), len(MODERN)))
        self._next = 0

    async def next_frame(self) -> Frame | End | None:
        await trio.sleep(0)
        if self._next == len(self._frames):
            return None
        self._next += 1
        return self._frames[self._next - 1]

    async def stop(self) -> None:
        pass


def info() -> SessionInfo:
    return SessionInfo(
        protocol=1, helper="test", go_version="go1.26.6", goos="linux", goarch="amd64", pid=0,
        executable="", gomaxprocs=2, start_unix_ns=time.time_ns(), queue_bytes=0, session=1,
    )  # fmt: skip


# once: the line is plumbing, the same for either core; on the slower twin the decoder may never
# get far enough ahead to fill the line, and the test asserts that it does.
@pytest.mark.once
@pytest.mark.parametrize("jobs", [2, 3])  # lines of 3 and 4 units
async def test_a_slow_lossless_subscriber_holds_the_line_at_its_bound(jobs: int) -> None:
    async with trio.open_nursery() as n:
        session = Session(Replay(), parse_address("unix:/nowhere"), info(), n, jobs=jobs)
        slow = session.subscribe(what="batches", buffer=1, lossless=True)
        events = 0
        async for item in slow:
            if isinstance(item, EventBatch):
                events += len(item)
            # The pipeline decodes ahead until the line is full, and no further.
            await trio.sleep(0.02)
    pump = session._pump
    assert pump is not None and pump.jobs == jobs
    assert pump.peak_units == jobs + 1  # reached, never passed
    assert events == session.counters.events > 5000


# The trace's generations hold about 1150 events each: two fit under the cap, three do not.
def two_generations(what: str) -> int:
    return 2350 * (EVENT_BYTES + (SPAN_BYTES if what == "spans" else 0))


# once, as the test above: on the slower twin, under load, the decoder may not get two generations
# ahead of the subscriber (a CI run's twin pass saw one, 51 kB against a cap of 190 kB).
@pytest.mark.once
@pytest.mark.parametrize("what", ["batches", "spans"])
@pytest.mark.parametrize("two", [True, False])  # a cap of two generations' bytes; of 1 byte
async def test_a_cap_on_bytes_holds_the_line_below_it_with_a_slow_lossless_subscriber(
    what: Literal["batches", "spans"], two: bool
) -> None:
    cap = two_generations(what) if two else 1

    async def run(jobs: int) -> tuple[Session, list[object]]:
        async with trio.open_nursery() as n:
            session = Session(Replay(), parse_address("unix:/nowhere"), info(), n, jobs=jobs, max_pipeline_bytes=cap)
            slow = session.subscribe(what=what, buffer=1, lossless=True)
            got: list[object] = []
            async for item in slow:
                if isinstance(item, EventBatch):
                    got.append((len(item), bytes(item.times)))
                elif isinstance(item, SpanBatch):
                    got.append((len(item), bytes(item.starts), bytes(item.ends)))
                else:
                    got.append(repr(item))
                await trio.sleep(0.02)
        return session, got

    jobs = 4  # room for five units: the cap is what holds them back
    session, got = await run(jobs)
    assert got == (await run(1))[1]  # what the one-job pipeline delivers, in its order
    pump = session._pump
    assert pump is not None and pump.max_pipeline_bytes == cap
    # Units side by side never held more than the cap; a unit larger than the cap went through alone.
    assert pump.peak_shared_bytes <= cap
    assert pump.peak_units < jobs + 1
    if two:
        # More than one generation at once: on the line, or ordered in the pool beside it (which
        # counts against the same cap: test_pool_ordering.py).
        assert max(pump.peak_shared_bytes, pump.peak_bytes_in_flight) > cap // 2
    else:
        assert pump.peak_units == 1 and pump.peak_shared_bytes == 0
    assert session.counters.events > 5000
    if what == "batches":
        assert sum(x[0] for x in got if isinstance(x, tuple)) == session.counters.events  # nothing lost
    else:
        assert sum(x[0] for x in got if isinstance(x, tuple)) == session.counters.spans > 1000


async def test_a_lossy_subscriber_is_told_exactly_what_it_lost() -> None:
    async def run(jobs: int, mapped: bool) -> tuple[list[object], int, int, int]:
        async with trio.open_nursery() as n:
            session = Session(Replay(), parse_address("unix:/nowhere"), info(), n, jobs=jobs)
            everything = session.subscribe(what="batches", lossless=True, buffer=1)
            # Mapped, it gets each batch's size: what it loses is still counted in events.
            lossy = session.subscribe(what="batches", buffer=1, map=(lambda b: lambda: len(b)) if mapped else None)
            async for _ in everything:  # reads the lossy one only at the end
                await trio.sleep(0)
            got = [x async for x in lossy]
        return got, lossy.lost_batches, lossy.lost_events, session.counters.events

    for mapped in (False, True):
        got, lost_batches, lost_events, total = await run(4, mapped)
        gaps = [x for x in got if isinstance(x, SubscriberGap)]
        kept = [len(x) if isinstance(x, EventBatch) else x for x in got if not isinstance(x, Notice)]
        assert gaps and lost_batches > 0
        assert sum(g.batches for g in gaps) == lost_batches
        assert sum(g.events for g in gaps) == lost_events
        assert sum(kept) + lost_events == total  # type: ignore[arg-type]  # sizes
        # The same as with one job.
        one = await run(1, mapped)
        assert (lost_batches, lost_events, total) == one[1:]


class Broken(Replay):
    """The trace with garbage in place of its fourth generation's events."""

    def __init__(self) -> None:
        super().__init__()
        for k, f in enumerate(self._frames):
            if isinstance(f, Chunk) and f.generation == 4 and len(f.data) > 64:
                self._frames[k] = Chunk(f.seq, 0, 4, f.data[:32] + b"\xff" * (len(f.data) - 32))


@pytest.mark.parametrize("jobs", [1, 4])
async def test_what_came_before_a_decoding_error_is_delivered_then_the_error(jobs: int) -> None:
    got: list[object] = []
    error: LivetraceError | None = None
    async with trio.open_nursery() as n:
        session = Session(Broken(), parse_address("unix:/nowhere"), info(), n, jobs=jobs)
        sub = session.subscribe(what="batches", lossless=True, buffer=1)
        try:
            async for item in sub:
                got.append(item)  # noqa: PERF401  # what came before the error
        except LivetraceError as e:
            error = e
    assert isinstance(error, TraceFormatError)
    gens = [x.gen.gen for x in got if isinstance(x, EventBatch) and x.gen is not None]
    assert sorted(set(gens)) == [1, 2, 3]


@pytest.mark.once  # no decoding
def test_the_default_pool_is_the_cores_this_process_may_use_less_one() -> None:
    code = "from livetrace._session.pool import default_jobs; print(default_jobs())"

    def jobs(cores: set[int]) -> int:
        out = subprocess.run(
            [sys.executable, "-c", code],
            preexec_fn=lambda: os.sched_setaffinity(0, cores),
            capture_output=True,
            text=True,
        )
        return int(out.stdout)

    mine = os.sched_getaffinity(0)
    assert jobs({min(mine)}) == 1
    assert jobs(mine) == max(1, len(mine) - 1)


@pytest.mark.once  # no decoding
@pytest.mark.parametrize(
    ("jobs", "memory_gib", "cap_mib"),
    [
        (1, None, 512),  # one job's share, as before
        (7, None, 3584),  # a share a job
        (15, None, 4096),  # at most 4 GiB
        (7, 8, 1024),  # an eighth of the memory this process may use
        (7, 2, 512),  # never less than one job's share
    ],
)
def test_the_default_cap_is_a_share_a_job_within_the_memory_at_hand(
    jobs: int, memory_gib: int | None, cap_mib: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(pool, "usable_memory", lambda: None if memory_gib is None else memory_gib << 30)
    assert pool.default_pipeline_bytes(jobs) == cap_mib << 20


@pytest.mark.once  # plumbing, the same for either core
async def test_a_session_without_a_cap_takes_the_default_for_its_jobs() -> None:
    async with trio.open_nursery() as n:
        session = Session(Replay(), parse_address("unix:/nowhere"), info(), n, jobs=3)
        async for _ in session.subscribe(what="batches", lossless=True):
            pass
    assert session._pump is not None and session._pump.max_pipeline_bytes == pool.default_pipeline_bytes(3)
    memory = usable_memory()
    assert memory is None or 0 < memory <= os.sysconf("SC_PHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")


@pytest.mark.once  # plumbing, the same for either core
@pytest.mark.slow  # lets a second pass to see what was read meanwhile
@pytest.mark.parametrize("jobs", [1, 4])
async def test_a_pool_reads_ahead_what_its_cap_stands_for_while_its_subscriber_waits(
    jobs: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The decoder's own queue of frames, one byte here: one job reads a frame or two past what the
    # decoder holds; a pool reads on, up to the wire bytes its cap stands for (the whole trace
    # here), so that the helper need not shed what a pipeline of several seconds still holds up.
    monkeypatch.setattr(live, "DECODE_QUEUE_BYTES", 1)
    cap = 2 * len(MODERN) * COLUMN_BYTES_PER_WIRE_BYTE
    async with trio.open_nursery() as n:
        session = Session(Replay(), parse_address("unix:/nowhere"), info(), n, jobs=jobs, max_pipeline_bytes=cap)
        stalled = session.subscribe(what="batches", buffer=1, lossless=True)
        await trio.sleep(1)  # reading nothing meanwhile
        read = session.counters.bytes
        async for _ in stalled:
            pass
    assert session.counters.bytes == len(MODERN)
    assert (read == len(MODERN)) == (jobs > 1), (read, len(MODERN))
