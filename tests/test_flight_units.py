"""The flight recorder's sans-IO parts: the trigger syntax, the ring's bounds, the capture files."""

from __future__ import annotations

import json
from fnmatch import fnmatchcase
from pathlib import Path

import pytest

from livetrace._flight.capture import Firing, prune, stem, write_capture
from livetrace._flight.ring import FlightRing, Layout
from livetrace._flight.triggers import BLOCK_REASONS, TriggerError, parse_duration, parse_size, parse_trigger
from livetrace._items import Gap, SegmentEnd, WindowEnd, WindowGap
from livetrace._protocol.frames import Chunk
from livetrace._trace.model.events import Resource
from livetrace._trace.spans.model import Span, SpanKind
from livetrace._trace.spec.kinds import Kind
from livetrace._trace.spec.modern import EV_END_OF_GENERATION

MS = 1_000_000
S = 1_000_000_000


def span(kind: SpanKind, ms: float, name: str = "", reason: str = "") -> Span:
    # A task span's task is itself.
    return Span(
        kind, Resource("Goroutine", 7), 0, int(ms * MS), reason, name, task_name=name if kind is SpanKind.TASK else ""
    )


def keeps(expr: str, s: Span) -> bool:
    """Whether the trigger's filter keeps the span, as the core would (kind, least duration, names,
    predicate), and the trigger's reasons take it."""
    t = parse_trigger(expr)
    f = t.filter
    assert f is not None
    if t.reasons is not None and s.reason not in t.reasons:
        return False
    if f.tasks is not None and not any(fnmatchcase(s.task_name, g) for g in f.tasks):
        return False
    if f.kinds is not None and s.kind not in f.kinds:
        return False
    if f.min_duration is not None and s.duration < f.min_duration:
        return False
    if f.regions is not None and s.name not in f.regions:
        return False
    return f.predicate is None or f.predicate(s)


@pytest.mark.parametrize(
    ("expr", "kind", "over"),
    [
        ("gc>50ms", SpanKind.GC, 50 * MS),
        ("stw>10ms", SpanKind.STW, 10 * MS),
        ("runnable>20ms", SpanKind.RUNNABLE, 20 * MS),
        ("syscall>1.5s", SpanKind.SYSCALL, 1500 * MS),
        ("mark-assist>800us", SpanKind.MARK_ASSIST, 800_000),
        ("blocked>2m", SpanKind.BLOCKED, 120 * S),
        ("region:checkout>200ms", SpanKind.REGION, 200 * MS),
        ("task:order*>1h", SpanKind.TASK, 3600 * S),
    ],
)
def test_span_triggers(expr: str, kind: SpanKind, over: int) -> None:
    t = parse_trigger(expr)
    assert t.source == "spans" and t.text == expr
    assert t.filter is not None and t.filter.kinds == frozenset({kind})
    assert t.filter.min_duration == over + 1  # longer than, strictly


def test_trigger_matching() -> None:
    assert keeps("gc>50ms", span(SpanKind.GC, 51))
    assert not keeps("gc>50ms", span(SpanKind.GC, 50))
    assert not keeps("gc>50ms", span(SpanKind.STW, 90))
    assert keeps("blocked[chan]>1s", span(SpanKind.BLOCKED, 1500, reason="chan receive"))
    assert keeps("blocked[chan]>1s", span(SpanKind.BLOCKED, 1500, reason="chan send"))
    assert not keeps("blocked[chan]>1s", span(SpanKind.BLOCKED, 1500, reason="sync"))
    assert keeps("blocked[mutex]>1s", span(SpanKind.BLOCKED, 1500, reason="sync"))
    assert keeps('blocked["select"]>1s', span(SpanKind.BLOCKED, 1500, reason="select"))
    assert keeps("blocked>1s", span(SpanKind.BLOCKED, 1500, reason="anything"))
    assert keeps("region:checkout>200ms", span(SpanKind.REGION, 300, name="checkout"))
    assert keeps("task:check*>200ms", span(SpanKind.TASK, 300, name="checkout"))
    assert not keeps("task:check*>200ms", span(SpanKind.TASK, 300, name="login"))
    assert set().union(*BLOCK_REASONS.values()) >= {"chan send", "chan receive", "sync", "network", "select"}


def test_log_and_rss_triggers() -> None:
    t = parse_trigger('log~"time(out)?"')
    assert t.source == "events" and t.filter is not None and t.filter.kinds == frozenset({Kind.LOG})
    assert parse_trigger("log~timeout").source == "events"
    r = parse_trigger("rss>2GiB")
    assert (r.source, r.threshold) == ("rss", 2 << 30)
    h = r.heap_trigger()
    assert h.source == "events" and h.filter is not None and h.filter.kinds == frozenset({Kind.METRIC})
    assert parse_trigger("rss>100MB").threshold == 100_000_000
    assert parse_trigger("blocked[chan]>1s").slug == "blocked-chan-1s"
    assert parse_trigger('log~"a b/c"').slug == "log-a-b-c"


