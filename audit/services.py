"""Writes of the audit app that are not exports, retention or deletion requests: legal holds
and retention policies."""

from django.db import transaction
from django.utils import timezone

from audit.models import LegalHold, RetentionPolicy
from auditlog.events import Actor, audit_event_record
from convmem.errors import InvalidRequest
from convmem.models import Tenant
from threads.models import Thread


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
