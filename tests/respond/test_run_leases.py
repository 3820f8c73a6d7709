"""The lease of a run generated in a worker, against a real worker and the local streaming
chat server, with 2-second leases; beat's takeover is a real ``celery beat`` (every second)
while a worker consumes its queue (``bulk``), and is called as beat's task does while none does.

- A live worker keeps its lease while the model says nothing (a heartbeat thread renews it,
  not the chunks): a model silent for three leases is not taken over; one model call, one
  answer.
- A queued run's lease is the queue's (``CONVMEM_RESPOND_QUEUE_SECONDS``), not the worker's:
  a run waiting in the broker longer than the lease still holds its thread, a retry of its key
  re-attaches, and the worker that comes to it generates it (attempt 1). Past the queue's
  lease beat ends it ``failed`` (``run_expired_in_queue``) and a retry of the key queues it
  again; the first task, when it comes, does nothing. That retried attempt, once its task is
  sent, also waits in the queue longer than a lease.
- A queued run whose task the broker lost (a consumer killed between taking the message and
  recording it as unacknowledged) has its task sent again by beat's pass, with a doubling
  wait; a worker given two copies answers once.
- A takeover whose request is killed after its claim and before it sends the task holds the
  run for a lease only: then a retry of the key takes it over again and a worker answers it.
- The takeover runs on ``bulk``: a worker consuming only that queue, and no generation worker
  at all (all dead), takes over a run whose worker died and keeps its partial answer; or,
  when the run's question was erased since, keeps nothing and ends it ``cancelled``.

And a task that comes before the request that queued it has committed (it is queued inside
that transaction) waits for the commit and generates at once, without a retry.
"""

import time
from concurrent.futures import ThreadPoolExecutor
from datetime import timedelta
from itertools import chain
from typing import Any

import pytest
import redis
from django.conf import settings as django_settings
from django.db import connection
from django.utils import timezone

from respond import events as run_events
from respond import services
from respond.models import RespondRun
from respond.tasks import take_over_orphaned_runs
from tests.compaction.helpers import wait_for
from tests.conftest import make_thread
from tests.respond.conftest import REPLY
from tests.respond.test_run_faults import LEASE, worker_env
from tests.respond.test_runs import BUDGET, sse, text_of
from tests.support.worker import queue_drained, start_beat, start_worker
from threads.models import IdempotencyRecord, Message

pytestmark = [
    pytest.mark.worker,
    pytest.mark.django_db(transaction=True),
    pytest.mark.skipif(not django_settings.REDIS_URL, reason="runs need REDIS_URL"),
]
# How long the model or the queue keeps a run waiting: three leases.
SILENCE = 3 * LEASE


def _post(acme, thread, key: str, **body: Any):
    return acme.client.post(
        f"/api/v1/threads/{thread.public_id}/respond",
        {"content": "Where is my parcel?", **BUDGET, "background": True, **body},
        format="json",
        HTTP_IDEMPOTENCY_KEY=key,
    )


def _events_url(thread, run_id: str) -> str:
    return f"/api/v1/threads/{thread.public_id}/runs/{run_id}/events"


def _ended(thread) -> RespondRun:
    return wait_for(
        lambda: (r := RespondRun.objects.get(thread=thread)).status != "streaming" and r,
        timeout=60,
    )


def _assert_one_answer_from_one_attempt(acme, thread, run_id: str) -> None:
    seen = sse(acme.client.get(_events_url(thread, run_id)).streaming_content)
    assert [e["id"] for e in seen] == list(range(1, len(seen) + 1))
    assert [e["event"] for e in seen].count("turn") == 1
    assert text_of(seen) == REPLY
    assert seen[-1]["event"] == "done"
    answers = Message.objects.filter(thread=thread, role="assistant")
    assert [(a.content, a.status) for a in answers] == [(REPLY, "complete")]


@pytest.mark.parametrize("silent", ["before_headers", "before_first_token"])
def test_a_model_silent_longer_than_the_lease_keeps_its_live_worker(
    acme, chat, settings: Any, silent: str
):
    settings.CONVMEM_RESPOND_IN_WORKER = True
    settings.CONVMEM_RESPOND_LEASE_SECONDS = LEASE
    env = worker_env(chat)
    if silent == "before_headers":
        chat.configure(mode="timeout", delay=SILENCE)
    else:
        chat.configure(first_token_delay=SILENCE)
    thread = make_thread(acme.tenant)

    with start_worker(env), start_beat(env):
        run = _post(acme, thread, "k1").data
        ended = _ended(thread)
        wait_for(queue_drained, timeout=30)

    assert (ended.status, ended.attempt, ended.error_code) == ("complete", 1, "")
    assert len(chat.requests) == 1
    _assert_one_answer_from_one_attempt(acme, thread, run["id"])


