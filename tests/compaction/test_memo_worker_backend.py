"""A real worker writing memos through the OpenAI-compatible backend against a real local
chat-completions server: duplicate deliveries, and a backend that fails and then recovers."""

import time
from collections.abc import Iterator

import pytest

from auditlog.models import AuditEvent
from compaction.models import Summary
from convmem.celery import app
from tests.compaction.helpers import grow, post_context, wait_for
from tests.conftest import make_thread
from tests.support.chat_server import ChatServer
from tests.support.worker import queue_drained, start_worker

pytestmark = [pytest.mark.worker, pytest.mark.django_db(transaction=True)]

SMALL = {"window_tokens": 600, "reserve_tokens": 100}


@pytest.fixture(scope="module")
def chat_server(django_db_setup: None) -> Iterator[ChatServer]:
    with (
        ChatServer() as server,
        start_worker(
            {
                "CONVMEM_SUMMARIZER_BACKEND": "openai",
                "CONVMEM_OPENAI_BASE_URL": server.base_url,
                "CONVMEM_OPENAI_MODEL": "test-memo-model",
                "CONVMEM_OPENAI_TIMEOUT": "10",
                "CONVMEM_MEMO_RETRY_BACKOFF": "0.2",
                "CONVMEM_MEMO_RETRY_BACKOFF_MAX": "1",
                "CONVMEM_MEMO_MAX_RETRIES": "50",
            }
        ),
    ):
        yield server


@pytest.fixture
def server(chat_server: ChatServer) -> ChatServer:
    chat_server.configure(mode="ok", delay=2.0)
    # Every test grows its thread with the same contents: count only this test's requests.
    chat_server.clear_requests()
    return chat_server


def _status(summary: Summary) -> str:
    summary.refresh_from_db()
    return summary.status


def _completions(server: ChatServer, summary: Summary) -> int:
    """Completion requests the server received for this summary's range (the prompt carries
    the range's messages, not their ids: the transcript ends with the range's last message)."""
    last = summary.last.content
    return sum(
        request.body["messages"][-1]["content"].endswith(last) for request in server.requests
    )


def test_a_task_delivered_several_times_writes_one_memo(acme, server):
    # Slow answers keep the first delivery busy while the others arrive, two at a time.
    server.configure(mode="timeout", delay=1.5)
    thread = make_thread(acme.tenant)
    grow(thread, 30)
    r = post_context(acme.client, thread, **SMALL)
    pending = Summary.objects.get(public_id=r.data["pending_memo"]["summary_id"])

    for _ in range(3):
        app.send_task("compaction.summary_write", args=[pending.pk])

    wait_for(lambda: _status(pending) == "ready")
    wait_for(queue_drained)
    time.sleep(1)  # a delivery taken just before the queue emptied finishes (as a no-op)
    assert Summary.objects.filter(thread=thread).count() == 1
    assert _completions(server, pending) == 1
    assert pending.attempts == 1
    assert pending.model == "test-memo-model"
    assert AuditEvent.objects.filter(action="summary.written").count() == 1


def test_a_failing_backend_is_retried_until_it_recovers_while_context_is_served(acme, server):
    server.configure(mode="fail_n_then_ok", fail_n=10_000)
    thread = make_thread(acme.tenant)
    grow(thread, 30)
    r = post_context(acme.client, thread, **SMALL)
    pending = Summary.objects.get(public_id=r.data["pending_memo"]["summary_id"])

    def attempts() -> int:
        pending.refresh_from_db()
        return pending.attempts

    wait_for(lambda: attempts() >= 3)
    during = post_context(acme.client, thread, **SMALL)
    assert during.status_code == 200
    assert during.data["memo_status"] == "pending"
    assert during.data["pending_memo"]["summary_id"] == pending.public_id
    assert _status(pending) == "pending"
    assert "HTTP 500" in pending.error
    assert Summary.objects.filter(thread=thread).count() == 1

    server.configure(fail_n=2)  # the next two calls fail too, then the backend is back

    wait_for(lambda: _status(pending) == "ready")
    assert pending.error == ""
    assert pending.attempts >= 5
    assert _completions(server, pending) == pending.attempts
    after = post_context(acme.client, thread, **SMALL)
    assert after.data["memo_status"] == "ready"
    assert after.data["sections"]["memo"]["summary_id"] == pending.public_id
