"""The audit log is append-only, written with the change it records, and content-free."""

import pytest
from django.contrib.admin.models import CHANGE, LogEntry
from django.contrib.admin.sites import site
from django.db import IntegrityError
from django.test import RequestFactory

from auditlog.events import Actor
from auditlog.models import AppendOnlyError, AuditEvent
from tests.conftest import SYSTEM, make_thread
from threads import services
from threads.models import Message

pytestmark = pytest.mark.django_db


def test_events_cannot_be_changed_or_deleted(acme):
    make_thread(acme.tenant, turns=1)
    event = AuditEvent.objects.order_by("pk").first()

    event.action = "forged"
    with pytest.raises(AppendOnlyError):
        event.save()
    with pytest.raises(AppendOnlyError):
        event.delete()
    with pytest.raises(AppendOnlyError):
        AuditEvent.objects.filter(pk=event.pk).update(action="forged")
    with pytest.raises(AppendOnlyError):
        AuditEvent.objects.all().delete()

    assert AuditEvent.objects.get(pk=event.pk).action == "thread.created"


def test_admin_cannot_add_change_or_delete_events(acme, officer, admin_user):
    make_thread(acme.tenant)
    admin = site._registry[AuditEvent]
    for user in (officer, admin_user):
        request = RequestFactory().get("/")
        request.user = user
        assert not admin.has_add_permission(request)
        assert not admin.has_change_permission(request)
        assert not admin.has_delete_permission(request)
    assert admin.has_view_permission(request)


def test_admin_changelist_shows_events_read_only(acme, admin_client):
    make_thread(acme.tenant)
    response = admin_client.get("/admin/auditlog/auditevent/")
    assert response.status_code == 200
    assert b"thread.created" in response.content
    assert b"delete_selected" not in response.content


def test_each_write_records_its_event(acme):
    thread = make_thread(acme.tenant, turns=2)
    first = Message.objects.filter(thread=thread).exclude(role="root").order_by("pk").first()
    services.message_edit(
        thread=thread, actor=SYSTEM, message_public_id=first.public_id, content="again"
    )
    services.thread_update(
        thread=thread, actor=SYSTEM, switch_leaf=True, active_leaf_public_id=first.public_id
    )

    actions = list(
        AuditEvent.objects.filter(thread_public_id=thread.public_id)
        .order_by("pk")
        .values_list("action", flat=True)
    )
    assert actions == [
        "thread.created",
        "message.appended",
        "message.appended",
        "message.edited",
        "thread.branch_switched",
    ]


def test_a_failed_append_writes_no_event(acme, idem):
    thread = make_thread(acme.tenant, turns=1)
    before = AuditEvent.objects.count(), Message.objects.count()

    response = acme.client.post(
        f"/api/v1/threads/{thread.public_id}/messages",
        {"role": "user", "content": "hello", "parent_id": "msg_unknown"},
        format="json",
        **idem(),
    )

    assert response.status_code == 400
    assert (AuditEvent.objects.count(), Message.objects.count()) == before


@pytest.mark.django_db(transaction=True)
def test_an_event_that_cannot_be_written_undoes_the_append(acme):
    """Event and change share one transaction (on PostgreSQL, one statement): if the event
    fails, the message is not kept. (Real transactions: a failed statement inside the test's
    own transaction would leave it aborted.)"""
    thread = make_thread(acme.tenant, turns=1)
    leaf = thread.active_leaf_id
    before = AuditEvent.objects.count(), Message.objects.count()

    with pytest.raises(IntegrityError):
        services.message_append(
            thread=thread, actor=Actor("system", ""), role="user", content="never kept"
        )

    thread.refresh_from_db()
    assert thread.active_leaf_id == leaf
    assert (AuditEvent.objects.count(), Message.objects.count()) == before
    assert not Message.objects.filter(content="never kept").exists()


def test_events_carry_ids_not_content(acme):
    thread = make_thread(acme.tenant)
    services.message_append(
        thread=thread, actor=SYSTEM, role="user", content="my secret is swordfish"
    )
    assert not AuditEvent.objects.filter(details__icontains="swordfish").exists()
    assert not AuditEvent.objects.filter(object_ids__icontains="swordfish").exists()


def test_admin_log_entries_name_messages_by_id_only(acme, admin_user):
    thread = make_thread(acme.tenant)
    message = services.message_append(
        thread=thread, actor=SYSTEM, role="user", content="my secret is swordfish"
    )
    request = RequestFactory().post("/")
    request.user = admin_user

    site._registry[Message].log_change(request, message, "looked at it")
    LogEntry.objects.log_actions(admin_user.pk, [message], CHANGE)

    reprs = set(LogEntry.objects.values_list("object_repr", flat=True))
    assert reprs == {message.public_id}
    assert str(message) == message.public_id
