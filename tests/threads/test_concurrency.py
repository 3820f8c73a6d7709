"""Concurrent appends on PostgreSQL with real threads, each with its own connection.

These need real row locks and a unique index that makes concurrent inserts wait on each other,
so they run only on PostgreSQL.
"""

import threading
from collections.abc import Callable
from typing import Any

import pytest
from django.db import connection
from rest_framework.test import APIClient

from tests.conftest import make_thread, path_ids
from threads.models import IdempotencyRecord, Message, Role

pytestmark = [pytest.mark.postgres, pytest.mark.django_db(transaction=True)]

WORKERS = 20


def run_together(request: Callable[[APIClient, int], Any], key: str) -> list[Any]:
    """Call ``request(client, i)`` from WORKERS threads released at the same moment."""
    barrier = threading.Barrier(WORKERS)
    results: list[Any] = [None] * WORKERS

    def work(i: int) -> None:
        client = APIClient()
        client.credentials(HTTP_AUTHORIZATION=f"Bearer {key}")
        try:
            barrier.wait(timeout=30)
            results[i] = request(client, i)
        except Exception as exc:  # reported by the assertions below, not lost in the thread
            results[i] = exc
        finally:
            connection.close()

    workers = [threading.Thread(target=work, args=(i,)) for i in range(WORKERS)]
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join(timeout=60)
    assert not any(worker.is_alive() for worker in workers)
    return results


def test_same_key_makes_exactly_one_node(acme):
    thread = make_thread(acme.tenant, turns=1)
    url = f"/api/v1/threads/{thread.public_id}/messages"

    responses = run_together(
        lambda client, i: client.post(
            url, {"role": "user", "content": "once"}, format="json", HTTP_IDEMPOTENCY_KEY="same"
        ),
        acme.key,
    )

    statuses = [getattr(r, "status_code", r) for r in responses]
    assert set(statuses) <= {201, 409}, statuses
    created = [r for r in responses if r.status_code == 201]
    assert created
    assert all(r.data == created[0].data for r in created)
    assert sum("Idempotent-Replayed" not in r for r in created) == 1
    assert all(
        r.data["code"] == "idempotency_key_in_flight" for r in responses if r.status_code == 409
    )
    assert Message.objects.filter(thread=thread, content="once").count() == 1
    assert IdempotencyRecord.objects.get(key="same").status == "completed"
    thread.refresh_from_db()
    assert thread.active_leaf.public_id == created[0].data["id"]


def test_different_keys_on_one_parent_make_siblings(acme):
    thread = make_thread(acme.tenant, turns=2)
    parent = path_ids(thread)[-1]
    url = f"/api/v1/threads/{thread.public_id}/messages"

    responses = run_together(
        lambda client, i: client.post(
            url,
            {"role": "assistant", "content": f"answer {i}", "parent_id": parent},
            format="json",
            HTTP_IDEMPOTENCY_KEY=f"key-{i}",
        ),
        acme.key,
    )

    assert [getattr(r, "status_code", r) for r in responses] == [201] * WORKERS
    ids = {r.data["id"] for r in responses}
    assert len(ids) == WORKERS
    children = Message.objects.filter(thread=thread, parent__public_id=parent)
    assert set(children.values_list("public_id", flat=True)) == ids
    assert {m.depth for m in children} == {3}
    thread.refresh_from_db()
    assert thread.active_leaf.public_id in ids
    assert Message.objects.filter(thread=thread).exclude(role=Role.ROOT).count() == 2 + WORKERS


def test_default_parent_is_read_under_the_lock(acme):
    """Appends without ``parent_id`` are serialised by the thread lock: they form one chain."""
    thread = make_thread(acme.tenant)
    url = f"/api/v1/threads/{thread.public_id}/messages"

    responses = run_together(
        lambda client, i: client.post(
            url, {"role": "user", "content": f"m{i}"}, format="json", HTTP_IDEMPOTENCY_KEY=f"c{i}"
        ),
        acme.key,
    )

    assert [getattr(r, "status_code", r) for r in responses] == [201] * WORKERS
    chain = path_ids(thread)
    assert len(chain) == WORKERS
    assert set(chain) == {r.data["id"] for r in responses}


def test_same_key_makes_one_node_even_when_every_request_takes_the_key_over(acme, settings):
    """With no lock timeout, every request finding the key in flight takes it over, so claims
    change hands while earlier claimants are mid-write: still one node, one first response."""
    settings.CONVMEM_IDEMPOTENCY_LOCK_SECONDS = 0
    thread = make_thread(acme.tenant, turns=1)
    url = f"/api/v1/threads/{thread.public_id}/messages"

    responses = run_together(
        lambda client, i: client.post(
            url, {"role": "user", "content": "once"}, format="json", HTTP_IDEMPOTENCY_KEY="grab"
        ),
        acme.key,
    )

    statuses = [getattr(r, "status_code", r) for r in responses]
    assert set(statuses) <= {201, 409}, statuses
    created = [r for r in responses if r.status_code == 201]
    assert sum("Idempotent-Replayed" not in r for r in created) == 1
    assert all(r.data == created[0].data for r in created)
    assert Message.objects.filter(thread=thread, content="once").count() == 1
    record = IdempotencyRecord.objects.get(key="grab")
    assert record.status == "completed"
    assert record.response_body == created[0].data
