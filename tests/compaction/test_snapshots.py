"""Kept model inputs (snapshots): absent by default, deduplicated and compressed when a profile
keeps them, purged after CONVMEM_SNAPSHOT_DAYS; the hash and ids stay and replay checks them."""

import zlib
from datetime import timedelta

import pytest
from django.conf import settings
from django.test import override_settings
from django.utils import timezone

from auditlog.models import AuditEvent
from compaction import tasks
from compaction.erasure import assembly_snapshots_purge
from compaction.models import AssemblyRecord, RenderedPiece
from compaction.replay import assembly_replay
from compaction.snapshots import snapshot_messages, snapshot_text
from convmem.models import ModelProfile
from tests.audit.conftest import branched_thread, record_assembly
from tests.compaction.helpers import grow
from tests.conftest import make_thread
from threads.models import Thread

pytestmark = pytest.mark.django_db

SYSTEM_PROMPT = "You are a helpful support agent."


def assemble_turns(thread: Thread, turns: int) -> list[AssemblyRecord]:
    """One user turn, its context and an answer, ``turns`` times (the per-turn workload)."""
    records = []
    for index in range(turns):
        grow(thread, 1, start=2 * index)
        records.append(record_assembly(thread, system=SYSTEM_PROMPT))
        grow(thread, 1, start=2 * index + 1)
    return records


def test_by_default_an_input_is_recorded_as_ids_and_a_hash_only(acme):
    thread = make_thread(acme.tenant)

    records = assemble_turns(thread, 3)

    assert all(record.rendered_pieces is None for record in records)
    assert all(snapshot_messages(record) is None for record in records)
    assert not RenderedPiece.objects.exists()
    assert all(assembly_replay(assembly=record).matches for record in records)


def test_a_profile_keeps_inputs_deduplicated_and_compressed(acme):
    profile = ModelProfile.objects.create(
        tenant=acme.tenant, name="debug", keep_rendered_inputs=True
    )
    thread = make_thread(acme.tenant)
    Thread.objects.filter(pk=thread.pk).update(profile=profile)

    records = assemble_turns(thread, 6)

    for record in records:
        replay = assembly_replay(assembly=record)
        assert replay.matches, replay.reason
        assert snapshot_messages(record) == replay.messages
        assert AssemblyRecord.objects.get(pk=record.pk).rendered_purged_at is None
    # Every input starts with the system prompt and the turns before: each piece is stored
    # once, so the thread holds one piece per distinct message, not one per message shown.
    shown = sum(len(record.rendered_pieces) for record in records)
    distinct = {digest for record in records for digest in record.rendered_pieces}
    # The system prompt and 11 messages (the last answer came after the last input).
    assert RenderedPiece.objects.filter(thread=thread).count() == len(distinct) == 1 + 11
    assert shown > 2 * len(distinct)
    piece = RenderedPiece.objects.filter(thread=thread).first()
    assert b"helpful" not in bytes(piece.data)  # compressed, not plain text
    assert zlib.decompress(bytes(piece.data))


def test_a_profile_without_the_setting_keeps_nothing(acme):
    profile = ModelProfile.objects.create(tenant=acme.tenant, name="plain")
    thread = make_thread(acme.tenant)
    Thread.objects.filter(pk=thread.pk).update(profile=profile)

    (record,) = assemble_turns(thread, 1)

    assert record.rendered_pieces is None


@override_settings(CONVMEM_KEEP_RENDERED_INPUTS=True)
def test_old_snapshots_are_purged_and_audited(acme):
    thread = branched_thread(acme.tenant)
    old, new = record_assembly(thread), record_assembly(thread, system="Another prompt.")
    AssemblyRecord.objects.filter(pk=old.pk).update(created_at=timezone.now() - timedelta(days=8))

    assert tasks.purge_assembly_snapshots() == 1

    old.refresh_from_db()
    new.refresh_from_db()
    assert old.rendered_pieces is None
    assert old.rendered_purged_at is not None
    assert old.rendered_hash
    assert old.items
    assert assembly_replay(assembly=old).matches
    assert "Another prompt." in snapshot_text(new)
    assert new.rendered_purged_at is None
    # The pieces only the old snapshot named are gone; the shared ones stay for the new one.
    assert set(RenderedPiece.objects.values_list("sha256", flat=True)) == set(new.rendered_pieces)
    event = AuditEvent.objects.get(action="assembly.snapshots_purged")
    assert event.tenant_id == acme.tenant.pk
    assert event.details == {"count": 1, "older_than_days": 7}
    assert assembly_snapshots_purge() == 0
    assert AuditEvent.objects.filter(action="assembly.snapshots_purged").count() == 1


@override_settings(CONVMEM_SNAPSHOT_DAYS=1, CONVMEM_KEEP_RENDERED_INPUTS=True)
def test_the_window_is_a_setting(acme):
    thread = branched_thread(acme.tenant)
    record = record_assembly(thread)
    AssemblyRecord.objects.filter(pk=record.pk).update(
        created_at=timezone.now() - timedelta(days=2)
    )
    assert assembly_snapshots_purge() == 1
    assert not RenderedPiece.objects.exists()


def test_periodic_tasks_are_scheduled():
    from convmem.celery import app

    app.loader.import_default_modules()
    scheduled = {entry["task"] for entry in settings.CELERY_BEAT_SCHEDULE.values()}
    assert {"compaction.purge_assembly_snapshots", "audit.apply_retention"} <= scheduled
    assert scheduled <= set(app.tasks)
