"""The exceptions livetrace raises; every one says what went wrong and what to do."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from pathlib import Path

    from livetrace._trace.model.events import Event


class LivetraceError(Exception):
    """Base class of every livetrace error."""


class ConnectError(LivetraceError):
    """The helper could not be reached at the given address."""


class PeerCredentialsError(ConnectError):
    """The unix socket is served by a process of another user (or not the
    process expected): nothing, not even the token, was sent to it.
    ``uid`` and ``pid`` are the peer's."""

    def __init__(self, message: str, *, uid: int, pid: int) -> None:
        super().__init__(message)
        self.uid = uid
        self.pid = pid


class NotASocketError(ConnectError):
    """A unix address names something that is no socket (a trace file, a
    directory): it never will be one, as the helper refuses to listen
    there, so it is not worth trying again."""


class TLSVerificationError(ConnectError):
    """The TLS server's certificate failed verification: not signed by the
    given CA, not for that host, or not the pinned one."""


class AttachError(ConnectError):
    """A process reference (``pid:N`` or an executable's name) led to no
    address to attach to; the subclass and the message say why, as
    ``livetrace ps`` would."""


class NoSuchProcessError(AttachError):
    """No running process has that pid, or that executable name."""


class AmbiguousProcessError(AttachError):
    """The name matches several processes; ``matches`` lists them as
    (pid, user, command) and the message does too."""

    def __init__(self, message: str, *, matches: list[tuple[int, str, str]]) -> None:
        super().__init__(message)
        self.matches = matches


class NotGoProcessError(AttachError):
    """The process is not a Go program (or its executable cannot be read to
    tell); ``pid`` is the process, ``reason`` why."""

    def __init__(self, message: str, *, pid: int, reason: str) -> None:
        super().__init__(message)
        self.pid = pid
        self.reason = reason


class NotAttachableError(AttachError):
    """A Go process that offers no way in: no livetrace helper announced
    itself and no HTTP port of it answers /debug/pprof/. ``fix`` is the
    change to the service that would make it attachable."""

    def __init__(self, message: str, *, pid: int, fix: str) -> None:
        super().__init__(message)
        self.pid = pid
        self.fix = fix


class PprofEndpointError(ConnectError):
    """An ``http://`` address did not give an execution trace from
    ``/debug/pprof/trace``. ``url`` is what was asked for, ``status`` the
    HTTP status of the answer (None if there was none)."""

    def __init__(self, message: str, *, url: str, status: int | None = None) -> None:
        super().__init__(message)
        self.url = url
        self.status = status


class NotPprofEndpointError(PprofEndpointError):
    """The server answered, but not as net/http/pprof does: no such path
    (404), or something that is not a Go execution trace."""


class HTTPRedirectError(PprofEndpointError):
    """The server redirected the request (``location``: where to); livetrace
    does not follow redirects: give the address they lead to."""

    def __init__(self, message: str, *, url: str, status: int | None = None, location: str = "") -> None:
        super().__init__(message, url=url, status=status)
        self.location = location


class HTTPAuthError(PprofEndpointError):
    """The endpoint wants credentials (401) or refuses these (403)."""


class HTTPTLSError(PprofEndpointError):
    """TLS: an ``https://`` address (not supported), or an ``http://`` one
    whose server speaks HTTPS."""


class ProtocolError(LivetraceError):
    """The peer sent something that is not the livetrace protocol.

    ``events`` holds the frames decoded before the bad one (good ones: a
    recording still keeps their chunks), when a frame reader raised it."""

    events: list[object]

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.events = []


class LimitExceededError(LivetraceError):
    """The helper sent more than the client agreed to hold (a generation
    past ``max_generation_bytes``); ``limit`` is the cap in bytes."""

    def __init__(self, message: str, *, limit: int) -> None:
        super().__init__(message)
        self.limit = limit


class OutputPathError(LivetraceError):
    """The file a recording should go to cannot be written (missing or
    read-only directory); found before attaching to the service. ``errno``
    is the system's reason where there was one (ENOSPC, EDQUOT: the disk is
    full), None otherwise."""

    def __init__(self, message: str, *, errno: int | None = None) -> None:
        super().__init__(message)
        self.errno = errno


class InputPathError(LivetraceError):
    """The trace file a command should read cannot be opened (missing, a
    directory, unreadable)."""


class AgentConfigError(LivetraceError):
    """An agent's configuration file is wrong: ``problems`` has one line per
    mistake, each naming the key (and the line, where it is known)."""

    def __init__(self, path: Path | str, problems: list[str]) -> None:
        super().__init__(f"{path}: " + "; ".join(problems))
        self.path = path
        self.problems = problems


class MissingDependencyError(LivetraceError):
    """A package an optional part of livetrace needs is not installed (the
    tables and SQL need pyarrow and duckdb: the ``sql`` extra)."""


class OutputTamperedError(LivetraceError):
    """Another user moved or replaced an output file while it was written
    (its temporary file renamed away, or swapped for a link): nothing of
    it is at ``path``, the name it should have had."""

    def __init__(self, message: str, *, path: Path) -> None:
        super().__init__(message)
        self.path = path


