"""``pid:N`` and bare executable names, turned into an address connect()
knows: the process's livetrace helper if it announced one, else the pprof
endpoint of one of its HTTP ports, else a typed error that says why not (the
same reason ``livetrace ps`` shows)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TypeGuard

import trio

from livetrace._attach.announce import read_announcements
from livetrace._attach.processes import (
    FIX,
    NO_SUCH_PROCESS,
    TRACE_FIX,
    Kind,
    ProcessInfo,
    attach_routes,
    find_by_name,
    inspect_pid,
)
from livetrace._errors import (
    AmbiguousProcessError,
    NoSuchProcessError,
    NotAttachableError,
    NotGoProcessError,
)
from livetrace._protocol.address import FORMS
from livetrace._protocol.redact import redact
from livetrace._protocol.text import shown

__all__ = ["PID_PREFIX", "Resolved", "is_process_reference", "resolve_process", "resolve_target"]

PID_PREFIX = "pid:"
# How much of a command line an error message repeats.
COMMAND_SHOWN = 80


def is_process_reference(text: object) -> TypeGuard[str]:
    """Whether an address names a process rather than a socket: ``pid:N``,
    or a bare name (no ':' and no '/', which every other form has)."""
    if not isinstance(text, str) or not text:
        return False
    return text.startswith(PID_PREFIX) or (":" not in text and "/" not in text)


def parse_pid(text: str) -> int:
    digits = text[len(PID_PREFIX) :]
    if not digits.isdigit() or int(digits) <= 0:
        raise ValueError(f"bad address {redact(repr(text))}: pid:N wants a process id, a positive number")
    return int(digits)


@dataclass(frozen=True)
class Resolved:
    address: str
    pid: int


async def resolve_target(text: str) -> str:
    """The address to attach to the process ``text`` names (``pid:N`` or an
    executable's name, matched exactly against a process's name, its
    executable's base name or its argv[0]'s)."""
    return (await resolve_process(text)).address


async def resolve_process(text: str) -> Resolved:
    """The same, with the process's pid: connect() holds the helper's
    socket to it, so that a stale record cannot lead elsewhere."""
    if text.startswith(PID_PREFIX):
        pid = parse_pid(text)
    else:
        pid = await _the_one_named(text)
    row = await trio.to_thread.run_sync(inspect_pid, pid)
    if row.reason == NO_SUCH_PROCESS:
        raise NoSuchProcessError(f"no process with pid {pid}")
    return Resolved(await _address_of(row), pid)


async def _the_one_named(name: str) -> int:
    matches = await trio.to_thread.run_sync(find_by_name, name)
    if not matches:
        hint = (
            f" (for the socket file of that name, write unix:{shown(name)})" if await trio.Path(name).exists() else ""
        )
        raise NoSuchProcessError(
            f"no process named '{shown(name)}'{hint}; `livetrace ps` lists the Go processes (an address "
            f"is {FORMS}; or http://HOST:PORT, pid:N, or a process's name)"
        )
    if len(matches) > 1:
        listed = [(m.pid, m.user, _shown(m.command)) for m in matches]
        lines = "\n".join(f"  pid {pid:<8} {user:<10} {cmd}" for pid, user, cmd in listed)
        raise AmbiguousProcessError(
            f"'{shown(name)}' matches {len(matches)} processes; name one as pid:N:\n{lines}", matches=listed
        )
    return matches[0].pid


async def _address_of(row: ProcessInfo) -> str:
    records = await trio.to_thread.run_sync(read_announcements)
    record = records.records.get(row.pid)
    if record is not None:
        return record.address
    what = f"pid {row.pid} ({_shown(row.command)})"
    if row.kind is not Kind.GO:
        raise NotGoProcessError(f"cannot attach to {what}: {row.reason}", pid=row.pid, reason=row.reason)
    await attach_routes([row], records)
    if row.pprof is not None:
        return row.pprof
    build = row.build
    assert build is not None
    if row.pprof_without_trace:
        raise NotAttachableError(
            f"{what}, built with {shown(build.go_version)}, is not attachable: no livetrace helper announced "
            f"itself, and it serves net/http/pprof without its execution trace "
            f"({shown(row.pprof_without_trace)}). To make it attachable: {TRACE_FIX}",
            pid=row.pid,
            fix=TRACE_FIX,
        )
    ports = (
        f"{row.unprobed} of its {len(row.ports)} TCP ports were not probed (too many ports), and none of the "
        "others answers /debug/pprof/"
        if row.unprobed
        else f"none of its {len(row.ports)} TCP ports answers /debug/pprof/"
        if row.ports
        else "it listens on no TCP port (so serves no /debug/pprof/)"
    )
    ignored = f" (the announce directory {records.directory} was ignored: {records.problem})" if records.problem else ""
    raise NotAttachableError(
        f"{what}, built with {shown(build.go_version)}, is not attachable: no livetrace helper announced itself"
        f"{ignored}, and {ports}. To make it attachable: {FIX}",
        pid=row.pid,
        fix=FIX,
    )


def _shown(command: list[str]) -> str:
    return shown(" ".join(command), COMMAND_SHOWN)
