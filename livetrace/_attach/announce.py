"""The records a Go helper writes when it starts listening (one per process,
``<pid>.json`` in a private runtime directory), read back: which processes
offer a helper, and where it listens.

The directory is trusted only if it is ours and private, exactly as the
helper demands before it writes there; a record is believed only if its
process still runs, was running when the record was written, and (for a unix
address) its socket still exists. Records that fail are skipped with the
reason, never deleted: they are not ours to clean up.
"""

from __future__ import annotations

import errno
import json
import os
import pwd
import stat
from dataclasses import dataclass, field
from pathlib import Path
from typing import TypeGuard

import psutil

from livetrace._protocol.address import parse_address

__all__ = ["FORMAT", "AnnounceScan", "Announcement", "read_announcements", "runtime_dir"]

FORMAT = 1
SUFFIX = ".json"
# A record is a few hundred bytes; anything far larger is not one.
MAX_RECORD_BYTES = 64 * 1024
# The helper starts listening after its process starts; a process that
# started later than this after the record is a new one on a reused pid.
REUSE_SLACK_S = 1.0
PRIVATE_BITS = 0o077


@dataclass(frozen=True, slots=True)
class Announcement:
    """One fresh record: the helper of process ``pid`` listens at ``address``
    (as parse_address reads it) since ``started_unix_ns``."""

    pid: int
    address: str
    go_version: str
    helper: str
    executable: str
    started_unix_ns: int


@dataclass(slots=True)
class AnnounceScan:
    """What one reading of the directory found. ``problem`` says why the
    directory was ignored (None when it was read, or does not exist);
    ``skipped`` names each record left out, with the reason."""

    directory: Path
    problem: str | None = None
    records: dict[int, Announcement] = field(default_factory=dict)
    skipped: list[tuple[str, str]] = field(default_factory=list)


def runtime_dir(env: dict[str, str] | None = None) -> Path:
    """Where helpers announce themselves: $LIVETRACE_RUNTIME_DIR, else
    $XDG_RUNTIME_DIR/livetrace (if absolute), else $TMPDIR/livetrace-<uid>."""
    env = dict(os.environ) if env is None else env
    if explicit := env.get("LIVETRACE_RUNTIME_DIR"):
        return Path(explicit)
    xdg = env.get("XDG_RUNTIME_DIR", "")
    if xdg and os.path.isabs(xdg):
        return Path(xdg) / "livetrace"
    return Path(env.get("TMPDIR") or "/tmp") / f"livetrace-{os.getuid()}"


def read_announcements(directory: Path | None = None) -> AnnounceScan:
    """The fresh records in directory (default: runtime_dir())."""
    scan = AnnounceScan(runtime_dir() if directory is None else directory)
    try:
        # O_NOFOLLOW: a symlink in the last element fails here instead of
        # being followed; the checks below run on what was opened.
        dir_fd = os.open(scan.directory, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC)
    except OSError as e:
        if e.errno != errno.ENOENT:
            scan.problem = _open_problem(scan.directory, e)
        return scan
    try:
        scan.problem = _directory_problem(scan.directory, os.fstat(dir_fd))
        if scan.problem is None:
            for name in sorted(os.listdir(dir_fd)):
                if name.endswith(SUFFIX) and not name.startswith("."):
                    _read_one(dir_fd, name, scan)
    except OSError as e:
        scan.problem = f"cannot read it: {e.strerror or e}"
    finally:
        os.close(dir_fd)
    return scan


def _open_problem(directory: Path, e: OSError) -> str:
    if e.errno in (errno.ELOOP, errno.ENOTDIR) and directory.is_symlink():
        return "it is a symlink; the helper announces only in a real directory"
    if e.errno == errno.ENOTDIR:
        return "it is not a directory"
    if e.errno in (errno.EACCES, errno.EPERM):
        # Most likely made by another user, who keeps it closed to us.
        try:
            st = os.lstat(directory)
        except OSError:
            pass
        else:
            if st.st_uid != os.getuid():
                return f"cannot open it: {e.strerror or e}; {_not_ours(directory, st.st_uid)}"
    return f"cannot open it: {e.strerror or e}"


