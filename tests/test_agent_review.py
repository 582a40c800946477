"""The agent against what a traced process chooses: its own name (prctl
PR_SET_NAME: ``../../x``, bytes that are not UTF-8) names no file outside
the agent's captures, and one process's session failing in a way nobody
foresaw ends that session, not the agent."""

from __future__ import annotations

import errno
import io
import os
import subprocess
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import psutil
import pyarrow as pa
import pytest
import trio

from livetrace._agent.agent import Agent, _Process
from livetrace._agent.budget import Budget
from livetrace._agent.config import Budget as BudgetConfig
from livetrace._agent.config import Target, parse_config
from livetrace._agent.otlp import OtlpSink
from livetrace._agent.policies import SEGMENT, Traced, open_session
from livetrace._agent.spool import Spool
from livetrace._attach.processes import Kind, ProcessInfo
from livetrace._cli.main import main
from livetrace._errors import AgentConfigError, OutputPathError
from livetrace._go.demo import run_demo
from livetrace._nursery import open_nursery
from livetrace._outfile import AtomicFile
from tests.agentrun import lake_rows
from tests.conftest import demo_exe
from tests.test_agent_config import agent as agent_cli
from tests.test_agent_spool import log_rows
from tests.test_agent_store import memory_store, names

pytestmark = [pytest.mark.once, pytest.mark.usefixtures("agent_umask")]

HOSTILE = "../../x\udcff"  # what psutil reads from /proc/PID/comm after prctl(PR_SET_NAME, b"../../x\xff")


@contextmanager
def tmpfs_with(where: Path, options: str) -> Iterator[Path]:
    """A real small filesystem (tmpfs, with ``options``) at ``where`` for the test; needs root."""
    if os.geteuid() != 0:
        pytest.skip("mounting a small filesystem to fill needs root (CI runs as root)")
    where.mkdir()
    subprocess.run(["mount", "-t", "tmpfs", "-o", options, "tmpfs", str(where)], check=True)
    try:
        yield where
    finally:
        subprocess.run(["umount", "-l", str(where)], check=True)


def config_text(state: Path, target: str = "") -> str:
    return (
        f'[agent]\nstate_dir = "{state}"\nscan_interval = "1h"\nflush_interval = "0.5s"\n'
        '[agent.budget]\ncpu_per_process = 1.0\nmemory = "8GiB"\n'
        f'[[target]]\nexecutable = "no-such-executable-here"\n{target}'
    )


async def test_one_session_failing_unexpectedly_ends_it_not_the_agent(tmp_path: Path) -> None:
    # The attach address is what the process announced; this one is no address connect() takes (a ValueError).
    config = parse_config(config_text(tmp_path / "state"))
    agent = Agent(config, io.StringIO())
    row = ProcessInfo(4242, "svc", ["/srv/x"], HOSTILE, 1.0, Kind.GO, pprof="tcp:127.0.0.1:99999")
    key = (row.pid, row.started)
    agent.traced[key] = _Process(row, config.targets[0])
    await agent._trace(key)
    assert key not in agent.traced and key in agent._failed  # tried again no sooner than RETRY_AFTER
    [detached] = [r for r in agent.take_pending()["agent_log"] if r["event"] == "detached"]
    assert "unexpected error: ValueError" in detached["detail"]
    assert detached["service"] == "../../x\\udcff"  # text: rows of it can be written


@pytest.mark.slow
async def test_a_process_named_like_a_path_keeps_its_captures_in_captures(tmp_path: Path) -> None:
    """A sampled window of a real process, as the agent names it after the
    process's own name, lands in captures/ and is moved to the store under
    that name; the agent's rows (the name as text) reach the lake."""
    state = tmp_path / "state" / "deep"
    store = memory_store("traces")
    config = parse_config(config_text(state, 'policy = "sampled"\nwindow = "1s"\nevery = "2s"\n'))
    async with run_demo(demo_exe("1.26")) as demo:
        err = io.StringIO()
        agent = Agent(config, err)
        agent.captures = store
        # The scan knows the process by its pid and start time: as psutil gives them, the name as prctl set it.
        started = psutil.Process(demo.pid).create_time()
        row = ProcessInfo(demo.pid, "svc", [str(demo_exe("1.26"))], HOSTILE, started, Kind.GO, pprof=demo.http)
        key = (row.pid, row.started)
        stop = trio.Event()
        async with open_nursery() as nursery:
            nursery.start_soon(agent.run, None, True, stop)
            agent.traced[key] = _Process(row, config.targets[0])
            nursery.start_soon(agent._trace, key)
            with trio.move_on_after(60):
                while not store.files("", ".trace"):  # a filesystem has no event
                    await trio.sleep(0.2)
            stop.set()
    traces = [n for n in names(store) if n.endswith(".trace")]
    assert traces, err.getvalue()
    assert all(n.startswith(f"traces/%2E.%2F..%2Fx%5Cudcff-{demo.pid}-") for n in traces), traces
    outside = [p for p in tmp_path.rglob("*") if p.is_file() and not p.is_relative_to(state)]
    assert not outside, outside
    assert list(tmp_path.rglob("*.trace")) == []  # moved, none left here
    paths = [p for (p,) in lake_rows(state / "lake", "captures", "path")]
    assert paths and all(p.startswith("mock://traces/%2E.%2F..%2Fx") for p in paths), paths
    services = {s for (s,) in lake_rows(state / "lake", "agent_log", "service", f"pid = {demo.pid}")}
    assert services == {"../../x\\udcff"}
    assert os.listdir(tmp_path) == ["state"]


