"""Triggers: what makes the flight recorder write a capture.

A trigger is plain data over the span layer and the :class:`Filter`: a
span trigger is a filter of spans (a kind, a name, a least duration) and,
for a blocked span, its reasons, an event trigger a filter of events (log
messages, heap metrics), each run in the session's pipeline like any
subscriber's; the RSS trigger is polled instead. A span trigger's reasons,
a log trigger's pattern, and the choice of what fired it
(:meth:`Trigger.fired`, :meth:`Trigger.fired_event`) read the columns: no
Python object but the one span or event that fired. Any Python
callable over spans or events is a trigger too (:meth:`Trigger.on_spans`,
:meth:`Trigger.on_events`).

The short syntax (docs/flight.md has the table)::

    gc>50ms  stw>10ms  runnable>20ms  syscall>100ms  mark-assist>5ms
    blocked>1s  blocked[chan]>1s  blocked["chan receive"]>1s
    region:checkout>200ms  task:NAME>D   (NAME: a glob, quoted if it has spaces)
    log~"timeout"                        (a regular expression searched in each log message)
    rss>2GiB                             (sizes: B, KiB, MiB, GiB, TiB, kB, MB, GB, TB)
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Literal

from livetrace._trace.model.batch import NARGS, EventBatch
from livetrace._trace.model.events import Event
from livetrace._trace.select.filter import Filter
from livetrace._trace.spans.batch import SpanBatch
from livetrace._trace.spans.model import SPAN_KIND_NAMES, Span, SpanKind
from livetrace._trace.spec.kinds import Kind

Source = Literal["spans", "events", "rss"]

_TIME_UNITS = {"ns": 1, "us": 10**3, "µs": 10**3, "ms": 10**6, "s": 10**9, "m": 60 * 10**9, "h": 3600 * 10**9}
_SIZE_UNITS = {
    "b": 1,
    "kib": 1 << 10,
    "mib": 1 << 20,
    "gib": 1 << 30,
    "tib": 1 << 40,
    "kb": 10**3,
    "mb": 10**6,
    "gb": 10**9,
    "tb": 10**12,
}
_NUMBER = r"(\d+(?:\.\d*)?|\.\d+)"
_DURATION = re.compile(_NUMBER + r"\s*(ns|us|µs|ms|s|m|h)")
_SIZE = re.compile(_NUMBER + r"\s*([a-zA-Z]+)")

# The blocked reasons a short name stands for: the reason strings the spans
# carry, as Go's trace names them (legacy traces are given the same names).
BLOCK_REASONS: dict[str, frozenset[str]] = {
    "chan": frozenset({"chan send", "chan receive"}),
    "select": frozenset({"select"}),
    "mutex": frozenset({"sync"}),
    "sync": frozenset({"sync", "sync.(*Cond).Wait"}),
    "cond": frozenset({"sync.(*Cond).Wait"}),
    "net": frozenset({"network"}),
    "network": frozenset({"network"}),
    "sleep": frozenset({"sleep"}),
}
# Span kinds a bare name with a duration selects (regions and tasks take a name).
_SPAN_NAMES = {name: SpanKind(i) for i, name in enumerate(SPAN_KIND_NAMES)}
_HEAP_METRIC = "/memory/classes/heap/objects:bytes"
LOG_MESSAGE_ARG = 2  # a Log event's message: a string id (Event.log reads it so)

_SHAPE = re.compile(
    r"""(?P<what>[a-z][a-z-]*)
        (?:\[(?P<reason>"[^"]*"|[^\]]*)\])?
        (?::(?P<name>"[^"]*"|[^>~"]+))?
        \s*(?P<op>>|~)\s*
        (?P<value>.+)""",
    re.VERBOSE | re.DOTALL,
)


class TriggerError(ValueError):
    """A trigger's text does not parse; the message says what is wrong."""


