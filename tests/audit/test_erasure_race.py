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
from compaction.selectors import assembly_items
from compaction.snapshots import snapshot_text
from tests.audit.test_canary import db_hits
from tests.conftest import SYSTEM, make_thread
from tests.support.chat_server import ChatServer
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
        shows_erased = any(item.get("id") in erased.messages for item in assembly_items(record))
        kept = snapshot_text(record)
        if kept:
            assert canary not in kept
            assert not shows_erased or "[erased]" in kept
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


def keep_writing_until(
    stop: threading.Event, key: str, thread_id: str, canary: str, kind: str, made: list
) -> None:
    """One client's loop: context (the canary in its system prompt and retrieved text), append
    or respond (the canary in the user's turn)."""
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Bearer {key}")
    url = f"/api/v1/threads/{thread_id}"
    try:
        while not stop.is_set():
            if kind == "context":
                response = client.post(
                    f"{url}/context",
                    {
                        "system": f"You help customer {canary}.",
                        "retrieved": [{"ref": "crm", "content": f"CRM record of {canary}"}],
                    },
                    format="json",
                )
            else:
                path = "messages" if kind == "append" else "respond"
                body = {"content": f"I am {canary}, where is my order?"}
                if kind == "append":
                    body["role"] = "user"
                response = client.post(
                    f"{url}/{path}", body, format="json", HTTP_IDEMPOTENCY_KEY=uuid.uuid4().hex
                )
            made.append((kind, response.status_code))
    finally:
        connection.close()


def test_no_canary_survives_a_delete_raced_by_context_append_and_respond(acme, settings):
    """The whole-thread DELETE through the API while clients keep assembling context, appending
    and answering turns on the thread: afterwards no text or JSON column holds the canary."""
    canary = f"CANARY{uuid.uuid4().hex[:10].upper()}"
    thread = make_thread(acme.tenant, turns=6)
    stop = threading.Event()
    made: list[tuple[str, int]] = []
    with ChatServer() as chat:
        chat.configure(reply="Your order ships on Monday.")
        settings.CONVMEM_CHAT_BASE_URL = chat.base_url
        clients = [
            threading.Thread(
                target=keep_writing_until,
                args=(stop, acme.key, thread.public_id, canary, kind, made),
            )
            for kind in ("context", "context", "append", "append", "respond", "respond")
        ]
        for client in clients:
            client.start()
        while {kind for kind, status in made if status in (200, 201)} != {
            "context",
            "append",
            "respond",
        }:
            time.sleep(0.01)
        assert acme.client.delete(f"/api/v1/threads/{thread.public_id}").status_code == 200
        time.sleep(0.3)  # writes keep coming after the erasure
        stop.set()
        for client in clients:
            client.join(timeout=60)

    statuses = {status for _, status in made}
    assert statuses <= {200, 201, 404, 409}, made
    assert 404 in statuses
    assert db_hits(canary) == {}
