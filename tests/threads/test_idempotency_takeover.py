"""A key taken over from a request that is still alive: one key never makes two rows.

A request in flight longer than ``CONVMEM_IDEMPOTENCY_LOCK_SECONDS`` (say, blocked on a row
lock) looks abandoned, and a retry with the same key takes the key over. Both requests then run
their write; only the one holding the current claim may commit it. Each request runs on its own
thread and database connection through the real API; raw psycopg sessions hold the locks that
keep the first request inside its transaction, and age its claim.
"""

from collections.abc import Callable
from typing import Any

import psycopg
import pytest
from rest_framework.test import APIClient

from tests.conftest import make_thread, path_ids
from tests.support.pg import Request, backends_waiting_for_locks, other_session
from tests.threads.helpers import Rows, messages_url
from threads.models import IdempotencyRecord, Message, Thread

pytestmark = [pytest.mark.postgres, pytest.mark.django_db(transaction=True)]

LOCK_SECONDS = 30


def append(thread: Thread, key: str) -> Callable[[APIClient], Any]:
    return lambda client: client.post(
        messages_url(thread.public_id),
        {"role": "user", "content": "only once"},
        format="json",
        HTTP_IDEMPOTENCY_KEY=key,
    )


def hold_thread_row(session: psycopg.Connection, thread: Thread) -> None:
    """Lock the thread row as another append does: the claim (whose foreign key only needs
    KEY SHARE) goes through, the write waits."""
    session.execute("SELECT id FROM threads_thread WHERE id = %s FOR NO KEY UPDATE", [thread.pk])


def age_claim(session: psycopg.Connection, key: str) -> None:
    """Make the key's in-flight claim look older than the lock timeout (as after a long wait)."""
    session.execute(
        "UPDATE threads_idempotencyrecord SET created_at = created_at - %s * interval '1 second' "
        "WHERE key = %s",
        [LOCK_SECONDS + 1, key],
    )


def assert_written_once(thread: Thread, responses: list[Any], path_before: list[str]) -> None:
    """One message, one first response; the other request replays it or is told to retry."""
    assert Message.objects.filter(thread=thread, content="only once").count() == 1
    fresh = [r for r in responses if r.status_code == 201 and "Idempotent-Replayed" not in r]
    assert len(fresh) == 1, [(r.status_code, r.content) for r in responses]
    written = fresh[0].json()
    for other in responses:
        if other is fresh[0]:
            continue
        if other.status_code == 201:
            assert other["Idempotent-Replayed"] == "true"
            assert other.json() == written
        else:
            assert other.status_code == 409, other.content
            assert other.json()["code"] == "idempotency_key_in_flight"
    record = IdempotencyRecord.objects.get(key=written_key(responses))
    assert record.status == "completed"
    assert record.response_body == written
    assert path_ids(thread) == [*path_before, written["id"]]


def written_key(responses: list[Any]) -> str:
    return responses[0].wsgi_request.headers["Idempotency-Key"]


def test_a_retry_taking_over_a_request_stuck_on_the_thread_lock_writes_once(acme, settings):
    """The red-team case: the first request waits on the thread row (locked elsewhere) past the
    lock timeout, its retry takes the key over and waits too; then the lock goes."""
    settings.CONVMEM_IDEMPOTENCY_LOCK_SECONDS = LOCK_SECONDS
    thread = make_thread(acme.tenant, turns=2)
    path_before = path_ids(thread)
    before = Rows.now()

    with other_session() as locker, other_session(autocommit=True) as watcher:
        hold_thread_row(locker, thread)
        first = Request(append(thread, "stuck"), acme)
        backends_waiting_for_locks(watcher, 1)
        age_claim(watcher, "stuck")
        retry = Request(append(thread, "stuck"), acme)
        backends_waiting_for_locks(watcher, 2)
        locker.rollback()
        responses = [first.wait(), retry.wait()]

    assert_written_once(thread, responses, path_before)
    after = Rows.now()
    assert after.messages == before.messages + 1
    assert after.audit_events == before.audit_events + 1
    assert after.idempotency_records == before.idempotency_records + 1


def test_a_takeover_after_the_first_request_wrote_its_message_rolls_that_write_back(acme, settings):
    """The first request has inserted its message (not yet committed) when the retry takes the
    key over: it is held inside its transaction by the audit table, locked elsewhere, while the
    retry waits on the thread row the first request holds."""
    settings.CONVMEM_IDEMPOTENCY_LOCK_SECONDS = LOCK_SECONDS
    thread = make_thread(acme.tenant, turns=2)
    path_before = path_ids(thread)
    before = Rows.now()

    with other_session() as locker, other_session(autocommit=True) as watcher:
        # Inserting an audit event is the append's last step after its message and leaf move.
        locker.execute("LOCK TABLE auditlog_auditevent IN SHARE MODE")
        first = Request(append(thread, "mid-write"), acme)
        backends_waiting_for_locks(watcher, 1)
        age_claim(watcher, "mid-write")
        retry = Request(append(thread, "mid-write"), acme)
        backends_waiting_for_locks(watcher, 2)
        locker.rollback()
        responses = [first.wait(), retry.wait()]

    assert_written_once(thread, responses, path_before)
    assert Rows.now().messages == before.messages + 1