@pytest.mark.parametrize(
    ("expr", "why"),
    [
        ("gc>5xs", "'5xs' is not a duration"),
        ("gc", "expected WHAT>LIMIT"),
        ("gc<5ms", "expected WHAT>LIMIT"),
        ("frobs>5ms", "unknown trigger 'frobs'"),
        ("blocked[teapot]>1s", "unknown blocked reason 'teapot'"),
        ("blocked[syscall]>1s", "use syscall>D"),
        ("gc[chan]>1s", "only blocked takes a [reason]"),
        ("gc:x>1s", "only region and task take a :NAME"),
        ("rss>2 lumps", "is not a size"),
        ("rss~big", "rss takes >"),
        ('log>"x"', 'log~"PATTERN"'),
        ('log~"("', "bad regular expression"),
    ],
)
def test_bad_triggers(expr: str, why: str) -> None:
    with pytest.raises(TriggerError) as e:
        parse_trigger(expr)
    assert str(e.value).startswith(f"bad trigger {expr!r}: ")
    assert why in str(e.value)


def test_units() -> None:
    assert parse_duration("1.5s") == 1500 * MS
    assert parse_duration("2m") == 120 * S
    assert parse_size("512MiB") == 512 << 20
    with pytest.raises(ValueError, match="is not a size"):
        parse_size("12")


def chunk(gen: int, t_ms: int, size: int = 100, data: bytes | None = None) -> Chunk:
    return Chunk(0, t_ms * MS, gen, data if data is not None else bytes([gen % 256]) * size)


def test_ring_generations_keep_and_memory() -> None:
    ring = FlightRing(Layout.GENERATIONS, keep_ns=3 * S, max_bytes=10_000)
    ring.feed(chunk(0, 0, data=b"HEADER"))
    for g in range(1, 11):  # one generation a second, two chunks each
        ring.feed(chunk(g, g * 1000))
        ring.feed(chunk(g, g * 1000 + 500))
        ring.trim(g * 1000 * MS + 500 * MS)
    # generation 10 is still open (nothing said it ended); keep 3 s from 10.5 s: the last chunk
    # of 7 was read at 7.5 s, just in the window, those of 6 before it.
    assert [u.key for u in ring.units] == [7, 8, 9]
    assert ring.size == len(b"HEADER") + 8 * 100
    snap = ring.snapshot()
    (trace,) = snap.traces()
    assert trace[0] == b"HEADER" and len(trace) == 7
    # the end-of-generation byte (Go 1.25+) completes a generation at once
    ring.feed(chunk(10, 10_600, data=bytes([EV_END_OF_GENERATION])))
    assert [u.key for u in ring.units] == [7, 8, 9, 10]
    ring.trim(10_600 * MS)
    assert [u.key for u in ring.units] == [8, 9, 10]
    # the byte cap drops the oldest first, never the generation in progress
    small = FlightRing(Layout.GENERATIONS, keep_ns=3600 * S, max_bytes=450)
    small.feed(chunk(0, 0, data=b"H"))
    for g in range(1, 6):
        small.feed(chunk(g, g, size=200))
    assert [u.key for u in small.units] == [4]  # 4 complete + 5 open = 401 + H
    assert small.size <= 450 and small.dropped == 3


def test_ring_gap_and_missing_generation() -> None:
    ring = FlightRing(Layout.GENERATIONS, keep_ns=3600 * S)
    ring.feed(chunk(0, 0, data=b"H"))
    for g in (1, 2, 3):
        ring.feed(chunk(g, g))
    ring.feed(Gap(4, 6, 10, 1000, True))
    assert not ring.units and ring.gaps == 1
    for g in (7, 8, 10, 11):  # 9 missing: what came before cannot share a trace with 10
        ring.feed(chunk(g, g))
    assert [u.key for u in ring.units] == [10]
    assert ring.snapshot().traces()[0][0] == b"H"


def test_ring_segments() -> None:
    ring = FlightRing(Layout.SEGMENTS, keep_ns=2 * S)
    for seg in range(3):
        for i in range(3):
            ring.feed(Chunk(0, (seg * 1000 + i * 100) * MS, 0, b"seg%d-%d" % (seg, i)))
        ring.feed(SegmentEnd(seg + 1, (seg * 1000 + 300) * MS))
    ring.feed(Chunk(0, 3000 * MS, 0, b"open"))
    ring.trim(3100 * MS)
    snap = ring.snapshot()
    assert [u.key for u in snap.units] == [2, 3]
    assert snap.traces() == [[b"seg1-0", b"seg1-1", b"seg1-2"], [b"seg2-0", b"seg2-1", b"seg2-2"]]
    ring.finish()
    assert len(ring.units) == 3


