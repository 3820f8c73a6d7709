"""Database trouble on the hot path: a dropped connection answers 503 and writes nothing; a lock
held on one thread does not hold up appends to another.

Each request runs on its own thread (so its own database connection) through the real WSGI
stack; a second, raw psycopg connection plays the other party. Waits are bounded so a
regression fails the test instead of hanging it.
"""

import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

import psycopg
import pytest
from django.db import connection, connections
from rest_framework.test import APIClient

from tests.conftest import TenantKit, make_thread, path_ids
from tests.threads.helpers import Rows
from threads.models import Thread

pytestmark = [pytest.mark.faults, pytest.mark.postgres, pytest.mark.django_db(transaction=True)]

WAIT = 20.0


class Request:
    """One API call on its own thread (and so its own database connection)."""

    def __init__(self, call: Callable[[APIClient], Any], kit: TenantKit) -> None:
        self.response: Any = None
        self.error: BaseException | None = None
        self._call = call
        self._kit = kit
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()

    def _run(self) -> None:
        client = APIClient()
        client.credentials(HTTP_AUTHORIZATION=f"Bearer {self._kit.key}")
        try:
            self.response = self._call(client)
        except BaseException as error:
            self.error = error
        finally:
            connections.close_all()

    def wait(self) -> Any:
        self._thread.join(WAIT)
        assert not self._thread.is_alive(), "the request is still blocked"
        assert self.error is None, self.error
        return self.response

    @property
    def done(self) -> bool:
        return not self._thread.is_alive()


@contextmanager
def other_session(*, autocommit: bool = False) -> Iterator[psycopg.Connection]:
    """A raw connection to the test database, outside Django."""
    params = connection.get_connection_params()
    params.pop("cursor_factory", None)
    params.pop("context", None)
    with psycopg.connect(**params, autocommit=autocommit) as raw:
        yield raw


def lock_thread_row(session: psycopg.Connection, thread: Thread) -> None:
    # Plain FOR UPDATE conflicts with the FOR NO KEY UPDATE every append takes.
    session.execute("SELECT id FROM threads_thread WHERE id = %s FOR UPDATE", [thread.pk])


def backend_waiting_for_lock(session: psycopg.Connection) -> int:
    """The pid of the (one) other backend of this database waiting on a lock; polls.

    ``session`` must be in autocommit: pg_stat_activity is a per-transaction snapshot.
    """
    deadline = WAIT
    step = 0.05
    while deadline > 0:
        rows = session.execute(
            "SELECT pid FROM pg_stat_activity WHERE datname = current_database() "
            "AND wait_event_type = 'Lock' AND pid <> pg_backend_pid()"
        ).fetchall()
        if rows:
            assert len(rows) == 1, rows
            return rows[0][0]
        threading.Event().wait(step)
        deadline -= step
    raise AssertionError("no request ever waited on the lock")


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
