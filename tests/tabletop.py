"""`livetrace top`'s numbers as SQL over the tables of the same trace:
what tests/test_tables_go.py (a live top session, against its --record)
and tests/test_tables.py (TopStats over corpus files) compare."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pyarrow as pa

import livetrace

# top counts the spans that ended while the trace ran: not those still
# open at its end (clipped_end, ending at the capture's last event), but a
# region its goroutine's exit ended, clipped_end too, ending then.
_SUMMARY = """
    SELECT {key} AS key, count(*) AS count,
           coalesce(list_extract(list(t.duration ORDER BY t.duration), greatest(1, ceil(0.5 * count(*)))::INT), 0),
           coalesce(list_extract(list(t.duration ORDER BY t.duration), greatest(1, ceil(0.99 * count(*)))::INT), 0),
           coalesce(max(t.duration), 0), coalesce(sum(t.duration), 0)
    FROM {table} t JOIN captures c USING (capture)
    WHERE NOT (t.clipped_end AND t."end" = c.end_time) {where} GROUP BY ALL
"""


def _summaries(con: Any, table: str, key: str = "''", where: str = "") -> dict[str, dict[str, int]]:
    rows = con.execute(_SUMMARY.format(key=key, table=table, where=where)).fetchall()
    return {
        k: {"count": c, "p50": p50, "p99": p99, "max": mx, "total": int(total)} for k, c, p50, p99, mx, total in rows
    }


def _last(counters: pa.Table, name: str) -> int | None:
    values = [r["value"] for r in counters.to_pylist() if r["name"] == name]
    return values[-1] if values else None


# top groups goroutines by their names, each named by all its session has
# seen: so does the goroutines view, by captures.session.
_GROUPS = """
    SELECT coalesce(nullif(g.start_function, ''), '(no stack seen)') AS name, count(DISTINCT s.goroutine),
           coalesce(sum(s.duration) FILTER (WHERE s.state = 'running'), 0),
           coalesce(sum(s.duration) FILTER (WHERE s.state = 'runnable'), 0),
           coalesce(sum(s.duration) FILTER (WHERE s.state = 'syscall'), 0),
           coalesce(sum(s.duration) FILTER (WHERE s.state = 'blocked'), 0)
    FROM goroutine_states s JOIN goroutines g USING (capture, goroutine)
    WHERE NOT s.clipped_end AND s.duration > 0
    GROUP BY 1
"""


def top_of_tables(paths: list[Path]) -> dict[str, Any]:
    """top's snapshot of these recordings, as SQL over their tables."""
    # The files of a live session's recording: one session's (a file per legacy segment).
    tables = livetrace.tables(paths, one_session=True)
    con = livetrace.sql(paths, one_session=True)
    none = {"count": 0, "p50": 0, "p99": 0, "max": 0, "total": 0}

    def kind(k: str) -> dict[str, int]:
        return _summaries(con, "spans", where=f"AND t.kind = '{k}' AND t.resource <> 'Proc'").get("", none)

    # The goroutines by state now: the last capture's (a legacy session's
    # segments are captures, and top forgets the open spans between two);
    # the metrics: the last any capture reported.
    last_capture = tables["captures"]["capture"][-1].as_py()
    counters = tables["counters"]
    states = counters.filter(pa.compute.equal(counters["capture"], last_capture))
    return {
        "events": con.execute("SELECT count(*) FROM events").fetchone()[0],  # type: ignore[index]
        "gc": kind("gc"),
        "stw": kind("stw"),
        "mark_assist": kind("mark-assist"),
        "sched": kind("runnable"),
        "states": {s: _last(states, f"goroutines:{s}") or 0 for s in ("running", "runnable", "blocked", "syscall")},
        "regions": _summaries(con, "regions", "CAST(t.name AS VARCHAR)"),
        "tasks": _summaries(con, "tasks", "CAST(t.name AS VARCHAR)"),
        "heap": _last(counters, "/memory/classes/heap/objects:bytes"),
        "heap_goal": _last(counters, "/gc/heap/goal:bytes"),
        "gomaxprocs": _last(counters, "/sched/gomaxprocs:threads"),
        "groups": {name: tuple(int(v) for v in values) for name, *values in con.execute(_GROUPS).fetchall()},
    }


def assert_top_agrees(snap: dict[str, Any], paths: list[Path]) -> None:
    ours = top_of_tables(paths)
    groups = ours.pop("groups")
    for key, value in ours.items():
        assert snap[key] == value, key
    assert {
        g["name"]: (g["goroutines"], g["running"], g["runnable"], g["syscall"], g["blocked_total"])
        for g in snap["groups"]
    } == groups
