"""Traces: requests, database calls, Celery tasks and model calls, exported through the SDK's
in-memory exporter here and over OTLP/HTTP to a real receiver in a separate process."""

import os
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest
from opentelemetry.proto.trace.v1.trace_pb2 import Span as ExportedSpan
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import SpanKind

from compaction.backends.base import MemoSource
from compaction.backends.openai_compat import OpenAICompatBackend
from convmem import telemetry
from tests.conftest import make_thread
from tests.respond.conftest import CHAT_MODEL, chat  # noqa: F401 (the chat server fixture)
from tests.support.chat_server import ChatServer
from tests.support.worker import start_worker
from threads.tasks import purge_idempotency_records

ROOT = Path(__file__).resolve().parent.parent.parent
CLIENT = ExportedSpan.SpanKind.SPAN_KIND_CLIENT


@pytest.fixture
def spans(db: None) -> Iterator[InMemorySpanExporter]:
    exporter = InMemorySpanExporter()
    assert telemetry.tracing_start(exporter=exporter)
    yield exporter
    telemetry.tracing_stop()
    exporter.shutdown()


def named(exporter: InMemorySpanExporter, prefix: str) -> list[Any]:
    return [s for s in exporter.get_finished_spans() if s.name.startswith(prefix)]


def test_off_without_an_endpoint():
    assert not telemetry.endpoint_configured()
    assert telemetry.tracing_start() is False


def test_a_request_is_a_server_span_holding_its_database_calls(acme, spans):
    response = acme.client.post("/api/v1/threads", {"user_ref": "u-1"}, format="json")

    assert response.status_code == 201
    (request,) = [s for s in spans.get_finished_spans() if s.kind == SpanKind.SERVER]
    assert request.attributes["http.method"] == "POST"
    assert request.attributes["http.route"] == "api/v1/threads"
    assert request.attributes["http.status_code"] == 201
    inserts = named(spans, "INSERT")
    assert inserts
    for insert in inserts:
        assert insert.kind == SpanKind.CLIENT
        assert insert.context.trace_id == request.context.trace_id
        assert insert.attributes["db.system.name"] in ("postgresql", "sqlite")
        assert insert.attributes["db.query.text"].startswith("INSERT")


def test_a_respond_call_is_a_model_span_with_its_tokens(acme, chat, spans):  # noqa: F811
    chat.configure(
        usage={
            "prompt_tokens": 1000,
            "completion_tokens": 100,
            "total_tokens": 1100,
            "prompt_tokens_details": {"cached_tokens": 800},
        },
        finish_reason="stop",
    )
    thread = make_thread(acme.tenant, turns=2)

    response = acme.client.post(
        f"/api/v1/threads/{thread.public_id}/respond",
        {"content": "Where is my parcel?", "max_tokens": 200},
        format="json",
        HTTP_IDEMPOTENCY_KEY="k1",
    )

    assert response.status_code == 201
    (model,) = named(spans, "chat ")
    assert model.name == f"chat {CHAT_MODEL}"
    assert model.kind == SpanKind.CLIENT
    assert model.attributes["gen_ai.operation.name"] == "chat"
    assert model.attributes["gen_ai.request.model"] == CHAT_MODEL
    assert model.attributes["gen_ai.request.max_tokens"] == 200
    assert model.attributes["gen_ai.usage.input_tokens"] == 1000
    assert model.attributes["gen_ai.usage.output_tokens"] == 100
    assert model.attributes["gen_ai.usage.cache_read.input_tokens"] == 800
    assert model.attributes["gen_ai.response.finish_reasons"] == ("stop",)
    assert model.attributes["server.address"] == "127.0.0.1"
    (request,) = [s for s in spans.get_finished_spans() if s.kind == SpanKind.SERVER]
    assert model.context.trace_id == request.context.trace_id


def test_a_failed_model_call_is_an_error_span(acme, chat, spans):  # noqa: F811
    chat.configure(mode="error500")
    thread = make_thread(acme.tenant, turns=2)

    response = acme.client.post(
        f"/api/v1/threads/{thread.public_id}/respond",
        {"content": "Where is my parcel?"},
        format="json",
        HTTP_IDEMPOTENCY_KEY="k1",
    )

    assert response.status_code == 503
    (model,) = named(spans, "chat ")
    assert not model.status.is_ok
    assert model.attributes["error.type"] == "500"


