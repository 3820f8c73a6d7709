"""PostgreSQL helpers for tests that need two real parties: API calls on their own threads (so
their own database connections), and raw psycopg sessions that hold locks or watch the others.

Waits are bounded so a regression fails the test instead of hanging it.
"""

import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

import psycopg
from django.db import connection, connections
from rest_framework.test import APIClient

from tests.conftest import TenantKit
from threads.models import Thread

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


def backends_waiting_for_locks(session: psycopg.Connection, count: int) -> list[int]:
    """The pids of the ``count`` other backends of this database waiting on a lock; polls.

    ``session`` must be in autocommit: pg_stat_activity is a per-transaction snapshot.
    """
    deadline = WAIT
    step = 0.05
    rows: list[tuple[int]] = []
    while deadline > 0:
        rows = session.execute(
            "SELECT pid FROM pg_stat_activity WHERE datname = current_database() "
            "AND wait_event_type = 'Lock' AND pid <> pg_backend_pid()"
        ).fetchall()
        if len(rows) == count:
            return [row[0] for row in rows]
        assert len(rows) < count, rows
        threading.Event().wait(step)
        deadline -= step
    raise AssertionError(f"{len(rows)} requests waited on a lock, not {count}")


def backend_waiting_for_lock(session: psycopg.Connection) -> int:
    """The pid of the (one) other backend of this database waiting on a lock; polls."""
    return backends_waiting_for_locks(session, 1)[0]
