"""The span path's steps done in the core and their Python twins: the logs of
tasks and regions (user_logs_scan, UserLogs.scan), the same logs out and the
same state left, batch after batch, sequential or split (a generation on its
own, where tasks and regions from before are unknown), on Go's annotation
traces and on hostile columns; and whether a generation's first touches fit
the spans carried in and which they take (span_join_fits and
span_join_take_states, SpanJoin._touches_fit and _Patch.take_states); the
logs of a batch's task spans by row (span_task_logs, span_logs' loop)."""

from __future__ import annotations

from array import array

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from livetrace import EventBatch
from livetrace._trace.accel import ccore
from livetrace._trace.model.batch import NARGS, NEXTRA
from livetrace._trace.model.tables import Tables
from livetrace._trace.spans.builder import span_logs
from livetrace._trace.spans.join import _STATE, SpanJoin, _Patch, build_generation
from livetrace._trace.spans.logs import CompiledUserLogs, Prior, Region, UserLogs, user_logs
from livetrace._trace.spans.model import MAX_SPAN_LOGS
from livetrace._trace.spans.twin import END, FT_TASK
from livetrace._trace.spec import modern as m

from .conftest import examples
from .gilcheck import lets_the_gil_go
from .test_span_join import cut, generations, named
from .test_spans import batches_of, hostile_batch

pytestmark = [pytest.mark.once, pytest.mark.compiled_core]


def state(u: UserLogs | CompiledUserLogs) -> tuple[object, ...]:
    return (u.tasks, u.regions, u.seq, u.touched, u.pending_tasks, u.pops, u.pending_regions)


def assert_twins_agree(batches: list[EventBatch], split: bool) -> int:
    """Feeds both scans the batches; how many tasks and regions ended."""
    fast, slow = user_logs(split=split, compiled=True), user_logs(split=split, compiled=False)
    found = 0
    for b in batches:
        codes, _, _, _, goroutines, args, _ = b.columns()
        strings = b.gen.strings if b.gen is not None else {}
        got = fast.scan(codes, goroutines, args, strings)
        want = slow.scan(codes, goroutines, args, strings)
        assert got == want
        assert state(fast) == state(slow)
        found += len(want[0]) + len(want[1])
    return found


@pytest.mark.parametrize("split", [False, True])
@pytest.mark.parametrize("step", [0, 7, 50])
def test_core_scan_is_the_twins_on_annotation_traces(split: bool, step: int) -> None:
    for name in ("go122-annotations", "go122-annotations-stress"):
        batches = batches_of(named(name).data)
        assert assert_twins_agree(cut(batches, step) if step else batches, split) > 0


@settings(max_examples=examples(300))
@given(st.data())
def test_core_scan_is_the_twins_on_hostile_columns(data: st.DataObject) -> None:
    gen = Tables(gen=1, strings={0: b"", 1: b"chan receive", 2: b"r1"})
    batches = [data.draw(hostile_batch(gen)) for _ in range(data.draw(st.integers(1, 4)))]
    assert_twins_agree(batches, data.draw(st.booleans()))


def user_batch(rows: list[tuple[int, int, int, int, int]]) -> EventBatch:
    """Events (code, goroutine, arg0, arg1, arg2)."""
    n = len(rows)
    args = array("Q", [0] * (n * NARGS))
    for i, (_, _, a0, a1, a2) in enumerate(rows):
        args[i * NARGS : i * NARGS + 3] = array("Q", [a0, a1, a2])
    gen = Tables(gen=1, strings={0: b"", 1: b"cat", 2: b"msg"})
    cols = (
        array("B", [r[0] for r in rows]),
        array("q", range(n)),
        array("q", [-1] * n),
        array("q", [-1] * n),
        array("q", [r[1] for r in rows]),
        args,
        array("Q", [0] * (n * NEXTRA)),
    )
    return EventBatch(gen, n, tuple(c.tobytes() for c in cols))


