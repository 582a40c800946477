"""A table whose value would begin where its batch ends ends a trace file
where Go's reader ends it, without an error (tests/test_modern_parsed.py
holds that to `go tool trace`). A live service's stream goes on past that
point, and nothing after it can be read: a live session stops there with
an error that says so, after what came before it, rather than taking the
rest of the stream without a word."""

from __future__ import annotations

import io
from pathlib import Path

import pytest

import livetrace
from livetrace import TraceFormatError
from livetrace._trace.spec.modern import EV_STRINGS

from .conftest import cli
from .test_consumer_hardening import serve_trace
from .test_hostile_peer import Peer, finish, one_error_line
from .test_modern_parsed import table_ending_early

TRACE = Path(__file__).resolve().parent / "corpus" / "runtime" / "go126-generations.trace"


def _cut_trace() -> tuple[bytes, int]:
    """The trace with its second generation's strings batch ending where a
    value begins, and how many events its file gives (Go's reader's: the
    first generation, then the final Sync)."""
    cut = table_ending_early(TRACE.read_bytes(), 2, EV_STRINGS)
    assert cut is not None
    events = sum(len(b) for b in livetrace.decode_batches(io.BytesIO(cut)) if isinstance(b, livetrace.EventBatch))
    assert events > 100
    return cut, events


@pytest.mark.parametrize("jobs", ["1", "2"])
def test_a_live_session_stops_with_an_error_where_a_table_ends_the_trace(tmp_path: Path, jobs: str) -> None:
    cut, events = _cut_trace()
    with Peer(serve_trace(cut, "go1.26.0"), tmp_path) as peer:
        code, out, err = finish(cli("tail", peer.address, "--format", "jsonl", "--jobs", jobs))
    assert code == 1, err
    line = one_error_line(err)
    assert "where its batch ends" in line and "the session stops here" in line and "generation 2" in line, line
    assert len(out.splitlines()) == events  # what the file gives came first


async def test_the_api_raises_it_after_the_events_before(tmp_path: Path) -> None:
    cut, events = _cut_trace()
    got = 0

    async def count(session: livetrace.Session) -> None:
        nonlocal got
        async for e in session.events():
            got += isinstance(e, livetrace.Event)

    with Peer(serve_trace(cut, "go1.26.0"), tmp_path) as peer:
        async with livetrace.connect(peer.address) as session:
            with pytest.raises(TraceFormatError, match="the session stops here") as raised:
                await count(session)
    assert raised.value.generation == 2
    assert got == events  # what the file gives came first
