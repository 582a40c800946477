"""Passwords in http://USER:PASSWORD@HOST addresses are never shown (issue 24,
finding 14): not in a status line, an error, or an exception's message."""

from __future__ import annotations

import socket
import subprocess
from pathlib import Path

import pytest

import livetrace
from livetrace._protocol.redact import redact

from .conftest import cli
from .test_pprof import odd_server

SECRET = "s3cr3t-pw"


def test_redact() -> None:
    assert redact("http://u:pw@127.0.0.1:1/x answered 404") == "http://u:***@127.0.0.1:1/x answered 404"
    assert redact("bad address 'HTTP://u:p@w@h:x': expected") == "bad address 'HTTP://u:***@h:x': expected"
    assert redact("from http://a:b@c to ftp://d:e@f") == "from http://a:***@c to ftp://d:***@f"
    # Nothing to hide: a user name alone, or no userinfo at all.
    for text in ("http://u@h:1", "http://h:1/debug/pprof/", "tcp:127.0.0.1:1", "user:pw@host"):
        assert redact(text) == text


def _with_password(base: str, path: str = "") -> str:
    return base.replace("http://", f"http://user:{SECRET}@", 1) + path


def _closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])  # closed again: nobody listens there


COMMANDS = {
    "tail": lambda a, d: ["tail", a, "-d", "1"],
    "record": lambda a, d: ["record", a, "-d", "1", "-o", str(d / "out.trace")],
    "profile": lambda a, d: ["profile", a, "-d", "1", "--kind", "sched", "-o", str(d / "out.pprof")],
    "export": lambda a, d: ["export", a, "-d", "1", "-o", str(d / "out.json")],
    "top": lambda a, d: ["top", a, "-d", "1"],
    "flight": lambda a, d: ["flight", a, "-d", "1", "-t", "gc>1s", "-o", str(d / "dumps")],
}


@pytest.mark.slow
@pytest.mark.once
def test_no_command_prints_the_password(tmp_path: Path) -> None:
    """Every command against an address with a password, at servers that
    fail in different ways, and at addresses that do not parse."""
    with odd_server() as base:
        # Every command at one failure; tail (and record) at the others.
        runs = [(cmd, _with_password(base, "/auth")) for cmd in COMMANDS]  # 401
        runs += [("tail", _with_password(base, p)) for p in ("/nf", "/drop", "/busy", "/redirect")]
        runs += [
            ("record", _with_password(base, "/drop")),  # a window cut short: kept, incomplete
            ("tail", _with_password(f"http://127.0.0.1:{_closed_port()}")),  # nobody listens
            ("tail", f"http://user:{SECRET}@127.0.0.1:notaport"),
            ("record", f"https://user:{SECRET}@127.0.0.1:1"),
            ("tail", f"ftp://user:{SECRET}@127.0.0.1:1"),
        ]
        outputs = []
        for batch in range(0, len(runs), 6):
            procs = []
            for i, (cmd, address) in enumerate(runs[batch : batch + 6]):
                out = tmp_path / f"{batch + i}"
                out.mkdir()
                procs.append((cmd, address, cli(*COMMANDS[cmd](address, out))))
            for cmd, address, proc in procs:
                try:
                    stdout, stderr = proc.communicate(timeout=60)
                except subprocess.TimeoutExpired:
                    proc.kill()
                    stdout, stderr = proc.communicate()
                outputs.append((cmd, address, stdout + stderr))
    for cmd, address, said in outputs:
        assert SECRET not in said, f"livetrace {cmd} {address} printed the password:\n{said}"
        assert said.strip(), f"livetrace {cmd} {address} said nothing"
    # The address is still named, with the password hidden.
    assert sum("user:***@127.0.0.1" in said for _, _, said in outputs) >= len(outputs) // 2


@pytest.mark.slow
@pytest.mark.once
async def test_errors_and_session_info_hide_the_password() -> None:
    """What the library raises or reports carries no password either."""
    with odd_server() as base:
        for path in ("/nf", "/auth", "/html", "/redirect"):
            with pytest.raises(livetrace.LivetraceError) as e:
                async with livetrace.connect(_with_password(base, path)):
                    pass
            assert SECRET not in str(e.value) and "user:***@" in str(e.value), str(e.value)
            assert SECRET not in str(getattr(e.value, "url", "")), path
        with pytest.raises(ValueError, match="bad address 'http://user:\\*\\*\\*@") as v:
            async with livetrace.connect(f"http://user:{SECRET}@127.0.0.1:notaport"):
                pass
        assert SECRET not in str(v.value)
        async with livetrace.connect(_with_password(base, "/drop")) as session:
            assert SECRET not in str(session.info.extra) and SECRET not in str(session.address)
