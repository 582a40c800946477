"""``pprof_intervals`` reads ``pprof_interval_units`` (the profiles'
intervals counted per goroutine, stack and duration, made a unit at a time
as the tables are built): it counts what it listed, a row per interval,
when it clipped every goroutine state to its goroutine's lifetime, which
tests/test_tables_go.py checks against Go's own profiles through
``pprof``."""

from __future__ import annotations

import duckdb
import pytest

import livetrace
from livetrace._tables.profiles import sched_units_batch
from livetrace._tables.views import _LIFE, _clipped_in

from .test_table_profile_units import ODD, _states, pprof_of, views_over
from .test_table_views import SOURCES

# pprof_intervals as it was, a row per interval (every goroutine state of a
# profile, clipped), with those of one duration counted together.
EVERY_STATE = f"""
    SELECT profile, capture, goroutine, stack_id, ns, count(*) AS intervals
    FROM (WITH life AS ({_LIFE}) {_clipped_in("goroutine_states")}) GROUP BY ALL
"""
LISTED = "FROM pprof_intervals"


def rows(con: duckdb.DuckDBPyConnection, query: str) -> list[tuple[object, ...]]:
    return sorted(con.execute(query).fetchall(), key=lambda r: [(x is None, x or 0) for x in r])


@pytest.mark.parametrize(("name", "data"), SOURCES)
def test_pprof_intervals_are_those_of_every_state(name: str, data: bytes) -> None:
    con = livetrace.sql(data)
    listed = rows(con, LISTED)
    assert listed == rows(con, EVERY_STATE)
    assert len({r[:5] for r in listed}) == len(listed)  # a row per goroutine, profile, stack and duration


def test_pprof_intervals_of_a_goroutine_its_lifetime_clips_are_its_states() -> None:
    """Goroutine 1's three sync waits at one stack, two of them of one
    duration, end after its forever block at 50: a row of two intervals
    that its lifetime clips, so they come from its goroutine_states rows,
    clipped each (the one from 60 to nothing: left out). Goroutine 5
    never runs: its wait, a row alone, ends at its forever block, at 6."""
    states = _states(
        [
            *ODD,
            (1, 60, 90, "blocked", "sync.Mutex.Lock", 8),
            (5, 0, 10, "blocked", "sync.WaitGroup.Wait", 12),
            (5, 6, 20, "blocked", "forever", 13),
        ]
    )
    pprof_units, pprof_interval_units = pprof_of(states)
    given = {
        "goroutine_states": states,
        "sched_units": sched_units_batch(1, 0, states),
        "pprof_units": pprof_units,
        "pprof_interval_units": pprof_interval_units,
    }
    con = duckdb.connect(":memory:")
    views_over(con, given)
    [(summed,)] = con.execute(
        "SELECT intervals FROM pprof_interval_units WHERE goroutine = 1 AND profile = 'sync' AND ns = 30"
    ).fetchall()
    assert summed == 2
    listed = rows(con, LISTED)
    assert listed == rows(con, EVERY_STATE)
    assert [r for r in listed if r[0] == "sync" and r[2] == 1] == [
        ("sync", 1, 1, 8, 5, 1),  # 45 to 90, clipped
        ("sync", 1, 1, 8, 10, 2),  # 10 to 20 (chan receive); 40 to 70, clipped
    ]
    assert [r for r in listed if r[2] == 5] == [("sync", 1, 5, 12, 6, 1)]
