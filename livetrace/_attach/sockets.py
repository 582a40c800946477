"""The TCP ports processes listen on, from /proc: each process's socket
inodes from its /proc/PID/fd, and the kernel's socket tables
(/proc/net/tcp, tcp6) read once for all of them.

psutil's ``Process.net_connections`` reads every table (tcp, tcp6, udp,
udp6) again for each process, and its system-wide ``net_connections``
walks the fds of every process on the host: on a host with tens of
thousands of sockets a table read is a fraction of a second, and a scan
asks for several processes."""

from __future__ import annotations

import os
import socket
import struct
import sys
from collections.abc import Iterable, Iterator

__all__ = ["listening_ports"]

# The tables of this process's network namespace, as psutil reads them.
TABLES = (("/proc/net/tcp", socket.AF_INET), ("/proc/net/tcp6", socket.AF_INET6))
LISTEN = "0A"  # TCP_LISTEN, in the tables' "st" column
SOCKET_LINK = "socket:["


def listening_ports(pids: Iterable[int]) -> dict[int, list[tuple[str, int]]]:
    """For each pid, the (host, port) pairs it listens on over TCP, as they
    can be reached from here (a wildcard address becomes loopback), in the
    tables' order. Empty for a process whose sockets cannot be read
    (another user's, or gone). Blocking."""
    found: dict[int, list[tuple[str, int]]] = {pid: [] for pid in pids}
    owners: dict[str, list[int]] = {}
    for pid in found:
        for inode in _socket_inodes(pid):
            owners.setdefault(inode, []).append(pid)
    if not owners:
        return found  # no table to read
    for path, family in TABLES:
        for host, port, inode in _listeners(path, family):
            for pid in owners.get(inode, ()):
                if (host, port) not in found[pid]:
                    found[pid].append((host, port))
    return found


def _socket_inodes(pid: int) -> set[str]:
    try:
        fds = os.listdir(f"/proc/{pid}/fd")
    except OSError:
        return set()
    inodes = set()
    for fd in fds:
        try:
            link = os.readlink(f"/proc/{pid}/fd/{fd}")
        except OSError:  # closed meanwhile, or the process is gone
            continue
        if link.startswith(SOCKET_LINK) and link.endswith("]"):
            inodes.add(link[len(SOCKET_LINK) : -1])
    return inodes


def _listeners(path: str, family: socket.AddressFamily) -> Iterator[tuple[str, int, str]]:
    """(host, port, inode) of each listening socket in one table; nothing
    from a table that is not there (no IPv6) or a line it cannot read."""
    try:
        with open(path, encoding="ascii", errors="replace") as table:
            next(table, None)  # the heading
            for line in table:
                fields = line.split()
                if len(fields) < 10 or fields[3] != LISTEN:
                    continue
                address = _address(fields[1], family)
                if address is not None:
                    yield (*address, fields[9])
    except OSError:
        return


def _address(text: str, family: socket.AddressFamily) -> tuple[str, int] | None:
    """ "0100007F:1F90" is ("127.0.0.1", 8080): the address is the kernel's
    32-bit words, each in this machine's byte order."""
    hex_ip, _, hex_port = text.partition(":")
    try:
        raw, port = bytes.fromhex(hex_ip), int(hex_port, 16)
        if sys.byteorder == "little":
            raw = struct.pack(f">{len(raw) // 4}I", *struct.unpack(f"<{len(raw) // 4}I", raw))
        host = socket.inet_ntop(family, raw)
    except (ValueError, struct.error):
        return None
    if not port:
        return None
    if host == "0.0.0.0":
        host = "127.0.0.1"
    elif host == "::":
        host = "::1"
    return host, port
