"""`livetrace export --to perfetto`: the file reads back with the perfetto
package's own protobuf classes (perfetto_trace_pb2.Trace), every track's
slices balanced and nested, every flow begun and ended once, and one
primary slice (its category the span kind's name) per span that
decode_span_batches gives for the same file."""

from __future__ import annotations

import time
from collections import Counter
from pathlib import Path

import pytest
import trio
from perfetto.protos.perfetto.trace.perfetto_trace_pb2 import Trace, TrackEvent

from livetrace._cli.main import main
from livetrace._files import decode_span_batches
from livetrace._trace.spans.model import SPAN_KIND_NAMES

from . import textform
from .conftest import cli, demo

LEGACY = Path(__file__).parent / "corpus" / "legacy" / "go-testdata"


def export(trace: Path, out: Path) -> Path:
    assert main(["export", str(trace), "--to", "perfetto", "-o", str(out)]) == 0
    return out


def read_back(path: Path) -> tuple[Counter[str], dict[int, str]]:
    """The file's slice counts by category (begins and instants), and its
    tracks' names by uuid; asserts the slices balanced and nested per
    track, in time order, and every flow begun and ended once."""
    trace = Trace()
    trace.ParseFromString(path.read_bytes())
    names: dict[int, str] = {}
    parents: dict[int, int] = {}
    counters: set[int] = set()
    open_: dict[int, list[int]] = {}
    last: dict[int, int] = {}
    counts: Counter[str] = Counter()
    flows_out: Counter[int] = Counter()
    flows_in: Counter[int] = Counter()
    for p in trace.packet:
        if p.HasField("track_descriptor"):
            d = p.track_descriptor
            assert d.uuid not in names
            names[d.uuid] = d.name
            if d.HasField("parent_uuid"):
                parents[d.uuid] = d.parent_uuid
            if d.HasField("counter"):
                counters.add(d.uuid)
            continue
        ev = p.track_event
        uuid, t = ev.track_uuid, p.timestamp
        assert uuid in names, "an event before its track's descriptor"
        assert t >= last.get(uuid, 0), f"track {names[uuid]} goes back in time"
        last[uuid] = t
        stack = open_.setdefault(uuid, [])
        if ev.type == TrackEvent.TYPE_SLICE_BEGIN:
            stack.append(t)
            counts[ev.categories[0]] += 1
        elif ev.type == TrackEvent.TYPE_SLICE_END:
            assert stack, f"an end without a begin on {names[uuid]}"
            assert stack.pop() <= t
        elif ev.type == TrackEvent.TYPE_INSTANT:
            counts[ev.categories[0]] += 1
        else:
            assert ev.type == TrackEvent.TYPE_COUNTER and uuid in counters
            counts["counter " + names[uuid]] += 1
        if ev.flow_ids:  # most have none: Counter.update was half of this loop's time
            flows_out.update(ev.flow_ids)
        if ev.terminating_flow_ids:
            flows_in.update(ev.terminating_flow_ids)
    assert all(not s for s in open_.values()), "slices left open"
    assert set(parents.values()) <= set(names)
    assert flows_in == flows_out and max(flows_out.values(), default=1) == 1
    return counts, names


def span_counts(trace: Path) -> Counter[str]:
    return Counter(SPAN_KIND_NAMES[k] for spans in decode_span_batches(trace) for k in spans.kinds)


def check(trace: Path, out: Path) -> tuple[Counter[str], dict[int, str]]:
    counts, names = read_back(export(trace, out))
    spans = span_counts(trace)
    assert spans
    assert {k: counts[k] for k in SPAN_KIND_NAMES} == {k: spans[k] for k in SPAN_KIND_NAMES}
    for root in ("Procs", "Threads", "Goroutines", "Tasks", "Runtime"):
        assert root in names.values()
    return counts, names


def test_a_modern_trace_with_tasks_regions_and_logs(tmp_path: Path) -> None:
    (t,) = [t for t in textform.all_tests() if t.name == "go122-annotations-stress"]
    trace = tmp_path / "t.trace"
    trace.write_bytes(t.data)
    counts, names = check(trace, tmp_path / "t.pftrace")
    assert counts["region"] and counts["task"] and counts["log"] and counts["unblock"]
    assert any(n.startswith("G") for n in names.values()) and any(n.startswith("P") for n in names.values())


@pytest.mark.parametrize(
    "name",
    [
        pytest.param("stress_1_21_good", marks=pytest.mark.slow),
        "user_task_region_1_21_good",
    ],  # slow: seconds on the twin
)
def test_a_legacy_1_21_trace(name: str, tmp_path: Path) -> None:
    counts, _ = check(LEGACY / name, tmp_path / "t.pftrace")
    assert counts["running"]


@pytest.mark.slow
@pytest.mark.once  # a big file: the twins' decoding is compared on the corpus traces above
def test_a_go_1_26_demo_trace(demo_traces: dict[str, Path], tmp_path: Path) -> None:
    counts, names = check(demo_traces["1.26"], tmp_path / "demo.pftrace")
    assert counts["gc"] and counts["stw"] and counts["on-proc"] and counts["on-thread"] and counts["unblock"]
    assert any(c.startswith("counter /memory/classes/heap/objects") for c in counts)
    assert any(c.startswith("counter /sched/gomaxprocs") for c in counts)
    assert any(n.startswith("M") for n in names.values())


@pytest.mark.slow
@pytest.mark.once
async def test_a_live_export(tmp_path: Path) -> None:
    out = tmp_path / "live.pftrace"
    async with demo("1.26", args=["-workers", "1"]) as d:
        p = cli("export", d.trace_address, "--duration", "1", "--to", "perfetto", "-o", str(out))
        deadline = time.monotonic() + 60
        while p.poll() is None and time.monotonic() < deadline:
            await trio.sleep(0.1)
        _, err = p.communicate(timeout=5)
    assert p.returncode == 0, err
    assert "wrote " in err and " tracks, " in err
    counts, _ = read_back(out)
    assert counts["running"] and counts["gc"] + counts["blocked"]


def test_the_bulk_varints_are_protobuf_s() -> None:
    """The writer's bulk varint encoder cuts records when the values are
    all of one size and searches for them when not: both give what
    protobuf writes for each value (negatives as 10-byte int64s)."""
    from livetrace._views.perfetto_file import _varints

    tag = TrackEvent(counter_value=1).SerializeToString()[:-1]
    for values in ([1 << 42, (1 << 42) + 5, (1 << 49) - 1], [0, 5, 300, 1 << 40, -1, -(1 << 63)], [7]):
        stamps, size = _varints(values)
        expected = [TrackEvent(counter_value=v).SerializeToString()[len(tag) :] for v in values]
        assert list(stamps) == expected
        assert size == (len(expected[0]) if len(set(map(len, expected))) == 1 else 0)
