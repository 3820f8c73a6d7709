"""OpenTelemetry traces: requests, Celery tasks, database calls and model calls.

Off unless an OTLP endpoint is configured (``OTEL_EXPORTER_OTLP_ENDPOINT``, or
``OTEL_EXPORTER_OTLP_TRACES_ENDPOINT``; the exporter reads the rest of the standard ``OTEL_*``
variables itself). The OpenTelemetry packages are optional (``pip install convmem[otel]``):
without them, or with no endpoint, nothing here does more than return.

- requests: ``opentelemetry-instrumentation-django`` (a server span per request);
- Celery: ``opentelemetry-instrumentation-celery`` (a producer span where a task is sent, a
  consumer span where it runs, linked by the message headers);
- database: a span per statement through Django's own ``execute_wrapper`` hook, put on every
  connection (those open already, and each new one). The DB-API instrumentations
  (``-psycopg``, ``-sqlite3``) wrap only connections opened after they start and replace
  Django's cursor classes; the hook sees every query of both backends, as Django runs it;
- model calls: ``model_call_start`` (called by ``respond.chat`` and the OpenAI-compatible memo
  writer), a client span with the GenAI semantic conventions' attributes.

``tracing_start`` runs once per process, from ``ConvmemConfig.ready`` (web processes, commands,
and a Celery worker's main process before it forks its children, which inherit the
instrumentation; the SDK's batch exporter restarts its thread after a fork).
"""

import logging
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

from django.conf import settings
from django.db import connections
from django.db.backends.signals import connection_created

logger = logging.getLogger(__name__)

try:
    from opentelemetry import trace
    from opentelemetry.trace import SpanKind, Status, StatusCode
except ImportError:  # the optional dependency is not installed
    trace = None  # type: ignore[assignment]

TRACER_NAME = "convmem"
_lock = threading.Lock()
_state: dict[str, Any] = {"instrumented": False, "exporters": []}


def endpoint_configured() -> bool:
    return bool(settings.OTEL_EXPORTER_OTLP_ENDPOINT or settings.OTEL_EXPORTER_OTLP_TRACES_ENDPOINT)


def tracing_start(*, exporter: Any = None) -> bool:
    """Start tracing in this process if an endpoint is configured (or ``exporter`` is given:
    tests pass the SDK's in-memory one); True if it runs. Idempotent per process."""
    if trace is None or (exporter is None and not endpoint_configured()):
        return False
    with _lock:
        if _state["instrumented"] and exporter in _state["exporters"]:
            return True
        try:
            _provider_with(exporter)
            _instrument()
        except ImportError as error:
            logger.warning("OpenTelemetry is configured but not installed: %s", error)
            return False
        _state["exporters"].append(exporter)
        _state["instrumented"] = True
    return True


def tracing_stop() -> None:
    """Undo ``_instrument`` (tests); the exporters stay on the provider."""
    from opentelemetry.instrumentation.celery import CeleryInstrumentor
    from opentelemetry.instrumentation.django import DjangoInstrumentor

    DjangoInstrumentor().uninstrument()
    CeleryInstrumentor().uninstrument()
    connection_created.disconnect(_wrap_connection)
    for connection in connections.all(initialized_only=True):
        if _traced_execute in connection.execute_wrappers:
            connection.execute_wrappers.remove(_traced_execute)
    _state["instrumented"] = False


def _provider_with(exporter: Any) -> None:
    from opentelemetry.sdk.resources import Resource
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import BatchSpanProcessor, SimpleSpanProcessor

    provider = trace.get_tracer_provider()
    if not isinstance(provider, TracerProvider):
        resource = Resource.create({"service.name": settings.OTEL_SERVICE_NAME})
        provider = TracerProvider(resource=resource)
        trace.set_tracer_provider(provider)
    if exporter is not None:
        provider.add_span_processor(SimpleSpanProcessor(exporter))
    else:
        from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter

        provider.add_span_processor(BatchSpanProcessor(OTLPSpanExporter()))


def _instrument() -> None:
    from opentelemetry.instrumentation.celery import CeleryInstrumentor
    from opentelemetry.instrumentation.django import DjangoInstrumentor

    if not DjangoInstrumentor().is_instrumented_by_opentelemetry:
        DjangoInstrumentor().instrument()
    if not CeleryInstrumentor().is_instrumented_by_opentelemetry:
        CeleryInstrumentor().instrument()
    connection_created.connect(_wrap_connection, dispatch_uid="convmem.telemetry")
    for connection in connections.all(initialized_only=True):
        _wrap_connection(connection=connection)