@dataclass(frozen=True)
class Trigger:
    """One trigger. ``text`` names it (in file names and the capture's JSON);
    ``source`` says what it looks at: ``spans`` and ``events`` through
    ``filter`` (every span or event it keeps fires the trigger), ``rss``
    the process's resident memory above ``threshold`` bytes (polled on a
    local process; on a remote one, the heap metric events in the trace).
    ``reasons``: a span trigger's blocked reasons (None: any), as the spans
    name them."""

    text: str
    source: Source
    filter: Filter | None = None
    threshold: int = 0
    description: str = field(default="", compare=False)
    reasons: frozenset[str] | None = None
    pattern: re.Pattern[str] | None = None  # a log trigger's, searched in the messages of the events kept

    def fired_event(self, batch: EventBatch) -> int | None:
        """The index of the first of ``batch`` (the log events the filter
        kept) whose message the trigger's pattern finds, or None; each
        message is read from the columns and searched once per batch."""
        pattern = self.pattern
        if pattern is None:
            return 0 if len(batch) else None
        strings = batch.gen.strings if batch.gen is not None else {}
        args = batch.args
        found: dict[int, bool] = {}  # message string id -> whether the pattern is in it
        for i in range(len(batch)):
            sid = args[i * NARGS + LOG_MESSAGE_ARG]
            hit = found.get(sid)
            if hit is None:
                text = strings.get(sid, b"").decode("utf-8", "surrogateescape")
                hit = found[sid] = pattern.search(text) is not None
            if hit:
                return i
        return None

    def fired(self, spans: SpanBatch) -> int | None:
        """The index of the longest of ``spans`` (those the filter kept)
        that fires the trigger (the first of the longest), or None."""
        reasons = None if self.reasons is None else {r.encode("utf-8", "surrogateescape") for r in self.reasons}
        names, by_reason = spans.names_table, spans.reasons
        fires: dict[int, bool] = {}  # reason id -> whether it is one of the reasons
        best, longest = None, -1
        for i, (start, end) in enumerate(zip(spans.starts, spans.ends, strict=True)):
            if reasons is not None:
                r = by_reason[i]
                ok = fires.get(r)
                if ok is None:
                    ok = fires[r] = names[r] in reasons
                if not ok:
                    continue
            if end - start > longest:
                best, longest = i, end - start
        return best

    @classmethod
    def on_spans(
        cls,
        name: str,
        predicate: Callable[[Span], bool],
        *,
        kinds: frozenset[SpanKind] | None = None,
        min_duration: int | None = None,
    ) -> Trigger:
        """A trigger that fires on every span ``predicate`` accepts (it sees
        only spans of ``kinds`` at least ``min_duration`` ns long, if given)."""
        pred: Callable[[Event | Span], bool] = predicate  # type: ignore[assignment]  # a span filter's predicate sees spans only
        return cls(name, "spans", Filter(kinds=kinds, min_duration=min_duration, predicate=pred), description=name)

    @classmethod
    def on_events(
        cls, name: str, predicate: Callable[[Event], bool], *, kinds: frozenset[Kind] | None = None
    ) -> Trigger:
        """A trigger that fires on every event ``predicate`` accepts (of ``kinds``, if given)."""
        pred: Callable[[Event | Span], bool] = predicate  # type: ignore[assignment]  # an event filter's predicate sees events only
        return cls(name, "events", Filter(kinds=kinds, predicate=pred), description=name)

    @property
    def slug(self) -> str:
        """The trigger's text as a file name part: ``blocked[chan]>1s`` -> ``blocked-chan-1s``."""
        s = re.sub(r"[^A-Za-z0-9.]+", "-", self.text).strip("-.")
        return s[:60] or "trigger"

    def heap_trigger(self) -> Trigger:
        """An ``rss`` trigger for a process that is not local: the heap in
        use (the trace's heap metric) above the same size, a lower bound of
        its RSS."""
        limit = self.threshold

        def over(e: Event) -> bool:
            name, value = e.metric()
            return name == _HEAP_METRIC and value > limit

        pred: Callable[[Event | Span], bool] = over  # type: ignore[assignment]  # an event filter's predicate sees events only
        return Trigger(
            self.text,
            "events",
            Filter(kinds=frozenset({Kind.METRIC}), predicate=pred),
            self.threshold,
            f"heap in use > {format_size(limit)} (the remote process's RSS is not visible)",
        )


def parse_duration(text: str) -> int:
    """``50ms``, ``1.5s``, ``2m``, ``800us`` -> nanoseconds."""
    m = _DURATION.fullmatch(text.strip())
    if not m:
        raise ValueError(f"{text!r} is not a duration (a number and one of ns, us, ms, s, m, h: 50ms, 1.5s)")
    return round(float(m.group(1)) * _TIME_UNITS[m.group(2)])


def parse_size(text: str) -> int:
    """``2GiB``, ``512MiB``, ``100MB``, ``4096B`` -> bytes."""
    m = _SIZE.fullmatch(text.strip())
    if not m or m.group(2).lower() not in _SIZE_UNITS:
        raise ValueError(f"{text!r} is not a size (a number and one of B, KiB, MiB, GiB, TiB, kB, MB, GB, TB: 2GiB)")
    return round(float(m.group(1)) * _SIZE_UNITS[m.group(2).lower()])


