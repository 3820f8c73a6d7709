"""Helpers for the context and memo tests: conversations with facts, the context endpoint."""

import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from openai.types.chat import ChatCompletionMessageParam
from pydantic import TypeAdapter
from rest_framework.response import Response
from rest_framework.test import APIClient

from auditlog.models import AuditEvent
from compaction.models import AssemblyRecord, ContentBlob, Summary
from tests.conftest import SYSTEM
from threads import services
from threads.models import Message, Thread

FILLER = (
    "We went through the delivery options again and compared the carriers, the packaging and "
    "the insurance terms before settling anything."
)


def turn_text(index: int, role: str) -> str:
    """A turn with checkable facts (an order id, an amount) and some filler (~45 tokens)."""
    if role == "user":
        return f"Question {index}: what about order ORD-{1000 + index} for ${index}.50? {FILLER}"
    return f"Answer {index}: order ORD-{1000 + index} ships on day {index % 28 + 1}. {FILLER}"


def grow(thread: Thread, turns: int, *, start: int = 0) -> list[Message]:
    """Append ``turns`` alternating user/assistant messages through the real service."""
    appended = []
    for index in range(start, start + turns):
        role = "user" if index % 2 == 0 else "assistant"
        appended.append(
            services.message_append(
                thread=thread, actor=SYSTEM, role=role, content=turn_text(index, role)
            )
        )
    thread.refresh_from_db()
    return appended


def context_url(thread: Thread | str) -> str:
    thread_id = thread if isinstance(thread, str) else thread.public_id
    return f"/api/v1/threads/{thread_id}/context"


def summaries_url(thread: Thread | str) -> str:
    thread_id = thread if isinstance(thread, str) else thread.public_id
    return f"/api/v1/threads/{thread_id}/summaries"


def post_context(client: APIClient, thread: Thread | str, **body: Any) -> Response:
    return client.post(context_url(thread), body, format="json")


@dataclass(frozen=True)
class Recorded:
    """Counts of everything a context request can write."""

    assemblies: int
    audit_events: int
    summaries: int
    blobs: int

    @classmethod
    def now(cls) -> "Recorded":
        return cls(
            assemblies=AssemblyRecord.objects.count(),
            audit_events=AuditEvent.objects.count(),
            summaries=Summary.objects.count(),
            blobs=ContentBlob.objects.count(),
        )


def wait_for(condition: Callable[[], Any], *, timeout: float = 60.0, interval: float = 0.2) -> Any:
    """Poll ``condition`` until it returns something truthy; fail after ``timeout`` seconds."""
    deadline = time.monotonic() + timeout
    while True:
        value = condition()
        if value:
            return value
        if time.monotonic() > deadline:
            raise AssertionError(f"condition not met within {timeout} s")
        time.sleep(interval)


_CHAT_INPUT = TypeAdapter(list[ChatCompletionMessageParam])


def assert_valid_chat_input(messages: list[dict[str, Any]]) -> None:
    """``messages`` is input the OpenAI Chat Completions API accepts: each message matches the
    SDK's own types, every assistant turn's tool calls are answered by the tool messages
    right after it, and no tool message stands without its call."""
    for message in _CHAT_INPUT.validate_python(messages):
        for value in message.values():
            if not isinstance(value, str | None | list | dict):
                list(value)  # the SDK types some fields as iterables: validate them too
    open_calls: list[str] = []
    for message in messages:
        if message["role"] == "tool":
            assert message["tool_call_id"] in open_calls, f"orphan tool message {message}"
            open_calls.remove(message["tool_call_id"])
            continue
        assert not open_calls, f"tool calls {open_calls} are not answered before {message}"
        open_calls = [call["id"] for call in message.get("tool_calls") or ()]
    assert not open_calls, f"tool calls {open_calls} are not answered"