def test_a_run_queued_longer_than_the_lease_waits_for_its_worker(acme, chat, settings: Any):
    settings.CONVMEM_RESPOND_IN_WORKER = True
    settings.CONVMEM_RESPOND_LEASE_SECONDS = LEASE
    env = worker_env(chat)
    thread = make_thread(acme.tenant)

    # No generation worker yet: the run waits in the broker for three leases.
    run = _post(acme, thread, "k1").data
    time.sleep(SILENCE)
    assert take_over_orphaned_runs() == 0
    state = acme.client.get(_events_url(thread, run["id"]).removesuffix("/events")).data
    assert state["state"] == "queued"
    # It still holds the thread, and a retry of its key re-attaches instead of taking over.
    other = _post(acme, thread, "k2", content="Another question?")
    assert other.status_code == 409
    assert other.data["code"] == "thread_busy"
    retried = _post(acme, thread, "k1")
    assert retried.status_code == 202
    assert retried.data["id"] == run["id"]
    assert RespondRun.objects.get(thread=thread).attempt == 1

    with start_worker(env, purge=False):
        ended = _ended(thread)
        wait_for(queue_drained, timeout=30)
    assert (ended.status, ended.attempt) == ("complete", 1)
    assert len(chat.requests) == 1
    _assert_one_answer_from_one_attempt(acme, thread, run["id"])


def test_a_queued_run_streams_its_turn_before_a_worker_starts_it(acme, chat, settings: Any):
    """The ``turn`` event leaves with the response's headers, made from the rows in hand, while
    the run still waits in the queue: the client knows its turn is stored, and the run's id.
    The worker's own ``turn`` (sequence 1 of the run's stream) is the same event, not sent
    again."""
    settings.CONVMEM_RESPOND_IN_WORKER = True
    thread = make_thread(acme.tenant)
    response = _post(acme, thread, "k1", background=False, stream=True)
    assert response.status_code == 200
    chunks = iter(response.streaming_content)
    pool = ThreadPoolExecutor(max_workers=1)
    try:
        first = pool.submit(next, chunks).result(timeout=10)  # no worker is running
    finally:
        pool.shutdown(wait=False)

    with start_worker(worker_env(chat), purge=False):
        seen = sse(chain([first], chunks))
        wait_for(queue_drained, timeout=30)
    assert [e["id"] for e in seen] == list(range(1, len(seen) + 1))
    assert [e["event"] for e in seen].count("turn") == 1
    assert (seen[0]["event"], seen[-1]["event"]) == ("turn", "done")
    assert text_of(seen) == REPLY
    stream = sse(acme.client.get(_events_url(thread, seen[0]["data"]["run_id"])).streaming_content)
    assert stream[0] == seen[0]
    assert len(chat.requests) == 1


def _run_expired_in_queue(acme, thread, settings: Any) -> dict[str, Any]:
    """Attempt 1 of key ``k1``, ended ``failed`` by beat's pass: no worker started it within
    a queue lease of a second. Its task stays queued (it finds its attempt ended)."""
    settings.CONVMEM_RESPOND_QUEUE_SECONDS = 1
    run = _post(acme, thread, "k1").data
    time.sleep(2)
    assert take_over_orphaned_runs() == 1
    settings.CONVMEM_RESPOND_QUEUE_SECONDS = 600
    return run


def _answered_once(chat, thread, *, attempt: int) -> None:
    """A worker started now answers the thread's run: ``complete`` at ``attempt``, one model
    call, one answer."""
    with start_worker(worker_env(chat), purge=False):
        ended = _ended(thread)
        wait_for(queue_drained, timeout=30)
    assert (ended.status, ended.attempt) == ("complete", attempt)
    assert len(chat.requests) == 1
    answers = Message.objects.filter(thread=thread, role="assistant")
    assert [(a.content, a.status) for a in answers] == [(REPLY, "complete")]


