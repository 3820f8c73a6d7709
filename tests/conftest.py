"""Shared fixtures: two named tenants (acme, globex) with keys, API clients, thread builders.

Real components: with ``DATABASE_URL`` pointing at PostgreSQL the suite runs there, and tests
marked ``postgres`` (row locks, concurrent transactions) run too. ``CONVMEM_REQUIRE_SERVICES=1``
(set by ``.ci/run``) turns a missing PostgreSQL or Redis into a failure instead of a skip.
"""

import os
from collections.abc import Callable, Generator, Iterable
from dataclasses import dataclass
from itertools import count
from typing import Any

import django.test.client
import pytest
from django.db import OperationalError, connection
from django.db.backends.base.operations import BaseDatabaseOperations
from hypothesis import settings as hypothesis_settings
from rest_framework.test import APIClient

from auditlog.events import Actor
from compaction.backends import text_caches
from convmem.models import ApiKey, Tenant
from convmem.tenancy import api_key_create, tenant_create
from tests.support.worker import celery_worker  # noqa: F401  (a real Celery worker fixture)
from threads import services
from threads.models import Message, Thread

REQUIRE_SERVICES = os.environ.get("CONVMEM_REQUIRE_SERVICES") == "1"

# Tests assert behaviour, never timings: on a shared, loaded machine a per-example deadline
# would fail correct code.
hypothesis_settings.register_profile("convmem", deadline=None)
hypothesis_settings.load_profile("convmem")
SYSTEM = Actor.system("tests")


DB_FIXTURES = {"db", "transactional_db", "live_server"}
# Every database test may reach the data keys (``convmem.crypto``), which live in a database of
# their own (``keys``): each such test gets both, rolled back or flushed together.
TEST_DATABASES = ["default", "keys"]


def _with_keys_database(item: pytest.Item) -> None:
    marker = item.get_closest_marker("django_db")
    if marker is None and not DB_FIXTURES & set(getattr(item, "fixturenames", ())):
        return
    kwargs = dict(marker.kwargs) if marker else {}
    if kwargs.get("databases") == "__all__":
        return
    kwargs["databases"] = sorted({*(kwargs.get("databases") or ["default"]), *TEST_DATABASES})
    args = marker.args if marker else ()
    item.add_marker(pytest.mark.django_db(*args, **kwargs), append=False)


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    for item in items:
        _with_keys_database(item)
    if connection.vendor == "postgresql":
        return
    # Only outside CI: with CONVMEM_REQUIRE_SERVICES=1 the session refuses to start instead.
    skip = pytest.mark.skip(reason="needs DATABASE_URL=postgres://…")
    for item in items:
        if "postgres" in item.keywords:
            item.add_marker(skip)


def pytest_sessionstart(session: pytest.Session) -> None:
    if REQUIRE_SERVICES and connection.vendor != "postgresql":
        raise pytest.UsageError("CONVMEM_REQUIRE_SERVICES=1 but DATABASE_URL is not PostgreSQL")
    if REQUIRE_SERVICES and not os.environ.get("REDIS_URL"):
        raise pytest.UsageError("CONVMEM_REQUIRE_SERVICES=1 but REDIS_URL is not set")


# Every streaming response the test client returns is closed when the test ends, as a WSGI server
# closes every response, read or not. Unclosed, Django's test client leaves the closing to the
# garbage collector: its ``closing_iterator_wrapper`` (django/test/client.py) closes the response
# in a ``finally``, so a stream a test stopped reading part-way is closed whenever its generator
# happens to be collected, and closing sends ``request_finished``, whose handler sets the URLconf
# context variable. On CPython up to 3.11 a collection that starts inside ``ContextVar.set`` and
# runs such a finalizer frees the context's variables while the outer set still reads them
# (python/cpython#148891, a use-after-free): the session crashed so three times in ``set_urlconf``
# under ``request_finished``, in different tests. Holding each stream until its test ends means
# no collection can finalize it, and closing it there runs the ``finally`` where nothing is
# being set. There is no public hook for the response the client hands back, hence the small
# wrapper around that module-level function, which ``ClientHandler.__call__`` looks up per call.
# (The async client's ``aclosing_iterator_wrapper`` is not tracked: nothing here uses it.)
_open_streams: list[Generator[bytes, None, None]] = []
_closing_iterator_wrapper = django.test.client.closing_iterator_wrapper


def _tracked_closing_iterator_wrapper(
    iterable: Iterable[bytes], close: Callable[[], None]
) -> Generator[bytes, None, None]:
    stream = _closing_iterator_wrapper(iterable, close)
    _open_streams.append(stream)
    return stream


def _close_open_streams() -> None:
    """Close the test client's streams in the order they were opened. Closing one read to its
    end, or never started, runs nothing; if closing one fails, its test fails with the error and
    the rest are closed at the next call."""
    while _open_streams:
        _open_streams[0].close()
        del _open_streams[0]


