"""Per-subject encryption (``convmem.crypto``): sealing, the row binding, the key cache, key
destruction; and the message columns sealed at rest while every read sees them in clear."""

from typing import Any

import pytest
from django.db import connection

from convmem import crypto
from convmem.models import DataKey
from tests.conftest import SYSTEM, TenantKit
from threads import services
from threads.models import Message

pytestmark = pytest.mark.django_db


@pytest.fixture
def sealing(settings: Any) -> None:
    settings.CONVMEM_ENCRYPT_CONTENT = True


def _key(acme: TenantKit, subject: str = "user-1") -> str:
    return crypto.subject_key_id(tenant_id=acme.tenant.pk, subject=subject)


def test_a_sealed_value_opens_under_its_own_row_only(acme: TenantKit) -> None:
    key_id = _key(acme)
    aad = crypto.row_aad("threads_message", "msg_a", "content")
    sealed = crypto.seal_text("the canary sings", key_id=key_id, aad=aad)

    assert sealed.startswith(f"enc1:{key_id}:")
    assert "canary" not in sealed
    assert crypto.open_text(sealed, aad=aad) == "the canary sings"
    for moved in [
        crypto.row_aad("threads_message", "msg_b", "content"),
        crypto.row_aad("threads_message", "msg_a", "metadata"),
        crypto.row_aad("compaction_summary", "msg_a", "content"),
    ]:
        with pytest.raises(crypto.CiphertextRejected):
            crypto.open_text(sealed, aad=moved)


def test_a_tampered_value_is_refused(acme: TenantKit) -> None:
    key_id = _key(acme)
    aad = crypto.row_aad("threads_message", "msg_a", "content")
    sealed = crypto.seal_text("hello", key_id=key_id, aad=aad)
    body = bytearray(crypto.base64.b64decode(sealed.rsplit(":", 1)[1]))
    body[-1] ^= 1
    tampered = sealed.rsplit(":", 1)[0] + ":" + crypto.base64.b64encode(bytes(body)).decode()

    with pytest.raises(crypto.CiphertextRejected):
        crypto.open_text(tampered, aad=aad)


def test_a_body_that_is_not_strict_base64_is_refused(acme: TenantKit) -> None:
    key_id = _key(acme)
    aad = crypto.row_aad("threads_message", "msg_a", "content")
    sealed = crypto.seal_text("hello", key_id=key_id, aad=aad)
    prefix, body = sealed.rsplit(":", 1)

    for bad in (body + "!", body[:-1] + " " + body[-1:], body + "==A", body + "é", "=" + body):
        with pytest.raises(crypto.CiphertextRejected):
            crypto.open_text(f"{prefix}:{bad}", aad=aad)


def test_a_value_sealed_under_another_subjects_key_is_refused(acme: TenantKit) -> None:
    aad = crypto.row_aad("threads_message", "msg_a", "content")
    sealed = crypto.seal_text("mine", key_id=_key(acme, "alice"), aad=aad)
    # The same body under the other subject's key id: the key does not open it.
    other = sealed.replace(sealed.split(":")[1], _key(acme, "bob"), 1)

    with pytest.raises(crypto.CiphertextRejected):
        crypto.open_text(other, aad=aad)


def test_values_written_before_encryption_read_as_they_are(acme: TenantKit) -> None:
    assert crypto.open_text("plain", aad=b"x") == "plain"
    assert crypto.open_json({"a": 1}, aad=b"x") == {"a": 1}


def test_one_live_key_per_subject_and_a_thread_without_user_is_its_own_subject(
    acme: TenantKit, sealing: None
) -> None:
    assert _key(acme, "alice") == _key(acme, "alice") != _key(acme, "bob")
    first = services.thread_create(tenant=acme.tenant, actor=SYSTEM, user_ref="")
    second = services.thread_create(tenant=acme.tenant, actor=SYSTEM, user_ref="")
    assert first.data_key_id
    assert second.data_key_id
    assert first.data_key_id != second.data_key_id
    stored = DataKey.objects.get(key_id=first.data_key_id)
    assert stored.subject == f"thread:{first.public_id}"
    assert stored.wrapped
    assert len(bytes(stored.wrapped)) > 32


def test_the_key_cache_is_bounded_and_reloads_from_the_store(
    acme: TenantKit, settings: Any
) -> None:
    settings.CONVMEM_KEY_CACHE_SIZE = 2
    crypto.key_cache.clear()
    keys = [_key(acme, f"subject-{i}") for i in range(4)]
    aad = crypto.row_aad("t", "r", "c")
    sealed = [crypto.seal_text(f"v{i}", key_id=k, aad=aad) for i, k in enumerate(keys)]

    assert len(crypto.key_cache) == 2
    assert crypto.key_cache.get(keys[0]) is None  # the least recently used went first
    assert [crypto.open_text(s, aad=aad) for s in sealed] == ["v0", "v1", "v2", "v3"]
    assert len(crypto.key_cache) == 2


