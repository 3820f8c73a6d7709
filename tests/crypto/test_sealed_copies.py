"""With sealing on, the copies of content beyond messages and memos are ciphertext at rest too:
the thread's system prompts, the responses stored under an ``Idempotency-Key``, the system
and retrieved texts an assembly stored (content blobs, once per subject) and the kept model
inputs' rendered pieces. They read back as written (a retry replays the same body, a
replay of a kept input verifies its hash), and erasure still reaches them: with the subject's
key destroyed first, a stored response that no longer opens replays the erased view."""

from typing import Any

import pytest
from django.db import connection

from compaction.models import AssemblyRecord, ContentBlob, RenderedPiece
from compaction.replay import assembly_replay
from compaction.snapshots import snapshot_messages
from convmem.models import ModelProfile
from tests.compaction.test_snapshots import assemble_turns
from tests.conftest import TenantKit
from threads.erasure import UNREADABLE_RESPONSE
from threads.models import IdempotencyRecord, Thread

pytestmark = pytest.mark.django_db

CANARY = "CANARY-7d1f"


def _at_rest(sql: str, params: list[Any]) -> str:
    with connection.cursor() as cursor:
        cursor.execute(sql, params)
        return " ".join(str(value) for row in cursor.fetchall() for value in row)


def _append(acme: TenantKit, thread_id: str, key: str) -> Any:
    return acme.client.post(
        f"/api/v1/threads/{thread_id}/messages",
        {"role": "user", "content": f"my number is {CANARY}"},
        format="json",
        HTTP_IDEMPOTENCY_KEY=key,
    )


def _sealed_thread(acme: TenantKit, settings: Any) -> str:
    settings.CONVMEM_ENCRYPT_CONTENT = True
    created = acme.client.post(
        "/api/v1/threads",
        {"user_ref": "sealed-subject", "system": f"You help {CANARY}."},
        format="json",
    )
    assert created.status_code == 201, created.data
    return created.data["id"]


def test_system_prompts_and_stored_responses_are_sealed_and_replayed(
    acme: TenantKit, settings: Any
) -> None:
    thread_id = _sealed_thread(acme, settings)
    first = _append(acme, thread_id, "sealed-append")
    assert first.status_code == 201
    thread = Thread.objects.get(public_id=thread_id)

    prompts = _at_rest("SELECT text FROM threads_systemprompt WHERE thread_id = %s", [thread.pk])
    responses = _at_rest(
        "SELECT response_body FROM threads_idempotencyrecord WHERE thread_id = %s", [thread.pk]
    )
    assert CANARY not in prompts
    assert prompts.startswith(f"enc1:{thread.data_key_id}:")
    assert CANARY not in responses
    assert f"enc1:{thread.data_key_id}:" in responses

    assert thread.system_prompt.text == f"You help {CANARY}."
    context = acme.client.post(
        f"/api/v1/threads/{thread_id}/context", {"window_tokens": 4000}, format="json"
    )
    assert context.status_code == 200, context.data
    assert context.data["messages"][0] == {"role": "system", "content": f"You help {CANARY}."}
    replay = _append(acme, thread_id, "sealed-append")
    assert replay.status_code == 201
    assert replay.data == first.data
    assert replay.headers.get("Idempotent-Replayed") == "true"


def test_erasure_with_the_key_destroyed_leaves_stored_responses_the_erased_view(
    acme: TenantKit, settings: Any
) -> None:
    thread_id = _sealed_thread(acme, settings)
    assert _append(acme, thread_id, "before-delete").status_code == 201

    erased = acme.client.delete(f"/api/v1/threads/{thread_id}")
    assert erased.status_code == 200, erased.content

    thread = Thread.objects.get(public_id=thread_id)
    record = IdempotencyRecord.objects.get(key="before-delete")
    assert record.response_body == UNREADABLE_RESPONSE
    assert _at_rest("SELECT text FROM threads_systemprompt WHERE thread_id = %s", [thread.pk]) == ""


def test_a_redaction_keeps_the_key_and_redacts_the_sealed_response(
    acme: TenantKit, settings: Any
) -> None:
    thread_id = _sealed_thread(acme, settings)
    said = _append(acme, thread_id, "to-redact")

    redacted = acme.client.post(
        f"/api/v1/threads/{thread_id}/messages/{said.data['id']}/redact",
        {"reason": "card number"},
        format="json",
    )
    assert redacted.status_code == 200, redacted.content

    body = IdempotencyRecord.objects.get(key="to-redact").response_body
    assert body["id"] == said.data["id"]
    assert CANARY not in str(body)
    assert body["erased"] is True
    assert IdempotencyRecord.objects.get(key="to-redact").thread.data_key_id  # the key lives on


def test_kept_inputs_are_sealed_and_replay_verifies_them(acme: TenantKit, settings: Any) -> None:
    thread_id = _sealed_thread(acme, settings)
    profile = ModelProfile.objects.create(
        tenant=acme.tenant, name="debug", keep_rendered_inputs=True
    )
    Thread.objects.filter(public_id=thread_id).update(profile=profile)
    thread = Thread.objects.get(public_id=thread_id)

    records = assemble_turns(thread, 3)

    stored = RenderedPiece.objects.filter(thread=thread).values_list("data", flat=True)
    assert stored
    assert all(bytes(data).startswith(f"enc1:{thread.data_key_id}:".encode()) for data in stored)
    for record in records:
        replay = assembly_replay(assembly=record)
        assert replay.matches, replay.reason
        assert snapshot_messages(record) == replay.messages


def _assemble(acme: TenantKit, thread_id: str) -> Any:
    response = acme.client.post(
        f"/api/v1/threads/{thread_id}/context",
        {
            "window_tokens": 4000,
            "system": f"You help customer {CANARY}.",
            "retrieved": [{"ref": "crm", "content": f"CRM record of {CANARY}"}],
        },
        format="json",
    )
    assert response.status_code == 200, response.data
    return response.data


def test_system_and_retrieved_texts_are_stored_per_subject_sealed(
    acme: TenantKit, settings: Any
) -> None:
    settings.CONVMEM_ENCRYPT_CONTENT = True
    threads = {}
    for user_ref in ("alice", "bob"):
        created = acme.client.post("/api/v1/threads", {"user_ref": user_ref}, format="json")
        _append(acme, created.data["id"], f"first-{user_ref}")
        threads[user_ref] = created.data["id"]
    alice_context = _assemble(acme, threads["alice"])
    _assemble(acme, threads["alice"])  # stored once per subject and hash
    _assemble(acme, threads["bob"])

    keys = {u: Thread.objects.get(public_id=t).data_key_id for u, t in threads.items()}
    rows = ContentBlob.objects.values_list("key_id", flat=True)
    assert sorted(rows) == sorted([keys["alice"]] * 2 + [keys["bob"]] * 2)
    at_rest = _at_rest("SELECT text FROM compaction_contentblob", [])
    assert CANARY not in at_rest
    assert at_rest.count("enc1:") == 4
    record = AssemblyRecord.objects.get(public_id=alice_context["assembly_id"])
    replay = assembly_replay(assembly=record)
    assert replay.matches, replay.reason

    assert acme.client.delete(f"/api/v1/threads/{threads['alice']}").status_code == 200

    alice_blobs = ContentBlob.objects.filter(key_id=keys["alice"])
    assert all(blob.erased_at is not None and blob.text == "" for blob in alice_blobs)
    bob = Thread.objects.get(public_id=threads["bob"])
    bob_replay = assembly_replay(assembly=AssemblyRecord.objects.filter(thread=bob).get())
    assert bob_replay.matches, bob_replay.reason
