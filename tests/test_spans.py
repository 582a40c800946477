"""Spans: well-formed on Go's own test traces, the same from the compiled
core and its twin (also on mutated traces and on arbitrary event columns),
filtered in the core exactly as a plain Python filter would, and, against
Go 1.27.3's `go tool trace -pprof=sched|sync|net|syscall`, the same time
per stack on modern and legacy traces."""

from __future__ import annotations

import dataclasses
import io
import re
from array import array
from fnmatch import fnmatchcase
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import livetrace
from livetrace import EventBatch, Span, SpanBatch, SpanBuilder, SpanKind, TraceFormatError
from livetrace._trace.model.batch import NARGS, NEXTRA
from livetrace._trace.model.tables import Tables
from livetrace._trace.select.filter import Filter
from livetrace._trace.select.match import frame_text
from livetrace._trace.spans.model import MAX_SPAN_LOGS
from livetrace._trace.spec import modern as m

from . import textform
from .conftest import examples, go_binary
from .gopprof import PPROF_LEGACY_FILES, PPROF_TEXT_TESTS, assert_totals_agree, go_totals, profile_totals
from .mutate import mutate

ROOT = Path(__file__).resolve().parent.parent
TEXT_TESTS = [t for t in textform.all_tests() if t.data and t.expect_success]
LEGACY = ROOT / "tests" / "corpus" / "legacy" / "go-testdata"
both = pytest.mark.compiled_core  # compares both implementations: once


def batches_of(data: bytes) -> list[EventBatch]:
    """The events a trace decodes to (those before a problem, if it has one)."""
    out: list[EventBatch] = []
    try:
        out.extend(item for item in livetrace.decode_batches(io.BytesIO(data)) if isinstance(item, EventBatch))
    except TraceFormatError as e:
        if e.partial:
            out.append(EventBatch.from_events(e.partial[0].gen, list(e.partial)))
    return out


def build(batches: list[EventBatch], compiled: bool | None = None, gap_at: int = -1) -> list[SpanBatch]:
    b = SpanBuilder(compiled=compiled)
    out = []
    for i, batch in enumerate(batches):
        if i == gap_at:
            b.gap()
        out.append(b.feed(batch))
    out.append(b.close())
    return out


def fingerprint(spans: list[SpanBatch]) -> list[object]:
    """Everything a list of span batches holds, comparable."""
    return [([bytes(c) for c in sb.columns()], sorted(sb.logs.items()), sorted(sb.tables)) for sb in spans] + [
        list(spans[-1].names_table) if spans else []
    ]


def assert_well_formed(spans: list[SpanBatch]) -> None:
    for sb in spans:
        for s in sb:
            assert s.end >= s.start, s
            assert s.kind in SpanKind
            assert s.resource.kind in ("None", "Goroutine", "Proc")
            if s.kind in (SpanKind.REGION, SpanKind.TASK) and not s.clipped_start:
                assert s.name, s
    assert all(s.clipped_end for s in spans[-1])


@pytest.mark.parametrize("t", TEXT_TESTS, ids=lambda t: t.name)
def test_spans_are_well_formed_on_go_text_form_tests(t: textform.TextTrace) -> None:
    batches = batches_of(t.data)
    spans = build(batches)
    assert_well_formed(spans)
    # Every goroutine that changed state has a span per state it left.
    ended = sum(1 for sb in spans[:-1] for s in sb if s.kind <= SpanKind.SYSCALL)
    assert ended <= sum(1 for b in batches for e in b if e.kind == livetrace.Kind.STATE_TRANSITION)


def test_regions_tasks_and_logs() -> None:
    (t,) = [t for t in TEXT_TESTS if t.name == "go122-annotations"]
    spans = [s for sb in build(batches_of(t.data)) for s in sb]
    regions = {s.name for s in spans if s.kind == SpanKind.REGION}
    assert {"region0", "region1", "task0 region", "unended region"} <= regions
    tasks = [s for s in spans if s.kind == SpanKind.TASK]
    assert {s.name for s in tasks} >= {"task0"}
    task0 = next(s for s in tasks if s.name == "task0")
    assert ("key0", "0123456789abcdef") in task0.logs
    inner = next(s for s in spans if s.kind == SpanKind.REGION and s.name == "region0")
    assert inner.task == task0.task and inner.task_name == "task0" and inner.start_stack
    unended = next(s for s in spans if s.name == "unended region" and s.kind == SpanKind.REGION)
    assert unended.clipped_end and unended.end_stack is None


