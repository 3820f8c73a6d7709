"""Answers generated in a worker (``CONVMEM_RESPOND_IN_WORKER``): a real Celery worker on the
``generation`` queue, Redis streams, the real local chat server. The request only relays the
run's events, so a client that goes away costs nothing, re-attaches by ``Last-Event-ID`` or by
retrying its Idempotency-Key, and gets every token exactly once from one model call.
"""

import json
from collections.abc import Iterator
from datetime import timedelta
from typing import Any

import pytest
import redis
import requests
from django.conf import settings as django_settings
from django.utils import timezone
from redis.crc import key_slot

from audit.retention import retention_apply
from audit.services import retention_policy_set
from respond.events import run_keys, stream_closed
from respond.models import RespondRun
from tests.audit.conftest import OPERATOR
from tests.compaction.helpers import wait_for
from tests.conftest import make_thread, path_ids
from tests.faults.processes import WebServer, free_port
from tests.respond.conftest import CHAT_MODEL, REPLY
from tests.support.chat_server import ChatServer
from tests.support.worker import CeleryWorker, start_worker, worker_database_url
from threads.models import Message

pytestmark = [
    pytest.mark.worker,
    pytest.mark.django_db(transaction=True),
    pytest.mark.skipif(not django_settings.REDIS_URL, reason="runs need REDIS_URL"),
]

BUDGET = {"window_tokens": 4096, "reserve_tokens": 256}
WORDS = len(REPLY.split())


@pytest.fixture(scope="module")
def chat_server() -> Iterator[ChatServer]:
    with ChatServer() as server:
        yield server


@pytest.fixture(scope="module")
def generation_worker(chat_server: ChatServer, django_db_setup: None) -> Iterator[CeleryWorker]:
    env = {
        "CONVMEM_CHAT_BASE_URL": chat_server.base_url,
        "CONVMEM_CHAT_MODEL": CHAT_MODEL,
        "CONVMEM_RESPOND_IN_WORKER": "1",
    }
    with start_worker(env) as worker:
        yield worker


@pytest.fixture
def chat(chat_server: ChatServer, generation_worker: CeleryWorker, settings: Any) -> ChatServer:
    chat_server.configure(reply=REPLY, chunk_delay=0.0)
    chat_server.clear_requests()
    settings.CONVMEM_RESPOND_IN_WORKER = True
    settings.CONVMEM_CHAT_BASE_URL = chat_server.base_url
    return chat_server


def respond(kit, thread, key: str, **body: Any):
    payload = {"content": "My order ORD-1234 arrived broken.", **BUDGET, **body}
    return kit.client.post(
        f"/api/v1/threads/{thread.public_id}/respond",
        payload,
        format="json",
        HTTP_IDEMPOTENCY_KEY=key,
    )


def sse(chunks: Iterator[bytes], *, stop_after: int | None = None) -> list[dict[str, Any]]:
    """Parse SSE events (``id``, ``event``, ``data``) as they come; with ``stop_after``, close
    the stream after that many events (the client goes away)."""
    events: list[dict[str, Any]] = []
    buffer = b""
    try:
        for chunk in chunks:
            buffer += chunk
            while b"\n\n" in buffer:
                block, buffer = buffer.split(b"\n\n", 1)
                fields = dict(line.split(": ", 1) for line in block.decode().splitlines())
                data = json.loads(fields["data"])
                events.append({"id": int(fields["id"]), "event": fields["event"], "data": data})
                if stop_after is not None and len(events) >= stop_after:
                    return events
    finally:
        close = getattr(chunks, "close", None)
        if close:
            close()
    return events


def text_of(events: list[dict[str, Any]]) -> str:
    return "".join(e["data"]["text"] for e in events if e["event"] == "token")


def run_of(thread) -> RespondRun:
    return wait_for(lambda: RespondRun.objects.filter(thread=thread).first(), timeout=10)


