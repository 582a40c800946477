"""The compiled core (built from livetrace/_ccore/, its CPython side in module.c): the
compiled twin of the decoders' hot loops. Results are struct sequences:
tuples whose items also have names."""

from collections.abc import Callable, Iterable, Mapping
from typing import Any, Final, Generic, TypeVar, final

from _typeshed import ReadableBuffer, structseq

# EngineError.kind: what stopped a generation
ERR_FORMAT: Final[int]
ERR_ORDER: Final[int]
ERR_MEMORY: Final[int]
# WireError.kind: why a record could not be read
WIRE_INVALID_TYPE: Final[int]
WIRE_SHORT: Final[int]
WIRE_OVERFLOW: Final[int]
# argument and extra columns per event
NARGS: Final[int]
NEXTRA: Final[int]

class WireError(Exception):
    """A batch payload's record could not be read: ``kind`` (WIRE_*) says
    why, ``code`` is its type and ``offset`` where it starts in the payload."""

    kind: int
    code: int
    offset: int

@final
class WireRecords(structseq[bytes], tuple[bytes, bytes, bytes]):
    """Record i has code ``codes[i]`` and values ``args[starts[i]:starts[i + 1]]``."""

    __match_args__: Final = ("codes", "starts", "args")
    @property
    def codes(self) -> bytes: ...
    @property
    def starts(self) -> bytes:
        """n + 1 native unsigned 32-bit ints."""
    @property
    def args(self) -> bytes:
        """Native unsigned 64-bit ints."""

# A column's type: bytes from Engine.run, memoryviews from Engine.run_all
# (memory written without the GIL, where no bytes object can be made).
_Col = TypeVar("_Col", bytes, memoryview)

@final
class EventColumns(structseq[_Col], tuple[_Col, _Col, _Col, _Col, _Col, _Col, _Col], Generic[_Col]):
    """Events as an EventBatch's columns: native int64 times, threads, procs
    and goroutines, NARGS uint64 args and NEXTRA uint64 extra per event."""

    __match_args__: Final = ("codes", "times", "threads", "procs", "goroutines", "args", "extra")
    @property
    def codes(self) -> _Col: ...
    @property
    def times(self) -> _Col: ...
    @property
    def threads(self) -> _Col: ...
    @property
    def procs(self) -> _Col: ...
    @property
    def goroutines(self) -> _Col: ...
    @property
    def args(self) -> _Col: ...
    @property
    def extra(self) -> _Col: ...

@final
class EngineError(structseq[Any], tuple[int, str, int | None]):
    __match_args__: Final = ("kind", "message", "offset")
    @property
    def kind(self) -> int:
        """ERR_FORMAT, ERR_ORDER or ERR_MEMORY."""
    @property
    def message(self) -> str: ...
    @property
    def offset(self) -> int | None:
        """Byte offset in the stream, when known."""

@final
class EngineBatch(structseq[Any], tuple[int, EventColumns[_Col], list[bytes], bool, EngineError | None], Generic[_Col]):
    __match_args__: Final = ("n_events", "columns", "extra_strings", "done", "error")
    @property
    def n_events(self) -> int: ...
    @property
    def columns(self) -> EventColumns[_Col]: ...
    @property
    def extra_strings(self) -> list[bytes]:
        """The generation's derived strings so far (task types), extra string ids 1, 2, ..."""
    @property
    def done(self) -> bool:
        """Whether the generation is over: decoded, or stopped by ``error``."""
    @property
    def error(self) -> EngineError | None: ...

@final
class FinalSync(structseq[int], tuple[int, int]):
    __match_args__: Final = ("time", "syncs")
    @property
    def time(self) -> int: ...
    @property
    def syncs(self) -> int:
        """The Syncs so far, this one included."""

