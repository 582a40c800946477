"""Where a helper listens: ``unix:/path``, ``tcp:HOST:PORT``, ``tls:HOST:PORT`` or ``HOST:PORT``."""

from __future__ import annotations

from dataclasses import dataclass

from livetrace._protocol.redact import redact

FORMS = "unix:/path, tcp:HOST:PORT, tls:HOST:PORT or HOST:PORT"


@dataclass(frozen=True)
class Address:
    family: str  # "unix", "tcp" or "tls" (TCP with TLS on it)
    path: str = ""
    host: str = ""
    port: int = 0

    def __str__(self) -> str:
        return f"unix:{self.path}" if self.family == "unix" else f"{self.family}:{self.host}:{self.port}"


def parse_address(text: str) -> Address:
    """Parse an address as the CLI and the Go helper write it. A TCP or TLS
    address without a host (``tcp:PORT``, ``tls::PORT``) means loopback."""
    if text.startswith("unix:"):
        path = text[len("unix:") :]
        if not path:
            raise ValueError("empty unix socket path in address 'unix:'")
        return Address("unix", path=path)
    if text.startswith("/"):
        return Address("unix", path=text)
    family, hostport = "tcp", text
    for scheme in ("tcp", "tls"):
        if text.startswith(scheme + ":"):
            family, hostport = scheme, text[len(scheme) + 1 :]
            if ":" not in hostport:
                hostport = ":" + hostport
    host, sep, port = hostport.rpartition(":")
    if not sep or not port.isdigit() or not 0 < int(port) < 65536:
        raise ValueError(f"bad address {redact(repr(text))}: expected {FORMS}")
    host = host.strip("[]") or "127.0.0.1"
    return Address(family, host=host, port=int(port))
