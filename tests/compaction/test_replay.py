"""Replay rebuilds a recorded model input and says whether, and why not, it matches."""

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from audit.erasure import thread_content_erase
from compaction.context import context_assemble
from compaction.models import AssemblyRecord, ContentBlob
from compaction.replay import assembly_replay
from compaction.selectors import assembly_items
from tests.audit.conftest import OPERATOR, branched_thread, record_assembly
from threads.models import Thread

pytestmark = pytest.mark.django_db


def test_replay_matches_the_recorded_hash(acme):
    thread = branched_thread(acme.tenant)
    record = record_assembly(thread, system="Be brief.", retrieved="Refund policy: 30 days.")

    replay = assembly_replay(assembly=record)

    assert replay.matches, replay.reason
    assert replay.reason is None
    assert replay.replayed_hash == record.rendered_hash
    contents = [m["content"] for m in replay.messages]
    assert contents[0] == "Be brief."
    # What changes every turn comes after the history, right before the current turn.
    assert contents[-2] == "Retrieved (doc-1):\nRefund policy: 30 days."


def test_replay_api_answers_for_the_tenant_only(acme, globex):
    record = record_assembly(branched_thread(acme.tenant))

    response = acme.client.get(f"/api/v1/assemblies/{record.public_id}/replay")

    assert response.status_code == 200
    assert set(response.data) >= {"assembly_id", "messages", "rendered_hash", "matches", "reason"}
    assert response.data["assembly_id"] == record.public_id
    assert response.data["matches"] is True
    assert response.data["rendered_hash"] == record.rendered_hash
    assert globex.client.get(f"/api/v1/assemblies/{record.public_id}/replay").status_code == 404
    assert acme.client.get("/api/v1/assemblies/asm_nope/replay").status_code == 404


def test_replay_after_erasure_names_the_erased_ids(acme):
    thread = branched_thread(acme.tenant)
    record = record_assembly(thread)
    message_ids = [i["id"] for i in assembly_items(record) if i["kind"] == "message"]

    thread_content_erase(thread=thread, actor=OPERATOR)
    replay = assembly_replay(assembly=AssemblyRecord.objects.get(pk=record.pk))

    assert not replay.matches
    assert replay.reason.startswith("content erased since: ")
    assert all(i in replay.reason for i in message_ids)


def test_replay_says_when_a_blob_is_gone(acme):
    record = record_assembly(branched_thread(acme.tenant), system="Be brief.")
    ContentBlob.objects.filter(tenant=acme.tenant).delete()

    replay = assembly_replay(assembly=record)

    assert not replay.matches
    assert "no longer stored: blob" in replay.reason


def test_replay_of_an_unknown_assembler_version(acme):
    record = record_assembly(branched_thread(acme.tenant))
    AssemblyRecord.objects.filter(pk=record.pk).update(assembler_version="assembler/0-retired")
    record.refresh_from_db()

    replay = assembly_replay(assembly=record)

    assert not replay.matches
    assert replay.reason == "unknown assembler version 'assembler/0-retired'"


def test_replay_with_the_assemblers_items_reads_only_the_texts(acme):
    thread = branched_thread(acme.tenant)
    assembly = context_assemble(
        thread=Thread.objects.select_related("profile", "active_leaf").get(pk=thread.pk),
        actor=OPERATOR,
        system="Be brief.",
    )
    record = AssemblyRecord.objects.get(pk=assembly.record.pk)

    with CaptureQueriesContext(connection) as full:
        replay = assembly_replay(assembly=record)
    with CaptureQueriesContext(connection) as handed:
        given = assembly_replay(assembly=record, items=assembly.items)

    assert given.matches
    assert replay.matches
    assert given.messages == replay.messages == assembly.messages
    assert len(handed) < len(full)


def test_items_that_are_not_the_records_do_not_pass_for_them(acme):
    thread = branched_thread(acme.tenant)
    record = record_assembly(thread, system="Be brief.")
    items = assembly_items(record)

    replay = assembly_replay(assembly=record, items=items[:-1])

    assert not replay.matches
