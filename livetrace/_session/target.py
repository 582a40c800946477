"""What an address given to ``connect`` (or ``livetrace flight``) names:
a helper's address, a net/http/pprof endpoint (``http://``), or a process
(``pid:N``, an executable's name), resolved here to one of the other two."""

from __future__ import annotations

from dataclasses import dataclass

from livetrace._attach.resolve import is_process_reference, resolve_process
from livetrace._protocol.address import Address
from livetrace._session.pprof_http import is_pprof_address


@dataclass(frozen=True)
class Target:
    """Where a session goes: ``address``, a helper's (parsed or not) or an
    ``http://`` one, and the ``pid`` a helper's unix socket must belong to
    (None: any process of an allowed user)."""

    address: str | Address
    pid: int | None = None

    @property
    def pprof(self) -> bool:
        """Whether the session reads net/http/pprof windows (no helper)."""
        return isinstance(self.address, str) and is_pprof_address(self.address)


async def resolve(address: str | Address, expected_pid: int | None = None) -> Target:
    """The target ``address`` names. A process is resolved to its helper's
    address, or else its pprof endpoint (:class:`AttachError` says why
    neither), and the helper's socket is then held to that process's pid
    (unless ``expected_pid`` names one already), so that a stale announce
    record cannot lead elsewhere. Resolve a process again on each attach:
    it may have restarted."""
    if is_process_reference(address):
        resolved = await resolve_process(address)
        return Target(resolved.address, resolved.pid if expected_pid is None else expected_pid)
    return Target(address, expected_pid)
