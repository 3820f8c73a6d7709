"""Deletion requests (right to erasure): intake, decision, execution, proof.

Lifecycle::

    received ──approve──▶ approved ──execute──▶ (Celery task) ──▶ executed
        └─────reject────▶ rejected

Approving/rejecting needs ``audit.approve_deletionrequest``; asking for execution needs
``audit.execute_deletionrequest`` (the ``Compliance`` group has both). They are separate steps.
An active legal hold on the subject refuses execution (the refusal is an audit event). The due
date is ``CONVMEM_DELETION_DUE_DAYS`` (30) after receipt.

Execution (``deletion_request_perform``, run by the task) erases, thread by thread, everything
``audit.erasure`` erases plus the threads' titles and metadata, then content blobs used only by
these threads' assemblies. Each thread is one transaction that also advances ``progress`` and
the accumulating ``proof``, so a task that dies resumes after the last finished thread, and a
second delivery of the task finds the work done. The proof keeps counts and ids by kind, who
approved, who executed and when — never content; it and the audit events outlive the data.
Nothing else holds copies: convmem writes no export files (``export_history --output`` files
are the operator's) and caches no content; earlier exports are listed in the footprint.
"""

import time
from dataclasses import dataclass
from datetime import timedelta
from typing import Any

from django.conf import settings
from django.core.exceptions import PermissionDenied
from django.db import transaction
from django.db.models import Q
from django.utils import timezone

from audit import tasks
from audit.erasure import (
    keys_destroyed_proof,
    message_content_erase,
    subject_key_destroy_if_last,
    thread_content_erase,
)
from audit.models import DeletionRequest, LegalHold
from audit.selectors import deletion_request_threads, legal_holds_active
from auditlog.events import Actor, audit_event_record
from auditlog.models import AuditEvent
from compaction import erasure as compaction_erasure
from compaction.models import AssemblyRecord, Summary
from convmem.errors import AlreadyErased, InvalidRequest, LegalHoldActive
from convmem.models import Tenant
from threads import erasure as threads_erasure
from threads.erasure import ERASED
from threads.models import IdempotencyRecord, Message, Role, Thread
from webhooks.services import webhook_event_emit

APPROVE_PERMISSION = "audit.approve_deletionrequest"
EXECUTE_PERMISSION = "audit.execute_deletionrequest"
Status = DeletionRequest.Status


class DeletionError(Exception):
    """A deletion request cannot take the asked step; ``str()`` says why, for staff."""


class InvalidTransition(DeletionError):
    pass


class LegalHoldBlocks(DeletionError):
    def __init__(self, holds: list[LegalHold]) -> None:
        self.holds = holds
        super().__init__(
            "The subject is under legal hold ("
            + "; ".join(f"hold {h.pk}: {h.reason}" for h in holds)
            + "); execution refused."
        )


def _require(user: Any, permission: str) -> None:
    if not user.has_perm(permission):
        raise PermissionDenied(f"{user.get_username()} lacks the {permission} permission.")


def _staff(username: str) -> Actor:
    return Actor(AuditEvent.ActorType.STAFF, username)


def _record(request: DeletionRequest, actor: Actor, action: str, **details: Any) -> None:
    if request.user_ref:
        # Lets a user's export find the events about requests for that user.
        details["user_ref"] = request.user_ref
    audit_event_record(
        actor=actor,
        action=f"deletion_request.{action}",
        tenant_id=request.tenant_id,
        thread_public_id=request.thread.public_id if request.thread_id else "",
        object_ids=[request.public_id],
        details=details,
    )


def _lock(request: DeletionRequest) -> DeletionRequest:
    return (
        DeletionRequest.objects.select_for_update(of=("self",))
        .select_related("thread", "message__thread")
        .get(pk=request.pk)
    )


def deletion_request_file(
    *,
    tenant: Tenant,
    actor: Actor,
    user_ref: str = "",
    thread: Thread | None = None,
    reason: str = "",
) -> DeletionRequest:
    """File a request to erase a ``user_ref``'s data (all their threads) or one thread."""
    if bool(user_ref) == (thread is not None):
        raise InvalidRequest("Name either a user_ref or a thread_id.", code="invalid_subject")
    if thread is not None and thread.tenant_id != tenant.pk:
        raise InvalidRequest("Unknown thread.", code="unknown_thread")
    received = timezone.now()
    with transaction.atomic():
        request = DeletionRequest.objects.create(
            tenant=tenant,
            user_ref=user_ref,
            thread=thread,
            reason=reason,
            filed_by=f"{actor.type}:{actor.id}",
            created_at=received,
            due_at=received + timedelta(days=settings.CONVMEM_DELETION_DUE_DAYS),
        )
        _record(request, actor, "filed", due_at=request.due_at.isoformat())
    return request