def _directory_problem(directory: Path, st: os.stat_result) -> str | None:
    if st.st_uid != os.getuid():
        return _not_ours(directory, st.st_uid)
    if st.st_mode & PRIVATE_BITS:
        return f"its mode is {stat.S_IMODE(st.st_mode):04o}: other users could write records there (want 0700)"
    return None


def _not_ours(directory: Path, owner: int) -> str:
    """Why another user's directory is not used, and the way out: where the
    name is predictable (/tmp/livetrace-<uid>), anyone can make it first."""
    who = "root" if owner == 0 else f"{_user(owner, bare=True)} or root"
    return (
        f"it belongs to {_user(owner)}, not to you (uid {os.getuid()}), so helpers do not announce there "
        f"either; have {who} remove {directory}, or set LIVETRACE_RUNTIME_DIR to a private directory of yours "
        "(for the services too)"
    )


def _user(uid: int, *, bare: bool = False) -> str:
    try:
        name = pwd.getpwuid(uid).pw_name
    except KeyError:
        return f"uid {uid}"
    return name if bare else f"{name} (uid {uid})"


def _read_one(dir_fd: int, name: str, scan: AnnounceScan) -> None:
    record = _parse_or_reason(dir_fd, name)
    why = record if isinstance(record, str) else _stale_reason(record)
    if why is not None:
        scan.skipped.append((name, why))
    elif not isinstance(record, str):
        scan.records[record.pid] = record


def _parse_or_reason(dir_fd: int, name: str) -> Announcement | str:
    try:
        fd = os.open(name, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC, dir_fd=dir_fd)
    except OSError as e:
        return f"cannot open it: {e.strerror or e}"
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            return "not a regular file"
        if st.st_size > MAX_RECORD_BYTES:
            return f"{st.st_size} bytes: too large for a record"
        raw = os.read(fd, MAX_RECORD_BYTES + 1)
    except OSError as e:
        return f"cannot read it: {e.strerror or e}"
    finally:
        os.close(fd)
    try:
        doc = json.loads(raw)
    except (ValueError, UnicodeDecodeError) as e:
        return f"not JSON: {e}"
    if not isinstance(doc, dict):
        return "not a JSON object"
    if doc.get("format") != FORMAT:
        return f"format {doc.get('format')!r}, not {FORMAT}"
    return _announcement(doc, name)


def _announcement(doc: dict[str, object], name: str) -> Announcement | str:
    pid, address, started = doc.get("pid"), doc.get("address"), doc.get("started_unix_ns")
    strings = {key: doc.get(key, "") for key in ("go_version", "helper", "executable")}
    if not _is_int(pid) or not _is_int(started) or not isinstance(address, str):
        return "pid, address or started_unix_ns missing or of the wrong type"
    if name != f"{pid}{SUFFIX}":
        return f"it names pid {pid}, not the one in its file name"
    if not all(isinstance(v, str) for v in strings.values()):
        return "go_version, helper or executable is not a string"
    try:
        parse_address(address)
    except ValueError as e:
        return f"bad address: {e}"
    return Announcement(
        pid=pid,
        address=address,
        go_version=str(strings["go_version"]),
        helper=str(strings["helper"]),
        executable=str(strings["executable"]),
        started_unix_ns=started,
    )


def _is_int(value: object) -> TypeGuard[int]:
    return isinstance(value, int) and not isinstance(value, bool) and value > 0


def _stale_reason(rec: Announcement) -> str | None:
    try:
        created = psutil.Process(rec.pid).create_time()
    except psutil.NoSuchProcess:
        return f"stale: no process {rec.pid}"
    except (psutil.AccessDenied, OSError):
        created = None
    if created is not None and created > rec.started_unix_ns / 1e9 + REUSE_SLACK_S:
        return f"stale: pid {rec.pid} was reused by a process started after the record"
    addr = parse_address(rec.address)
    if addr.family == "unix":
        try:
            st = os.stat(addr.path)
        except (FileNotFoundError, NotADirectoryError):
            return f"stale: its socket {addr.path} is gone"
        except OSError:
            return None  # cannot look: believe the record
        if not stat.S_ISSOCK(st.st_mode):
            return f"stale: {addr.path} is not a socket"
    return None
