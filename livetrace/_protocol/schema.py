"""The shape of every JSON message a helper sends, declared once, and the
check that holds each received message to it.

A message is a JSON object; each declared field has a type, a range or a
length, and is required or has a default. Fields not declared are kept
aside (newer helpers may add some: readers ignore them). Anything else is a
:class:`ProtocolError` naming the frame and the field, never a
``TypeError`` deep inside whoever uses the value.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from livetrace._errors import ProtocolError
from livetrace._protocol.text import shown, shown_value

U64_MAX = (1 << 64) - 1
I64_MIN, I64_MAX = -(1 << 63), (1 << 63) - 1
MAX_TEXT = 64 << 10  # characters of any string field
_REQUIRED = object()


@dataclass(frozen=True)
class Int:
    lo: int = 0
    hi: int = U64_MAX
    default: Any = _REQUIRED

    def check(self, v: Any) -> str | None:
        # bool is an int to Python, not to JSON; 5.0 is not an integer either.
        if type(v) is not int:
            return f"must be an integer from {self.lo} to {self.hi}"
        if not self.lo <= v <= self.hi:
            return f"is out of range: it must be from {self.lo} to {self.hi}"
        return None


@dataclass(frozen=True)
class Str:
    max_len: int = MAX_TEXT
    default: Any = _REQUIRED

    def check(self, v: Any) -> str | None:
        if type(v) is not str:
            return "must be a string"
        if len(v) > self.max_len:
            return f"is {len(v)} characters long; at most {self.max_len} are accepted"
        return None


@dataclass(frozen=True)
class Bool:
    default: Any = _REQUIRED

    def check(self, v: Any) -> str | None:
        return None if type(v) is bool else "must be true or false"


Field = Int | Str | Bool


def u64(default: Any = _REQUIRED) -> Int:
    return Int(0, U64_MAX, default)


def i64(default: Any = _REQUIRED) -> Int:
    return Int(I64_MIN, I64_MAX, default)


@dataclass(frozen=True)
class Schema:
    frame: str  # the frame's name, for messages
    fields: dict[str, Field]

    def parse(self, body: bytes) -> tuple[dict[str, Any], dict[str, Any]]:
        """The declared fields (defaults filled in) and the undeclared ones."""
        try:
            obj = json.loads(body)
        except (ValueError, RecursionError) as e:  # RecursionError: absurdly nested
            raise ProtocolError(f"malformed {self.frame} frame: not JSON ({shown(str(e), 200)})") from None
        if not isinstance(obj, dict):
            raise ProtocolError(f"malformed {self.frame} frame: expected a JSON object, got {shown_value(obj)}")
        known: dict[str, Any] = {}
        for name, field in self.fields.items():
            if name not in obj:
                if field.default is _REQUIRED:
                    raise ProtocolError(f'malformed {self.frame} frame: field "{name}" is missing')
                known[name] = field.default
                continue
            v = obj[name]
            problem = field.check(v)
            if problem is not None:
                raise ProtocolError(f'malformed {self.frame} frame: field "{name}" {problem}, got {shown_value(v)}')
            known[name] = v
        extra = {k: v for k, v in obj.items() if k not in self.fields}
        return known, extra


HANDSHAKE = Schema(
    "handshake",
    {
        "protocol": Int(1, 0xFFFF),
        "helper": Str(),
        "go_version": Str(),
        "goos": Str(),
        "goarch": Str(),
        "pid": Int(0, I64_MAX),
        "executable": Str(),
        "gomaxprocs": Int(1, I64_MAX),
        "start_unix_ns": i64(),
        "queue_bytes": u64(),
        "session": u64(),
        "advance_ms": Int(0, 999, 0),
        "advance_bytes": Int(0, I64_MAX, 0),
        "segment_ms": Int(0, I64_MAX, 0),
        "joined_running": Bool(False),
        "first_generation": u64(0),
        "first_segment": u64(0),
    },
)

ERROR = Schema(
    "error",
    {
        "code": Str(200),
        "message": Str(),
    },
)

GAP = Schema(
    "gap",
    {
        "first_generation": u64(),
        "last_generation": u64(),
        "chunks": u64(),
        "bytes": u64(),
        "discard_received": Bool(),
    },
)

SEGMENT = Schema(
    "segment",
    {
        "segment": Int(1, U64_MAX),
        "stop_unix_ns": i64(),
    },
)

END = Schema(
    "end",
    {
        "reason": Str(200),
        "complete": Bool(),
        "chunks": u64(),
        "bytes": u64(),
        "dropped_chunks": u64(0),
        "dropped_bytes": u64(0),
        "dropped_generations": u64(0),
        "detail": Str(default=""),
    },
)
