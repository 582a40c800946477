"""Traces as tables (livetrace.tables, iter_tables, sql), on small corpus
traces, with no Go: every table has its schema; each holds what the event
model and the spans hold (counted from Event and Span objects, one at a
time, nothing shared with the column kernels); stack ids are stable and
deduplicated; the compiled core and its twin give the same tables; bad
input and a missing pyarrow give typed errors. tests/test_tables_go.py
checks the tables against Go's own tools."""

from __future__ import annotations

import io
import re
import sys
from collections import Counter
from pathlib import Path

import pyarrow as pa
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import livetrace
from livetrace import EventBatch, Kind, LivetraceError, MissingDependencyError, SpanKind
from livetrace._errors import InputPathError
from livetrace._tables.build import _wakers
from livetrace._tables.schema import COLUMNS, SCHEMA_VERSION, SCHEMA_VERSION_KEY, SCHEMAS, TABLE_NAMES
from livetrace._tables.views import VIEWS
from livetrace._trace.model.events import NO_TASK
from livetrace._trace.spec.modern import EV_GO_SWITCH, EV_GO_SWITCH_DESTROY, EV_GO_UNBLOCK, EV_USER_TASK_BEGIN, SPECS
from livetrace._views.top import TopStats
from livetrace._views.top_screen import snapshot_dict

from . import textform
from .conftest import ROOT, examples
from .mutate import mutate
from .tabletop import assert_top_agrees

CORPUS = ROOT / "tests" / "corpus"
LEGACY = CORPUS / "legacy" / "go-testdata"
RUNTIME = CORPUS / "runtime"
TEXT = {t.name: t for t in textform.all_tests() if t.data and t.expect_success}
# Small traces of every family: Go 1.11 to 1.21 legacy, Go 1.22+ (text form), Go 1.26 (a runtime's own).
SMALL: list[tuple[str, bytes]] = [
    ("user_task_region_1_21_good", (LEGACY / "user_task_region_1_21_good").read_bytes()),
    ("http_1_19_good", (LEGACY / "http_1_19_good").read_bytes()),
    ("user_task_region_1_11_good", (LEGACY / "user_task_region_1_11_good").read_bytes()),
    ("go122-annotations", TEXT["go122-annotations"].data),
    ("go122-task-across-generations", TEXT["go122-task-across-generations"].data),
    ("go125-sync", TEXT["go125-sync"].data),
    ("go126-empty-stack-last", (RUNTIME / "go126-empty-stack-last.trace").read_bytes()),
]
ids = [name for name, _ in SMALL]


def events_of(data: bytes) -> list[livetrace.Event]:
    return [e for b in livetrace.decode_batches(io.BytesIO(data)) if isinstance(b, EventBatch) for e in b]


def spans_of(data: bytes) -> list[livetrace.Span]:
    return list(livetrace.decode_spans(io.BytesIO(data)))


def test_every_table_has_its_schema_and_the_schemas_version() -> None:
    t = livetrace.tables(SMALL[0][1])
    assert list(t) == list(TABLE_NAMES)
    for name, table in t.items():
        assert table.schema == SCHEMAS[name], name
        assert table.schema.metadata[SCHEMA_VERSION_KEY] == str(SCHEMA_VERSION).encode()
        assert all(f.metadata and f.metadata[b"doc"] for f in table.schema), name
    for unit in livetrace.iter_tables(SMALL[3][1]):
        assert list(unit) == list(TABLE_NAMES)
        assert all(batch.schema == SCHEMAS[name] for name, batch in unit.items())


def test_docs_list_every_table_and_column() -> None:
    text = (ROOT / "docs" / "sql.md").read_text()
    for table, columns in COLUMNS.items():
        section = re.search(rf"^### `{table}`\n(.*?)(?=^##)", text, re.DOTALL | re.MULTILINE)
        assert section, table
        listed = re.findall(r"^\| `(\w+)` \|", section[1], re.MULTILINE)
        assert listed == [c[0] for c in columns], table
    for view in VIEWS:
        assert f"`{view}`" in text, view


