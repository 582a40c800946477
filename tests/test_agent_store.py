"""The lake and the captures on a filesystem URI (``_agent/store.py``):
``file://`` is the local directory, with its writers; another of pyarrow's
filesystems (its in-memory ``mock://`` here) gets the same files, each
written whole, and ``livetrace sql --lake`` reads either. A location that
is not one is one line from ``livetrace agent --check``."""

from __future__ import annotations

import io
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pyarrow.fs as pafs
import pytest
import trio

from livetrace._agent.agent import Agent
from livetrace._agent.budget import Budget
from livetrace._agent.config import Budget as BudgetConfig
from livetrace._agent.config import Target, parse_config
from livetrace._agent.fleet import lake_connection
from livetrace._agent.policies import Traced
from livetrace._agent.sinks import LakeSink
from livetrace._agent.store import Store
from livetrace._go.demo import run_demo
from livetrace._nursery import open_nursery
from tests.agentrun import lake_rows, named_copy
from tests.conftest import demo_exe
from tests.test_agent_config import agent
from tests.test_agent_sql import QUERY, fill, sql

pytestmark = pytest.mark.once


@pytest.fixture(autouse=True)
def agent_umask() -> Iterator[None]:
    old = os.umask(0o077)
    yield
    os.umask(old)


def memory_store(root: str = "lake") -> Store:
    fs, _ = pafs.FileSystem.from_uri("mock://")  # pyarrow's own in-memory filesystem
    return Store(fs, root, f"mock://{root}")


def names(store: Store) -> list[str]:
    return sorted(i.path for i in store.fs.get_file_info(pafs.FileSelector("", recursive=True)))


def test_a_lake_on_another_filesystem_holds_the_same_files_and_answers_the_same(tmp_path: Path) -> None:
    store = memory_store()
    fill(tmp_path, [LakeSink("mock://lake", store), LakeSink(str(tmp_path / "local"))])
    local = sorted(str(p.relative_to(tmp_path / "local")) for p in (tmp_path / "local").rglob("*.parquet"))
    remote = [n.removeprefix("lake/") for n in names(store) if n.endswith(".parquet")]
    assert remote == local and len(remote) == 2, (remote, local)  # service=api and service=db
    assert not [n for n in names(store) if "/." in n]  # no temporary file left
    on_store = lake_connection("mock://lake", store=store).execute(QUERY).fetchall()
    on_disk = lake_connection(tmp_path / "local").execute(QUERY).fetchall()
    assert on_store == on_disk == [("api", 2, 6, 12_000_000), ("db", 1, 3, 1_000_000)]
    both = "SELECT date, service FROM summaries ORDER BY ALL"
    assert lake_connection("mock://lake", store=store).execute(both).fetchall() == (
        lake_connection(tmp_path / "local").execute(both).fetchall()
    )


def test_a_file_uri_is_the_local_lake_with_its_writers(tmp_path: Path) -> None:
    lake = tmp_path / "lake"
    sink = LakeSink(f"file://{lake}")
    assert sink.root == lake and sink.store is None  # the local writers: 0600 files, never through a link
    fill(tmp_path, [sink])
    files = list(lake.rglob("*.parquet"))
    assert files and all(f.stat().st_mode & 0o777 == 0o600 for f in files)
    done = sql("--lake", f"file://{lake}", "-c", QUERY, "--format", "csv")
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines()[1:] == ['"api",2,6,12000000', '"db",1,3,1000000']


def test_sql_says_in_one_line_what_is_wrong_with_a_lake_uri(tmp_path: Path) -> None:
    done = sql("--lake", "nosuch://bucket/lake", "-c", "SELECT 1")
    assert done.returncode == 2 and done.stderr.count("\n") == 1, done.stderr
    assert "cannot open nosuch://bucket/lake: " in done.stderr
    done = sql("--lake", f"file://{tmp_path}/missing", "-c", "SELECT 1")
    assert done.returncode == 2 and f"{tmp_path}/missing is not a directory" in done.stderr


def test_a_write_that_fails_leaves_nothing(tmp_path: Path) -> None:
    store = memory_store()
    with pytest.raises(FileNotFoundError):
        store.put("t/a.parquet", tmp_path / "nonexistent")  # the source fails midway
    assert names(store) == ["lake", "lake/t"]
    assert store.put("t/a.parquet", b"whole") == "mock://lake/t/a.parquet"
    with store.fs.open_input_stream("lake/t/a.parquet") as f:
        assert f.read() == b"whole"
    store.renames = False  # as on an object store: one upload under the final name
    store.put("t/b.parquet", b"whole too")
    assert names(store) == ["lake", "lake/t", "lake/t/a.parquet", "lake/t/b.parquet"]


