"""The audit log: who did what to which ids, when. Append-only, never message content."""

from typing import Any, NoReturn

from django.db import models
from django.db.models import Q

from convmem.models import Tenant


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
