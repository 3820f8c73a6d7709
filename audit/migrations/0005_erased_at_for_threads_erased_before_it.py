"""Threads erased before ``Thread.erased_at`` existed (threads 0005) get it now, so every erased
thread carries the marker on the staff pages, not only those erased since.

Which threads were erased whole is on record: each thread a deletion request erased has a
``deletion_request.thread_erased`` audit event, naming the request first in its ``object_ids``;
the request has no ``message`` unless it was a redaction of one message (which leaves the
thread live). ``erased_at`` is that event's time (the earliest, if a thread was erased twice).
A thread deleted through the API was erased in the same step, so ``deleted_at`` stands in when
no event is found. Threads that already have ``erased_at`` keep it.
"""

from django.db import migrations
from django.db.models import F

BATCH = 500


def mark_erased_threads(apps, schema_editor):
    AuditEvent = apps.get_model("auditlog", "AuditEvent")
    DeletionRequest = apps.get_model("audit", "DeletionRequest")
    Thread = apps.get_model("threads", "Thread")
    events = (
        AuditEvent.objects.filter(action="deletion_request.thread_erased")
        .order_by("pk")
        .values_list("tenant_id", "thread_public_id", "object_ids", "created_at")
    )
    page = []
    for event in events.iterator(BATCH):
        page.append(event)
        if len(page) == BATCH:
            _mark_page(DeletionRequest, Thread, page)
            page = []
    _mark_page(DeletionRequest, Thread, page)
    Thread.objects.filter(erased_at__isnull=True, deleted_at__isnull=False).update(
        erased_at=F("deleted_at")
    )


def _mark_page(DeletionRequest, Thread, page):
    request_ids = {object_ids[0] for _, _, object_ids, _ in page if object_ids}
    whole_thread = set(
        DeletionRequest.objects.filter(public_id__in=request_ids, message__isnull=True).values_list(
            "public_id", flat=True
        )
    )
    for tenant_id, thread_public_id, object_ids, created_at in page:
        if object_ids and object_ids[0] in whole_thread:
            Thread.objects.filter(
                tenant_id=tenant_id, public_id=thread_public_id, erased_at__isnull=True
            ).update(erased_at=created_at)


class Migration(migrations.Migration):
    dependencies = [
        ("audit", "0004_deletionrequest_approval_note"),
        ("auditlog", "0001_initial"),
        ("threads", "0005_thread_erased_at"),
    ]

    # Backwards there is nothing to undo: the threads were erased either way.
    operations = [migrations.RunPython(mark_erased_threads, migrations.RunPython.noop)]
