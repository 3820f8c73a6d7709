"""Kept model inputs (snapshots): the rendered text of an assembly, only when asked for.

An assembly is recorded as ids and a hash (``AssemblyRecord.items``, ``rendered_hash``); a
replay rebuilds the text from them. A profile that keeps rendered inputs, for debugging, also
stores the text as it was sent: one ``RenderedPiece`` per rendered message (its canonical
JSON, zlib-compressed, sealed with the subject's key when encryption is on),
content-addressed per thread, and the record lists the pieces' digests
in order. Turn t+1's input starts with most of turn t's messages, so a turn adds about one new
piece (the new user turn and the answer before it), not the whole window again.

Pieces are deleted with the last snapshot that names them: the age-based purge and erasure
clear a record's ``rendered_pieces`` and then drop the pieces of that thread no kept snapshot
names (``pieces_drop_unnamed``).
"""

import json
import zlib
from collections.abc import Iterable
from typing import Any

from compaction.models import AssemblyRecord, RenderedPiece, piece_identity
from compaction.rendering import canonical_json, sha256_hex
from convmem.sealed_fields import stored_open
from threads.models import Thread


def _piece(message: dict[str, Any]) -> tuple[str, bytes]:
    """One rendered message as canonical JSON (as ``canonical_json`` writes each element)."""
    text = json.dumps(message, ensure_ascii=False, sort_keys=True, separators=(",", ":"))
    return sha256_hex(text), zlib.compress(text.encode())


# Pieces already stored are kept as they are (same digest, same bytes).
PIECE_CONFLICT = "(thread_id, sha256) DO NOTHING"


def pieces_of(
    *, thread: Thread, messages: list[dict[str, Any]]
) -> tuple[list[str], list[RenderedPiece]]:
    """The digests of one input's rendered messages, in order, and the pieces to insert for
    them (unsaved; insert with ``PIECE_CONFLICT``, in the record's transaction)."""
    pieces = [_piece(message) for message in messages]
    rows = [
        RenderedPiece(thread=thread, sha256=digest, data=data)
        for digest, data in dict(pieces).items()
    ]
    return [digest for digest, _ in pieces], rows


def snapshot_messages(record: AssemblyRecord) -> list[dict[str, Any]] | None:
    """The kept input of ``record`` as sent, or None if it was not kept (or was purged)."""
    if record.rendered_pieces is None:
        return None
    stored = {
        digest: stored_open(
            RenderedPiece, "data", piece_identity(record.thread_id, digest), bytes(data)
        )
        for digest, data in RenderedPiece.objects.filter(
            thread_id=record.thread_id, sha256__in=set(record.rendered_pieces)
        ).values_list("sha256", "data")
    }
    return [json.loads(zlib.decompress(stored[digest])) for digest in record.rendered_pieces]


def snapshot_text(record: AssemblyRecord) -> str:
    """The kept input of ``record`` as canonical JSON (what its hash was taken of), or ""."""
    messages = snapshot_messages(record)
    return "" if messages is None else canonical_json(messages)


def pieces_drop_unnamed(*, thread_ids: Iterable[int]) -> int:
    """Delete the pieces of these threads that no kept snapshot names any more. Returns how
    many were deleted."""
    thread_ids = set(thread_ids)
    if not thread_ids:
        return 0
    named = {
        (thread_id, digest)
        for thread_id, pieces in AssemblyRecord.objects.filter(
            thread_id__in=thread_ids, rendered_pieces__isnull=False
        ).values_list("thread_id", "rendered_pieces")
        for digest in pieces
    }
    unnamed = [
        pk
        for pk, thread_id, digest in RenderedPiece.objects.filter(
            thread_id__in=thread_ids
        ).values_list("pk", "thread_id", "sha256")
        if (thread_id, digest) not in named
    ]
    deleted, _ = RenderedPiece.objects.filter(pk__in=unnamed).delete()
    return deleted
