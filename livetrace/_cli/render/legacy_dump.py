"""``go tool trace -d`` of Go 1.21 for a whole legacy trace, in big pieces:
made in the compiled core where it can (valid traces of Go 1.7 to 1.21),
else by :class:`LegacyDecoder` and :func:`legacy_lines`, its twin and
reference, which also reports every error."""

from __future__ import annotations

from collections.abc import Callable

from livetrace._cli.render.dump import legacy_lines
from livetrace._errors import TraceFormatError
from livetrace._trace.accel import ccore, use_compiled
from livetrace._trace.legacy.read import LegacyDecoder
from livetrace._trace.spec.legacy import SPECS, STW_KINDS_OLD, STW_REASONS_1021, layout
from livetrace._trace.version import HEADER_SIZE, LEGACY_FORMATS, Family, TraceVersion, sniff

# The versions the compiled core reads, orders and checks as the twin does:
# those whose Ps' streams merge under the goroutines' sequence numbers.
COMPILED_VERSIONS = frozenset(v for v in LEGACY_FORMATS if v.family is Family.LEGACY and v.has_goroutine_seq)
LINES_PER_PIECE = 4096

# Per event type, what its line prints: name, argument labels, string labels,
# and the argument that names its first string (-1: none).
_LABELS = tuple(
    (
        s.name.encode(),
        tuple(f" {a}=".encode() for a in s.args),
        tuple(f" {a}=".encode() for a in s.sargs),
        s.string_arg,
    )
    for s in SPECS
)
# A stop-the-world's kind by its number; the first also stands for numbers past the end.
_STW_REASONS = tuple(r.encode() for r in STW_REASONS_1021)
_STW_KINDS = tuple(k.encode() for k in STW_KINDS_OLD)


def legacy_dump(data: bytes, write: Callable[[bytes], object], compiled: bool | None = None) -> None:
    """Every line of the dump of a complete legacy trace, to ``write`` a
    piece (many lines, each ending in a newline) at a time. ``compiled``:
    None uses the compiled core where there is one, True insists, False
    never does. A malformed trace raises :class:`TraceFormatError` before
    anything is written."""
    if use_compiled(compiled) and len(data) >= HEADER_SIZE:
        ver = _version(data)
        if ver is not None and ver in COMPILED_VERSIONS:
            counts, stacks = layout(ver)
            stw = _STW_REASONS if ver.has_stw_reasons else _STW_KINDS
            if ccore.legacy_dump(data, ver.legacy_number, counts, stacks, _LABELS, stw, write):
                return
    decoder = LegacyDecoder()
    decoder.feed(data)
    events = decoder.close().events
    for i in range(0, len(events), LINES_PER_PIECE):
        write(b"".join(line + b"\n" for line in legacy_lines(events[i : i + LINES_PER_PIECE])))


def _version(data: bytes) -> TraceVersion | None:
    try:
        return sniff(data[:HEADER_SIZE])
    except TraceFormatError:  # the twin reports it
        return None