def _wrap_connection(sender: Any = None, *, connection: Any, **kwargs: Any) -> None:
    if _traced_execute not in connection.execute_wrappers:
        connection.execute_wrappers.append(_traced_execute)


def _traced_execute(
    execute: Callable[..., Any], sql: str, params: Any, many: bool, context: dict[str, Any]
) -> Any:
    """One client span per statement (the database semantic conventions: system, namespace,
    operation, query text — with its placeholders, never the parameters)."""
    connection = context["connection"]
    operation = sql.lstrip().split(None, 1)[0].upper() if sql.strip() else ""
    tracer = trace.get_tracer(TRACER_NAME)
    attributes = {
        "db.system.name": _DB_SYSTEMS.get(connection.vendor, connection.vendor),
        "db.namespace": str(connection.settings_dict.get("NAME") or ""),
        "db.operation.name": operation,
        "db.query.text": sql,
    }
    name = f"{operation} {connection.vendor}".strip()
    with tracer.start_as_current_span(name, kind=SpanKind.CLIENT, attributes=attributes):
        return execute(sql, params, many, context)


_DB_SYSTEMS = {"postgresql": "postgresql", "sqlite": "sqlite"}


class ModelCallSpan:
    """The span of one model call, ended by ``finish`` (once, whatever happens after)."""

    def __init__(self, span: Any) -> None:
        self._span = span

    def finish(
        self,
        *,
        model: str | None = None,
        usage: dict[str, int] | None = None,
        finish_reason: str | None = None,
        error: BaseException | None = None,
    ) -> None:
        span, self._span = self._span, None
        if span is None:
            return
        if model:
            span.set_attribute("gen_ai.response.model", model)
        if finish_reason:
            span.set_attribute("gen_ai.response.finish_reasons", [finish_reason])
        for key, attribute in _USAGE_ATTRIBUTES.items():
            if usage and usage.get(key) is not None:
                span.set_attribute(attribute, usage[key])
        if error is not None:
            # As HTTP clients' spans have it: a refusal's status code, else the exception.
            status = getattr(getattr(error, "response", None), "status_code", None)
            span.set_attribute("error.type", str(status) if status else type(error).__qualname__)
            span.set_status(Status(StatusCode.ERROR, str(error)))
        span.end()


# convmem's usage keys (threads.content) and the GenAI semantic conventions' attributes.
_USAGE_ATTRIBUTES = {
    "prompt_tokens": "gen_ai.usage.input_tokens",
    "completion_tokens": "gen_ai.usage.output_tokens",
    "cached_tokens": "gen_ai.usage.cache_read.input_tokens",
    "cache_write_tokens": "gen_ai.usage.cache_creation.input_tokens",
}


def model_call_start(
    *,
    model: str,
    base_url: str,
    max_tokens: int | None = None,
    temperature: float | None = None,
    purpose: str,
) -> ModelCallSpan:
    """Start the span of a chat-completions call (``chat {model}``, the GenAI conventions).
    Not made current: a streamed answer ends it later, from another frame; ``purpose`` says
    which part of convmem called (``respond``, ``memo``)."""
    if trace is None:
        return ModelCallSpan(None)
    attributes: dict[str, Any] = {
        "gen_ai.operation.name": "chat",
        "gen_ai.provider.name": "openai",
        "gen_ai.request.model": model,
        "server.address": _host(base_url),
        "convmem.model_call.purpose": purpose,
    }
    if max_tokens is not None:
        attributes["gen_ai.request.max_tokens"] = max_tokens
    if temperature is not None:
        attributes["gen_ai.request.temperature"] = temperature
    span = trace.get_tracer(TRACER_NAME).start_span(
        f"chat {model}", kind=SpanKind.CLIENT, attributes=attributes
    )
    return ModelCallSpan(span)


@contextmanager
def model_call(**kwargs: Any) -> Iterator[ModelCallSpan]:
    """``model_call_start`` for a call that ends in the same frame; an exception ends the span
    as an error (the caller's ``finish`` with the reply's details wins if it came first)."""
    span = model_call_start(**kwargs)
    try:
        yield span
    except BaseException as error:
        span.finish(error=error)
        raise
    span.finish()


def _host(base_url: str) -> str:
    """The server's host, never the URL (which may carry credentials)."""
    from urllib.parse import urlsplit

    return urlsplit(base_url).hostname or ""