@final
class Engine:
    """The ordering engine and frontier of the modern decoder."""

    def __init__(self, names: dict[int, str], mask: ReadableBuffer, fresh: bool = False) -> None: ...
    def begin(
        self,
        gen: int,
        ns_per_tick: float,
        start_ticks: int,
        threads: list[tuple[int, list[tuple[bytes, int, int]]]],
        samples: list[tuple[int, int, int, int, int]],
        strings: dict[int, bytes],
        stacks: Iterable[int],
        /,
    ) -> None:
        """threads: (m, [(payload, ticks, payload offset), ...]) in order of
        first appearance; samples: (ns, m, p, g, stack) in time order."""
    def run(self, max_events: int, /) -> EngineBatch[bytes]: ...
    def run_all(self, max_events: int, /) -> list[EngineBatch[memoryview]]:
        """The rest of the generation with the GIL released once, in the
        batches repeated ``run(max_events)`` calls give (the last one done,
        or stopped by its error; it may be empty)."""
    def final_sync(self) -> FinalSync: ...
    def state(self) -> _EngineState:
        """The state carried across generations (between generations)."""
    def set_state(self, state: _EngineState, /) -> None: ...
    def notes(self) -> _EngineNotes:
        """A fresh engine's notes of the generation it ordered (after its last run)."""

# (gs, ps, ms, tasks, gc_seq, gc_state, initial_gen, last, syncs): what
# _trace/modern/carry.py's Carried holds, as plain values. Private: the
# stub's own name (the module has none), which stubtest leaves alone.
_EngineState = tuple[
    list[tuple[int, int, int, int, list[tuple[int, bytes]], list[tuple[int, int]]]],
    list[tuple[int, int, int, int, list[tuple[int, int]]]],
    list[tuple[int, int, int]],
    list[tuple[int, bytes, int]],
    int,
    int,
    int,
    int,
    int,
]

# (notes, skips, threads, created, begun, task_ends): a fresh engine's notes,
# as carry_compiled.py reads them: notes (kind, code, accepted, unk, key,
# args, m, p, g, out) in the order taken, skips (out, count) of the events
# the filter left out, threads (id, unk, own) in order of first appearance;
# u64s: the goroutines and tasks first met where they were made, and
# (out, task, parent, derived string) of every TaskEnd.
_EngineNotes = tuple[
    list[tuple[int, int, int, int, int, tuple[int, int, int, int], int, int, int, int]],
    list[tuple[int, int]],
    list[tuple[int, int, int]],
    bytes,
    bytes,
    bytes,
]

@final
class SpanCore:
    """The span builder's core (the twin of spans.twin.SpanCore): open spans
    across batches; spans out as a list of bytes columns, in
    spans.batch.COLUMNS order (bytearrays when split)."""

    def __init__(self, split: bool = False, follow: int = 7, events: int = 0, /) -> None:
        """``events``: how many it will be fed, if known (room reserved at once, split)."""
    def widen(self, more: int, /) -> int: ...
    def feed(
        self,
        codes: ReadableBuffer,
        times: ReadableBuffer,
        procs: ReadableBuffer,
        goroutines: ReadableBuffer,
        args: ReadableBuffer,
        extra: ReadableBuffer,
        token: int,
        strings: dict[int, bytes],
        extra_strings: list[bytes],
        names: list[bytes],
        /,
    ) -> list[bytes]: ...
    def close(self) -> list[bytes]: ...
    def gap(self) -> None: ...
    def min_tables(self) -> int: ...
    def open_stacks(self) -> list[tuple[int, int]]: ...
    def open_counts(self) -> list[int]: ...
    def export(self) -> tuple[list[tuple[int, ...]], list[tuple[int, ...]], bool, int, int, int]: ...
    def region_meta(self, g: int, /) -> tuple[int, int, list[tuple[int, int, int]]]: ...
    def regions_ended(self, g: int, /) -> tuple[int, int]: ...
    def task_deps(self, task: int, /) -> list[tuple[int, ...]]: ...
    def load(self, opens: list[tuple[int, ...]], origin: int, last: int, seq: int, /) -> None: ...

