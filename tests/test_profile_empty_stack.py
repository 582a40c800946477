"""A profile's sample whose stack has no frames (issue 26, point 7): the
runtime writes some stacks as one frame at PC 0 with no function, which
Go's profiles count with the stacks that have no frames at all and show as
the one counted last: one location at 0x0, or none (tests/corpus/runtime's
README). Against `go tool trace -pprof=KIND` of Go 1.27.3 itself, and
unmarked, the records both twins make of the same traces."""

from __future__ import annotations

import io
from pathlib import Path

import pytest

import livetrace
from livetrace import EventBatch, SpanBuilder
from livetrace._trace.accel import use_compiled
from livetrace._views.pprof import PROFILE_KINDS, Frame, ProfileBuilder, Record

from .conftest import go_binary
from .gopprof import go_trace_pprof, raw_profile
from .test_profile import check_against_go

CORPUS = Path(__file__).resolve().parent / "corpus" / "runtime"
LAST, NOT_LAST = CORPUS / "go126-empty-stack-last.trace", CORPUS / "go126-empty-stack-not-last.trace"
ZERO = Frame(0, "", "", 0)


def sched_records(trace: Path, compiled: bool) -> list[Record]:
    spans, builder = SpanBuilder(), ProfileBuilder("sched", compiled=compiled)
    for batch in livetrace.decode_batches(io.BytesIO(trace.read_bytes())):
        if isinstance(batch, EventBatch):
            builder.feed(spans.feed(batch))
    builder.feed(spans.close())
    return builder.records()


@pytest.mark.parametrize("compiled", [False, True] if use_compiled() else [False])
def test_the_frameless_sample_shows_the_stack_counted_last(compiled: bool) -> None:
    frameless = [r for r in sched_records(LAST, compiled) if r.stack in ((), (ZERO,))]
    assert [(r.stack, r.count, r.ns) for r in frameless] == [((ZERO,), 12, 25958720)]
    frameless = [r for r in sched_records(NOT_LAST, compiled) if r.stack in ((), (ZERO,))]
    assert [(r.stack, r.count, r.ns) for r in frameless] == [((), 13, 12373440)]


@pytest.mark.go
@pytest.mark.parametrize("kind", PROFILE_KINDS)
@pytest.mark.parametrize("trace", [LAST, NOT_LAST], ids=["last", "not-last"])
def test_profiles_of_traces_with_a_zero_frame_are_gos(trace: Path, kind: str, tmp_path: Path) -> None:
    check_against_go(trace, kind, tmp_path)


@pytest.mark.go
@pytest.mark.once  # Go's profiles only: no core decodes
def test_go_shows_the_zero_frame_only_where_it_was_counted_last(tmp_path: Path) -> None:
    """The corpus holds what the comparisons above are for: Go's own
    profile has the 0x0 location for one trace, and not for the other."""
    go = go_binary("1.27")
    for trace, sample in ((LAST, "12 25958720 @ 0x0 M=1  :0:0 s=0"), (NOT_LAST, "13 12373440 @ ")):
        out = tmp_path / f"{trace.stem}.pb.gz"
        out.write_bytes(go_trace_pprof(go, "sched", trace))
        assert sample in raw_profile(go, out).split("\n")
