"""Deletion requests: intake API, decisions gated by permissions, legal holds, execution, proof."""

import json
from datetime import timedelta

import pytest
from django.core.exceptions import PermissionDenied
from django.utils.dateparse import parse_datetime

from audit import deletion
from audit.deletion import (
    InvalidTransition,
    LegalHoldBlocks,
    deletion_request_approve,
    deletion_request_execute,
    deletion_request_file,
    deletion_request_footprint,
    deletion_request_perform,
    deletion_request_reject,
)
from audit.models import DeletionRequest
from audit.services import legal_hold_place
from auditlog.models import AuditEvent
from compaction.models import AssemblyRecord, ContentBlob, RenderedPiece, Summary
from tests.audit.conftest import (
    OPERATOR,
    branched_thread,
    grant,
    ready_memo,
    record_assembly,
    staff,
    visible,
)
from threads.erasure import ERASED
from threads.models import IdempotencyRecord, Thread

pytestmark = pytest.mark.django_db


def events(request: DeletionRequest) -> list[str]:
    return list(
        AuditEvent.objects.filter(object_ids__icontains=request.public_id)
        .order_by("pk")
        .values_list("action", flat=True)
    )


def test_filing_through_the_api(acme, globex, idem):
    response = acme.client.post(
        "/api/v1/deletion-requests",
        {"user_ref": "u-7", "reason": "GDPR art. 17"},
        format="json",
        **idem(),
    )

    assert response.status_code == 202, response.data
    body = response.data
    assert body["id"].startswith("del_")
    assert (body["user_ref"], body["thread_id"], body["status"]) == ("u-7", None, "received")
    due = parse_datetime(body["due_at"]) - parse_datetime(body["created_at"])
    assert due == timedelta(days=30)
    request = DeletionRequest.objects.get(public_id=body["id"])
    assert events(request) == ["deletion_request.filed"]

    shown = acme.client.get(f"/api/v1/deletion-requests/{body['id']}")
    assert shown.status_code == 200
    assert shown.data["status"] == "received"
    assert globex.client.get(f"/api/v1/deletion-requests/{body['id']}").status_code == 404


def test_filing_for_a_thread(acme, globex):
    mine = branched_thread(acme.tenant)
    theirs = branched_thread(globex.tenant)

    response = acme.client.post(
        "/api/v1/deletion-requests", {"thread_id": mine.public_id}, format="json"
    )
    assert response.status_code == 202
    assert (response.data["thread_id"], response.data["user_ref"]) == (mine.public_id, None)

    response = acme.client.post(
        "/api/v1/deletion-requests", {"thread_id": theirs.public_id}, format="json"
    )
    assert (response.status_code, response.data["code"]) == (400, "unknown_thread")


@pytest.mark.parametrize(
    "body", [{}, {"user_ref": "u", "thread_id": "thr_x"}, {"user_ref": ""}, {"reason": "x"}]
)
def test_filing_needs_exactly_one_subject(acme, body):
    response = acme.client.post("/api/v1/deletion-requests", body, format="json")
    assert response.status_code == 400
    assert not DeletionRequest.objects.exists()


def test_only_compliance_can_decide_and_execute(acme, officer, support):
    request = deletion_request_file(tenant=acme.tenant, actor=acme.actor, user_ref="u-1")
    nobody = staff("nobody")
    approver = staff("approver")
    grant(approver, "approve_deletionrequest")

    for user in (support, nobody):
        with pytest.raises(PermissionDenied):
            deletion_request_approve(request=request, user=user)
        with pytest.raises(PermissionDenied):
            deletion_request_reject(request=request, user=user, reason="no")
    deletion_request_approve(request=request, user=approver)
    for user in (support, approver):
        with pytest.raises(PermissionDenied):
            deletion_request_execute(request=request, user=user)

    executed = deletion_request_execute(request=request, user=officer)
    assert executed.execution_requested_by == "officer"
    assert events(request) == [
        "deletion_request.filed",
        "deletion_request.approved",
        "deletion_request.execution_requested",
    ]


def test_rejection_needs_a_reason_and_ends_the_request(acme, officer):
    request = deletion_request_file(tenant=acme.tenant, actor=acme.actor, user_ref="u-1")
    with pytest.raises(InvalidTransition):
        deletion_request_reject(request=request, user=officer, reason=" ")

    rejected = deletion_request_reject(request=request, user=officer, reason="not our user")

    assert (rejected.status, rejected.rejection_reason) == ("rejected", "not our user")
    with pytest.raises(InvalidTransition):
        deletion_request_approve(request=request, user=officer)
    with pytest.raises(InvalidTransition):
        deletion_request_execute(request=request, user=officer)
    shown = acme.client.get(f"/api/v1/deletion-requests/{request.public_id}").data
    assert (shown["status"], shown["rejection_reason"]) == ("rejected", "not our user")


