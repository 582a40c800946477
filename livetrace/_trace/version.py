"""Trace format versions: which family a trace is of, which Go wrote it, and
what its format has.

Every rule that depends on the version is a named predicate of
:class:`TraceVersion`, after what the format notes (format-legacy.md,
format-modern.md) say changed when; nothing else compares version numbers.
:func:`sniff` is the one reader of a trace's header, and
:meth:`TraceVersion.of_runtime` judges a runtime's version string.
"""

from __future__ import annotations

import enum
import functools
import re
from dataclasses import dataclass

from livetrace._errors import TraceFormatError, UnsupportedTraceVersionError

HEADER_SIZE = 16  # every numbered header: "go 1.<minor> trace", NUL-padded
GOTRACE_HEADER = b"gotrace\x00"  # the only header without padding to 16 bytes
_NUMBERED = re.compile(rb"go 1\.(\d+) trace\x00+")
_RUNTIME = re.compile(r"go1\.(\d+)")
_LAST_LEGACY = 21  # Go 1.22 rewrote the tracer: generations
_FIRST_TRACED = 5  # Go 1.5 brought the execution tracer


class Family(enum.Enum):
    GOTRACE = "gotrace"  # the pre-release Go 1.5 runtime's streams (header "gotrace\0")
    LEGACY = "legacy"  # Go 1.5 to 1.21: complete only once the trace stops
    MODERN = "modern"  # Go 1.22 and later: self-contained generations


@functools.total_ordering
@dataclass(frozen=True)
class TraceVersion:
    """A trace format version, or the version of a Go runtime (which writes
    the format of the newest version at or before it: Go 1.24 writes 1.23's).

    ``minor`` is Go's minor version, 1.<minor>; gotrace, older than every
    numbered version, is 0. Versions order by it."""

    family: Family
    minor: int

    @staticmethod
    @functools.cache
    def of_minor(minor: int) -> TraceVersion:
        """The version of Go 1.<minor> (0: gotrace)."""
        if minor == 0:
            return GOTRACE
        if minor < _FIRST_TRACED:
            raise ValueError(f"Go 1.{minor} has no execution tracer")
        return TraceVersion(Family.LEGACY if minor <= _LAST_LEGACY else Family.MODERN, minor)

    @staticmethod
    def of_runtime(version: str) -> TraceVersion:
        """The version of a runtime that says it is ``version`` (Go's
        runtime.Version(): "go1.21.3", "devel go1.24-...")."""
        m = _RUNTIME.search(version)
        if m is None:
            raise ValueError(f"not a Go version: {version!r}")
        minor = int(m.group(1))
        if minor < _FIRST_TRACED:
            raise UnsupportedTraceVersionError(f"{version} has no execution tracer (it came with Go 1.5)")
        return TraceVersion.of_minor(minor)

    def __lt__(self, other: object) -> bool:
        if not isinstance(other, TraceVersion):
            return NotImplemented
        return self.minor < other.minor

    def __str__(self) -> str:
        return "gotrace" if self.family is Family.GOTRACE else f"go1.{self.minor}"

    # -- the format --

    @property
    def format(self) -> TraceVersion:
        """The format this version writes: itself for a format version (what
        a header names), the newest format at or before it for a runtime's."""
        return max(v for v in FORMATS if v.family is self.family and v <= self)

    @property
    def is_legacy(self) -> bool:
        """Go 1.21 and older (gotrace too): the trace is whole only at its end."""
        return self.family is not Family.MODERN

    @property
    def is_modern(self) -> bool:
        """Go 1.22 and later: generations, each complete in itself."""
        return self.family is Family.MODERN

    @property
    def header(self) -> bytes:
        """The header a trace of this format starts with."""
        if self.family is Family.GOTRACE:
            return GOTRACE_HEADER
        return f"go 1.{self.format.minor} trace".encode().ljust(HEADER_SIZE, b"\x00")

    @property
    def header_name(self) -> str:
        """The header as text: "gotrace", "go 1.21 trace"."""
        return self.header.rstrip(b"\x00").decode()

    @property
    def legacy_number(self) -> int:
        """The number Go's old parser gives a legacy format: 1000 + minor
        (1005, 1007, ..., 1021; gotrace 1000). The compiled core takes it."""
        if self.is_modern:
            raise ValueError(f"{self} is not a legacy version")
        return 1000 + self.format.minor

    # -- legacy traces (format-legacy.md §2, §4) --

    @property
    def has_global_seq(self) -> bool:
        """1.5/1.6: a global sequence delta precedes every time delta (and a
        batch header carries its base; Frequency and TimerGoroutine an unused
        value). gotrace had none yet; 1.7 dropped it."""
        return self.family is Family.LEGACY and self < GO1_7

    @property
    def has_goroutine_seq(self) -> bool:
        """1.7+: GoStart, GoUnblock and GoSysExit carry the goroutine's
        sequence number, GCStart the GC's; the Ps' streams are merged under
        them."""
        return self >= GO1_7

    @property
    def stacks_are_pcs(self) -> bool:
        """Before 1.7 a stack is bare PCs; from 1.7 on (pc, func, file, line)
        frames naming strings of the trace."""
        return self.is_legacy and self < GO1_7

    @property
    def has_sweep_stats(self) -> bool:
        """1.9+: GCSweepDone carries the bytes swept and reclaimed."""
        return self >= GO1_9

    @property
    def stw_has_kind(self) -> bool:
        """1.10+: a stop-the-world's start says what kind it is."""
        return self >= GO1_10

    @property
    def stw_per_p(self) -> bool:
        """Before 1.10 Go's old parser pairs stop-the-world starts and ends
        per P, from 1.10 on across the trace."""
        return self.is_legacy and self < GO1_10

    @property
    def has_stw_reasons(self) -> bool:
        """1.21+: a stop-the-world's kind is one of the runtime's reasons
        (1.10 to 1.20 knew two kinds: mark and sweep termination)."""
        return self >= GO1_21

    @property
    def has_user_annotations(self) -> bool:
        """1.11+: user tasks, regions and logs."""
        return self >= GO1_11

    @property
    def has_cpu_samples(self) -> bool:
        """1.19+: CPU profile samples in the trace."""
        return self >= GO1_19

    @property
    def go_converts(self) -> bool:
        """Go 1.23+'s reader converts it to the modern model (1.11 to 1.21),
        and so does livetrace's compiled legacy path."""
        return self.family is Family.LEGACY and self >= GO1_11

    # -- modern traces (format-modern.md §3, §4.3, §5) --

    @property
    def has_experimental_batches(self) -> bool:
        """1.23+: batches of experimental events between the event batches."""
        return self.is_modern and self >= GO1_23

    @property
    def has_sync_marker(self) -> bool:
        """1.25+: a generation's sync batch begins with a Sync record; before,
        it is a lone Frequency record."""
        return self.is_modern and self >= GO1_25

    @property
    def has_clock_snapshot(self) -> bool:
        """1.25+: every generation's sync batch has a clock snapshot (trace
        time, monotonic and wall clock at once)."""
        return self.is_modern and self >= GO1_25

    @property
    def has_end_of_generation(self) -> bool:
        """1.26+: a lone EndOfGeneration byte ends every generation; before,
        a generation ends when the next one (or the stream) begins."""
        return self.is_modern and self >= GO1_26