async def test_a_capture_is_moved_to_the_store_and_stays_here_if_it_refuses(tmp_path: Path) -> None:
    notes: list[tuple[str, int, str]] = []
    store = memory_store("captures")
    traced = Traced(
        address="unix:/nowhere",
        pprof=False,
        target=Target(),
        provenance={"pid": 7},
        captures=tmp_path,
        emit=lambda table, rows: None,
        budget=Budget(BudgetConfig(), lambda *_: None),
        note=lambda event, count, detail: notes.append((event, count, detail)),
        stop=trio.Event(),
        store=store,
    )
    (tmp_path / "api-7").mkdir()
    trace = tmp_path / "api-7" / "dump-1.trace"
    trace.write_bytes(b"go 1.26 trace\x00\x00\x00" + b"x" * 100)
    assert await traced.keep(trace) == "mock://captures/api-7/dump-1.trace"
    assert not trace.exists() and not notes
    with store.fs.open_input_stream("captures/api-7/dump-1.trace") as f:
        assert f.read().startswith(b"go 1.26 trace")
    # A store that refuses (here a file stands where the directory would be): the file stays, and it is said.
    with store.fs.open_output_stream("captures/api-8") as f:
        f.write(b"in the way")
    (tmp_path / "api-8").mkdir()
    other = tmp_path / "api-8" / "dump-2.trace"
    other.write_bytes(b"trace")
    assert await traced.keep(other) == str(other)
    assert other.exists()
    assert [(e, n) for e, n, _ in notes] == [("sink_down", 0)] and f"{other} kept here" in notes[0][2]


@pytest.mark.parametrize(
    ("key", "value", "expected"),
    [
        ("lake", "nosuch://b/l", "'nosuch' is not a filesystem pyarrow opens"),
        ("lake", "relative/lake", "must be an absolute path or a filesystem URI"),
        ("captures", "file://host/x", "a file:// URI names an absolute path on this host"),
        ("captures", "s3://", "names no bucket, container or directory"),
    ],
)
def test_a_bad_location_is_one_line_from_check(tmp_path: Path, key: str, value: str, expected: str) -> None:
    conf = tmp_path / "agent.toml"
    conf.write_text(f'[agent]\nstate_dir = "{tmp_path}/state"\n[sinks]\n{key} = "{value}"\n')
    done = agent("--check", str(conf))
    assert done.returncode == 2 and not done.stdout
    first, last = done.stderr.splitlines()
    assert first.startswith(f"livetrace: error: {conf}: [sinks].{key} (line 4): ") and expected in first, first
    assert last == f"livetrace: 1 mistake in {conf}; nothing was started"


def test_check_says_where_captures_go(tmp_path: Path) -> None:
    conf = tmp_path / "agent.toml"
    conf.write_text(
        f'[agent]\nstate_dir = "{tmp_path}/state"\n[sinks]\nlake = "s3://bucket/lake"\ncaptures = "gs://b/traces"\n'
    )
    done = agent("--check", str(conf))
    assert done.returncode == 0, done.stderr
    assert "sinks: lake s3://bucket/lake\n" in done.stdout
    assert f"captures in {tmp_path}/state/captures, moved to gs://b/traces\n" in done.stdout
    local: dict[str, Any] = {"captures": f"file://{tmp_path}/traces"}
    config = parse_config(f'[agent]\nstate_dir = "{tmp_path}/state"\n[sinks]\ncaptures = "{local["captures"]}"\n')
    assert config.captures_dir == tmp_path / "traces"


@pytest.mark.slow
async def test_a_sampled_window_is_moved_to_the_store_and_its_row_names_it_there(tmp_path: Path) -> None:
    store = memory_store("traces")
    state = tmp_path / "state"
    config = parse_config(
        f'[agent]\nstate_dir = "{state}"\nscan_interval = "0.5s"\nflush_interval = "0.5s"\n'
        '[agent.budget]\ncpu_per_process = 1.0\nmemory = "8GiB"\n[[target]]\nservice = "moved"\n'
        'executable = "store-win*"\npolicy = "sampled"\nwindow = "1s"\nevery = "2s"\n'
    )
    async with run_demo(named_copy(demo_exe("1.26"), tmp_path, "store-win")):
        agent = Agent(config, io.StringIO())
        agent.captures = store  # as [sinks] captures = "mock://traces" opens it, but one this test can read
        stop = trio.Event()
        async with open_nursery() as nursery:
            nursery.start_soon(agent.run, None, False, stop)
            with trio.fail_after(60):
                while len(store.files("", ".trace")) < 2:  # a filesystem has no event
                    await trio.sleep(0.2)
            stop.set()
    paths = [p for (p,) in lake_rows(state / "lake", "captures", "path")]
    assert len(paths) >= 2 and all(p.startswith("mock://traces/moved-") for p in paths), paths
    for p in paths:
        with store.fs.open_input_stream(p.removeprefix("mock://")) as f:
            assert f.read(16).startswith(b"go 1.26 trace")
    assert not list((state / "captures").glob("*.trace"))  # moved, not copied