def deletion_request_approve(
    *, request: DeletionRequest, user: Any, note: str = ""
) -> DeletionRequest:
    """received → approved, with the approver's optional ``note`` kept on the request. Needs
    ``audit.approve_deletionrequest``."""
    _require(user, APPROVE_PERMISSION)
    with transaction.atomic():
        locked = _lock(request)
        if locked.status != Status.RECEIVED:
            raise InvalidTransition(f"Only a received request can be approved ({locked.status}).")
        locked.status = Status.APPROVED
        locked.decided_by = user.get_username()
        locked.decided_at = timezone.now()
        locked.approval_note = note.strip()
        locked.save(update_fields=["status", "decided_by", "decided_at", "approval_note"])
        # The note stays on the request (a staff member's words, which may name the subject);
        # the audit event, which never holds content, says only whether there is one.
        _record(locked, Actor.staff(user), "approved", note_given=bool(locked.approval_note))
    return locked


def deletion_request_reject(*, request: DeletionRequest, user: Any, reason: str) -> DeletionRequest:
    """received → rejected, with the reason given to the requester. Needs the approve permission."""
    _require(user, APPROVE_PERMISSION)
    if not reason.strip():
        raise InvalidTransition("A rejection needs a reason.")
    with transaction.atomic():
        locked = _lock(request)
        if locked.status != Status.RECEIVED:
            raise InvalidTransition(f"Only a received request can be rejected ({locked.status}).")
        locked.status = Status.REJECTED
        locked.decided_by = user.get_username()
        locked.decided_at = timezone.now()
        locked.rejection_reason = reason
        locked.save(update_fields=["status", "decided_by", "decided_at", "rejection_reason"])
        _record(locked, Actor.staff(user), "rejected")
    return locked


def deletion_request_blocking_holds(request: DeletionRequest) -> list[LegalHold]:
    """Active legal holds on the request's user or on any of its threads."""
    threads = deletion_request_threads(request).values_list("pk", "user_ref")
    pks = {pk for pk, _ in threads}
    refs = {ref for _, ref in threads} | ({request.user_ref} if request.user_ref else set())
    return legal_holds_active(tenant=request.tenant, user_refs=refs, threads=pks)


def _refuse(locked: DeletionRequest, actor: Actor, holds: list[LegalHold]) -> None:
    now = timezone.now()
    locked.progress = {
        **locked.progress,
        "state": "refused",
        "refused_at": now.isoformat(),
        "legal_holds": [h.pk for h in holds],
    }
    locked.save(update_fields=["progress"])
    _record(
        locked, actor, "execution_refused", reason="legal_hold", legal_holds=[h.pk for h in holds]
    )


def deletion_request_execute(*, request: DeletionRequest, user: Any) -> DeletionRequest:
    """Ask for execution of an approved request: queues the erasure task after commit.

    Needs ``audit.execute_deletionrequest``. Refused, with a ``deletion_request.
    execution_refused`` event, while a legal hold covers the subject (``LegalHoldBlocks``).
    Asking again for a request whose execution is under way re-queues it (the task resumes).
    """
    _require(user, EXECUTE_PERMISSION)
    actor = Actor.staff(user)
    with transaction.atomic():
        locked = _lock(request)
        if locked.status != Status.APPROVED:
            raise InvalidTransition(f"Only an approved request can be executed ({locked.status}).")
        holds = deletion_request_blocking_holds(locked)
        if holds:
            # Committed on purpose: the refusal is part of the record.
            _refuse(locked, actor, holds)
        else:
            locked.execution_requested_by = user.get_username()
            locked.execution_requested_at = timezone.now()
            locked.progress = {**locked.progress, "state": "queued"}
            locked.save(
                update_fields=["execution_requested_by", "execution_requested_at", "progress"]
            )
            _record(locked, actor, "execution_requested")
            pk = locked.pk
            transaction.on_commit(lambda: tasks.execute_deletion_request.delay(pk))
    if holds:
        raise LegalHoldBlocks(holds)
    return locked


