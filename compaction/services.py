"""Writes of summaries (memos): requesting one, writing it, invalidating, re-dispatching.

Lifecycle of a memo::

    requested (pending row + task, after commit) → written (ready) | failed
    ready/pending → stale (a covered message changed) → a rebuild is requested for the range

The pending row is the request **and** the outbox of its task: ``enqueued_at`` says when its
task was last sent, and ``summaries_dispatch_pending`` (a periodic task) sends it again if the
broker lost it or was down. Writing is idempotent and safe concurrently: a writer first claims
the row with a conditional UPDATE (``status = pending`` and no live lease), calls the backend
outside any transaction, and stores the result with another conditional UPDATE that only
succeeds if the row is still pending under its claim — so a duplicate delivery, a second
worker, or an invalidation that happened meanwhile all leave exactly one outcome. The database
backs this up: one live (pending or ready) summary per range, one ready summary per range and
covered content (``Summary.Meta.constraints``).
"""

import hashlib
import json
import logging
from collections import defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from functools import partial

from django.conf import settings
from django.db import IntegrityError, transaction
from django.db.models import F, Q
from django.utils import timezone

from audit.events import Actor, audit_event_record
from compaction import selectors
from compaction.backends import BackendError, MemoSource, SummarizerBackend, get_backend
from compaction.evals import score_memo
from compaction.models import Summary
from compaction.profiles import thread_profile
from compaction.rendering import memo_content
from compaction.tokens import count_tokens, get_encoding
from convmem.celery import app
from convmem.errors import InvalidRequest
from threads.models import Message, Thread

logger = logging.getLogger(__name__)

WRITE_TASK = "compaction.summary_write"
MEMO_WRITER = Actor.system("memo-writer")
LIVE = (Summary.Status.PENDING, Summary.Status.READY)
_BATCH = 1000  # ids per IN (...) query: well under SQLite's variable limit


def summary_enqueue(summary_id: int) -> None:
    """Send the write task for a pending summary. Never raises: if the broker is down the row
    stays pending and ``summaries_dispatch_pending`` sends it later."""
    try:
        app.send_task(WRITE_TASK, args=[summary_id])
    except Exception:
        logger.warning(
            "could not enqueue memo task for summary %s; the dispatcher will retry",
            summary_id,
            exc_info=True,
        )


def summary_request(
    *,
    thread: Thread,
    actor: Actor,
    first_id: int,
    last_id: int,
    base_id: int | None = None,
    chain_depth: int = 0,
    covered_ids: Sequence[str] = (),
    max_tokens: int,
) -> Summary | None:
    """Request the memo of the range ``first_id`` … ``last_id``: insert a pending summary and
    enqueue its write task after commit. Returns None if a live (pending or ready) summary of
    that range already exists (the database refuses a second one, also under concurrency).

    ``base_id`` is the memo this one extends (``chain_depth`` = its depth + 1); the writer
    falls back to the originals if the base is no longer ready (or the chain too deep) by then.
    """
    now = timezone.now()
    try:
        with transaction.atomic():
            summary = Summary.objects.create(
                thread=thread,
                first_id=first_id,
                last_id=last_id,
                base_id=base_id,
                chain_depth=chain_depth,
                covered_ids=list(covered_ids),
                max_tokens=max_tokens,
                status=Summary.Status.PENDING,
                enqueued_at=now,
            )
    except IntegrityError:
        return None
    audit_event_record(
        actor=actor,
        action="summary.requested",
        tenant_id=thread.tenant_id,
        thread_public_id=thread.public_id,
        object_ids=[summary.public_id],
        details={"extends_memo": base_id is not None, "chain_depth": chain_depth},
    )
    transaction.on_commit(partial(summary_enqueue, summary.pk))
    return summary


def _lease_seconds() -> int:
    # Longer than the task's hard time limit: a lease only expires once its task is dead.
    return settings.CONVMEM_MEMO_TIME_LIMIT + settings.CONVMEM_MEMO_LEASE_MARGIN_SECONDS


def _claim(summary_id: int) -> int | None:
    """Claim a pending summary for writing; returns the attempt number, or None if it is not
    pending or another writer holds a live lease. A conditional UPDATE picks one winner."""
    now = timezone.now()
    claimed = Summary.objects.filter(
        Q(leased_until__isnull=True) | Q(leased_until__lt=now),
        pk=summary_id,
        status=Summary.Status.PENDING,
    ).update(leased_until=now + timedelta(seconds=_lease_seconds()), attempts=F("attempts") + 1)
    if not claimed:
        return None
    return Summary.objects.values_list("attempts", flat=True).get(pk=summary_id)


