"""The per-key rate limit (``API_RATE``, ``convmem.auth.ApiKeyRateThrottle``): a sliding-window
counter in Redis (in the process's memory without it).

- Over the rate a key is answered 429 ``throttled`` with a ``Retry-After`` within the window;
  another key of the same tenant is not held back by it.
- Requests of one key sent at once are all counted: of 16 concurrent requests at 6 a minute,
  exactly 6 pass (DRF's throttle read and wrote its whole list of timestamps per request, so
  concurrent requests overwrote each other's counts).
- With Redis unreachable the API keeps answering (fails open).
"""

from concurrent.futures import ThreadPoolExecutor
from typing import Any

import pytest
from django.conf import settings as django_settings
from django.db import connection
from rest_framework.test import APIClient

from convmem.auth import ApiKeyRateThrottle
from tests.faults.processes import free_port


@pytest.fixture
def rate(monkeypatch) -> Any:
    def set_rate(value: str) -> None:
        monkeypatch.setattr(ApiKeyRateThrottle, "THROTTLE_RATES", {"api_key": value})

    return set_rate


def _get(kit) -> Any:
    return kit.client.get("/api/v1/threads")


@pytest.mark.django_db
def test_a_key_over_its_rate_is_answered_429_with_the_wait(acme, acme_exporter, rate):
    rate("3/min")
    assert [_get(acme).status_code for _ in range(3)] == [200, 200, 200]
    throttled = _get(acme)
    assert throttled.status_code == 429
    assert throttled.json()["code"] == "throttled"
    assert 0 < int(throttled["Retry-After"]) <= 60
    # Per key: the tenant's other key still passes.
    assert _get(acme_exporter).status_code == 200


@pytest.mark.django_db(transaction=True)
@pytest.mark.skipif(not django_settings.REDIS_URL, reason="counts shared between requests: Redis")
def test_requests_of_one_key_sent_at_once_are_all_counted(acme, rate):
    rate("6/min")

    def get(_: int) -> int:
        client = APIClient()
        client.credentials(HTTP_AUTHORIZATION=f"Bearer {acme.key}")
        try:
            return client.get("/api/v1/threads").status_code
        finally:
            connection.close()

    with ThreadPoolExecutor(max_workers=8) as pool:
        statuses = list(pool.map(get, range(16)))
    assert sorted(statuses) == [200] * 6 + [429] * 10


@pytest.mark.django_db
def test_with_redis_unreachable_requests_are_not_throttled(acme, rate, settings):
    rate("1/min")
    settings.REDIS_URL = f"redis://127.0.0.1:{free_port()}/0"
    assert [_get(acme).status_code for _ in range(3)] == [200, 200, 200]
