"""A generation worker SIGKILLed mid-answer: the run's lease runs out, a relay ends with
``run_lost`` instead of hanging, and a retry with the same Idempotency-Key takes the run over
(attempt 2, a new worker) and stores exactly one answer. The killed worker's delivery, handed
out again by Redis (visibility timeout 5 s), finds its attempt taken over and does nothing.

Without any client, a real ``celery beat`` (takeover every second) takes the orphaned run over:
the text the dead worker streamed is kept as the interrupted answer and its stream ends, or,
when it died before the first token, the run is generated again and completes.
"""

import os
import signal
from typing import Any

import pytest
import requests
from django.conf import settings as django_settings

from respond.models import RespondRun
from tests.compaction.helpers import wait_for
from tests.conftest import make_thread, path_ids
from tests.faults.processes import WebServer
from tests.respond.conftest import CHAT_MODEL, REPLY
from tests.respond.test_runs import BUDGET, sse, text_of
from tests.support.worker import queue_drained, start_beat, start_worker, worker_database_url
from threads.models import Message

pytestmark = [
    pytest.mark.faults,
    pytest.mark.worker,
    pytest.mark.django_db(transaction=True),
    pytest.mark.skipif(not django_settings.REDIS_URL, reason="runs need REDIS_URL"),
]
LEASE = 2


def worker_env(chat) -> dict[str, str]:
    return {
        "CONVMEM_CHAT_BASE_URL": chat.base_url,
        "CONVMEM_CHAT_MODEL": CHAT_MODEL,
        "CONVMEM_RESPOND_IN_WORKER": "1",
        "CONVMEM_RESPOND_LEASE_SECONDS": str(LEASE),
        "CONVMEM_RESPOND_TAKEOVER_SECONDS": "1",
        "CELERY_VISIBILITY_TIMEOUT": "5",
    }


def test_a_worker_killed_mid_answer_is_taken_over_once(acme, chat, settings: Any):
    settings.CONVMEM_RESPOND_IN_WORKER = True
    settings.CONVMEM_RESPOND_LEASE_SECONDS = LEASE
    env = worker_env(chat)
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


def _background_run(acme, thread) -> tuple[dict[str, Any], str]:
    url = f"/api/v1/threads/{thread.public_id}/respond"
    body = {"content": "Where is my parcel?", **BUDGET, "background": True}
    run = acme.client.post(url, body, format="json", HTTP_IDEMPOTENCY_KEY="k1").data
    return run, f"/api/v1/threads/{thread.public_id}/runs/{run['id']}/events"


def test_beat_keeps_the_partial_of_a_worker_killed_mid_answer(acme, chat, settings: Any):
    settings.CONVMEM_RESPOND_IN_WORKER = True
    settings.CONVMEM_RESPOND_LEASE_SECONDS = LEASE
    env = worker_env(chat)
    chat.configure(chunk_delay=0.3)
    thread = make_thread(acme.tenant)

    with start_worker(env) as first:
        _run, events = _background_run(acme, thread)
        head = sse(acme.client.get(events).streaming_content, stop_after=4)
        os.killpg(first.process.pid, signal.SIGKILL)

    # No client retries: beat and a new worker take the run over.
    with start_worker(env), start_beat(env):
        ended = wait_for(
            lambda: (r := RespondRun.objects.get(thread=thread)).status != "streaming" and r,
            timeout=60,
        )
        # The killed worker's delivery comes back (visibility timeout) and does nothing.
        wait_for(queue_drained, timeout=30)
    assert (ended.status, ended.error_code, ended.attempt) == ("interrupted", "worker_lost", 2)
    answers = Message.objects.filter(thread=thread, role="assistant")
    assert answers.count() == 1
    partial = answers.get()
    assert partial.status == "interrupted"
    assert ended.assistant_message_id == partial.pk

    # A re-attached client sees every token the dead worker streamed once, then the end.
    tail = sse(acme.client.get(events, HTTP_LAST_EVENT_ID="4").streaming_content)
    seen = head + tail
    assert [e["id"] for e in seen] == list(range(1, len(seen) + 1))
    assert text_of(seen) == partial.content
    assert REPLY.startswith(partial.content)
    assert len(partial.content) < len(REPLY)
    assert tail[-1]["event"] == "error"
    assert tail[-1]["data"]["code"] == "run_lost"
    state = acme.client.get(events.removesuffix("/events")).data
    assert (state["state"], state["error"]) == ("interrupted", "worker_lost")
    assert state["assistant_message_id"] == partial.public_id
    assert len(chat.requests) == 1  # the model was not asked again

    # The client decides to answer again: a retry of its key, as for any interrupted answer,
    # relays the new attempt only (not the old tokens, nor the old end).
    chat.configure(chunk_delay=0.0)
    with start_worker(env):
        retry = acme.client.post(
            f"/api/v1/threads/{thread.public_id}/respond",
            {"content": "Where is my parcel?", **BUDGET, "stream": True},
            format="json",
            HTTP_IDEMPOTENCY_KEY="k1",
        )
        again = sse(retry.streaming_content)
    assert again[0]["event"] == "turn"
    assert again[0]["data"]["resumed"] is True
    assert again[0]["id"] == seen[-1]["id"] + 1
    assert text_of(again) == REPLY
    assert again[-1]["event"] == "done"
    answer = Message.objects.get(thread=thread, role="assistant", status="complete")
    assert answer.edits_id == partial.pk
    assert path_ids(thread)[-1] == answer.public_id