@dataclass(frozen=True)
class _Sources:
    """What the backend is given for one memo, and what the memo will cover."""

    previous_memo: str | None
    previous_tokens: int
    base_fingerprint: str
    rows: list[selectors.RangeRow]
    covered_ids: list[str]
    chain_depth: int
    base_id: int | None


def _range_from(summary: Summary, *, start: Message, inclusive: bool) -> list[selectors.RangeRow]:
    """The path rows from ``start`` (included or not) down to ``summary.last``; [] if ``start``
    is not an ancestor of ``last`` on one path (the range is not a path)."""
    count = summary.last.depth - start.depth + (1 if inclusive else 0)
    if count < 1:
        return []
    rows = selectors.range_rows(thread=summary.thread, last_id=summary.last_id, count=count)
    top = rows[0] if rows else None
    if top is None or len(rows) != count:
        return []
    if (inclusive and top.id != start.pk) or (not inclusive and top.parent_id != start.pk):
        return []
    return rows


def _sources(summary: Summary) -> _Sources | None:
    base = summary.base
    if (
        base is not None
        and base.status == Summary.Status.READY
        and base.first_id == summary.first_id
    ):
        rows = _range_from(summary, start=base.last, inclusive=False)
        if rows:
            return _Sources(
                previous_memo=base.text,
                previous_tokens=base.token_count,
                base_fingerprint=base.fingerprint,
                rows=rows,
                covered_ids=[*base.covered_ids, *(row.public_id for row in rows)],
                chain_depth=base.chain_depth + 1,
                base_id=base.pk,
            )
    # From the originals: the first memo of a range, a chain grown too deep, a base gone stale.
    rows = _range_from(summary, start=summary.first, inclusive=True)
    if not rows:
        return None
    return _Sources(
        previous_memo=None,
        previous_tokens=0,
        base_fingerprint="",
        rows=rows,
        covered_ids=[row.public_id for row in rows],
        chain_depth=0,
        base_id=None,
    )


def _fingerprint(sources: _Sources) -> str:
    """SHA-256 of what the memo was written from: the base memo's fingerprint and the covered
    new messages' ids and contents (erased ones included as erased)."""
    payload = [sources.base_fingerprint, [[row.public_id, row.content] for row in sources.rows]]
    return hashlib.sha256(json.dumps(payload, ensure_ascii=False).encode("utf-8")).hexdigest()


def _fit(text: str, max_tokens: int, encoding: str) -> str:
    """``text`` cut to ``max_tokens`` tokens: a remote model may overrun in our tokenizer."""
    if max_tokens <= 0:
        return ""
    tokens = get_encoding(encoding).encode(text, disallowed_special=())
    if len(tokens) <= max_tokens:
        return text
    return get_encoding(encoding).decode(tokens[:max_tokens]).rstrip()