@final
class ProfileCounts:
    """One pprof-like profile's counting (the twin of _views/pprof.py's
    ProfileBuilder.feed and end_trace): intervals of the span kind ``state``
    per stack key id."""

    def __init__(self, state: int) -> None: ...
    def feed(
        self,
        kinds: ReadableBuffer,
        resource_kinds: ReadableBuffer,
        resource_ids: ReadableBuffer,
        starts: ReadableBuffer,
        ends: ReadableBuffer,
        reasons: ReadableBuffer,
        flags: ReadableBuffer,
        start_stacks: ReadableBuffer,
        start_tables: ReadableBuffer,
        mask: ReadableBuffer,
        key_of: Callable[[int, int], int],
        /,
    ) -> None: ...
    def end_trace(self) -> None: ...
    def totals(self) -> list[tuple[int, int, int, int, int]]:
        """(key id, count, ns, trace, end), in the order first counted;
        trace (end_trace calls before it) and end: when it was last counted."""

@final
class TopSums:
    """top's per-span sums (the twin of _views/top_sums.py's TopSums)."""

    def __init__(self) -> None: ...
    def feed(
        self,
        kinds: ReadableBuffer,
        resource_kinds: ReadableBuffer,
        resource_ids: ReadableBuffer,
        starts: ReadableBuffer,
        ends: ReadableBuffer,
        reasons: ReadableBuffer,
        names: ReadableBuffer,
        start_stacks: ReadableBuffer,
        end_stacks: ReadableBuffer,
        start_tables: ReadableBuffer,
        end_tables: ReadableBuffer,
        ids: ReadableBuffer,
        since: int | None,
        index: int,
        root_of: Callable[[int, int], int],
        /,
    ) -> None: ...
    def name(self, g: int, name: int, index: int, /) -> None: ...
    def name_all(self, created: ReadableBuffer, names: ReadableBuffer, index: int, /) -> None: ...
    def take(
        self,
    ) -> tuple[
        list[tuple[int, int, int, int, int, list[tuple[int, int]]]],
        dict[int, tuple[bytes, int]],
        dict[int, tuple[bytes, int]],
        dict[int, tuple[bytes, int]],
    ]: ...
    def forget(self, old: int, /) -> None: ...

def span_select(
    columns: list[memoryview],
    kind_mask: ReadableBuffer | None,
    goroutines: ReadableBuffer | None,
    procs: ReadableBuffer | None,
    task_mask: ReadableBuffer | None,
    region_mask: ReadableBuffer | None,
    min_duration: int,
    stack_pairs: ReadableBuffer | None,
    /,
) -> bytes:
    """The rows (uint32 indexes) of a SpanBatch's columns the lookup tables keep."""

def span_take(columns: list[memoryview], rows: ReadableBuffer, /) -> list[bytes]: ...

@final
class UserLogsCore:
    """_trace/spans/logs.py's UserLogs state and scan, compiled (CompiledUserLogs wraps it)."""

    seq: int
    def __init__(self, split: bool, max_logs: int, prior: Callable[..., Any]) -> None: ...
    def scan(
        self, codes: ReadableBuffer, goroutines: ReadableBuffer, args: ReadableBuffer, strings: dict[int, bytes], /
    ) -> tuple[dict[int, Any], list[Any]]: ...
    def export(
        self,
    ) -> tuple[dict[int, Any], dict[int, Any], int, set[int], dict[int, Any], dict[int, list[int]], dict[int, Any]]: ...
    def set_tasks(self, tasks: dict[int, Any], /) -> None: ...
    def set_regions(self, regions: dict[int, Any], /) -> None: ...
    def clear(self) -> None: ...

def span_task_logs(
    kinds: ReadableBuffer, tasks: ReadableBuffer, task_logs: dict[int, Any], task_kind: int, /
) -> dict[int, tuple[tuple[bytes, bytes], ...]]: ...
def span_join_take_states(
    touches: list[tuple[int, ...]],
    states: dict[int, Any],
    tasks: dict[int, Any],
    task_logs: dict[int, Any],
    ft_task: int,
    end: int,
    /,
) -> list[tuple[tuple[int, ...], Any]]: ...
def span_join_fits(
    touches: list[tuple[int, ...]],
    states: dict[int, Any],
    procs: dict[int, Any],
    gc_open: bool,
    stw_open: bool,
    assists: dict[int, Any],
    state_field: int,
    /,
) -> bool: ...
def init_tables(
    timed: ReadableBuffer, nargs: ReadableBuffer, stack: ReadableBuffer, str0: ReadableBuffer, str1: ReadableBuffer, /
) -> None: ...
def wire_records(payload: ReadableBuffer, table: ReadableBuffer, /) -> WireRecords: ...
def table_strings(payload: ReadableBuffer, strings: dict[int, bytes], max_size: int, /) -> bool:
    """A strings batch into strings, if it is well formed (else nothing added)."""

