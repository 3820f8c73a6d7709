"""Full-history exports of a thread or of a tenant's end user (``user_ref``), streamed.

The format is ``convmem.export/2``, documented in ``docs/export-schema.md`` and described by the
JSON Schema ``audit/export_schema.json``. Two machine-readable encodings of the same records:

- ``json``: one object ``{"schema", "generated_at", "subject", "threads": [...],
  "subject_events": [...], "deletion_requests": [...], "counts"}``, each thread carrying its
  ``messages`` (every node of every branch), ``summaries``, ``assemblies`` and ``audit_events``;
- ``jsonl``: one record per line, each with a ``type`` (``export``, ``thread``, ``message``,
  ``summary``, ``assembly``, ``audit_event``, ``subject_event``, ``deletion_request``, ``end``);
  rows of a thread carry its ``thread_id``.

and two for people: ``html``, a self-contained page for the person the data is about (GDPR
Art. 15), written by ``audit.export_html`` from the same records, and ``pdf``, that page printed
(``audit.export_pdf``).

Memory stays constant whatever the history: rows are read in keyset-paginated batches of
``CONVMEM_EXPORT_BATCH_SIZE`` (one query per batch, related ids joined in), serialised one at a
time and handed out in ~64 KiB text chunks, so nothing holds more than one batch. The PDF is
the exception: WeasyPrint lays out the whole page at once.
"""

import json
from collections import Counter
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from typing import Any

from django.conf import settings
from django.core.exceptions import PermissionDenied
from django.core.serializers.json import DjangoJSONEncoder
from django.db import transaction
from django.db.models import Model, Q, QuerySet
from django.http import HttpResponse, StreamingHttpResponse
from django.utils import timezone

from audit.export_html import HtmlExport
from audit.export_pdf import export_pdf
from audit.models import DeletionRequest
from auditlog.events import Actor, audit_event_record
from auditlog.models import AuditEvent
from compaction import record_form
from compaction.models import AssemblyRecord, Summary, budget_joined
from compaction.selectors import items_expanded, plans_shown
from convmem.errors import InvalidRequest
from convmem.models import Tenant
from threads.models import Message, Role, SystemPrompt, Thread
from threads.selectors import messages_with_refs
from threads.serializers import message_content

SCHEMA = "convmem.export/2"
FORMATS = {
    "json": "application/json",
    "jsonl": "application/x-ndjson",
    # For the person the data is about (``audit.export_html``); the JSON encodings are unchanged.
    "html": "text/html; charset=utf-8",
    # The same page printed (``audit.export_pdf``): not streamed, answered in one piece.
    "pdf": "application/pdf",
}
EXPORT_PERMISSION = "audit.export_history"
CHUNK_CHARS = 65_536

Record = dict[str, Any]
OnRecord = Callable[[str], None]
# The record types of a thread and the name of their list in the ``json`` encoding.
SECTIONS = {
    "message": "messages",
    "summary": "summaries",
    "assembly": "assemblies",
    "audit_event": "audit_events",
}


def _dumps(value: Any) -> str:
    return json.dumps(value, cls=DjangoJSONEncoder, ensure_ascii=False, separators=(",", ":"))


def _keyset(queryset: QuerySet, batch: int) -> Iterator[Any]:
    """Rows of ``queryset`` in primary-key order, ``batch`` rows per query."""
    last = None
    while True:
        page = queryset.filter(pk__gt=last) if last is not None else queryset
        rows = list(page.order_by("pk")[:batch])
        yield from rows
        if len(rows) < batch:
            return
        last = rows[-1].pk if isinstance(rows[-1], Model) else rows[-1]["pk"]
        # Drop this batch before the next one is fetched: one batch alive at a time.
        del rows


def _thread(thread: Thread) -> Record:
    leaf = thread.active_leaf
    return {
        "id": thread.public_id,
        "user_ref": thread.user_ref,
        "title": thread.title,
        "metadata": thread.metadata,
        "profile": thread.profile.name if thread.profile else None,
        "active_leaf_id": None if leaf is None or leaf.role == Role.ROOT else leaf.public_id,
        "system_prompts": [
            {"version": p.version, "text": p.text, "created_at": p.created_at}
            for p in SystemPrompt.objects.filter(thread=thread).order_by("version")
        ],
        "created_at": thread.created_at,
        "updated_at": thread.updated_at,
    }


