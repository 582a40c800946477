"""The prepared views read ``goroutine_units``, ``blocked_units`` and
``gc_spans``, made a unit at a time as the tables are built
(livetrace/_tables/goroutines.py, spans.py), where
they once scanned every event, goroutine state and span: over them they
give the answers they give over the same tables made in SQL from those
(views.DERIVED, what a dataset written before the build made them reads). tests/test_tables_go.py
checks the views against Go's pprof, tests/tabletop.py against top."""

from __future__ import annotations

import shutil
from pathlib import Path

import duckdb
import pyarrow as pa
import pytest

import livetrace
from livetrace._cli.main import main
from livetrace._cli.sql import dataset_connection
from livetrace._tables.sql import create_views
from livetrace._tables.views import DERIVED, VIEWS

from .test_tables import LEGACY, RUNTIME, SMALL

# Every family (test_tables' SMALL), and traces of many generations, of
# goroutines created before the trace, blocked forever, and whose first
# stack is the runtime's zero frame (a root with no function).
SOURCES = [
    *(
        pytest.param(name, data, id=name)
        for name, data in [
            *SMALL,
            ("go126-generations", (RUNTIME / "go126-generations.trace").read_bytes()),
            ("go126-empty-stack-not-last", (RUNTIME / "go126-empty-stack-not-last.trace").read_bytes()),
        ]
    ),
    *(
        pytest.param(name, (LEGACY / name).read_bytes(), id=name, marks=pytest.mark.slow)
        for name in ("stress_1_11_good", "http_1_5_good")
    ),
]
# Per goroutine of a capture, goroutine_units' columns added up over its
# units: what the views take of them (own_stack_id too, which the views
# only show where a goroutine's creation was not seen).
PER_GOROUTINE = """
    SELECT capture, goroutine, min(created), arg_min(creator, created), arg_min(create_stack_id, created),
           min(first_seen), max(last_seen), max(last_start), arg_max(last_end, last_start), min(first_run),
           max(forever), arg_min(own_stack_id, own_stack_start), min(own_stack_start)
    FROM {} GROUP BY ALL ORDER BY ALL
"""
# The views over goroutine_units, and stack_frames (over neither).
ASKED = [v for v in VIEWS if v != "stack_frames"]


def answers(con: duckdb.DuckDBPyConnection) -> dict[str, pa.Table]:
    out = {}
    for view in ASKED:
        t = con.sql(f"SELECT * FROM {view}").to_arrow_table()
        out[view] = t.sort_by([(n, "ascending") for n in t.schema.names])
    return out


def derived(tables: dict[str, pa.Table]) -> duckdb.DuckDBPyConnection:
    """The tables with those of views.DERIVED made in SQL from the others."""
    con = duckdb.connect(":memory:")
    for name, table in tables.items():
        if name not in DERIVED:
            con.register(name, table)
    for name, sql in DERIVED.items():
        con.execute(f"CREATE VIEW {name} AS {sql}")
    create_views(con)
    return con


@pytest.mark.parametrize(("name", "data"), SOURCES)
def test_views_over_the_built_goroutine_units_are_those_of_sql(name: str, data: bytes) -> None:
    tables = livetrace.tables(data)
    con, sql = livetrace.sql(data), derived(tables)
    assert (
        con.execute(PER_GOROUTINE.format("goroutine_units")).fetchall()
        == sql.execute(PER_GOROUTINE.format("goroutine_units")).fetchall()
    )
    built = answers(con)
    assert built == answers(sql)
    # Rows per unit: a goroutine of many generations has a row in each it was seen in.
    units = tables["goroutine_units"]
    assert units.num_rows >= built["goroutines"].num_rows


def test_the_views_name_goroutines_and_clip_profiles_across_generations() -> None:
    data = (RUNTIME / "go126-generations.trace").read_bytes()
    con = livetrace.sql(data)
    [(generations,)] = con.execute("SELECT count(DISTINCT generation) FROM goroutine_units").fetchall()
    [(spread,)] = con.execute(
        "SELECT count(*) FROM (SELECT goroutine FROM goroutine_units GROUP BY ALL HAVING count(*) > 1)"
    ).fetchall()
    assert generations > 1 and spread > 0  # goroutines whose rows the views add up across units
    assert answers(con) == answers(derived(livetrace.tables(data)))


@pytest.mark.once
@pytest.mark.slow
def test_a_dataset_without_goroutine_units_answers_the_same(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    traces = tmp_path / "in"
    traces.mkdir()
    for t in (LEGACY / "user_task_region_1_21_good", RUNTIME / "go126-generations.trace"):
        shutil.copy(t, traces / (t.stem + ".trace"))
    out = tmp_path / "ds"
    assert main(["export", str(traces), "--to", "parquet", "-o", str(out)]) == 0, capsys.readouterr().err
    with_units = answers(dataset_connection([out]))
    older = tmp_path / "older"  # as export wrote before it wrote goroutine_units
    shutil.copytree(out, older)
    for table in DERIVED:
        shutil.rmtree(older / table)
    assert answers(dataset_connection([older])) == with_units
    assert answers(dataset_connection([out, older])) == answers(dataset_connection([older, older]))
    assert with_units["goroutines"].num_rows > 0 and with_units["pprof"].num_rows > 0
