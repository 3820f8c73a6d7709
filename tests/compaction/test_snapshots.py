"""Rendered snapshots are purged after CONVMEM_SNAPSHOT_DAYS; the hash and ids stay."""

from datetime import timedelta

import pytest
from django.conf import settings
from django.test import override_settings
from django.utils import timezone

from auditlog.models import AuditEvent
from compaction import tasks
from compaction.erasure import assembly_snapshots_purge
from compaction.models import AssemblyRecord
from tests.audit.conftest import branched_thread, record_assembly

pytestmark = pytest.mark.django_db


def test_old_snapshots_are_purged_and_audited(acme):
    thread = branched_thread(acme.tenant)
    old, new = record_assembly(thread), record_assembly(thread)
    AssemblyRecord.objects.filter(pk=old.pk).update(created_at=timezone.now() - timedelta(days=8))

    assert tasks.purge_assembly_snapshots() == 1

    old.refresh_from_db()
    new.refresh_from_db()
    assert old.rendered_text == ""
    assert old.rendered_purged_at is not None
    assert old.rendered_hash
    assert old.items
    assert new.rendered_text
    assert new.rendered_purged_at is None
    event = AuditEvent.objects.get(action="assembly.snapshots_purged")
    assert event.tenant_id == acme.tenant.pk
    assert event.details == {"count": 1, "older_than_days": 7}
    assert assembly_snapshots_purge() == 0
    assert AuditEvent.objects.filter(action="assembly.snapshots_purged").count() == 1


@override_settings(CONVMEM_SNAPSHOT_DAYS=1)
def test_the_window_is_a_setting(acme):
    thread = branched_thread(acme.tenant)
    record = record_assembly(thread)
    AssemblyRecord.objects.filter(pk=record.pk).update(
        created_at=timezone.now() - timedelta(days=2)
    )
    assert assembly_snapshots_purge() == 1


def test_periodic_tasks_are_scheduled():
    from convmem.celery import app

    app.loader.import_default_modules()
    scheduled = {entry["task"] for entry in settings.CELERY_BEAT_SCHEDULE.values()}
    assert {"compaction.purge_assembly_snapshots", "audit.apply_retention"} <= scheduled
    assert scheduled <= set(app.tasks)
