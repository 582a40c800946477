"""`livetrace ps` and process references (pid:N, names): the table and the
jsonl on hand-made rows, then the real thing on Go services of three
toolchains, a Go service without a way in, and a program that is not Go."""

from __future__ import annotations

import json
import os
import subprocess
from collections.abc import Iterator
from contextlib import AsyncExitStack, contextmanager
from pathlib import Path

import pytest
import trio

from livetrace import (
    AmbiguousProcessError,
    NoSuchProcessError,
    NotAttachableError,
    NotGoProcessError,
)
from livetrace._attach.announce import Announcement
from livetrace._attach.buildinfo import BuildInfo, Module
from livetrace._attach.processes import FIX, HELPER_IMPORT, Kind, ProcessInfo
from livetrace._attach.resolve import is_process_reference, resolve_target
from livetrace._cli.ps import MAX_WIDTH, MIN_WIDTH, NOT_ATTACHABLE, row_json, table_lines, uptime_text
from livetrace._go.demo import DemoProcess, run_demo
from tests.conftest import GO_VERSIONS, cli, demo_exe, go_tool_trace
from tests.plainsvc import plain_service

# Finding processes: no decoding, so the twin's pass would only repeat it.
pytestmark = pytest.mark.once

DEMO_PACKAGE = "github.com/livetrace/livetrace/go_helper/cmd/livetrace-demo"
DEMO_MODULE = "github.com/livetrace/livetrace/go_helper"
NOW = 1_800_000_000.0


def _go_row(pid: int, command: list[str], helper: Announcement | None = None, pprof: str | None = None) -> ProcessInfo:
    build = BuildInfo("go1.26.6", "example.com/svc/cmd/svc", Module("example.com/svc", "v1.4.2"))
    return ProcessInfo(pid, "alice", command, "svc", NOW - 3725, Kind.GO, build=build, helper=helper, pprof=pprof)


def test_process_references() -> None:
    for ref in ("pid:1234", "myservice", "svc.v2"):
        assert is_process_reference(ref)
    for addr in ("unix:/run/s.sock", "/run/s.sock", "tcp:127.0.0.1:7070", "127.0.0.1:7070", "http://h:1", ""):
        assert not is_process_reference(addr)
    with pytest.raises(ValueError, match="pid:N"):
        trio.run(resolve_target, "pid:12x")


def test_table_and_jsonl() -> None:
    helper = Announcement(101, "unix:/run/svc/trace.sock", "go1.26.6", "livetrace-go/1", "/srv/svc", 1)
    rows = [
        _go_row(101, ["/srv/svc", "-config", "/etc/svc/" + "x" * 200], helper=helper, pprof="http://127.0.0.1:6060"),
        _go_row(102, ["/srv/svc"], pprof="http://127.0.0.1:6061"),
        _go_row(103, ["/srv/svc", "-quiet"]),
        ProcessInfo(104, "bob", ["bash"], "bash", NOW - 5, Kind.NOT_GO, "not a Go program"),
        ProcessInfo(105, "carol\x1b[2J", [], "", None, Kind.UNINSPECTABLE, "another user's process (carol)"),
    ]
    for width in (MIN_WIDTH, MAX_WIDTH):
        lines = table_lines(rows[:4], NOW, width)
        assert lines[0].split() == ["PID", "USER", "COMMAND", "GO", "MODULE", "UPTIME", "ATTACH"]
        assert all(len(line) <= width for line in lines), lines
        assert "…" in lines[1] and "unix:/run/svc/trace.sock" in lines[1] and "1h02m" in lines[1]
        assert lines[2].endswith("http://127.0.0.1:6061")
        assert lines[3].endswith(NOT_ATTACHABLE)
        assert lines[4].endswith("not a Go program") and "5s" in lines[4]
    # A user name (or any text of the process's) is shown escaped; a long
    # reason runs past the width rather than squeeze the other rows.
    last = table_lines(rows, NOW, MIN_WIDTH)[5]
    assert "\x1b" not in last and last.endswith("another user's process (carol)")
    assert "example.com/svc v1.4.2" in table_lines(rows[1:3], NOW, MAX_WIDTH)[1]

    first, third, other = (row_json(rows[i], NOW) for i in (0, 2, 3))
    assert first["helper"] == first["attach"] == "unix:/run/svc/trace.sock"
    assert (first["pprof"], first["fix"], first["uptime_s"]) == ("http://127.0.0.1:6060", None, 3725.0)
    assert (first["module"], first["module_version"], first["package"]) == (
        "example.com/svc",
        "v1.4.2",
        "example.com/svc/cmd/svc",
    )
    assert third["attach"] is None and third["fix"] == FIX and HELPER_IMPORT in FIX and "net/http/pprof" in FIX
    assert (other["kind"], other["reason"], other["go_version"], other["fix"]) == (
        "not-go",
        "not a Go program",
        None,
        None,
    )
    json.dumps([first, third, other])  # all of it is JSON


def test_uptime_text() -> None:
    assert [uptime_text(s) for s in (None, -1, 42, 312, 11100, 1_047_600)] == [
        "-",
        "0s",
        "42s",
        "5m12s",
        "3h05m",
        "12d03h",
    ]


