"""The HTTP side of a net/http/pprof session: its address, and what each
answer of ``/debug/pprof/trace`` means.

net/http/pprof answers ``GET /debug/pprof/trace?seconds=W`` by starting the
execution tracer, writing the trace into the response for W seconds and
stopping it; if the tracer is already running it answers 500 "Could not
enable tracing: ...". Every other answer is turned here into one typed
error whose message says what the server did and what to do.
"""

from __future__ import annotations

import urllib.parse
from collections.abc import Mapping
from dataclasses import dataclass

from livetrace._errors import (
    AlreadyTracingError,
    BusyError,
    HTTPAuthError,
    HTTPRedirectError,
    HTTPTLSError,
    LivetraceError,
    NotPprofEndpointError,
    PprofEndpointError,
)
from livetrace._protocol.redact import redact
from livetrace._protocol.text import shown

HELPER = "net/http/pprof"  # what SessionInfo.helper says of a pprof session
DEFAULT_WINDOW = 1.0  # seconds: connect()'s, and tail's
SCHEMES = ("http://", "https://")
PPROF_PATH = "/debug/pprof"
TRACE_PATH = PPROF_PATH + "/trace"
CMDLINE_PATH = PPROF_PATH + "/cmdline"
HTTP_OK = 200
# How much of an error answer's body is read for its message.
ERROR_BODY_BYTES = 4096
ALREADY_TRACING_HINT = (
    "something else holds the execution tracer: the service's livetrace helper (attach to the helper's "
    "address instead) or another /debug/pprof/trace client (try again when it is done)"
)


@dataclass(frozen=True)
class PprofAddress:
    """``http://HOST:PORT`` with an optional path prefix: where the service
    mounts net/http/pprof, ``base + "/debug/pprof/"``."""

    base: str  # scheme, host, port and prefix; no trailing slash

    def __str__(self) -> str:
        """The address as it may be shown: any password redacted."""
        return redact(self.base)

    @property
    def trace_url(self) -> str:
        """What is asked for, credentials and all: never to be shown."""
        return self.base + TRACE_PATH

    @property
    def shown_trace_url(self) -> str:
        return redact(self.trace_url)

    @property
    def cmdline_url(self) -> str:
        return self.base + CMDLINE_PATH


def is_pprof_address(text: str) -> bool:
    """Whether ``text`` is an http:// or https:// address (any case)."""
    return text[:8].lower().startswith(SCHEMES)


def parse_pprof_address(text: str) -> PprofAddress:
    """``http://HOST[:PORT][/PREFIX]``, optionally ending in ``/debug/pprof``
    or one of its pages (``.../debug/pprof/trace`` is taken for the
    prefix before it). https:// raises :class:`HTTPTLSError`."""
    u = urllib.parse.urlsplit(text)
    scheme = u.scheme.lower()
    if scheme == "https":
        text = redact(text)
        raise HTTPTLSError(
            f"{text}: https:// is not supported; net/http/pprof is usually served in plain HTTP on a loopback or "
            "internal port: reach it through a tunnel (ssh -L PORT:HOST:PORT) and give http://127.0.0.1:PORT",
            url=text,
        )
    try:
        port = u.port
    except ValueError:
        port = -1
    if scheme != "http" or not u.hostname or port == -1 or u.query or u.fragment:
        raise ValueError(
            f"bad address {redact(repr(text))}: expected http://HOST:PORT, optionally with the path before "
            "/debug/pprof/"
        )
    path = u.path.rstrip("/")
    if PPROF_PATH in path:
        path = path[: path.index(PPROF_PATH)]
    return PprofAddress(urllib.parse.urlunsplit(("http", u.netloc, path, "", "")))


def refused(addr: PprofAddress, status: int, reason: str, headers: Mapping[str, str], body: bytes) -> LivetraceError:
    """The typed error for an answer other than a trace: ``status`` and
    ``reason`` of the HTTP status line, the headers (lower-case names) and
    the first bytes of the body."""
    url = addr.shown_trace_url
    text = body.decode("utf-8", "replace").strip()
    line = shown(text.splitlines()[0] if text else "", 200)
    said = f"{status} {shown(reason, 60)}".rstrip() + (f" ({line})" if line else "")
    if status == 500 and ("could not enable tracing" in text.lower() or text.startswith("could not trace")):
        return AlreadyTracingError("already-tracing", f"{url} answered {said}: {ALREADY_TRACING_HINT}")
    if status == 503:
        return BusyError("busy", f"{url} answered {said}: the service traces for someone else; try again later")
    if status in (301, 302, 303, 307, 308):
        location = headers.get("location", "")
        return HTTPRedirectError(
            f"{url} answered {said}, a redirect to {shown(location, 200) or '(nowhere)'}: livetrace does not follow "
            "redirects; give the address of the server that serves /debug/pprof/ itself",
            url=url,
            status=status,
            location=location,
        )
    if status in (401, 403):
        return HTTPAuthError(
            f"{url} answered {said}: the endpoint is protected; livetrace sends only credentials given in the "
            "address (http://USER:PASSWORD@HOST:PORT, as HTTP basic auth)",
            url=url,
            status=status,
        )
    if status == 400 and "https server" in text.lower():
        return HTTPTLSError(
            f"{url} answered {said}: that port speaks HTTPS, which livetrace does not; reach plain HTTP "
            "(a tunnel, or the service's internal pprof port)",
            url=url,
            status=status,
        )
    if status == 404 and text.lower().startswith("unknown profile"):
        return PprofEndpointError(
            f"{url} answered {said}: the service serves net/http/pprof's other pages but not its execution "
            "trace (it mounts pprof.Index, which answers for the profiles it knows, without pprof.Trace); "
            'mount it too (mux.HandleFunc("/debug/pprof/trace", pprof.Trace)), or give the service a '
            "livetrace helper",
            url=url,
            status=status,
        )
    if status == 404:
        return NotPprofEndpointError(
            f"not a net/http/pprof endpoint: {url} answered {said}; check the port and any path prefix, "
            'or mount net/http/pprof in the service (import _ "net/http/pprof")',
            url=url,
            status=status,
        )
    return PprofEndpointError(f"{url} answered {said} instead of a trace", url=url, status=status)


def not_a_trace(addr: PprofAddress, content_type: str, first: bytes) -> NotPprofEndpointError:
    """The error for a 200 answer whose body is no Go execution trace."""
    what = shown(content_type, 80) or "no content type"
    start = shown(first[:40].decode("latin-1"), 60)
    return NotPprofEndpointError(
        f"not a net/http/pprof endpoint: {addr.shown_trace_url} answered 200 with {what}, not a Go execution "
        f"trace (it begins {start!r})",
        url=addr.shown_trace_url,
        status=HTTP_OK,
    )