GOTRACE = TraceVersion(Family.GOTRACE, 0)
GO1_5 = TraceVersion(Family.LEGACY, 5)
GO1_7 = TraceVersion(Family.LEGACY, 7)
GO1_8 = TraceVersion(Family.LEGACY, 8)
GO1_9 = TraceVersion(Family.LEGACY, 9)
GO1_10 = TraceVersion(Family.LEGACY, 10)
GO1_11 = TraceVersion(Family.LEGACY, 11)
GO1_19 = TraceVersion(Family.LEGACY, 19)
GO1_21 = TraceVersion(Family.LEGACY, 21)
GO1_22 = TraceVersion(Family.MODERN, 22)
GO1_23 = TraceVersion(Family.MODERN, 23)
GO1_25 = TraceVersion(Family.MODERN, 25)
GO1_26 = TraceVersion(Family.MODERN, 26)

# Every format a header can name and this package reads.
LEGACY_FORMATS = (GOTRACE, GO1_5, GO1_7, GO1_8, GO1_9, GO1_10, GO1_11, GO1_19, GO1_21)
MODERN_FORMATS = (GO1_22, GO1_23, GO1_25, GO1_26)
FORMATS = LEGACY_FORMATS + MODERN_FORMATS


def header_size(head: bytes) -> int:
    """How long the header is of a stream that starts with head (as many of
    its first bytes as have arrived): 8 bytes for gotrace, else 16."""
    n = min(len(head), len(GOTRACE_HEADER))
    # "go" also begins every numbered header.
    return len(GOTRACE_HEADER) if n > 2 and head[:n] == GOTRACE_HEADER[:n] else HEADER_SIZE


def sniff(header: bytes) -> TraceVersion:
    """The format version a trace's header names (given its first 16 bytes,
    or 8 for gotrace; bytes after the header are ignored). A header that is
    no trace's raises :class:`TraceFormatError`, one of a version this
    package does not read :class:`UnsupportedTraceVersionError`."""
    if header.startswith(GOTRACE_HEADER):
        return GOTRACE
    m = _NUMBERED.fullmatch(header[:HEADER_SIZE])
    if m is None or len(header) < HEADER_SIZE:
        raise TraceFormatError("bad file format: not a Go execution trace?", offset=0)
    minor = int(m.group(1))
    v = TraceVersion(Family.LEGACY if minor <= _LAST_LEGACY else Family.MODERN, minor)
    if v not in FORMATS:
        if v.is_legacy:
            raise UnsupportedTraceVersionError(f"unsupported trace file version 1.{minor} ({1000 + minor})", offset=0)
        raise UnsupportedTraceVersionError(f"unknown or unsupported trace version go 1.{minor}", offset=0)
    return v
