"""Where a helper listens: ``unix:/path``, ``tcp:HOST:PORT`` or ``HOST:PORT``."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Address:
    family: str  # "unix" or "tcp"
    path: str = ""
    host: str = ""
    port: int = 0

    def __str__(self) -> str:
        return f"unix:{self.path}" if self.family == "unix" else f"tcp:{self.host}:{self.port}"


def parse_address(text: str) -> Address:
    """Parse an address as the CLI and the Go helper write it."""
    if text.startswith("unix:"):
        path = text[len("unix:") :]
        if not path:
            raise ValueError("empty unix socket path in address 'unix:'")
        return Address("unix", path=path)
    if text.startswith("/"):
        return Address("unix", path=text)
    hostport = text[len("tcp:") :] if text.startswith("tcp:") else text
    host, sep, port = hostport.rpartition(":")
    if not sep or not port.isdigit() or not 0 < int(port) < 65536:
        raise ValueError(f"bad address {text!r}: expected unix:/path, tcp:HOST:PORT or HOST:PORT")
    host = host.strip("[]") or "127.0.0.1"
    return Address("tcp", host=host, port=int(port))
