"""The records of compliance work: retention policies, legal holds and deletion requests (with
their proof)."""

from django.db import models
from django.db.models import Q
from django.utils import timezone

from convmem.ids import new_deletion_id
from convmem.models import Tenant


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
    # What the approver noted for the record (optional; a rejection's reason is required).
    approval_note = models.TextField(blank=True)
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
            # Compliance work like erasure; it sits here as Django ties permissions to a model.
            ("export_history", "Can export the full history of threads and users"),
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