def test_a_run_is_generated_in_the_worker_and_relayed_with_sequence_numbers(acme, chat):
    thread = make_thread(acme.tenant, turns=1)
    response = respond(acme, thread, "k1", stream=True)
    assert response.status_code == 200
    events = sse(response.streaming_content)
    assert [e["id"] for e in events] == list(range(1, len(events) + 1))
    assert events[0]["event"] == "turn"
    assert events[0]["data"]["run_id"].startswith("run_")
    assert events[-1]["event"] == "done"
    assert text_of(events) == REPLY
    done = events[-1]["data"]
    answer = done["assistant_message"]
    assert answer["content"] == REPLY
    assert answer["status"] == "complete"
    assert answer["model"] == CHAT_MODEL
    assert done["usage"]["completion_tokens"] == WORDS
    assert path_ids(thread)[-2:] == [done["user_message"]["id"], answer["id"]]
    assert len(chat.requests) == 1
    run = RespondRun.objects.get(thread=thread)
    assert (run.status, run.in_worker, run.seq) == ("complete", True, len(events))


def test_without_streaming_the_request_waits_for_the_stored_turn(acme, chat):
    thread = make_thread(acme.tenant)
    response = respond(acme, thread, "k1")
    assert response.status_code == 201, response.data
    assert response.data["assistant_message"]["content"] == REPLY
    replay = respond(acme, thread, "k1")
    assert replay.status_code == 201
    assert replay["Idempotent-Replayed"] == "true"
    assert len(chat.requests) == 1


@pytest.mark.parametrize("seen", [1, 4, WORDS + 1], ids=["after-turn", "mid-answer", "before-done"])
def test_a_client_that_drops_and_reattaches_gets_every_token_once(acme, chat, seen):
    chat.configure(chunk_delay=0.05)
    thread = make_thread(acme.tenant)
    first = respond(acme, thread, "k1", stream=True)
    head = sse(first.streaming_content, stop_after=seen)
    assert len(head) == seen
    run_id = head[0]["data"]["run_id"]

    rest = acme.client.get(
        f"/api/v1/threads/{thread.public_id}/runs/{run_id}/events",
        HTTP_LAST_EVENT_ID=str(head[-1]["id"]),
    )
    assert rest.status_code == 200
    tail = sse(rest.streaming_content)
    assert [e["id"] for e in head + tail] == list(range(1, len(head) + len(tail) + 1))
    assert text_of(head) + text_of(tail) == REPLY
    assert tail[-1]["event"] == "done"
    assert len(chat.requests) == 1
    assert Message.objects.filter(thread=thread, role="assistant").count() == 1


def test_a_retry_of_the_key_reattaches_to_the_live_run(acme, chat):
    chat.configure(chunk_delay=0.05)
    thread = make_thread(acme.tenant)
    first = respond(acme, thread, "k1", stream=True)
    sse(first.streaming_content, stop_after=3)
    retry = respond(acme, thread, "k1", stream=True)
    assert retry.status_code == 200
    events = sse(retry.streaming_content)
    assert text_of(events) == REPLY  # from the start of the run
    assert events[-1]["event"] == "done"
    assert len(chat.requests) == 1
    assert Message.objects.filter(thread=thread, role="user").count() == 1
    assert Message.objects.filter(thread=thread, role="assistant").count() == 1


def test_a_background_run_is_202_then_read_when_done(acme, globex, chat):
    chat.configure(chunk_delay=0.05)
    thread = make_thread(acme.tenant)
    started = respond(acme, thread, "k1", background=True)
    assert started.status_code == 202, started.data
    run = started.data
    assert run["id"].startswith("run_")
    assert run["state"] in {"queued", "running"}
    assert run["assistant_message_id"] is None
    url = f"/api/v1/threads/{thread.public_id}/runs/{run['id']}"

    # One answer at a time: the thread is busy until the run ends.
    busy = respond(acme, thread, "k2")
    assert busy.status_code == 409
    assert busy.data["code"] == "thread_busy"

    done = wait_for(
        lambda: (r := acme.client.get(url).data)["state"] == "completed" and r, timeout=30
    )
    answer = Message.objects.get(thread=thread, role="assistant")
    assert done["assistant_message_id"] == answer.public_id
    assert answer.content == REPLY
    assert done["seq"] == WORDS + 2
    assert done["error"] is None
    assert globex.client.get(url).status_code == 404


