"""Writing audit events. Call inside the transaction of the change being recorded."""

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any, Protocol

from auditlog.models import AuditEvent
from convmem.auth import TenantPrincipal
from convmem.models import ApiKey


@dataclass(frozen=True)
class Actor:
    """Who acts: an API key (by prefix), a staff user (by username) or a system task."""

    type: str
    id: str

    @classmethod
    def api_key(cls, api_key: ApiKey) -> "Actor":
        return cls(AuditEvent.ActorType.API_KEY, api_key.prefix)

    @classmethod
    def staff(cls, user: Any) -> "Actor":
        return cls(AuditEvent.ActorType.STAFF, user.get_username())

    @classmethod
    def system(cls, name: str) -> "Actor":
        return cls(AuditEvent.ActorType.SYSTEM, name)


def actor_of(request: Any) -> Actor:
    """The API key an API request (authenticated by ``convmem.auth``) acts as."""
    principal: TenantPrincipal = request.user
    return Actor.api_key(principal.api_key)


def audit_event_build(
    *,
    actor: Actor,
    action: str,
    tenant_id: int | None,
    thread_public_id: str = "",
    object_ids: Iterable[str] = (),
    details: dict[str, Any] | None = None,
) -> AuditEvent:
    """One event, not saved yet: for a caller that writes it in the same statement as the
    change it records (``convmem.db.rows_insert``). ``details`` holds ids, counts and
    reasons — never message content."""
    return AuditEvent(
        tenant_id=tenant_id,
        actor_type=actor.type,
        actor_id=actor.id,
        action=action,
        thread_public_id=thread_public_id,
        object_ids=list(object_ids),
        details=details or {},
    )


def audit_event_record(
    *,
    actor: Actor,
    action: str,
    tenant_id: int | None,
    thread_public_id: str = "",
    object_ids: Iterable[str] = (),
    details: dict[str, Any] | None = None,
) -> AuditEvent:
    """Append one event. ``details`` holds ids, counts and reasons — never message content."""
    event = audit_event_build(
        actor=actor,
        action=action,
        tenant_id=tenant_id,
        thread_public_id=thread_public_id,
        object_ids=object_ids,
        details=details,
    )
    event.save(force_insert=True)
    return event


class ThreadLike(Protocol):
    """What the log needs of a thread (the log sits below the threads app)."""

    tenant_id: int
    public_id: str


def thread_view_record(*, user: Any, thread: ThreadLike, what: str = "thread") -> None:
    """Record that a staff user looked at a thread (or part of it, ``what``) in the admin."""
    audit_event_record(
        actor=Actor.staff(user),
        action="thread.viewed",
        tenant_id=thread.tenant_id,
        thread_public_id=thread.public_id,
        object_ids=[thread.public_id],
        details={"what": what},
    )
