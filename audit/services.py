"""Writes of the audit app that are not exports, retention or deletion requests: snapshot
purges, legal holds, retention policies, and the record of staff looking at a thread.
"""

from collections import Counter
from datetime import datetime, timedelta
from typing import Any

from django.conf import settings
from django.db import transaction
from django.utils import timezone

from audit.events import Actor, audit_event_record
from audit.models import AssemblyRecord, LegalHold, RetentionPolicy
from convmem.errors import InvalidRequest
from convmem.models import Tenant
from threads.models import Thread

PURGE_BATCH = 1000
SNAPSHOT_PURGER = Actor.system("audit.purge_assembly_snapshots")


def assembly_snapshots_purge(*, now: datetime | None = None) -> int:
    """Drop the rendered text of assembly records older than ``CONVMEM_SNAPSHOT_DAYS``.

    The hash, the ids and the token counts stay (a replay rebuilds the text from them).
    Batches of ``PURGE_BATCH`` rows, each in its own transaction with one audit event per
    tenant; safe to run twice and concurrently (a row is purged once: the UPDATE re-checks
    ``rendered_purged_at IS NULL``). Returns how many snapshots were purged.
    """
    now = now or timezone.now()
    cutoff = now - timedelta(days=settings.CONVMEM_SNAPSHOT_DAYS)
    due = AssemblyRecord.objects.filter(rendered_purged_at__isnull=True, created_at__lt=cutoff)
    purged = 0
    while True:
        batch = list(due.order_by("created_at").values_list("pk", "tenant_id")[:PURGE_BATCH])
        if not batch:
            return purged
        with transaction.atomic():
            pks = [pk for pk, _ in batch]
            done = AssemblyRecord.objects.filter(
                pk__in=pks, rendered_purged_at__isnull=True
            ).update(rendered_text="", rendered_purged_at=now)
            for tenant_id, count in Counter(tenant for _, tenant in batch).items():
                audit_event_record(
                    actor=SNAPSHOT_PURGER,
                    action="assembly.snapshots_purged",
                    tenant_id=tenant_id,
                    details={"count": count, "older_than_days": settings.CONVMEM_SNAPSHOT_DAYS},
                )
        purged += done


def legal_hold_place(
    *,
    tenant: Tenant,
    actor: Actor,
    reason: str,
    user_ref: str = "",
    thread: Thread | None = None,
) -> LegalHold:
    """Hold a ``user_ref`` (all their threads) or one thread: no retention, no erasure."""
    if bool(user_ref) == (thread is not None):
        raise InvalidRequest("A legal hold names either a user_ref or a thread.")
    if not reason.strip():
        raise InvalidRequest("A legal hold needs a reason.")
    if thread is not None and thread.tenant_id != tenant.pk:
        raise InvalidRequest("The thread belongs to another tenant.")
    with transaction.atomic():
        hold = LegalHold.objects.create(
            tenant=tenant,
            user_ref=user_ref,
            thread=thread,
            reason=reason,
            placed_by=f"{actor.type}:{actor.id}",
        )
        audit_event_record(
            actor=actor,
            action="legal_hold.placed",
            tenant_id=tenant.pk,
            thread_public_id=thread.public_id if thread else "",
            object_ids=[f"hold:{hold.pk}"],
            details={"user_ref": user_ref} if user_ref else {},
        )
    return hold


def legal_hold_release(*, hold: LegalHold, actor: Actor) -> LegalHold:
    """Lift a hold; retention and approved erasures apply again from now on."""
    with transaction.atomic():
        locked = (
            LegalHold.objects.select_for_update(of=("self",))
            .select_related("thread")
            .get(pk=hold.pk)
        )
        if not locked.active:
            return locked
        locked.active = False
        locked.released_by = f"{actor.type}:{actor.id}"
        locked.released_at = timezone.now()
        locked.save(update_fields=["active", "released_by", "released_at"])
        audit_event_record(
            actor=actor,
            action="legal_hold.released",
            tenant_id=locked.tenant_id,
            thread_public_id=locked.thread.public_id if locked.thread else "",
            object_ids=[f"hold:{locked.pk}"],
        )
    return locked


def retention_policy_set(
    *, tenant: Tenant, actor: Actor, erase_content_after_days: int, enabled: bool = True
) -> RetentionPolicy:
    """Create or change the tenant's retention policy."""
    if erase_content_after_days < 1:
        raise InvalidRequest("erase_content_after_days must be at least 1.")
    with transaction.atomic():
        policy, _ = RetentionPolicy.objects.update_or_create(
            tenant=tenant,
            defaults={"erase_content_after_days": erase_content_after_days, "enabled": enabled},
        )
        audit_event_record(
            actor=actor,
            action="retention.policy_set",
            tenant_id=tenant.pk,
            details={"erase_content_after_days": erase_content_after_days, "enabled": enabled},
        )
    return policy


def thread_view_record(*, user: Any, thread: Thread, what: str = "thread") -> None:
    """Record that a staff user looked at a thread (or part of it, ``what``) in the admin."""
    audit_event_record(
        actor=Actor.staff(user),
        action="thread.viewed",
        tenant_id=thread.tenant_id,
        thread_public_id=thread.public_id,
        object_ids=[thread.public_id],
        details={"what": what},
    )
