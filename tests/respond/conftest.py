"""The respond endpoint's fixtures: a real local OpenAI-compatible server that streams."""

import json
from collections.abc import Iterator
from typing import Any

import pytest

from tests.faults.processes import WebServer
from tests.support.chat_server import ChatServer
from tests.support.worker import worker_database_url

REPLY = "The replacement for order ORD-1234 ships on Monday, 3 March, by courier."
CHAT_MODEL = "chat-test-model"


@pytest.fixture
def chat(settings: Any) -> Iterator[ChatServer]:
    """The chat server the respond endpoint calls, answering ``REPLY`` word by word."""
    with ChatServer() as server:
        server.configure(reply=REPLY)
        settings.CONVMEM_CHAT_BASE_URL = server.base_url
        settings.CONVMEM_CHAT_MODEL = CHAT_MODEL
        yield server


def sse_events(raw: bytes | str) -> list[tuple[str, dict[str, Any]]]:
    """Parse an SSE body into (event, data) pairs."""
    text = raw.decode() if isinstance(raw, bytes) else raw
    events = []
    for block in text.split("\n\n"):
        if not block.strip():
            continue
        fields = dict(line.split(": ", 1) for line in block.splitlines())
        events.append((fields["event"], json.loads(fields["data"])))
    return events


@pytest.fixture
def web(chat: ChatServer, django_db_setup: None) -> Iterator[WebServer]:
    """gunicorn (threaded) on the test database, calling ``chat``: for tests that need real
    concurrent requests or a client that hangs up (``transaction=True``)."""
    env = {
        "DATABASE_URL": worker_database_url(),
        "CONVMEM_KEYS_DATABASE_URL": worker_database_url("keys"),
        "CONN_MAX_AGE": "0",
        "CONVMEM_CHAT_BASE_URL": chat.base_url,
        "CONVMEM_CHAT_MODEL": CHAT_MODEL,
        "CONVMEM_RESPOND_IN_WORKER": "0",
    }
    with WebServer(env, workers=1, threads=4) as server:
        yield server