class RefusingSink:
    """A sink that fails as no sink should (a bug in one): the agent stops, and lets go of every sink."""

    name = "refusing"

    def __init__(self) -> None:
        self.closed = False

    def send(self, table: str, rows: pa.Table, key: str) -> None:
        raise RuntimeError("a bug in a sink")

    def close(self) -> None:
        self.closed = True


@pytest.mark.slow  # a scan of the host's processes takes a second
async def test_the_sinks_are_closed_when_the_agent_fails(tmp_path: Path) -> None:
    config = parse_config(config_text(tmp_path / "state"))
    other = RefusingSink()
    agent = Agent(config, io.StringIO(), sinks=[other])
    agent.note("test", 0, "a row for the first flush")
    with pytest.raises(RuntimeError, match="a bug in a sink"):
        await agent.run(duration=30)
    assert other.closed


@pytest.mark.slow  # a scan of the host's processes takes a second
async def test_a_scan_forgets_the_failures_of_processes_gone(tmp_path: Path) -> None:
    agent = Agent(parse_config(config_text(tmp_path / "state")), io.StringIO())
    with subprocess.Popen(["sleep", "60"]) as child:
        try:
            started = psutil.Process(child.pid).create_time()
            alive, gone = (child.pid, started), (child.pid, started - 1000.0)  # this pid, an earlier process's
            agent._failed = {alive: 1.0, gone: 1.0}
            async with open_nursery() as nursery:
                await agent.scan(nursery)
        finally:
            child.kill()
    assert agent._failed == {alive: 1.0}


@pytest.mark.slow
async def test_the_agent_decodes_each_session_in_one_thread(tmp_path: Path) -> None:
    async with run_demo(demo_exe("1.26")) as demo:
        traced = Traced(
            address=demo.trace_address,
            pprof=False,
            target=Target(),
            provenance={"service": "api", "pid": demo.pid},
            captures=tmp_path,
            emit=lambda table, rows: None,
            budget=Budget(BudgetConfig(), lambda *_: None),
            note=lambda *_: None,
            stop=trio.Event(),
        )
        async with open_session(traced, segment=SEGMENT) as session:
            assert session.jobs == 1  # not default_jobs(): cores less one, per traced process
            await session.stop()


def test_a_threshold_of_zero_is_refused_as_a_string_too() -> None:
    for value in ('"0s"', "0", '"0ms"'):
        with pytest.raises(AgentConfigError, match=r"spans_over.*must be more than 0 seconds"):
            parse_config(f'[agent]\nstate_dir = "/x"\n[[target]]\nspans_over = {{ blocked = {value} }}\n')
    ok = parse_config('[agent]\nstate_dir = "/x"\n[[target]]\nspans_over = { blocked = "10ms", gc = 0.5 }\n')
    assert ok.targets[0].spans_over == {"blocked": 10_000_000, "gc": 500_000_000}


def test_an_otlp_password_is_shown_redacted(tmp_path: Path) -> None:
    url = "https://user:hunter2@collector.internal:4318/v1/traces"
    assert OtlpSink(url).name == "otlp https://user:***@collector.internal:4318/v1/traces"
    conf = tmp_path / "agent.toml"
    conf.write_text(f'[agent]\nstate_dir = "{tmp_path}/state"\n[sinks]\notlp = "{url}"\n')
    done = agent_cli("--check", str(conf))
    assert done.returncode == 0, done.stderr
    assert "hunter2" not in done.stdout and "otlp https://user:***@collector.internal" in done.stdout


@pytest.mark.parametrize("value", ["-1", "nan", "inf", "0"])
def test_a_duration_that_is_no_time_is_refused(tmp_path: Path, value: str, capsys: pytest.CaptureFixture[str]) -> None:
    conf = tmp_path / "agent.toml"
    conf.write_text(f'[agent]\nstate_dir = "{tmp_path}/state"\n')
    with pytest.raises(SystemExit) as exit:
        main(["agent", str(conf), "--duration", value])
    assert exit.value.code == 2 and not (tmp_path / "state").exists()
    assert "argument --duration: " in capsys.readouterr().err


def test_a_full_disk_is_known_by_its_errno_and_the_oldest_entry_makes_room(tmp_path: Path) -> None:
    # Inodes for the mount's root, the spool and four entries: the fifth's temporary file cannot be made.
    with tmpfs_with(tmp_path / "disk", "size=1m,nr_inodes=6") as disk:
        spool = Spool(disk / "spool", 1 << 20, "h")
        kept = [spool.put("agent_log", log_rows(i)) for i in range(4)]
        with pytest.raises(OutputPathError) as full:
            AtomicFile(disk / "spool" / "x", hidden=True)
        assert full.value.errno == errno.ENOSPC
        fifth = spool.put("agent_log", log_rows(4))
        assert fifth is not None and spool.entries() == [*kept[1:], fifth]
        assert spool.dropped == {"agent_log": 1}
