"""The format tables are the single source of codes, names and versions:
their invariants, the tables derived from them, the version predicates and
the header sniffer. Sans-IO: no Go toolchain."""

from __future__ import annotations

import re
from types import ModuleType

import pytest

from livetrace._errors import (
    TraceFormatError,
    TruncatedTraceError,
    UnsupportedTraceVersionError,
)
from livetrace._trace.legacy.wire import LegacyReader
from livetrace._trace.model import events
from livetrace._trace.model.batch import NARGS, NEXTRA
from livetrace._trace.modern import decoder
from livetrace._trace.modern.decoder import ModernDecoder
from livetrace._trace.modern.gc import RANGE_START
from livetrace._trace.modern.order import Ordering
from livetrace._trace.modern.wire import FrameReader
from livetrace._trace.spec import legacy, modern
from livetrace._trace.spec.kinds import Kind, RangeRole
from livetrace._trace.version import (
    FORMATS,
    GO1_5,
    GO1_11,
    GO1_19,
    GO1_21,
    GO1_22,
    GO1_23,
    GO1_25,
    GO1_26,
    GOTRACE,
    LEGACY_FORMATS,
    MODERN_FORMATS,
    Family,
    TraceVersion,
    header_size,
    sniff,
)

MODERN_ROWS = [s for s in modern.SPECS if s is not None]


def constant_name(name: str) -> str:
    """EV_ and Go's name in capitals, words split: "STWBegin" -> "EV_STW_BEGIN"."""
    words = re.sub(r"(?<=[a-z0-9])(?=[A-Z])|(?<=[A-Z])(?=[A-Z][a-z])", "_", name)
    return "EV_" + words.upper()


def constants(module: ModuleType) -> dict[str, int]:
    return {k: v for k, v in vars(module).items() if k.startswith("EV_") and k != "EV_COUNT"}


# -- the modern table --


def spec_name(code: int) -> str:
    spec = modern.SPECS[code]
    assert spec is not None, code
    return spec.name


def test_one_constant_per_modern_row() -> None:
    assert constants(modern) == {constant_name(s.name): s.code for s in MODERN_ROWS}
    assert all(modern.SPECS[s.code] is s for s in MODERN_ROWS)
    assert len({s.name for s in MODERN_ROWS}) == len(MODERN_ROWS)


def test_modern_rows_are_consistent() -> None:
    structural = {
        "EventBatch",
        "Stacks",
        "Stack",
        "Strings",
        "String",
        "CPUSamples",
        "Frequency",
        "ExperimentalBatch",
        "Sync",
        "ClockSnapshot",
        "EndOfGeneration",
    }
    assert {s.name for s in MODERN_ROWS if s.kind is None} == structural
    for s in MODERN_ROWS:
        if s.kind is None:
            assert not s.extra and s.range_role is None, s.name
            assert not s.event_args or s.name == "ClockSnapshot", s.name  # timed, but no event
        # The event model's columns hold every argument and fact.
        assert len(s.event_args) <= NARGS and len(s.extra) <= NEXTRA, s.name
        # An event's own stack is its wire record's last argument.
        if "stack" in s.args:
            assert s.args[-1] == "stack" and s.event_args[s.stack_arg] == "stack", s.name
        if s.experiment:
            assert s.kind is Kind.EXPERIMENTAL and s.experiment == modern.EXPERIMENT_ALLOC_FREE, s.name
    # The reader makes a CPU sample from the generation's table and fills in
    # a stop-the-world end's kind: their arguments are not the wire's.
    reader_made = {s.name for s in MODERN_ROWS if s.kind is not None and s.event_args != s.args[1:]}
    assert reader_made == {"CPUSample", "STWEnd"}