def test_cancel_stops_the_model_and_stores_the_partial_as_interrupted(acme, chat):
    chat.configure(chunk_delay=0.2)
    aborted = chat.aborted_streams
    thread = make_thread(acme.tenant)
    run = respond(acme, thread, "k1", background=True).data
    base = f"/api/v1/threads/{thread.public_id}/runs/{run['id']}"
    head = sse(acme.client.get(f"{base}/events").streaming_content, stop_after=4)
    assert [e["event"] for e in head] == ["turn", "token", "token", "token"]

    cancelled = acme.client.post(f"{base}/cancel")
    assert cancelled.status_code == 202
    tail = sse(acme.client.get(f"{base}/events", HTTP_LAST_EVENT_ID="4").streaming_content)
    assert tail[-1]["event"] == "error"
    assert tail[-1]["data"]["code"] == "run_cancelled"
    state = acme.client.get(base).data
    assert state["state"] == "interrupted"
    assert state["error"] == "cancelled"
    partial = Message.objects.get(thread=thread, role="assistant")
    assert partial.status == "interrupted"
    assert partial.content == text_of(head + tail)
    assert REPLY.startswith(partial.content)
    assert len(partial.content) < len(REPLY)
    assert state["assistant_message_id"] == partial.public_id
    wait_for(lambda: chat.aborted_streams == aborted + 1, timeout=20)
    assert acme.client.post(f"{base}/cancel").data["code"] == "run_finished"


def test_with_redis_down_respond_is_503_and_writes_nothing(acme, chat):
    """The web process's Redis (broker and streams) is a port nobody listens on: the run's
    task is refused inside the transaction that would store the turn, so nothing is stored."""
    env = {
        "DATABASE_URL": worker_database_url(),
        "CONVMEM_KEYS_DATABASE_URL": worker_database_url("keys"),
        "CONN_MAX_AGE": "0",
        "REDIS_URL": f"redis://127.0.0.1:{free_port()}/0",
        "CONVMEM_RESPOND_IN_WORKER": "1",
        "CONVMEM_CHAT_BASE_URL": chat.base_url,
    }
    thread = make_thread(acme.tenant)
    with WebServer(env, workers=1, threads=2) as web:
        response = requests.post(
            f"{web.url}/api/v1/threads/{thread.public_id}/respond",
            json={"content": "Where is my parcel?", "stream": True},
            headers={"Authorization": f"Bearer {acme.key}", "Idempotency-Key": "down-1"},
            timeout=60,
        )
    assert response.status_code == 503, response.text
    assert response.json()["code"] == "queue_unavailable"
    assert not Message.objects.filter(thread=thread, role="user").exists()
    assert not RespondRun.objects.filter(thread=thread).exists()
    assert len(chat.requests) == 0


def _stream_key(run: RespondRun) -> str:
    return run_keys(run.public_id)[0]


def test_a_runs_keys_share_one_cluster_slot():
    """The append script uses the stream and the fence, the erasure's script all three: on
    Redis Cluster a script's keys must hash to one slot, so they share a hash tag."""
    keys = run_keys("run_0123456789abcdef")
    assert all("{run_0123456789abcdef}" in key for key in keys)
    assert len({key_slot(key.encode()) for key in keys}) == 1


def _answered_run(kit, thread, key: str) -> RespondRun:
    assert respond(kit, thread, key).status_code == 201
    run = RespondRun.objects.get(idempotency__key=key, thread=thread)
    assert redis.Redis.from_url(django_settings.REDIS_URL).exists(_stream_key(run))
    return run