def summary_write(*, summary_id: int, backend: SummarizerBackend | None = None) -> Summary | None:
    """Write the memo of a pending summary (the memo task's body). Idempotent and concurrency
    safe (see the module docstring); returns the summary if this call wrote it, else None
    (already written, invalidated, claimed by another writer, or gone).

    The range is read (with content) off the hot path: the base memo plus the messages after
    it when extending a ready memo within the profile's ``max_chain_depth``, else all the
    originals ``first`` … ``last``. Erased messages are not shown to the backend. The memo
    text is kept within ``max_tokens`` including its header; ``token_count`` is the rendered
    memo's count. On ``BackendError`` the error is recorded and re-raised: a retryable one
    leaves the row pending and unclaimed for the task's retry, a permanent one marks it
    failed. A range that is not one path, or a profile naming an unknown encoding, fails it.
    """
    attempt = _claim(summary_id)
    if attempt is None:
        return None
    summary = Summary.objects.select_related("thread__profile", "first", "last", "base").get(
        pk=summary_id
    )
    thread = summary.thread
    try:
        profile = thread_profile(thread)
    except InvalidRequest as error:
        summary_fail(summary_id=summary_id, error=str(error.detail))
        return None
    sources = _sources(summary)
    if sources is None:
        summary_fail(summary_id=summary_id, error="the range is not one path of the thread")
        return None
    header = memo_content(first_id=summary.first.public_id, last_id=summary.last.public_id, text="")
    header_tokens = count_tokens(header, profile.encoding)
    text_budget = summary.max_tokens - header_tokens
    shown = [row for row in sources.rows if row.erased_at is None]
    backend = backend or get_backend()
    try:
        draft = backend.summarize(
            previous_memo=sources.previous_memo,
            messages=[
                MemoSource(id=row.public_id, role=row.role, content=row.content) for row in shown
            ],
            max_tokens=max(text_budget, 1),
        )
    except BackendError as error:
        _record_failure(summary_id, attempt, error)
        raise
    text = _fit(draft.text, text_budget, profile.encoding)
    token_count = count_tokens(header + text, profile.encoding)
    # Scored against what the writer was given: the base memo (if any) and the new messages;
    # the originals' sizes are their stored counts (nothing is tokenised twice).
    originals = ([sources.previous_memo] if sources.previous_memo else []) + [
        row.content for row in shown
    ]
    scores = score_memo(
        originals=originals,
        memo=text,
        original_tokens=sum(row.token_count for row in shown) + sources.previous_tokens,
        memo_tokens=max(0, token_count - header_tokens),
    ).as_dict()
    fields = {
        "status": Summary.Status.READY,
        "text": text,
        "token_count": token_count,
        "backend": draft.backend,
        "model": draft.model[:128],
        "prompt_version": draft.prompt_version[:64],
        "fingerprint": _fingerprint(sources),
        "scores": scores,
        "covered_ids": sources.covered_ids,
        "chain_depth": sources.chain_depth,
        "base_id": sources.base_id,
        "leased_until": None,
        "error": "",
        "updated_at": timezone.now(),
    }
    with transaction.atomic():
        written = Summary.objects.filter(
            pk=summary_id, status=Summary.Status.PENDING, attempts=attempt
        ).update(**fields)
        if not written:
            return None
        audit_event_record(
            actor=MEMO_WRITER,
            action="summary.written",
            tenant_id=thread.tenant_id,
            thread_public_id=thread.public_id,
            object_ids=[summary.public_id],
            details={
                "first_id": summary.first.public_id,
                "last_id": summary.last.public_id,
                "covered": len(sources.covered_ids),
                "chain_depth": sources.chain_depth,
                "backend": draft.backend,
                "model": fields["model"],
                "attempt": attempt,
                "fact_recall": scores["fact_recall"],
                "unsupported_rate": scores["unsupported_rate"],
                "compression": scores["compression"],
            },
        )
    summary.refresh_from_db()
    return summary


def _record_failure(summary_id: int, attempt: int, error: BackendError) -> None:
    if not error.retryable:
        summary_fail(summary_id=summary_id, error=str(error))
        return
    now = timezone.now()
    # Released for the task's retry; enqueued_at = now keeps the dispatcher from re-sending it
    # before CONVMEM_MEMO_REDISPATCH_SECONDS.
    Summary.objects.filter(pk=summary_id, status=Summary.Status.PENDING, attempts=attempt).update(
        leased_until=None,
        enqueued_at=now,
        error=str(error)[:500],
        updated_at=now,
    )


def summary_fail(*, summary_id: int, error: str) -> bool:
    """Give up on a pending summary (permanent backend error, retries exhausted, bad range).

    The next context request that needs a memo asks for a new one. Returns whether it failed
    it (False if it was no longer pending).
    """
    with transaction.atomic():
        failed = Summary.objects.filter(pk=summary_id, status=Summary.Status.PENDING).update(
            status=Summary.Status.FAILED,
            error=error[:500],
            leased_until=None,
            updated_at=timezone.now(),
        )
        if failed:
            summary = Summary.objects.select_related("thread").get(pk=summary_id)
            audit_event_record(
                actor=MEMO_WRITER,
                action="summary.failed",
                tenant_id=summary.thread.tenant_id,
                thread_public_id=summary.thread.public_id,
                object_ids=[summary.public_id],
                details={"attempts": summary.attempts},
            )
    return bool(failed)


