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
from ._modern_decoder import ModernDecoder
from ._protocol import Chunk, End, Gap, SegmentEnd, SessionInfo
from ._recording import Recorder, Recording, record
from ._session import Counters, Session, connect
from ._version import __version__

__all__ = [
    "Address", "AlreadyTracingError", "AuthenticationError", "BusyError", "Chunk", "ClockSnapshot", "ConnectError",
    "ConnectionLostError", "Counters", "End", "Event", "EventBatch", "Gap", "GoState", "Kind", "LivetraceError",
    "ModernDecoder", "ProcState", "ProtocolError", "ProtocolVersionError", "Recorder", "Recording", "RefusedError",
    "Resource", "SegmentEnd", "Session", "SessionInfo", "StackFrame", "StateTransition", "TraceFormatError",
    "TruncatedTraceError", "UnsupportedTraceVersionError", "__version__", "connect", "implementation",
    "parse_address", "record",
]
