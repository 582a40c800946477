"""Spans as `tail --spans` prints them: a text line, or a JSON object
(docs/events-jsonl.md, "Spans")."""

from __future__ import annotations

from typing import Any

from livetrace._cli.render.jsonl import _clean, _frames, frame_text
from livetrace._protocol.text import shown
from livetrace._trace.spans.model import Span


def span_dict(s: Span) -> dict[str, Any]:
    """One span as a JSON-ready dict."""
    d: dict[str, Any] = {
        "kind": "Span",
        "span": str(s.kind),
        "resource": s.resource.kind.lower(),
        "id": s.resource.id,
        "start_ns": s.start,
        "end_ns": s.end,
        "duration_ns": s.duration,
    }
    if s.proc >= 0 and s.resource.kind != "Proc":
        d["proc"] = s.proc
    if s.reason:
        d["reason"] = s.reason
    if s.name:
        d["name"] = s.name
    if s.task:
        d["task"] = s.task
    if s.task_name:
        d["task_name"] = s.task_name
    if s.clipped_start:
        d["clipped_start"] = True
    if s.clipped_end:
        d["clipped_end"] = True
    if s.start_stack is not None:
        d["start_stack"] = _frames(s.start_stack)
    if s.end_stack is not None:
        d["end_stack"] = _frames(s.end_stack)
    if s.logs:
        d["logs"] = [{"category": c, "message": m} for c, m in s.logs]
    return {k: _clean(v) for k, v in d.items()}


def duration_text(ns: int) -> str:
    """A duration the way a person reads it: 850ns, 12.3µs, 4.56ms, 1.23s."""
    if ns < 1_000:
        return f"{ns}ns"
    if ns < 1_000_000:
        return f"{ns / 1e3:.1f}µs"
    if ns < 1_000_000_000:
        return f"{ns / 1e6:.2f}ms"
    return f"{ns / 1e9:.2f}s"


SPAN_KIND_WIDTH = 11  # "mark-assist"


def span_text(s: Span, t0: int) -> str:
    """One readable line: start (seconds since t0, signed: spans come in
    the order they end, so one may have begun before the first shown),
    kind, resource, duration, and what else the span knows."""
    parts = [f"{(s.start - t0) / 1e9:+.6f}s", f"{s.kind!s:<{SPAN_KIND_WIDTH}}", f"{s.resource!s:<16}"]
    parts.append(f"{duration_text(s.duration):>9}")
    if s.proc >= 0 and s.resource.kind != "Proc":
        parts.append(f"on P {s.proc}")
    # Names and reasons are the traced service's words: escaped, as tail's event lines quote them.
    if s.name:
        parts.append(shown(s.name))
    if s.reason:
        parts.append(f"({shown(s.reason)})")
    if s.task:
        parts.append(f"task {s.task}")
    return " ".join(parts) + frame_text(s.start_stack or s.end_stack or [])
