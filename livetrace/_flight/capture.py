"""Writing a capture: the kept trace, and a JSON file beside it saying why.

Plain blocking file I/O, run off the event path (the recorder calls it in
a worker thread). Every file is written through livetrace._outfile: under
a temporary name in the output directory, renamed into place when whole
(mode 0666 less the umask), so that a stop, a crash or a full disk never
leaves a partial capture under a final name, and nothing another user plants
there is followed; the JSON goes last, so a JSON file means its traces are
there.
"""

from __future__ import annotations

import contextlib
import itertools
import json
import re
import time
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from livetrace._errors import LivetraceError
from livetrace._flight.ring import Snapshot
from livetrace._flight.triggers import Trigger
from livetrace._outfile import write_atomic
from livetrace._trace.model.events import Event, StackFrame
from livetrace._trace.spans.model import Span

# A capture's JSON file name: <UTC time>-<trigger>[_N].json (the traces share its stem; _N, from 2,
# when a capture of the same trigger in the same millisecond is there already).
CAPTURE_NAME = re.compile(r"^\d{8}T\d{6}\.\d{3}Z-[A-Za-z0-9.-]+(_\d+)?\.json$")
# How many of the firings that joined a capture its JSON lists (it counts them all).
JOINED_LISTED = 100


class CaptureWriteError(Exception):
    """A capture could not be written: ``path`` is the file (or directory) that
    failed, ``errno`` and ``strerror`` the system's error (or the writer's
    own, with errno None). Nothing of the capture is left under a final name."""

    def __init__(self, path: Path, error: OSError | LivetraceError) -> None:
        self.path = path
        self.errno = error.errno if isinstance(error, OSError) else None
        self.strerror = (error.strerror if isinstance(error, OSError) else None) or str(error)
        super().__init__(f"{path}: {self.strerror}")


class CaptureAbandoned(Exception):
    """The recorder stopped while a capture was being written: what it had
    written is removed."""


@dataclass(frozen=True)
class Firing:
    """A trigger fired: by ``span`` or ``event`` (or, for RSS, a ``value``
    in bytes), at wall-clock ``at_unix_ns``."""

    trigger: Trigger
    at_unix_ns: int
    span: Span | None = None
    event: Event | None = None
    value: int | None = None
    # The newest generation (segment) complete when it fired: the span or
    # event is in it or, if decoding lagged the frames, in one shortly before.
    unit: int | None = None


@dataclass(frozen=True)
class Capture:
    """A capture written: its trace files (one on Go 1.22+; on older Go one per
    kept segment, each a complete trace), the JSON beside them, and what
    they cover."""

    firing: Firing
    traces: tuple[Path, ...]
    json_path: Path
    size: int
    first_read_unix_ns: int | None
    last_read_unix_ns: int | None
    after_ns: int
    tail_cut: bool  # written before the whole tail arrived (the session ended, or the recorder stopped)
    joined: int = 0  # triggers that fired while it waited for its tail: in its JSON, and its trace
    joined_late: int = 0  # triggers that fired while it was being written: counted here only


def unique_stem(out_dir: Path, firing: Firing) -> str:
    """:func:`stem`, or with ``_2``, ``_3``, ... where the directory already
    has a file of that stem (or a temporary one of it)."""
    names = [p.name for p in out_dir.iterdir()]

    def free(s: str) -> bool:
        return not any(n.startswith((s + ".", "." + s + ".")) for n in names)

    base = stem(firing)
    return next(s for s in itertools.chain([base], (f"{base}_{i}" for i in itertools.count(2))) if free(s))


def stem(firing: Firing) -> str:
    """``20250102T030405.678Z-region-checkout-200ms``: sorts by time, names the trigger."""
    t = datetime.fromtimestamp(firing.at_unix_ns / 1e9, UTC)
    return f"{t:%Y%m%dT%H%M%S}.{t.microsecond // 1000:03d}Z-{firing.trigger.slug}"