@pytest.mark.parametrize(("name", "data"), SMALL, ids=ids)
def test_events_are_the_event_models(name: str, data: bytes) -> None:
    events = events_of(data)
    t = livetrace.tables(data)["events"]
    assert t.num_rows == len(events)
    rows = t.select(["time", "kind", "goroutine", "proc", "thread", "stack_id"]).to_pylist()
    stacks = {r["stack_id"]: r for r in livetrace.tables(data)["stacks"].to_pylist()}
    frames = {r["frame_id"]: r for r in livetrace.tables(data)["frames"].to_pylist()}
    for e, r in zip(events, rows, strict=True):
        assert (r["time"], r["kind"], r["goroutine"], r["proc"], r["thread"]) == (e.time, e.kind_name, e.g, e.p, e.m)
        want = [(f.func, f.file, f.line, f.pc) for f in e.stack()]
        got = [] if r["stack_id"] is None else stacks[r["stack_id"]]["frame_ids"]
        assert [(frames[f]["function"], frames[f]["file"], frames[f]["line"], frames[f]["pc"]) for f in got] == want


@pytest.mark.parametrize(("name", "data"), SMALL, ids=ids)
def test_string_arguments_logs_and_counters(name: str, data: bytes) -> None:
    events = events_of(data)
    t = livetrace.tables(data)
    logs = [e.log() for e in events if e.kind == Kind.LOG]
    assert [(r["task"], r["category"], r["message"]) for r in t["logs"].to_pylist()] == logs
    metrics = [(e.time, *e.metric()) for e in events if e.kind == Kind.METRIC]
    got = [(r["time"], r["name"], r["value"]) for r in t["counters"].to_pylist() if r["name"].startswith("/")]
    assert got == metrics
    regions = [e.region()[1] for e in events if e.kind == Kind.REGION_BEGIN]
    region_rows = t["events"].filter(pa.compute.equal(t["events"]["kind"], "RegionBegin"))
    assert region_rows["string1"].to_pylist() == regions


@pytest.mark.parametrize(("name", "data"), SMALL, ids=ids)
def test_spans_and_states_are_the_spans(name: str, data: bytes) -> None:
    spans = spans_of(data)
    t = livetrace.tables(data)
    # A unit's spans are partitioned (goroutine states first: tests/test_table_span_parts.py): the same rows.
    got = Counter(
        (
            r["kind"],
            r["resource"],
            r["resource_id"],
            r["start"],
            r["end"],
            r["duration"],
            r["reason"],
            r["name"],
            r["task"],
            r["task_name"],
            r["proc"],
            r["clipped_start"],
            r["clipped_end"],
            r["start_stack_id"] is None,
        )
        for r in t["spans"].to_pylist()
    )
    assert got == Counter(
        (
            str(s.kind),
            s.resource.kind,
            s.resource.id,
            s.start,
            s.end,
            s.duration,
            s.reason,
            s.name,
            s.task,
            s.task_name,
            s.proc,
            s.clipped_start,
            s.clipped_end,
            not s.start_stack,
        )
        for s in spans
    )
    goroutine = [s for s in spans if s.resource.kind == "Goroutine" and s.kind <= SpanKind.SYSCALL]
    states = t["goroutine_states"].to_pylist()
    assert [(r["goroutine"], r["state"], r["start"], r["end"]) for r in states] == [
        (s.resource.id, str(s.kind), s.start, s.end) for s in goroutine
    ]
    procs = t["proc_states"].to_pylist()
    assert Counter((r["state"], r["proc"], r["goroutine"]) for r in procs) == Counter(
        [("running", s.resource.id, None) for s in spans if s.resource.kind == "Proc"]
        + [("goroutine", s.proc, s.resource.id) for s in goroutine if s.kind == SpanKind.RUNNING and s.proc >= 0]
    )
    assert [(r["name"], r["start"], r["end"]) for r in t["regions"].to_pylist()] == [
        (s.name, s.start, s.end) for s in spans if s.kind == SpanKind.REGION
    ]
    assert [(r["task"], r["name"], r["start"]) for r in t["tasks"].to_pylist()] == [
        (s.task, s.name, s.start) for s in spans if s.kind == SpanKind.TASK
    ]


