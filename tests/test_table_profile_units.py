"""``sched_latency`` reads ``sched_units`` (waits counted per duration) and
``pprof`` reads ``pprof_units`` (the profiles' intervals summed per
goroutine and stack), made a unit at a time as the tables are built
(livetrace/_tables/profiles.py): they give, to the bit, what DuckDB's
quantile_cont, avg and sums over every goroutine state give, which the
views computed before. tests/test_tables_go.py checks ``pprof`` against Go's
own profiles."""

from __future__ import annotations

import random

import duckdb
import pyarrow as pa
import pytest

import livetrace
from livetrace._tables.goroutines import goroutine_units_batch
from livetrace._tables.profiles import pprof_batches, sched_units_batch
from livetrace._tables.schema import SCHEMAS, TABLE_NAMES
from livetrace._tables.sql import create_views
from livetrace._tables.views import _LIFE, DERIVED, VIEWS, _clipped_in
from livetrace._trace.spans.model import SPAN_KIND_NAMES

from .test_table_views import SOURCES

# sched_latency as it was: over every runnable state.
EVERY_WAIT = """
    WITH g AS MATERIALIZED (SELECT capture, goroutine, start_function FROM goroutines)
    SELECT g.start_function, count(*) AS waits, sum(s.duration) AS total_ns,
           avg(s.duration) AS mean_ns, quantile_cont(s.duration, 0.5) AS p50_ns,
           quantile_cont(s.duration, 0.99) AS p99_ns, max(s.duration) AS max_ns
    FROM goroutine_states s JOIN g USING (capture, goroutine)
    WHERE s.state = 'runnable' AND NOT s.clipped_end
    GROUP BY ALL
"""
# pprof as it was: every state's clipped interval added up.
EVERY_INTERVAL = f"""
    SELECT profile, stack_id, count(*) AS count, sum(ns) AS ns
    FROM (WITH life AS ({_LIFE}) {_clipped_in("goroutine_states")}) GROUP BY ALL
"""


def rows(con: duckdb.DuckDBPyConnection, query: str) -> pa.Table:
    t = con.sql(query).to_arrow_table()
    return t.sort_by([(n, "ascending") for n in t.schema.names])


@pytest.mark.parametrize(("name", "data"), SOURCES)
def test_sched_latency_and_pprof_are_those_over_every_state(name: str, data: bytes) -> None:
    # (Over the tables made in SQL, views.DERIVED, the views give these
    # answers too: tests/test_table_views.py.)
    con = livetrace.sql(data)
    assert rows(con, "FROM sched_latency").equals(rows(con, EVERY_WAIT))
    assert rows(con, "FROM pprof").equals(rows(con, EVERY_INTERVAL))


def test_sched_latencys_quantiles_and_mean_are_duckdbs_to_the_bit() -> None:
    """Groups of one wait to thousands, of few distinct durations and of
    many, up to 2^60 ns: where SQL's doubles would round differently from
    quantile_cont's fused interpolation, and avg's division."""
    rng = random.Random(28)
    goroutines, durations = [], []
    for g in range(400):
        n = rng.choice([1, 2, 3, 10, 101, 1000, 3000])
        top = rng.choice([10, 1000, 10**6, 10**12, 2**52, 2**60])
        values = [rng.randint(0, top) for _ in range(rng.choice([2, 50, n]))]
        goroutines += [g] * n
        durations += [rng.choice(values) for _ in range(n)]
    con = duckdb.connect(":memory:")
    con.execute(
        """CREATE TABLE goroutine_states AS
           SELECT 1::BIGINT AS capture, g::BIGINT AS goroutine, d AS duration, 'runnable' AS state,
                  false AS clipped_end
           FROM (SELECT unnest(?::BIGINT[]) AS g, unnest(?::BIGINT[]) AS d)""",
        [goroutines, durations],
    )
    con.execute(
        "CREATE TABLE goroutines AS SELECT DISTINCT capture, goroutine, 'f' || goroutine AS start_function "
        "FROM goroutine_states"
    )
    con.execute(f"CREATE VIEW sched_units AS {DERIVED['sched_units']}")
    con.execute(f"CREATE VIEW sched_latency AS {VIEWS['sched_latency']}")
    latency = rows(con, "FROM sched_latency")
    assert latency.num_rows == 400
    assert latency.equals(rows(con, EVERY_WAIT))


