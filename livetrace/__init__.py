"""Live tracing for running Go processes.

The Go helper streams a service's execution trace over a socket;
:func:`connect` starts a session with it and :func:`record` writes the trace
to a file that ``go tool trace`` opens. Offline, :func:`decode` reads a
trace file of any Go version, :func:`decode_spans` its spans (how long
goroutines ran, waited to run, blocked, sat in system calls; GC,
stop-the-world, mark assist, region and task ranges), and
:func:`open_decoder` gives a sans-IO decoder for any format; :func:`tables`
and :func:`sql` give a trace's events, spans and states as Arrow tables and
a DuckDB connection over them. docs/reference.md lists what each yields.
"""

from __future__ import annotations

import importlib
import warnings
from typing import TYPE_CHECKING, Any

# Eager (see _EAGER below), and its __all__ is its row of the table.
from livetrace import _items

if TYPE_CHECKING:
    # Combined per module, which isort would split where names are aliased.
    # isort: off
    from livetrace._errors import (
        AlreadyTracingError as AlreadyTracingError,
        AmbiguousProcessError as AmbiguousProcessError,
        AttachError as AttachError,
        AuthenticationError as AuthenticationError,
        BuildInfoError as BuildInfoError,
        BuildInfoTooLargeError as BuildInfoTooLargeError,
        BusyError as BusyError,
        ConnectError as ConnectError,
        ConnectionLostError as ConnectionLostError,
        CorruptBuildInfoError as CorruptBuildInfoError,
        HTTPAuthError as HTTPAuthError,
        HTTPRedirectError as HTTPRedirectError,
        HTTPTLSError as HTTPTLSError,
        LegacyTraceRunningError as LegacyTraceRunningError,
        LimitExceededError as LimitExceededError,
        LivetraceError as LivetraceError,
        MissingDependencyError as MissingDependencyError,
        NoSuchProcessError as NoSuchProcessError,
        NotASocketError as NotASocketError,
        NotAttachableError as NotAttachableError,
        NotELFError as NotELFError,
        NotGoBinaryError as NotGoBinaryError,
        NotGoProcessError as NotGoProcessError,
        NotPprofEndpointError as NotPprofEndpointError,
        OutputPathError as OutputPathError,
        OutputTamperedError as OutputTamperedError,
        OutputWriteError as OutputWriteError,
        PeerCredentialsError as PeerCredentialsError,
        PeerTimeoutError as PeerTimeoutError,
        PprofEndpointError as PprofEndpointError,
        ProtocolError as ProtocolError,
        ProtocolVersionError as ProtocolVersionError,
        RefusedError as RefusedError,
        TLSVerificationError as TLSVerificationError,
        TraceFormatError as TraceFormatError,
        TruncatedTraceError as TruncatedTraceError,
        UnreadableBinaryError as UnreadableBinaryError,
        UnsupportedTraceVersionError as UnsupportedTraceVersionError,
    )
    from livetrace._items import (
        Gap as Gap,
        Notice as Notice,
        Provisional as Provisional,
        SegmentEnd as SegmentEnd,
        SegmentGap as SegmentGap,
        SpanMark as SpanMark,
        SubscriberGap as SubscriberGap,
        SymbolsResolved as SymbolsResolved,
        TraceGap as TraceGap,
        WindowEnd as WindowEnd,
        WindowGap as WindowGap,
    )
    from livetrace._version import (
        __version__ as __version__,
    )
    from livetrace._files import (
        decode as decode,
        decode_batches as decode_batches,
        decode_span_batches as decode_span_batches,
        decode_spans as decode_spans,
    )
    from livetrace._flight.capture import (
        Capture as Capture,
        Firing as Firing,
    )
    from livetrace._flight.recorder import (
        FlightRecorder as FlightRecorder,
        FlightState as FlightState,
    )
    from livetrace._flight.triggers import (
        Trigger as Trigger,
        TriggerError as TriggerError,
        parse_trigger as parse_trigger,
    )
    from livetrace._protocol.address import (
        Address as Address,
        parse_address as parse_address,
    )
    from livetrace._protocol.frames import (
        Chunk as Chunk,
        End as End,
        SessionInfo as SessionInfo,
        SessionMode as SessionMode,
    )
    from livetrace._session.connect import (
        connect as connect,
    )
    from livetrace._session.limits import (
        Counters as Counters,
        Limits as Limits,
    )
    from livetrace._session.recording import (
        Recorder as Recorder,
        Recording as Recording,
        record as record,
    )
    from livetrace._session.session import (
        Session as Session,
    )
    from livetrace._session.subscribers import (
        Subscription as Subscription,
    )
    from livetrace._tables.api import (
        iter_tables as iter_tables,
        sql as sql,
        tables as tables,
    )
    from livetrace._trace.accel import (
        implementation as implementation,
    )
    from livetrace._trace.decoder import (
        TraceDecoder as TraceDecoder,
        open_decoder as open_decoder,
    )
    from livetrace._trace.model.batch import (
        EventBatch as EventBatch,
    )
    from livetrace._trace.model.events import (
        ClockSnapshot as ClockSnapshot,
        Event as Event,
        GoState as GoState,
        Kind as Kind,
        ProcState as ProcState,
        Resource as Resource,
        StackFrame as StackFrame,
        StateTransition as StateTransition,
    )
    from livetrace._trace.model.tables import (
        Tables as Tables,
    )
    from livetrace._trace.select.filter import (
        Filter as Filter,
    )
    from livetrace._trace.spans.batch import (
        SpanBatch as SpanBatch,
    )
    from livetrace._trace.spans.builder import (
        SpanBuilder as SpanBuilder,
    )
    from livetrace._trace.spans.model import (
        Follow as Follow,
        Span as Span,
        SpanKind as SpanKind,
        follow_for as follow_for,
    )
    from livetrace._trace.spans.select import (
        select_spans as select_spans,
    )
    # isort: on