def test_a_memo_writer_call_is_a_model_span(settings, spans):
    with ChatServer() as server:
        settings.CONVMEM_OPENAI_BASE_URL = server.base_url
        settings.CONVMEM_OPENAI_MODEL = "memo-model"
        server.configure(usage={"prompt_tokens": 321, "completion_tokens": 45})
        source = MemoSource(id="msg_1", role="user", content="My order ORD-1 is late.")
        OpenAICompatBackend().summarize(previous_memo=None, messages=[source], max_tokens=120)

    (model,) = named(spans, "chat ")
    assert model.attributes["convmem.model_call.purpose"] == "memo"
    assert model.attributes["gen_ai.request.model"] == "memo-model"
    assert model.attributes["gen_ai.request.temperature"] == 0
    assert model.attributes["gen_ai.usage.input_tokens"] == 321
    assert model.attributes["gen_ai.usage.output_tokens"] == 45


def test_a_celery_task_is_a_consumer_span_holding_its_database_calls(spans):
    purge_idempotency_records.apply()

    (task,) = [s for s in spans.get_finished_spans() if s.kind == SpanKind.CONSUMER]
    assert task.name == "run/threads.purge_idempotency_records"
    queries = [s for s in spans.get_finished_spans() if "db.query.text" in s.attributes]
    assert queries
    assert all(q.context.trace_id == task.context.trace_id for q in queries)


class _Receiver(BaseHTTPRequestHandler):
    def do_POST(self) -> None:
        body = self.rfile.read(int(self.headers["Content-Length"]))
        self.server.received.append((self.path, body))  # type: ignore[attr-defined]
        self.send_response(200)
        self.send_header("Content-Type", "application/x-protobuf")
        self.end_headers()

    def log_message(self, format: str, *args: Any) -> None:
        pass


@pytest.fixture
def receiver() -> Iterator[ThreadingHTTPServer]:
    """A real OTLP/HTTP endpoint: keeps what it is sent (``received``: path, body)."""
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Receiver)
    server.received = []  # type: ignore[attr-defined]
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield server
    server.shutdown()


def exported_spans(receiver: ThreadingHTTPServer) -> list[Any]:
    requests = [ExportTraceServiceRequest.FromString(body) for _, body in receiver.received]
    return [
        span
        for request in requests
        for resource in request.resource_spans
        for scope in resource.scope_spans
        for span in scope.spans
    ]


@pytest.mark.worker
@pytest.mark.django_db(transaction=True)
def test_a_task_sent_here_runs_in_a_worker_in_the_same_trace(spans, receiver):
    endpoint = f"http://127.0.0.1:{receiver.server_port}"
    # Batches leave the worker's children every 200 ms, while the test waits for them.
    with start_worker({"OTEL_EXPORTER_OTLP_ENDPOINT": endpoint, "OTEL_BSP_SCHEDULE_DELAY": "200"}):
        purge_idempotency_records.delay()
        deadline = time.monotonic() + 90
        while not any(s.name.startswith("run/") for s in exported_spans(receiver)):
            assert time.monotonic() < deadline, "the worker exported no task span"
            time.sleep(0.2)

    (sent,) = [s for s in spans.get_finished_spans() if s.kind == SpanKind.PRODUCER]
    (ran,) = [s for s in exported_spans(receiver) if s.name.startswith("run/")]
    assert ran.name == "run/threads.purge_idempotency_records"
    assert ran.trace_id == sent.context.trace_id.to_bytes(16, "big")
    queries = [
        s for s in exported_spans(receiver) if s.trace_id == ran.trace_id and s.kind == CLIENT
    ]
    assert queries  # the task's SQL, as client spans of the same trace


def test_with_an_endpoint_a_process_exports_its_spans_over_otlp(tmp_path, receiver):
    # Its own SQLite database in tmp_path, whatever the suite runs on.
    outside = {k: v for k, v in os.environ.items() if k not in ("DATABASE_URL", "REDIS_URL")}
    env = {
        **outside,
        "OTEL_EXPORTER_OTLP_ENDPOINT": f"http://127.0.0.1:{receiver.server_port}",
        "OTEL_SERVICE_NAME": "convmem-test",
        "CONVMEM_VAR_DIR": str(tmp_path),
    }
    subprocess.run(
        [sys.executable, "manage.py", "migrate", "--noinput", "-v", "0"],
        cwd=ROOT,
        env=env,
        check=True,
        timeout=300,
    )

    paths = {path for path, _ in receiver.received}
    assert paths == {"/v1/traces"}
    exported = [ExportTraceServiceRequest.FromString(body) for _, body in receiver.received]
    resources = [r for request in exported for r in request.resource_spans]
    service = {
        a.value.string_value
        for r in resources
        for a in r.resource.attributes
        if a.key == "service.name"
    }
    assert service == {"convmem-test"}
    names = {s.name for r in resources for scope in r.scope_spans for s in scope.spans}
    assert any(name.startswith("CREATE") for name in names)
