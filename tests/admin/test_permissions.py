"""Who sees what: Support reads conversations; Compliance also exports and handles deletion
requests; a staff user in neither group sees nothing of conversations."""

import pytest
from django.test import Client
from django.urls import reverse

from audit.deletion import deletion_request_file
from audit.models import DeletionRequest
from auditlog.models import AuditEvent
from tests.admin.conftest import Branched
from tests.conftest import SYSTEM


def modules(client: Client) -> set[str]:
    response = client.get(reverse("admin:index"))
    assert response.status_code == 200
    return {
        f"{app['app_label']}.{model['object_name']}"
        for app in response.context["app_list"]
        for model in app["models"]
    }


def test_a_staff_user_without_a_group_sees_no_conversation_module(plain_staff: Client):
    assert not {
        m for m in modules(plain_staff) if m.split(".")[0] in {"threads", "compaction", "audit"}
    }


def test_support_sees_conversations_but_not_deletion_requests(support: Client):
    seen = modules(support)

    assert {
        "threads.Thread",
        "threads.Message",
        "compaction.Summary",
        "compaction.AssemblyRecord",
    } <= seen
    assert "audit.DeletionRequest" not in seen


def test_compliance_sees_deletion_requests(compliance: Client):
    assert {"threads.Thread", "audit.DeletionRequest", "auditlog.AuditEvent"} <= modules(compliance)


@pytest.fixture
def urls(branched: Branched) -> dict[str, str]:
    thread, message = branched.thread, branched.u2
    request = deletion_request_file(tenant=thread.tenant, actor=SYSTEM, thread=thread)
    return {
        "threads": reverse("admin:threads_thread_changelist"),
        "thread": reverse("admin:threads_thread_change", args=[thread.public_id]),
        "branch": reverse(
            "admin:threads_thread_branch", args=[thread.public_id, message.public_id]
        ),
        "message": reverse("admin:threads_message_change", args=[message.public_id]),
        "messages": reverse("admin:threads_message_changelist") + "?q=refund",
        "export": reverse("admin:threads_thread_export", args=[thread.public_id]),
        "user_export": reverse("admin:threads_thread_export_user"),
        "deletion": reverse("admin:audit_deletionrequest_change", args=[request.public_id]),
        "approve": reverse(
            "admin:audit_deletionrequest_step",
            kwargs={"object_id": request.public_id, "step": "approve"},
        ),
        "deletions": reverse("admin:audit_deletionrequest_changelist"),
    }


def test_a_staff_user_without_a_group_is_refused_everywhere(
    plain_staff: Client, urls: dict[str, str]
):
    for name, url in urls.items():
        if name != "approve":
            assert plain_staff.get(url).status_code == 403, name
    assert plain_staff.post(urls["approve"]).status_code == 403
    assert not AuditEvent.objects.filter(actor_id="pat-plain").exists()


def test_support_reads_but_cannot_export_or_see_deletions(support: Client, urls: dict[str, str]):
    for name in ("threads", "thread", "branch", "message", "messages"):
        assert support.get(urls[name]).status_code == 200, name
    for name in ("export", "user_export", "deletion", "deletions"):
        assert support.get(urls[name]).status_code == 403, name
    assert support.post(urls["approve"]).status_code == 403
    assert not AuditEvent.objects.filter(action="export.made").exists()
    assert DeletionRequest.objects.get().status == "received"


def test_compliance_exports_a_thread_through_the_streamed_export(
    compliance: Client, branched: Branched, urls: dict[str, str]
):
    response = compliance.get(urls["export"])

    assert response.status_code == 200
    assert response.streaming
    body = b"".join(response.streaming_content).decode()
    assert branched.a2b.public_id in body  # every branch
    assert branched.u2.public_id in body
    assert "attachment" in response["Content-Disposition"]
    event = AuditEvent.objects.get(action="export.made")
    assert (event.actor_type, event.actor_id) == ("staff", "cleo-compliance")


def test_compliance_exports_an_end_user(
    compliance: Client, branched: Branched, urls: dict[str, str]
):
    form = compliance.get(urls["user_export"])
    response = compliance.get(
        urls["user_export"],
        {"tenant": branched.thread.tenant_id, "user_ref": "user-7", "format": "jsonl"},
    )

    assert form.status_code == 200
    assert response.status_code == 200
    lines = b"".join(response.streaming_content).decode().splitlines()
    assert any(branched.thread.public_id in line for line in lines)
    assert AuditEvent.objects.get(action="export.made").details["user_ref"] == "user-7"
