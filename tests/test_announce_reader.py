"""The reader of the Go helper's announce records (docs/ps.md, "The announce records"),
on records written by hand into private temporary directories."""

from __future__ import annotations

import json
import os
import socket
import time
from pathlib import Path

import pytest

from livetrace._attach.announce import read_announcements, runtime_dir

# Announce records: no decoding, so the twin's pass would only repeat them.
pytestmark = pytest.mark.once

# No process has this pid: it is above any pid_max Linux allows.
NO_SUCH_PID = 2**31 - 1


@pytest.fixture
def rundir(tmp_path: Path) -> Path:
    d = tmp_path / "run"
    d.mkdir(mode=0o700)
    d.chmod(0o700)  # whatever the umask
    return d


def write(directory: Path, record_pid: int, name: str | None = None, **fields: object) -> Path:
    doc: dict[str, object] = {
        "format": 1,
        "pid": record_pid,
        "address": "tcp:127.0.0.1:7070",
        "go_version": "go1.26.6",
        "helper": "livetrace-go/test",
        "executable": "/srv/svc",
        "started_unix_ns": time.time_ns(),
        "a_field_from_the_future": [1, 2],
    }
    doc.update(fields)
    path = directory / (name or f"{record_pid}.json")
    path.write_text(json.dumps(doc))
    path.chmod(0o600)
    return path


def test_fresh_and_stale_records(rundir: Path, tmp_path: Path) -> None:
    me = os.getpid()
    with socket.socket(socket.AF_UNIX) as listener:
        sock = tmp_path / "helper.sock"
        listener.bind(str(sock))
        write(rundir, me, address=f"unix:{sock}")
        write(rundir, NO_SUCH_PID)
        # A running process, in a record whose helper started long before
        # that process did (in 1970): the pid was reused.
        parent = os.getppid()
        write(rundir, parent, started_unix_ns=1)
        (rundir / "zz.json").write_text("{")
        scan = read_announcements(rundir)
        assert scan.problem is None
        assert list(scan.records) == [me]
        rec = scan.records[me]
        assert (rec.address, rec.go_version, rec.helper, rec.executable) == (
            f"unix:{sock}",
            "go1.26.6",
            "livetrace-go/test",
            "/srv/svc",
        )
        reasons = dict(scan.skipped)
        assert "no process" in reasons[f"{NO_SUCH_PID}.json"]
        assert "reused" in reasons[f"{parent}.json"]
        assert "not JSON" in reasons["zz.json"]
    # The helper is gone and its socket with it.
    sock.unlink()
    scan = read_announcements(rundir)
    assert scan.records == {}
    assert "is gone" in dict(scan.skipped)[f"{me}.json"]


def test_malformed_and_unknown_records_are_skipped(rundir: Path) -> None:
    me = os.getpid()
    write(rundir, me, format=2)
    (rundir / "2.json").write_text("[1, 2]")
    write(rundir, me, name="3.json")  # says another pid than its name
    write(rundir, 4, address="nowhere")
    write(rundir, 5, pid="5")
    write(rundir, 6, helper=7)
    (rundir / "notes.txt").write_text("not a record")
    (rundir / ".7.json.tmp").write_text("{")  # a record being written
    scan = read_announcements(rundir)
    assert scan.problem is None and scan.records == {}
    reasons = dict(scan.skipped)
    assert sorted(reasons) == sorted(["2.json", "3.json", "4.json", "5.json", "6.json", f"{me}.json"])
    assert "format 2" in reasons[f"{me}.json"]
    assert "not a JSON object" in reasons["2.json"]
    assert "names pid" in reasons["3.json"]
    assert "bad address" in reasons["4.json"]
    assert "wrong type" in reasons["5.json"]
    assert "not a string" in reasons["6.json"]


def test_an_unsafe_directory_is_not_read(rundir: Path, tmp_path: Path) -> None:
    write(rundir, os.getpid())
    link = tmp_path / "link"
    link.symlink_to(rundir)
    scan = read_announcements(link)
    assert scan.records == {} and scan.problem is not None and "symlink" in scan.problem

    rundir.chmod(0o755)
    scan = read_announcements(rundir)
    assert scan.records == {} and scan.problem is not None and "0755" in scan.problem

    rundir.chmod(0o700)
    if os.getuid() == 0:
        os.chown(rundir, 65534, -1)
        scan = read_announcements(rundir)
        assert scan.records == {} and scan.problem is not None and "uid 65534" in scan.problem
        os.chown(rundir, 0, -1)
    assert list(read_announcements(rundir).records) == [os.getpid()]

    missing = read_announcements(tmp_path / "none")
    assert missing.problem is None and missing.records == {}
    plain = tmp_path / "plain"
    plain.write_text("")
    assert "not a directory" in (read_announcements(plain).problem or "")


def test_runtime_directory() -> None:
    uid = os.getuid()
    env = {"LIVETRACE_RUNTIME_DIR": "/a", "XDG_RUNTIME_DIR": "/run/user/1", "TMPDIR": "/t"}
    assert runtime_dir(env) == Path("/a")
    del env["LIVETRACE_RUNTIME_DIR"]
    assert runtime_dir(env) == Path("/run/user/1/livetrace")
    env["XDG_RUNTIME_DIR"] = "relative"
    assert runtime_dir(env) == Path(f"/t/livetrace-{uid}")
    assert runtime_dir({"TMPDIR": ""}) == Path(f"/tmp/livetrace-{uid}")