def test_ranges_pair_up() -> None:
    roles = {Kind.RANGE_BEGIN: RangeRole.BEGIN, Kind.RANGE_ACTIVE: RangeRole.ACTIVE, Kind.RANGE_END: RangeRole.END}
    for s in MODERN_ROWS:
        if s.kind in roles:
            assert s.range_role is roles[s.kind], s.name
        if s.range_role is None:
            assert s.range_other == 0, s.name
            continue
        other = modern.SPECS[s.range_other]
        assert other is not None, s.name
        if s.range_role is RangeRole.BEGIN:
            assert other.range_role is RangeRole.END and other.range_other == s.code, s.name
        else:
            assert other.range_role is RangeRole.BEGIN, s.name
    assert {(spec_name(e), spec_name(b)) for e, b in RANGE_START.items()} == {
        ("STWEnd", "STWBegin"),
        ("GCActive", "GCBegin"),
        ("GCEnd", "GCBegin"),
        ("GCSweepActive", "GCSweepBegin"),
        ("GCSweepEnd", "GCSweepBegin"),
        ("GCMarkAssistActive", "GCMarkAssistBegin"),
        ("GCMarkAssistEnd", "GCMarkAssistBegin"),
        ("GoSyscallEnd", "GoSyscallBegin"),
        ("GoSyscallEndBlocked", "GoSyscallBegin"),
        ("UserRegionEnd", "UserRegionBegin"),
    }


def test_each_format_version_cuts_the_table_at_its_last_code() -> None:
    assert tuple(modern.LAST_CODE) == MODERN_FORMATS
    assert {v: spec_name(c) for v, c in modern.LAST_CODE.items()} == {
        GO1_22: "UserLog",
        GO1_23: "ExperimentalBatch",
        GO1_25: "ClockSnapshot",
        GO1_26: "GoroutineStackFree",
    }
    assert modern.specs_for(TraceVersion.of_runtime("go1.24.11")) == modern.specs_for(GO1_23)
    assert modern.specs_for(TraceVersion.of_runtime("go1.27.3")) == modern.specs_for(GO1_26)


# -- what is derived from it --


def test_the_event_model_tables_are_the_format_notes() -> None:
    """format-modern.md §4.1, and what Go's reader makes of each code."""
    by_kind: dict[Kind, set[int]] = {}
    for code, kind in enumerate(events.KIND_OF_CODE):
        by_kind.setdefault(kind, set()).add(code)
    assert by_kind[Kind.STACK_SAMPLE] == {7}
    assert by_kind[Kind.METRIC] == {9, 37, 38}
    assert by_kind[Kind.LABEL] == {39}
    assert by_kind[Kind.RANGE_BEGIN] == {26, 29, 32, 35}
    assert by_kind[Kind.RANGE_ACTIVE] == {28, 31, 34}
    assert by_kind[Kind.RANGE_END] == {27, 30, 33, 36}
    assert [by_kind[k] for k in (Kind.TASK_BEGIN, Kind.TASK_END, Kind.REGION_BEGIN, Kind.REGION_END, Kind.LOG)] == [
        {40},
        {41},
        {42},
        {43},
        {44},
    ]
    assert by_kind[Kind.STATE_TRANSITION] == {*range(10, 26), 45, 46, 47, 48}
    assert by_kind[Kind.EXPERIMENTAL] == set(range(128, 137))
    assert by_kind[Kind.SYNC] == {events.SYNC_CODE}

    assert {c: n for c, n in enumerate(events.EVENT_NARGS) if n} == {
        7: 1,
        9: 2,
        10: 2,
        12: 3,
        13: 2,
        14: 3,
        15: 1,
        16: 2,
        19: 2,
        20: 2,
        21: 3,
        22: 2,
        25: 3,
        26: 2,
        27: 1,
        28: 1,
        29: 2,
        30: 1,
        31: 1,
        32: 1,
        33: 2,
        34: 1,
        35: 1,
        37: 1,
        38: 1,
        39: 1,
        40: 4,
        41: 2,
        42: 3,
        43: 3,
        44: 4,
        45: 2,
        46: 2,
        47: 3,
        48: 4,
        51: 3,
        128: 3,
        129: 3,
        130: 1,
        131: 2,
        132: 2,
        133: 1,
        134: 2,
        135: 2,
        136: 1,
        255: 1,
    }
    assert {c: n for c, n in enumerate(events.EVENT_NEXTRA) if n} == {12: 1, 13: 1, 25: 1, 48: 1, 41: 2}
    assert {c: i for c, i in enumerate(events.STACK_ARG) if i >= 0} == {
        7: 0,
        9: 1,
        14: 2,
        19: 1,
        20: 1,
        21: 2,
        22: 1,
        26: 1,
        29: 1,
        32: 0,
        35: 0,
        40: 3,
        41: 1,
        42: 2,
        43: 2,
        44: 3,
        47: 2,
        48: 3,
    }
    assert {c: i for c, i in enumerate(events.NEW_STACK_ARG) if i >= 0} == {14: 1, 47: 1}
    assert events.STRING_ARGS == {19: (0,), 20: (0,), 26: (0,), 39: (0,), 40: (2,), 42: (1,), 43: (1,), 44: (1, 2)}
    assert {c: n for c, n in enumerate(decoder._TIMED) if n} == {
        c: len(modern.SPECS[c].args) for c in (*range(9, 49), 51, *range(128, 137))
    }