def test_a_run_no_worker_starts_within_the_queue_lease_fails_and_is_retried(
    acme, chat, settings: Any
):
    settings.CONVMEM_RESPOND_IN_WORKER = True
    settings.CONVMEM_RESPOND_LEASE_SECONDS = LEASE
    thread = make_thread(acme.tenant)

    run = _run_expired_in_queue(acme, thread, settings)
    ended = RespondRun.objects.get(thread=thread)
    assert (ended.status, ended.error_code, ended.attempt) == ("failed", "run_expired_in_queue", 1)
    seen = sse(acme.client.get(_events_url(thread, run["id"])).streaming_content)
    # The turn its request appended when it queued the run, then the error.
    assert [e["event"] for e in seen] == ["turn", "error"]
    assert seen[-1]["data"]["code"] == "run_expired_in_queue"
    state = acme.client.get(_events_url(thread, run["id"]).removesuffix("/events")).data
    assert (state["state"], state["error"]) == ("failed", "run_expired_in_queue")

    # A retry of the key queues attempt 2; the first task, still queued, finds its attempt
    # ended and does nothing: one model call, one answer.
    retried = _post(acme, thread, "k1")
    assert retried.status_code == 202
    _answered_once(chat, thread, attempt=2)


def test_a_retried_run_waits_in_the_queue_longer_than_the_lease(acme, chat, settings: Any):
    """A retry takes the run over (attempt 2) and queues it; once its task is sent its lease
    is the queue's, so waiting for a worker longer than a lease does not end it."""
    settings.CONVMEM_RESPOND_IN_WORKER = True
    settings.CONVMEM_RESPOND_LEASE_SECONDS = LEASE
    thread = make_thread(acme.tenant)
    run = _run_expired_in_queue(acme, thread, settings)

    assert _post(acme, thread, "k1").status_code == 202
    time.sleep(SILENCE)
    assert take_over_orphaned_runs() == 0
    assert _post(acme, thread, "k1").status_code == 202  # re-attaches
    assert RespondRun.objects.get(thread=thread).public_id == run["id"]
    _answered_once(chat, thread, attempt=2)


def _generation_queued(broker: redis.Redis) -> int:
    return broker.llen("generation")


def test_a_queued_run_whose_task_the_broker_lost_has_it_sent_again(acme, chat, settings: Any):
    """A consumer killed between taking a message off the queue and recording it as
    unacknowledged loses it, played by emptying the queue. Beat's pass sends the task of an
    attempt no worker has started ``CONVMEM_RESPOND_RESEND_SECONDS`` after its send, then after
    twice as long; a worker answers it once, though two copies reach it."""
    settings.CONVMEM_RESPOND_IN_WORKER = True
    settings.CONVMEM_RESPOND_RESEND_SECONDS = 1
    thread = make_thread(acme.tenant)
    broker = redis.Redis.from_url(django_settings.REDIS_URL)
    run = _post(acme, thread, "k1").data
    assert broker.delete("generation") == 1

    assert take_over_orphaned_runs() == 0
    assert _generation_queued(broker) == 0  # not due yet
    time.sleep(1.1)
    assert take_over_orphaned_runs() == 0
    assert _generation_queued(broker) == 1
    assert take_over_orphaned_runs() == 0
    assert _generation_queued(broker) == 1  # waits as long again before the next copy
    # Twice the first wait, with room for a slow first pass (the wait doubles from its send).
    time.sleep(2.5)
    assert take_over_orphaned_runs() == 0
    assert _generation_queued(broker) == 2

    _answered_once(chat, thread, attempt=1)
    _assert_one_answer_from_one_attempt(acme, thread, run["id"])
    # Started: no more copies.
    time.sleep(1.1)
    assert take_over_orphaned_runs() == 0
    assert _generation_queued(broker) == 0


class _Killed(BaseException):
    """The request is killed at this point: nothing after it runs and nothing is released,
    as far as the rows and the broker can tell (a SIGKILL of a web worker)."""


def test_a_takeover_killed_before_it_queued_its_task_is_taken_over_again_within_a_lease(
    acme, chat, settings: Any, monkeypatch: pytest.MonkeyPatch
):
    """The takeover commits its claim (attempt 2), then its request dies before sending the
    task: within a lease a retry of the key still re-attaches; after it, the retry takes the
    run over (attempt 3) and a worker answers it, once."""
    settings.CONVMEM_RESPOND_IN_WORKER = True
    settings.CONVMEM_RESPOND_LEASE_SECONDS = LEASE
    thread = make_thread(acme.tenant)
    _run_expired_in_queue(acme, thread, settings)

    def killed(*args: Any, **kwargs: Any) -> None:
        raise _Killed

    monkeypatch.setattr(services, "_queue_generation", killed)
    with pytest.raises(_Killed):
        _post(acme, thread, "k1")
    monkeypatch.undo()
    claimed = RespondRun.objects.get(thread=thread)
    assert (claimed.status, claimed.attempt) == ("streaming", 2)
    assert _post(acme, thread, "k1").status_code == 202
    assert RespondRun.objects.get(thread=thread).attempt == 2

    time.sleep(LEASE + 0.5)
    assert _post(acme, thread, "k1").status_code == 202
    _answered_once(chat, thread, attempt=3)