def test_erasure_deletes_the_runs_streams(acme, chat):
    """The answers' text is in the runs' Redis streams until they expire: a redaction of an
    answer, a retention pass and a thread's deletion delete them at once."""
    client = redis.Redis.from_url(django_settings.REDIS_URL)
    thread = make_thread(acme.tenant)
    first = _answered_run(acme, thread, "k1")
    second = _answered_run(acme, thread, "k2")

    answer = Message.objects.get(pk=first.assistant_message_id)
    redact = f"/api/v1/threads/{thread.public_id}/messages/{answer.public_id}/redact"
    assert acme.client.post(redact, {"reason": "pii"}, format="json").status_code == 200
    assert not client.exists(_stream_key(first))
    assert client.exists(_stream_key(second))  # only the runs that carried the message

    old = timezone.now() - timedelta(days=40)
    Message.objects.filter(thread=thread).update(created_at=old)
    retention_apply(
        policy=retention_policy_set(tenant=acme.tenant, actor=OPERATOR, erase_content_after_days=30)
    )
    assert not client.exists(_stream_key(second))

    other = make_thread(acme.tenant)
    third = _answered_run(acme, other, "k3")
    assert acme.client.delete(f"/api/v1/threads/{other.public_id}").status_code == 200
    assert not client.exists(_stream_key(third))


def test_a_thread_is_erased_with_redis_down_and_its_streams_expire(acme, chat, settings):
    """Best effort: the erasure commits; the stream keeps its expiry as the backstop."""
    client = redis.Redis.from_url(django_settings.REDIS_URL)
    thread = make_thread(acme.tenant)
    run = _answered_run(acme, thread, "k1")
    settings.REDIS_URL = f"redis://127.0.0.1:{free_port()}/0"
    assert acme.client.delete(f"/api/v1/threads/{thread.public_id}").status_code == 200
    answer = Message.objects.get(pk=run.assistant_message_id)
    assert answer.erased_at is not None
    assert 0 < client.ttl(_stream_key(run)) <= django_settings.CONVMEM_RUN_EVENTS_TTL


def _erase(kit, thread, run: dict[str, Any], how: str) -> None:
    if how == "thread_deleted":
        assert kit.client.delete(f"/api/v1/threads/{thread.public_id}").status_code == 200
    else:
        question = f"/api/v1/threads/{thread.public_id}/messages/{run['user_message_id']}/redact"
        assert kit.client.post(question, {"reason": "pii"}, format="json").status_code == 200


@pytest.mark.parametrize("how", ["thread_deleted", "question_redacted"])
def test_a_run_generating_when_its_content_is_erased_stops_and_keeps_nothing(acme, chat, how):
    """Erased mid-answer (its thread deleted, or its question redacted, which leaves the
    thread open to writes): the worker's next append is refused, so the stream is not made
    again; the worker stops the model, stores no answer and ends the run ``cancelled``."""
    client = redis.Redis.from_url(django_settings.REDIS_URL)
    chat.configure(chunk_delay=0.2)
    aborted = chat.aborted_streams
    thread = make_thread(acme.tenant)
    run = respond(acme, thread, "k1", background=True).data
    events = f"/api/v1/threads/{thread.public_id}/runs/{run['id']}/events"
    head = sse(acme.client.get(events).streaming_content, stop_after=3)
    assert [e["event"] for e in head] == ["turn", "token", "token"]

    _erase(acme, thread, run, how)
    ended = wait_for(
        lambda: (r := RespondRun.objects.get(public_id=run["id"])).status != "streaming" and r,
        timeout=20,
    )
    assert (ended.status, ended.error_code, ended.assistant_message_id) == (
        "cancelled",
        "erased",
        None,
    )
    wait_for(lambda: chat.aborted_streams == aborted + 1, timeout=20)
    # The worker has left its loop (it ended the run after it): nothing more can come.
    assert not client.exists(run_keys(run["id"])[0])
    assert stream_closed(run["id"])
    assert not Message.objects.filter(thread=thread, role="assistant").exists()
    assert len(chat.requests) == 1
