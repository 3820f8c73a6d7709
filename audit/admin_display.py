"""Words for the deletion review page: the proof, the progress and the audit trail as people
read them, not as they are stored (code names such as ``assembly_snapshots``, JSON objects,
ISO timestamps). Pure functions of the stored values; the view passes their results to the
template."""

from dataclasses import dataclass
from datetime import datetime
from typing import Any

from django.utils import formats, timezone
from django.utils.dateparse import parse_datetime


@dataclass(frozen=True)
class ErasedKind:
    count_key: str
    # Where the proof lists the ids of this kind (None: counted only).
    ids_key: str | None
    label: str
    what: str


ERASED_KINDS = [
    ErasedKind(
        "threads",
        "threads",
        "Threads",
        "threads erased from; a whole-thread request also clears titles and metadata (ids kept)",
    ),
    ErasedKind("messages", "messages", "Messages", "content replaced by “[erased]”"),
    ErasedKind("summaries", "summaries", "Memos", "memos (summaries) that covered the messages"),
    ErasedKind(
        "assembly_snapshots",
        "assemblies",
        "Assembly snapshots",
        "rendered model inputs, listed by their assembly record",
    ),
    ErasedKind(
        "idempotency_responses",
        None,
        "Stored API responses",
        "answers kept for retried requests, content removed",
    ),
    ErasedKind(
        "content_blobs",
        "content_blobs",
        "Stored prompts and retrieved texts",
        "system prompts and retrieved passages no other conversation used (SHA-256)",
    ),
]
LABELS = {kind.count_key: kind.label for kind in ERASED_KINDS} | {
    "assemblies": "Assembly records",
    "counts": "Erased",
    "user_ref": "User ref",
    "thread_id": "Thread",
    "due_at": "Due",
    "reason": "Reason",
    "legal_holds": "Legal holds",
    "self_service": "Asked by the app itself (self-service)",
    "note_given": "Approval note given",
}
PROGRESS_STATES = {
    "queued": "Queued, waiting for a worker",
    "running": "Erasing",
    "done": "Done",
    "refused": "Refused",
}


@dataclass(frozen=True)
class ProofRow:
    label: str
    what: str
    count: int
    ids: list[str]


def proof_rows(proof: dict[str, Any]) -> list[ProofRow]:
    """One row per kind of data erased, in the order of the footprint."""
    counts, ids = proof.get("counts", {}), proof.get("erased", {})
    return [
        ProofRow(
            label=kind.label,
            what=kind.what,
            count=counts.get(kind.count_key, 0),
            ids=ids.get(kind.ids_key, []) if kind.ids_key else [],
        )
        for kind in ERASED_KINDS
    ]


def proof_times(proof: dict[str, Any]) -> dict[str, datetime | None]:
    """The proof's ISO timestamps, as datetimes the template formats like every other date."""
    keys = ("approved_at", "execution_requested_at", "executed_at")
    return {key: parse_datetime(proof[key]) if proof.get(key) else None for key in keys}


def progress_state(progress: dict[str, Any]) -> str:
    state = progress.get("state", "")
    return PROGRESS_STATES.get(state, state.replace("_", " ").capitalize())


def event_action(action: str) -> str:
    """``deletion_request.execution_requested`` → "Execution requested"."""
    return action.rpartition(".")[2].replace("_", " ").capitalize()


def event_details(details: dict[str, Any]) -> list[tuple[str, str]]:
    """(label, text) lines of an audit event's details."""
    return [(label_of(key), _text(value)) for key, value in details.items()]


def label_of(key: str) -> str:
    return LABELS.get(key, key.replace("_", " ").capitalize())


def _text(value: Any) -> str:
    if isinstance(value, dict):
        return ", ".join(f"{label_of(key)}: {_text(item)}" for key, item in value.items()) or "—"
    if isinstance(value, list):
        return ", ".join(_text(item) for item in value) or "—"
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, str) and (moment := _timestamp(value)) is not None:
        return formats.date_format(timezone.localtime(moment), "DATETIME_FORMAT")
    return "—" if value is None else str(value)


def _timestamp(value: str) -> datetime | None:
    try:
        moment = parse_datetime(value)
    except ValueError:
        return None
    return moment if moment is not None and moment.tzinfo is not None else None