@contextmanager
def _running(*argvs: list[str]) -> Iterator[list[subprocess.Popen[bytes]]]:
    procs = [subprocess.Popen(argv) for argv in argvs]
    try:
        yield procs
    finally:
        for p in procs:
            p.kill()
            p.wait()


async def _run_cli(*args: str) -> tuple[int, str, str]:
    proc = cli(*args)
    stdout, stderr = await trio.to_thread.run_sync(lambda: proc.communicate(timeout=120))
    return proc.returncode, stdout, stderr


@pytest.mark.slow
async def test_ps_and_process_references(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    rundir = tmp_path / "run"
    rundir.mkdir(mode=0o700)
    rundir.chmod(0o700)
    monkeypatch.setenv("LIVETRACE_RUNTIME_DIR", str(rundir))
    env = {"LIVETRACE_RUNTIME_DIR": str(rundir)}
    # Names of our own, so that no other test's processes match them.
    svc_name, sleeper = f"ltps-svc-{os.getpid()}", f"ltps-sleep-{os.getpid()}"
    (tmp_path / svc_name).symlink_to(demo_exe(GO_VERSIONS[0]))
    (tmp_path / sleeper).symlink_to("/bin/sleep")
    async with AsyncExitStack() as stack:
        demos: dict[str, DemoProcess] = {}
        for version in GO_VERSIONS:
            exe = tmp_path / svc_name if version == GO_VERSIONS[0] else demo_exe(version)
            demos[version] = await stack.enter_async_context(run_demo(exe, env=env))
        with_pprof = await stack.enter_async_context(plain_service("1.26", pprof=True))
        bare = await stack.enter_async_context(plain_service("1.26", pprof=False))
        (sleeping,) = stack.enter_context(_running([str(tmp_path / sleeper), "60"]))
        pids = [d.pid for d in demos.values()] + [with_pprof.pid, bare.pid, sleeping.pid]

        code, stdout, stderr = await _run_cli("ps", "--format", "jsonl", *map(str, pids))
        assert code == 0, stderr
        rows = {r["pid"]: r for r in map(json.loads, stdout.splitlines())}
        assert sorted(rows) == sorted(pids)
        for version, d in demos.items():
            row = rows[d.pid]
            assert (row["kind"], row["go_version"], row["module"], row["package"]) == (
                "go",
                d.go_version,
                DEMO_MODULE,
                DEMO_PACKAGE,
            ), version
            assert row["go_version"].startswith(f"go{version}"), row
            assert (row["helper"], row["pprof"], row["attach"]) == (
                d.trace_address,
                d.http if d.http.startswith("http://") else f"http://{d.http}",
                d.trace_address,
            )
        assert (rows[with_pprof.pid]["pprof"], rows[with_pprof.pid]["helper"]) == (f"http://{with_pprof.pprof}", None)
        assert (rows[bare.pid]["kind"], rows[bare.pid]["attach"], rows[bare.pid]["fix"]) == ("go", None, FIX)
        assert (rows[sleeping.pid]["kind"], rows[sleeping.pid]["reason"]) == ("not-go", "not a Go program")

        # The table, and the fix spelled out under it.
        code, table, stderr = await _run_cli("ps", str(bare.pid), f"pid:{with_pprof.pid}")
        assert code == 0 and NOT_ATTACHABLE in table and HELPER_IMPORT in table, stderr
        assert f"http://{with_pprof.pprof}" in table

        # pid:N and names, as connect() resolves them.
        assert await resolve_target(f"pid:{demos['1.21'].pid}") == demos["1.21"].trace_address
        assert await resolve_target(svc_name) == demos[GO_VERSIONS[0]].trace_address
        assert await resolve_target(f"pid:{with_pprof.pid}") == f"http://{with_pprof.pprof}"
        with pytest.raises(NotAttachableError, match="net/http/pprof") as bare_error:
            await resolve_target(f"pid:{bare.pid}")
        assert bare_error.value.fix == FIX and bare_error.value.pid == bare.pid
        with pytest.raises(NotGoProcessError, match="not a Go program"):
            await resolve_target(sleeper)
        with pytest.raises(NoSuchProcessError):
            await resolve_target(f"ltps-nothing-{os.getpid()}")
        twin = stack.enter_context(_running([str(tmp_path / sleeper), "60"]))[0]
        with pytest.raises(AmbiguousProcessError, match=sleeper) as ambiguous:
            await resolve_target(sleeper)
        assert sorted(m[0] for m in ambiguous.value.matches) == sorted([sleeping.pid, twin.pid])

        # The CLI attaches by name.
        out = tmp_path / "by-name.trace"
        code, _, stderr = await _run_cli("record", svc_name, "-o", str(out), "--duration", "1")
        assert code == 0, stderr
        assert out.stat().st_size > 0

        # ... and by pid:N through a service's net/http/pprof: one window, a trace Go opens.
        out = tmp_path / "by-pid.trace"
        code, _, stderr = await _run_cli("record", f"pid:{with_pprof.pid}", "-o", str(out), "--duration", "1")
        assert code == 0, stderr
        go_tool_trace("1.26", out)
