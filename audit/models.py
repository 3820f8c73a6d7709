"""Assembly records (what the model saw, as ids) and the append-only audit log."""

from django.db import models

from convmem.ids import new_assembly_id
from convmem.models import Tenant


class AssemblyRecord(models.Model):
    """One assembled model input: the assembler version and the ordered ids that went in."""

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
    rendered_hash = models.CharField(max_length=64)
    rendered_text = models.TextField(blank=True)
    rendered_purged_at = models.DateTimeField(null=True, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["-id"]
        indexes = [models.Index(fields=["thread", "-id"], name="assembly_thread_idx")]

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


class AuditEvent(models.Model):
    """Who did what to which ids, when. Never message content. Append-only."""

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
    thread_public_id = models.CharField(max_length=40, blank=True, db_index=True)
    object_ids = models.JSONField(default=list)
    details = models.JSONField(default=dict, blank=True)
    created_at = models.DateTimeField(auto_now_add=True, db_index=True)

    class Meta:
        ordering = ["-id"]

    def __str__(self) -> str:
        return f"{self.action} by {self.actor_type}:{self.actor_id}"