@pytest.mark.parametrize(("name", "data"), SMALL, ids=ids)
def test_wakers_and_parent_tasks_are_the_events(name: str, data: bytes) -> None:
    events = events_of(data)
    woke = {(e.args[0], e.time): e.g for e in events if e.code in (EV_GO_UNBLOCK, EV_GO_SWITCH, EV_GO_SWITCH_DESTROY)}
    t = livetrace.tables(data)
    for r in t["goroutine_states"].to_pylist():
        assert r["waker_goroutine"] == woke.get((r["goroutine"], r["end"])), r
    parents = {e.args[0]: e.args[1] for e in events if e.code == EV_USER_TASK_BEGIN and e.args[1] != NO_TASK}
    for r in t["tasks"].to_pylist():
        assert r["parent_task"] == parents.get(r["task"]), r


def test_annotations_have_tasks_regions_logs_and_parents() -> None:
    t = livetrace.tables(TEXT["go122-annotations"].data)
    assert t["tasks"].num_rows and t["regions"].num_rows and t["logs"].num_rows
    nested = livetrace.tables(TEXT["go122-annotations-stress"].data)["tasks"]["parent_task"]
    assert 0 < nested.null_count < len(nested)


def test_stack_ids_are_stable_across_generations_and_captures() -> None:
    """The same file twice: two captures, one set of stacks, each once."""
    data = TEXT["go122-task-across-generations"].data
    path = LEGACY / "http_1_19_good"
    one = livetrace.tables(path)
    two = livetrace.tables([path, path])
    assert two["captures"].num_rows == 2
    assert two["captures"]["capture"][0] == two["captures"]["capture"][1]  # the same file: the same id
    assert two["stacks"].equals(one["stacks"]) and two["frames"].equals(one["frames"])
    assert two["events"].num_rows == 2 * one["events"].num_rows
    ids = set(one["stacks"]["stack_id"].to_pylist())
    assert len(ids) == one["stacks"].num_rows
    assert set(one["events"]["stack_id"].drop_null().to_pylist()) <= ids
    assert set(one["spans"]["start_stack_id"].drop_null().to_pylist()) <= ids
    # A modern trace restates its stacks in each generation, under new ids: one row each here.
    gens = livetrace.tables(data)
    assert len(set(gens["events"]["generation"].to_pylist())) > 1
    assert len(set(gens["stacks"]["stack_id"].to_pylist())) == gens["stacks"].num_rows


def test_units_are_generations_and_the_capture_comes_last() -> None:
    data = TEXT["go122-task-across-generations"].data
    units = list(livetrace.iter_tables(data))
    gens = [set(u["events"]["generation"].to_pylist()) for u in units]
    assert len(units) > 1 and all(len(g) <= 1 for g in gens)
    assert gens == [{1}, {2}], "a unit a generation, the final Sync in the last one's"
    assert [u["captures"].num_rows for u in units] == [0] * (len(units) - 1) + [1]
    whole = livetrace.tables(data)
    rows = sum(u["events"].num_rows for u in units)
    assert rows == whole["events"].num_rows == whole["captures"]["events"][0].as_py()


def test_captures_say_the_format_and_the_clock() -> None:
    t = livetrace.tables(RUNTIME / "go126-empty-stack-last.trace")
    (cap,) = t["captures"].to_pylist()
    assert cap["trace_format"] == "go1.26" and cap["source"] == "file" and cap["name"].endswith(".trace")
    assert cap["wall_base"] is not None and cap["start_wall"] is not None and cap["end_wall"] > cap["start_wall"]
    events = events_of((RUNTIME / "go126-empty-stack-last.trace").read_bytes())
    walls = t["events"]["wall_time"].cast(pa.int64()).to_pylist()
    bases = [None if e.gen is None else e.gen.wall_base for e in events]
    assert walls == [None if base is None else base + e.time for e, base in zip(events, bases, strict=True)]
    assert any(walls)
    legacy = livetrace.tables(LEGACY / "http_1_19_good")["captures"].to_pylist()[0]
    assert legacy["trace_format"] == "go1.19" and legacy["wall_base"] is None


