"""Opening the byte stream to a helper: who is on the other end of a unix
socket (checked before anything is sent), and TLS over TCP."""

from __future__ import annotations

import hashlib
import hmac
import os
import re
import socket
import ssl
import stat
import struct
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

import trio

from livetrace._errors import ConnectError, NotASocketError, PeerCredentialsError, TLSVerificationError
from livetrace._protocol.address import Address

CLOSE_TIMEOUT = 2.0  # for a TLS close_notify to a peer that reads nothing


@dataclass(frozen=True)
class PeerCheck:
    """Who may serve a unix socket: its owner must be us, root, or one of
    ``allow_uids``; with ``pid``, only that process will do (a hook for
    addresses that name the process)."""

    allow_uids: frozenset[int] = frozenset()
    pid: int | None = None


@dataclass(frozen=True)
class TLSOptions:
    """How a ``tls:`` helper's certificate is checked: against the CA (or
    self-signed certificate) in ``ca``, against a SHA-256 ``pin`` of the
    certificate, or both; neither means the system's CAs."""

    ca: Path | None = None
    pin: bytes | None = None  # the certificate's SHA-256


def parse_pin(text: str) -> bytes:
    """``sha256:HEX`` (colons between byte pairs allowed, as openssl prints
    fingerprints) as the 32 bytes of the digest."""
    algo, sep, digest = text.partition(":")
    hexdigits = digest.replace(":", "")
    if algo.lower() != "sha256" or not sep or not re.fullmatch(r"[0-9A-Fa-f]{64}", hexdigits):
        raise ValueError(
            f"bad certificate pin {text!r}: expected sha256: and 64 hex digits, as "
            "`openssl x509 -noout -fingerprint -sha256 -in CERT` prints them"
        )
    return bytes.fromhex(hexdigits)


def pin_text(digest: bytes) -> str:
    return "sha256:" + digest.hex()


def uids(allow: int | Iterable[int] | None) -> frozenset[int]:
    if allow is None:
        return frozenset()
    return frozenset([allow] if isinstance(allow, int) else allow)


async def open_stream(addr: Address, peer: PeerCheck, tls: TLSOptions | None) -> trio.abc.Stream:
    """A connected stream to the helper at addr, its peer checked."""
    if (tls is not None and (tls.ca or tls.pin)) and addr.family != "tls":
        raise ValueError(f"a CA file or certificate pin is for tls: addresses, not {addr}")
    try:
        if addr.family == "unix":
            unix = await trio.open_unix_socket(addr.path)
            try:
                _check_unix_peer(unix.socket, addr, peer)
            except BaseException:
                await trio.aclose_forcefully(unix)
                raise
            return unix
        tcp = await trio.open_tcp_stream(addr.host, addr.port)
    except FileNotFoundError:
        raise ConnectError(f"no socket at {addr.path}: is the service running with LIVETRACE_LISTEN={addr}?") from None
    except PermissionError:
        raise ConnectError(f"permission denied on {addr.path}: the socket is 0600, run as the service's user") from None
    except OSError as e:
        if addr.family == "unix" and (what := _not_a_socket(addr.path)):
            raise NotASocketError(
                f"{addr.path} is {what}, not a socket: this command attaches to a live service (its helper's "
                "unix:/path or HOST:PORT, pid:N, or http://HOST:PORT of its net/http/pprof); a recorded trace is "
                "read by `livetrace decode`, `profile`, `export` or `sql`"
            ) from None
        raise ConnectError(f"cannot connect to {addr}: {e.strerror or e}; is the service listening there?") from None
    if addr.family != "tls":
        return tcp
    return await _tls(tcp, addr, tls or TLSOptions())


def _not_a_socket(path: str) -> str:
    """What is at path where that is no socket (empty: a socket, or nothing
    there): a trace file given where an address goes is the common case."""
    try:
        mode = os.stat(path).st_mode
    except OSError:
        return ""
    if stat.S_ISSOCK(mode):
        return ""
    if stat.S_ISREG(mode):
        return "a file"
    return "a directory" if stat.S_ISDIR(mode) else "a device or a pipe"