def test_the_ordering_engine_has_a_rule_for_every_timed_event() -> None:
    """Every code that may stand in an event batch and is an event, and
    nothing else (a clock snapshot there is an error)."""
    want = {s.code for s in MODERN_ROWS if s.timed and s.kind is not None}
    assert set(Ordering().handlers()) == want


def one_event_trace(code: int) -> bytes:
    """A Go 1.26 trace of one generation: its sync batch and one event of
    the given code, every argument 0."""

    def batch(payload: bytes) -> bytes:
        return bytes([modern.EV_EVENT_BATCH, 1, 1, 1, len(payload)]) + payload

    spec = modern.SPECS[code]
    assert spec is not None
    sync = bytes(
        [
            modern.EV_SYNC,
            modern.EV_FREQUENCY,
            0x80,
            0x94,
            0xEB,
            0xDC,
            0x03,  # 1 GHz
            modern.EV_CLOCK_SNAPSHOT,
            0,
            0,
            0,
            0,
        ]
    )
    return (
        GO1_26.header
        + batch(sync)
        + batch(bytes([code]) + bytes(len(spec.args)))
        + bytes([modern.EV_END_OF_GENERATION])
    )


def ordering_outcome(code: int, compiled: bool) -> str:
    try:
        events = ModernDecoder(compiled=compiled).feed(one_event_trace(code))
    except TraceFormatError as e:
        return e.reason
    return " ".join(str(e.code) for e in events)


@pytest.mark.compiled_core
def test_the_compiled_engine_orders_what_the_spec_says() -> None:
    """The compiled twin's dispatch has its own switch: it must know the
    same codes as the Python engine's, which is derived from the spec."""
    unknown = "bad event type found while ordering"
    for s in MODERN_ROWS:
        if s.timed:
            python, compiled = ordering_outcome(s.code, False), ordering_outcome(s.code, True)
            assert python == compiled, s.name
            assert python.startswith(unknown) == (s.kind is None), (s.name, python)


# -- the legacy table --


def test_one_constant_per_legacy_row() -> None:
    # Go's own name for it is GoSysCall.
    names = {s.name: constant_name(s.name) for s in legacy.SPECS} | {"GoSysCall": "EV_GO_SYSCALL"}
    assert constants(legacy) == {names[s.name]: code for code, s in enumerate(legacy.SPECS)}


def test_legacy_rows_are_consistent() -> None:
    for code, s in enumerate(legacy.SPECS):
        assert s.since in LEGACY_FORMATS, s.name
        if code:
            assert legacy.SPECS[code - 1].since <= s.since, s.name  # codes are append-only
        if s.string_arg >= 0:
            assert s.args[s.string_arg].endswith("id") and s.sargs, s.name
    assert {s.name for s in legacy.SPECS if s.string_arg >= 0} == {
        "GoStartLabel",
        "UserTaskCreate",
        "UserRegion",
        "UserLog",
    }