@pytest.mark.parametrize("split", [False, True])
def test_core_scan_caps_logs_and_ends_regions_at_exits(split: bool) -> None:
    many = [(m.EV_USER_LOG, 5, 7, 1, 2)] * (MAX_SPAN_LOGS + 3) + [(m.EV_USER_LOG, 5, 8, 9, 2)]
    rows = [
        (m.EV_USER_REGION_END, 5, 7, 0, 0),  # none open here: split, one from before
        (m.EV_USER_LOG, 5, 9, 1, 2),  # a task not seen begin
        (m.EV_USER_TASK_BEGIN, 4, 7, 0, 0),
        (m.EV_USER_REGION_BEGIN, 5, 7, 0, 0),
        (m.EV_USER_REGION_BEGIN, 5, 8, 0, 0),
        *many,
        (m.EV_GO_DESTROY, 5, 0, 0, 0),  # ends both regions, innermost first
        (m.EV_USER_REGION_END, 5, 7, 0, 0),  # after its exit: clipped
        (m.EV_USER_TASK_END, 4, 7, 0, 0),
        (m.EV_USER_TASK_END, 4, 9, 0, 0),  # split: a task from before, with its pending log
    ]
    batch = user_batch(rows)
    assert assert_twins_agree([batch, batch], split) == 12
    u = user_logs(split=split, compiled=True)
    codes, _, _, _, goroutines, args, _ = batch.columns()
    tasks, regions = u.scan(codes, goroutines, args, batch.gen.strings if batch.gen else {})
    assert tasks[7] == [(b"cat", b"msg")] * MAX_SPAN_LOGS
    inner, outer = regions[1:3]
    assert inner == [(b"", b"msg")] and outer == tasks[7]


def fits_both_ways(batches: list[EventBatch]) -> list[tuple[bool, int]]:
    """Each generation's first touches against the state carried in, asked
    of the core and of the twin before the generation is joined: whether
    they fit, and the spans they take from it."""
    j = SpanJoin(compiled=True)
    out = []
    for i, gen in enumerate(generations(batches)):
        w = build_generation(gen, i, compiled=True)
        fast = ccore.span_join_fits(
            w.touches, j._states, j._procs, j._gc is not None, j._stw is not None, j._assists, _STATE
        )
        assert fast == j._touches_fit(w.touches)
        carried = dict(j._states)
        taken = ccore.span_join_take_states(w.touches, carried, j._tasks, j._task_logs, FT_TASK, END)
        before = dict(j._states)
        assert _Patch(j, w).take_states() == taken
        assert j._states == carried
        j._states = before
        out.append((fast, sum(p is not None for _, p in taken)))
        j.join(w, gen)
    return out


def test_core_join_fits_as_the_twin() -> None:
    seen = []
    for name, step in [("go122-annotations-stress", 20), ("go122-gc-stress", 300), ("go122-annotations", 7)]:
        seen += fits_both_ways(cut(batches_of(named(name).data), step))
    assert {fits for fits, _ in seen} == {True, False}
    assert sum(n for _, n in seen) > 0


def test_core_task_logs_by_row_as_the_twin() -> None:
    found = 0
    for name, step in [("go122-annotations", 0), ("go122-annotations-stress", 0), ("go122-annotations-stress", 20)]:
        batches = batches_of(named(name).data)
        for i, gen in enumerate(generations(cut(batches, step) if step else batches)):
            for cols, task_logs, _ in build_generation(gen, i, compiled=True).parts:
                logs = {t: got for t, got in task_logs.items() if not isinstance(got, Prior)}
                logs[1 << 63] = [(b"a task", b"with no span")]
                fast = span_logs(cols, logs, [], fast=True)
                assert fast == span_logs(cols, logs, [], fast=False)
                assert list(fast) == sorted(fast)
                found += len(fast)
    assert found > 0


def scan_of(u: UserLogs | CompiledUserLogs, batch: EventBatch) -> tuple[object, object]:
    codes, _, _, _, goroutines, args, _ = batch.columns()
    return u.scan(codes, goroutines, args, batch.gen.strings if batch.gen else {})


