"""The OTLP sink against a real OTLP/HTTP receiver written here: tasks and
regions arrive as spans, GC and stop-the-world pauses as events of a
go.runtime span, on a resource that names the service; a collector that
refuses is a sink down, and the entry waits for it."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest

from livetrace._agent.otlp import OtlpSink
from livetrace._agent.policies import to_table
from livetrace._agent.sinks import SinkDown

pytestmark = [pytest.mark.once, pytest.mark.slow]  # the SDK takes a second to import

WALL = 1_790_000_000_000_000  # µs


class Receiver:
    def __init__(self) -> None:
        self.requests: list[ExportTraceServiceRequest] = []
        self.status = 200
        receiver = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:  # http.server's name
                body = self.rfile.read(int(self.headers["Content-Length"]))
                if receiver.status == 200:
                    receiver.requests.append(ExportTraceServiceRequest.FromString(body))
                self.send_response(receiver.status)
                self.send_header("Content-Length", "0")
                self.end_headers()

            def log_message(self, format: str, *args: Any) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/v1/traces"


@contextmanager
def running_receiver() -> Iterator[Receiver]:
    r = Receiver()
    thread = threading.Thread(target=r.server.serve_forever, daemon=True)
    thread.start()
    yield r
    r.server.shutdown()
    r.server.server_close()


@pytest.fixture
def receiver() -> Iterator[Receiver]:
    with running_receiver() as r:
        yield r


def span(kind: str, name: str, start_us: int, duration_ns: int, key: str, reason: str = "") -> dict[str, Any]:
    return {
        "key": key,
        "time": WALL,
        "host": "h1",
        "service": "checkout",
        "pid": 42,
        "go_version": "go1.26.6",
        "policy": "continuous",
        "labels": '{"team": "payments"}',
        "kind": kind,
        "start_ns": 5,
        "duration_ns": duration_ns,
        "wall_start": start_us,
        "goroutine": 7 if kind == "region" else 0,
        "reason": reason,
        "name": name,
        "task_name": "order" if kind == "region" else "",
    }


ROWS = [
    span("task", "order", WALL, 50_000_000, "h1:e:000000"),
    span("region", "db.query", WALL + 1_000, 20_000_000, "h1:e:000001"),
    span("gc", "", WALL + 2_000, 3_000_000, "h1:e:000002"),
    span("stw", "", WALL + 2_500, 400_000, "h1:e:000003", reason="GC mark termination"),
    span("blocked", "", WALL, 90_000_000, "h1:e:000004", reason="chan receive"),
]


def test_tasks_and_regions_are_spans_and_pauses_are_events(receiver: Receiver) -> None:
    sink = OtlpSink(receiver.url)
    sink.send("summaries", to_table("summaries", []), "e")  # not a trace: nothing sent
    sink.send("spans", to_table("spans", ROWS), "e")
    sink.close()
    assert len(receiver.requests) == 1
    (resource_spans,) = receiver.requests[0].resource_spans
    attrs = {a.key: a.value for a in resource_spans.resource.attributes}
    assert attrs["service.name"].string_value == "checkout" and attrs["process.pid"].int_value == 42
    assert attrs["livetrace.label.team"].string_value == "payments"
    spans = {s.name: s for ss in resource_spans.scope_spans for s in ss.spans}
    assert set(spans) == {"task order", "region db.query", "go.runtime"}  # the blocked span is not a trace's
    region = spans["region db.query"]
    assert region.start_time_unix_nano == (WALL + 1_000) * 1000
    assert region.end_time_unix_nano - region.start_time_unix_nano == 20_000_000
    runtime = spans["go.runtime"]
    assert [(e.name, e.time_unix_nano) for e in runtime.events] == [
        ("gc", (WALL + 2_000) * 1000),
        ("stop-the-world", (WALL + 2_500) * 1000),
    ]
    assert runtime.end_time_unix_nano == (WALL + 2_000) * 1000 + 3_000_000
    # ids come from the rows' keys: the same entry sent again has the same spans
    again = OtlpSink(receiver.url)
    again.send("spans", to_table("spans", ROWS), "e")
    again.close()
    ids = [sorted(s.span_id for ss in r.resource_spans[0].scope_spans for s in ss.spans) for r in receiver.requests]
    assert ids[0] == ids[1]


def test_a_collector_that_refuses_is_a_sink_down(receiver: Receiver) -> None:
    receiver.status = 400  # not retried by the exporter: said at once
    sink = OtlpSink(receiver.url, timeout=2)
    started = time.monotonic()
    with pytest.raises(SinkDown, match="did not take 3 spans"):
        sink.send("spans", to_table("spans", ROWS), "e")
    assert time.monotonic() - started < 2
    sink.close()
