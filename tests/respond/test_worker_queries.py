"""What a generation worker sends to the database before the first token of a first attempt:
the claim (behind the commit of the request that queued it) and the run; the input's texts
only when the input the request rendered was not handed over (or was withdrawn since).

The worker's service runs in this process (as its task would: the run's id and attempt, the
items, thread and run id the request handed over), so its statements can be counted; the run
is queued through the API with no worker consuming the queue.
"""

import json
import threading
from typing import Any

import pytest
import redis
from django.conf import settings as django_settings
from django.db import DatabaseError, connection
from django.test.utils import CaptureQueriesContext

from compaction.rendering import rendered_hash
from compaction.selectors import assembly_items
from respond import events as run_events
from respond import services
from respond.events import run_keys, stream_closed
from respond.models import RespondRun
from tests.conftest import make_thread
from tests.respond.conftest import REPLY
from tests.support.pg import lock_thread_row, other_session
from threads import idempotency
from threads.models import Message, Role

pytestmark = [
    pytest.mark.django_db(transaction=True),
    pytest.mark.skipif(not django_settings.REDIS_URL, reason="runs need REDIS_URL"),
]


# The claim and the run with its thread, turn and input record: on PostgreSQL four statements
# in one pipeline (the transaction's settings, the wait for the request's commit, the claim
# and the read), two elsewhere.
def budget() -> int:
    return 4 if connection.vendor == "postgresql" else 2


# Without the handed input: the input's texts as well, the messages and the stored texts (the
# system prompt; memos too once the thread has one).
REBUILT = 2


def queued_run(kit, thread) -> RespondRun:
    response = kit.client.post(
        f"/api/v1/threads/{thread.public_id}/respond",
        {"content": "Where is my order?", "system": "You are a support agent.", "background": True},
        format="json",
        HTTP_IDEMPOTENCY_KEY="k1",
    )
    assert response.status_code == 202, response.data
    return RespondRun.objects.select_related("assembly").get(public_id=response.data["id"])


def handed_input(run: RespondRun) -> list[dict[str, Any]] | None:
    handed = redis.Redis.from_url(django_settings.REDIS_URL).get(run_keys(run.public_id)[3])
    return None if handed is None else json.loads(handed)


def generated(run: RespondRun, monkeypatch) -> list[str]:
    """Run the worker's service on ``run`` as its task would; the statements it sent before
    its first token."""
    items = assembly_items(run.assembly)  # what the request hands the task
    before_first_token: list[str] = []
    append = run_events.event_append

    def observed_append(run_public_id: str, event: Any, *, attempt: int) -> bool:
        if event.name == "token" and not before_first_token:
            before_first_token.extend(q["sql"] for q in captured.captured_queries)
        return append(run_public_id, event, attempt=attempt)

    monkeypatch.setattr(run_events, "event_append", observed_append)
    with CaptureQueriesContext(connection) as captured:
        services.respond_generate(run_id=run.pk, attempt=1, items=items, thread_id=run.thread_id)
    run.refresh_from_db()
    assert run.status == RespondRun.Status.COMPLETE
    assert run.assistant_message.content == REPLY
    assert before_first_token, "no token was appended"
    return before_first_token


def test_the_request_hands_the_worker_the_input_it_rendered(acme, chat, settings: Any):
    """Beside the task (which carries ids only), in the run's own key: the input as recorded,
    kept no longer than a queued run waits."""
    settings.CONVMEM_RESPOND_IN_WORKER = True
    run = queued_run(acme, make_thread(acme.tenant, turns=4))
    handed = handed_input(run)
    assert handed is not None
    assert rendered_hash(handed) == run.assembly.rendered_hash
    assert handed[-1] == {"role": "user", "content": "Where is my order?"}
    ttl = redis.Redis.from_url(django_settings.REDIS_URL).ttl(run_keys(run.public_id)[3])
    assert 0 < ttl <= settings.CONVMEM_RESPOND_QUEUE_SECONDS


def test_a_first_attempt_reaches_its_first_token_in_a_handful_of_statements(
    acme, chat, settings: Any, monkeypatch
):
    """With the handed input, the worker reads no text: the claim and the run. It takes the
    input: no copy is left in Redis."""
    settings.CONVMEM_RESPOND_IN_WORKER = True
    run = queued_run(acme, make_thread(acme.tenant, turns=6))
    before_first_token = generated(run, monkeypatch)

    assert len(before_first_token) <= budget(), before_first_token
    assert not any('FROM "threads_message"' in sql for sql in before_first_token)
    assert handed_input(run) is None
    assert chat.requests[-1].body["messages"][-1]["content"] == "Where is my order?"
    if connection.vendor == "postgresql":
        # The commit wait, the claim and the run's read, in that order, in one pipeline: no
        # transaction of their own.
        setting, lock, claim, read = before_first_token
        assert "lock_timeout" in setting
        assert "synchronous_commit" in setting
        assert "threads_thread" in lock
        assert lock.endswith("FOR NO KEY UPDATE")
        assert claim.startswith('UPDATE "respond_respondrun"')
        assert "RETURNING" in claim
        assert "FROM respond_respondrun r JOIN threads_thread t" in read
        assert not any(sql.startswith("BEGIN") for sql in before_first_token)


