"""Idempotency-Key handling: replay the first response, never perform a write twice.

Protocol, per (tenant, key):

1. Insert an ``in_flight`` row in its own short transaction. The unique constraint makes this
   the single winner among concurrent requests with the same key: on PostgreSQL the losers
   block on the unique index until the winner's insert commits, then fail and read the row.
2. The winner performs the write and, **in the same transaction**, completes the row with a
   conditional UPDATE that matches only while the row is still in flight under its own claim
   (``attempt``). So the stored response exists if and only if the write does.
3. A loser sees: a different request under the same key → 422; a completed row → the stored
   response, replayed; a row still in flight → 409 (retry later).

A row left in flight by a request that died is taken over once it is older than
``CONVMEM_IDEMPOTENCY_LOCK_SECONDS``: a conditional UPDATE bumps ``attempt``, so exactly one
taker wins. "Older than" cannot tell a dead request from a slow one (say, waiting 75 s on a
row lock), so the first request may still be running. Whichever of the two reaches step 2
holding a stale claim matches 0 rows and rolls its write back; it then answers as a retry
would. One key never makes two writes, whatever the timing.

If the write fails, the row is deleted (only under the failing request's own claim) so the
client can retry with the same key. Completed rows are kept for
``CONVMEM_IDEMPOTENCY_TTL_HOURS`` (purged by a periodic task).
"""

import hashlib
import json
import re
from collections.abc import Callable
from dataclasses import dataclass
from datetime import timedelta
from typing import Any

from django.conf import settings
from django.db import IntegrityError, connection, transaction
from django.db.models import F
from django.utils import timezone
from rest_framework.request import Request
from rest_framework.response import Response

from convmem.api import IDEMPOTENCY_HEADER, REPLAYED_HEADER, tenant_of
from convmem.db import row_insert_unflushed
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
    perform: Callable[[IdempotencyRecord], tuple[int, dict[str, Any], Thread | None]],
) -> Outcome:
    """Run ``perform`` at most once per (tenant, key); see the module docstring.

    ``perform`` is given the key's record (in flight, claimed by this request: rows written
    with the response may point at it) and returns (status, body, thread the response
    concerns). It must do its writes with the ORM in the current thread, so they join this
    function's transaction.
    """
    claim = _claim(tenant=tenant, key=key, fingerprint=fingerprint, thread=thread)
    if isinstance(claim, Outcome):
        return claim
    try:
        with transaction.atomic():
            status, body, concerned = perform(claim)
            if not _complete(claim, status=status, body=body, thread=concerned or thread):
                raise _ClaimLost
    except _ClaimLost:
        # Our write is rolled back: another request took the key over and owns it now.
        return _outcome_of_existing(tenant=tenant, key=key, fingerprint=fingerprint)
    except BaseException:
        IdempotencyRecord.objects.filter(
            pk=claim.pk, status=IdempotencyRecord.Status.IN_FLIGHT, attempt=claim.attempt
        ).delete()
        raise
    return Outcome(status=status, body=body, replayed=False)


class _ClaimLost(Exception):
    """Raised inside the write's transaction to roll it back when the claim was taken over."""


# ``_complete``'s write, written out: compiling the ORM's ``update()`` cost more than running
# it, in every idempotent write (``/respond`` before its first token above all).
_COMPLETE_SQL = (
    "UPDATE {table} SET status = %s, response_status = %s, response_body = %s, "
    "thread_id = %s, completed_at = %s WHERE id = %s AND status = %s AND attempt = %s"
)


def _complete(
    claim: IdempotencyRecord, *, status: int, body: dict[str, Any], thread: Thread | None
) -> bool:
    """Store the response if ``claim`` is still the key's current claim; False if not.

    The UPDATE takes the row lock: a takeover racing with it either ran first (then this
    matches 0 rows) or waits for this transaction and then finds the row completed.
    """
    claim.thread = thread  # the subject whose key seals the response
    stored = claim.stored_for_update("response_body", body)
    params = [
        IdempotencyRecord.Status.COMPLETED.value,
        status,
        IdempotencyRecord._meta.get_field("response_body").get_db_prep_save(stored, connection),
        thread.pk if thread else None,
        connection.ops.adapt_datetimefield_value(timezone.now()),
        claim.pk,
        IdempotencyRecord.Status.IN_FLIGHT.value,
        claim.attempt,
    ]
    table = connection.ops.quote_name(IdempotencyRecord._meta.db_table)
    with connection.cursor() as cursor:
        cursor.execute(_COMPLETE_SQL.format(table=table), params)
        return cursor.rowcount == 1


