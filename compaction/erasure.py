"""Compaction's own erase service: the memos, kept assembly inputs (snapshots) and content blobs
derived from erased messages, and the age-based purge of snapshots. The compliance app
(``audit``) calls it with the threads app's for retention and deletion; the snapshot purge runs
hourly. Every function runs inside the caller's transaction unless it says otherwise.
"""

from collections import Counter
from collections.abc import Iterable
from datetime import datetime, timedelta
from typing import Any

from django.conf import settings
from django.db import transaction
from django.db.models import QuerySet
from django.utils import timezone

from auditlog.events import Actor, audit_event_record
from compaction.backends import text_caches
from compaction.models import AssemblyRecord, ContentBlob, Summary
from compaction.services import summaries_derived_from, summaries_invalidate_for_messages
from compaction.snapshots import pieces_drop_unnamed
from threads.erasure import BATCH, ERASED
from threads.models import Thread

PURGE_BATCH = 1000
SNAPSHOT_PURGER = Actor.system("compaction.purge_assembly_snapshots")


def assembly_snapshots_purge(*, now: datetime | None = None) -> int:
    """Drop the kept inputs (snapshots) of assembly records older than ``CONVMEM_SNAPSHOT_DAYS``,
    and the pieces no kept snapshot names any more.

    The hash, the ids and the token counts stay (a replay rebuilds the text from them).
    Batches of ``PURGE_BATCH`` rows, each in its own transaction with one audit event per
    tenant; safe to run twice and concurrently (a row is purged once: the UPDATE re-checks
    ``rendered_purged_at IS NULL``). Returns how many snapshots were purged.
    """
    now = now or timezone.now()
    cutoff = now - timedelta(days=settings.CONVMEM_SNAPSHOT_DAYS)
    due = AssemblyRecord.objects.filter(rendered_pieces__isnull=False, created_at__lt=cutoff)
    purged = 0
    while True:
        batch = list(
            due.order_by("created_at").values_list("pk", "tenant_id", "thread_id")[:PURGE_BATCH]
        )
        if not batch:
            return purged
        with transaction.atomic():
            pks = [pk for pk, _, _ in batch]
            done = AssemblyRecord.objects.filter(pk__in=pks, rendered_pieces__isnull=False).update(
                rendered_pieces=None, rendered_purged_at=now
            )
            pieces_drop_unnamed(thread_ids={thread_id for _, _, thread_id in batch})
            for tenant_id, count in Counter(tenant for _, tenant, _ in batch).items():
                audit_event_record(
                    actor=SNAPSHOT_PURGER,
                    action="assembly.snapshots_purged",
                    tenant_id=tenant_id,
                    details={"count": count, "older_than_days": settings.CONVMEM_SNAPSHOT_DAYS},
                )
        purged += done


def text_caches_drop_on_commit() -> None:
    """Drop this process's caches of statements (the memo writer's, recall's) when the erasure
    commits; other processes drop theirs on their timer (``compaction.backends.text_caches``)."""
    text_caches.drop_all_on_commit()


def summaries_erase(
    thread: Thread, pks: Iterable[int], actor: Actor, *, everything: bool
) -> list[str]:
    """Invalidate and erase the text of every memo derived from the erased messages ``pks``:
    those covering one, and every memo extending those (every memo of the thread with
    ``everything``). Returns their public ids."""
    pks = set(pks)
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


def snapshots_purge_showing(
    thread: Thread, ids: Iterable[str], now: datetime, *, everything: bool
) -> list[str]:
    """Drop the kept inputs of the thread's assemblies that showed a message of ``ids`` (every
    one with ``everything``), and the pieces no kept input names any more; the records' ids,
    hashes and token counts stay. Returns the records' ids."""
    ids = set(ids)
    kept = AssemblyRecord.objects.filter(thread=thread, rendered_pieces__isnull=False)
    hit = [
        (pk, public_id)
        for pk, public_id, items in kept.values_list("pk", "public_id", "items").iterator(BATCH)
        if everything or not ids.isdisjoint(_item_ids(items))
    ]
    AssemblyRecord.objects.filter(pk__in=[pk for pk, _ in hit]).update(
        rendered_pieces=None, rendered_purged_at=now
    )
    pieces_drop_unnamed(thread_ids=[thread.pk])
    return [public_id for _, public_id in hit]


def _item_ids(items: Iterable[dict[str, Any]]) -> set[str]:
    return {item["id"] for item in items if "id" in item}


def blobs_erase_exclusive(*, tenant_id: int, threads: QuerySet[Thread], now: datetime) -> list[str]:
    """Erase the content blobs (system prompts, retrieved texts) the assemblies of ``threads``
    used that no other thread's assembly uses: of the blobs stored in clear (once per tenant),
    those no other thread of the tenant uses; of the sealed ones (once per subject, under its
    key), those no other thread of the subject uses. Returns their hashes."""
    hashes = _blob_hashes(AssemblyRecord.objects.filter(thread__in=threads))
    tenant_others = AssemblyRecord.objects.filter(tenant_id=tenant_id).exclude(thread__in=threads)
    scopes = {"": _unused_by(hashes, tenant_others)}
    for key_id in set(threads.exclude(data_key_id="").values_list("data_key_id", flat=True)):
        subject_others = tenant_others.filter(thread__data_key_id=key_id)
        scopes[key_id] = _unused_by(hashes, subject_others)
    erased = []
    for key_id, exclusive in scopes.items():
        blobs = ContentBlob.objects.filter(
            tenant_id=tenant_id, key_id=key_id, sha256__in=exclusive, erased_at__isnull=True
        )
        erased += blobs.values_list("sha256", flat=True)
        blobs.update(text="", erased_at=now)
    return sorted(erased)


def _blob_hashes(assemblies: QuerySet[AssemblyRecord]) -> set[str]:
    return {
        item["hash"]
        for items in assemblies.values_list("items", flat=True).iterator(chunk_size=500)
        for item in items
        if item.get("hash")
    }


def _unused_by(hashes: set[str], others: QuerySet[AssemblyRecord]) -> set[str]:
    return {h for h in hashes if not others.filter(items__icontains=h).exists()}