def test_execution_waits_for_approval(acme, officer):
    request = deletion_request_file(tenant=acme.tenant, actor=acme.actor, user_ref="u-1")
    with pytest.raises(InvalidTransition):
        deletion_request_execute(request=request, user=officer)


def test_legal_hold_refuses_execution_and_the_refusal_is_recorded(acme, officer):
    thread = branched_thread(acme.tenant, user_ref="held")
    request = deletion_request_file(tenant=acme.tenant, actor=acme.actor, user_ref="held")
    deletion_request_approve(request=request, user=officer)
    legal_hold_place(tenant=acme.tenant, actor=OPERATOR, reason="litigation", thread=thread)

    with pytest.raises(LegalHoldBlocks, match="litigation"):
        deletion_request_execute(request=request, user=officer)

    request.refresh_from_db()
    assert request.status == "approved"
    assert request.progress["state"] == "refused"
    assert events(request)[-1] == "deletion_request.execution_refused"
    assert deletion_request_perform(request_id=request.pk)
    assert not any(m.erased_at for m in visible(thread))


def test_execution_is_queued_after_commit(acme, officer, django_capture_on_commit_callbacks):
    request = deletion_request_file(tenant=acme.tenant, actor=acme.actor, user_ref="u-1")
    deletion_request_approve(request=request, user=officer)
    with django_capture_on_commit_callbacks() as callbacks:
        deletion_request_execute(request=request, user=officer)
    assert len(callbacks) == 1


def subject_data(acme, idem, user_ref: str, word: str) -> Thread:
    """A thread of ``user_ref`` made through the API (stored idempotent responses included),
    with a summary and an assembly (snapshot, blobs)."""
    created = acme.client.post(
        "/api/v1/threads", {"user_ref": user_ref, "title": f"About {word}"}, format="json", **idem()
    )
    thread_id = created.data["id"]
    for role, text in (("user", f"I am {word}"), ("assistant", f"Hello {word}")):
        response = acme.client.post(
            f"/api/v1/threads/{thread_id}/messages",
            {"role": role, "content": text},
            format="json",
            **idem(),
        )
        assert response.status_code == 201
    thread = Thread.objects.get(public_id=thread_id)
    nodes = visible(thread)
    ready_memo(thread, nodes[0:2], f"memo: {word}")
    record_assembly(thread, system="Shared system prompt.", retrieved=f"Profile of {word}")
    return thread


def test_execution_erases_every_copy_and_records_proof(acme, officer, idem):
    first = subject_data(acme, idem, "subject", "Alice")
    second = subject_data(acme, idem, "subject", "Alice")
    other = subject_data(acme, idem, "someone-else", "Bob")
    request = deletion_request_file(tenant=acme.tenant, actor=acme.actor, user_ref="subject")
    deletion_request_approve(request=request, user=officer)
    deletion_request_execute(request=request, user=officer)

    assert deletion_request_perform(request_id=request.pk)

    request.refresh_from_db()
    assert request.status == "executed"
    assert request.executed_at
    for thread in (first, second):
        thread.refresh_from_db()
        assert (thread.title, thread.metadata) == ("", {})
        assert all(m.content == ERASED and m.erased_at for m in visible(thread))
        summary = Summary.objects.get(thread=thread)
        assert (summary.text, summary.status) == (ERASED, "stale")
        assembly = AssemblyRecord.objects.get(thread=thread)
        assert assembly.rendered_pieces is None
        assert assembly.rendered_purged_at
        for record in IdempotencyRecord.objects.filter(thread=thread):
            assert "Alice" not in json.dumps(record.response_body)
    assert not ContentBlob.objects.filter(text__contains="Alice").exists()
    assert ContentBlob.objects.get(text="Shared system prompt.").erased_at is None
    # The kept inputs' pieces went with the snapshots; the other subject's stay.
    assert not RenderedPiece.objects.filter(thread__in=(first, second)).exists()
    assert RenderedPiece.objects.filter(thread=other).exists()
    assert "Bob" in visible(other)[0].content
    assert Summary.objects.get(thread=other).text == "memo: Bob"

    proof = request.proof
    assert proof["approved_by"] == "officer"
    assert proof["executed_by"] == "officer"
    assert proof["counts"] == {
        "threads": 2,
        "messages": 4,
        "summaries": 2,
        "assembly_snapshots": 2,
        "idempotency_responses": 6,
        "content_blobs": 1,
    }
    assert sorted(proof["erased"]["threads"]) == sorted([first.public_id, second.public_id])
    assert "Alice" not in json.dumps(proof)
    assert events(request)[-1] == "deletion_request.executed"
    shown = acme.client.get(f"/api/v1/deletion-requests/{request.public_id}").data
    assert shown["status"] == "executed"
    assert shown["proof"]["counts"]["messages"] == 4

    replay = acme.client.get(
        f"/api/v1/assemblies/{AssemblyRecord.objects.get(thread=first).public_id}/replay"
    ).data
    assert not replay["matches"]
    assert "content erased since" in replay["reason"]
    again = acme.client.post(
        f"/api/v1/threads/{first.public_id}/messages",
        {"role": "user", "content": "I am Alice"},
        format="json",
        HTTP_IDEMPOTENCY_KEY=IdempotencyRecord.objects.filter(thread=first, response_status=201)
        .exclude(response_body__has_key="user_ref")
        .first()
        .key,
    )
    assert again.status_code == 201
    assert again.data["content"] == ERASED
    assert again.data["erased"]


