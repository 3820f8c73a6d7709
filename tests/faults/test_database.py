"""Database trouble on the hot path: a dropped connection answers 503 and writes nothing; a lock
held on one thread does not hold up appends to another.

Each request runs on its own thread (so its own database connection) through the real WSGI
stack; a second, raw psycopg connection plays the other party (``tests/support/pg.py``).
"""

from collections.abc import Callable
from typing import Any

import pytest
from rest_framework.test import APIClient

from tests.conftest import make_thread, path_ids
from tests.support.pg import Request, backend_waiting_for_lock, lock_thread_row, other_session
from tests.threads.helpers import Rows
from threads.models import Thread

pytestmark = [pytest.mark.faults, pytest.mark.postgres, pytest.mark.django_db(transaction=True)]


def append(thread: Thread, key: str, content: str = "hello") -> Callable[[APIClient], Any]:
    return lambda client: client.post(
        f"/api/v1/threads/{thread.public_id}/messages",
        {"role": "user", "content": content},
        format="json",
        HTTP_IDEMPOTENCY_KEY=key,
    )


def test_connection_dropped_mid_append_is_503_and_writes_nothing(acme):
    thread = make_thread(acme.tenant, turns=2)
    path_before = path_ids(thread)
    before = Rows.now()

    with other_session() as locker, other_session(autocommit=True) as killer:
        lock_thread_row(locker, thread)
        request = Request(append(thread, "drop-1"), acme)
        # The append is now inside its transaction, blocked on the thread row: kill its backend.
        pid = backend_waiting_for_lock(killer)
        killer.execute("SELECT pg_terminate_backend(%s)", [pid])
        response = request.wait()
        locker.rollback()

    assert response.status_code == 503, response.content
    assert response.json()["code"] == "service_unavailable"
    assert Rows.now() == before
    assert path_ids(thread) == path_before
    # The key was released with the failed write: the client's retry goes through, once.
    retried = Request(append(thread, "drop-1"), acme).wait()
    assert retried.status_code == 201, retried.content
    replayed = Request(append(thread, "drop-1"), acme).wait()
    assert replayed.status_code == 201
    assert replayed.headers["Idempotent-Replayed"] == "true"
    assert path_ids(thread) == [*path_before, retried.json()["id"]]
    assert Rows.now().messages == before.messages + 1


def test_connection_dropped_mid_edit_is_503_and_writes_nothing(acme):
    thread = make_thread(acme.tenant, turns=2)
    path_before = path_ids(thread)
    before = Rows.now()

    def edit(client: APIClient) -> Any:
        return client.post(
            f"/api/v1/threads/{thread.public_id}/messages/{path_before[-1]}/edit",
            {"content": "changed"},
            format="json",
            HTTP_IDEMPOTENCY_KEY="drop-edit",
        )

    with other_session() as locker, other_session(autocommit=True) as killer:
        lock_thread_row(locker, thread)
        request = Request(edit, acme)
        killer.execute("SELECT pg_terminate_backend(%s)", [backend_waiting_for_lock(killer)])
        response = request.wait()
        locker.rollback()

    assert response.status_code == 503, response.content
    assert Rows.now() == before
    assert path_ids(thread) == path_before


def test_a_locked_thread_does_not_block_appends_to_other_threads(acme, globex):
    locked = make_thread(acme.tenant, turns=2)
    free = make_thread(acme.tenant, turns=2)
    elsewhere = make_thread(globex.tenant, turns=2)

    with other_session() as locker, other_session(autocommit=True) as watcher:
        lock_thread_row(locker, locked)
        blocked = Request(append(locked, "lock-blocked"), acme)
        backend_waiting_for_lock(watcher)

        # While the lock is held, appends (and reads) on other threads complete.
        same_tenant = Request(append(free, "lock-free"), acme).wait()
        other_tenant = Request(append(elsewhere, "lock-elsewhere"), globex).wait()
        read = Request(lambda c: c.get(f"/api/v1/threads/{locked.public_id}/messages"), acme).wait()
        assert not blocked.done
        locker.rollback()
        released = blocked.wait()

    assert same_tenant.status_code == 201, same_tenant.content
    assert other_tenant.status_code == 201, other_tenant.content
    assert read.status_code == 200
    assert released.status_code == 201, released.content
    assert path_ids(locked)[-1] == released.json()["id"]
    assert path_ids(free)[-1] == same_tenant.json()["id"]
