"""Running ``livetrace agent`` as a process, over a small fleet of real Go
services, for the fleet's tests (test_agent_fleet.py).

The services run under names of their own (a copy of the executable named
for the test) so that the agent's selector picks them and nothing else a
parallel test runs."""

from __future__ import annotations

import os
import secrets
import shutil
import signal
import subprocess
import sys
from collections.abc import AsyncIterator, Callable
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from pathlib import Path
from typing import Any

import duckdb
import trio

from livetrace._agent.sinks import lake_glob
from livetrace._go.demo import DemoProcess, run_demo
from tests.conftest import demo_exe
from tests.plainsvc import PlainService, plain_exe, run_plain


def named_copy(exe: Path, where: Path, stem: str) -> Path:
    """``exe`` copied to a name of this test's (the agent's selectors see base names)."""
    name = f"{stem}-{secrets.token_hex(3)}"
    copy = where / name
    shutil.copy2(exe, copy)
    return copy


@asynccontextmanager
async def demo_named(version: str, where: Path, stem: str) -> AsyncIterator[DemoProcess]:
    async with run_demo(named_copy(demo_exe(version), where, stem)) as d:
        yield d


def plain_named(version: str, where: Path, stem: str) -> AbstractAsyncContextManager[PlainService]:
    return run_plain(named_copy(plain_exe(version), where, stem))


class AgentProcess:
    """``livetrace agent CONFIG`` in a process of its own; its standard error in a file."""

    def __init__(self, config: Path, log: Path) -> None:
        self.config = config
        self.log = log
        self.proc: subprocess.Popen[bytes] | None = None

    def start(self, *args: str) -> None:
        env = {k: v for k, v in os.environ.items() if k != "LIVETRACE_TOKEN"}
        with self.log.open("ab") as err:
            self.proc = subprocess.Popen(
                [sys.executable, "-m", "livetrace", "agent", str(self.config), *args],
                stdout=subprocess.DEVNULL,
                stderr=err,
                env=env,
            )

    def text(self) -> str:
        return self.log.read_text(errors="replace")

    async def until(self, what: Callable[[str], bool], timeout: float, why: str) -> float:
        """Wait until ``what`` holds of the log; the seconds waited."""
        start = trio.current_time()
        with trio.move_on_after(timeout):
            while not what(self.text()):
                assert self.proc is not None and self.proc.poll() is None, f"the agent exited:\n{self.text()[-3000:]}"
                await trio.sleep(0.1)
            return trio.current_time() - start
        raise AssertionError(f"{why}: not within {timeout} s; the agent said:\n{self.text()[-3000:]}")

    async def stop(self, sig: int = signal.SIGTERM, timeout: float = 60) -> int:
        assert self.proc is not None
        self.proc.send_signal(sig)
        with trio.fail_after(timeout):
            while self.proc.poll() is None:
                await trio.sleep(0.05)
        return self.proc.returncode

    def kill(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()


@asynccontextmanager
async def agent(config: Path, log: Path, *args: str) -> AsyncIterator[AgentProcess]:
    a = AgentProcess(config, log)
    a.start(*args)
    try:
        yield a
    finally:
        a.kill()


def lake_rows(lake: Path, table: str, columns: str = "*", where: str = "true") -> list[tuple[Any, ...]]:
    """Rows of one of the lake's tables, as DuckDB reads the Hive-partitioned files."""
    if not list((lake / table).rglob("*.parquet")):
        return []
    query = (
        f"select {columns} from read_parquet('{lake_glob(lake, table)}', hive_partitioning=true) "
        f"where {where} order by key"
    )
    return duckdb.connect().execute(query).fetchall()


def lake_query(lake: Path, sql: str) -> list[tuple[Any, ...]]:
    """A query over the lake's tables, each named in braces: ``SELECT count(*) FROM {summaries}``."""
    tables = {t.name: f"read_parquet('{lake_glob(lake, t.name)}', hive_partitioning=true)" for t in lake.iterdir()}
    return duckdb.connect().execute(sql.format(**tables)).fetchall()