_execute_sql_flush = BaseDatabaseOperations.execute_sql_flush
FLUSH_ATTEMPTS = 3
DEADLOCK_DETECTED = "40P01"


def _execute_sql_flush_past_deadlocks(self: BaseDatabaseOperations, sql_list: list[str]) -> None:
    """A transactional test's flush, again when PostgreSQL ends it as a deadlock's victim: a
    real worker still finishing the test's last task (a memo, its score) can hold a lock the
    flush's TRUNCATE needs while waiting for one the TRUNCATE has taken. Once the flush has
    given way, the worker's transaction ends, and the flush goes through."""
    for attempt in range(1, FLUSH_ATTEMPTS + 1):
        try:
            return _execute_sql_flush(self, sql_list)
        except OperationalError as error:
            deadlock = getattr(error.__cause__, "sqlstate", None) == DEADLOCK_DETECTED
            if attempt == FLUSH_ATTEMPTS or not deadlock:
                raise


def pytest_configure(config: pytest.Config) -> None:
    django.test.client.closing_iterator_wrapper = _tracked_closing_iterator_wrapper
    BaseDatabaseOperations.execute_sql_flush = _execute_sql_flush_past_deadlocks


def pytest_unconfigure(config: pytest.Config) -> None:
    _close_open_streams()
    django.test.client.closing_iterator_wrapper = _closing_iterator_wrapper
    BaseDatabaseOperations.execute_sql_flush = _execute_sql_flush


@pytest.hookimpl(wrapper=True)
def pytest_runtest_call(item: pytest.Item) -> Generator[None, None, None]:
    """Close the test's streams as its body ends, while its database, settings and servers
    (the chat server a stream's generation calls) are still there."""
    try:
        return (yield)
    finally:
        _close_open_streams()


@pytest.hookimpl(wrapper=True)
def pytest_runtest_teardown(
    item: pytest.Item, nextitem: pytest.Item | None
) -> Generator[None, None, None]:
    """And any a fixture opened while it was torn down."""
    try:
        return (yield)
    finally:
        _close_open_streams()


@pytest.fixture(autouse=True)
def _answers_in_the_request(settings: Any) -> None:
    """``/respond`` generates in the request, as on the embedded default, unless a test runs a
    generation worker for it (``tests/respond/test_runs.py``); with ``REDIS_URL`` set the
    setting's default would be the worker."""
    settings.CONVMEM_RESPOND_IN_WORKER = False


@pytest.fixture(autouse=True)
def _no_remembered_text() -> None:
    """Each test starts with this process's text caches empty: recall's memory of common words
    is by thread id, and a rolled-back test's ids come again on SQLite."""
    text_caches.drop_all()


@dataclass
class TenantKit:
    tenant: Tenant
    api_key: ApiKey
    key: str
    client: APIClient

    @property
    def actor(self) -> Actor:
        return Actor.api_key(self.api_key)


def _kit(name: str, scopes: tuple[str, ...] = ()) -> TenantKit:
    tenant, api_key, key = tenant_create(name=name, scopes=scopes)
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Bearer {key}")
    return TenantKit(tenant=tenant, api_key=api_key, key=key, client=client)


@pytest.fixture
def acme(db: None) -> TenantKit:
    return _kit("acme")


@pytest.fixture
def globex(db: None) -> TenantKit:
    return _kit("globex")


@pytest.fixture
def acme_exporter(acme: TenantKit) -> TenantKit:
    """Another acme key, with the export scope."""
    api_key, key = api_key_create(tenant=acme.tenant, name="compliance", scopes=["export"])
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Bearer {key}")
    return TenantKit(tenant=acme.tenant, api_key=api_key, key=key, client=client)


_keys = count()


@pytest.fixture
def idem() -> Callable[[], dict[str, str]]:
    """Headers with a fresh Idempotency-Key each call."""
    return lambda: {"HTTP_IDEMPOTENCY_KEY": f"key-{next(_keys)}"}


def make_thread(tenant: Tenant, *, user_ref: str = "user-1", turns: int = 0) -> Thread:
    """A thread built through the real services, with ``turns`` alternating user/assistant."""
    thread = services.thread_create(tenant=tenant, actor=SYSTEM, user_ref=user_ref)
    for i in range(turns):
        role = "user" if i % 2 == 0 else "assistant"
        services.message_append(thread=thread, actor=SYSTEM, role=role, content=f"turn {i}")
    thread.refresh_from_db()
    return thread


def path_ids(thread: Thread) -> list[str]:
    """Public ids of the active path, root → leaf, walked in Python (a test oracle)."""
    thread.refresh_from_db()
    ids: list[str] = []
    node = thread.active_leaf
    while node.parent_id is not None:
        ids.append(node.public_id)
        node = Message.objects.get(pk=node.parent_id)
    return ids[::-1]