@pytest.mark.skipif(
    connection.vendor != "postgresql", reason="prepared statements are PostgreSQL's"
)
def test_the_workers_claim_and_read_are_prepared_statements(acme):
    """Pipelined, the claim's statements are bound by the server, so a worker's connection
    prepares them once it has run them often enough, and PostgreSQL stops planning the
    six-table read before every first token."""
    thread = make_thread(acme.tenant, turns=2)
    missing = (RespondRun.objects.order_by("-pk").values_list("pk", flat=True).first() or 0) + 1
    for _ in range(8):  # past psycopg's prepare_threshold
        outcome = services.respond_generate(run_id=missing, attempt=1, thread_id=thread.pk)
        assert outcome == services.RUN_NOT_VISIBLE

    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT statement FROM pg_prepared_statements WHERE statement LIKE %s",
            ["%respond_respondrun%"],
        )
        prepared = [row[0] for row in cursor.fetchall()]
    assert any("FROM respond_respondrun r JOIN threads_thread t" in sql for sql in prepared)
    assert any(sql.startswith('UPDATE "respond_respondrun"') for sql in prepared)


@pytest.mark.skipif(connection.vendor != "postgresql", reason="row locks are PostgreSQL's")
def test_a_claim_whose_wait_runs_out_still_generates_the_run_once(
    acme, chat, settings: Any, monkeypatch, caplog
):
    """The thread row held past the claim's wait (another writer on the thread): the
    pipelined claim gives up (its lock timeout fails the pipeline, which takes its
    transaction with it), the connection stays usable, the committed run is claimed without
    the wait, and its answer is stored once, when the holder lets go."""
    settings.CONVMEM_RESPOND_IN_WORKER = True
    monkeypatch.setattr(services, "_COMMIT_WAIT_SECONDS", 0.2)
    run = queued_run(acme, make_thread(acme.tenant, turns=2))
    with other_session() as holder:
        lock_thread_row(holder, run.thread)
        release = threading.Timer(1.0, holder.rollback)
        release.start()
        try:
            services.respond_generate(
                run_id=run.pk,
                attempt=1,
                items=assembly_items(run.assembly),
                thread_id=run.thread_id,
            )
        finally:
            release.join()

    assert f"no commit seen on thread {run.thread_id} within the wait" in caplog.text
    run.refresh_from_db()
    assert run.status == RespondRun.Status.COMPLETE
    assert run.assistant_message.content == REPLY
    assert Message.objects.filter(thread=run.thread, role=Role.ASSISTANT).count() == 2
    assert len(chat.requests) == 1


def test_without_the_handed_input_the_worker_rebuilds_it(acme, chat, settings, monkeypatch):
    """Withdrawn (an erasure in the thread) or expired: the input is rebuilt from its record,
    as it now stands, in a few more statements."""
    settings.CONVMEM_RESPOND_IN_WORKER = True
    run = queued_run(acme, make_thread(acme.tenant, turns=6))
    run_events.inputs_withdraw([run.public_id])
    before_first_token = generated(run, monkeypatch)

    assert len(before_first_token) <= budget() + REBUILT, before_first_token
    assert any('FROM "threads_message"' in sql for sql in before_first_token)
    assert chat.requests[-1].body["messages"][-1]["content"] == "Where is my order?"


def test_an_erasure_in_the_thread_withdraws_the_handed_input(acme, chat, settings, monkeypatch):
    """The handed input holds older messages of the thread: redacting one of them deletes it
    (the run goes on; its worker rebuilds the input, with the redacted text erased)."""
    settings.CONVMEM_RESPOND_IN_WORKER = True
    thread = make_thread(acme.tenant, turns=4)
    old = Message.objects.filter(thread=thread, role=Role.USER).order_by("pk").first()
    run = queued_run(acme, thread)
    assert handed_input(run) is not None

    redact = f"/api/v1/threads/{thread.public_id}/messages/{old.public_id}/redact"
    assert acme.client.post(redact, {"reason": "pii"}, format="json").status_code == 200
    assert handed_input(run) is None
    assert not stream_closed(run.public_id)  # not the run's own question: it goes on

    generated(run, monkeypatch)
    sent = json.dumps(chat.requests[-1].body["messages"])
    assert old.content not in sent


