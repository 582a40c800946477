"""The OTLP sink: the agent's spans in whatever tracing backend a team has.

Through the OpenTelemetry SDK's OTLP/HTTP exporter. Of the ``spans`` rows,
user tasks and regions become spans of their own (``task NAME``,
``region NAME``), and the runtime's pauses (GC cycles, stop-the-world)
become span events of one ``go.runtime`` span per process and entry,
covering them. The other tables (summaries, captures, the agent's log) are
not traces, and the goroutines' own spans (running, runnable, blocked) are
not sent: they are the lake's and ClickHouse's.

Each span's ids are hashed from its row's key, so a backend that keeps one
span per id keeps one copy of an entry sent twice. Times are the rows'
``wall_start``: the trace's clock placed on the wall's by its own clock
snapshot where it has one (Go 1.25+), else to about a generation (rows.py).
"""

from __future__ import annotations

import datetime as dt
import hashlib
import json
from collections.abc import Sequence
from typing import Any

import pyarrow as pa

from livetrace._agent.config import redacted
from livetrace._agent.sinks import SinkDown

__all__ = ["OtlpSink", "to_otlp"]

SPAN_KINDS = ("task", "region")
PAUSE_KINDS = ("gc", "stw")
EPOCH = dt.datetime(1970, 1, 1, tzinfo=dt.UTC)
EXPORT_TIMEOUT = 5.0  # seconds an export may take, its retries included


def _id(key: str, size: int) -> int:
    return int.from_bytes(hashlib.blake2b(key.encode(), digest_size=size).digest(), "big") or 1


def to_otlp(rows: pa.Table) -> list[Any]:
    """``spans`` rows as the SDK's ReadableSpan objects."""
    from opentelemetry.sdk.resources import Resource
    from opentelemetry.sdk.trace import Event, ReadableSpan
    from opentelemetry.sdk.util.instrumentation import InstrumentationScope
    from opentelemetry.trace import SpanContext, TraceFlags

    scope = InstrumentationScope("livetrace")
    out: list[Any] = []
    by_process: dict[tuple[str, str, int], list[dict[str, Any]]] = {}
    for r in rows.to_pylist():
        by_process.setdefault((r["service"], r["host"], r["pid"]), []).append(r)

    def context(key: str) -> SpanContext:
        return SpanContext(_id(key, 16), _id(key, 8), is_remote=False, trace_flags=TraceFlags(TraceFlags.SAMPLED))

    for (service, host, pid), group in by_process.items():
        first = group[0]
        labels = {f"livetrace.label.{k}": v for k, v in json.loads(first["labels"]).items()}
        resource = Resource(
            {
                "service.name": service,
                "host.name": host,
                "process.pid": pid,
                "process.runtime.name": "go",
                "process.runtime.version": first["go_version"],
                "livetrace.policy": first["policy"],
                **labels,
            }
        )
        pauses: list[Any] = []
        for r in group:
            start = _ns(r["wall_start"])
            attrs = {"go.goroutine": r["goroutine"], "go.task": r["task_name"], "livetrace.key": r["key"]}
            if r["kind"] in SPAN_KINDS:
                out.append(
                    ReadableSpan(
                        f"{r['kind']} {r['name']}",
                        context=context(r["key"]),
                        resource=resource,
                        attributes=attrs,
                        start_time=start,
                        end_time=start + r["duration_ns"],
                        instrumentation_scope=scope,
                    )
                )
            elif r["kind"] in PAUSE_KINDS:
                pauses.append(r)
        if pauses:
            start = min(_ns(r["wall_start"]) for r in pauses)
            end = max(_ns(r["wall_start"]) + r["duration_ns"] for r in pauses)
            events = [
                Event(
                    "gc" if r["kind"] == "gc" else "stop-the-world",
                    {"go.duration_ns": r["duration_ns"], "go.reason": r["reason"], "livetrace.key": r["key"]},
                    timestamp=_ns(r["wall_start"]),
                )
                for r in pauses
            ]
            out.append(
                ReadableSpan(
                    "go.runtime",
                    context=context("runtime:" + pauses[0]["key"]),
                    resource=resource,
                    attributes={"go.pauses": len(pauses)},
                    events=events,
                    start_time=start,
                    end_time=end,
                    instrumentation_scope=scope,
                )
            )
    return out


def _ns(wall: dt.datetime) -> int:
    """A timestamp column's value (a datetime, as to_pylist gives it) in ns since the epoch."""
    return (wall - EPOCH) // dt.timedelta(microseconds=1) * 1000


class OtlpSink:
    def __init__(self, url: str, timeout: float = EXPORT_TIMEOUT) -> None:
        from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter

        self.name = f"otlp {redacted(url)}"  # the URL's password never reaches a message or a record
        self._exporter = OTLPSpanExporter(endpoint=url, timeout=timeout)

    def send(self, table: str, rows: pa.Table, key: str) -> None:
        if table != "spans":
            return
        spans: Sequence[Any] = to_otlp(rows)
        if not spans:
            return
        from opentelemetry.sdk.trace.export import SpanExportResult

        try:
            result = self._exporter.export(spans)
        except Exception as e:  # the exporter's transport errors: the sink is down, the entry waits
            raise SinkDown(f"{self.name}: {e}") from e
        if result is not SpanExportResult.SUCCESS:
            raise SinkDown(f"{self.name}: the collector did not take {len(spans)} spans (see its log)")

    def close(self) -> None:
        self._exporter.shutdown()  # type: ignore[no-untyped-call]  # the SDK leaves it unannotated
