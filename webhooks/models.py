"""Per-tenant webhook endpoints and the log of what was delivered to them (ids and states only)."""

from django.db import models

from convmem.ids import new_public_id
from convmem.models import Tenant

EVENT_TYPES = ("response.completed", "response.failed", "memo.ready", "deletion.completed")


def new_endpoint_id() -> str:
    return new_public_id("whk")


def new_event_id() -> str:
    return new_public_id("evt")


class WebhookEndpoint(models.Model):
    """A URL a tenant receives events at, signed with ``secret`` (``whsec_…``, Standard
    Webhooks). A rotated-out secret keeps signing beside the new one until
    ``previous_secret_expires_at``, so receivers can switch without missing an event."""

    public_id = models.CharField(max_length=40, unique=True, default=new_endpoint_id)
    tenant = models.ForeignKey(Tenant, on_delete=models.CASCADE, related_name="webhook_endpoints")
    url = models.URLField(max_length=2000)
    events = models.JSONField(default=list)
    secret = models.CharField(max_length=100)
    previous_secret = models.CharField(max_length=100, blank=True)
    previous_secret_expires_at = models.DateTimeField(null=True, blank=True)
    active = models.BooleanField(default=True)
    created_at = models.DateTimeField(auto_now_add=True)

    def __str__(self) -> str:
        return f"{self.public_id} -> {self.url}"


class WebhookDelivery(models.Model):
    """One event for one endpoint: the payload (ids and states, never content) and how its
    delivery went. Retried with backoff by ``webhooks.deliver``; staff may redeliver."""

    class Status(models.TextChoices):
        PENDING = "pending"
        DELIVERED = "delivered"
        FAILED = "failed"

    event_id = models.CharField(max_length=40, default=new_event_id, db_index=True)
    endpoint = models.ForeignKey(
        WebhookEndpoint, on_delete=models.CASCADE, related_name="deliveries"
    )
    event_type = models.CharField(max_length=40)
    payload = models.JSONField()
    status = models.CharField(max_length=16, choices=Status.choices, default=Status.PENDING)
    attempts = models.PositiveIntegerField(default=0)
    last_status_code = models.PositiveIntegerField(null=True, blank=True)
    last_error = models.CharField(max_length=300, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)
    delivered_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        verbose_name_plural = "webhook deliveries"
        ordering = ["-created_at"]

    def __str__(self) -> str:
        return f"{self.event_type} {self.event_id} ({self.status})"