def test_a_destroyed_key_opens_nothing_even_in_a_process_that_had_it_cached(
    acme: TenantKit,
) -> None:
    key_id = _key(acme, "erase-me")
    aad = crypto.row_aad("t", "r", "c")
    sealed = crypto.seal_text("secret", key_id=key_id, aad=aad)

    destroyed = crypto.subject_keys_destroy(tenant_id=acme.tenant.pk, subject="erase-me")

    assert [d.key_id for d in destroyed] == [key_id]
    assert DataKey.objects.get(key_id=key_id).wrapped is None
    with pytest.raises(crypto.KeyUnavailable):
        crypto.open_text(sealed, aad=aad)
    # The subject's next key is a new one; destroying again lists nothing.
    assert _key(acme, "erase-me") != key_id
    assert crypto.subject_keys_destroy(tenant_id=acme.tenant.pk, subject="nobody") == []


def _stored(public_id: str) -> tuple[Any, ...]:
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT content, content_parts, tool_calls, metadata FROM threads_message "
            "WHERE public_id = %s",
            [public_id],
        )
        return cursor.fetchone()


def test_message_columns_are_sealed_at_rest_and_read_in_clear(
    acme: TenantKit, sealing: None
) -> None:
    thread = services.thread_create(tenant=acme.tenant, actor=SYSTEM, user_ref="alice")
    said = services.message_append(
        thread=thread,
        actor=SYSTEM,
        role="user",
        content=[{"type": "text", "text": "my canary-4711 number"}],
        metadata={"mood": "canary-mood"},
    )
    call = {"id": "call_1", "type": "function"}
    call["function"] = {"name": "lookup", "arguments": '{"q": "canary-args"}'}
    asked = services.message_append(
        thread=thread, actor=SYSTEM, role="assistant", content="", tool_calls=[call]
    )

    raw = " ".join(str(value) for value in (*_stored(said.public_id), *_stored(asked.public_id)))
    assert "canary" not in raw
    assert "lookup" in raw
    assert "call_1" in raw
    read = Message.objects.get(public_id=said.public_id)
    assert read.content == "my canary-4711 number"
    assert read.content_parts == [{"type": "text", "text": "my canary-4711 number"}]
    assert read.metadata == {"mood": "canary-mood"}
    assert Message.objects.get(public_id=asked.public_id).tool_calls == [call]


def test_the_context_endpoint_reads_sealed_turns(acme: TenantKit, sealing: None) -> None:
    thread = services.thread_create(tenant=acme.tenant, actor=SYSTEM, user_ref="alice")
    for i in range(4):
        role = "user" if i % 2 == 0 else "assistant"
        services.message_append(thread=thread, actor=SYSTEM, role=role, content=f"canary {i}")

    response = acme.client.post(f"/api/v1/threads/{thread.public_id}/context", {}, format="json")

    assert response.status_code == 200, response.content
    texts = [m["content"] for m in response.json()["messages"]]
    assert texts == ["canary 0", "canary 1", "canary 2", "canary 3"]
    listed = acme.client.get(f"/api/v1/threads/{thread.public_id}/messages")
    assert [m["content"] for m in listed.json()["results"]][-1] == "canary 3"


def test_a_sealed_row_copied_into_another_row_does_not_open(acme: TenantKit, sealing: None) -> None:
    thread = services.thread_create(tenant=acme.tenant, actor=SYSTEM, user_ref="alice")
    first = services.message_append(thread=thread, actor=SYSTEM, role="user", content="mine")
    second = services.message_append(thread=thread, actor=SYSTEM, role="assistant", content="x")
    with connection.cursor() as cursor:
        cursor.execute(
            "UPDATE threads_message SET content = (SELECT content FROM threads_message "
            "WHERE public_id = %s) WHERE public_id = %s",
            [first.public_id, second.public_id],
        )

    with pytest.raises(crypto.CiphertextRejected):
        Message.objects.get(public_id=second.public_id)


def test_key_material_never_lives_in_the_content_database(acme: TenantKit) -> None:
    from django.db import connections

    _key(acme, "alice")

    assert "convmem_datakey" not in connection.introspection.table_names()
    assert "convmem_datakey" in connections["keys"].introspection.table_names()


def test_production_settings_refuse_to_seal_without_a_master_key(settings: Any) -> None:
    from django.core.exceptions import ImproperlyConfigured

    from convmem.key_providers import LocalKeyProvider

    settings.CONVMEM_MASTER_KEY = ""
    settings.CONVMEM_MASTER_KEY_REQUIRED = True

    with pytest.raises(ImproperlyConfigured, match="CONVMEM_MASTER_KEY"):
        LocalKeyProvider()


def test_a_data_key_wrapped_under_another_master_key_does_not_unwrap(acme: TenantKit) -> None:
    import os

    from convmem.key_providers import LocalKeyProvider

    key_id = _key(acme, "alice")
    stored = DataKey.objects.get(key_id=key_id)
    other = LocalKeyProvider(os.urandom(32))

    with pytest.raises(Exception, match=r"wrapped by"):
        other.unwrap(key_id, bytes(stored.wrapped), stored.kek_id)
