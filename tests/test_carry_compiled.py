"""The compiled engine's fresh ordering (`Engine(fresh=True)`, decode/fresh.h;
`_trace/modern/carry_compiled.py`): it notes what the twin's FreshOrdering
notes, and its generations, carried in order, give the sequential compiled
decoder's events, filtered or not, on the corpus and on mutated traces."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from livetrace._cli.render.dump import parsed_text
from livetrace._errors import TraceFormatError
from livetrace._trace.model.batch import kind_mask
from livetrace._trace.model.events import Event, Kind
from livetrace._trace.modern.carry import Carrier, Fresh, _Unk, fresh_generation
from livetrace._trace.modern.carry_compiled import compiled_fresh_generation
from livetrace._trace.modern.decoder import ModernDecoder, _CompiledEngine
from livetrace._trace.spec.modern import EV_GO_CREATE, EV_GO_CREATE_BLOCKED, EV_GO_CREATE_SYSCALL, EV_USER_TASK_BEGIN

from .conftest import MODERN_VERSIONS, examples
from .test_carry import MULTI, RUNTIME, TEXT_TESTS, mutated, whole_streams
from .wirechunks import generations

pytestmark = pytest.mark.compiled_core

CREATE = (EV_GO_CREATE, EV_GO_CREATE_BLOCKED, EV_GO_CREATE_SYSCALL)
# A filter that leaves out most events, the Syncs among them: the times a
# carry clamps count the events left out too.
SOME = frozenset({Kind.STATE_TRANSITION, Kind.TASK_END, Kind.RANGE_BEGIN})


def sequential(data: bytes, kinds: frozenset[Kind] | None) -> tuple[list[str], str | None]:
    d = ModernDecoder(kinds, compiled=True)
    events: list[Event] = []
    try:
        events += d.feed(data)
        events += d.close()
    except TraceFormatError as e:
        return [parsed_text(ev) for ev in events + (e.partial or [])], str(e)
    return [parsed_text(ev) for ev in events], None


def carried(data: bytes, kinds: frozenset[Kind] | None, twin_every: int = 0) -> tuple[list[str], str | None, Carrier]:
    """Every generation ordered fresh by the compiled engine (every
    twin_every-th by the twin's), then carried in order."""
    mask = kind_mask(kinds)
    carrier = Carrier(mask, compiled=True)
    lines: list[str] = []
    fresh: list[Fresh] = []
    for i, g in enumerate(generations(data)):
        twin = twin_every and i % twin_every == twin_every - 1
        fresh.append(fresh_generation(g, mask) if twin else compiled_fresh_generation(g, mask))
    try:
        for f in fresh:
            for b in carrier.take(f):
                lines += map(parsed_text, b)
    except TraceFormatError as e:
        lines += map(parsed_text, e.partial or [])
        return lines, str(e), carrier
    sync = carrier.final_sync()
    return [*lines, parsed_text(sync)] if mask[255] else lines, None, carrier


def check(data: bytes, kinds: frozenset[Kind] | None = None, twin_every: int = 0) -> Carrier | None:
    if not whole_streams(data):
        return None
    got, err, carrier = carried(data, kinds, twin_every)
    assert (got, err) == sequential(data, kinds)
    return carrier


def summary(f: Fresh) -> dict[str, Any]:
    """What a carry reads of a fresh engine's notes, comparable across twins
    (the twin's look-ups of no id, -1 or a cell left from before, are its
    own: its carry passes over them, and the compiled engine does not note them)."""

    def cell(v: int) -> tuple[str, int, int] | int:
        return ("unknown", v.m, v.cell) if isinstance(v, _Unk) else int(v)

    def made(k: Any, f: Any, codes: tuple[int, ...]) -> bool:
        return bool(f.code in codes and f.args and f.args[0] == k)

    def firsts(w: Any, codes: tuple[int, ...]) -> dict[int, tuple[int, list[int], bool]]:
        """First met elsewhere than where it was made (the compiled engine keeps those apart)."""
        return {
            k: (f.code, f.args, f.accepted)
            for k, f in w.firsts.items()
            if type(k) is int and k >= 0 and not made(k, f, codes)
        }

    def made_here(w: Any, codes: tuple[int, ...], apart: set[int]) -> set[int]:
        return apart | {k for k, f in w.firsts.items() if type(k) is int and made(k, f, codes)}

    o = f.order
    gc = o.gc_first
    return {
        "gs": firsts(o.gs, CREATE),
        "created": made_here(o.gs, CREATE, o.created),
        "ps": firsts(o.ps, ()),
        "tasks": firsts(o.tasks, (EV_USER_TASK_BEGIN,)),
        "begun": made_here(o.tasks, (EV_USER_TASK_BEGIN,), o.begun),
        "threads": {m: [cell(c[0]), cell(c[1])] for m, c in dict.items(o.ms)},
        "own": o.own,
        "reads": o.reads,
        "gc": None if gc is None else (gc.code, gc.args, gc.accepted),
        "actives": o.actives,
        "early": o.early,
        "unmatched": o.unmatched,
        "syscall_self": [(cell(g), gid) for g, gid in o.syscall_self],
        "syscall_other": {m: gid for m, (gid, _) in o.syscall_other.items()},
        "iterated": o.ms.iterated,
        "task_ends": f.task_ends(),
        "gs_state": {k: (g.status, g.seq, g.regions, g.ranges) for k, g in dict.items(o.gs)},
        "ps_state": {k: (p.status, p.seq, p.ranges) for k, p in dict.items(o.ps)},
        "tasks_state": dict(dict.items(o.tasks)),
        "gc_state": (o.gc_seq, o.gc_state, o.initial_gen),
    }


def same_notes(data: bytes) -> None:
    if not whole_streams(data):
        return
    mask = kind_mask(None)
    for twin_gen, c_gen in zip(generations(data), generations(data), strict=True):
        twin, comp = fresh_generation(twin_gen, mask), compiled_fresh_generation(c_gen, mask)
        assert (twin.error is None) == (comp.error is None)
        if twin.error is None:
            assert summary(comp) == summary(twin)
            assert twin_gen.extra_strings == c_gen.extra_strings


CORPUS = [t.data for t in TEXT_TESTS] + [p.read_bytes() for p in RUNTIME]
IDS = [t.name for t in TEXT_TESTS] + [p.stem for p in RUNTIME]


@pytest.mark.parametrize("data", CORPUS, ids=IDS)
def test_the_compiled_engine_notes_what_the_twin_notes(data: bytes) -> None:
    same_notes(data)


@pytest.mark.parametrize("kinds", [None, SOME], ids=["all", "some"])
@pytest.mark.parametrize("data", CORPUS, ids=IDS)
def test_compiled_fresh_generations_carry_as_ordered(data: bytes, kinds: frozenset[Kind] | None) -> None:
    check(data, kinds)


def test_runtime_traces_carry_without_ordering_again() -> None:
    for p in RUNTIME:
        carrier = check(p.read_bytes())
        assert carrier is not None and carrier.reordered == 0


def test_a_start_before_its_status_is_ordered_again() -> None:
    (t,) = (t for t in TEXT_TESTS if t.name == "go122-confuse-seq-across-generations")
    carrier = check(t.data)
    assert carrier is not None and (carrier.generations, carrier.reordered) == (2, 1)


def test_fresh_results_of_both_twins_carry_into_one_stream() -> None:
    for data in CORPUS:
        check(data, None, twin_every=2)


def test_the_patches_land_in_the_columns() -> None:
    # Generation 2's status of goroutine 1 finds it Running, its task's end
    # finds the type begun in generation 1, its Sync counts 2, and its times
    # follow generation 1's last.
    (t,) = (t for t in TEXT_TESTS if t.name == "go122-task-across-generations")
    got, err, carrier = carried(t.data, None)
    assert err is None and carrier.reordered == 0
    assert 'M=0 P=0 G=1 StateTransition Time=384 ProcID=0 Running->Running Reason=""' in got
    assert 'M=0 P=0 G=1 TaskEnd Time=512 ID=2 Parent=18446744073709551615 Type="my task"' in got
    assert got[-1] == "M=-1 P=-1 G=-1 Sync Time=513 N=3"


def test_only_a_fresh_engine_has_notes() -> None:
    with pytest.raises(RuntimeError, match="not a fresh engine"):
        _CompiledEngine(kind_mask(None)).notes()


@settings(max_examples=examples(200), deadline=None)
@given(st.data())
def test_mutated_traces_note_as_the_twin_and_carry_as_ordered(data: st.DataObject) -> None:
    trace = mutated(data, data.draw(st.sampled_from(MULTI)))
    same_notes(trace)
    check(trace, data.draw(st.sampled_from([None, SOME])))


@pytest.mark.slow
@pytest.mark.parametrize("version", MODERN_VERSIONS)
def test_demo_traces_carry_as_ordered(version: str, demo_traces: dict[str, Path]) -> None:
    carrier = check(demo_traces[version].read_bytes())
    assert carrier is not None and carrier.generations >= 2
    print(f"go{version}: {carrier.reordered} of {carrier.generations} generations ordered again")
