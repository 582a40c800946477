"""A service's helper sends a frame every few milliseconds; the session
hands the decoder's thread the frames that came within a short while of
one another, not each frame on its own: each hand-over costs a thread's
wake-up and trio's bookkeeping both ways, which was most of what a
decode-only live session cost beyond the decoding (issue 29: the agent's
own cost). The events are the same, and none waits long."""

from __future__ import annotations

import io
import time
from pathlib import Path

import pytest
import trio

from livetrace._files import decode_batches
from livetrace._protocol.address import parse_address
from livetrace._protocol.frames import Chunk, End, Frame, SessionInfo
from livetrace._session import live
from livetrace._session.session import Session
from livetrace._trace.model.batch import EventBatch

from .wirechunks import modern_chunks

pytestmark = [pytest.mark.slow, pytest.mark.once]  # frames paced in real time

TRACE = (Path(__file__).parent / "corpus" / "runtime" / "go126-generations.trace").read_bytes()
PACE = 0.002  # seconds between two frames


class Trickle:
    """The trace's chunks as a helper sends them, one every PACE seconds."""

    def __init__(self) -> None:
        chunks = modern_chunks(TRACE)
        frames: list[Frame | End] = [Chunk(seq, time.time_ns(), gen, data) for seq, (gen, data) in enumerate(chunks)]
        frames.append(End("duration", True, len(chunks), len(TRACE)))
        self.frames = len(frames)
        self._frames = iter(frames)

    async def next_frame(self) -> Frame | End | None:
        await trio.sleep(PACE)
        return next(self._frames, None)

    async def stop(self) -> None:
        pass


INFO = SessionInfo(
    protocol=1, helper="livetrace", go_version="go1.26.0", goos="linux", goarch="amd64", pid=0, executable="",
    gomaxprocs=2, start_unix_ns=time.time_ns(), queue_bytes=0, session=0,
)  # fmt: skip


async def events_and_handovers(monkeypatch: pytest.MonkeyPatch, jobs: int) -> tuple[int, int, int]:
    """The events a session of the trickle gave, the hand-overs to its decoder's thread, and the frames."""
    handovers = 0
    work = live.Pump._work

    def counted(self: live.Pump, frames: list[object] | None) -> None:
        nonlocal handovers
        handovers += 1
        work(self, frames)

    monkeypatch.setattr(live.Pump, "_work", counted)
    source = Trickle()
    events = 0
    async with trio.open_nursery() as n:
        session = Session(source, parse_address("unix:/nowhere"), INFO, n, jobs=jobs)
        async with session.subscribe(what="batches", lossless=True) as sub:
            async for item in sub:
                if isinstance(item, EventBatch):
                    events += len(item)
    return events, handovers, source.frames


@pytest.mark.parametrize("jobs", [1, 2])
async def test_frames_that_trickle_in_are_handed_over_together(monkeypatch: pytest.MonkeyPatch, jobs: int) -> None:
    events, handovers, frames = await events_and_handovers(monkeypatch, jobs)
    assert events == sum(len(b) for b in decode_batches(io.BytesIO(TRACE)) if isinstance(b, EventBatch))
    # One frame every 2 ms, gathered for up to 50 ms: some 25 a hand-over (each frame its own before).
    assert handovers <= frames / 5, (handovers, frames)