def _message(m: Message) -> Record:
    return {
        "id": m.public_id,
        "parent_id": m.parent_public_id,
        "role": m.role,
        "content": message_content(m),
        "content_parts": m.content_parts,
        "tool_calls": m.tool_calls,
        "tool_call_id": m.tool_call_id or None,
        "metadata": m.metadata,
        "model": m.model or None,
        "usage": m.usage,
        "status": m.status,
        "token_count": m.token_count,
        "depth": m.depth,
        "edits_id": m.edits_public_id,
        "assembly_id": m.assembly_public_id,
        "erased": m.erased_at is not None,
        "erased_at": m.erased_at,
        "created_at": m.created_at,
    }


def _summaries(thread: Thread, batch: int) -> Iterator[Record]:
    """Summaries with their ranges as public message ids (stored ranges may hold row ids)."""
    rows = Summary.objects.filter(thread=thread).select_related(
        "first", "segment_first", "last", "base"
    )
    page: list[Summary] = []
    for summary in _keyset(rows, batch):
        page.append(summary)
        if len(page) == batch:
            yield from _summary_page(page)
            page = []
    yield from _summary_page(page)


def _summary_page(page: list[Summary]) -> Iterator[Record]:
    pks = {i for s in page for i in s.covered_ids if isinstance(i, int)}
    public = dict(Message.objects.filter(pk__in=pks).values_list("pk", "public_id")) if pks else {}
    for s in page:
        yield {
            "id": s.public_id,
            "first_id": s.first.public_id,
            "last_id": s.last.public_id,
            "segment_first_id": s.segment_first.public_id,
            "covered_ids": [public.get(i, i) if isinstance(i, int) else i for i in s.covered_ids],
            "base_id": s.base.public_id if s.base else None,
            "chain_depth": s.chain_depth,
            "status": s.status,
            "text": s.text,
            "token_count": s.token_count,
            "backend": s.backend,
            "model": s.model,
            "prompt_version": s.prompt_version,
            "prompt_tokens": s.prompt_tokens,
            "completion_tokens": s.completion_tokens,
            "fingerprint": s.fingerprint,
            "scores": s.scores,
            "created_at": s.created_at,
            "updated_at": s.updated_at,
        }


def _assemblies(assemblies: QuerySet, thread_id: int, batch: int) -> Iterator[Record]:
    """The records with their items as shown, expanded a batch at a time (two queries a
    batch, ``compaction.selectors.items_expanded``; the plans, two more, ``plans_shown``)."""
    page: list[dict[str, Any]] = []
    for row in _keyset(assemblies, batch):
        page.append(row)
        if len(page) == batch:
            yield from _assembly_page(page, thread_id)
            page = []
    yield from _assembly_page(page, thread_id)


def _assembly_page(page: list[dict[str, Any]], thread_id: int) -> Iterator[Record]:
    shown = items_expanded(thread_id=thread_id, stored=[a["items"] for a in page])
    plans = plans_shown(thread_id=thread_id, stored=[a["plan"] for a in page])
    for a, items, plan in zip(page, shown, plans, strict=True):
        yield _assembly({**a, "items": items, "plan": plan})


def _assembly(a: dict[str, Any]) -> Record:
    return {
        "id": a["public_id"],
        "leaf_id": a["leaf__public_id"],
        "assembler_version": a["assembler_version"],
        "items": a["items"],
        "plan": a["plan"],
        "tokens": record_form.tokens_shown(a["tokens"], a["budget"]),
        "budget": record_form.budget_shown(
            budget_joined(a["budget"], a["budget_from__budget"]), a["assembler_version"]
        ),
        "rendered_hash": a["rendered_hash"],
        "snapshot_purged_at": a["rendered_purged_at"],
        "created_at": a["created_at"],
    }


def _event(e: AuditEvent) -> Record:
    return {
        "seq": e.pk,
        "actor_type": e.actor_type,
        "actor_id": e.actor_id,
        "action": e.action,
        "thread_id": e.thread_public_id or None,
        "object_ids": e.object_ids,
        "details": e.details,
        "created_at": e.created_at,
    }


def _deletion_request(r: DeletionRequest) -> Record:
    return {
        "id": r.public_id,
        "user_ref": r.user_ref or None,
        "thread_id": r.thread.public_id if r.thread else None,
        "message_id": r.message.public_id if r.message_id else None,
        "status": r.status,
        "created_at": r.created_at,
        "due_at": r.due_at,
        "decided_by": r.decided_by or None,
        "decided_at": r.decided_at,
        "rejection_reason": r.rejection_reason or None,
        "executed_at": r.executed_at,
        "proof": r.proof,
    }


