"""Fixtures of the client tests: a client of the live server, and a proxy that breaks
connections in front of it."""

from collections.abc import Callable, Iterator
from urllib.parse import urlsplit

import pytest
from convmem_client import AsyncClient, Client

from tests.conftest import TenantKit
from tests.support.flaky_proxy import FlakyProxy

BUDGET = {"window_tokens": 4096, "reserve_tokens": 256}
# Short backoff: the tests check what is retried, not how long it waits.
FAST = {"timeout": 15, "backoff": 0.05, "max_backoff": 0.5}


@pytest.fixture
def proxy(live_server) -> Iterator[FlakyProxy]:
    address = urlsplit(live_server.url)
    with FlakyProxy((address.hostname, address.port)) as flaky:
        yield flaky


@pytest.fixture
def connect(live_server) -> Callable[..., Client]:
    """``connect(kit, base_url=…, **settings)``: a sync client (the live server by default)."""

    def connect(kit: TenantKit, base_url: str | None = None, **settings: object) -> Client:
        return Client(base_url or live_server.url, kit.key, **{**FAST, **settings})

    return connect


@pytest.fixture
def connect_async(live_server) -> Callable[..., AsyncClient]:
    def connect(kit: TenantKit, **settings: object) -> AsyncClient:
        return AsyncClient(live_server.url, kit.key, **{**FAST, **settings})

    return connect
