"""Per-thread expiry: a thread whose ``expires_at`` has passed is erased and deleted.

Expiry is not a path of its own. Each expired thread gets a deletion request, filed, approved
and executed at once by the system actor ``audit.expire_threads`` (like an app's ``DELETE``),
and ``audit.deletion.deletion_request_perform`` erases it: the same erasure, progress, proof,
audit events and ``deletion.completed`` webhook as any other deletion, and whatever that path
erases (or destroys) later, expiry erases too. The request's proof also says why
(``expiry.reason``) and which ``expires_at`` was passed. The thread is then deleted: the API
answers 404 for it.

A legal hold (on the thread or its user) wins: the thread is skipped, its expiry kept, and the
run's ``thread_expiry.run`` event lists it; it is erased on the first run after the hold is
released.

Runs are batched (``CONVMEM_THREAD_EXPIRY_BATCH`` threads, soonest expiry first) and safe to
run twice or concurrently: each thread is one transaction that takes the thread row
``FOR UPDATE SKIP LOCKED`` and re-reads that it is still due, so a thread another run (or an
append) holds is left for the next run, and a thread already deleted is not due any more. On
SQLite, whose transactions are IMMEDIATE, writers take turns and the re-read does the same.
"""

from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from django.conf import settings
from django.db import transaction
from django.db.models import Exists, OuterRef, Q, QuerySet
from django.utils import timezone

from audit import deletion
from audit.models import DeletionRequest, LegalHold
from audit.selectors import legal_holds_active
from auditlog.events import Actor, audit_event_record
from threads.models import Thread

EXPIRY = Actor.system("audit.expire_threads")
EXPIRY_REASON = "expired"


@dataclass
class ExpiryRun:
    """What one batch did: the threads erased (with their requests) and those held back."""

    erased: list[str] = field(default_factory=list)
    requests: list[str] = field(default_factory=list)
    held: list[str] = field(default_factory=list)
    # Whether due threads may remain (the batch was full): the task runs again.
    more: bool = False

    def details(self) -> dict[str, Any]:
        return {
            "counts": {"threads_erased": len(self.erased), "held_threads_skipped": len(self.held)},
            "erased": self.erased,
            "deletion_requests": self.requests,
            "held_threads": self.held,
        }


def _under_hold() -> Exists:
    """Whether an active hold of the thread's tenant covers the thread or its user."""
    holds = LegalHold.objects.filter(active=True, tenant_id=OuterRef("tenant_id")).filter(
        Q(thread_id=OuterRef("pk")) | (~Q(user_ref="") & Q(user_ref=OuterRef("user_ref")))
    )
    return Exists(holds)


def threads_expired(*, now: datetime) -> QuerySet[Thread]:
    """Live threads whose expiry has passed (held ones included), soonest expiry first."""
    return Thread.objects.filter(expires_at__lte=now, deleted_at__isnull=True).order_by(
        "expires_at", "pk"
    )


def thread_expiry_apply(*, now: datetime | None = None, limit: int | None = None) -> ExpiryRun:
    """Erase and delete up to ``limit`` expired threads that no legal hold covers; list the
    held ones. One ``thread_expiry.run`` event when anything was erased or held back.
    Idempotent and safe to run concurrently (see the module docstring)."""
    now = now or timezone.now()
    limit = limit or settings.CONVMEM_THREAD_EXPIRY_BATCH
    due = threads_expired(now=now).annotate(held=_under_hold())
    run = ExpiryRun(held=list(due.filter(held=True).values_list("public_id", flat=True)[:limit]))
    candidates = list(due.filter(held=False).values_list("pk", flat=True)[:limit])
    for pk in candidates:
        _expire_one(pk, now, run)
    # Only a batch that erased something asks for another: threads skipped because a writer
    # held them are left to the next scheduled run, so no task spins on a busy thread.
    run.more = len(candidates) == limit and bool(run.erased)
    if run.erased or run.held:
        audit_event_record(
            actor=EXPIRY,
            action="thread_expiry.run",
            tenant_id=None,
            object_ids=run.requests,
            details={**run.details(), "now": now.isoformat()},
        )
    return run


def _expire_one(pk: int, now: datetime, run: ExpiryRun) -> None:
    with transaction.atomic():
        # FOR UPDATE SKIP LOCKED: a thread another expiry run (or an append, an edit, a context
        # assembly) holds is skipped, not waited for; the re-read filters say it is still due
        # as of its newest committed version (deleted by a concurrent run: not due any more).
        thread = (
            Thread.objects.select_for_update(skip_locked=True)
            .filter(pk=pk, expires_at__lte=now, deleted_at__isnull=True)
            .first()
        )
        if thread is None:
            return
        # Re-checked under the lock: a hold placed since the scan wins.
        if legal_holds_active(
            tenant=thread.tenant, user_refs={thread.user_ref}, threads={thread.pk}
        ):
            run.held.append(thread.public_id)
            return
        request = _expiry_request(thread, now)
        audit_event_record(
            actor=EXPIRY,
            action="deletion_request.filed",
            tenant_id=thread.tenant_id,
            thread_public_id=thread.public_id,
            object_ids=[request.public_id],
            details={"reason": EXPIRY_REASON, "expires_at": thread.expires_at.isoformat()},
        )
        # The thread row stays locked by this transaction, which the deletion path's own
        # transactions nest in (savepoints): the erasure, the deletion and the proof commit
        # together, or not at all and the next run starts over.
        deletion.deletion_request_perform(
            request_id=request.pk,
            budget_seconds=float("inf"),
            actor=EXPIRY,
            delete_threads=True,
        )
        _proof_add_expiry(request, thread)
        audit_event_record(
            actor=EXPIRY,
            action="thread.expired",
            tenant_id=thread.tenant_id,
            thread_public_id=thread.public_id,
            object_ids=[thread.public_id, request.public_id],
            details={"expires_at": thread.expires_at.isoformat()},
        )
    run.erased.append(thread.public_id)
    run.requests.append(request.public_id)


def _expiry_request(thread: Thread, now: datetime) -> DeletionRequest:
    """The thread's deletion request, filed, approved and executing at once by the system."""
    by = f"{EXPIRY.type}:{EXPIRY.id}"
    return DeletionRequest.objects.create(
        tenant_id=thread.tenant_id,
        thread=thread,
        reason=f"Thread expired at {thread.expires_at.isoformat()}.",
        filed_by=by,
        created_at=now,
        due_at=now,
        status=DeletionRequest.Status.APPROVED,
        decided_by=by,
        decided_at=now,
        execution_requested_by=by,
        execution_requested_at=now,
        progress={"state": "queued"},
    )


def _proof_add_expiry(request: DeletionRequest, thread: Thread) -> None:
    """Why the request's proof exists: the expiry, and the ``expires_at`` that was passed."""
    done = DeletionRequest.objects.select_for_update().get(pk=request.pk)
    done.proof["expiry"] = {"reason": EXPIRY_REASON, "expires_at": thread.expires_at.isoformat()}
    done.save(update_fields=["proof"])
