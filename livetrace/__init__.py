"""Live tracing for running Go processes.

The Go helper streams a service's execution trace over a socket;
:func:`connect` starts a session with it and :func:`record` writes the trace
to a file that ``go tool trace`` opens.
"""

from ._accel import implementation
from ._address import Address, parse_address
from ._batch import EventBatch
from ._errors import (
    AlreadyTracingError,
    AuthenticationError,
    BusyError,
    ConnectError,
    ConnectionLostError,
    LivetraceError,
    ProtocolError,
    ProtocolVersionError,
    RefusedError,
    TraceFormatError,
    TruncatedTraceError,
    UnsupportedTraceVersionError,
)
from ._events import ClockSnapshot, Event, GoState, Kind, ProcState, Resource, StackFrame, StateTransition
from ._legacy_decoder import LegacyDecoder, LegacyTrace
from ._legacy_live import Provisional, SegmentGap, SymbolsResolved
from ._legacy_model import legacy_events
from ._modern_decoder import ModernDecoder
from ._protocol import Chunk, End, Gap, SegmentEnd, SessionInfo
from ._recording import Recorder, Recording, record
from ._session import Counters, Session, connect
from ._version import __version__

__all__ = [
    "Address", "AlreadyTracingError", "AuthenticationError", "BusyError", "Chunk", "ClockSnapshot", "ConnectError",
    "ConnectionLostError", "Counters", "End", "Event", "EventBatch", "Gap", "GoState", "Kind", "LegacyDecoder",
    "LegacyTrace", "LivetraceError", "ModernDecoder", "ProcState", "ProtocolError", "ProtocolVersionError",
    "Provisional", "Recorder", "Recording", "RefusedError", "Resource", "SegmentEnd", "SegmentGap", "Session",
    "SessionInfo", "StackFrame", "StateTransition", "SymbolsResolved", "TraceFormatError", "TruncatedTraceError",
    "UnsupportedTraceVersionError", "__version__", "connect", "implementation", "legacy_events", "parse_address",
    "record",
]