# The public API: each name, by the module it comes from. This is the one
# list (the stream's items' row is _items' own __all__): __all__ and the
# lazy table are made from it, and the imports above, for type checkers
# (which do not run code), repeat it (tests/test_exports.py checks that
# they agree). docs/reference.md documents every name.
_PUBLIC: dict[str, tuple[str, ...]] = {
    "livetrace._errors": (
        "AlreadyTracingError",
        "AmbiguousProcessError",
        "AttachError",
        "AuthenticationError",
        "BuildInfoError",
        "BuildInfoTooLargeError",
        "BusyError",
        "ConnectError",
        "ConnectionLostError",
        "CorruptBuildInfoError",
        "HTTPAuthError",
        "HTTPRedirectError",
        "HTTPTLSError",
        "LegacyTraceRunningError",
        "LimitExceededError",
        "LivetraceError",
        "MissingDependencyError",
        "NoSuchProcessError",
        "NotASocketError",
        "NotAttachableError",
        "NotELFError",
        "NotGoBinaryError",
        "NotGoProcessError",
        "NotPprofEndpointError",
        "OutputPathError",
        "OutputTamperedError",
        "OutputWriteError",
        "PeerCredentialsError",
        "PeerTimeoutError",
        "PprofEndpointError",
        "ProtocolError",
        "ProtocolVersionError",
        "RefusedError",
        "TLSVerificationError",
        "TraceFormatError",
        "TruncatedTraceError",
        "UnreadableBinaryError",
        "UnsupportedTraceVersionError",
    ),
    "livetrace._items": tuple(_items.__all__),
    "livetrace._version": ("__version__",),
    "livetrace._files": (
        "decode",
        "decode_batches",
        "decode_span_batches",
        "decode_spans",
    ),
    "livetrace._flight.capture": (
        "Capture",
        "Firing",
    ),
    "livetrace._flight.recorder": (
        "FlightRecorder",
        "FlightState",
    ),
    "livetrace._flight.triggers": (
        "Trigger",
        "TriggerError",
        "parse_trigger",
    ),
    "livetrace._protocol.address": (
        "Address",
        "parse_address",
    ),
    "livetrace._protocol.frames": (
        "Chunk",
        "End",
        "SessionInfo",
        "SessionMode",
    ),
    "livetrace._session.connect": ("connect",),
    "livetrace._session.limits": (
        "Counters",
        "Limits",
    ),
    "livetrace._session.recording": (
        "Recorder",
        "Recording",
        "record",
    ),
    "livetrace._session.session": ("Session",),
    "livetrace._session.subscribers": ("Subscription",),
    "livetrace._tables.api": (
        "iter_tables",
        "sql",
        "tables",
    ),
    "livetrace._trace.accel": ("implementation",),
    "livetrace._trace.decoder": (
        "TraceDecoder",
        "open_decoder",
    ),
    "livetrace._trace.model.batch": ("EventBatch",),
    "livetrace._trace.model.events": (
        "ClockSnapshot",
        "Event",
        "GoState",
        "Kind",
        "ProcState",
        "Resource",
        "StackFrame",
        "StateTransition",
    ),
    "livetrace._trace.model.tables": ("Tables",),
    "livetrace._trace.select.filter": ("Filter",),
    "livetrace._trace.spans.batch": ("SpanBatch",),
    "livetrace._trace.spans.builder": ("SpanBuilder",),
    "livetrace._trace.spans.model": (
        "Follow",
        "Span",
        "SpanKind",
        "follow_for",
    ),
    "livetrace._trace.spans.select": ("select_spans",),
}
# The errors, the stream's items and the version cost next to nothing and
# are imported now; the rest on first use (PEP 562), so that ``import
# livetrace`` and the command line do not pay for trio, httpx and every
# decoder at start-up.
_EAGER = ("livetrace._errors", "livetrace._items", "livetrace._version")
# Names that were public and are not any more, still working: each one's
# module, its name there, and what to use instead.
_DEPRECATED: dict[str, tuple[str, str, str]] = {
    "ModernDecoder": ("livetrace._trace.modern.decoder", "ModernDecoder", "livetrace.open_decoder (any format)"),
    "LegacyDecoder": ("livetrace._trace.legacy.read", "LegacyDecoder", "livetrace.open_decoder (any format)"),
    "LegacyTrace": ("livetrace._trace.legacy.trace", "LegacyTrace", "livetrace.open_decoder (any format)"),
    "legacy_events": ("livetrace._trace.legacy.convert", "legacy_events", "livetrace.open_decoder (any format)"),
    # A flight recorder's file is a capture: "dump" is Go's -d text.
    "Dump": ("livetrace._flight.capture", "Capture", "livetrace.Capture, its new name"),
}

_LAZY = {name: module for module, names in _PUBLIC.items() if module not in _EAGER for name in names}
for _module in _EAGER:
    _loaded = importlib.import_module(_module)
    globals().update({name: getattr(_loaded, name) for name in _PUBLIC[_module]})
del _module, _loaded

__all__ = sorted(name for names in _PUBLIC.values() for name in names)


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None and name in _DEPRECATED:
        module, attribute, instead = _DEPRECATED[name]
        warnings.warn(
            f"livetrace.{name} is deprecated (it is {module}.{attribute}); use {instead}",
            DeprecationWarning,
            stacklevel=2,
        )
        return getattr(importlib.import_module(module), attribute)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value  # later look-ups skip this function
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *_LAZY})
