"""Writes the compiled core's header of shared constants
(_ccore/common/generated.h) from their Python source of truth, so that the
C names them as the Python twin does and the two cannot drift: the event
codes (the spec tables), the event model's statuses and states
(model/events.py, modern/state.py), the legacy path's builtin strings
(legacy/fast.py) and the span model's numbers and columns (spans/model.py,
spans/batch.py). A test compares the checked-in header with this module's
output.

Regenerate with ``python -m livetrace._trace.spec.cheader > livetrace/_ccore/common/generated.h``.
"""

from __future__ import annotations

import re
from array import array
from collections.abc import Sequence
from enum import IntEnum

from livetrace._trace.legacy import fast
from livetrace._trace.model import events
from livetrace._trace.modern import state
from livetrace._trace.spans import batch as span_batch
from livetrace._trace.spans import model as span_model
from livetrace._trace.spec import legacy, modern
from livetrace._trace.version import GOTRACE, LEGACY_FORMATS

_WORD = re.compile(r"(?<=[a-z0-9])(?=[A-Z])|(?<=[A-Z])(?=[A-Z][a-z])")


def c_name(name: str) -> str:
    """A spec name as a C constant's tail: "GoSyscallEnd" -> "GO_SYSCALL_END",
    "CPUSample" -> "CPU_SAMPLE", "STWBegin" -> "STW_BEGIN"."""
    return _WORD.sub("_", name).upper()


def _defines(rows: Sequence[tuple[str, int | str]], comment: str) -> list[str]:
    width = max(len(name) for name, _ in rows)
    return [f"/* {comment} */", *(f"#define {name:<{width}} {value}" for name, value in rows), ""]


def _enum(prefix: str, members: type[IntEnum], count: str) -> list[tuple[str, int | str]]:
    """An enum's members as prefix + name, then their count."""
    return [*((f"{prefix}{m.name}", m.value) for m in members), (count, len(members))]


def _numbered(prefix: str, names: Sequence[str], count: str) -> list[tuple[str, int | str]]:
    """Each name's index, as prefix + its C name, then their count."""
    return [*((f"{prefix}{c_name(n)}", i) for i, n in enumerate(names)), (count, len(names))]


def _init(values: Sequence[str]) -> str:
    """A C array initializer."""
    return "{" + ", ".join(values) + "}"


def _quoted(names: Sequence[str]) -> list[str]:
    return [f'"{n}"' for n in names]


def _model() -> list[str]:
    """The event model's values both the engine and the legacy conversion
    write, and the names the messages and lines give them."""
    go_state = _enum("GS_", events.GoState, "GS_COUNT")
    proc_state = _enum("PS_", events.ProcState, "PS_COUNT")
    return [
        *_defines([("NO_TASK", f"{events.NO_TASK:#x}ULL")], "the task id that means none: model.events.NO_TASK"),
        *_defines(
            _numbered("GO_", state.GO_STATUS_NAMES, "GO_STATUS_COUNT"),
            "goroutine statuses on the wire (GoStatus events): modern.state.GO_STATUS_NAMES",
        ),
        *_defines(
            _numbered("PROC_", state.PROC_STATUS_NAMES, "PROC_STATUS_COUNT"),
            "proc statuses on the wire (ProcStatus events): modern.state.PROC_STATUS_NAMES",
        ),
        *_defines(go_state, "goroutine states: model.events.GoState"),
        *_defines(proc_state, "proc states: model.events.ProcState"),
        *_defines(
            [
                ("GO_STATUS_STATE_INIT", _init([f"GS_{s.name}" for s in events.GO_STATUS_STATE])),
                ("PROC_STATUS_STATE_INIT", _init([f"PS_{s.name}" for s in events.PROC_STATUS_STATE])),
                ("GO_STATUS_NAMES_INIT", _init(_quoted(state.GO_STATUS_NAMES))),
                ("PROC_STATUS_NAMES_INIT", _init(_quoted(state.PROC_STATUS_NAMES))),
                ("GS_NAMES_INIT", _init(_quoted(events.GO_STATE_NAMES))),
                ("PS_NAMES_INIT", _init(_quoted(events.PROC_STATE_NAMES))),
            ],
            "each status's state, and the names of each (model.events, modern.state): the tables' initializers",
        ),
    ]


