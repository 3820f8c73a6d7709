"""Shared fixtures: two named tenants (acme, globex) with keys, API clients, thread builders.

Real components: with ``DATABASE_URL`` pointing at PostgreSQL the suite runs there, and tests
marked ``postgres`` (row locks, concurrent transactions) run too. ``CONVMEM_REQUIRE_SERVICES=1``
(set by ``.ci/run``) turns a missing PostgreSQL or Redis into a failure instead of a skip.
"""

import gc
import os
import sys
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from itertools import count
from typing import Any

import pytest
from django.db import connection
from hypothesis import settings as hypothesis_settings
from rest_framework.test import APIClient

from auditlog.events import Actor
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


# CPython up to 3.11 can free a context's variables while ``ContextVar.set`` is still reading
# them, when the set allocates, the allocation starts a garbage collection, and a finalizer run
# by that collection sets a context variable itself (python/cpython#148891: a use-after-free,
# seen as a segmentation fault; 3.12's collector no longer runs there). Django's test client
# leaves such finalizers behind: a streaming response never read to its end is closed when its
# iterator is collected, and closing it sends ``request_finished``, whose handler sets the
# URLconf context variable. The test session crashed so three times in ``set_urlconf`` under
# ``request_finished``, in different tests. Collecting after every test finalizes what a test
# left behind at a point where no variable is being set.
_COLLECTS_INSIDE_CONTEXT_VAR_SET = sys.version_info < (3, 12)


@pytest.fixture(autouse=True)
def _garbage_collected_between_tests() -> Iterator[None]:
    yield
    if _COLLECTS_INSIDE_CONTEXT_VAR_SET:
        gc.collect()


@pytest.fixture(autouse=True)
def _answers_in_the_request(settings: Any) -> None:
    """``/respond`` generates in the request, as on the embedded default, unless a test runs a
    generation worker for it (``tests/respond/test_runs.py``); with ``REDIS_URL`` set the
    setting's default would be the worker."""
    settings.CONVMEM_RESPOND_IN_WORKER = False


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