def deletion_self_service(
    *,
    tenant: Tenant,
    actor: Actor,
    thread: Thread,
    message: Message | None = None,
    reason: str = "",
) -> DeletionRequest:
    """An app erasing its own data through the API: a whole thread (which the API then answers
    404 for) or one message of it (a redaction). The request is filed, approved and executed at
    once by the API key, synchronously, by the same steps as a staff-approved request: the same
    erasure, progress, proof and audit events (``self_service: true`` in their details).

    Raises ``LegalHoldActive`` (423) while a legal hold covers the thread or its user (the
    refusal is an audit event, committed) and ``AlreadyErased`` (409) for a message erased
    before. The thread is
    not locked while filing; ``_erase_thread`` locks it for the erasure itself.
    """
    if message is not None and message.erased_at is not None:
        raise AlreadyErased(f"Message {message.public_id} is already erased.")
    holds = legal_holds_active(tenant=tenant, user_refs={thread.user_ref}, threads={thread.pk})
    subject = [message.public_id] if message else [thread.public_id]
    if holds:
        audit_event_record(
            actor=actor,
            action="deletion_request.self_service_refused",
            tenant_id=tenant.pk,
            thread_public_id=thread.public_id,
            object_ids=subject,
            details={"reason": "legal_hold", "legal_holds": [h.pk for h in holds]},
        )
        raise LegalHoldActive(_HELD)
    now = timezone.now()
    by = f"{actor.type}:{actor.id}"
    with transaction.atomic():
        request = DeletionRequest.objects.create(
            tenant=tenant,
            thread=thread,
            message=message,
            reason=reason,
            filed_by=by,
            created_at=now,
            due_at=now,
            status=Status.APPROVED,
            decided_by=by,
            decided_at=now,
            execution_requested_by=by,
            execution_requested_at=now,
            progress={"state": "queued"},
        )
        for step in ("filed", "approved", "execution_requested"):
            _record(request, actor, step, self_service=True, subject=subject)
    deletion_request_perform(
        request_id=request.pk,
        budget_seconds=float("inf"),
        actor=actor,
        delete_threads=message is None,
    )
    request.refresh_from_db()
    if request.status != Status.EXECUTED:
        # A hold placed since the check above: the execution was refused (and recorded).
        raise LegalHoldActive(_HELD)
    return request


_HELD = "A legal hold covers this thread or its user; nothing was erased."
KINDS = ("threads", "messages", "summaries", "assemblies", "content_blobs")


def _empty_proof(request: DeletionRequest) -> dict[str, Any]:
    return {
        "approved_by": request.decided_by,
        "approved_at": request.decided_at.isoformat() if request.decided_at else None,
        "executed_by": request.execution_requested_by,
        "execution_requested_at": request.execution_requested_at.isoformat(),
        "executed_at": None,
        "counts": {
            "threads": 0,
            "messages": 0,
            "summaries": 0,
            "assembly_snapshots": 0,
            "idempotency_responses": 0,
            "content_blobs": 0,
        },
        "erased": {kind: [] for kind in KINDS},
    }


def deletion_request_perform(
    *,
    request_id: int,
    budget_seconds: float = 60.0,
    actor: Actor | None = None,
    delete_threads: bool = False,
) -> bool:
    """Do (or continue) the erasure of an approved request whose execution was asked for.

    Works thread by thread, for about ``budget_seconds``, and returns True when the request is
    executed (or there is nothing to do), False when threads remain (call again to resume).
    Idempotent: an executed request is left alone; a finished thread is never redone.
    ``delete_threads`` (an app's DELETE of a thread): each erased thread is also marked deleted
    in the same transaction, under the same lock, so no append can land between the two.
    """
    started = time.monotonic()
    request = DeletionRequest.objects.select_related("tenant").get(pk=request_id)
    if request.status != Status.APPROVED or request.execution_requested_at is None:
        return True
    actor = actor or _staff(request.execution_requested_by)
    holds = deletion_request_blocking_holds(request)
    if holds:
        with transaction.atomic():
            _refuse(_lock(request), actor, holds)
        return True
    threads = deletion_request_threads(request).order_by("pk")
    total = threads.count()
    after = request.progress.get("last_thread", 0)
    for thread_pk in threads.filter(pk__gt=after).values_list("pk", flat=True).iterator():
        _erase_thread(request, thread_pk, actor, total, delete=delete_threads)
        if time.monotonic() - started > budget_seconds:
            return False
    _finish(request, actor)
    return True


