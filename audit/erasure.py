"""Erasing content from one thread: the shared step of retention and deletion requests.

Erasure is a tombstone, never a row delete: a message keeps its id, parent, role, token count
and place in the tree (so paths, summaries' ranges, assembly records and audit events stay
intact) and its content becomes ``ERASED``. Everything derived from erased content goes too:
summaries covering an erased message (text erased, marked stale), rendered assembly snapshots
that showed one, and stored Idempotency-Key responses that carried one.

Callers hold a transaction and write their own audit event with the returned ids and counts.
"""

import json
from collections.abc import Iterable
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from django.db.models import QuerySet
from django.utils import timezone

from audit.events import Actor
from audit.models import AssemblyRecord
from compaction.models import Summary
from compaction.services import summaries_derived_from, summaries_invalidate_for_messages
from threads.models import IdempotencyRecord, Message, Role, Thread
from threads.services import thread_lock_for_erasure

ERASED = "[erased]"
BATCH = 1000


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
    live = Message.objects.filter(thread=thread, erased_at__isnull=True).exclude(role=Role.ROOT)
    if created_before is not None:
        live = live.filter(created_at__lt=created_before)
    return _erase(thread, live, actor, everything=created_before is None)


def message_content_erase(*, message: Message, actor: Actor) -> ThreadErasure:
    """Tombstone one message (a redaction) and every copy derived from it: the summaries that
    covered it (stale, rebuilt from the originals), the snapshots that showed it, the stored
    responses that carried it. Idempotent; same transaction rule as ``thread_content_erase``.
    """
    live = Message.objects.filter(pk=message.pk, erased_at__isnull=True).exclude(role=Role.ROOT)
    return _erase(message.thread, live, actor, everything=False)


def _erase(
    thread: Thread, live: QuerySet[Message], actor: Actor, *, everything: bool
) -> ThreadErasure:
    # No context assembly of the thread may read content before this and store its snapshot
    # after the purge below: it holds the row FOR KEY SHARE, which this lock waits for.
    thread_lock_for_erasure(thread)
    now = timezone.now()
    erased_pks, erased_ids = _tombstone(live, now)
    result = ThreadErasure(messages=erased_ids)
    if not erased_pks and not everything:
        return result
    result.summaries = _erase_summaries(thread, set(erased_pks), actor, everything)
    result.snapshots = _purge_snapshots(thread, set(erased_ids), now, everything)
    result.idempotency_responses = _redact_idempotency(thread, set(erased_ids), everything)
    return result


def _tombstone(live: QuerySet[Message], now: datetime) -> tuple[list[int], list[str]]:
    pks: list[int] = []
    ids: list[str] = []
    last = 0
    while True:
        batch = list(live.filter(pk__gt=last).order_by("pk").values_list("pk", "public_id")[:BATCH])
        if not batch:
            return pks, ids
        batch_pks = [pk for pk, _ in batch]
        Message.objects.filter(pk__in=batch_pks).update(
            content=ERASED, content_parts=None, metadata={}, erased_at=now
        )
        _erase_tool_arguments(batch_pks)
        pks += batch_pks
        ids += [public_id for _, public_id in batch]
        last = batch_pks[-1]


def _erase_tool_arguments(pks: list[int]) -> None:
    """Keep the calls' ids and names (the structure the model input needs) and erase the
    arguments, which carry what the user asked for."""
    calling = Message.objects.filter(pk__in=pks, tool_calls__isnull=False)
    for message in calling.only("pk", "tool_calls"):
        message.tool_calls = erased_tool_calls(message.tool_calls)
        message.save(update_fields=["tool_calls"])


def erased_tool_calls(calls: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [{**call, "function": {**call["function"], "arguments": ERASED}} for call in calls]


def _erase_summaries(thread: Thread, pks: set[int], actor: Actor, everything: bool) -> list[str]:
    """Invalidate (compaction's rule) and erase the text of every summary derived from the
    erased turns: those covering one, and every memo extending those."""
    if everything:
        hit = list(Summary.objects.filter(thread=thread).exclude(text=ERASED))
    else:
        hit = [s for s in summaries_derived_from(message_ids=sorted(pks)) if s.text != ERASED]
    if pks:
        # No rebuild when the whole thread is erased: there is nothing left to summarise.
        summaries_invalidate_for_messages(
            message_ids=sorted(pks), actor=actor, rebuild=not everything
        )
    Summary.objects.filter(pk__in=[s.pk for s in hit]).update(
        text=ERASED, status=Summary.Status.STALE, scores={}, error=""
    )
    return [s.public_id for s in hit]


def _purge_snapshots(thread: Thread, ids: set[str], now: datetime, everything: bool) -> list[str]:
    live = AssemblyRecord.objects.filter(thread=thread, rendered_purged_at__isnull=True)
    hit = [
        (pk, public_id)
        for pk, public_id, items in live.values_list("pk", "public_id", "items").iterator(BATCH)
        if everything or not ids.isdisjoint(_item_ids(items))
    ]
    AssemblyRecord.objects.filter(pk__in=[pk for pk, _ in hit]).update(
        rendered_text="", rendered_purged_at=now
    )
    return [public_id for _, public_id in hit]


def _item_ids(items: Iterable[dict[str, Any]]) -> set[str]:
    return {item["id"] for item in items if "id" in item}


def _redact_idempotency(thread: Thread, ids: set[str], everything: bool) -> int:
    """Replace content in stored responses that carried erased content.

    The row stays, so a retry with the same key still replays (now the erased view) instead of
    writing a second node.
    """
    redacted = 0
    records = IdempotencyRecord.objects.filter(thread=thread, response_body__isnull=False)
    for record in records.only("pk", "response_body").iterator(BATCH):
        body = record.response_body
        if not everything and not any(i in json.dumps(body) for i in ids):
            continue
        clean = redact_content(body)
        if clean != body:
            record.response_body = clean
            record.save(update_fields=["response_body"])
            redacted += 1
    return redacted


CONTENT_KEYS = {"content", "text", "rendered_text", "arguments"}
PERSONAL_KEYS = {"title": "", "metadata": {}, "content_parts": None}


def redact_content(value: Any) -> Any:
    """``value`` with every content-bearing field of an API body replaced by ``ERASED``.

    Message bodies also say ``erased: true``, as a fresh read of the message would.
    """
    if isinstance(value, list):
        return [redact_content(v) for v in value]
    if not isinstance(value, dict):
        return value
    clean = {}
    for key, item in value.items():
        if key in CONTENT_KEYS and isinstance(item, str):
            clean[key] = ERASED
        elif key in PERSONAL_KEYS:
            clean[key] = PERSONAL_KEYS[key]
        else:
            clean[key] = redact_content(item)
    if "content" in value and "erased" in value:
        clean["erased"] = True
    return clean
