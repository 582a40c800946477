"""A Go service announces its helper while it listens (docs/protocol.md,
"Announce records"): the Go side's own tests cover the directory checks;
this one checks the record against the real service and its handshake."""

from __future__ import annotations

import json
import os
import stat
from pathlib import Path

import psutil
import pytest

import livetrace

from .conftest import demo, demo_exe


@pytest.mark.slow
@pytest.mark.once
async def test_the_demo_announces_itself_until_it_stops(tmp_path: Path) -> None:
    runtime_dir = tmp_path / "rt"
    async with demo("1.26", env={"LIVETRACE_RUNTIME_DIR": str(runtime_dir)}) as d:
        path = runtime_dir / f"{d.pid}.json"
        assert [p.name for p in runtime_dir.iterdir()] == [path.name]  # no temporary file left
        assert stat.S_IMODE(runtime_dir.stat().st_mode) == 0o700
        assert stat.S_IMODE(path.stat().st_mode) == 0o600
        record = json.loads(path.read_text())
        assert set(record) == {"format", "pid", "address", "go_version", "helper", "executable", "started_unix_ns"}
        assert record["format"] == 1
        assert record["pid"] == d.pid
        assert record["address"] == d.trace_address
        assert record["go_version"] == d.go_version
        assert os.path.samefile(record["executable"], demo_exe("1.26"))
        # The reader's staleness rule: the process started before it listened.
        assert psutil.Process(d.pid).create_time() <= record["started_unix_ns"] / 1e9 + 1
        # What the record says is enough to attach: the address, and the pid
        # at the other end of it.
        async with livetrace.connect(record["address"], expected_pid=record["pid"]) as session:
            assert session.info.helper == record["helper"]
            assert session.info.go_version == record["go_version"]
    assert d.process.returncode == 0  # stopped by SIGTERM, through srv.Close()
    assert list(runtime_dir.iterdir()) == []