class OutputWriteError(LivetraceError):
    """Writing an output file failed part way (a full disk, a quota, an I/O
    error): nothing of it is at ``path``, the name it would have had (a file
    already there is kept), and no partial file is left. ``errno`` says why."""

    def __init__(self, message: str, *, path: Path, errno: int | None = None) -> None:
        super().__init__(message)
        self.path = path
        self.errno = errno


class RefusedError(LivetraceError):
    """The helper refused the session; ``code`` says why."""

    def __init__(self, code: str, message: str) -> None:
        super().__init__(message)
        self.code = code
        self.message = message


class ProtocolVersionError(RefusedError):
    """The two sides speak no common protocol version."""


class AuthenticationError(RefusedError):
    """The service wants a token (its LIVETRACE_TOKEN) and got none or a wrong one."""


class BusyError(RefusedError):
    """The service serves as many consumers as it allows (the message names
    them), or its previous trace is still stopping."""


class LegacyTraceRunningError(BusyError):
    """The service runs Go 1.21 or older, whose trace is only readable
    whole, and a trace without segments is already running for another
    consumer: a consumer cannot start in its middle. The message says how
    long it runs, if known; consumers that all ask for segments
    (``--segment``) can share a legacy trace."""


class AlreadyTracingError(RefusedError):
    """The process is already being traced by something else."""


class ConnectionLostError(LivetraceError):
    """The connection ended before the helper's end frame.

    ``bytes_received`` and ``chunks_received`` count trace data that did
    arrive; ``complete`` is always False: the trace is cut short.
    """

    def __init__(self, message: str, *, bytes_received: int, chunks_received: int) -> None:
        super().__init__(message)
        self.bytes_received = bytes_received
        self.chunks_received = chunks_received
        self.complete = False


class PeerTimeoutError(ConnectionLostError):
    """The helper went silent (nothing, not even a heartbeat, for the idle
    timeout) or did not end the session in time after a stop; what arrived
    is counted as in :class:`ConnectionLostError`."""


_REFUSALS: dict[str, type[RefusedError]] = {
    "version": ProtocolVersionError,
    "unauthorized": AuthenticationError,
    "busy": BusyError,
    "legacy-running": LegacyTraceRunningError,
    "already-tracing": AlreadyTracingError,
}


def refusal(code: str, message: str) -> RefusedError:
    """The typed error for an error frame from the helper."""
    return _REFUSALS.get(code, RefusedError)(code, message)


class TraceFormatError(LivetraceError):
    """The trace bytes are not a valid Go execution trace.

    ``offset`` is the byte offset in the stream where the problem was found
    and ``generation`` the generation being read (None when unknown).
    ``partial`` holds the events decoded before the problem (a list of
    :class:`Event`, in order) when the decoder that raised the error hands
    them over, as ``ModernDecoder`` does; None when it does not.
    """

    def __init__(
        self,
        message: str,
        *,
        offset: int | None = None,
        generation: int | None = None,
        partial: list[Event] | None = None,
    ) -> None:
        where = []
        if offset is not None:
            where.append(f"offset {offset}")
        if generation is not None:
            where.append(f"generation {generation}")
        super().__init__(f"{message} ({', '.join(where)})" if where else message)
        self.reason = message
        self.offset = offset
        self.generation = generation
        self.partial = partial


class UnsupportedTraceVersionError(TraceFormatError):
    """A well-formed header naming a format version this decoder does not read."""


class TruncatedTraceError(TraceFormatError):
    """The stream ended in the middle of a frame or a generation."""


class BuildInfoError(LivetraceError):
    """The Go build information of an executable could not be read.

    ``reason`` names the kind of failure, one per subclass: "unreadable"
    (the file cannot be opened or mapped), "not-elf", "not-go" (an ELF
    without Go build information), "corrupt" (truncated, or an offset,
    length or varint that does not fit) or "too-large" (a count or length
    past livetrace's caps). ``path`` is the file, when one was
    read."""

    reason = "corrupt"

    def __init__(self, message: str, *, path: str | None = None) -> None:
        super().__init__(f"{path}: {message}" if path else message)
        self.path = path


class UnreadableBinaryError(BuildInfoError):
    """The executable cannot be opened or mapped (gone, or not ours to read)."""

    reason = "unreadable"


class NotELFError(BuildInfoError):
    """The file is not an ELF executable (a script, a text file, another format)."""

    reason = "not-elf"


class NotGoBinaryError(BuildInfoError):
    """A well-formed ELF that carries no Go build information."""

    reason = "not-go"


class CorruptBuildInfoError(BuildInfoError):
    """The ELF or its Go build information is truncated or inconsistent."""

    reason = "corrupt"


class BuildInfoTooLargeError(CorruptBuildInfoError):
    """The ELF asks for more reading than livetrace does (more headers, a
    longer section name or module information than any linker writes): it
    is left unread rather than let a file another user runs slow `ps` down."""

    reason = "too-large"
