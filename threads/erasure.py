"""The threads app's own erase service: tombstones of messages, thread details and the stored
Idempotency-Key responses that carried content. The compliance app (``audit``) calls it, with
compaction's, for retention, deletion requests and self-service deletion.

Erasure is a tombstone, never a row delete: a message keeps its id, parent, role, token count
and place in the tree (so paths, memo ranges, assembly records and audit events stay intact)
and its content becomes ``ERASED``. Every function here runs inside the caller's transaction.
"""

import json
from collections.abc import Iterable
from datetime import datetime
from typing import Any

from django.db.models import QuerySet
from django.utils import timezone

from convmem import crypto
from threads.models import IdempotencyRecord, Message, Role, SystemPrompt, Thread

ERASED = "[erased]"
BATCH = 1000


def live_messages(thread: Thread, created_before: datetime | None = None) -> QuerySet[Message]:
    """The thread's messages not erased yet (all, or those created before ``created_before``)."""
    live = Message.objects.filter(thread=thread, erased_at__isnull=True).exclude(role=Role.ROOT)
    if created_before is not None:
        live = live.filter(created_at__lt=created_before)
    return live


def live_messages_of(threads: QuerySet[Thread]) -> QuerySet[Message]:
    """The messages not erased yet of any of ``threads``."""
    return Message.objects.filter(thread__in=threads, erased_at__isnull=True).exclude(
        role=Role.ROOT
    )


def messages_tombstone(live: QuerySet[Message], now: datetime) -> tuple[list[int], list[str]]:
    """Erase the content, parts, metadata and tool-call arguments of ``live``, in batches.
    Returns the primary keys and public ids of the messages erased."""
    pks: list[int] = []
    ids: list[str] = []
    last = 0
    while True:
        batch = list(live.filter(pk__gt=last).order_by("pk").values_list("pk", "public_id")[:BATCH])
        if not batch:
            return pks, ids
        batch_pks = [pk for pk, _ in batch]
        Message.objects.filter(pk__in=batch_pks).update(
            content=ERASED, content_parts=None, metadata={}, search_terms="", erased_at=now
        )
        _erase_tool_arguments(batch_pks)
        pks += batch_pks
        ids += [public_id for _, public_id in batch]
        last = batch_pks[-1]


def _erase_tool_arguments(pks: list[int]) -> None:
    """Keep the calls' ids and names (the structure the model input needs) and erase the
    arguments, which carry what the user asked for."""
    calling = Message.objects.filter(pk__in=pks, tool_calls__isnull=False)
    # As stored (the arguments may be sealed under a key the erasure destroyed first), and
    # written back with update(): the markers are not content, so they are not sealed.
    for pk, calls in calling.values_list("pk", "tool_calls"):
        Message.objects.filter(pk=pk).update(tool_calls=erased_tool_calls(calls))


def erased_tool_calls(calls: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [{**call, "function": {**call["function"], "arguments": ERASED}} for call in calls]


def thread_details_erase(thread: Thread) -> None:
    """The thread's own personal data: its title, metadata and system prompts; the thread is
    marked erased."""
    Thread.objects.filter(pk=thread.pk).update(
        title="", metadata={}, system_prompt=None, erased_at=timezone.now()
    )
    SystemPrompt.objects.filter(thread=thread).delete()


def thread_mark_deleted(thread: Thread) -> None:
    """From now on the API answers 404 for the thread (its erased record stays for audit)."""
    Thread.objects.filter(pk=thread.pk).update(deleted_at=timezone.now())


def idempotency_responses_redact(thread: Thread, ids: Iterable[str], *, everything: bool) -> int:
    """Replace content in stored responses that carried erased content (``ids``; every stored
    response of the thread with ``everything``). Returns how many were redacted.

    The row stays, so a retry with the same key still replays (now the erased view) instead of
    writing a second node.
    """
    ids = set(ids)
    redacted = 0
    records = IdempotencyRecord.objects.filter(thread=thread, response_body__isnull=False)
    fields = ("pk", "tenant_id", "key", "thread_id", "response_body")
    for record in records.only(*fields).iterator(BATCH):
        body = record.response_body
        if crypto.is_sealed(body):
            # Its subject's key is destroyed (this erasure began with it): the body no longer
            # opens, so nothing in it can be kept; the erased view is all a retry replays.
            clean: Any = UNREADABLE_RESPONSE
        elif not everything and not any(i in json.dumps(body) for i in ids):
            continue
        else:
            clean = redact_content(body)
        if clean != body:
            # Written as it is, like the messages' markers: the erased view holds no content.
            IdempotencyRecord.objects.filter(pk=record.pk).update(response_body=clean)
            redacted += 1
    return redacted


# What a stored response whose subject's key was destroyed before it was redacted replays.
UNREADABLE_RESPONSE = {"erased": True}


CONTENT_KEYS = {"content", "text", "rendered_text", "arguments"}
PERSONAL_KEYS = {"title": "", "metadata": {}, "content_parts": None, "system": None}


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