@pytest.mark.parametrize("version", LEGACY_FORMATS, ids=str)
def test_legacy_layouts_follow_the_format_notes(version: TraceVersion) -> None:
    """format-legacy.md §4.1: values per event, its time (and in 1.5/1.6
    sequence) delta included; 0 where the type does not exist."""
    counts, stacks = legacy.layout(version)
    n = 2 if version.has_global_seq else 1  # the deltas
    assert counts[legacy.EV_NONE] == 0 and not any(counts[legacy.EV_COUNT :])
    assert counts[legacy.EV_PROC_STOP] == n
    assert counts[legacy.EV_GO_START] == n + (1 if version in (GOTRACE, GO1_5) else 2)
    assert counts[legacy.EV_GC_SWEEP_DONE] == n + (2 if version.minor >= 9 else 0)
    assert counts[legacy.EV_STW_START] == n + (1 if version.minor >= 10 else 0)
    assert counts[legacy.EV_BATCH] == (3 if version == GO1_5 else 2)
    assert counts[legacy.EV_FUTILE_WAKEUP] == (0 if version == GOTRACE else n)
    assert counts[legacy.EV_USER_LOG] == (n + 3 if version.minor >= 11 else 0)
    assert counts[legacy.EV_CPU_SAMPLE] == (n + 4 if version.minor >= 19 else 0)
    assert stacks[legacy.EV_GO_SYS_BLOCK] == (version == GOTRACE)
    assert stacks[legacy.EV_GC_START] and not stacks[legacy.EV_GO_START]
    # Runtimes that wrote an older format's header read as that format.
    for minor in range(max(version.minor, 5), 22):
        if TraceVersion.of_minor(minor).format == version:
            assert legacy.layout(TraceVersion.of_minor(minor)) == (counts, stacks)


# -- versions --

# Which Go minors each predicate holds for, 1.5 to 1.27 (0: gotrace).
ALL = {0, *range(5, 28)}
PREDICATES = {
    "is_legacy": {0, *range(5, 22)},
    "is_modern": set(range(22, 28)),
    "has_global_seq": {5, 6},
    "has_goroutine_seq": set(range(7, 28)),
    "stacks_are_pcs": {0, 5, 6},
    "has_sweep_stats": set(range(9, 28)),
    "stw_has_kind": set(range(10, 28)),
    "stw_per_p": {0, 5, 6, 7, 8, 9},
    "has_stw_reasons": set(range(21, 28)),
    "has_user_annotations": set(range(11, 28)),
    "has_cpu_samples": set(range(19, 28)),
    "go_converts": set(range(11, 22)),
    "has_experimental_batches": set(range(23, 28)),
    "has_sync_marker": set(range(25, 28)),
    "has_clock_snapshot": set(range(25, 28)),
    "has_end_of_generation": {26, 27},
}
# The format each runtime writes (format-*.md §1/§2).
FORMAT_OF = {
    0: 0,
    5: 5,
    6: 5,
    7: 7,
    8: 8,
    9: 9,
    10: 10,
    **dict.fromkeys(range(11, 19), 11),
    19: 19,
    20: 19,
    21: 21,
    22: 22,
    23: 23,
    24: 23,
    25: 25,
    26: 26,
    27: 26,
}


def version_of(minor: int) -> TraceVersion:
    return GOTRACE if minor == 0 else TraceVersion.of_runtime(f"go1.{minor}.3")


@pytest.mark.parametrize("minor", sorted(ALL), ids=lambda m: f"go1.{m}" if m else "gotrace")
def test_version_predicates(minor: int) -> None:
    v = version_of(minor)
    assert v.minor == minor and v.format.minor == FORMAT_OF[minor]
    assert v.family is (Family.GOTRACE if minor == 0 else Family.LEGACY if minor <= 21 else Family.MODERN)
    assert {name: getattr(v, name) for name in PREDICATES} == {
        name: minor in holds for name, holds in PREDICATES.items()
    }
    # A runtime's version has the predicates of the format it writes.
    assert all(getattr(v, name) == getattr(v.format, name) for name in PREDICATES)


def test_versions_order_and_number_as_go_does() -> None:
    assert sorted(FORMATS) == list(FORMATS)
    assert GOTRACE < GO1_5 < GO1_21 < GO1_22
    assert [v.legacy_number for v in LEGACY_FORMATS] == [1000, 1005, 1007, 1008, 1009, 1010, 1011, 1019, 1021]
    assert TraceVersion.of_runtime("go1.20.14").legacy_number == 1019
    with pytest.raises(ValueError, match="is not a legacy version"):
        _ = GO1_26.legacy_number
    assert [str(v) for v in (GOTRACE, GO1_11, GO1_26)] == ["gotrace", "go1.11", "go1.26"]


