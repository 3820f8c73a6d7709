"""A generation worker SIGKILLed mid-answer: the run's lease runs out, a relay ends with
``run_lost`` instead of hanging, and a retry with the same Idempotency-Key takes the run over
(attempt 2, a new worker) and stores exactly one answer. The killed worker's delivery, handed
out again by Redis (visibility timeout 5 s), finds its attempt taken over and does nothing.
"""

import os
import signal
from typing import Any

import pytest
from django.conf import settings as django_settings

from respond.models import RespondRun
from tests.compaction.helpers import wait_for
from tests.conftest import make_thread
from tests.respond.conftest import CHAT_MODEL, REPLY
from tests.respond.test_runs import BUDGET, sse, text_of
from tests.support.worker import start_worker
from threads.models import Message

pytestmark = [
    pytest.mark.faults,
    pytest.mark.worker,
    pytest.mark.django_db(transaction=True),
    pytest.mark.skipif(not django_settings.REDIS_URL, reason="runs need REDIS_URL"),
]
LEASE = 2


def test_a_worker_killed_mid_answer_is_taken_over_once(acme, chat, settings: Any):
    settings.CONVMEM_RESPOND_IN_WORKER = True
    settings.CONVMEM_RESPOND_LEASE_SECONDS = LEASE
    env = {
        "CONVMEM_CHAT_BASE_URL": chat.base_url,
        "CONVMEM_CHAT_MODEL": CHAT_MODEL,
        "CONVMEM_RESPOND_IN_WORKER": "1",
        "CONVMEM_RESPOND_LEASE_SECONDS": str(LEASE),
        "CELERY_VISIBILITY_TIMEOUT": "5",
    }
    chat.configure(chunk_delay=0.3)
    thread = make_thread(acme.tenant)
    url = f"/api/v1/threads/{thread.public_id}/respond"
    body = {"content": "Where is my parcel?", **BUDGET, "background": True}

    with start_worker(env) as first:
        run = acme.client.post(url, body, format="json", HTTP_IDEMPOTENCY_KEY="k1").data
        events = f"/api/v1/threads/{thread.public_id}/runs/{run['id']}/events"
        head = sse(acme.client.get(events).streaming_content, stop_after=3)
        os.killpg(first.process.pid, signal.SIGKILL)

    # The relay does not hang on a dead worker: once the lease runs out it says so.
    tail = sse(acme.client.get(events, HTTP_LAST_EVENT_ID="3").streaming_content)
    assert tail[-1]["event"] == "error"
    assert tail[-1]["data"]["code"] == "run_lost"
    assert REPLY.startswith(text_of(head + tail))

    chat.configure(chunk_delay=0.0)
    with start_worker(env):
        retried = acme.client.post(
            url, {**body, "background": False}, format="json", HTTP_IDEMPOTENCY_KEY="k1"
        )
        assert retried.status_code == 201, retried.data
        assert retried.data["assistant_message"]["content"] == REPLY
        # The killed worker's delivery comes back and finds attempt 1 taken over.
        wait_for(lambda: RespondRun.objects.get(thread=thread).status == "complete", timeout=10)
    stored = RespondRun.objects.get(thread=thread)
    assert stored.attempt == 2
    assert Message.objects.filter(thread=thread, role="user").count() == 1
    answers = Message.objects.filter(thread=thread, role="assistant")
    assert [a.content for a in answers] == [REPLY]