@dataclass
class Export:
    """One export, begun (and audited) by ``export_begin``; ``chunks()`` streams it."""

    tenant: Tenant
    fmt: str
    thread: Thread | None = None
    user_ref: str | None = None
    batch: int = field(default_factory=lambda: settings.CONVMEM_EXPORT_BATCH_SIZE)
    counts: Counter = field(default_factory=Counter)

    @property
    def content_type(self) -> str:
        return FORMATS[self.fmt]

    @property
    def filename(self) -> str:
        subject = self.thread.public_id if self.thread else f"user-{self.user_ref}"
        slug = "".join(c if c.isalnum() or c in "-_" else "_" for c in subject)[:80]
        return f"convmem-export-{slug}.{self.fmt}"

    def response(self) -> HttpResponse | StreamingHttpResponse:
        """The export as a download (the API's and the admin's): streamed, except the PDF."""
        if self.fmt == "pdf":
            response: HttpResponse | StreamingHttpResponse = HttpResponse(
                self.pdf(), content_type=self.content_type
            )
        else:
            response = StreamingHttpResponse(self.chunks(), content_type=self.content_type)
        response["Content-Disposition"] = f'attachment; filename="{self.filename}"'
        return response

    def pdf(self) -> bytes:
        """The readable page printed; only for the ``pdf`` format."""
        return export_pdf(self)

    @property
    def subject(self) -> Record:
        if self.thread is not None:
            return {"tenant": self.tenant.name, "thread_id": self.thread.public_id}
        return {"tenant": self.tenant.name, "user_ref": self.user_ref}

    def threads(self) -> QuerySet[Thread]:
        rows = Thread.objects.select_related("active_leaf", "profile").filter(tenant=self.tenant)
        if self.thread is not None:
            return rows.filter(pk=self.thread.pk)
        return rows.filter(user_ref=self.user_ref)

    def _user_refs(self) -> list[str]:
        return [self.thread.user_ref] if self.thread is not None else [self.user_ref or ""]

    def sections(self, thread: Thread) -> Iterator[tuple[str, Iterable[Record]]]:
        messages = messages_with_refs().filter(thread=thread).exclude(role=Role.ROOT)
        assemblies = AssemblyRecord.objects.filter(thread=thread).values(
            "pk",
            "public_id",
            "leaf__public_id",
            "assembler_version",
            "items",
            "tokens",
            "budget",
            "budget_from__budget",
            "rendered_hash",
            "plan",
            "rendered_purged_at",
            "created_at",
        )
        events = AuditEvent.objects.filter(thread_public_id=thread.public_id, tenant=self.tenant)
        yield "message", map(_message, _keyset(messages, self.batch))
        yield "summary", _summaries(thread, self.batch)
        yield "assembly", _assemblies(assemblies, thread.pk, self.batch)
        yield "audit_event", map(_event, _keyset(events, self.batch))

    def subject_events(self) -> Iterator[Record]:
        """Events about the end user rather than one thread (user exports, holds, requests)."""
        events = AuditEvent.objects.filter(
            tenant=self.tenant, thread_public_id="", details__user_ref__in=self._user_refs()
        )
        return map(_event, _keyset(events, self.batch))

    def deletion_requests(self) -> Iterator[Record]:
        requests = DeletionRequest.objects.filter(tenant=self.tenant).filter(
            Q(thread__in=self.threads()) | Q(user_ref__in=self._user_refs())
        )
        return map(
            _deletion_request, _keyset(requests.select_related("thread", "message"), self.batch)
        )

    def chunks(self, on_record: OnRecord | None = None) -> Iterator[str]:
        """The export as text chunks of about ``CHUNK_CHARS``; ``on_record(type)`` per record.
        For ``pdf``, the page it prints."""
        encodings = {
            "json": self._json,
            "jsonl": self._jsonl,
            "html": self._html,
            "pdf": self._html,
        }
        pieces = encodings[self.fmt]()
        return _buffered(self._counting(pieces, on_record))

    def _counting(
        self, pieces: Iterator[tuple[str | None, str]], on_record: OnRecord | None
    ) -> Iterator[str]:
        for kind, text in pieces:
            if kind is not None:
                self.counts[kind] += 1
                if on_record is not None:
                    on_record(kind)
            yield text

    def _header(self) -> Record:
        return {"schema": SCHEMA, "generated_at": timezone.now(), "subject": self.subject}

    def _final_counts(self) -> dict[str, int]:
        kinds = (
            "thread",
            "message",
            "summary",
            "assembly",
            "audit_event",
            "subject_event",
            "deletion_request",
        )
        return {kind: self.counts[kind] for kind in kinds}

    def _json(self) -> Iterator[tuple[str | None, str]]:
        yield None, _dumps(self._header())[:-1] + ',"threads":['
        for index, thread in enumerate(_keyset(self.threads(), self.batch)):
            # The thread's own fields, left open for its sections.
            yield "thread", ("," if index else "") + _dumps(_thread(thread))[:-1]
            for kind, rows in self.sections(thread):
                yield None, f',"{SECTIONS[kind]}":['
                yield from _json_array(kind, rows)
                yield None, "]"
            yield None, "}"
        yield None, '],"subject_events":['
        yield from _json_array("subject_event", self.subject_events())
        yield None, '],"deletion_requests":['
        yield from _json_array("deletion_request", self.deletion_requests())
        yield None, "]"
        yield None, ',"counts":' + _dumps(self._final_counts()) + "}\n"

    def _html(self) -> Iterator[tuple[str | None, str]]:
        return HtmlExport(self).pieces()

    def _jsonl(self) -> Iterator[tuple[str | None, str]]:
        yield None, _dumps({"type": "export", **self._header()}) + "\n"
        for thread in _keyset(self.threads(), self.batch):
            yield "thread", _dumps({"type": "thread", **_thread(thread)}) + "\n"
            for kind, rows in self.sections(thread):
                for row in rows:
                    line = {"type": kind, "thread_id": thread.public_id, **row}
                    yield kind, _dumps(line) + "\n"
        for row in self.subject_events():
            yield "subject_event", _dumps({"type": "subject_event", **row}) + "\n"
        for row in self.deletion_requests():
            yield "deletion_request", _dumps({"type": "deletion_request", **row}) + "\n"
        yield None, _dumps({"type": "end", "counts": self._final_counts()}) + "\n"


