"""Webhook fixtures: a real worker that may deliver to the loopback receiver, and subscribing."""

from collections.abc import Iterator
from typing import Any

import pytest

from tests.support.worker import CeleryWorker, start_worker

ENDPOINTS = "/api/v1/webhook-endpoints"


@pytest.fixture(scope="module")
def webhook_worker(django_db_setup: None) -> Iterator[CeleryWorker]:
    """A worker (all queues: it writes memos too) allowed to deliver to 127.0.0.1, retrying
    0.2 s apart."""
    env = {"CONVMEM_WEBHOOKS_ALLOW_PRIVATE": "1", "CONVMEM_WEBHOOKS_BACKOFF": "0.2"}
    with start_worker(env) as worker:
        yield worker


@pytest.fixture
def allow_loopback(settings: Any) -> None:
    settings.CONVMEM_WEBHOOKS_ALLOW_PRIVATE = True


def subscribe(kit, url: str, events: list[str]) -> dict[str, Any]:
    response = kit.client.post(ENDPOINTS, {"url": url, "events": events}, format="json")
    assert response.status_code == 201, response.data
    return response.data