def format_size(n: int) -> str:
    for unit, size in (("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)):
        if n >= size:
            return f"{n / size:.1f} {unit}"
    return f"{n} B"


def _unquote(s: str) -> str:
    s = s.strip()
    if len(s) >= 2 and s[0] == s[-1] == '"':
        return s[1:-1]
    return s


def _reasons(text: str) -> frozenset[str]:
    raw = text.strip()
    if raw.startswith('"'):
        return frozenset({_unquote(raw)})
    if raw in BLOCK_REASONS:
        return BLOCK_REASONS[raw]
    if raw == "syscall":
        raise ValueError("a goroutine in a system call is not blocked: use syscall>D")
    raise ValueError(
        f"unknown blocked reason {raw!r}: one of {', '.join(sorted(BLOCK_REASONS))}, "
        'or a reason string in quotes such as blocked["chan receive"]>1s'
    )


def _long(
    kind: SpanKind, over: int, predicate: Callable[[Span], bool] | None = None, **names: tuple[str, ...]
) -> Filter:
    pred: Callable[[Event | Span], bool] | None = predicate  # type: ignore[assignment]  # a span filter's predicate sees spans only
    # "longer than D": the filter keeps spans at least min_duration long.
    return Filter(kinds=frozenset({kind}), min_duration=over + 1, predicate=pred, **names)  # type: ignore[arg-type]  # names are Filter's tuple fields


def parse_trigger(text: str) -> Trigger:
    """A :class:`Trigger` from its short form (see the module's docstring);
    :class:`TriggerError` says what is wrong with a bad one."""
    try:
        return _parse(text)
    except ValueError as e:
        raise TriggerError(f"bad trigger {text!r}: {e}") from None


def _parse(text: str) -> Trigger:
    m = _SHAPE.fullmatch(text.strip())
    if not m:
        raise ValueError('expected WHAT>LIMIT or log~"PATTERN", such as gc>50ms, region:checkout>200ms, rss>2GiB')
    what, reason, name, op, value = m.group("what", "reason", "name", "op", "value")
    if what == "log":
        if op != "~" or reason is not None or name is not None:
            raise ValueError('a log trigger is log~"PATTERN" (a regular expression)')
        try:
            pattern = re.compile(_unquote(value))
        except re.error as e:
            raise ValueError(f"bad regular expression {_unquote(value)!r}: {e}") from None

        desc = f"a log message matching {pattern.pattern!r}"
        return Trigger(text, "events", Filter(kinds=frozenset({Kind.LOG})), description=desc, pattern=pattern)
    if op != ">":
        raise ValueError(f"{what} takes >, as in {what}>{'2GiB' if what == 'rss' else '50ms'}; only log takes ~")
    if what == "rss":
        if reason is not None or name is not None:
            raise ValueError("rss takes no reason or name: rss>2GiB")
        size = parse_size(value)
        return Trigger(text, "rss", threshold=size, description=f"RSS > {format_size(size)}")
    if reason is not None and what != "blocked":
        raise ValueError(f"only blocked takes a [reason], not {what}")
    if name is not None and what not in ("region", "task"):
        raise ValueError(f"only region and task take a :NAME, not {what}")
    if what not in _SPAN_NAMES:
        raise ValueError(f"unknown trigger {what!r}: one of {', '.join([*SPAN_KIND_NAMES, 'log', 'rss'])}")
    over = parse_duration(value)
    kind = _SPAN_NAMES[what]
    desc = f"a {what} span longer than {value.strip()}"
    if kind is SpanKind.BLOCKED and reason is not None:
        reasons = _reasons(reason)
        desc = f"a goroutine blocked on {' or '.join(sorted(reasons))} longer than {value.strip()}"
        return Trigger(text, "spans", _long(kind, over), description=desc, reasons=reasons)
    if kind in (SpanKind.REGION, SpanKind.TASK) and name is not None:
        glob = _unquote(name)
        desc = f"a {what} {glob!r} longer than {value.strip()}"
        if kind is SpanKind.REGION:
            return Trigger(text, "spans", _long(kind, over, regions=(glob,)), description=desc)
        # A task span's task is itself: the filter's task names are its name, read in the core.
        return Trigger(text, "spans", _long(kind, over, tasks=(glob,)), description=desc)
    return Trigger(text, "spans", _long(kind, over), description=desc)
