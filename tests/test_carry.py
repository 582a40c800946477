"""Generations ordered apart by fresh engines, then carried in order
(`_trace/modern/carry.py`), give the sequential decoder's events: the same
`-d=parsed` lines and the same error, on Go's text-form tests, the runtime
traces, mutated multi-generation traces and fresh demo traces."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from livetrace._cli.render.dump import parsed_text
from livetrace._errors import TraceFormatError
from livetrace._trace.model.batch import kind_mask
from livetrace._trace.model.events import Event
from livetrace._trace.modern.carry import Carried, Carrier, fresh_generation
from livetrace._trace.modern.decoder import ModernDecoder, _CompiledEngine

from . import textform
from .conftest import MODERN_VERSIONS, examples
from .samelines import assert_same_lines
from .wirechunks import generations

RUNTIME = sorted((Path(__file__).resolve().parent / "corpus" / "runtime").glob("*.trace"))
TEXT_TESTS = textform.all_tests()


def sequential(data: bytes) -> tuple[list[Event], str | None]:
    d = ModernDecoder()
    events: list[Event] = []
    try:
        events += d.feed(data)
        events += d.close()
    except TraceFormatError as e:
        return events + (e.partial or []), str(e)
    return events, None


def carried(data: bytes) -> tuple[list[Event], str | None, Carrier]:
    """Each generation ordered by a fresh engine first (all of them, as a pool
    would), then carried in order."""
    mask = kind_mask(None)
    carrier = Carrier(mask)
    events: list[Event] = []
    fresh = [fresh_generation(g, mask) for g in generations(data)]
    try:
        for f in fresh:
            for b in carrier.take(f):
                events += b
    except TraceFormatError as e:
        return events + (e.partial or []), str(e), carrier  # an ordering error ends the stream with no final Sync
    return [*events, carrier.final_sync()], None, carrier


def whole_streams(data: bytes) -> bool:
    """A stream the carry takes (a cut one is the decoder's to salvage)."""
    try:
        generations(data)
    except TraceFormatError:
        return False
    return True


def check(data: bytes) -> Carrier | None:
    if not whole_streams(data):
        return None
    want, want_err = sequential(data)
    got, err, carrier = carried(data)
    assert err == want_err
    assert_same_lines(got, want)
    return carrier


@pytest.mark.parametrize("t", TEXT_TESTS, ids=lambda t: t.name)
def test_go_text_form_tests_carry_as_ordered(t: textform.TextTrace) -> None:
    check(t.data)


@pytest.mark.parametrize("path", RUNTIME, ids=lambda p: p.stem)
def test_runtime_traces_carry_without_ordering_again(path: Path) -> None:
    carrier = check(path.read_bytes())
    assert carrier is not None
    assert carrier.reordered == 0


def test_a_start_before_its_status_is_ordered_again() -> None:
    # Generation 2 starts goroutine 1 on thread 1 before thread 0 restates it:
    # a fresh engine must wait for the status, the carried one need not.
    (t,) = (t for t in TEXT_TESTS if t.name == "go122-confuse-seq-across-generations")
    carrier = check(t.data)
    assert carrier is not None
    assert (carrier.generations, carrier.reordered) == (2, 1)


def test_what_the_carry_patches() -> None:
    # A task begun in generation 1 ends in 2; thread 0 runs goroutine 1 on
    # proc 0 across the boundary.
    (t,) = (t for t in TEXT_TESTS if t.name == "go122-task-across-generations")
    events, err, carrier = carried(t.data)
    assert err is None and carrier.reordered == 0
    got = [parsed_text(e) for e in events]
    assert got == [parsed_text(e) for e in sequential(t.data)[0]]
    assert 'M=0 P=0 G=1 StateTransition Time=384 ProcID=0 Running->Running Reason=""' in got
    assert 'M=0 P=0 G=1 TaskEnd Time=512 ID=2 Parent=18446744073709551615 Type="my task"' in got
    assert got[-1] == "M=-1 P=-1 G=-1 Sync Time=513 N=3"


def test_a_goroutine_looked_for_before_its_status_in_a_later_generation_is_the_carried_engine_s_error() -> None:
    """Found by the deep fuzzing profile: goroutine 1 is new in generation 2
    (generation 1 names goroutine 0 instead), and thread 1 starts it before
    thread 0's status says it is runnable. The sequential engine refuses the
    status of a goroutine new after the first generation; the fresh one,
    whose generation is its first, took it, so the generation is ordered
    again."""
    (t,) = (t for t in TEXT_TESTS if t.name == "go122-confuse-seq-across-generations")
    lines = list(t.wire_lines)
    assert lines[2].startswith("GoStatus dt=1 g=1") and lines[6].startswith("GoStart dt=1 g=1")
    lines[2], lines[6] = lines[2].replace("g=1", "g=0", 1), lines[6].replace("g=1", "g=0", 1)
    data = textform.parse(
        t.name, f"-- expect --\nSUCCESS\n-- trace --\nTrace Go1.{t.minor}\n" + "\n".join(lines) + "\n"
    ).data
    carrier = check(data)
    assert carrier is not None and carrier.reordered == 1
    assert "found goroutine status for new goroutine after the first generation: id=1" in str(sequential(data)[1])


MULTI = [t for t in TEXT_TESTS if any(re.match(r"EventBatch gen=[2-9]", line) for line in t.wire_lines)]
_VALUE = re.compile(r"(?<= )(\w+)=(\d+)")


def mutated(data: st.DataObject, t: textform.TextTrace) -> bytes:
    """The test's records with values changed (staying one byte where they
    were) and neighbouring events swapped within their batch."""
    lines = list(t.wire_lines)
    for _ in range(data.draw(st.integers(1, 4))):
        i = data.draw(st.integers(0, len(lines) - 1))
        line = lines[i]
        if data.draw(st.booleans()):
            values = [m for m in _VALUE.finditer(line) if m.group(1) != "size" and int(m.group(2)) < 128]
            if not values:
                continue
            m = data.draw(st.sampled_from(values))
            v = data.draw(st.integers(0, 6))
            lines[i] = f"{line[: m.start(2)]}{v}{line[m.end(2) :]}"
        elif i + 1 < len(lines) and not any(x.startswith(("EventBatch", "\t")) for x in lines[i : i + 2]):
            lines[i], lines[i + 1] = lines[i + 1], lines[i]
    text = "-- expect --\nSUCCESS\n-- trace --\n" + f"Trace Go1.{t.minor}\n" + "\n".join(lines) + "\n"
    return textform.parse(t.name, text).data


@settings(max_examples=examples(300), deadline=None)
@given(st.data())
def test_mutated_multi_generation_traces_carry_as_ordered(data: st.DataObject) -> None:
    t = data.draw(st.sampled_from(MULTI))
    check(mutated(data, t))


@pytest.mark.slow
# The compiled pass compares the twin's carry with the compiled sequential
# decoder (the twins' sequential ones are compared elsewhere); on the twin's
# pass, a demo trace ordered twice in Python is half a minute a version.
@pytest.mark.once
@pytest.mark.parametrize("version", MODERN_VERSIONS)
def test_demo_traces_carry_as_ordered(version: str, demo_traces: dict[str, Path]) -> None:
    carrier = check(demo_traces[version].read_bytes())
    assert carrier is not None and carrier.generations >= 2
    print(f"go{version}: {carrier.reordered} of {carrier.generations} generations ordered again")


def alternating(data: bytes) -> tuple[list[Event], str | None]:
    """Each generation by a new engine that starts from the state the one
    before ended in: the compiled one and the twin in turn."""
    mask = kind_mask(None)
    events: list[Event] = []
    state = Carried().values()
    try:
        for i, g in enumerate(generations(data)):
            if i % 2 == 0:
                c = _CompiledEngine(mask)
                c.set_state(state)
                for b in c.generation(g):
                    events += b
                state = c.state()
            else:
                p = Carried.from_values(state).engine(mask)
                for b in p.generation(g):
                    events += b
                state = Carried.of(p).values()
    except TraceFormatError as e:
        return events + (e.partial or []), str(e)
    c = _CompiledEngine(mask)
    c.set_state(state)
    return [*events, c.final_sync()], None


def check_alternating(data: bytes) -> None:
    if whole_streams(data):
        (got, err), (want, want_err) = alternating(data), sequential(data)
        assert err == want_err
        assert_same_lines(got, want)


@pytest.mark.compiled_core
@pytest.mark.parametrize(
    "data",
    [t.data for t in TEXT_TESTS] + [p.read_bytes() for p in RUNTIME],
    ids=[t.name for t in TEXT_TESTS] + [p.stem for p in RUNTIME],
)
def test_the_carried_state_crosses_engines(data: bytes) -> None:
    # The compiled engine's state() and set_state() carry what the twin's
    # Carried does: goroutines with their regions and ranges, procs, thread
    # contexts in order, tasks, the GC, the last time and the Syncs.
    check_alternating(data)


@pytest.mark.compiled_core
@settings(max_examples=examples(200), deadline=None)
@given(st.data())
def test_the_carried_state_crosses_engines_on_mutated_traces(data: st.DataObject) -> None:
    check_alternating(mutated(data, data.draw(st.sampled_from(MULTI))))


@pytest.mark.compiled_core
def test_a_bad_state_leaves_an_empty_engine() -> None:
    c = _CompiledEngine(kind_mask(None))
    good = Carried(ms={3: [1, 2]}, last=40, syncs=2).values()
    c.set_state(good)
    assert c.state() == good
    bad: Any = ([(1, 2, 0, 0, [], [])], [], [(1, 2)], [], 0, 0, 0, 0, 0)  # a thread without its goroutine
    with pytest.raises(TypeError):
        c.set_state(bad)
    assert c.state() == Carried().values()
