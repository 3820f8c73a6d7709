"""Assembly records (what the model saw, as ids), the append-only audit log, and the records of
compliance work: retention policies, legal holds and deletion requests (with their proof).
"""

from typing import Any, NoReturn

from django.db import models
from django.db.models import Q
from django.utils import timezone

from convmem.ids import new_assembly_id, new_deletion_id
from convmem.models import Tenant


class AssemblyRecord(models.Model):
    """One assembled model input: the assembler version and the ordered ids that went in.

    ``rendered_text`` is a snapshot kept for ``CONVMEM_SNAPSHOT_DAYS`` and then purged
    (``rendered_purged_at`` set); ``rendered_hash`` stays, so a replay can still be checked.
    """

    public_id = models.CharField(
        max_length=40, unique=True, default=new_assembly_id, editable=False
    )
    tenant = models.ForeignKey(Tenant, on_delete=models.PROTECT, related_name="+")
    thread = models.ForeignKey(
        "threads.Thread", on_delete=models.CASCADE, related_name="assemblies"
    )
    leaf = models.ForeignKey("threads.Message", on_delete=models.PROTECT, related_name="+")
    assembler_version = models.CharField(max_length=32)
    items = models.JSONField(default=list)
    tokens = models.JSONField(default=dict)
    budget = models.JSONField(default=dict)
    plan = models.JSONField(
        default=dict,
        blank=True,
        help_text="What the curator decided besides the items shown: dropped and elided "
        "message ids, the range the memo stands for, the memo it asked for, the input format.",
    )
    rendered_hash = models.CharField(max_length=64)
    rendered_text = models.TextField(blank=True)
    rendered_purged_at = models.DateTimeField(null=True, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["-id"]
        indexes = [
            models.Index(fields=["thread", "-id"], name="assembly_thread_idx"),
            # The snapshot purge scans only rows still holding a snapshot, oldest first.
            models.Index(
                fields=["created_at"],
                condition=Q(rendered_purged_at__isnull=True),
                name="assembly_snapshot_live_idx",
            ),
        ]

    def __str__(self) -> str:
        return self.public_id


class ContentBlob(models.Model):
    """Text an assembly used that is not a message or summary (system prompts, retrieved items),
    stored once per tenant by SHA-256 so a replay can rebuild the input. Erasable like content.
    """

    tenant = models.ForeignKey(Tenant, on_delete=models.CASCADE, related_name="+")
    sha256 = models.CharField(max_length=64)
    text = models.TextField(blank=True)
    erased_at = models.DateTimeField(null=True, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["tenant", "sha256"], name="blob_tenant_sha256"),
        ]

    def __str__(self) -> str:
        return self.sha256[:12]


class AppendOnlyError(Exception):
    """An attempt to change or delete an audit event."""


class AuditEventQuerySet(models.QuerySet["AuditEvent"]):
    """Inserts and reads only: bulk ``update()`` and ``delete()`` refuse."""

    def update(self, **kwargs: Any) -> NoReturn:
        raise AppendOnlyError("audit events are append-only; they cannot be updated")

    def delete(self) -> NoReturn:
        raise AppendOnlyError("audit events are append-only; they cannot be deleted")


class AuditEvent(models.Model):
    """Who did what to which ids, when. Never message content. Append-only.

    The ORM's normal paths refuse changes: ``save()`` of an existing row, ``delete()``, and the
    queryset's ``update()`` / ``delete()`` raise ``AppendOnlyError``; the admin is read-only.
    """

    class ActorType(models.TextChoices):
        API_KEY = "api_key"
        STAFF = "staff"
        SYSTEM = "system"

    tenant = models.ForeignKey(
        Tenant, on_delete=models.PROTECT, null=True, blank=True, related_name="+"
    )
    actor_type = models.CharField(max_length=16, choices=ActorType.choices)
    actor_id = models.CharField(max_length=150)
    action = models.CharField(max_length=64)
    thread_public_id = models.CharField(max_length=40, blank=True)
    object_ids = models.JSONField(default=list)
    details = models.JSONField(default=dict, blank=True)
    created_at = models.DateTimeField(auto_now_add=True, db_index=True)

    objects = AuditEventQuerySet.as_manager()

    class Meta:
        ordering = ["-id"]
        indexes = [
            # A thread's events in order (exports page through them by id).
            models.Index(fields=["thread_public_id", "id"], name="auditevent_thread_seq"),
        ]
        permissions = [("export_history", "Can export the full history of threads and users")]
        constraints = [
            # An event nobody can attribute is worthless: refuse it (and the change with it).
            models.CheckConstraint(
                condition=~Q(actor_id="") & ~Q(action=""), name="auditevent_actor_action"
            ),
        ]

    def __str__(self) -> str:
        return f"{self.action} by {self.actor_type}:{self.actor_id}"

    def save(self, *args: Any, **kwargs: Any) -> None:
        if not self._state.adding:
            raise AppendOnlyError("audit events are append-only; they cannot be updated")
        super().save(*args, **kwargs)

    def delete(self, *args: Any, **kwargs: Any) -> NoReturn:
        raise AppendOnlyError("audit events are append-only; they cannot be deleted")