@both
@pytest.mark.parametrize("t", TEXT_TESTS, ids=lambda t: t.name)
def test_twins_agree_on_go_text_form_tests(t: textform.TextTrace) -> None:
    batches = batches_of(t.data)
    assert fingerprint(build(batches, True)) == fingerprint(build(batches, False))
    half = len(batches) // 2
    assert fingerprint(build(batches, True, half)) == fingerprint(build(batches, False, half))


@both
@given(st.data())
def test_twins_agree_on_mutated_traces(data: st.DataObject) -> None:
    t = data.draw(st.sampled_from(TEXT_TESTS))
    batches = batches_of(mutate(data, t.data, keep=16))
    assert fingerprint(build(batches, True)) == fingerprint(build(batches, False))


SPAN_CODES = sorted(
    {m.EV_GO_CREATE, m.EV_GO_CREATE_BLOCKED, m.EV_GO_CREATE_SYSCALL, m.EV_GO_START, m.EV_GO_DESTROY}
    | {m.EV_GO_DESTROY_SYSCALL, m.EV_GO_STOP, m.EV_GO_BLOCK, m.EV_GO_UNBLOCK, m.EV_GO_SWITCH, m.EV_GO_SYSCALL_BEGIN}
    | {m.EV_GO_SYSCALL_END, m.EV_GO_SYSCALL_END_BLOCKED, m.EV_GO_STATUS, m.EV_GO_STATUS_STACK, m.EV_STW_BEGIN}
    | {m.EV_STW_END, m.EV_GC_ACTIVE, m.EV_GC_BEGIN, m.EV_GC_END, m.EV_GC_MARK_ASSIST_ACTIVE}
    | {m.EV_GC_MARK_ASSIST_BEGIN, m.EV_GC_MARK_ASSIST_END, m.EV_USER_TASK_BEGIN, m.EV_USER_TASK_END}
    | {m.EV_USER_REGION_BEGIN, m.EV_USER_REGION_END, m.EV_USER_LOG, m.EV_PROC_START, m.EV_PROC_STOP}
    | {m.EV_PROC_STEAL, m.EV_PROC_STATUS, 0, 255}
)
SMALL = st.one_of(st.integers(0, 6), st.sampled_from([1 << 63, (1 << 64) - 1, 5000]))


@st.composite
def hostile_batch(draw: st.DrawFn, gen: Tables) -> EventBatch:
    """Arbitrary columns: any order of span-making codes, any small (or
    extreme) arguments; no decoder would make them."""
    n = draw(st.integers(0, 40))
    codes = array("B", draw(st.lists(st.sampled_from(SPAN_CODES), min_size=n, max_size=n)))
    times = array("q", sorted(draw(st.lists(st.integers(0, 1000), min_size=n, max_size=n))))
    gs = array("q", draw(st.lists(st.integers(-1, 4), min_size=n, max_size=n)))
    args = array("Q", draw(st.lists(SMALL, min_size=n * NARGS, max_size=n * NARGS)))
    extra = array("Q", draw(st.lists(SMALL, min_size=n * NEXTRA, max_size=n * NEXTRA)))
    none = array("q", [-1] * n)
    ps = array("q", draw(st.lists(st.integers(-1, 3), min_size=n, max_size=n)))
    return EventBatch(gen, n, tuple(c.tobytes() for c in (codes, times, none, ps, gs, args, extra)))


