"""``livetrace sql`` on small corpus traces, in-process: its sources (files,
globs, directories), its statements (-c, standard input, the prompt on a
real pseudo-terminal), its output formats, and its one-line errors. The
live sources are tests/test_sql_live.py's."""

from __future__ import annotations

import csv
import io
import json
import os
import pty
import shutil
import sys
from pathlib import Path

import pyarrow.parquet as pq
import pytest

import livetrace
from livetrace._cli.main import main

from .conftest import ROOT
from .test_flight_dumps import fill, tmpfs

pytestmark = pytest.mark.once  # the same tables either way: tests/test_tables.py compares the cores

LEGACY = ROOT / "tests" / "corpus" / "legacy" / "go-testdata"
REGION = LEGACY / "user_task_region_1_21_good"
HTTP = LEGACY / "http_1_19_good"
SMALL = [REGION, HTTP, LEGACY / "user_task_region_1_11_good"]


def sql(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    code = main(["sql", *args])
    got = capsys.readouterr()
    return code, got.out, got.err


def test_a_query_as_csv_matches_the_tables(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = sql(
        capsys,
        str(REGION),
        "-c",
        "SELECT event, count(*) AS n FROM events GROUP BY ALL ORDER BY event",
        "--format",
        "csv",
    )
    assert code == 0, err
    rows = list(csv.DictReader(io.StringIO(out)))
    events = livetrace.tables(REGION)["events"].column("event").to_pylist()
    assert {r["event"]: int(r["n"]) for r in rows} == {e: events.count(e) for e in set(events)}
    assert err == "livetrace: 1 capture, 33 events\n"


def test_many_traces_carry_their_capture(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    for path in SMALL:
        shutil.copy(path, tmp_path / (path.name + ".trace"))
    (tmp_path / "sub").mkdir()
    shutil.move(tmp_path / (HTTP.name + ".trace"), tmp_path / "sub")
    query = "SELECT c.name, count(*) AS n FROM events e JOIN captures c USING (capture) GROUP BY ALL ORDER BY 1"
    code, out, _ = sql(capsys, str(tmp_path), "-c", query, "--format", "jsonl")  # a directory, at any depth
    assert code == 0
    got = {Path(r["name"]).name: r["n"] for r in map(json.loads, out.splitlines())}
    assert got == {p.name + ".trace": livetrace.tables(p)["events"].num_rows for p in SMALL}
    code, out, _ = sql(
        capsys,
        str(LEGACY / "user_task_region_*"),
        "-c",
        "SELECT count(DISTINCT capture) AS n FROM spans",
        "--format",
        "csv",
    )
    assert (code, out) == (0, '"n"\n3\n')  # a glob the shell left alone: user_task_region_1_{11,19,21}
    # One file named twice is read once.
    code, out, _ = sql(capsys, str(REGION), str(REGION), "-c", "SELECT count(*) AS n FROM captures", "--format", "csv")
    assert out == '"n"\n1\n'


def test_statements_from_options_and_standard_input(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    code, out, _ = sql(
        capsys,
        str(REGION),
        "-c",
        "CREATE VIEW two AS SELECT 2 AS x; SELECT x + 1 AS y FROM two",
        "-c",
        "SELECT 4 AS z",
        "--format",
        "csv",
    )
    assert code == 0 and out.splitlines()[-4:] == ['"y"', "3", '"z"', "4"]
    monkeypatch.setattr(sys, "stdin", io.StringIO("SELECT count(*) AS tasks FROM tasks;\n"))
    code, out, _ = sql(capsys, str(REGION), "--format", "csv")
    assert (code, out) == (0, f'"tasks"\n{livetrace.tables(REGION)["tasks"].num_rows}\n')


def test_the_prepared_views_are_there_by_name(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = sql(
        capsys,
        str(HTTP),
        "-c",
        "SELECT count(*) AS n FROM sched_latency",
        "-c",
        "SELECT count(*) AS n FROM blocking",
        "-c",
        "SELECT count(*) AS n FROM gc_pauses",
        "--format",
        "csv",
    )
    assert code == 0 and out.count('"n"') == 3


def test_a_terminal_table_escapes_and_says_what_it_left_out(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = sql(
        capsys, str(REGION), "-c", "SELECT chr(27) || '[2J' AS evil, 1.5 AS x FROM range(5)", "--max-rows", "2"
    )
    assert code == 0
    assert "\x1b" not in out and out.count("\\x1b[2J") == 2 and "evil" in out
    assert err.splitlines()[-1] == "livetrace: 3 more rows not shown (--max-rows; or --format csv for every row)"


def test_nested_values_in_csv_are_json_and_parquet_keeps_them(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    query = "SELECT stack_id, frame_ids FROM stacks ORDER BY stack_id"
    code, out, _ = sql(capsys, str(REGION), "-c", query, "--format", "csv")
    stacks = livetrace.tables(REGION)["stacks"]
    want = sorted(zip(stacks.column("stack_id").to_pylist(), stacks.column("frame_ids").to_pylist(), strict=True))
    assert [(int(r["stack_id"]), json.loads(r["frame_ids"])) for r in csv.DictReader(io.StringIO(out))] == want
    out_file = tmp_path / "stacks.parquet"
    code, out, _ = sql(capsys, str(REGION), "-c", query, "-o", str(out_file))  # the format from the suffix
    assert (code, out) == (0, "")
    got = pq.read_table(out_file)
    assert list(zip(got.column("stack_id").to_pylist(), got.column("frame_ids").to_pylist(), strict=True)) == want
    assert [p.name for p in tmp_path.iterdir()] == ["stacks.parquet"]
    code, _, _ = sql(capsys, str(REGION), "-c", "SELECT 1 AS a", "-o", str(tmp_path / "a.jsonl"))
    assert (tmp_path / "a.jsonl").read_text() == '{"a":1}\n'


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["-c", "SELEC 1"], 'error: Parser Error: syntax error at or near "SELEC"'),
        (["-c", "SELECT * FROM no_such_table"], "error: Catalog Error: Table with name no_such_table does not exist!"),
        (["-c", "SELECT 1", "--format", "parquet"], "error: --format parquet writes a file: give -o FILE"),
        (["-c", "SELECT 1", "-o", "x.txt"], "error: say how to write x.txt: --format csv, jsonl or parquet"),
        (["-c", "SELECT 1", "-o", "x.csv", "--format", "table"], "error: a table is for the terminal"),
    ],
)
def test_errors_are_one_line(capsys: pytest.CaptureFixture[str], args: list[str], message: str) -> None:
    code, out, err = sql(capsys, str(REGION), *args)
    assert code == 2 and out == ""
    last = err.splitlines()[-1]
    assert last.startswith("livetrace: " + message) and "Traceback" not in err
    assert len([line for line in err.splitlines() if "error" in line]) == 1


@pytest.mark.parametrize(
    ("source", "message"),
    [
        ("nowhere/x.trace", "error: no such file: nowhere/x.trace"),
        ("nowhere/*.trace", "error: no file matches nowhere/*.trace"),
        (str(ROOT / "docs"), f"error: {ROOT / 'docs'} holds no .trace files (give the files themselves)"),
        ("-", "error: tables are read from trace files, not standard input: give the trace's path"),
    ],
)
def test_bad_sources_are_one_line(capsys: pytest.CaptureFixture[str], source: str, message: str) -> None:
    code, _, err = sql(capsys, source, "-c", "SELECT 1")
    assert (code, err) == (2, f"livetrace: {message}\n")


@pytest.mark.parametrize("module", ["duckdb", "pyarrow"])
def test_a_missing_package_is_one_line(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], module: str
) -> None:
    monkeypatch.setitem(sys.modules, module, None)  # what import finds where the package is not installed
    code, out, err = sql(capsys, str(REGION), "-c", "SELECT 1")
    assert (code, out) == (2, "")
    assert err.startswith(f"livetrace: error: livetrace's tables need {module}, which is not installed: ")
    assert err.count("\n") == 1


def test_the_prompt_on_a_terminal(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    master, slave = pty.openpty()
    typed = "SELECT count(*)\n  AS n FROM captures;\nSELEC 1;\n.format csv\nSELECT 'after' AS w;\n.tables\n.quit\n"
    os.write(master, typed.encode())
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path))
    with open(slave, closefd=True) as tty:
        monkeypatch.setattr(sys, "stdin", tty)
        code, out, err = sql(capsys, str(REGION))
    os.close(master)
    assert code == 0
    assert out.startswith("livetrace sql: DuckDB over the traces.")
    assert " n \n" in out.replace("─", "") and '"w"\n"after"\n' in out  # a table, then CSV after .format
    listed = {tuple(line.split()) for line in out.splitlines()}
    assert {("sched_latency", "view"), ("goroutine_states", "table")} <= listed  # .tables: the tables and the views
    assert 'livetrace: error: Parser Error: syntax error at or near "SELEC"' in err  # and the prompt went on
    # readline's history is kept there (readline reads only a real standard input: none is typed here)
    assert (tmp_path / "livetrace" / "sql_history").is_file()


def test_help_teaches_with_examples(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit):
        main(["sql", "--help"])
    out = capsys.readouterr().out
    assert "examples:" in out and "sched_latency" in out and "--duration" in out and "pid:4242" in out


@pytest.mark.parametrize("suffix", ["parquet", "csv"])
def test_a_full_disk_is_one_line_naming_the_file_and_leaves_nothing(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], suffix: str
) -> None:
    with tmpfs(tmp_path / "disk", "1m") as disk:
        filler = fill(disk)
        out = disk / f"big.{suffix}"
        code, _, err = sql(
            capsys, str(REGION), "-c", "SELECT md5(range::VARCHAR) AS h FROM range(200000)", "-o", str(out)
        )
        filler.unlink()
        assert (code, err.splitlines()[-1]) == (
            2,
            f"livetrace: error: cannot write {out}: No space left on device: the disk is full; nothing was saved there",
        )
        assert list(disk.iterdir()) == []


GENERATIONS = ROOT / "tests" / "corpus" / "runtime" / "go126-generations.trace"


def test_a_trace_cut_short_keeps_its_whole_generations(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """A trace file of a service that died while writing it: its tables are
    those of the generations it had whole, as go tool trace reads it; a file
    with nothing whole is left out; each says so, and the command exits 1."""
    data = GENERATIONS.read_bytes()
    cut, whole, empty, stub = (tmp_path / n for n in ("cut.trace", "whole.trace", "empty.trace", "stub.trace"))
    cut.write_bytes(data[: len(data) * 2 // 3])
    whole.write_bytes(data)
    empty.write_bytes(b"")
    stub.write_bytes(data[:200])  # its first generation cut: nothing whole
    before: list[livetrace.EventBatch] = []

    def decode_cut() -> None:
        before.extend(b for b in livetrace.decode_batches(cut) if isinstance(b, livetrace.EventBatch))

    with pytest.raises(livetrace.TruncatedTraceError):
        decode_cut()
    failed: list[tuple[str, livetrace.TraceFormatError, bool]] = []
    t = livetrace.tables([cut, whole, stub], on_error=lambda *f: failed.append(f))
    assert [(name, kept) for name, _, kept in failed] == [(str(cut), True), (str(stub), False)]
    assert t["captures"].num_rows == 2
    by_capture = t["events"].group_by("capture").aggregate([("event", "count")]).column("event_count").to_pylist()
    assert sorted(by_capture) == sorted([sum(map(len, before)), len(livetrace.tables(whole)["events"])])
    with pytest.raises(livetrace.TruncatedTraceError):
        livetrace.tables(cut)

    code, out, err = sql(capsys, str(cut), str(whole), str(empty), "-c", "SELECT count(*) AS n FROM captures")
    assert (code, out.split()[-1]) == (1, "2"), err
    assert f"livetrace: warning: {cut}: trace ends in the middle of a batch" in err
    assert err.count("its tables hold the generations before it") == 1
    assert f"livetrace: warning: {empty}: not a Go execution trace" in err and "nothing of it could be read" in err
    code, out, err = sql(capsys, str(stub), "-c", "SELECT 1")
    assert (code, out) == (1, "") and err.startswith("livetrace: error: trace ends in the middle of a batch")

    files = tmp_path / "files"
    files.mkdir()
    for f in (cut, whole, empty):
        shutil.copy(f, files)
    code = main(["export", str(files), "--to", "parquet", "-o", str(tmp_path / "ds")])
    err = capsys.readouterr().err
    assert code == 1 and "its files hold the generations before it" in err, err
    assert sql(capsys, str(tmp_path / "ds"), "-c", "SELECT count(*) FROM captures")[1].split()[-1] == "2"
