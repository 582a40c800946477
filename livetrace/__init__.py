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
from ._protocol import Chunk, End, Gap, SessionInfo
from ._recording import Recorder, Recording, record
from ._session import Counters, Session, connect
from ._version import __version__

__all__ = [
    "Address", "AlreadyTracingError", "ClockSnapshot", "Event", "EventBatch", "GoState", "Kind", "ModernDecoder", "ProcState",
    "Resource", "StackFrame", "StateTransition", "AuthenticationError", "BusyError", "Chunk", "ConnectError",
    "ConnectionLostError", "Counters", "End", "Gap", "LivetraceError", "ProtocolError", "ProtocolVersionError",
    "Recorder", "Recording", "RefusedError", "Session", "SessionInfo", "TraceFormatError", "TruncatedTraceError",
    "UnsupportedTraceVersionError", "__version__", "connect", "implementation", "parse_address", "record",
]