@pytest.mark.parametrize(
    ("text", "minor"),
    [
        ("go1.21.3", 21),
        ("go1.22rc1", 22),
        ("go1.19", 19),
        ("devel go1.24-4a2c1f Tue Jan 7 2025", 24),
        ("go1.5", 5),
    ],
)
def test_runtime_versions(text: str, minor: int) -> None:
    assert TraceVersion.of_runtime(text) == TraceVersion.of_minor(minor)


def test_runtime_versions_that_are_none() -> None:
    with pytest.raises(ValueError, match="not a Go version"):
        TraceVersion.of_runtime("unknown")
    with pytest.raises(UnsupportedTraceVersionError, match="no execution tracer"):
        TraceVersion.of_runtime("go1.4.3")


# -- the header --


@pytest.mark.parametrize("version", FORMATS, ids=str)
def test_sniff_reads_every_header(version: TraceVersion) -> None:
    header = version.header
    assert len(header) == header_size(header) == (8 if version == GOTRACE else 16)
    assert sniff(header) == version
    assert sniff(header + b"\x01\x02\x03") == version  # what follows is not its business
    assert header_size(header[:3]) == header_size(header)  # known from the first bytes


def test_sniff_names_what_real_runtimes_write() -> None:
    assert sniff(b"go 1.5 trace\x00\x00\x00\x00") == GO1_5
    assert sniff(b"go 1.19 trace\x00\x00\x00") == GO1_19
    assert sniff(b"go 1.23 trace\x00\x00\x00") == TraceVersion.of_runtime("go1.24.11").format
    assert sniff(b"gotrace\x00\x41\x00") == GOTRACE


@pytest.mark.parametrize(
    ("header", "error", "message"),
    [
        (b"GIF89a this is no trace", TraceFormatError, "bad file format: not a Go execution trace"),
        (b"go 1.21 trace", TraceFormatError, "bad file format"),  # short
        (b"go 1.21 trace   ", TraceFormatError, "bad file format"),  # no NUL padding
        (b"gotrace!go 1.5 t", TraceFormatError, "bad file format"),
        (b"go 1.20 trace\x00\x00\x00", UnsupportedTraceVersionError, r"unsupported trace file version 1.20 \(1020\)"),
        (b"go 1.4 trace\x00\x00\x00\x00", UnsupportedTraceVersionError, r"unsupported trace file version 1.4 \(1004\)"),
        (b"go 1.24 trace\x00\x00\x00", UnsupportedTraceVersionError, "unknown or unsupported trace version go 1.24"),
        (b"go 1.27 trace\x00\x00\x00", UnsupportedTraceVersionError, "unknown or unsupported trace version go 1.27"),
    ],
)
def test_sniff_rejects_bad_headers(header: bytes, error: type[TraceFormatError], message: str) -> None:
    with pytest.raises(error, match=message) as exc:
        sniff(header)
    assert type(exc.value) is error and exc.value.offset == 0


def test_each_reader_sends_the_other_family_on() -> None:
    with pytest.raises(
        UnsupportedTraceVersionError, match=re.escape("this is a go 1.21 trace file, the legacy format")
    ):
        FrameReader().feed(GO1_21.header)
    with pytest.raises(UnsupportedTraceVersionError, match=re.escape("this is a gotrace file, the legacy format")):
        FrameReader().feed(GOTRACE.header + bytes(8))
    with pytest.raises(
        UnsupportedTraceVersionError, match=re.escape("a Go 1.22+ trace: decode it with the modern decoder")
    ):
        LegacyReader().feed(GO1_25.header)
    reader = FrameReader()
    reader.feed(GO1_25.header)
    assert reader.version == GO1_25 and reader.minor == 25
    legacy_reader = LegacyReader()
    legacy_reader.feed(GOTRACE.header)
    assert legacy_reader.version == GOTRACE


def test_a_header_cut_short_is_truncation() -> None:
    r = LegacyReader()
    r.feed(b"gotra")
    with pytest.raises(TruncatedTraceError, match="inside its 8-byte header"):
        r.close()
    f = FrameReader()
    f.feed(b"go 1.26 tr")
    with pytest.raises(TruncatedTraceError, match="inside its 16-byte header"):
        f.close()