@pytest.mark.parametrize("split", [False, True])
def test_state_set_and_read_back_is_the_twins(split: bool) -> None:
    """What the join sets (open tasks and regions, with their logs so far)
    reads back as it was set, then follows a batch as the twin does; the
    lists read are the state's own, as the twin's are: a log scanned after
    they were read is in them."""
    tasks = {7: [(b"a", b"b")], 1 << 63: []}
    regions: dict[int, list[Region]] = {5: [(7, 1, []), (8, 2, [(b"c", b"d")])], -3: [(9, 3, [])], 6: []}
    both = [user_logs(split=split, compiled=c) for c in (True, False)]
    for u in both:
        u.tasks = {k: list(v) for k, v in tasks.items()}
        u.regions = {g: [(t, s, list(lg)) for t, s, lg in rs] for g, rs in regions.items()}
        u.seq = 3
    assert state(both[0]) == state(both[1])
    assert both[0].tasks == tasks and both[0].regions == regions
    read = both[0].tasks[7]
    batch = user_batch(
        [
            (m.EV_USER_LOG, 5, 7, 1, 2),
            (m.EV_USER_REGION_BEGIN, 6, 7, 0, 0),
            (m.EV_USER_REGION_END, 5, 8, 0, 0),
            (m.EV_GO_DESTROY, -3, 0, 0, 0),
            (m.EV_USER_REGION_END, 6, 0, 0, 0),
            (m.EV_USER_REGION_END, 6, 0, 0, 0),  # none left open: clipped, or (split) one from before
        ]
    )
    assert scan_of(both[0], batch) == scan_of(both[1], batch)
    assert state(both[0]) == state(both[1])
    assert read == [(b"a", b"b"), (b"cat", b"msg")]


@pytest.mark.parametrize(
    ("what", "value"),
    [
        ("tasks", {"7": []}),
        ("tasks", {7: ()}),
        ("regions", {5: [(7, 1)]}),
        ("regions", {5: [(7, 1, ())]}),
        ("regions", {5: (7, 1, [])}),
        ("regions", {1 << 64: []}),
    ],
)
def test_state_of_the_wrong_shape_is_refused_and_the_old_kept(what: str, value: dict[object, object]) -> None:
    u = user_logs(compiled=True)
    u.tasks, u.regions = {1: [(b"x", b"y")]}, {2: [(1, 1, [])]}
    with pytest.raises((TypeError, OverflowError)):
        setattr(u, what, value)
    assert u.tasks == {1: [(b"x", b"y")]} and u.regions == {2: [(1, 1, [])]}


def test_a_scan_refuses_to_be_reentered() -> None:
    """A Prior made in the scan runs Python, where another thread (here,
    the Prior itself) may call the same state: refused, never a state
    changed under the scan's feet."""
    asked: list[BaseException] = []

    def prior(*args: object) -> Prior:
        try:
            core.export()
        except RuntimeError as e:
            asked.append(e)
        return Prior(*args)  # type: ignore[arg-type]  # Prior's fields, as the core passes them

    core = ccore.UserLogsCore(True, MAX_SPAN_LOGS, prior)
    batch = user_batch([(m.EV_USER_REGION_END, 5, 7, 0, 0)])  # split, none open: one from before
    codes, _, _, _, goroutines, args, _ = batch.columns()
    _, regions = core.scan(codes, goroutines, args, {})
    assert regions == [Prior(5, 0)]
    assert [str(e) for e in asked] == ["UserLogsCore is in use: its scan is running"]
    assert core.export()[5] == {5: [1, 0]}


def test_the_scan_lets_the_gil_go_while_it_looks_for_its_rows() -> None:
    n = 2_000_000  # none of them the scan's
    codes, goroutines, args = bytes([m.EV_GO_CREATE]) * n, bytes(8 * n), bytes(8 * NARGS * n)
    u = user_logs(compiled=True)
    assert lets_the_gil_go(lambda: u.scan(memoryview(codes), memoryview(goroutines), memoryview(args), {}))


@pytest.mark.parametrize("fast", [True, False], ids=["compiled", "twin"])
def test_regions_ended_is_region_meta_without_its_rows(fast: bool) -> None:
    """What the join's check asks of a generation's regions, without the
    rows of every span a goroutine emitted (a long-lived one has thousands)."""
    asked = 0
    for name, step in [("go122-annotations-stress", 20), ("go122-annotations", 7)]:
        for i, gen in enumerate(generations(cut(batches_of(named(name).data), step))):
            w = build_generation(gen, i, compiled=fast)
            goroutines = {-1, 0, 1 << 40, *w.logs.pops, *w.logs.pending_regions}
            goroutines |= {int(g) for b in gen for g in b.columns()[4]}
            for g in goroutines:
                pops, cleared, _ = w.core.region_meta(g)
                assert w.core.regions_ended(g) == (pops, cleared)
                asked += bool(pops or cleared)
    assert asked > 0
