"""Erasing content from one thread: the shared step of retention and deletion requests.

The compliance layer decides *what* is erased and keeps the proof; each app erases its own
copies: ``threads.erasure`` tombstones the messages (content, parts, metadata, tool-call
arguments) and redacts stored Idempotency-Key responses that carried them; ``compaction.erasure``
erases the memos covering them (marked stale) and the rendered assembly snapshots that showed
them; ``respond.erasure`` deletes the Redis streams of the runs that asked or answered them
(once the transaction commits). Ids, the tree, memo ranges, assembly records and audit events
stay.

Callers hold a transaction and write their own audit event with the returned ids and counts.

When an erasure leaves a subject (a tenant's ``user_ref``, or a thread without one) no readable
content, ``subject_key_destroy_if_last`` destroys the subject's data key first (``convmem.crypto``;
committed in the keys database at once), then the rows are erased: a crash in between leaves
the content unreadable, never readable, and every backup taken before holds only ciphertext.
"""

from dataclasses import dataclass, field
from datetime import datetime

from django.db.models import QuerySet
from django.utils import timezone

from auditlog.events import Actor
from compaction import erasure as compaction_erasure
from convmem import crypto
from respond import erasure as respond_erasure
from threads import erasure as threads_erasure
from threads.models import Message, Thread
from threads.services import thread_lock_for_erasure


@dataclass
class ThreadErasure:
    """What one erasure pass removed from a thread (ids and counts only)."""

    messages: list[str] = field(default_factory=list)
    summaries: list[str] = field(default_factory=list)
    snapshots: list[str] = field(default_factory=list)
    idempotency_responses: int = 0

    @property
    def empty(self) -> bool:
        return not (self.messages or self.summaries or self.snapshots or self.idempotency_responses)

    def counts(self) -> dict[str, int]:
        return {
            "messages": len(self.messages),
            "summaries": len(self.summaries),
            "assembly_snapshots": len(self.snapshots),
            "idempotency_responses": self.idempotency_responses,
        }


def thread_content_erase(
    *, thread: Thread, actor: Actor, created_before: datetime | None = None
) -> ThreadErasure:
    """Tombstone the thread's live messages (all, or those created before ``created_before``)
    and erase every copy derived from them. Idempotent: erased messages are skipped.

    Must run inside a transaction (the caller's), so the erasure, the summary invalidation and
    the caller's audit event commit together. Takes the thread row ``FOR UPDATE``
    (``threads.services.thread_lock_for_erasure``) until that transaction ends.
    """
    live = threads_erasure.live_messages(thread, created_before)
    return _erase(thread, live, actor, everything=created_before is None)


def message_content_erase(*, message: Message, actor: Actor) -> ThreadErasure:
    """Tombstone one message (a redaction) and every copy derived from it: the summaries that
    covered it (stale, rebuilt from the originals), the snapshots that showed it, the stored
    responses that carried it. Idempotent; same transaction rule as ``thread_content_erase``.
    """
    live = threads_erasure.live_messages(message.thread).filter(pk=message.pk)
    return _erase(message.thread, live, actor, everything=False)


def _erase(
    thread: Thread, live: QuerySet[Message], actor: Actor, *, everything: bool
) -> ThreadErasure:
    # No context assembly of the thread may read content before this and store its snapshot
    # after the purge below: it holds the row FOR KEY SHARE, which this lock waits for.
    thread_lock_for_erasure(thread)
    now = timezone.now()
    pks, ids = threads_erasure.messages_tombstone(live, now)
    result = ThreadErasure(messages=ids)
    if not pks and not everything:
        return result
    result.summaries = compaction_erasure.summaries_erase(thread, pks, actor, everything=everything)
    result.snapshots = compaction_erasure.snapshots_purge_showing(
        thread, ids, now, everything=everything
    )
    result.idempotency_responses = threads_erasure.idempotency_responses_redact(
        thread, ids, everything=everything
    )
    respond_erasure.run_streams_erase(thread, pks, everything=everything)
    compaction_erasure.text_caches_drop_on_commit()
    return result


def _subject_threads(thread: Thread) -> QuerySet[Thread]:
    if not thread.user_ref:
        return Thread.objects.filter(pk=thread.pk)
    return Thread.objects.filter(tenant_id=thread.tenant_id, user_ref=thread.user_ref)


def subject_key_destroy_if_last(
    *, thread: Thread, created_before: datetime | None = None
) -> list[crypto.DestroyedKey]:
    """Destroy the data key of ``thread``'s subject if the erasure about to run (the whole
    thread, or its messages created before ``created_before``) leaves the subject no live
    message in any of its threads; call it before erasing the rows, inside the erasure.
    Returns the keys destroyed (for the proof), none when the subject's key lives on."""
    remaining = threads_erasure.live_messages_of(_subject_threads(thread))
    if created_before is None:
        remaining = remaining.exclude(thread_id=thread.pk)
    else:
        remaining = remaining.exclude(thread_id=thread.pk, created_at__lt=created_before)
    if remaining.exists():
        return []
    # A subject's key is made only for one of its threads, which names it: none named, no key
    # (and the keys database is not asked: erasure works before it is ever used).
    if not _subject_threads(thread).exclude(data_key_id="").exists():
        return []
    return crypto.subject_keys_destroy(tenant_id=thread.tenant_id, subject=thread.subject)


def keys_destroyed_proof(destroyed: list[crypto.DestroyedKey]) -> list[dict[str, str]]:
    return [{"key_id": k.key_id, "destroyed_at": k.destroyed_at.isoformat()} for k in destroyed]