def test_beat_generates_again_a_run_whose_worker_died_before_any_text(acme, chat, settings: Any):
    settings.CONVMEM_RESPOND_IN_WORKER = True
    settings.CONVMEM_RESPOND_LEASE_SECONDS = LEASE
    env = worker_env(chat)
    chat.configure(mode="timeout", delay=60)  # the model answers nothing for a minute
    thread = make_thread(acme.tenant)

    with start_worker(env) as first:
        _run, events = _background_run(acme, thread)
        wait_for(lambda: len(chat.requests) == 1, timeout=30)
        os.killpg(first.process.pid, signal.SIGKILL)

    chat.configure(mode="ok")
    with start_worker(env), start_beat(env):
        ended = wait_for(
            lambda: (r := RespondRun.objects.get(thread=thread)).status != "streaming" and r,
            timeout=60,
        )
        wait_for(queue_drained, timeout=30)
    assert (ended.status, ended.attempt) == ("complete", 2)
    answers = Message.objects.filter(thread=thread, role="assistant")
    assert [(a.content, a.status) for a in answers] == [(REPLY, "complete")]

    seen = sse(acme.client.get(events).streaming_content)
    assert [e["id"] for e in seen] == list(range(1, len(seen) + 1))
    assert [e["event"] for e in seen[:2]] == ["turn", "turn"]
    assert seen[1]["data"]["resumed"] is True
    assert text_of(seen) == REPLY
    assert seen[-1]["event"] == "done"
    assert len(chat.requests) == 2


def test_the_web_process_killed_mid_stream_leaves_the_run_going(acme, chat, settings: Any):
    """gunicorn (master and worker) SIGKILLed while it relays a run: the worker generates on,
    and a re-attach by ``Last-Event-ID`` gets every remaining token once, from one model call."""
    settings.CONVMEM_RESPOND_IN_WORKER = True
    chat.configure(chunk_delay=0.3)
    env = worker_env(chat)
    web_env = {
        **env,
        "DATABASE_URL": worker_database_url(),
        "CONVMEM_KEYS_DATABASE_URL": worker_database_url("keys"),
        "CONN_MAX_AGE": "0",
    }
    thread = make_thread(acme.tenant)

    with start_worker(env):
        web = WebServer(web_env, workers=1, threads=2).start()
        try:
            response = requests.post(
                f"{web.url}/api/v1/threads/{thread.public_id}/respond",
                json={"content": "Where is my parcel?", **BUDGET, "stream": True},
                headers={"Authorization": f"Bearer {acme.key}", "Idempotency-Key": "k1"},
                stream=True,
                timeout=60,
            )
            assert response.status_code == 200
            head = sse(response.iter_content(chunk_size=None), stop_after=4)
            os.killpg(web.process.pid, signal.SIGKILL)
        finally:
            web.stop()

        events = f"/api/v1/threads/{thread.public_id}/runs/{head[0]['data']['run_id']}/events"
        tail = sse(
            acme.client.get(events, HTTP_LAST_EVENT_ID=str(head[-1]["id"])).streaming_content
        )
    seen = head + tail
    assert [e["id"] for e in seen] == list(range(1, len(seen) + 1))
    assert text_of(seen) == REPLY
    assert tail[-1]["event"] == "done"
    assert len(chat.requests) == 1
    answers = Message.objects.filter(thread=thread, role="assistant")
    assert [(a.content, a.status) for a in answers] == [(REPLY, "complete")]