def _states(rows: list[tuple[int, int, int, str, str, int]]) -> pa.RecordBatch:
    """goroutine_states rows (goroutine, start, end, state, reason, stack) of capture 1."""
    schema = SCHEMAS["goroutine_states"]
    n = len(rows)
    reasons = sorted({r[4] for r in rows})

    def names(values: list[str], dictionary: list[str]) -> pa.Array:
        return pa.DictionaryArray.from_arrays(
            pa.array([dictionary.index(v) for v in values], pa.int32()), pa.array(dictionary)
        )

    columns = {
        "capture": pa.array([1] * n, pa.int64()),
        "goroutine": pa.array([r[0] for r in rows], pa.int64()),
        "start": pa.array([r[1] for r in rows], pa.int64()),
        "end": pa.array([r[2] for r in rows], pa.int64()),
        "duration": pa.array([r[2] - r[1] for r in rows], pa.int64()),
        "state": names([r[3] for r in rows], SPAN_KIND_NAMES),
        "reason": names([r[4] for r in rows], reasons),
        "proc": pa.array([-1] * n, pa.int64()),
        "start_stack_id": pa.array([r[5] for r in rows], pa.int64()),
        "end_stack_id": pa.nulls(n, pa.int64()),
        "waker_goroutine": pa.nulls(n, pa.int64()),
        "region": names([""] * n, [""]),
        "task": pa.array([0] * n, pa.uint64()),
        "task_name": names([""] * n, [""]),
        "clipped_start": pa.array([False] * n),
        "clipped_end": pa.array([False] * n),
    }
    return pa.record_batch([columns[f.name] for f in schema], schema=schema)


def pprof_of(states: pa.RecordBatch) -> tuple[pa.RecordBatch, pa.RecordBatch]:
    """pprof_units and pprof_interval_units of these states alone (no events), as the build makes them."""
    events = pa.RecordBatch.from_pylist([], SCHEMAS["events"])
    return pprof_batches(1, 0, states, goroutine_units_batch(1, 0, events, states, set(), compiled=False))


# Goroutine 1 blocks forever at 50, and then (as no runtime writes it) has
# two sync waits that end after that, at the stack of an earlier one:
# pprof_units sums the three in one row that its lifetime clips. Goroutine 2's states overlap its latest
# one. Goroutine 3 waits before it first runs, and is as a runtime writes it.
ODD = [
    (1, 0, 10, "running", "", 7),
    (1, 10, 20, "blocked", "chan receive", 8),
    (1, 20, 50, "running", "", 7),
    (1, 50, 60, "blocked", "forever", 9),
    (1, 40, 70, "blocked", "sync.Mutex.Lock", 8),
    (1, 45, 90, "blocked", "sync.Mutex.Lock", 8),
    (2, 0, 5, "running", "", 7),
    (2, 5, 100, "runnable", "", 8),
    (2, 6, 120, "runnable", "", 8),
    (2, 130, 140, "running", "", 7),
    (3, 0, 4, "runnable", "", 8),
    (3, 4, 9, "running", "", 7),
    (3, 9, 30, "blocked", "network", 10),
    (3, 30, 31, "running", "", 7),
    (3, 31, 40, "syscall", "", 11),
    (3, 40, 41, "running", "", 7),
]


def views_over(con: duckdb.DuckDBPyConnection, given: dict[str, pa.Table | pa.RecordBatch]) -> None:
    """The prepared views in ``con`` over the tables ``given`` (the others empty, or derived in SQL)."""
    for name in TABLE_NAMES:
        if name not in DERIVED or name in given:
            con.register(name, given.get(name, SCHEMAS[name].empty_table()))
    for name in DERIVED.keys() - given:
        con.execute(f"CREATE VIEW {name} AS {DERIVED[name]}")
    create_views(con)


def test_pprof_counts_a_goroutine_its_lifetime_clips_from_its_states() -> None:
    states = _states(ODD)
    con = duckdb.connect(":memory:")
    pprof_units, pprof_interval_units = pprof_of(states)
    built = {
        "sched_units": sched_units_batch(1, 0, states),
        "pprof_units": pprof_units,
        "pprof_interval_units": pprof_interval_units,
    }
    views_over(con, {"goroutine_states": states, **built})
    # The build's waits are those of SQL over the states.
    assert rows(con, "FROM sched_units").to_pylist() == rows(con, DERIVED["sched_units"]).to_pylist()
    [(summed,)] = con.execute("SELECT intervals FROM pprof_units WHERE goroutine = 1 AND profile = 'sync'").fetchall()
    assert summed == 3  # one row, that the forever block at 50 clips: counted from the states
    pprof = rows(con, "FROM pprof")
    assert pprof.equals(rows(con, EVERY_INTERVAL))
    assert ("sync", 8, 3, 10 + 10 + 5) in [
        (r["profile"], r["stack_id"], r["count"], r["ns"]) for r in pprof.to_pylist()
    ]
