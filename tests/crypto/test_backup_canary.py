"""The goal of issue 23: a canary written before a ``pg_dump`` is unreadable in that dump once
its subject is erased — in a message, a system prompt, a stored idempotent response and a
retrieved item's text. The dump is taken with the real ``pg_dump``, restored with ``psql`` into
a fresh database after the erasure, and the restored ciphertext is tried with the live key
store and key provider (what an attacker holding the dump and the running service would have)."""

import os
import secrets
import subprocess
from pathlib import Path
from typing import Any

import psycopg
import pytest
from django.db import connection

from convmem import blind_index, crypto
from tests.conftest import SYSTEM, TenantKit
from threads import services
from threads.models import Message

pytestmark = [pytest.mark.postgres, pytest.mark.django_db(transaction=True)]


def _libpq_env(name: str) -> dict[str, str]:
    db = connection.settings_dict
    return {
        "PGHOST": db["HOST"] or "127.0.0.1",
        "PGPORT": str(db["PORT"] or 5432),
        "PGUSER": db["USER"] or "postgres",
        "PGPASSWORD": db["PASSWORD"] or "",
        "PGDATABASE": name,
    }


def _run(command: list[str], database: str) -> None:
    subprocess.run(command, check=True, env={**os.environ, **_libpq_env(database)}, timeout=300)


@pytest.fixture
def restored_database() -> Any:
    name = f"{connection.settings_dict['NAME']}_restored_{secrets.token_hex(4)}"
    _run(["createdb", name], "postgres")
    yield name
    _run(["dropdb", "--if-exists", name], "postgres")


def _restored_row(database: str, public_id: str) -> tuple[str, str]:
    env = _libpq_env(database)
    with psycopg.connect(
        host=env["PGHOST"], port=env["PGPORT"], user=env["PGUSER"], dbname=database
    ) as restored:
        row = restored.execute(
            "SELECT content, search_terms FROM threads_message WHERE public_id = %s", [public_id]
        ).fetchone()
    return row


def _restored_copies(database: str, thread_pk: int, key_id: str) -> list[str]:
    """The restored system prompt, stored idempotent response, and the texts the assembly
    stored (the system prompt and the retrieved item)."""
    env = _libpq_env(database)
    with psycopg.connect(
        host=env["PGHOST"], port=env["PGPORT"], user=env["PGUSER"], dbname=database
    ) as restored:
        prompts = restored.execute(
            "SELECT text FROM threads_systemprompt WHERE thread_id = %s", [thread_pk]
        ).fetchall()
        responses = restored.execute(
            "SELECT response_body #>> '{}' FROM threads_idempotencyrecord WHERE key = %s",
            ["backup-canary"],
        ).fetchall()
        blobs = restored.execute(
            "SELECT text FROM compaction_contentblob WHERE key_id = %s", [key_id]
        ).fetchall()
    assert (len(prompts), len(responses), len(blobs)) == (1, 1, 2)  # blobs: prompt, item
    return [row[0] for row in prompts + responses + blobs]


def test_a_canary_in_a_dump_taken_before_the_erasure_is_unreadable_after_it(
    acme: TenantKit, settings: Any, tmp_path: Path, restored_database: str
) -> None:
    settings.CONVMEM_ENCRYPT_CONTENT = True
    canary = f"CANARY-{secrets.token_hex(8)}"
    thread = services.thread_create(
        tenant=acme.tenant, actor=SYSTEM, user_ref="canary-subject", system=f"You help {canary}."
    )
    said = services.message_append(
        thread=thread, actor=SYSTEM, role="user", content=f"my secret is {canary}"
    )
    # The copies beyond the message: a stored idempotent response, a retrieved item's text.
    stored_response = acme.client.post(
        f"/api/v1/threads/{thread.public_id}/messages",
        {"role": "user", "content": f"again, {canary}"},
        format="json",
        HTTP_IDEMPOTENCY_KEY="backup-canary",
    )
    assert stored_response.status_code == 201
    context = acme.client.post(
        f"/api/v1/threads/{thread.public_id}/context",
        {"window_tokens": 4000, "retrieved": [{"ref": "crm", "content": f"CRM: {canary}"}]},
        format="json",
    )
    assert context.status_code == 200, context.data
    thread.refresh_from_db()
    aad = crypto.row_aad("threads_message", said.public_id, "content")
    dump = tmp_path / "before-erasure.sql"
    _run(["pg_dump", "--no-owner", "-f", str(dump)], connection.settings_dict["NAME"])

    # Not in clear, nor lower-cased as a full-text index holds words: the index holds keyed
    # hashes (the blind index), which the dump carries.
    assert canary not in dump.read_text()
    assert canary.lower() not in dump.read_text()
    secret_word = blind_index.index_words(canary)[-1]  # the random part, lower-cased
    assert secret_word not in dump.read_text()
    canary_hash = blind_index.word_tokens([secret_word], thread.data_key_id)
    assert canary_hash[0] in dump.read_text()
    # The control: before the erasure the service opens the dumped value.
    assert crypto.open_text(Message.objects.get(pk=said.pk).content, aad=aad).endswith(canary)

    erased = acme.client.delete(f"/api/v1/threads/{thread.public_id}")
    assert erased.status_code == 200, erased.content
    crypto.key_cache.clear()  # as any other process of the service, once its cache expired
    _run(["psql", "-q", "-v", "ON_ERROR_STOP=1", "-f", str(dump)], restored_database)

    restored, restored_terms = _restored_row(restored_database, said.public_id)
    assert restored.startswith(f"enc1:{thread.data_key_id}:")
    assert canary not in restored
    with pytest.raises(crypto.KeyUnavailable):
        crypto.open_text(restored, aad=aad)
    for copy in _restored_copies(restored_database, thread.pk, thread.data_key_id):
        assert copy.startswith(f"enc1:{thread.data_key_id}:")
        assert canary not in copy
        with pytest.raises(crypto.KeyUnavailable):
            crypto.open_text(copy, aad=aad)  # the key is gone before the identity is checked
    # The restored index entries are hashes no one can compute for any word any more.
    assert canary_hash[0] in restored_terms.split()
    crypto.search_key_cache.clear()
    with pytest.raises(crypto.KeyUnavailable):
        blind_index.word_tokens([secret_word], thread.data_key_id)
