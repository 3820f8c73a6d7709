"""Idempotency-Key handling: replay the first response, never perform a write twice.

Protocol, per (tenant, key):

1. Insert an ``in_flight`` row in its own short transaction. The unique constraint makes this
   the single winner among concurrent requests with the same key: on PostgreSQL the losers
   block on the unique index until the winner's insert commits, then fail and read the row.
2. The winner performs the write and stores the response **in the same transaction**, so the
   stored response exists if and only if the write does.
3. A loser sees: a different request under the same key → 422; a completed row → the stored
   response, replayed; a row still in flight → 409 (retry later). A row left in flight by a
   request that died is taken over once it is older than ``CONVMEM_IDEMPOTENCY_LOCK_SECONDS``.

If the write fails, the row is deleted so the client can retry with the same key.
Completed rows are kept for ``CONVMEM_IDEMPOTENCY_TTL_HOURS`` (purged by a periodic task).
"""

import hashlib
import json
import re
from collections.abc import Callable
from dataclasses import dataclass
from datetime import timedelta
from typing import Any

from django.conf import settings
from django.db import IntegrityError, transaction
from django.utils import timezone

from convmem.errors import (
    IdempotencyKeyInFlight,
    IdempotencyKeyInvalid,
    IdempotencyKeyRequired,
    IdempotencyKeyReused,
)
from convmem.models import Tenant
from threads.models import IdempotencyRecord, Thread

KEY_PATTERN = re.compile(r"^[\x21-\x7e]{1,255}$")


@dataclass(frozen=True)
class Outcome:
    status: int
    body: dict[str, Any]
    replayed: bool


def validate_key(key: str | None, *, required: bool) -> str | None:
    if not key:
        if required:
            raise IdempotencyKeyRequired()
        # Where the key is optional, an empty header is a malformed key, not an absent one.
        if key is None:
            return None
    if not KEY_PATTERN.match(key):
        raise IdempotencyKeyInvalid()
    return key


def request_fingerprint(*, method: str, path: str, body: Any) -> str:
    canonical = json.dumps([method, path, body], sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(canonical.encode()).hexdigest()


def run_idempotent(
    *,
    tenant: Tenant,
    key: str,
    fingerprint: str,
    thread: Thread | None,
    perform: Callable[[], tuple[int, dict[str, Any], Thread | None]],
) -> Outcome:
    """Run ``perform`` at most once per (tenant, key); see the module docstring.

    ``perform`` returns (status, body, thread the response concerns) and must do its writes
    with the ORM in the current thread, so they join this function's transaction.
    """
    record = _claim(tenant=tenant, key=key, fingerprint=fingerprint, thread=thread)
    if isinstance(record, Outcome):
        return record
    try:
        with transaction.atomic():
            status, body, concerned = perform()
            record.status = IdempotencyRecord.Status.COMPLETED
            record.response_status = status
            record.response_body = body
            record.thread = concerned or thread
            record.completed_at = timezone.now()
            record.save(
                update_fields=[
                    "status",
                    "response_status",
                    "response_body",
                    "thread",
                    "completed_at",
                ]
            )
    except BaseException:
        IdempotencyRecord.objects.filter(
            pk=record.pk, status=IdempotencyRecord.Status.IN_FLIGHT
        ).delete()
        raise
    return Outcome(status=status, body=body, replayed=False)


def _claim(
    *, tenant: Tenant, key: str, fingerprint: str, thread: Thread | None
) -> IdempotencyRecord | Outcome:
    try:
        with transaction.atomic():
            return IdempotencyRecord.objects.create(
                tenant=tenant, key=key, request_hash=fingerprint, thread=thread
            )
    except IntegrityError:
        pass
    existing = IdempotencyRecord.objects.filter(tenant=tenant, key=key).first()
    if existing is None:
        # The holder failed and released the key between our insert and this read.
        return _claim(tenant=tenant, key=key, fingerprint=fingerprint, thread=thread)
    if existing.request_hash != fingerprint:
        raise IdempotencyKeyReused()
    if existing.status == IdempotencyRecord.Status.COMPLETED:
        return Outcome(
            status=existing.response_status or 200, body=existing.response_body, replayed=True
        )
    if _take_over_abandoned(existing):
        return existing
    raise IdempotencyKeyInFlight()


def _take_over_abandoned(record: IdempotencyRecord) -> bool:
    """Claim a row whose request died in flight; a conditional UPDATE picks one winner."""
    cutoff = timezone.now() - timedelta(seconds=settings.CONVMEM_IDEMPOTENCY_LOCK_SECONDS)
    if record.created_at > cutoff:
        return False
    now = timezone.now()
    claimed = IdempotencyRecord.objects.filter(
        pk=record.pk, status=IdempotencyRecord.Status.IN_FLIGHT, created_at=record.created_at
    ).update(created_at=now)
    record.created_at = now
    return claimed == 1


def idempotency_records_purge(*, older_than: timedelta | None = None) -> int:
    """Forget completed keys past their TTL, and in-flight rows abandoned as long ago."""
    ttl = older_than or timedelta(hours=settings.CONVMEM_IDEMPOTENCY_TTL_HOURS)
    deleted, _ = IdempotencyRecord.objects.filter(created_at__lt=timezone.now() - ttl).delete()
    return deleted
