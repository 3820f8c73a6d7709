"""Small helpers shared by the threads API tests."""

from dataclasses import dataclass
from typing import Any

from rest_framework.response import Response
from rest_framework.test import APIClient

from auditlog.models import AuditEvent
from threads.models import IdempotencyRecord, Message, Thread


@dataclass(frozen=True)
class Rows:
    """Row counts of everything a write can leave behind."""

    threads: int
    messages: int
    audit_events: int
    idempotency_records: int

    @classmethod
    def now(cls) -> "Rows":
        return cls(
            threads=Thread.objects.count(),
            messages=Message.objects.count(),
            audit_events=AuditEvent.objects.count(),
            idempotency_records=IdempotencyRecord.objects.count(),
        )


def post(client: APIClient, url: str, body: Any, key: str | None = None) -> Response:
    """POST ``body`` as JSON, with ``key`` as the Idempotency-Key when given."""
    headers = {} if key is None else {"HTTP_IDEMPOTENCY_KEY": key}
    return client.post(url, body, format="json", **headers)


def messages_url(thread_id: str) -> str:
    return f"/api/v1/threads/{thread_id}/messages"


def edit_url(thread_id: str, message_id: str) -> str:
    return f"/api/v1/threads/{thread_id}/messages/{message_id}/edit"


def error_of(response: Response) -> tuple[int, str]:
    """(status, code) of an error response, after checking the body is ``{code, detail, …}``."""
    data = response.json()
    assert isinstance(data.get("code"), str), data
    assert isinstance(data.get("detail"), str), data
    assert data["detail"], data
    return response.status_code, data["code"]