def _json_array(kind: str, rows: Iterable[Record]) -> Iterator[tuple[str, str]]:
    for index, row in enumerate(rows):
        yield kind, ("," if index else "") + _dumps(row)


def _buffered(pieces: Iterable[str]) -> Iterator[str]:
    buffer: list[str] = []
    size = 0
    for piece in pieces:
        buffer.append(piece)
        size += len(piece)
        if size >= CHUNK_CHARS:
            yield "".join(buffer)
            buffer, size = [], 0
    if buffer:
        yield "".join(buffer)


def export_begin(
    *,
    tenant: Tenant,
    actor: Actor,
    thread: Thread | None = None,
    user_ref: str | None = None,
    fmt: str = "json",
    user: Any = None,
) -> Export:
    """Start an export of ``thread`` or of every thread of ``user_ref`` and record
    ``export.made`` (committed before the first byte is sent, so every export is on record).

    ``user``: the staff member exporting from the admin, who needs ``audit.export_history``
    (API callers are checked for the ``export`` scope by the view).
    """
    if user is not None and not user.has_perm(EXPORT_PERMISSION):
        raise PermissionDenied(f"{user.get_username()} lacks the {EXPORT_PERMISSION} permission.")
    if fmt not in FORMATS:
        raise InvalidRequest(f"format must be one of {', '.join(FORMATS)}.", code="invalid_format")
    if (thread is None) == (not user_ref):
        raise InvalidRequest("Export either a thread or a user_ref.", code="invalid_subject")
    if thread is not None and thread.tenant_id != tenant.pk:
        raise InvalidRequest("Unknown thread.", code="unknown_thread")
    export = Export(tenant=tenant, fmt=fmt, thread=thread, user_ref=user_ref or None)
    with transaction.atomic():
        audit_event_record(
            actor=actor,
            action="export.made",
            tenant_id=tenant.pk,
            thread_public_id=thread.public_id if thread else "",
            object_ids=[thread.public_id] if thread else [],
            details={"format": fmt, **({"user_ref": user_ref} if user_ref else {})},
        )
    return export