@pytest.mark.postgres
def test_a_task_that_comes_before_its_request_commits_waits_for_the_commit(
    acme, chat, settings: Any
):
    """The request's transaction is made to take a second more after the task is queued (a
    trigger sleeps when it completes the key's record, the transaction's last write): the
    worker has the task first, waits for the thread row lock the request holds until its
    commit, and then generates, never retried."""
    if connection.vendor != "postgresql":
        pytest.skip("row locks: PostgreSQL")
    settings.CONVMEM_RESPOND_IN_WORKER = True
    table = IdempotencyRecord._meta.db_table
    with connection.cursor() as cursor:
        cursor.execute(
            "CREATE FUNCTION convmem_test_slow_commit() RETURNS trigger AS "
            "$$ BEGIN PERFORM pg_sleep(1); RETURN NEW; END $$ LANGUAGE plpgsql"
        )
        cursor.execute(
            f"CREATE TRIGGER convmem_test_slow_commit BEFORE UPDATE ON {table} FOR EACH ROW "
            "WHEN (NEW.status = 'completed') EXECUTE FUNCTION convmem_test_slow_commit()"
        )
    thread = make_thread(acme.tenant)
    try:
        with start_worker(worker_env(chat)) as worker:
            run = _post(acme, thread, "k1").data
            ended = _ended(thread)
    finally:
        with connection.cursor() as cursor:
            cursor.execute(f"DROP TRIGGER convmem_test_slow_commit ON {table}")
            cursor.execute("DROP FUNCTION convmem_test_slow_commit()")
    assert (ended.status, ended.attempt) == ("complete", 1)
    assert "Retry in" not in worker.output()
    _assert_one_answer_from_one_attempt(acme, thread, run["id"])


def _run_of_a_dead_worker(acme, thread) -> dict[str, Any]:
    """A run whose generation worker is dead, played by the rows and the stream: it started
    (attempt 1) and streamed two tokens ("The parcel") after the ``turn`` its request
    appended, then its lease ran out."""
    run = _post(acme, thread, "k1").data
    RespondRun.objects.filter(public_id=run["id"]).update(
        started_attempt=1, leased_until=timezone.now() - timedelta(seconds=1)
    )
    assert [event.name for event in run_events.events_all(run["id"])] == ["turn"]
    streamed = [("token", {"text": "The "}), ("token", {"text": "parcel"})]
    for seq, (name, data) in enumerate(streamed, start=2):
        assert run_events.event_append(run["id"], run_events.RunEvent(seq, name, data), attempt=1)
    return run


def _taken_over_on_bulk_alone(chat, thread) -> RespondRun:
    """Beat and a worker consuming ``bulk`` only (no generation worker: all dead), until the
    thread's run ends."""
    env = worker_env(chat)
    try:
        with start_worker(env, queues=["bulk"]), start_beat(env):
            return _ended(thread)
    finally:
        # The first attempt's task, which no worker here consumes.
        redis.Redis.from_url(django_settings.REDIS_URL).delete("generation")


def test_a_worker_on_the_bulk_queue_alone_takes_a_dead_workers_run_over(acme, chat, settings: Any):
    settings.CONVMEM_RESPOND_IN_WORKER = True
    thread = make_thread(acme.tenant)
    _run_of_a_dead_worker(acme, thread)
    ended = _taken_over_on_bulk_alone(chat, thread)
    assert (ended.status, ended.error_code, ended.attempt) == ("interrupted", "worker_lost", 2)
    answers = Message.objects.filter(thread=thread, role="assistant")
    assert [(a.content, a.status) for a in answers] == [("The parcel", "interrupted")]
    assert len(chat.requests) == 0


def test_the_takeover_of_a_run_whose_question_was_erased_keeps_nothing(acme, chat, settings: Any):
    """The erasure closed the dead worker's stream: the takeover neither keeps the partial
    nor generates again; it ends the run ``cancelled`` (``erased``)."""
    settings.CONVMEM_RESPOND_IN_WORKER = True
    thread = make_thread(acme.tenant)
    run = _run_of_a_dead_worker(acme, thread)
    redact = f"/api/v1/threads/{thread.public_id}/messages/{run['user_message_id']}/redact"
    assert acme.client.post(redact, {"reason": "pii"}, format="json").status_code == 200
    ended = _taken_over_on_bulk_alone(chat, thread)
    assert (ended.status, ended.error_code, ended.attempt) == ("cancelled", "erased", 2)
    assert not Message.objects.filter(thread=thread, role="assistant").exists()
    assert not run_events.events_all(run["id"])
    assert len(chat.requests) == 0