@both
@settings(max_examples=examples(300))
@given(st.data())
def test_twins_agree_on_hostile_columns(data: st.DataObject) -> None:
    gens = [Tables(gen=g, strings={0: b"", 1: b"chan receive", 2: f"r{g}".encode()}) for g in (1, 2)]
    for t in gens:
        t.extra_strings.append(b"task type")
    batches = [data.draw(hostile_batch(gens[i // 2])) for i in range(data.draw(st.integers(1, 4)))]
    gap_at = data.draw(st.integers(-1, len(batches)))
    c, p = build(batches, True, gap_at), build(batches, False, gap_at)
    assert fingerprint(c) == fingerprint(p)
    for sb in c:
        list(sb)  # every span can be made


def test_gap_forgets_what_crossed_it() -> None:
    (t,) = [t for t in TEXT_TESTS if t.name == "go122-gc-stress"]
    (whole, *_) = batches_of(t.data)
    events = list(whole)
    batches = [EventBatch.from_events(whole.gen, events[i : i + 500]) for i in range(0, len(events), 500)]
    assert len(batches) > 2
    cut = len(batches) // 2
    resume = batches[cut].times[0]
    spans = build(batches, gap_at=cut)
    after = [s for sb in spans[cut:] for s in sb]
    assert after and all(s.start >= resume for s in after)
    assert all(s.clipped_start for s in after if s.kind == SpanKind.RUNNING and s.start == resume)


@pytest.mark.parametrize("compiled", [False, pytest.param(True, marks=both)])
def test_open_spans_keep_only_their_stacks_of_old_tables(compiled: bool) -> None:
    # The same events cut into many "generations" (tables objects): the spans
    # are those of one, and the tables of the past generations still kept for
    # spans open across them are cut down to those spans' start stacks, not
    # a whole generation's (a goroutine blocked all session long pinned them all).
    (t,) = [t for t in TEXT_TESTS if t.name == "go122-gc-stress"]
    (whole, *_) = batches_of(t.data)
    tables = whole.gen
    assert tables is not None
    events = list(whole)
    step = 200
    one = build([EventBatch.from_events(tables, events[i : i + step]) for i in range(0, len(events), step)], compiled)
    b = SpanBuilder(compiled=compiled)
    many = []
    for i in range(0, len(events), step):
        gen = dataclasses.replace(tables)  # another generation, with the same tables
        many.append(b.feed(EventBatch.from_events(gen, events[i : i + step])))
    old = [tb for k, tb in b._tables.items() if k < b._token]
    assert old and all(type(tb) is Tables and len(tb.stacks) < len(tables.stacks) for tb in old)
    many.append(b.close())
    assert [list(sb) for sb in many] == [list(sb) for sb in one]


def reference_filter(s: Span, flt: Filter) -> bool:
    """What a filter means, on Span objects."""
    if flt.kinds is not None and s.kind not in flt.kinds:
        return False
    if flt.goroutines is not None and not (s.resource.kind == "Goroutine" and s.resource.id in flt.goroutines):
        return False
    if flt.procs is not None and not (s.proc >= 0 and s.proc in flt.procs):
        return False
    if flt.tasks is not None and not any(fnmatchcase(s.task_name, g) for g in flt.tasks):
        return False
    if flt.regions is not None and not (s.kind != SpanKind.TASK and any(fnmatchcase(s.name, g) for g in flt.regions)):
        return False
    if flt.min_duration is not None and s.duration < flt.min_duration:
        return False
    if flt.stack is not None:
        frames = [f for st_ in (s.start_stack, s.end_stack) for f in st_ or []]
        if not any(flt.stack.search(f"{f.func} {f.file}:{f.line}") for f in frames):
            return False
    return flt.predicate is None or flt.predicate(s)


FILTERS = [
    Filter(),
    Filter(kinds=frozenset({SpanKind.BLOCKED, SpanKind.SYSCALL})),
    Filter(goroutines=frozenset({1, 5, 7})),
    Filter(procs=frozenset({0})),
    Filter(procs=frozenset({1, 2}), kinds=frozenset({SpanKind.RUNNING})),
    Filter(tasks=("task*",)),
    Filter(regions=("region?", "unended*")),
    Filter(min_duration=5_000),
    Filter(stack=re.compile(r"main\.main\b|chan\.go")),
    Filter(kinds=frozenset({SpanKind.RUNNING}), predicate=lambda s: isinstance(s, Span) and s.resource.id % 2 == 0),
]


@pytest.mark.parametrize("flt", FILTERS, ids=range(len(FILTERS)))
def test_select_spans_keeps_what_the_filter_means(flt: Filter) -> None:
    data = b"".join(t.data for t in TEXT_TESTS if t.name == "go122-annotations")
    spans = build(batches_of(data))
    for sb in spans:
        got = livetrace.select_spans(sb, flt)
        want = [s for s in sb if reference_filter(s, flt)]
        assert list(got) == want


@both
@pytest.mark.parametrize("flt", FILTERS, ids=range(len(FILTERS)))
def test_select_twins_agree(flt: Filter) -> None:
    for t in TEXT_TESTS[:8]:
        for sb in build(batches_of(t.data)):
            a, b = livetrace.select_spans(sb, flt, compiled=True), livetrace.select_spans(sb, flt, compiled=False)
            assert fingerprint([a]) == fingerprint([b])


# -- P spans --


def proc_running_from_events(batches: list[EventBatch]) -> dict[int, tuple[int, int]]:
    """Per P, (times it ran, ns it ran) from the decoder's own proc state
    transitions (those `go tool trace -d=parsed` prints: the dump tests hold
    them equal), summed here independently of the span core; running at
    the end counts to the last event."""
    since: dict[int, int] = {}
    out: dict[int, tuple[int, int]] = {}
    last = 0
    for b in batches:
        for e in b:
            last = e.time
            if e.kind != livetrace.Kind.STATE_TRANSITION:
                continue
            tr = e.state_transition()
            p = tr.resource.id
            if tr.resource.kind != "Proc" or (tr.old == "Running") == (tr.new == "Running"):
                continue
            if tr.new == "Running":
                since[p] = e.time
            elif p in since:
                n, ns = out.get(p, (0, 0))
                out[p] = (n + 1, ns + e.time - since.pop(p))
    for p, t in since.items():
        n, ns = out.get(p, (0, 0))
        out[p] = (n + 1, ns + last - t)
    return out


def proc_spans_of(spans: list[SpanBatch]) -> list[Span]:
    return [s for sb in spans for s in sb if s.resource.kind == "Proc"]


@pytest.mark.parametrize(
    "data",
    [pytest.param(t.data, id=t.name) for t in TEXT_TESTS if t.name.startswith("go122-")]
    # a stress trace takes seconds: not in the inner loop, but on both passes
    + [pytest.param((LEGACY / "stress_1_11_good").read_bytes(), id="stress_1_11_good", marks=pytest.mark.slow)]
    + [pytest.param((LEGACY / "user_task_region_1_21_good").read_bytes(), id="user_task_region_1_21_good")],
)
def test_proc_spans_agree_with_proc_transitions(data: bytes) -> None:
    batches = batches_of(data)
    spans = build(batches)
    procs = proc_spans_of(spans)
    assert all(s.kind == SpanKind.RUNNING and s.proc == s.resource.id >= 0 and s.end >= s.start for s in procs)
    ours: dict[int, tuple[int, int]] = {}
    for s in procs:
        n, ns = ours.get(s.proc, (0, 0))
        ours[s.proc] = (n + 1, ns + s.duration)
    assert ours == proc_running_from_events(batches)
    # A goroutine runs on a P only while that P runs.
    by_p: dict[int, list[Span]] = {}
    for s in procs:
        by_p.setdefault(s.proc, []).append(s)
    for s in (s for sb in spans for s in sb if s.resource.kind == "Goroutine" and s.kind == SpanKind.RUNNING):
        if s.proc >= 0:
            assert any(p.start <= s.start and s.end <= p.end for p in by_p.get(s.proc, ())), s


def test_proc_filter_keeps_p_spans_and_goroutines_run_on_them() -> None:
    (t,) = [t for t in TEXT_TESTS if t.name == "go122-gc-stress"]
    spans = build(batches_of(t.data))
    flt = Filter(procs=frozenset({1}))
    got = [s for sb in spans for s in livetrace.select_spans(sb, flt)]
    assert {s.resource.kind for s in got} == {"Proc", "Goroutine"}
    assert all(s.proc == 1 and s.kind == SpanKind.RUNNING for s in got)


# -- regions: logs, and the end of their goroutine --

Row = tuple[int, int, int, int, list[int]]  # code, time, P, goroutine, arguments


def columns_batch(gen: Tables, rows: list[Row]) -> EventBatch:
    """A batch of events as a decoder would lay them out (only the columns the span layer reads)."""
    n = len(rows)
    codes = array("B", [code for code, *_ in rows])
    times = array("q", [t for _, t, _, _, _ in rows])
    procs = array("q", [p for _, _, p, _, _ in rows])
    gs = array("q", [g for _, _, _, g, _ in rows])
    args = array("Q", [v for *_, a in rows for v in (a + [0] * NARGS)[:NARGS]])
    cols = (codes, times, array("q", [-1] * n), procs, gs, args, array("Q", [0] * (n * NEXTRA)))
    return EventBatch(gen, n, tuple(c.tobytes() for c in cols))


@pytest.mark.parametrize("compiled", [False, pytest.param(True, marks=both)])
def test_a_region_open_at_its_goroutines_exit_ends_there_with_its_logs(compiled: bool) -> None:
    gen = Tables(gen=1, strings={0: b"", 1: b"outer", 2: b"inner", 3: b"cat", 4: b"msg", 5: b"other"})
    task = 5
    rows: list[Row] = [
        (m.EV_GO_START, 1, 0, -1, [7, 0]),
        (m.EV_USER_TASK_BEGIN, 2, 0, 7, [task, 0, 3, 0]),
        (m.EV_USER_REGION_BEGIN, 3, 0, 7, [task, 1, 0]),
        (m.EV_USER_REGION_BEGIN, 4, 0, 7, [task, 2, 0]),
        (m.EV_USER_LOG, 5, 0, 7, [task, 3, 4, 0]),
        (m.EV_USER_LOG, 6, 0, 7, [task + 1, 5, 5, 0]),  # another task: not the regions'
        (m.EV_USER_LOG, 7, 0, 8, [task, 5, 5, 0]),  # another goroutine: not the regions'
    ]
    rows += [(m.EV_USER_LOG, 8 + k, 0, 7, [task, 3, 4, 0]) for k in range(MAX_SPAN_LOGS + 5)]
    end = 8 + MAX_SPAN_LOGS + 5
    rows.append((m.EV_GO_DESTROY, end, 0, 7, []))
    b = SpanBuilder(compiled=compiled)
    ended = list(b.feed(columns_batch(gen, rows)))
    regions = [s for s in ended if s.kind == SpanKind.REGION]
    want = [("inner", 4, end, True), ("outer", 3, end, True)]  # innermost first, cut at the exit
    assert [(s.name, s.start, s.end, s.clipped_end) for s in regions] == want
    for s in regions:
        assert s.task == task and len(s.logs) == MAX_SPAN_LOGS and set(s.logs) == {("cat", "msg")}
    running = next(s for s in ended if s.kind == SpanKind.RUNNING)
    assert running.proc == 0 and running.end == end
    rest = list(b.close())
    (task_span,) = rest  # still open at the end; its logs capped as well, the other goroutine's among them
    assert task_span.kind == SpanKind.TASK and len(task_span.logs) == MAX_SPAN_LOGS
    assert task_span.logs[:2] == (("cat", "msg"), ("other", "other"))


def test_frames_are_formatted_function_file_line() -> None:
    t = Tables(strings={0: b"", 1: b"main.main", 2: b"/x/main.go"}, stacks={0: (), 1: (7,)}, frames={7: (1, 2, 12)})
    assert frame_text(t, 7) == "main.main /x/main.go:12"


def test_decode_spans_reads_legacy_and_modern_files() -> None:
    legacy = list(livetrace.decode_spans(LEGACY / "user_task_region_1_21_good"))
    assert {SpanKind.REGION, SpanKind.TASK, SpanKind.RUNNING} <= {s.kind for s in legacy}
    (t,) = [t for t in TEXT_TESTS if t.name == "go122-annotations"]
    picked = list(livetrace.decode_spans(io.BytesIO(t.data), Filter(kinds=frozenset({SpanKind.TASK}))))
    assert picked and all(s.kind == SpanKind.TASK for s in picked)


# -- against Go's own analysis --


def spans_of(path: Path) -> list[SpanBatch]:
    return build([b for b in livetrace.decode_batches(path) if isinstance(b, EventBatch)])


def assert_profiles_agree(path: Path, tie_ns_per_span: int) -> None:
    """The spans' totals per stack are Go's (gopprof.assert_totals_agree)."""
    assert_totals_agree(profile_totals(spans_of(path)), go_totals(go_binary("1.27"), path), tie_ns_per_span)


@pytest.mark.slow  # records the demo (shared with other tests): slow, not go
@pytest.mark.parametrize("version", ["1.22", "1.26"])
def test_totals_per_stack_agree_with_go_on_demo_traces(version: str, demo_traces: dict[str, Path]) -> None:
    assert_profiles_agree(demo_traces[version], 0)


@pytest.mark.go
@pytest.mark.parametrize("name", PPROF_TEXT_TESTS)
def test_totals_per_stack_agree_with_go_on_text_form_traces(name: str, tmp_path: Path) -> None:
    (t,) = [t for t in TEXT_TESTS if t.name == name]
    path = tmp_path / "t.trace"
    path.write_bytes(t.data)
    assert_profiles_agree(path, 0)


@pytest.mark.go
@pytest.mark.parametrize("name", PPROF_LEGACY_FILES)
def test_totals_per_stack_agree_with_go_on_legacy_traces(name: str) -> None:
    assert_profiles_agree(LEGACY / name, 1)
