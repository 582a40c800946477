"""Live tracing for running Go processes.

The Go helper streams a service's execution trace over a socket;
:func:`connect` starts a session with it and :func:`record` writes the trace
to a file that ``go tool trace`` opens. Offline, :func:`decode` reads a
trace file of any Go version, :func:`decode_spans` its spans (how long
goroutines ran, waited to run, blocked, sat in system calls; GC,
stop-the-world, mark assist, region and task ranges), and
:func:`open_decoder` gives a sans-IO decoder for any format. docs/reference.md lists what each yields.
"""

from livetrace._errors import (
    AlreadyTracingError,
    AmbiguousProcessError,
    AttachError,
    AuthenticationError,
    BuildInfoError,
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
from livetrace._files import decode, decode_batches, decode_span_batches, decode_spans
from livetrace._flight.dump import Dump, Firing
from livetrace._flight.recorder import FlightRecorder, FlightState
from livetrace._flight.triggers import Trigger, TriggerError, parse_trigger
from livetrace._notice import Notice
from livetrace._protocol.address import Address, parse_address
from livetrace._protocol.frames import Chunk, End, Gap, SegmentEnd, SessionInfo, WindowEnd, WindowGap
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
from livetrace._version import __version__

__all__ = [
    "Address",
    "AlreadyTracingError",
    "AmbiguousProcessError",
    "AttachError",
    "AuthenticationError",
    "BuildInfoError",
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
