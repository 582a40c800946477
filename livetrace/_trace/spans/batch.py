"""Spans in batches stored as columns, like :class:`EventBatch`: Python
:class:`Span` objects are made only for the spans someone indexes or
iterates."""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from typing import Literal, overload

from livetrace._trace.model.events import Resource, StackFrame, stack_frames
from livetrace._trace.model.tables import Tables
from livetrace._trace.spans.model import RESOURCE_KINDS, SPAN_CLIPPED_END, SPAN_CLIPPED_START, Span, SpanKind

# (name, array typecode) of each column, in the order the core returns them.
COLUMNS: tuple[tuple[str, Literal["B", "q", "Q", "I"]], ...] = (
    ("kinds", "B"),  # SpanKind
    ("resource_kinds", "B"),  # index into RESOURCE_KINDS
    ("resource_ids", "q"),
    ("starts", "q"),  # ns
    ("ends", "q"),
    ("start_stacks", "Q"),  # stack ids of the Tables start_tables names
    ("end_stacks", "Q"),
    ("start_tables", "I"),  # keys of SpanBatch.tables
    ("end_tables", "I"),
    ("reasons", "I"),  # indexes into SpanBatch.names
    ("names", "I"),
    ("task_names", "I"),  # the name of the span's task, where known
    ("tasks", "Q"),
    ("flags", "B"),  # SPAN_CLIPPED_START | SPAN_CLIPPED_END
    ("procs", "q"),  # a P span's P, the P a goroutine's running span ran on; -1 none
)
COLUMN_NAMES = tuple(name for name, _ in COLUMNS)
_TYPECODES = tuple(t for _, t in COLUMNS)
NO_COLUMNS = tuple(b"" for _ in COLUMNS)


def _text(b: bytes) -> str:
    return b.decode("utf-8", "surrogateescape")


class SpanBatch(Sequence[Span]):
    """Spans, in the order they ended (those :meth:`SpanBuilder.close` cut
    at the trace's end last).

    Read the columns (memoryviews, one item per span) to avoid making
    objects: ``kinds`` (bytes of :class:`SpanKind`), ``resource_kinds``
    (0 none, 1 goroutine, 2 P), ``resource_ids``, ``starts``, ``ends``
    (ns), ``start_stacks`` and ``end_stacks`` (stack ids of the tables
    ``tables[start_tables[i]]`` and ``tables[end_tables[i]]``: a span may
    start in one generation and end in a later one), ``reasons``, ``names``
    and ``task_names`` (indexes into ``names_table``, 0 the empty string),
    ``tasks`` (task ids, 0 none), ``flags`` and ``procs`` (a P span's P,
    the P a goroutine's running span ran on, -1 for the rest). ``logs`` maps
    the index of a task or region span to its (category, message) pairs.
    ``closed``: these are the spans :meth:`SpanBuilder.close` cut at the
    end (of the trace, or of a legacy segment), not spans that ended.
    """

    __slots__ = ("_cols", "_n", "closed", "logs", "names_table", "tables")

    def __init__(
        self,
        cols: Sequence[bytes],
        tables: Mapping[int, Tables],
        names_table: Sequence[bytes],
        logs: Mapping[int, tuple[tuple[bytes, bytes], ...]] | None = None,
        *,
        closed: bool = False,
    ) -> None:
        if len(cols) != len(COLUMNS):
            raise ValueError(f"{len(cols)} span columns, not {len(COLUMNS)}")
        # map, not a generator: the views are made without a Python step each (15 a batch).
        views: Iterator[memoryview] = map(memoryview, cols)
        self._cols: tuple[memoryview, ...] = tuple(map(memoryview.cast, views, _TYPECODES))
        self._n = len(self._cols[0])
        self.tables = tables
        self.names_table = names_table
        self.logs = logs or {}
        self.closed = closed

    @classmethod
    def empty(cls) -> SpanBatch:
        return cls(NO_COLUMNS, {}, [b""])

    def __len__(self) -> int:
        return self._n

    @overload
    def __getitem__(self, i: int) -> Span: ...
    @overload
    def __getitem__(self, i: slice) -> list[Span]: ...

    def __getitem__(self, i: int | slice) -> Span | list[Span]:
        if isinstance(i, slice):
            return [self[k] for k in range(*i.indices(self._n))]
        if i < 0:
            i += self._n
        if not 0 <= i < self._n:
            raise IndexError("span index out of range")
        return self._make(i)

    def __iter__(self) -> Iterator[Span]:
        return (self._make(i) for i in range(self._n))

    def _frames(self, tables: int, stack: int) -> list[StackFrame] | None:
        t = self.tables.get(tables)
        if not stack or t is None or stack not in t.stacks:
            return None
        return stack_frames(t, stack)

    def _make(self, i: int) -> Span:
        c = self._cols
        names = self.names_table
        logs = self.logs.get(i, ())
        return Span(
            SpanKind(c[0][i]),
            Resource(RESOURCE_KINDS[c[1][i]], c[2][i]),
            c[3][i],
            c[4][i],
            _text(names[c[9][i]]),
            _text(names[c[10][i]]),
            c[12][i],
            self._frames(c[7][i], c[5][i]),
            self._frames(c[8][i], c[6][i]),
            tuple((_text(k), _text(v)) for k, v in logs),
            _text(names[c[11][i]]),
            bool(c[13][i] & SPAN_CLIPPED_START),
            bool(c[13][i] & SPAN_CLIPPED_END),
            c[14][i],
        )

    def columns(self) -> tuple[memoryview, ...]:
        """The columns, in COLUMN_NAMES order."""
        return self._cols

    @property
    def kinds(self) -> memoryview:
        return self._cols[0]

    @property
    def resource_kinds(self) -> memoryview:
        return self._cols[1]

    @property
    def resource_ids(self) -> memoryview:
        return self._cols[2]

    @property
    def starts(self) -> memoryview:
        return self._cols[3]

    @property
    def ends(self) -> memoryview:
        return self._cols[4]

    @property
    def start_stacks(self) -> memoryview:
        return self._cols[5]

    @property
    def end_stacks(self) -> memoryview:
        return self._cols[6]

    @property
    def start_tables(self) -> memoryview:
        return self._cols[7]

    @property
    def end_tables(self) -> memoryview:
        return self._cols[8]

    @property
    def reasons(self) -> memoryview:
        return self._cols[9]

    @property
    def names(self) -> memoryview:
        return self._cols[10]

    @property
    def task_names(self) -> memoryview:
        return self._cols[11]

    @property
    def tasks(self) -> memoryview:
        return self._cols[12]

    @property
    def flags(self) -> memoryview:
        return self._cols[13]

    @property
    def procs(self) -> memoryview:
        return self._cols[14]

    def __repr__(self) -> str:
        return f"<SpanBatch of {self._n} spans>"