def table_stacks(
    payload: ReadableBuffer,
    stacks: dict[int, tuple[int, ...]],
    frames: dict[int, tuple[int, int, int]],
    max_frames: int,
    /,
) -> bool:
    """A stacks batch into stacks and frames, if it is well formed (else nothing added)."""

@final
class LegacyStream:
    """A complete Go 1.11-1.21 trace's exact events, converted a batch at a
    time (legacy_stream.c)."""

    def next(self, n: int, /) -> tuple[bytes, bytes, bytes, bytes, bytes, bytes, bytes] | None: ...
    @property
    def held(self) -> int:
        """Bytes held now: the events' records, the conversion's bits and the columns'."""
    @property
    def peak(self) -> int:
        """The most bytes of event records held at once, reading and ordering."""
    @property
    def records(self) -> int:
        """The trace's events (records), as read."""

def legacy_stream(
    data: ReadableBuffer,
    ver: int,
    counts: ReadableBuffer,
    stack_flags: ReadableBuffer,
    mask: ReadableBuffer,
    builtin: ReadableBuffer,
    msg_base: int,
    offset: int,
    syncs: int,
    /,
) -> tuple[LegacyStream, list[tuple[int, bytes]], list[tuple[int, tuple[int, ...]]], int, list[bytes], int] | None: ...
def segment_memory() -> None: ...
def legacy_dump(
    data: ReadableBuffer,
    ver: int,
    counts: ReadableBuffer,
    stack_flags: ReadableBuffer,
    labels: tuple[tuple[bytes, tuple[bytes, ...], tuple[bytes, ...], int], ...],
    stw: tuple[bytes, ...],
    write: Callable[[bytes], object],
    /,
) -> bool: ...
def jsonl(
    codes: ReadableBuffer,
    times: ReadableBuffer,
    threads: ReadableBuffer,
    procs: ReadableBuffer,
    goroutines: ReadableBuffer,
    args: ReadableBuffer,
    extra: ReadableBuffer,
    wall_base: int | None,
    strings: dict[int, bytes],
    stacks: dict[int, bytes],
    miss: Callable[[str, int], bytes],
    other: Callable[[int], str],
    extras: dict[int, bytes] | None = None,
    piece_lines: int = 0,
    /,
) -> list[bytes]: ...
def jsonl_provisional(
    codes: ReadableBuffer,
    times: ReadableBuffer,
    threads: ReadableBuffer,
    procs: ReadableBuffer,
    goroutines: ReadableBuffer,
    args: ReadableBuffer,
    extra: ReadableBuffer,
    wall_base: int | None,
    strings: dict[int, bytes],
    miss: Callable[[str, int], bytes],
    other: Callable[[int], str],
    piece_lines: int = 0,
    /,
) -> list[bytes]: ...
def dump_parsed(
    codes: ReadableBuffer,
    times: ReadableBuffer,
    threads: ReadableBuffer,
    procs: ReadableBuffer,
    goroutines: ReadableBuffer,
    args: ReadableBuffer,
    extra: ReadableBuffer,
    heads: tuple[bytes | None, ...],
    strings: dict[int, bytes],
    stacks: dict[int, bytes],
    extra_strings: dict[int, bytes],
    miss: Callable[[str, int], bytes],
    other: Callable[[int], bytes],
    /,
) -> bytes:
    """`go tool trace -d=parsed` lines of a batch's events (UTF-8, each
    ending in a newline). heads: per code, the text between the event's
    goroutine and its time (None: other(i) makes the whole line).
    miss(kind, id) makes a part the dicts do not have yet ("string",
    "stack", "extra"), which the core caches in the dict of its kind."""