def _erase_thread(
    request: DeletionRequest, thread_pk: int, actor: Actor, total: int, *, delete: bool
) -> None:
    with transaction.atomic():
        # The request row lock serialises two deliveries of the task: the second one waits,
        # then sees this thread in ``last_thread`` and skips it.
        locked = _lock(request)
        if locked.status != Status.APPROVED or locked.progress.get("last_thread", 0) >= thread_pk:
            return
        # Then the thread row FOR UPDATE, as erasure needs it: no append, edit or context
        # assembly of the thread commits halfway through (threads.services).
        thread = Thread.objects.select_for_update().get(pk=thread_pk)
        destroyed = []
        if locked.message_id is not None:
            # A redaction: the one message; the thread's title and metadata stay, and so does
            # the subject's key (row-level erasure).
            erased = message_content_erase(message=locked.message, actor=actor)
        else:
            # The subject's key first (committed at once), then the rows: see audit.erasure.
            destroyed = subject_key_destroy_if_last(thread=thread)
            erased = thread_content_erase(thread=thread, actor=actor)
            threads_erasure.thread_details_erase(thread)
            if delete:
                threads_erasure.thread_mark_deleted(thread)
                audit_event_record(
                    actor=actor,
                    action="thread.deleted",
                    tenant_id=locked.tenant_id,
                    thread_public_id=thread.public_id,
                    object_ids=[thread.public_id, locked.public_id],
                )
        proof = locked.proof or _empty_proof(locked)
        counts, ids = proof["counts"], proof["erased"]
        counts["threads"] += 1
        ids["threads"].append(thread.public_id)
        for kind, count in erased.counts().items():
            counts[kind] += count
        ids["messages"] += erased.messages
        ids["summaries"] += erased.summaries
        ids["assemblies"] += erased.snapshots
        if destroyed:
            proof.setdefault("keys_destroyed", []).extend(keys_destroyed_proof(destroyed))
        locked.proof = proof
        locked.progress = {
            **locked.progress,
            "state": "running",
            "threads_total": total,
            "threads_done": locked.progress.get("threads_done", 0) + 1,
            "last_thread": thread_pk,
        }
        locked.save(update_fields=["proof", "progress"])
        audit_event_record(
            actor=actor,
            action="deletion_request.thread_erased",
            tenant_id=locked.tenant_id,
            thread_public_id=thread.public_id,
            object_ids=[locked.public_id, *erased.messages],
            details={
                "counts": erased.counts(),
                **({"keys_destroyed": keys_destroyed_proof(destroyed)} if destroyed else {}),
            },
        )


def _finish(request: DeletionRequest, actor: Actor) -> None:
    # A redaction erases one message; system prompts and retrieved texts are not part of it.
    with transaction.atomic():
        locked = _lock(request)
        if locked.status != Status.APPROVED:
            return
        now = timezone.now()
        erased_blobs = []
        if not locked.message_id:
            erased_blobs = compaction_erasure.blobs_erase_exclusive(
                tenant_id=locked.tenant_id, threads=deletion_request_threads(locked), now=now
            )
        proof = locked.proof or _empty_proof(locked)
        proof["counts"]["content_blobs"] = len(erased_blobs)
        proof["erased"]["content_blobs"] = erased_blobs
        proof["executed_at"] = now.isoformat()
        locked.proof = proof
        locked.status = Status.EXECUTED
        locked.executed_at = now
        locked.progress = {**locked.progress, "state": "done"}
        locked.save(update_fields=["proof", "status", "executed_at", "progress"])
        _record(locked, actor, "executed", counts=proof["counts"])
        webhook_event_emit(
            tenant_id=locked.tenant_id,
            event_type="deletion.completed",
            data={
                "deletion_request_id": locked.public_id,
                "thread_id": locked.thread.public_id if locked.thread_id else None,
                "message_id": locked.message.public_id if locked.message_id else None,
                "status": Status.EXECUTED,
                "executed_at": now.isoformat(),
                "counts": proof["counts"],
            },
        )


@dataclass(frozen=True)
class Footprint:
    """What executing a request would touch, for the review page (counts, no content)."""

    threads: int
    messages: int
    messages_already_erased: int
    summaries: int
    assemblies: int
    assembly_snapshots: int
    idempotency_responses: int
    exports: int
    legal_holds: list[LegalHold]


def deletion_request_footprint(request: DeletionRequest) -> Footprint:
    """Counts of what the request covers; ``exports`` counts earlier exports of the subject
    (copies that left convmem and must be handled outside it).
    """
    threads = deletion_request_threads(request)
    messages = Message.objects.filter(thread__in=threads).exclude(role=Role.ROOT)
    assemblies = AssemblyRecord.objects.filter(thread__in=threads)
    user_refs = set(threads.values_list("user_ref", flat=True))
    exports = AuditEvent.objects.filter(tenant_id=request.tenant_id, action="export.made").filter(
        Q(thread_public_id__in=threads.values("public_id")) | Q(details__user_ref__in=user_refs)
    )
    return Footprint(
        threads=threads.count(),
        messages=messages.count(),
        messages_already_erased=messages.filter(erased_at__isnull=False).count(),
        summaries=Summary.objects.filter(thread__in=threads).exclude(text=ERASED).count(),
        assemblies=assemblies.count(),
        assembly_snapshots=assemblies.filter(rendered_pieces__isnull=False).count(),
        idempotency_responses=IdempotencyRecord.objects.filter(
            thread__in=threads, response_body__isnull=False
        ).count(),
        exports=exports.count(),
        legal_holds=deletion_request_blocking_holds(request),
    )
