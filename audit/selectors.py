"""Reads of the audit app."""

from django.db.models import Q, QuerySet
from django.shortcuts import get_object_or_404

from audit.models import DeletionRequest, LegalHold
from convmem.models import Tenant
from threads.models import Thread


def deletion_request_get(*, tenant: Tenant, public_id: str) -> DeletionRequest:
    """The tenant's deletion request; another tenant's is a 404 like a missing one."""
    return get_object_or_404(
        DeletionRequest.objects.select_related("thread"), tenant=tenant, public_id=public_id
    )


def legal_holds_active(
    *, tenant: Tenant, user_refs: set[str], threads: set[int]
) -> list[LegalHold]:
    """Active holds on any of these end users or thread ids of the tenant."""
    if not user_refs and not threads:
        return []
    return list(
        LegalHold.objects.filter(tenant=tenant, active=True).filter(
            Q(user_ref__in=user_refs) | Q(thread_id__in=threads)
        )
    )


def held_threads(*, tenant: Tenant) -> QuerySet[Thread]:
    """The tenant's threads under an active legal hold (directly or through their user)."""
    holds = LegalHold.objects.filter(tenant=tenant, active=True)
    return Thread.objects.filter(tenant=tenant).filter(
        Q(pk__in=holds.filter(thread__isnull=False).values("thread_id"))
        | Q(user_ref__in=holds.exclude(user_ref="").values("user_ref"))
    )


def deletion_request_threads(request: DeletionRequest) -> QuerySet[Thread]:
    """The threads a deletion request covers: its thread, or every thread of its user_ref."""
    if request.thread_id is not None:
        return Thread.objects.filter(pk=request.thread_id)
    return Thread.objects.filter(tenant_id=request.tenant_id, user_ref=request.user_ref)
