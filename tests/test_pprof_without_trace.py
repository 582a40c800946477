"""A service that serves net/http/pprof without its execution trace, as
etcd 3.4 does (issue 26, point 3): its index answers, but
/debug/pprof/trace falls to the index handler, which answers 404 "Unknown
profile". `ps` called it attachable, and `tail pid:N` / `record NAME` then
failed with advice that did not apply ("check the port and any path
prefix"). Now ps shows "pprof without trace" with what the trace handler
answered, and attaching says what the service lacks. tests/goprogs/
notracesvc is such a service, built with Go 1.21.13 and 1.26.6; quietsvc,
which mounts the whole of net/http/pprof, is still attachable."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import trio

from tests.conftest import cli
from tests.smallsvc import small_exe, small_service

LACKS = "without its execution trace"
WRONG_ADVICE = "check the port"


async def _run(*args: str) -> tuple[int, str, str]:
    p = cli(*args)
    out, err = await trio.to_thread.run_sync(lambda: p.communicate(timeout=120))
    return p.returncode, out, err


@pytest.mark.slow
@pytest.mark.once
@pytest.mark.parametrize("version", ["1.21", "1.26"])
async def test_pprof_without_trace_is_not_attachable(version: str, tmp_path: Path) -> None:
    async with small_service("notracesvc", version) as svc, small_service("quietsvc", version) as whole:
        code, out, err = await _run("ps", str(svc.pid), str(whole.pid), "--format", "jsonl")
        assert code == 0, err
        rows = {row["pid"]: row for row in map(json.loads, out.splitlines())}
        row = rows[svc.pid]
        assert (row["attach"], row["pprof"]) == (None, None), row
        assert row["pprof_without_trace"].startswith(f"http://{svc.pprof}: /debug/pprof/trace answered 404"), row
        assert "Unknown profile" in row["pprof_without_trace"], row
        assert "pprof.Trace" in row["fix"], row
        assert rows[whole.pid]["attach"] == f"http://{whole.pprof}", rows[whole.pid]

        code, out, err = await _run("ps", str(svc.pid))
        assert code == 0, err
        assert "pprof without trace (http://" in out, out

        code, _, err = await _run("tail", f"pid:{svc.pid}", "-n", "1")
        assert code != 0
        assert LACKS in err and "pprof.Trace" in err and WRONG_ADVICE not in err, err

        name = small_exe("notracesvc", version).name
        code, _, err = await _run("record", name, "-o", str(tmp_path / "t.trace"), "--duration", "1")
        assert code != 0
        assert LACKS in err and WRONG_ADVICE not in err, err
        assert not list(tmp_path.iterdir())

        # Given its address, the one request says the same.
        code, _, err = await _run("tail", f"http://{svc.pprof}", "-n", "1")
        assert code != 0
        assert "not its execution trace" in err and "Unknown profile" in err and WRONG_ADVICE not in err, err
