"""Physical erasure: after ``erasure_scrub`` the database files no longer hold erased content.

On PostgreSQL the test reads the content tables' own files (and their TOAST tables') from the
server's data directory, so it needs the server on this machine and a readable data directory
(CI's is); on SQLite it reads the database file and its WAL.
"""

import os
import uuid
from io import StringIO
from pathlib import Path

import pytest
from django.core.management import call_command
from django.db import connection, transaction

from audit.erasure import thread_content_erase
from audit.scrub import CONTENT_MODELS, database_scrub
from auditlog.events import Actor
from auditlog.models import AuditEvent
from tests.compaction.helpers import post_context
from tests.conftest import SYSTEM, make_thread
from threads import services

pytestmark = pytest.mark.django_db(transaction=True)


def relation_files(table: str) -> list[Path]:
    """The files of ``table`` and of its TOAST table (every 1 GB segment)."""
    with connection.cursor() as cursor:
        cursor.execute("SHOW data_directory")
        data = Path(cursor.fetchone()[0])
        cursor.execute(
            "SELECT pg_relation_filepath(c.oid), pg_relation_filepath(c.reltoastrelid) "
            "FROM pg_class c WHERE c.relname = %s",
            [table],
        )
        paths = [p for p in cursor.fetchone() if p]
    if not os.access(data, os.R_OK):
        pytest.fail(f"the test needs to read PostgreSQL's data directory {data}")
    return [f for p in paths for f in data.parent.glob(f"{data.name}/{p}*") if f.is_file()]


def database_files() -> list[Path]:
    if connection.vendor == "postgresql":
        return [f for model in CONTENT_MODELS for f in relation_files(model._meta.db_table)]
    name = Path(connection.settings_dict["NAME"])
    return [f for f in (name, Path(f"{name}-wal")) if f.exists()]


def copies(needle: str) -> int:
    target = needle.encode()
    return sum(path.read_bytes().count(target) for path in database_files())


def test_scrubbing_leaves_no_erased_content_in_the_files(acme):
    canary = f"CANARY{uuid.uuid4().hex[:12].upper()}"
    thread = make_thread(acme.tenant)
    for turn in range(10):
        role = "user" if turn % 2 == 0 else "assistant"
        services.message_append(
            thread=thread, actor=SYSTEM, role=role, content=f"turn {turn}: I am {canary}."
        )
    assert post_context(acme.client, thread).status_code == 200  # a snapshot of the canary
    with connection.cursor() as cursor:
        cursor.execute("CHECKPOINT" if connection.vendor == "postgresql" else "PRAGMA user_version")
    assert copies(canary) > 0, "the canary is in the files before (the test sees what it seeks)"
    with transaction.atomic():
        thread_content_erase(thread=thread, actor=Actor.system("tests-erasure"))

    out = StringIO()
    call_command("erasure_scrub", "--wait", "10", stdout=out)

    assert copies(canary) == 0
    assert "erasure scrub complete" in out.getvalue()
    event = AuditEvent.objects.get(action="erasure.scrubbed")
    assert event.details["vendor"] == connection.vendor
    assert canary not in str(event.details)


@pytest.mark.postgres
def test_an_open_transaction_older_than_the_erasure_is_waited_for_and_reported(acme):
    other = connection.copy()
    other.connect()
    try:
        other.connection.execute("BEGIN")
        other.connection.execute("SELECT txid_current()")  # holds a snapshot from before
        scrub = database_scrub(wait_seconds=1)
    finally:
        other.connection.execute("ROLLBACK")
        other.close()

    assert scrub.waited_seconds >= 1
    assert any("older than the erasure" in warning for warning in scrub.warnings)
    assert not scrub.complete


def test_with_encryption_the_files_never_hold_the_canary_and_scrub_removes_the_ciphertext(
    acme, settings
):
    settings.CONVMEM_ENCRYPT_CONTENT = True
    canary = f"CANARY{uuid.uuid4().hex[:12].upper()}"
    thread = make_thread(acme.tenant)
    said = [
        services.message_append(
            thread=thread, actor=SYSTEM, role=role, content=f"turn {turn}: I am {canary}."
        )
        for turn, role in enumerate(["user", "assistant"] * 3)
    ]
    assert post_context(acme.client, thread).status_code == 200
    with connection.cursor() as cursor:
        cursor.execute("CHECKPOINT" if connection.vendor == "postgresql" else "PRAGMA user_version")
        cursor.execute("SELECT content FROM threads_message WHERE id = %s", [said[-1].pk])
        sealed = cursor.fetchone()[0]
    assert sealed.startswith("enc1:")
    assert copies(canary) == 0, "sealed: the files never hold it in clear"
    assert copies(sealed) > 0, "the ciphertext is in the files (the test sees what it seeks)"
    with transaction.atomic():
        thread_content_erase(thread=thread, actor=Actor.system("tests-erasure"))

    call_command("erasure_scrub", "--wait", "10", stdout=StringIO())

    assert copies(sealed) == 0
    assert copies(canary) == 0
