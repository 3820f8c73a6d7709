"""Retention: erase message content older than a tenant's policy allows.

Retention is not curation. The curator only chooses what the model sees; this module is one of
the two things that remove content from the record (the other is an approved deletion
request). Content is tombstoned (``audit.erasure``), never deleted, and never in a thread under
legal hold (on the thread or on its user).
"""

from dataclasses import dataclass, field
from datetime import datetime, timedelta

from django.db import transaction
from django.utils import timezone

from audit.erasure import (
    keys_destroyed_proof,
    subject_key_destroy_if_last,
    thread_content_erase,
)
from audit.models import RetentionPolicy
from audit.selectors import held_threads, legal_holds_active
from auditlog.events import Actor, audit_event_record
from threads.models import Message, Role, Thread

RETENTION = Actor.system("audit.apply_retention")


@dataclass
class RetentionRun:
    """Totals of one run for one tenant."""

    tenant_id: int
    threads: list[str] = field(default_factory=list)
    messages: int = 0
    summaries: int = 0
    assembly_snapshots: int = 0
    idempotency_responses: int = 0
    held_threads: int = 0
    # The data keys this run destroyed (subjects left with no live content): ids and times.
    keys_destroyed: list[dict[str, str]] = field(default_factory=list)

    def counts(self) -> dict[str, int]:
        return {
            "threads": len(self.threads),
            "messages": self.messages,
            "summaries": self.summaries,
            "assembly_snapshots": self.assembly_snapshots,
            "idempotency_responses": self.idempotency_responses,
            "held_threads_skipped": self.held_threads,
        }


def retention_apply(*, policy: RetentionPolicy, now: datetime | None = None) -> RetentionRun:
    """Erase the content of the tenant's messages created before ``now - N days``.

    One transaction per thread, holding the erasure and its ``retention.purged`` event (the
    erased message ids and counts); then one ``retention.run`` event with the totals. Safe to
    run twice or concurrently: erased messages are skipped, so a second run finds nothing and
    writes nothing.
    """
    now = now or timezone.now()
    tenant = policy.tenant
    cutoff = now - timedelta(days=policy.erase_content_after_days)
    due = (
        Message.objects.filter(thread__tenant=tenant, created_at__lt=cutoff, erased_at__isnull=True)
        .exclude(role=Role.ROOT)
        .values("thread_id")
    )
    held = held_threads(tenant=tenant)
    run = RetentionRun(tenant_id=tenant.pk, held_threads=held.filter(pk__in=due).count())
    threads = Thread.objects.filter(pk__in=due).exclude(pk__in=held.values("pk")).order_by("pk")
    for thread in threads.iterator(chunk_size=200):
        with transaction.atomic():
            # The thread row FOR UPDATE, as erasure needs it: no append, edit or context
            # assembly of the thread commits halfway through (threads.services).
            Thread.objects.select_for_update().get(pk=thread.pk)
            # Re-checked per thread: a hold placed while the run is going wins from here on.
            if legal_holds_active(tenant=tenant, user_refs={thread.user_ref}, threads={thread.pk}):
                run.held_threads += 1
                continue
            # The subject's key goes first when nothing of the subject outlives this erasure.
            destroyed = subject_key_destroy_if_last(thread=thread, created_before=cutoff)
            erased = thread_content_erase(thread=thread, actor=RETENTION, created_before=cutoff)
            run.keys_destroyed += keys_destroyed_proof(destroyed)
            if erased.empty:
                continue
            audit_event_record(
                actor=RETENTION,
                action="retention.purged",
                tenant_id=tenant.pk,
                thread_public_id=thread.public_id,
                object_ids=erased.messages,
                details={
                    "counts": erased.counts(),
                    "summaries": erased.summaries,
                    "assemblies": erased.snapshots,
                    "erase_content_after_days": policy.erase_content_after_days,
                    "created_before": cutoff.isoformat(),
                    **({"keys_destroyed": keys_destroyed_proof(destroyed)} if destroyed else {}),
                },
            )
        run.threads.append(thread.public_id)
        run.messages += len(erased.messages)
        run.summaries += len(erased.summaries)
        run.assembly_snapshots += len(erased.snapshots)
        run.idempotency_responses += erased.idempotency_responses
    if run.threads:
        audit_event_record(
            actor=RETENTION,
            action="retention.run",
            tenant_id=tenant.pk,
            details={
                "counts": run.counts(),
                "created_before": cutoff.isoformat(),
                **({"keys_destroyed": run.keys_destroyed} if run.keys_destroyed else {}),
            },
        )
    return run


def retention_apply_all(*, now: datetime | None = None) -> list[RetentionRun]:
    """Apply every enabled policy (the periodic task)."""
    policies = RetentionPolicy.objects.filter(enabled=True).select_related("tenant")
    return [retention_apply(policy=policy, now=now) for policy in policies.order_by("pk")]