def dump_wire(
    payload: ReadableBuffer,
    codes: ReadableBuffer,
    starts: ReadableBuffer,
    args: ReadableBuffer,
    table: ReadableBuffer,
    names: tuple[tuple[bytes, ...] | None, ...],
    quote: Callable[[bytes], str],
    /,
) -> bytes:
    """`go tool trace -d=wire` lines of a batch payload's records (the
    columns record_columns made), each ending in a newline. names: per
    code, the record's name and " arg=" per argument; quote: Go's
    strconv.Quote, for data that is not ASCII."""

def select_indices(
    codes: ReadableBuffer,
    procs: ReadableBuffer,
    goroutines: ReadableBuffer,
    args: ReadableBuffer,
    kinds: ReadableBuffer | None,
    roles: ReadableBuffer,
    stack_arg: ReadableBuffer,
    goroutine_ids: ReadableBuffer | None,
    proc_ids: ReadableBuffer | None,
    region_ids: ReadableBuffer | None,
    log_ids: ReadableBuffer | None,
    stack_ids: ReadableBuffer | None,
    candidates: ReadableBuffer | None,
    /,
) -> bytes:
    """The indexes of the events a filter keeps, native int64 (select.c)."""

def take_columns(
    indices: ReadableBuffer,
    codes: ReadableBuffer,
    times: ReadableBuffer,
    threads: ReadableBuffer,
    procs: ReadableBuffer,
    goroutines: ReadableBuffer,
    args: ReadableBuffer,
    extra: ReadableBuffer,
    /,
) -> tuple[bytes, bytes, bytes, bytes, bytes, bytes, bytes]:
    """The columns of the events at indices."""

def text_lines(
    codes: ReadableBuffer,
    times: ReadableBuffer,
    threads: ReadableBuffer,
    procs: ReadableBuffer,
    goroutines: ReadableBuffer,
    args: ReadableBuffer,
    extra: ReadableBuffer,
    t0: int,
    wall_base: int | None,
    provisional: bool,
    kind_columns: tuple[bytes, ...],
    quotes: dict[int, bytes],
    frames: dict[int, bytes],
    xquotes: dict[int, bytes],
    miss: Callable[[str, int], bytes],
    other: Callable[[int], bytes],
    /,
) -> bytes:
    """`tail`'s text lines for a batch's events, each ending in a newline (text.c)."""

def span_lines(
    columns: list[memoryview],
    lo: int,
    hi: int,
    json: bool,
    t0: int,
    kinds: tuple[bytes, ...],
    names: dict[int, bytes],
    stacks: dict[int, bytes],
    miss: Callable[[str, int], bytes],
    logs: Mapping[int, object],
    other: Callable[[int], bytes],
    log_json: Callable[[int], bytes] | None = None,
    piece_lines: int = 0,
    /,
) -> list[bytes]:
    """`tail --spans`'s lines (text or JSON) for rows lo to hi of a batch of spans, each ending in a newline,
    in pieces of piece_lines lines (span_lines.c)."""

def handlers() -> dict[int, str]:
    """The ordering engine's dispatch table: code -> handler name."""

@final
class LegacyLiveCore:
    """The provisional path of a live Go 1.11-1.21 trace (legacy_live.c;
    driven by legacy.live_core.CoreProvisional, twin: legacy.live)."""

    def __init__(
        self,
        ver: int,
        counts: ReadableBuffer,
        stack_flags: ReadableBuffer,
        mask: ReadableBuffer,
        builtin: ReadableBuffer,
    ) -> None: ...
    @property
    def held(self) -> int:
        """Events held in the reorder window."""
    def read(
        self, data: ReadableBuffer, /
    ) -> tuple[int, bool, int, list[tuple[int, bytes]], list[tuple[int, bytes]]] | None:
        """A chunk's complete events: (events, timed, ticks, strings, messages), or None (give up)."""
    def drop(self, all: bool, max_held: int, /) -> None: ...
    def convert(
        self, x0: int, y0: int, slope: float, intercept: float, origin: int, /
    ) -> tuple[list[int], list[int]] | None:
        """The pending events into the window: (message indexes, task type string ids) to name, or None."""
    def resolve(self, message_ids: ReadableBuffer, task_type_ids: ReadableBuffer, /) -> None: ...
    def release(
        self, all: bool, window: int, max_held: int, /
    ) -> tuple[tuple[bytes, bytes, bytes, bytes, bytes, bytes, bytes], int]: ...