def _check_unix_peer(sock: trio.socket.SocketType, addr: Address, peer: PeerCheck) -> None:
    """Refuse a socket served by someone else before the token goes out:
    whoever can create the socket path gets whatever the client sends."""
    option = getattr(socket, "SO_PEERCRED", None)
    if option is None:  # not Linux: no cheap way to ask; the socket's mode still applies
        return
    pid, uid, _gid = struct.unpack("3i", sock.getsockopt(socket.SOL_SOCKET, option, struct.calcsize("3i")))
    if peer.pid is not None and pid != peer.pid:
        raise PeerCredentialsError(
            f"the socket at {addr.path} is served by pid {pid}, not by pid {peer.pid} as expected; nothing was "
            "sent to it",
            uid=uid,
            pid=pid,
        )
    me = os.getuid()
    if uid in (me, 0) or uid in peer.allow_uids:
        return
    raise PeerCredentialsError(
        f"the socket at {addr.path} is served by {_user(uid)} (pid {pid}), not by you ({_user(me)}) or root: it "
        f"may not be the service you mean, so nothing (not even the token) was sent to it; if you trust it, "
        f"allow that user with --allow-uid {uid}",
        uid=uid,
        pid=pid,
    )


def _user(uid: int) -> str:
    try:
        import pwd

        return f"uid {uid} ({pwd.getpwuid(uid).pw_name})"
    except (ImportError, KeyError):
        return f"uid {uid}"


def _context(tls: TLSOptions) -> ssl.SSLContext:
    if tls.ca is not None:
        try:
            ctx = ssl.create_default_context(cafile=str(tls.ca))
        except (OSError, ssl.SSLError) as e:
            raise ConnectError(f"cannot use {tls.ca} as the TLS CA: {e}") from None
    elif tls.pin is not None:
        # The pin alone says who the server is: no CA, no host name to match.
        ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
        ctx.check_hostname = False
        ctx.verify_mode = ssl.CERT_NONE
    else:
        ctx = ssl.create_default_context()
    ctx.minimum_version = ssl.TLSVersion.TLSv1_2
    return ctx


async def _tls(tcp: trio.SocketStream, addr: Address, tls: TLSOptions) -> trio.SSLStream[trio.SocketStream]:
    stream = trio.SSLStream(tcp, _context(tls), server_hostname=addr.host)
    try:
        await stream.do_handshake()
    except trio.BrokenResourceError as e:
        await trio.aclose_forcefully(stream)
        cause = e.__cause__
        if isinstance(cause, ssl.SSLCertVerificationError):
            raise TLSVerificationError(
                f"the TLS certificate of {addr} failed verification: {cause.verify_message}; give the helper's "
                "CA or self-signed certificate with --tls-ca FILE, or pin it with --tls-pin sha256:HEX"
            ) from None
        raise ConnectError(f"TLS handshake with {addr} failed: {cause or e}; is it a tls: listener?") from None
    except BaseException:
        await trio.aclose_forcefully(stream)
        raise
    if tls.pin is not None:
        der = stream.getpeercert(binary_form=True)
        got = hashlib.sha256(der or b"").digest()
        if not hmac.compare_digest(got, tls.pin):
            await trio.aclose_forcefully(stream)
            raise TLSVerificationError(
                f"the TLS certificate of {addr} is {pin_text(got)}, not the pinned {pin_text(tls.pin)}; nothing "
                "was sent to it"
            )
    return stream


async def close(stream: trio.abc.Stream) -> None:
    """Close, without waiting long on a peer that reads nothing (a TLS
    close_notify has to be sent)."""
    with trio.CancelScope(shield=True):
        with trio.move_on_after(CLOSE_TIMEOUT):
            await stream.aclose()
            return
        await trio.aclose_forcefully(stream)
