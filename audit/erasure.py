"""Erasing content from one thread: the shared step of retention and deletion requests.

The compliance layer decides *what* is erased and keeps the proof; each app erases its own
copies: ``threads.erasure`` tombstones the messages (content, parts, metadata, tool-call
arguments) and redacts stored Idempotency-Key responses that carried them; ``compaction.erasure``
erases the memos covering them (marked stale) and the rendered assembly snapshots that showed
them; ``respond.erasure`` deletes the Redis streams of the runs that asked or answered them
(once the transaction commits). Ids, the tree, memo ranges, assembly records and audit events
stay.

Callers hold a transaction and write their own audit event with the returned ids and counts.
"""

from dataclasses import dataclass, field
from datetime import datetime

from django.db.models import QuerySet
from django.utils import timezone

from auditlog.events import Actor
from compaction import erasure as compaction_erasure
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
    return result
