"""Server-Sent Events of ``/respond`` (read with httpx-sse): the event type and error mapping."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from .errors import APIError
from .models import RespondResult

# The HTTP status a non-streaming /respond answers for each `error` event's code.
ERROR_STATUS = {
    "model_unavailable": 503,
    "queue_unavailable": 503,
    "run_lost": 503,
    "run_cancelled": 409,
    "service_unavailable": 503,
    "model_error": 502,
    "answer_too_long": 502,
    "not_found": 404,
    "internal_error": 500,
}


@dataclass(frozen=True)
class StreamEvent:
    """One event: ``turn`` (the stored user turn), ``token`` (``text``), ``done`` (``result``,
    the stored turn), or ``restart`` (made by the client: the connection dropped, the model
    failed mid-answer, or the server took the run over and asked the model again (a ``turn``
    with ``resumed``), and the answer starts over; what was shown so far is superseded).
    ``id`` and ``retry`` are the event's SSE fields, when the server sends them."""

    type: str
    data: dict[str, Any]
    id: str | None = None
    retry: int | None = None
    idempotency_key: str | None = None

    @property
    def text(self) -> str:
        """A ``token`` event's piece of the answer ("" for other events)."""
        return str(self.data.get("text", "")) if self.type == "token" else ""

    @property
    def result(self) -> RespondResult | None:
        """The stored turn, on ``done``."""
        if self.type != "done":
            return None
        return RespondResult.from_json(self.data, idempotency_key=self.idempotency_key)


def stream_error(data: dict[str, Any], key: str | None) -> APIError:
    code = str(data.get("code", "internal_error"))
    status = data.get("status")
    return APIError(
        status if isinstance(status, int) else ERROR_STATUS.get(code, 502),
        code,
        str(data.get("detail", "")),
        body=data,
        idempotency_key=key,
    )


def event_seq(event_id: str | None) -> int:
    """An event's number (its ``id:``; the server numbers a run's events 1, 2, …), 0 when it
    has none (an answer generated in the request)."""
    return int(event_id) if event_id and event_id.isdigit() else 0


def resumable(error: APIError) -> bool:
    """An error event a retry with the same key completes (the model failed mid-answer, the
    worker generating the answer stopped: ``run_lost``)."""
    return error.status == 503