def _iso(ns: int | None) -> str | None:
    if ns is None:
        return None
    t = datetime.fromtimestamp(ns / 1e9, UTC)
    return t.isoformat(timespec="microseconds").replace("+00:00", "Z")


def _frames(frames: list[StackFrame] | None) -> list[dict[str, Any]] | None:
    if frames is None:
        return None
    return [{"function": f.func, "file": f.file, "line": f.line, "pc": f.pc} for f in frames]


def _span(s: Span) -> dict[str, Any]:
    return {
        "kind": str(s.kind),
        "resource": {"kind": s.resource.kind, "id": s.resource.id},
        "goroutine": s.resource.id if s.resource.kind == "Goroutine" else None,
        "start_ns": s.start,
        "end_ns": s.end,
        "duration_ns": s.duration,
        "name": s.name,
        "reason": s.reason,
        "task": s.task,
        "task_name": s.task_name,
        "clipped_start": s.clipped_start,
        "clipped_end": s.clipped_end,
        "start_stack": _frames(s.start_stack),
        "end_stack": _frames(s.end_stack),
        "logs": [{"category": c, "message": m} for c, m in s.logs],
    }


def _event(e: Event) -> dict[str, Any]:
    out: dict[str, Any] = {
        "kind": e.kind_name,
        "time_ns": e.time,
        "goroutine": e.goroutine if e.goroutine >= 0 else None,
    }
    if e.kind_name == "Log":
        task, category, message = e.log()
        out.update(task=task, category=category, message=message)
    elif e.kind_name == "Metric":
        out["metric"], out["value"] = e.metric()
    try:
        out["stack"] = _frames(e.stack())
    except (ValueError, KeyError):
        out["stack"] = None
    return out


def _goroutine(f: Firing) -> int | None:
    if f.span is not None and f.span.resource.kind == "Goroutine":
        return f.span.resource.id
    if f.event is not None and f.event.goroutine >= 0:
        return f.event.goroutine
    return None


def _joined(f: Firing) -> dict[str, Any]:
    s, e = f.span, f.event
    return {
        "trigger": f.trigger.text,
        "fired_at": _iso(f.at_unix_ns),
        "goroutine": _goroutine(f),
        "span": None if s is None else {"kind": str(s.kind), "name": s.name, "duration_ns": s.duration},
        "event": None if e is None else {"kind": e.kind_name, "time_ns": e.time},
        "value": f.value,
    }


def describe(
    capture_stem: str,
    firing: Firing,
    snap: Snapshot,
    names: list[str],
    after_ns: int,
    tail_cut: bool,
    joined: Sequence[Firing] = (),
    joined_count: int = 0,
) -> dict[str, Any]:
    """The JSON beside a capture."""
    f = firing
    unit = snap.layout.unit  # "generation", "segment" or "window": what a unit's number counts
    units = [
        {
            "file": names[i if snap.layout.whole_units else 0],
            unit: u.key,
            "first_read": _iso(u.first_read_ns),
            "last_read": _iso(u.last_read_ns),
            "bytes": u.size,
        }
        for i, u in enumerate(snap.units)
    ]
    return {
        "format": 1,
        "trigger": f.trigger.text,
        "description": f.trigger.description,
        "fired_at": _iso(f.at_unix_ns),
        "fired_at_unix_ns": f.at_unix_ns,
        "goroutine": _goroutine(f),
        "span": None if f.span is None else _span(f.span),
        "event": None if f.event is None else _event(f.event),
        "value": f.value,
        "traces": names,
        "fired_in": next(
            ({"file": x["file"], unit: f.unit} for x, u in zip(units, snap.units, strict=True) if u.key == f.unit),
            None,
        ),
        "layout": snap.layout.value,
        "time_range": {
            # Wall-clock times the helper read the first and last chunk kept:
            # the trace's own clock (span and event times above) is not wall time.
            "first_read": _iso(snap.first_read_ns),
            "last_read": _iso(snap.last_read_ns),
            "seconds": None
            if snap.first_read_ns is None or snap.last_read_ns is None
            else (snap.last_read_ns - snap.first_read_ns) / 1e9,
        },
        "after_seconds": after_ns / 1e9,
        "tail_cut": tail_cut,
        "units": units,
        "bytes": snap.size,
        "joined": max(joined_count, len(joined)),
        "joined_firings": [_joined(j) for j in joined[:JOINED_LISTED]],
    }