def _builtin() -> list[str]:
    """The places of the strings the legacy conversion adds, in
    legacy.fast.BUILTIN's order: each after the legacy event whose reason it
    is, then the stop-the-world reasons."""
    rows: list[tuple[str, int | str]] = [
        (f"B_{c_name(legacy.SPECS[code].name)}", k) for k, code in enumerate(fast.BUILTIN_EVENTS)
    ]
    rows += [("B_STW0", len(fast.BUILTIN_EVENTS)), ("B_COUNT", len(fast.BUILTIN))]
    return _defines(rows, "the legacy conversion's builtin strings: legacy.fast.BUILTIN_EVENTS, then STW_REASONS")


def _spans() -> list[str]:
    """The span model's numbers, and the SpanBatch columns' order and widths."""
    names = span_batch.COLUMN_NAMES
    return [
        *_defines(_enum("K_", span_model.SpanKind, "N_SPAN_KINDS"), "span kinds: spans.model.SpanKind"),
        *_defines(
            [(f"RES_{k.upper()}", i) for i, k in enumerate(span_model.RESOURCE_KINDS)],
            "a span's resource kind: spans.model.RESOURCE_KINDS",
        ),
        *_defines(
            [("CLIPPED_START", span_model.SPAN_CLIPPED_START), ("CLIPPED_END", span_model.SPAN_CLIPPED_END)],
            "SpanBatch.flags bits: spans.model.SPAN_CLIPPED_*",
        ),
        *_defines(
            [(f"FOLLOW_{n}", int(f)) for n, f in span_model.Follow.__members__.items()],
            "what a span builder follows beside the ranges: spans.model.Follow",
        ),
        *_defines(
            [
                *((f"SPAN_COL_{n.upper()}", i) for i, n in enumerate(names)),
                ("SPAN_NCOLS", len(names)),
                ("SPAN_COL_WIDTHS", _init([str(array(t).itemsize) for _, t in span_batch.COLUMNS])),
            ],
            "a SpanBatch's columns, in spans.batch.COLUMNS order, and each one's item size in bytes",
        ),
    ]


def header() -> str:
    """The text of generated.h."""
    mod = [(f"EV_{c_name(s.name)}", s.code) for s in modern.SPECS if s is not None]
    leg = [(f"LEV_{c_name(s.name)}", code) for code, s in enumerate(legacy.SPECS)]
    lines = [
        "/* The constants the compiled core shares with Python (event codes, the",
        " * event model's values, the legacy builtin strings, the span columns):",
        " * generated by livetrace/_trace/spec/cheader.py from their Python source. Do not edit;",
        " * regenerate with python -m livetrace._trace.spec.cheader > livetrace/_ccore/common/generated.h */",
        "",
        "#ifndef LIVETRACE_GENERATED_H",
        "#define LIVETRACE_GENERATED_H",
        "",
        *_defines(mod, "modern (Go 1.22+) event types: spec.modern.SPECS"),
        *_defines(
            [("EV_MAX_CODE", max(code for _, code in mod)), ("SYNC_CODE", events.SYNC_CODE)],
            "the highest type code of any version; the code of the Sync events the reader makes itself",
        ),
        *_defines([*leg, ("LEV_COUNT", len(legacy.SPECS))], "legacy (Go 1.5 to 1.21) event types: spec.legacy.SPECS"),
        *_defines(
            [(f"LEGACY_GO1_{v.minor}", v.legacy_number) for v in LEGACY_FORMATS if v is not GOTRACE]
            + [("LEGACY_GOTRACE", GOTRACE.legacy_number)],
            "legacy format versions, as 1000 * major + minor: version.LEGACY_FORMATS",
        ),
        *_defines(
            [
                ("TIMER_P", legacy.TIMER_P),
                ("NETPOLL_P", legacy.NETPOLL_P),
                ("SYSCALL_P", legacy.SYSCALL_P),
                ("GC_P", legacy.GC_P),
                ("PROFILE_P", legacy.PROFILE_P),
            ],
            "the pseudo-Ps Go's old parser puts some legacy events on",
        ),
        *_model(),
        *_builtin(),
        *_spans(),
        "#endif",
    ]
    names = [line.split()[1] for line in lines if line.startswith("#define ")]
    assert len(set(names)) == len(names), "two Python names make the same C name"
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    print(header(), end="")
