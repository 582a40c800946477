"""Traces as tables against Go, not against ourselves: `events` has as many
rows of each kind as Go 1.27.3's `go tool trace -d=parsed` has lines of
that kind; SQL over `goroutine_states` (the prepared `pprof` view) gives
`go tool trace -pprof=sched|sync|net|syscall`'s count and time per stack,
as tests/test_spans.py compares the spans; and SQL over the tables gives
`livetrace top --format json`'s numbers for the same trace. On Go's own
text-form and legacy test traces, fresh demo traces of every modern
toolchain and of Go 1.19 and 1.21, and a live `top` session of the demo.

Legacy traces are compared with Go 1.27's `-d=parsed`, which converts them
to the one event model as livetrace does (tests/test_legacy.py checks the
events line by line), not with Go 1.21's `-d`: that dump lists the legacy
format's own events, which the model replaces (several legacy events
become one transition, a few become none), so its counts are not the
table's."""

from __future__ import annotations

import json
import math
from collections import Counter
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest
import trio

import livetrace
from livetrace._session.recording import Recorder
from livetrace._tables.live import session_tables
from livetrace._views.pprof import stack_key

from . import textform
from .conftest import MODERN_VERSIONS, cli, demo, go_binary, go_dump
from .gopprof import PPROF_LEGACY_FILES, PPROF_TEXT_TESTS, PROFILE_KINDS, assert_totals_agree, go_totals
from .tabletop import assert_top_agrees

ROOT = Path(__file__).resolve().parent.parent
LEGACY = ROOT / "tests" / "corpus" / "legacy" / "go-testdata"
TEXT_TESTS = [t for t in textform.all_tests() if t.data and t.expect_success]
# Go 1.27's tool reads legacy traces from Go 1.11 on.
LEGACY_FILES = sorted(p.name for p in LEGACY.glob("*_good") if not any(f"_1_{v}_" in p.name for v in (5, 7, 9, 10)))


# -- events per kind, against -d=parsed --


def go_kinds(path: Path) -> Counter[str]:
    """Lines per event kind of Go 1.27.3's -d=parsed (an event's line is
    `M=.. P=.. G=.. Kind ...`; its stack's lines follow, indented)."""
    status, out, err = go_dump(path, "parsed")
    assert status == 0, err
    return Counter(line.split()[3] for line in out.splitlines() if line.startswith("M="))


def table_kinds(path: Path) -> Counter[str]:
    con = livetrace.sql(path)
    return Counter(dict(con.execute("SELECT CAST(kind AS VARCHAR), count(*) FROM events GROUP BY 1").fetchall()))


def assert_kinds_agree(path: Path) -> None:
    ours, go = table_kinds(path), go_kinds(path)
    assert ours == go
    assert sum(go.values()) > 0


@pytest.mark.go
def test_events_per_kind_are_gos_on_text_form_traces(tmp_path: Path) -> None:
    for t in TEXT_TESTS:
        path = tmp_path / f"{t.name}.trace"
        path.write_bytes(t.data)
        assert table_kinds(path) == go_kinds(path), t.name


@pytest.mark.go
@pytest.mark.parametrize("name", LEGACY_FILES)
def test_events_per_kind_are_gos_on_legacy_traces(name: str) -> None:
    assert_kinds_agree(LEGACY / name)


# once: the demo traces are large for the twin, whose tables equal the compiled core's
# (tests/test_tables.py, both passes); the corpus comparisons above run on both.
@pytest.mark.slow
@pytest.mark.once
@pytest.mark.parametrize("version", MODERN_VERSIONS)
def test_events_per_kind_are_gos_on_demo_traces(version: str, demo_traces: dict[str, Path]) -> None:
    assert_kinds_agree(demo_traces[version])


@pytest.mark.slow
@pytest.mark.parametrize("version", ["1.19", "1.21"])
def test_events_per_kind_are_gos_on_legacy_demo_traces(version: str, legacy_demo_traces: dict[str, Path]) -> None:
    assert_kinds_agree(legacy_demo_traces[version])


# -- the pprof view, against -pprof --


def sql_totals(path: Path) -> dict[str, dict[tuple[int, ...], tuple[int, int]]]:
    """(count, ns) per stack key (as Go tells stacks apart: the first 128
    PCs, trailing zero PCs dropped) of the `pprof` view."""
    con = livetrace.sql(path)
    rows = con.execute(
        "SELECT p.profile, s.pcs, p.count, p.ns FROM pprof p LEFT JOIN stacks s USING (stack_id)"
    ).fetchall()
    out: dict[str, dict[tuple[int, ...], tuple[int, int]]] = {p: {} for p in PROFILE_KINDS}
    for profile, pcs, count, ns in rows:
        key = stack_key(tuple(pcs or ()))
        c0, n0 = out[profile].get(key, (0, 0))
        out[profile][key] = (c0 + count, n0 + int(ns))
    return out