class RetentionPolicy(models.Model):
    """How long a tenant keeps message content. Older content is erased (tombstoned) by the
    periodic retention task, except in threads under legal hold. Ids and the tree stay.
    """

    tenant = models.OneToOneField(Tenant, on_delete=models.CASCADE, related_name="retention")
    erase_content_after_days = models.PositiveIntegerField(
        help_text="Erase the content of messages older than this many days."
    )
    enabled = models.BooleanField(default=True)
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        verbose_name_plural = "retention policies"
        constraints = [
            models.CheckConstraint(
                condition=Q(erase_content_after_days__gte=1), name="retention_at_least_one_day"
            ),
        ]

    def __str__(self) -> str:
        return f"{self.tenant}: {self.erase_content_after_days} days"


class LegalHold(models.Model):
    """Keeps a tenant's end user (``user_ref``) or one thread out of retention and erasure."""

    tenant = models.ForeignKey(Tenant, on_delete=models.PROTECT, related_name="+")
    user_ref = models.CharField(max_length=255, blank=True)
    thread = models.ForeignKey(
        "threads.Thread", on_delete=models.PROTECT, null=True, blank=True, related_name="+"
    )
    reason = models.TextField()
    active = models.BooleanField(default=True)
    placed_by = models.CharField(max_length=200)
    placed_at = models.DateTimeField(auto_now_add=True)
    released_by = models.CharField(max_length=200, blank=True)
    released_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["-id"]
        indexes = [models.Index(fields=["tenant", "active"], name="legalhold_tenant_active")]
        constraints = [
            models.CheckConstraint(
                condition=(~Q(user_ref="") & Q(thread__isnull=True))
                | (Q(user_ref="") & Q(thread__isnull=False)),
                name="legalhold_user_xor_thread",
            ),
        ]

    def __str__(self) -> str:
        subject = self.user_ref or f"thread {self.thread_id}"
        return f"hold {self.pk} on {subject}"


class DeletionRequest(models.Model):
    """A right-to-erasure request for a ``user_ref`` (all their threads), one thread, or one
    message of a thread (a redaction).

    received → approved | rejected → executed. Execution is asked for by a person with the
    execute permission and done by a Celery task; ``progress`` shows how far it got and
    ``proof`` records what was erased (counts and ids by kind, who, when) — never content.
    """

    class Status(models.TextChoices):
        RECEIVED = "received"
        APPROVED = "approved"
        REJECTED = "rejected"
        EXECUTED = "executed"

    public_id = models.CharField(
        max_length=40, unique=True, default=new_deletion_id, editable=False
    )
    tenant = models.ForeignKey(Tenant, on_delete=models.PROTECT, related_name="+")
    user_ref = models.CharField(max_length=255, blank=True)
    thread = models.ForeignKey(
        "threads.Thread", on_delete=models.PROTECT, null=True, blank=True, related_name="+"
    )
    # A redaction: only this message of ``thread`` (filed through the API by the app itself).
    message = models.ForeignKey(
        "threads.Message", on_delete=models.PROTECT, null=True, blank=True, related_name="+"
    )
    reason = models.TextField(blank=True)
    status = models.CharField(max_length=16, choices=Status.choices, default=Status.RECEIVED)
    filed_by = models.CharField(max_length=200)
    created_at = models.DateTimeField(default=timezone.now, editable=False)
    due_at = models.DateTimeField(editable=False)
    decided_by = models.CharField(max_length=150, blank=True)
    decided_at = models.DateTimeField(null=True, blank=True)
    rejection_reason = models.TextField(blank=True)
    execution_requested_by = models.CharField(max_length=150, blank=True)
    execution_requested_at = models.DateTimeField(null=True, blank=True)
    executed_at = models.DateTimeField(null=True, blank=True)
    progress = models.JSONField(default=dict, blank=True)
    proof = models.JSONField(default=dict, blank=True)

    class Meta:
        ordering = ["-id"]
        indexes = [models.Index(fields=["tenant", "status"], name="deletion_tenant_status")]
        permissions = [
            ("approve_deletionrequest", "Can approve or reject deletion requests"),
            ("execute_deletionrequest", "Can execute approved deletion requests"),
        ]
        constraints = [
            models.CheckConstraint(
                condition=(~Q(user_ref="") & Q(thread__isnull=True))
                | (Q(user_ref="") & Q(thread__isnull=False)),
                name="deletion_user_xor_thread",
            ),
            models.CheckConstraint(
                condition=Q(status__in=["received", "approved", "rejected", "executed"]),
                name="deletion_status_valid",
            ),
            models.CheckConstraint(
                condition=Q(message__isnull=True) | Q(thread__isnull=False),
                name="deletion_message_in_thread",
            ),
        ]

    def __str__(self) -> str:
        return self.public_id