def _claim(
    *, tenant: Tenant, key: str, fingerprint: str, thread: Thread | None
) -> IdempotencyRecord | Outcome:
    try:
        return _claim_insert(tenant=tenant, key=key, fingerprint=fingerprint, thread=thread)
    except IntegrityError:
        pass
    existing = IdempotencyRecord.objects.filter(tenant=tenant, key=key).first()
    if existing is None:
        # The holder failed and released the key between our insert and this read.
        return _claim(tenant=tenant, key=key, fingerprint=fingerprint, thread=thread)
    settled = _settled_outcome(existing, fingerprint)
    if settled is not None:
        return settled
    if _take_over_abandoned(existing):
        return existing
    # Not abandoned, or another request took it over (or completed it) just before us.
    return _outcome_of_existing(tenant=tenant, key=key, fingerprint=fingerprint)


def _claim_insert(
    *, tenant: Tenant, key: str, fingerprint: str, thread: Thread | None
) -> IdempotencyRecord:
    """Insert the in-flight row (step 1). Outside a transaction it commits on its own in one
    round trip (not BEGIN, INSERT, COMMIT: two fewer before the write), without waiting for
    the log flush: the write it guards commits durably after it, and so flushes it too; a
    crash before that loses the claim with the request (``row_insert_unflushed``). Inside a
    transaction, a savepoint keeps a duplicate key from aborting the caller's."""
    fields = {"tenant": tenant, "key": key, "request_hash": fingerprint, "thread": thread}
    if not transaction.get_connection().in_atomic_block:
        record = IdempotencyRecord(**fields)
        row_insert_unflushed(record)
        return record
    with transaction.atomic():
        return IdempotencyRecord.objects.create(**fields)


def _settled_outcome(record: IdempotencyRecord, fingerprint: str) -> Outcome | None:
    """422 for another request under the key, the replay of a completed one, else None."""
    if record.request_hash != fingerprint:
        raise IdempotencyKeyReused()
    if record.status == IdempotencyRecord.Status.COMPLETED:
        return Outcome(
            status=record.response_status or 200, body=record.response_body, replayed=True
        )
    return None


def _outcome_of_existing(*, tenant: Tenant, key: str, fingerprint: str) -> Outcome:
    """What a request that does not hold the key answers: the replay, or 409 (retry later)."""
    record = IdempotencyRecord.objects.filter(tenant=tenant, key=key).first()
    settled = None if record is None else _settled_outcome(record, fingerprint)
    if settled is None:
        raise IdempotencyKeyInFlight()
    return settled


def _take_over_abandoned(record: IdempotencyRecord) -> bool:
    """Claim a row in flight for longer than the lock timeout; a conditional UPDATE on the
    attempt seen picks one winner among concurrent takers. Updates ``record`` if we won."""
    now = timezone.now()
    cutoff = now - timedelta(seconds=settings.CONVMEM_IDEMPOTENCY_LOCK_SECONDS)
    claimed = IdempotencyRecord.objects.filter(
        pk=record.pk,
        status=IdempotencyRecord.Status.IN_FLIGHT,
        attempt=record.attempt,
        created_at__lte=cutoff,
    ).update(attempt=F("attempt") + 1, created_at=now)
    if claimed != 1:
        return False
    record.attempt += 1
    record.created_at = now
    return True


def idempotency_records_purge(*, older_than: timedelta | None = None) -> int:
    """Forget completed keys past their TTL, and in-flight rows abandoned as long ago."""
    ttl = older_than or timedelta(hours=settings.CONVMEM_IDEMPOTENCY_TTL_HOURS)
    deleted, _ = IdempotencyRecord.objects.filter(created_at__lt=timezone.now() - ttl).delete()
    return deleted


def idempotent_response(
    request: Request,
    *,
    required: bool,
    thread: Thread | None,
    perform: Callable[[], tuple[int, dict[str, Any], Thread | None]],
) -> Response:
    """Run ``perform`` under the request's Idempotency-Key (if any) and build the response."""
    key = validate_key(request.headers.get(IDEMPOTENCY_HEADER), required=required)
    if key is None:
        status, body, _ = perform()
        return Response(body, status=status)
    outcome = run_idempotent(
        tenant=tenant_of(request),
        key=key,
        fingerprint=request_fingerprint(
            method=request.method, path=request.path, body=request.data
        ),
        thread=thread,
        perform=lambda _record: perform(),
    )
    headers = {REPLAYED_HEADER: "true"} if outcome.replayed else {}
    return Response(outcome.body, status=outcome.status, headers=headers)