def test_execution_is_resumable_and_idempotent(acme, officer, idem):
    threads = [subject_data(acme, idem, "subject", "Carol") for _ in range(3)]
    request = deletion_request_file(tenant=acme.tenant, actor=acme.actor, user_ref="subject")
    deletion_request_approve(request=request, user=officer)
    deletion_request_execute(request=request, user=officer)

    assert not deletion_request_perform(request_id=request.pk, budget_seconds=0)
    request.refresh_from_db()
    assert request.status == "approved"
    assert request.progress["threads_done"] == 1
    assert request.progress["threads_total"] == 3

    while not deletion_request_perform(request_id=request.pk, budget_seconds=0):
        pass
    request.refresh_from_db()
    proof = request.proof
    assert deletion_request_perform(request_id=request.pk)
    request.refresh_from_db()
    assert request.status == "executed"
    assert request.proof == proof
    assert proof["counts"]["threads"] == 3
    assert proof["counts"]["messages"] == 6
    assert sorted(proof["erased"]["threads"]) == sorted(t.public_id for t in threads)
    assert AuditEvent.objects.filter(action="deletion_request.thread_erased").count() == 3
    assert events(request).count("deletion_request.executed") == 1


def test_a_hold_placed_after_queueing_stops_the_task(acme, officer, idem):
    thread = subject_data(acme, idem, "subject", "Dave")
    request = deletion_request_file(tenant=acme.tenant, actor=acme.actor, thread=thread)
    deletion_request_approve(request=request, user=officer)
    deletion_request_execute(request=request, user=officer)
    legal_hold_place(tenant=acme.tenant, actor=OPERATOR, reason="regulator", user_ref="subject")

    assert deletion_request_perform(request_id=request.pk)

    request.refresh_from_db()
    assert request.status == "approved"
    assert request.progress["state"] == "refused"
    assert "Dave" in visible(thread)[0].content


def test_footprint_for_the_review_page(acme, acme_exporter, officer, idem):
    thread = subject_data(acme, idem, "subject", "Erin")
    acme_exporter.client.get(f"/api/v1/threads/{thread.public_id}/export")
    request = deletion_request_file(tenant=acme.tenant, actor=acme.actor, user_ref="subject")

    footprint = deletion_request_footprint(request)

    assert (footprint.threads, footprint.messages, footprint.messages_already_erased) == (1, 2, 0)
    assert (footprint.summaries, footprint.assemblies, footprint.assembly_snapshots) == (1, 1, 1)
    assert footprint.idempotency_responses == 3
    assert footprint.exports == 1
    assert footprint.legal_holds == []


def test_admin_actions_go_through_the_services(acme, officer, support, client):
    request = deletion_request_file(tenant=acme.tenant, actor=acme.actor, user_ref="u-1")
    url = "/admin/audit/deletionrequest/"
    client.force_login(support)
    client.post(url, {"action": "approve", "_selected_action": [request.pk]})
    request.refresh_from_db()
    assert request.status == "received"

    client.force_login(officer)
    client.post(url, {"action": "approve", "_selected_action": [request.pk]})
    request.refresh_from_db()
    assert request.status == "approved"
    assert request.decided_by == "officer"
    assert deletion.APPROVE_PERMISSION == "audit.approve_deletionrequest"