def summaries_dispatch_pending(*, now: datetime | None = None, limit: int = 500) -> int:
    """Send the write task again for pending summaries whose task looks lost: enqueued more
    than ``CONVMEM_MEMO_REDISPATCH_SECONDS`` ago and not held by a live lease (a running
    writer, or a retry not yet due). Returns how many were sent. Safe to run concurrently:
    a conditional UPDATE of ``enqueued_at`` picks who sends each one.
    """
    now = now or timezone.now()
    cutoff = now - timedelta(seconds=settings.CONVMEM_MEMO_REDISPATCH_SECONDS)
    due = list(
        Summary.objects.filter(
            Q(enqueued_at__isnull=True) | Q(enqueued_at__lt=cutoff),
            Q(leased_until__isnull=True) | Q(leased_until__lt=now),
            status=Summary.Status.PENDING,
        )
        .order_by("id")
        .values_list("pk", "enqueued_at")[:limit]
    )
    sent = 0
    for pk, enqueued_at in due:
        if Summary.objects.filter(
            pk=pk, status=Summary.Status.PENDING, enqueued_at=enqueued_at
        ).update(enqueued_at=now):
            summary_enqueue(pk)
            sent += 1
    return sent


def _covers(summary: Summary, messages: dict[str, int]) -> bool:
    """Whether ``summary`` covers one of ``messages`` (public id → depth)."""
    if summary.covered_ids:
        return not set(summary.covered_ids).isdisjoint(messages)
    # A pending request whose coverage is not known yet: walk its range (ids only).
    count = summary.last.depth - summary.first.depth + 1
    rows = selectors.range_rows(
        thread=summary.thread, last_id=summary.last_id, count=count, with_content=False
    )
    return any(row.public_id in messages for row in rows)


def _superseded(summary: Summary, others: Iterable[Summary]) -> bool:
    """Another invalidated summary from the same start covers this one's end: rebuilding that
    one is enough (older memos of a growing conversation are not rebuilt one by one)."""
    return any(
        other.pk != summary.pk
        and other.first_id == summary.first_id
        and other.last.depth > summary.last.depth
        and summary.last.public_id in other.covered_ids
        for other in others
    )


def summaries_invalidate_for_messages(
    *, message_ids: Iterable[int], actor: Actor, rebuild: bool = True
) -> list[Summary]:
    """Mark stale every pending or ready summary covering any of ``message_ids`` (message
    primary keys), so context assembly stops using them, and request a rebuild from the
    originals for each invalidated range (except ranges another invalidated summary from the
    same start extends). Writes ``summary.invalidated`` audit events (ids only).

    Call inside the transaction that changed the messages (redaction, erasure): the rebuilds
    are enqueued after it commits and read the changed content. A writer already running on
    an invalidated pending summary finds it stale when it stores its result and drops it.
    Returns the invalidated summaries.
    """
    by_thread: dict[int, dict[str, int]] = defaultdict(dict)
    ids = list(message_ids)
    for start in range(0, len(ids), _BATCH):
        rows = Message.objects.filter(pk__in=ids[start : start + _BATCH]).values_list(
            "thread_id", "public_id", "depth"
        )
        for thread_id, public_id, depth in rows:
            by_thread[thread_id][public_id] = depth
    invalidated: list[Summary] = []
    for thread_id, messages in by_thread.items():
        depths = messages.values()
        candidates = Summary.objects.filter(
            thread_id=thread_id,
            status__in=LIVE,
            first__depth__lte=max(depths),
            last__depth__gte=min(depths),
        ).select_related("thread", "first", "last")
        hit = [summary for summary in candidates if _covers(summary, messages)]
        if not hit:
            continue
        with transaction.atomic():
            Summary.objects.filter(pk__in=[s.pk for s in hit], status__in=LIVE).update(
                status=Summary.Status.STALE, leased_until=None, updated_at=timezone.now()
            )
            thread = hit[0].thread
            audit_event_record(
                actor=actor,
                action="summary.invalidated",
                tenant_id=thread.tenant_id,
                thread_public_id=thread.public_id,
                object_ids=[s.public_id for s in hit],
                details={"messages": sorted(messages), "rebuild": rebuild},
            )
            if rebuild:
                for summary in hit:
                    if not _superseded(summary, hit):
                        summary_request(
                            thread=thread,
                            actor=actor,
                            first_id=summary.first_id,
                            last_id=summary.last_id,
                            covered_ids=summary.covered_ids,
                            max_tokens=summary.max_tokens,
                        )
        invalidated += hit
    return invalidated
