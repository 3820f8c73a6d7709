"""Threads erased before ``Thread.erased_at`` existed get the marker from the data migration
``audit.0005_erased_at_for_threads_erased_before_it``: whole-thread erasures found in the audit
trail (or an API delete) are marked; a redaction of one message leaves its thread unmarked."""

import importlib

import pytest
from django.apps import apps

from audit.deletion import (
    deletion_request_approve,
    deletion_request_execute,
    deletion_request_file,
    deletion_request_perform,
    deletion_self_service,
)
from auditlog.models import AuditEvent
from tests.audit.conftest import branched_thread, visible
from threads.models import Thread

pytestmark = pytest.mark.django_db

backfill = importlib.import_module(
    "audit.migrations.0005_erased_at_for_threads_erased_before_it"
).mark_erased_threads


def erased_at(thread: Thread):
    return Thread.objects.values_list("erased_at", flat=True).get(pk=thread.pk)


def erasure_time(thread: Thread):
    """When the audit trail says the thread was erased."""
    return (
        AuditEvent.objects.filter(
            action="deletion_request.thread_erased", thread_public_id=thread.public_id
        )
        .get()
        .created_at
    )


def test_every_thread_erased_whole_is_marked_and_a_redacted_one_is_not(acme, officer):
    by_request = branched_thread(acme.tenant, user_ref="asked")
    request = deletion_request_file(tenant=acme.tenant, actor=acme.actor, user_ref="asked")
    deletion_request_approve(request=request, user=officer)
    deletion_request_execute(request=request, user=officer)
    assert deletion_request_perform(request_id=request.pk)
    deleted = branched_thread(acme.tenant, user_ref="deleted")
    deletion_self_service(tenant=acme.tenant, actor=acme.actor, thread=deleted)
    redacted = branched_thread(acme.tenant, user_ref="redacted")
    deletion_self_service(
        tenant=acme.tenant, actor=acme.actor, thread=redacted, message=visible(redacted)[0]
    )
    live = branched_thread(acme.tenant, user_ref="live")
    # As they were before the field existed.
    Thread.objects.update(erased_at=None)

    backfill(apps, None)

    assert erased_at(by_request) == erasure_time(by_request)
    assert erased_at(deleted) == erasure_time(deleted)
    assert erased_at(redacted) is None
    assert erased_at(live) is None


def test_a_marker_already_set_is_kept(acme, officer):
    thread = branched_thread(acme.tenant, user_ref="asked")
    deletion_self_service(tenant=acme.tenant, actor=acme.actor, thread=thread)
    before = erased_at(thread)

    backfill(apps, None)

    assert erased_at(thread) == before