def _write_atomic(path: Path, parts: Iterable[bytes]) -> None:
    write_atomic(path, parts, hidden=True)


def _until(parts: Iterable[bytes], stop: Callable[[], bool] | None) -> Iterator[bytes]:
    for p in parts:
        if stop is not None and stop():
            raise CaptureAbandoned
        yield p


def _write(path: Path, parts: Iterable[bytes], stop: Callable[[], bool] | None) -> None:
    try:
        _write_atomic(path, _until(parts, stop))
    except (OSError, LivetraceError) as e:
        raise CaptureWriteError(path, e) from e


def write_capture(
    out_dir: Path,
    firing: Firing,
    snap: Snapshot,
    after_ns: int,
    tail_cut: bool,
    joined: Sequence[Firing] = (),
    joined_count: int = 0,
    stop: Callable[[], bool] | None = None,
) -> Capture:
    """Write the snapshot's traces and the JSON beside them; see the module's
    docstring. The files share a stem no file in out_dir has yet (a capture
    never overwrites another), and a capture that fails part way removes the
    traces it had written. ``joined`` are firings that joined this capture
    (``joined_count`` of them in all). Raises :class:`CaptureWriteError` if a
    file cannot be written, and :class:`CaptureAbandoned` once ``stop()`` is true."""
    try:
        base = unique_stem(out_dir, firing)
    except OSError as e:
        raise CaptureWriteError(out_dir / f"{stem(firing)}.trace", e) from e
    traces = snap.traces()
    names = [f"{base}.trace" if i == 0 else f"{base}.{i + 1}.trace" for i in range(len(traces))]
    paths = tuple(out_dir / n for n in names)
    written: list[Path] = []
    try:
        for path, parts in zip(paths, traces, strict=True):
            _write(path, parts, stop)
            written.append(path)
        info = describe(base, firing, snap, names, after_ns, tail_cut, joined, joined_count)
        json_path = out_dir / f"{base}.json"
        _write(json_path, [json.dumps(info, indent=2).encode() + b"\n"], stop)
    except BaseException:
        for p in written:  # no traces without their JSON: prune would never find them
            with contextlib.suppress(OSError):
                p.unlink()
        raise
    return Capture(
        firing,
        paths,
        json_path,
        snap.size,
        snap.first_read_ns,
        snap.last_read_ns,
        after_ns,
        tail_cut,
        joined=max(joined_count, len(joined)),
    )


def prune(out_dir: Path, max_files: int) -> list[Path]:
    """Keep the newest ``max_files`` captures in out_dir (by their names, which
    sort by time): remove the older ones' JSON and traces. Only files named
    as this recorder names them are touched. Returns what was removed. The
    recorder prunes to one fewer before writing a capture, so that a full disk
    gets the room first."""
    captures = sorted(p for p in out_dir.iterdir() if CAPTURE_NAME.match(p.name))
    removed: list[Path] = []
    for j in captures[: max(0, len(captures) - max_files)]:
        base = j.name[: -len(".json")]
        traces = [
            p
            for p in out_dir.iterdir()
            if p.name == f"{base}.trace" or re.fullmatch(re.escape(base) + r"\.\d+\.trace", p.name)
        ]
        for p in [*traces, j]:  # the JSON last: while it is there, the capture is
            try:
                p.unlink()
                removed.append(p)
            except FileNotFoundError:
                pass
    return removed


def now_ns() -> int:
    return time.time_ns()