def appended_events(monkeypatch) -> list[str]:
    """The names of the events the worker appends, in order, as it appends them."""
    names: list[str] = []
    append = run_events.event_append

    def observed_append(run_public_id: str, event: Any, *, attempt: int) -> bool:
        names.append(event.name)
        return append(run_public_id, event, attempt=attempt)

    monkeypatch.setattr(run_events, "event_append", observed_append)
    return names


def test_the_request_appends_the_turn_so_the_workers_first_append_is_a_token(
    acme, chat, settings: Any, monkeypatch
):
    """The request appends a first attempt's ``turn`` (ids only) with the input it hands
    over, in that round trip: before any worker has run, the stream holds it as event 1, and
    the worker sends nothing to Redis between its start and its first token."""
    settings.CONVMEM_RESPOND_IN_WORKER = True
    run = queued_run(acme, make_thread(acme.tenant, turns=4))
    (turn,) = run_events.events_all(run.public_id)
    assert (turn.seq, turn.name) == (1, "turn")
    assert turn.data == {
        "thread_id": run.thread.public_id,
        "run_id": run.public_id,
        "user_message_id": run.user_message.public_id,
        "assembly_id": run.assembly.public_id,
        "replayed": False,
        "resumed": False,
    }
    names = appended_events(monkeypatch)
    services.respond_generate(run_id=run.pk, attempt=1, thread_id=run.thread_id)

    assert (names[0], names[-1]) == ("token", "done")
    assert "turn" not in names
    events = run_events.events_all(run.public_id)
    assert [event.seq for event in events] == list(range(1, len(events) + 1))
    assert [event.name for event in events].count("turn") == 1


def test_a_turn_whose_stream_expired_in_the_queue_is_appended_by_the_worker(
    acme, chat, settings: Any, monkeypatch
):
    """A run that waited in the queue longer than its stream lives: the worker appends the
    ``turn`` again, as event 1, the one the request's relay sent."""
    settings.CONVMEM_RESPOND_IN_WORKER = True
    run = queued_run(acme, make_thread(acme.tenant, turns=4))
    redis.Redis.from_url(django_settings.REDIS_URL).delete(run_keys(run.public_id)[0])
    names = appended_events(monkeypatch)
    services.respond_generate(run_id=run.pk, attempt=1, thread_id=run.thread_id)

    assert names[:2] == ["turn", "token"]
    events = run_events.events_all(run.public_id)
    assert (events[0].seq, events[0].name) == (1, "turn")
    assert [event.seq for event in events] == list(range(1, len(events) + 1))


def test_the_task_message_shows_the_run_not_its_items(acme, chat, settings: Any):
    """What monitoring (worker logs, events, Flower) shows of a queued generation: the run's
    ids and how many items were handed over, not Celery's repr of every item (which took
    longer than building and sending the rest of the message)."""
    settings.CONVMEM_RESPOND_IN_WORKER = True
    run = queued_run(acme, make_thread(acme.tenant, turns=6))
    queued = redis.Redis.from_url(django_settings.CELERY_BROKER_URL).lrange("generation", 0, -1)
    headers = [json.loads(message)["headers"] for message in queued]
    (mine,) = [
        h for h in headers if h["task"] == "respond.generate" and h["argsrepr"] == f"({run.pk}, 1)"
    ]
    items = len(assembly_items(run.assembly))
    assert mine["kwargsrepr"] == f"{{'thread_id': {run.thread_id}, 'items': <{items} items>}}"


def _run_keys_in_redis(client: redis.Redis) -> set[bytes]:
    return set(client.scan_iter(match="convmem:run:*"))


def test_a_rolled_back_request_leaves_nothing_it_handed_over(acme, monkeypatch, settings: Any):
    """The request hands the worker its input (text) and appends the ``turn`` event inside its
    transaction; when that transaction rolls back after (played: the key's completion fails,
    as a lost connection at commit would), both are deleted with it, not left in Redis for the
    queued lease."""

    def failing_complete(*args: Any, **kwargs: Any) -> bool:
        raise DatabaseError("connection lost at commit")

    settings.CONVMEM_RESPOND_IN_WORKER = True
    client = redis.Redis.from_url(django_settings.REDIS_URL)
    before = _run_keys_in_redis(client)
    thread = make_thread(acme.tenant)
    monkeypatch.setattr(idempotency, "_complete", failing_complete)
    response = acme.client.post(
        f"/api/v1/threads/{thread.public_id}/respond",
        {"content": "Where is my order?", "background": True},
        format="json",
        HTTP_IDEMPOTENCY_KEY="k1",
    )
    assert response.status_code == 503
    # The task was sent (it finds no run); no worker consumes it here.
    assert redis.Redis.from_url(django_settings.CELERY_BROKER_URL).delete("generation") == 1
    assert not RespondRun.objects.filter(thread=thread).exists()
    assert not Message.objects.filter(thread=thread, role=Role.USER).exists()
    assert _run_keys_in_redis(client) == before
