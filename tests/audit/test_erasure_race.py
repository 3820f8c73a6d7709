"""Erasure and context assembly never overlap (PostgreSQL, real concurrent transactions).

A red-team run found snapshots holding erased text: a context request read the content, the
erasure committed and purged the snapshots it could see, and then the request stored its own.
Here clients keep asking for context while the thread is erased; afterwards no snapshot, memo
or stored response may hold the erased text, and every record that showed an erased message
has had its snapshot purged (and is named in the proof, when a deletion request ran).
"""

import threading
import time
import uuid

import pytest
from django.db import connection, transaction
from rest_framework.test import APIClient

from audit.deletion import deletion_self_service
from audit.erasure import thread_content_erase
from auditlog.events import Actor
from compaction.models import AssemblyRecord
from tests.audit.test_canary import db_hits
from tests.conftest import SYSTEM, make_thread
from tests.support.pg import (
    Request,
    backends_waiting_for_locks,
    other_session,
)
from threads import services
from threads.models import Thread

pytestmark = [pytest.mark.postgres, pytest.mark.django_db(transaction=True)]

CLIENTS = 6
ROUNDS = 3


def ask_for_context_until(stop: threading.Event, key: str, thread_id: str, made: list) -> None:
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Bearer {key}")
    try:
        while not stop.is_set():
            response = client.post(f"/api/v1/threads/{thread_id}/context", {}, format="json")
            made.append(response.status_code)
    finally:
        connection.close()


@pytest.mark.parametrize("round_", range(ROUNDS))
def test_no_snapshot_outlives_an_erasure_it_raced(acme, round_):
    canary = f"CANARY{uuid.uuid4().hex[:10].upper()}"
    thread = make_thread(acme.tenant)
    for turn in range(12):
        services.message_append(
            thread=thread,
            actor=SYSTEM,
            role="user" if turn % 2 == 0 else "assistant",
            content=f"Turn {turn}: my reference is {canary}, order ORD-{turn} is late.",
        )
    stop = threading.Event()
    made: list[int] = []
    clients = [
        threading.Thread(
            target=ask_for_context_until, args=(stop, acme.key, thread.public_id, made)
        )
        for _ in range(CLIENTS)
    ]
    for client in clients:
        client.start()
    while len(made) < CLIENTS * 3:  # the clients are in full swing
        time.sleep(0.01)

    with transaction.atomic():
        erased = thread_content_erase(
            thread=Thread.objects.get(pk=thread.pk), actor=Actor.system("tests-erasure")
        )
    time.sleep(0.3)  # contexts keep coming after the erasure
    stop.set()
    for client in clients:
        client.join(timeout=60)

    assert set(made) == {200}
    assert erased.messages
    assert db_hits(canary) == {}
    for record in AssemblyRecord.objects.filter(thread=thread):
        shows_erased = any(item.get("id") in erased.messages for item in record.items)
        if record.rendered_text:
            assert canary not in record.rendered_text
            assert not shows_erased or "[erased]" in record.rendered_text
    purged = AssemblyRecord.objects.filter(thread=thread, rendered_purged_at__isnull=False)
    assert set(purged.values_list("public_id", flat=True)) == set(erased.snapshots)


def test_a_context_that_waited_behind_a_delete_writes_nothing(acme):
    """``POST /context`` queued behind the erasure of ``DELETE /threads/{id}`` answers 404
    once the erasure commits, and stores no snapshot and no content blob: neither its system
    prompt nor its retrieved text reaches the deleted thread (or the tenant's blobs)."""
    canary = f"CANARY{uuid.uuid4().hex[:10].upper()}"
    thread = make_thread(acme.tenant, turns=4)
    body = {
        "system": f"You help customer {canary}.",
        "retrieved": [{"ref": f"crm-{canary}", "content": f"CRM record of {canary}"}],
    }
    with other_session(autocommit=True) as watcher:
        with transaction.atomic():
            # The DELETE's erasure, held open: the thread row is locked FOR UPDATE.
            deletion_self_service(tenant=acme.tenant, actor=acme.actor, thread=thread)
            context = Request(
                lambda c: c.post(
                    f"/api/v1/threads/{thread.public_id}/context", body, format="json"
                ),
                acme,
            )
            backends_waiting_for_locks(watcher, 1)
        answered = context.wait()
    assert answered.status_code == 404, answered.content
    assert db_hits(canary) == {}
    assert not AssemblyRecord.objects.filter(thread=thread).exists()