def assert_pprof_agrees(path: Path, tie_ns_per_span: int) -> None:
    """The pprof view's totals per stack are Go's (gopprof.assert_totals_agree)."""
    assert_totals_agree(sql_totals(path), go_totals(go_binary("1.27"), path), tie_ns_per_span)


@pytest.mark.go
@pytest.mark.parametrize("name", PPROF_TEXT_TESTS)
def test_pprof_view_is_gos_on_text_form_traces(name: str, tmp_path: Path) -> None:
    (t,) = [t for t in TEXT_TESTS if t.name == name]
    path = tmp_path / "t.trace"
    path.write_bytes(t.data)
    assert_pprof_agrees(path, 0)


@pytest.mark.go
@pytest.mark.parametrize("name", PPROF_LEGACY_FILES)
def test_pprof_view_is_gos_on_legacy_traces(name: str) -> None:
    assert_pprof_agrees(LEGACY / name, 1)


@pytest.mark.slow
@pytest.mark.parametrize("version", ["1.22", "1.26"])
def test_pprof_view_is_gos_on_demo_traces(version: str, demo_traces: dict[str, Path]) -> None:
    assert_pprof_agrees(demo_traces[version], 0)


@pytest.mark.slow
@pytest.mark.parametrize("version", ["1.19", "1.21"])
def test_pprof_view_is_gos_on_legacy_demo_traces(version: str, legacy_demo_traces: dict[str, Path]) -> None:
    assert_pprof_agrees(legacy_demo_traces[version], 1)


# -- top's numbers --


@pytest.mark.slow
@pytest.mark.once  # the command; the tables' cores are compared in tests/test_tables.py
@pytest.mark.parametrize("version", ["1.26", "1.21"])
def test_sql_gives_tops_numbers_for_its_recording(version: str, tmp_path: Path) -> None:
    record = tmp_path / "top.trace"

    async def run() -> str:
        async with demo(version, args=["-workers", "1"], env={"GOMAXPROCS": "2"}) as d:
            return await trio.to_thread.run_sync(lambda: _top(d.trace_address, record))

    snap = json.loads(trio.run(run))
    paths = sorted(tmp_path.glob("top*.trace"), key=lambda p: (len(p.name), p.name))
    assert paths and paths[0] == record
    assert snap["sched"]["count"] > 100 and snap["regions"] and snap["tasks"]
    assert_top_agrees(snap, paths)
    assert math.isfinite(snap["sched"]["total"])


def _top(address: str, record: Path) -> str:
    p = cli("top", address, "--once", "--interval", "2", "--format", "json", "--record", str(record))
    out, err = p.communicate(timeout=120)
    assert p.returncode == 0, err
    (line,) = out.splitlines()
    return line


# -- live --


@pytest.mark.slow
@pytest.mark.once  # the session's plumbing; both cores' tables are compared in tests/test_tables.py
@pytest.mark.parametrize("version", ["1.26", "1.21"])
def test_live_tables_are_gos_events_of_the_same_session(version: str, tmp_path: Path) -> None:
    """A live session's tables, unit by unit as it runs, and the recording
    of that very session: as many events of each kind as Go's -d=parsed of
    the recording, and a captures row that names the service."""
    record = tmp_path / "live.trace"

    async def run() -> tuple[dict[str, pa.Table], int]:
        async with demo(version, args=["-workers", "1"]) as d:
            async with livetrace.connect(d.trace_address, duration=2) as session, trio.open_nursery() as nursery:
                recorder = Recorder(session, record)
                nursery.start_soon(recorder.run)
                tables = await session_tables(session)
            return tables, d.pid

    tables, pid = trio.run(run)
    ours = Counter(dict(Counter(tables["events"]["kind"].cast(pa.string()).to_pylist())))
    assert ours == go_kinds(record)
    (cap,) = tables["captures"].to_pylist()
    assert cap["source"] == "helper" and cap["pid"] == pid and cap["go_version"].startswith(f"go{version}")
    assert cap["service"].startswith("livetrace-demo") and cap["events"] == tables["events"].num_rows
    assert tables["goroutine_states"].num_rows and tables["stacks"].num_rows


@pytest.mark.slow
@pytest.mark.once  # the session's plumbing; the tables of a live session are checked above
def test_sql_of_a_live_address() -> None:
    async def run() -> tuple[list[tuple[Any, ...]], int]:
        async with demo("1.26") as d:
            con = await trio.to_thread.run_sync(lambda: livetrace.sql(d.trace_address, duration=1))
            return con.execute("SELECT source, pid, events FROM captures").fetchall(), d.pid

    rows, pid = trio.run(run)
    ((source, got_pid, events),) = rows
    assert source == "helper" and got_pid == pid and events > 0