def table_event_columns(
    batches: Iterable[tuple[ReadableBuffer, ...]],
    kind_of: ReadableBuffer,
    picks: ReadableBuffer,
    outs: tuple[Any, ...],
    /,
) -> tuple[int, int, int, int]:
    """EventBatches' columns (each batch's tuple of them) as the events
    table's, one after another, into outs (writable buffers); the pickers'
    null counts (the twin of _tables/kernels.py's event_columns)."""

def table_lookup(
    ids: ReadableBuffer,
    valid: ReadableBuffer | None,
    offset: int,
    n: int,
    keys: ReadableBuffer,
    values: ReadableBuffer,
    width: int,
    outs: tuple[Any, Any],
    /,
) -> int:
    """Each id's value by key into outs (values, validity); the null count
    (the twin of _tables/kernels.py's lookup)."""

def table_missing(
    ids: ReadableBuffer, valid: ReadableBuffer | None, offset: int, n: int, keys: ReadableBuffer, /
) -> bytes:
    """The distinct ids, valid and not 0, that no key is, in the order they
    first appear, as uint64 bytes (the twin of _tables/kernels.py's missing)."""

def table_wakers(
    ends: ReadableBuffer,
    valid: ReadableBuffer | None,
    offset: int,
    n: int,
    goroutines: ReadableBuffer,
    g_offset: int,
    codes: ReadableBuffer,
    times: ReadableBuffer,
    woken: ReadableBuffer,
    wakers: ReadableBuffer,
    is_wake: ReadableBuffer,
    outs: tuple[Any, Any],
    /,
) -> int | None:
    """Each row's waker (the first wake event at its end) into outs
    (values, validity): the null count, or None where a row's first wake at
    its end woke another goroutine or the times are not in order (the twin
    of _tables/kernels.py's wakers_at_ends)."""

def table_span_partition(batches: Iterable[tuple[ReadableBuffer, ...]], outs: tuple[Any, ...], /) -> tuple[int, int]:
    """SpanBatches' columns as one batch's into outs (writable buffers),
    goroutine states first, then P spans: (states, P spans) (the twin of
    _tables/kernels.py's span_partition)."""

def table_goroutine_seen(
    goroutines: ReadableBuffer,
    starts: ReadableBuffer,
    ends: ReadableBuffer,
    states: ReadableBuffer,
    reasons: ReadableBuffer,
    forever: ReadableBuffer,
    start_stacks: ReadableBuffer,
    start_valid: ReadableBuffer | None,
    end_stacks: ReadableBuffer,
    end_valid: ReadableBuffer | None,
    n: int,
    rootless: ReadableBuffer,
    /,
) -> tuple[bytes, ...]:
    """Per goroutine of goroutine_states rows, when first and last seen and
    its first own stack, as columns and validity bitmaps (the twin of
    _tables/goroutines.py's _seen)."""

def table_unit_sums(
    goroutines: ReadableBuffer,
    starts: ReadableBuffer,
    ends: ReadableBuffer,
    durations: ReadableBuffer,
    stacks: ReadableBuffer,
    states: ReadableBuffer,
    reasons: ReadableBuffer,
    clipped_end: ReadableBuffer,
    profile_of: ReadableBuffer,
    unit_goroutines: ReadableBuffer,
    first_runs: ReadableBuffer,
    stack_valid: ReadableBuffer | None,
    first_run_valid: ReadableBuffer | None,
    n: int,
    nreasons: int,
    /,
) -> tuple[tuple[bytes, ...], tuple[bytes, ...], tuple[bytes, ...], tuple[bytes, ...]]:
    """A unit's sched_units, blocked_units, pprof_units and
    pprof_interval_units rows from its goroutine_states, as columns and
    validity bitmaps, each table's groups sorted by key (the twin of
    _tables/sums.py's unit_sums on pyarrow)."""