def test_goroutine_counters_are_the_open_spans_at_the_end() -> None:
    data = (LEGACY / "http_1_19_good").read_bytes()
    b = livetrace.SpanBuilder()
    for batch in livetrace.decode_batches(io.BytesIO(data)):
        if isinstance(batch, EventBatch):
            b.feed(batch)
    want = {f"goroutines:{k}": n for k, n in b.open_counts().items() if k <= SpanKind.SYSCALL}
    c = livetrace.tables(data)["counters"].to_pylist()
    last = {r["name"]: r["value"] for r in c if r["name"].startswith("goroutines:")}
    assert last == want and sum(want.values()) > 0


def test_views_answer() -> None:
    con = livetrace.sql(LEGACY / "http_1_19_good")
    for view in VIEWS:
        con.execute(f"SELECT * FROM {view}").fetchall()
    (waits,) = con.execute("SELECT sum(waits) FROM sched_latency").fetchone() or (0,)
    (runnable,) = con.execute(
        "SELECT count(*) FROM goroutine_states WHERE state = 'runnable' AND NOT clipped_end"
    ).fetchone() or (0,)
    assert waits == runnable > 0
    assert con.execute("SELECT count(*) FROM gc_pauses WHERE kind = 'stw'").fetchone() == (
        len([s for s in spans_of((LEGACY / "http_1_19_good").read_bytes()) if s.kind == SpanKind.STW]),
    )


@pytest.mark.compiled_core
@pytest.mark.parametrize(("name", "data"), SMALL, ids=ids)
def test_the_compiled_core_and_its_twin_give_the_same_tables(name: str, data: bytes) -> None:
    """Row for row, with the strings an id names in place of the id: a
    legacy trace's string ids are each core's own (the compiled path tags
    those it makes), so the raw arguments that are string ids differ."""
    compiled, twin = livetrace.tables(data, compiled=True), livetrace.tables(data, compiled=False)
    for table in TABLE_NAMES:
        assert comparable(table, compiled[table]) == comparable(table, twin[table]), table


# An STWEnd's argument is a string id of its begin's generation.
_STRING_ARGS = {s.name: s.string_args for s in SPECS if s is not None} | {"STWEnd": (0,)}


def comparable(table: str, rows: pa.Table) -> list[dict[str, object]]:
    out: list[dict[str, object]] = rows.to_pylist()
    if table == "events":
        for r in out:
            for i in _STRING_ARGS.get(str(r["event"]), ()):
                r[f"arg{i}"] = None
            if r["event"] == "UserTaskEnd":
                r["extra1"] = None  # an index into the generation's derived strings
    return out


@pytest.mark.once
def test_a_missing_file_is_an_input_path_error(tmp_path: Path) -> None:
    with pytest.raises(InputPathError, match="cannot read"):
        livetrace.tables(tmp_path / "nothing.trace")


@pytest.mark.parametrize("data", [b"", b"go 1.22 trace", b"not a trace at all, no", b"go 1.99 trace\x00\x00\x00"])
def test_what_is_no_trace_is_a_trace_format_error(data: bytes) -> None:
    with pytest.raises(livetrace.TraceFormatError):
        livetrace.tables(data)


@settings(deadline=None, max_examples=examples(60))
@given(st.data())
def test_mutated_traces_give_tables_or_a_typed_error(data: st.DataObject) -> None:
    _, original = data.draw(st.sampled_from(SMALL))
    buf = mutate(data, original, keep=16)
    try:
        t = livetrace.tables(buf)
    except LivetraceError:
        return
    for table, rows in t.items():
        assert rows.schema == SCHEMAS[table]
        rows.validate(full=True)


@pytest.mark.once
@pytest.mark.parametrize("module", ["pyarrow", "duckdb"])
def test_a_missing_dependency_is_one_typed_line(module: str, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, module, None)  # what import finds where the package is not installed
    with pytest.raises(MissingDependencyError) as e:
        livetrace.sql(SMALL[0][1])
    assert str(e.value) == (f"livetrace's tables need {module}, which is not installed: pip install 'livetrace[sql]'")


def test_every_cookbook_query_runs() -> None:
    text = (ROOT / "docs" / "sql.md").read_text()
    queries = [q for block in re.findall(r"```sql\n(.*?)```", text, re.DOTALL) for q in block.split(";") if q.strip()]
    assert len(queries) >= 10
    con = livetrace.sql([LEGACY / "http_1_19_good", LEGACY / "user_task_region_1_21_good"])
    for q in queries:
        con.execute(q).fetchall()


