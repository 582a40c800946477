"""Live tracing for running Go processes.

The Go helper streams a service's execution trace over a socket;
:func:`connect` starts a session with it and :func:`record` writes the trace
to a file that ``go tool trace`` opens. Offline, :func:`decode` reads a
trace file of any Go version, :func:`decode_spans` its spans (how long
goroutines ran, waited to run, blocked, sat in system calls; GC,
stop-the-world, mark assist, region and task ranges), and
:func:`open_decoder` gives a sans-IO decoder for any format. docs/reference.md lists what each yields.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

# The errors, Notice and the version cost next to nothing; the rest is
# imported on first use (PEP 562), so that ``import livetrace`` and the
# command line do not pay for trio, httpx and every decoder at start-up.
from livetrace._errors import (
    AlreadyTracingError,
    AmbiguousProcessError,
    AttachError,
    AuthenticationError,
    BuildInfoError,
    BuildInfoTooLargeError,
    BusyError,
    ConnectError,
    ConnectionLostError,
    CorruptBuildInfoError,
    HTTPAuthError,
    HTTPRedirectError,
    HTTPTLSError,
    LegacyTraceRunningError,
    LimitExceededError,
    LivetraceError,
    NoSuchProcessError,
    NotAttachableError,
    NotELFError,
    NotGoBinaryError,
    NotGoProcessError,
    NotPprofEndpointError,
    OutputPathError,
    OutputTamperedError,
    PeerCredentialsError,
    PeerTimeoutError,
    PprofEndpointError,
    ProtocolError,
    ProtocolVersionError,
    RefusedError,
    TLSVerificationError,
    TraceFormatError,
    TruncatedTraceError,
    UnreadableBinaryError,
    UnsupportedTraceVersionError,
)
from livetrace._notice import Notice
from livetrace._version import __version__

if TYPE_CHECKING:
    from livetrace._files import decode, decode_batches, decode_span_batches, decode_spans
    from livetrace._flight.dump import Dump, Firing
    from livetrace._flight.recorder import FlightRecorder, FlightState
    from livetrace._flight.triggers import Trigger, TriggerError, parse_trigger
    from livetrace._protocol.address import Address, parse_address
    from livetrace._protocol.frames import Chunk, End, Gap, SegmentEnd, SessionInfo, TraceGap, WindowEnd, WindowGap
    from livetrace._session.recording import Recorder, Recording, record
    from livetrace._session.session import Counters, Limits, Session, connect
    from livetrace._session.subscribers import SubscriberGap, Subscription
    from livetrace._trace.accel import implementation
    from livetrace._trace.decoder import TraceDecoder, open_decoder
    from livetrace._trace.legacy.convert import legacy_events
    from livetrace._trace.legacy.live import Provisional, SegmentGap, SymbolsResolved
    from livetrace._trace.legacy.read import LegacyDecoder
    from livetrace._trace.legacy.trace import LegacyTrace
    from livetrace._trace.model.batch import EventBatch
    from livetrace._trace.model.events import (
        ClockSnapshot,
        Event,
        GoState,
        Kind,
        ProcState,
        Resource,
        StackFrame,
        StateTransition,
    )
    from livetrace._trace.model.tables import Tables
    from livetrace._trace.modern.decoder import ModernDecoder
    from livetrace._trace.select.filter import Filter
    from livetrace._trace.spans.batch import SpanBatch
    from livetrace._trace.spans.builder import SpanBuilder
    from livetrace._trace.spans.model import Span, SpanKind
    from livetrace._trace.spans.select import select_spans

# Each lazily exported name, and the module it comes from.
_LAZY: dict[str, str] = {
    "decode": "livetrace._files",
    "decode_batches": "livetrace._files",
    "decode_span_batches": "livetrace._files",
    "decode_spans": "livetrace._files",
    "Dump": "livetrace._flight.dump",
    "Firing": "livetrace._flight.dump",
    "FlightRecorder": "livetrace._flight.recorder",
    "FlightState": "livetrace._flight.recorder",
    "Trigger": "livetrace._flight.triggers",
    "TriggerError": "livetrace._flight.triggers",
    "parse_trigger": "livetrace._flight.triggers",
    "Address": "livetrace._protocol.address",
    "parse_address": "livetrace._protocol.address",
    "Chunk": "livetrace._protocol.frames",
    "End": "livetrace._protocol.frames",
    "Gap": "livetrace._protocol.frames",
    "SegmentEnd": "livetrace._protocol.frames",
    "SessionInfo": "livetrace._protocol.frames",
    "WindowEnd": "livetrace._protocol.frames",
    "WindowGap": "livetrace._protocol.frames",
    "TraceGap": "livetrace._protocol.frames",
    "Recorder": "livetrace._session.recording",
    "Recording": "livetrace._session.recording",
    "record": "livetrace._session.recording",
    "Counters": "livetrace._session.session",
    "Limits": "livetrace._session.session",
    "Session": "livetrace._session.session",
    "connect": "livetrace._session.session",
    "SubscriberGap": "livetrace._session.subscribers",
    "Subscription": "livetrace._session.subscribers",
    "implementation": "livetrace._trace.accel",
    "TraceDecoder": "livetrace._trace.decoder",
    "open_decoder": "livetrace._trace.decoder",
    "legacy_events": "livetrace._trace.legacy.convert",
    "Provisional": "livetrace._trace.legacy.live",
    "SegmentGap": "livetrace._trace.legacy.live",
    "SymbolsResolved": "livetrace._trace.legacy.live",
    "LegacyDecoder": "livetrace._trace.legacy.read",
    "LegacyTrace": "livetrace._trace.legacy.trace",
    "EventBatch": "livetrace._trace.model.batch",
    "ClockSnapshot": "livetrace._trace.model.events",
    "Event": "livetrace._trace.model.events",
    "GoState": "livetrace._trace.model.events",
    "Kind": "livetrace._trace.model.events",
    "ProcState": "livetrace._trace.model.events",
    "Resource": "livetrace._trace.model.events",
    "StackFrame": "livetrace._trace.model.events",
    "StateTransition": "livetrace._trace.model.events",
    "Tables": "livetrace._trace.model.tables",
    "ModernDecoder": "livetrace._trace.modern.decoder",
    "Filter": "livetrace._trace.select.filter",
    "SpanBatch": "livetrace._trace.spans.batch",
    "SpanBuilder": "livetrace._trace.spans.builder",
    "Span": "livetrace._trace.spans.model",
    "SpanKind": "livetrace._trace.spans.model",
    "select_spans": "livetrace._trace.spans.select",
}


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value  # later look-ups skip this function
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *_LAZY})


__all__ = [
    "Address",
    "AlreadyTracingError",
    "AmbiguousProcessError",
    "AttachError",
    "AuthenticationError",
    "BuildInfoError",
    "BuildInfoTooLargeError",
    "BusyError",
    "Chunk",
    "ClockSnapshot",
    "ConnectError",
    "ConnectionLostError",
    "CorruptBuildInfoError",
    "Counters",
    "Dump",
    "End",
    "Event",
    "EventBatch",
    "Filter",
    "Firing",
    "FlightRecorder",
    "FlightState",
    "Gap",
    "GoState",
    "HTTPAuthError",
    "HTTPRedirectError",
    "HTTPTLSError",
    "Kind",
    "LegacyDecoder",
    "LegacyTrace",
    "LegacyTraceRunningError",
    "LimitExceededError",
    "Limits",
    "LivetraceError",
    "ModernDecoder",
    "NoSuchProcessError",
    "NotAttachableError",
    "NotELFError",
    "NotGoBinaryError",
    "NotGoProcessError",
    "NotPprofEndpointError",
    "Notice",
    "OutputPathError",
    "OutputTamperedError",
    "PeerCredentialsError",
    "PeerTimeoutError",
    "PprofEndpointError",
    "ProcState",
    "ProtocolError",
    "ProtocolVersionError",
    "Provisional",
    "Recorder",
    "Recording",
    "RefusedError",
    "Resource",
    "SegmentEnd",
    "SegmentGap",
    "Session",
    "SessionInfo",
    "Span",
    "SpanBatch",
    "SpanBuilder",
    "SpanKind",
    "StackFrame",
    "StateTransition",
    "SubscriberGap",
    "Subscription",
    "SymbolsResolved",
    "TLSVerificationError",
    "Tables",
    "TraceDecoder",
    "TraceFormatError",
    "TraceGap",
    "Trigger",
    "TriggerError",
    "TruncatedTraceError",
    "UnreadableBinaryError",
    "UnsupportedTraceVersionError",
    "WindowEnd",
    "WindowGap",
    "__version__",
    "connect",
    "decode",
    "decode_batches",
    "decode_span_batches",
    "decode_spans",
    "implementation",
    "legacy_events",
    "open_decoder",
    "parse_address",
    "parse_trigger",
    "record",
    "select_spans",
]