def test_ring_windows_survive_their_gaps(tmp_path: Path) -> None:
    # net/http/pprof windows, of any format: whole units, as segments; the gap
    # between two windows is expected and empties nothing (a helper's gap does).
    ring = FlightRing(Layout.WINDOWS, keep_ns=3600 * S)
    for w in range(1, 4):
        if w > 1:
            ring.feed(WindowGap(0, 0, 0, 0, False, window=w - 1, seconds=0.05))
        for i in range(2):
            ring.feed(Chunk(0, (w * 1000 + i * 100) * MS, 0, b"win%d-%d" % (w, i)))
        ring.feed(WindowEnd(w, (w * 1000 + 200) * MS))
    ring.feed(Chunk(0, 4000 * MS, 0, b"open"))  # window 4 in progress: not in a capture
    assert [u.key for u in ring.units] == [1, 2, 3] and ring.window_gaps == 2 and ring.gaps == 0
    snap = ring.snapshot()
    assert snap.header == b"" and snap.traces() == [[b"win%d-%d" % (w, i) for i in range(2)] for w in (1, 2, 3)]
    f = Firing(parse_trigger("gc>1ms"), 1_700_000_000 * S, span=span(SpanKind.GC, 2), unit=2)
    d = write_capture(tmp_path, f, snap, 0, False)
    assert [p.read_bytes() for p in d.traces] == [b"win1-0win1-1", b"win2-0win2-1", b"win3-0win3-1"]
    info = json.loads(d.json_path.read_text())
    assert info["layout"] == "windows" and [u["window"] for u in info["units"]] == [1, 2, 3]
    assert info["fired_in"] == {"file": d.traces[1].name, "window": 2}
    ring.feed(Gap(1, 1, 1, 10, False))  # not a window's gap: a loss, as in any layout
    assert not ring.units and ring.gaps == 1


def test_capture_files_and_prune(tmp_path: Path) -> None:
    ring = FlightRing(Layout.SEGMENTS, keep_ns=3600 * S)
    for seg in range(2):
        ring.feed(Chunk(0, seg * S, 0, b"trace%d" % seg))
        ring.feed(SegmentEnd(seg + 1, seg * S))
    trig = parse_trigger("region:slow-request>200ms")
    written = []
    for i in range(4):
        f = Firing(trig, 1_700_000_000 * S + i * S, span=span(SpanKind.REGION, 300, name="slow-request"), unit=2)
        d = write_capture(tmp_path, f, ring.snapshot(), 5 * S, False)
        written.append(d)
        assert [p.read_bytes() for p in d.traces] == [b"trace0", b"trace1"]
        assert d.traces[1].name == stem(f) + ".2.trace"
    info = json.loads(written[0].json_path.read_text())
    assert info["trigger"] == "region:slow-request>200ms" and info["span"]["name"] == "slow-request"
    assert info["goroutine"] == 7 and info["fired_in"] == {"file": written[0].traces[1].name, "segment": 2}
    assert info["traces"] == [p.name for p in written[0].traces]
    (tmp_path / "notes.txt").write_text("mine")
    removed = prune(tmp_path, 2)
    assert len(removed) == 6
    left = sorted(p.name for p in tmp_path.iterdir())
    assert left == sorted(["notes.txt", *(p.name for d in written[2:] for p in (*d.traces, d.json_path))])
    assert not any(p.name.endswith(".part") for p in tmp_path.iterdir())


def test_ring_pins_outlive_keep_not_the_byte_cap() -> None:
    ring = FlightRing(Layout.GENERATIONS, keep_ns=1 * S, max_bytes=1000)
    ring.feed(chunk(0, 0, data=b"H"))
    for g in (1, 2, 3):
        ring.feed(chunk(g, g * 1000))
    ring.pin(2)  # a capture waiting for its tail fired in generation 2
    ring.feed(chunk(4, 9000))
    ring.trim(9000 * MS)
    assert [u.key for u in ring.units] == [2, 3]
    for g in range(5, 12):
        ring.feed(chunk(g, g * 1000, size=200))
    assert ring.size <= 1000 and ring.units[0].key > 2  # the byte cap still rules
    ring.unpin(2)
    ring.trim(11_000 * MS)
    assert [u.key for u in ring.units] == [10]