@pytest.mark.parametrize("tie", [False, True], ids=["own-times", "tied-times"])
def test_wakers_where_two_wakes_share_a_time(tie: bool) -> None:
    """A wake at a row's end that woke another goroutine (two wakes at one
    time, as a legacy trace's ties can give, or one of another goroutine's)
    takes the join on goroutine and time; the corpus tests above take the
    lookup by time. Both name each row's own waker."""
    t2 = 100 if tie else 101
    events = pa.record_batch(
        {
            "event": pa.DictionaryArray.from_arrays(
                pa.array([EV_GO_UNBLOCK, EV_GO_UNBLOCK, EV_GO_UNBLOCK], pa.int32()),
                pa.array([str(i) for i in range(256)]),
            ),
            "arg0": pa.array([7, 8, 9], pa.uint64()),
            "time": pa.array([100, t2, 300], pa.int64()),
            "goroutine": pa.array([1, 2, 3], pa.int64()),
        }
    )
    rows = pa.record_batch(
        {
            "resource_id": pa.array([8, 7, 9, 5], pa.int64()),
            "end": pa.array([t2, 100, 301, 100], pa.int64()),
        }
    )
    assert _wakers(rows, events).to_pylist() == [2, 1, None, None]


@pytest.mark.parametrize(
    ("name", "data"),
    [SMALL[1], SMALL[3], SMALL[6]],  # a legacy trace, one with regions and tasks, a Go 1.26 one
    ids=[ids[1], ids[3], ids[6]],
)
def test_sql_gives_tops_snapshot_of_a_file(name: str, data: bytes, tmp_path: Path) -> None:
    """top's one snapshot of a whole file (TopStats, which
    tests/test_top.py checks against `top --once --format json`), and the
    same numbers as SQL over the file's tables."""
    path = tmp_path / "t.trace"
    path.write_bytes(data)
    stats = TopStats()
    for item in livetrace.decode_batches(path):
        if isinstance(item, EventBatch):
            stats.feed(item)
    assert_top_agrees(snapshot_dict(stats.snapshot()), [path])


def test_slowest_regions_are_those_that_ended() -> None:
    """Not those open at the trace's end; one whose goroutine exited in it, yes."""
    spans = spans_of(TEXT["go122-annotations"].data)
    con = livetrace.sql(TEXT["go122-annotations"].data)
    got = con.execute("SELECT CAST(name AS VARCHAR), duration FROM slowest_regions").fetchall()
    last = max(s.end for s in spans)
    want = [(s.name, s.duration) for s in spans if s.kind == SpanKind.REGION and not (s.clipped_end and s.end == last)]
    assert got == sorted(want, key=lambda r: -r[1]) and ("unended region", 38208) in got


def test_units_write_to_parquet_a_row_group_each(tmp_path: Path) -> None:
    """Every table's schema goes to Parquet as it is (dictionaries, UTC
    timestamps, lists), a unit per row group, and DuckDB reads back the
    rows the tables hold, with the schema's version in the metadata."""
    import duckdb
    import pyarrow.parquet as pq

    data = TEXT["go122-task-across-generations"].data
    writers = {name: pq.ParquetWriter(tmp_path / f"{name}.parquet", SCHEMAS[name]) for name in TABLE_NAMES}
    units = 0
    for unit in livetrace.iter_tables(data):
        units += 1
        for name, batch in unit.items():
            writers[name].write_batch(batch)
    for w in writers.values():
        w.close()
    whole = livetrace.tables(data)
    con = duckdb.connect()
    for name in TABLE_NAMES:
        path = tmp_path / f"{name}.parquet"
        assert pq.ParquetFile(path).num_row_groups == units
        assert pq.read_schema(path).metadata[SCHEMA_VERSION_KEY] == str(SCHEMA_VERSION).encode()
        (rows,) = con.execute(f"SELECT count(*) FROM read_parquet('{path}')").fetchone() or (0,)
        assert rows == whole[name].num_rows, name
    assert units > 1
