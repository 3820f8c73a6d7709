"""Importing conversation exports: each conversation becomes a thread, written through
``threads.services.thread_import`` (one transaction per conversation), once.

Idempotent: a conversation already imported for the tenant (``ImportedConversation``: source
and source id, unique per tenant) is skipped, so importing a file twice creates nothing new;
two imports of one file at once make each conversation once (the loser's transaction rolls
back on the unique constraint and reports it skipped).
"""

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from django.db import IntegrityError, transaction

from auditlog.events import Actor
from convmem.errors import InvalidRequest
from convmem.models import ModelProfile, Tenant
from imports import formats
from imports.formats import Conversation, Refused
from imports.models import ImportedConversation
from threads.services import profile_for_new_thread, thread_import

IMPORTED, SKIPPED, FAILED = "imported", "skipped", "failed"


@dataclass(frozen=True)
class ImportResult:
    source_id: str
    status: str  # imported | skipped | failed
    thread_id: str | None = None
    messages: int = 0
    detail: str = ""


@dataclass(frozen=True)
class ImportReport:
    format: str
    results: list[ImportResult]

    def count(self, status: str) -> int:
        return sum(1 for r in self.results if r.status == status)


def conversations_import(
    *,
    tenant: Tenant,
    actor: Actor,
    data: Any,
    fmt: str | None = None,
    user_ref: str | None = None,
    on_result: Callable[[ImportResult], None] | None = None,
) -> ImportReport:
    """Import every conversation of a parsed export file (``fmt`` None: detected).

    ``user_ref``: the end user the threads belong to; needed for ChatGPT and Claude exports,
    which name none; for a convmem export it replaces the exported one. A conversation that
    cannot be imported is reported ``failed`` with the reason, and the others go on.
    ``on_result`` is called after each conversation (progress bars).
    """
    fmt = fmt or formats.detect(data)
    if fmt not in formats.FORMATS:
        raise InvalidRequest(
            f"format must be one of {', '.join(formats.FORMATS)}.", code="invalid_format"
        )
    if fmt != formats.CONVMEM and not user_ref:
        raise InvalidRequest(
            f"A {fmt} export names no end user: give the user_ref its threads belong to.",
            code="user_ref_required",
        )
    results = []
    for item in formats.conversations(data, fmt):
        result = _import_one(tenant=tenant, actor=actor, item=item, user_ref=user_ref)
        results.append(result)
        if on_result is not None:
            on_result(result)
    return ImportReport(format=fmt, results=results)


def _import_one(
    *, tenant: Tenant, actor: Actor, item: Conversation | Refused, user_ref: str | None
) -> ImportResult:
    if isinstance(item, Refused):
        return ImportResult(item.source_id, FAILED, detail=item.reason)
    done = ImportedConversation.objects.filter(
        tenant=tenant, source=item.source, source_id=item.source_id
    ).first()
    if done is not None:
        return _skipped(item, done)
    try:
        with transaction.atomic():
            thread = thread_import(
                tenant=tenant,
                actor=actor,
                user_ref=user_ref or item.user_ref or "",
                turns=item.turns,
                leaf_key=item.leaf_key,
                title=item.title,
                metadata=item.metadata,
                profile=_profile(tenant, item.profile),
                system_prompts=item.system_prompts,
            )
            ImportedConversation.objects.create(
                tenant=tenant, source=item.source, source_id=item.source_id, thread=thread
            )
    except InvalidRequest as error:
        return ImportResult(item.source_id, FAILED, detail=str(error.detail))
    except IntegrityError:
        # Another import of the same conversation committed first.
        done = ImportedConversation.objects.filter(
            tenant=tenant, source=item.source, source_id=item.source_id
        ).first()
        if done is None:
            raise
        return _skipped(item, done)
    return ImportResult(item.source_id, IMPORTED, thread.public_id, messages=len(item.turns))


def _skipped(item: Conversation, done: ImportedConversation) -> ImportResult:
    thread_id = done.thread.public_id if done.thread is not None else None
    return ImportResult(item.source_id, SKIPPED, thread_id, detail="imported before")


def _profile(tenant: Tenant, name: str | None) -> ModelProfile | None:
    """The tenant's profile of that name if it has one, else its default."""
    if name and ModelProfile.objects.filter(tenant=tenant, name=name).exists():
        return profile_for_new_thread(tenant=tenant, name=name)
    return profile_for_new_thread(tenant=tenant, name=None)
