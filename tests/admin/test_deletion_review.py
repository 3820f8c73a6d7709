"""The deletion review page: footprint and legal hold before anything happens, then approve /
reject / execute as separate, permission-checked, audited POSTs, and the proof afterwards."""

import re

import pytest
from django.test import Client
from django.urls import reverse

from audit.deletion import deletion_request_file, deletion_request_perform
from audit.models import DeletionRequest
from audit.services import legal_hold_place
from auditlog.events import Actor
from auditlog.models import AuditEvent
from tests.admin.conftest import Branched
from tests.conftest import SYSTEM
from threads.models import Message


@pytest.fixture
def request_for(branched: Branched) -> DeletionRequest:
    return deletion_request_file(
        tenant=branched.thread.tenant, actor=SYSTEM, user_ref="user-7", reason="GDPR art. 17"
    )


def review_url(request: DeletionRequest) -> str:
    return reverse("admin:audit_deletionrequest_change", args=[request.public_id])


def step(client: Client, request: DeletionRequest, name: str, **data: str) -> None:
    url = reverse(
        "admin:audit_deletionrequest_step", kwargs={"object_id": request.public_id, "step": name}
    )
    response = client.post(url, data)
    assert response.status_code == 302
    assert response["Location"] == review_url(request)


def test_the_review_shows_the_footprint_before_anything_happens(
    compliance: Client, request_for: DeletionRequest
):
    response = compliance.get(review_url(request_for))

    assert response.status_code == 200
    footprint = response.context["footprint"]
    assert (footprint.threads, footprint.messages, footprint.legal_holds) == (1, 7, [])
    assert response.context["can_approve"]
    assert not response.context["can_execute"]
    html = response.content.decode()
    assert 'id="approve"' in html
    assert 'id="reject"' in html
    assert 'id="execute"' not in html
    assert 'id="no-hold"' in html
    request_for.refresh_from_db()
    assert request_for.status == "received"


def test_approve_then_execute_then_proof(compliance: Client, request_for: DeletionRequest):
    step(compliance, request_for, "approve")
    request_for.refresh_from_db()
    assert request_for.status == "approved"
    assert 'id="execute"' in compliance.get(review_url(request_for)).content.decode()

    step(compliance, request_for, "execute")
    running = compliance.get(review_url(request_for))
    assert running.context["running"]
    assert 'http-equiv="refresh"' in running.content.decode()
    # What the Celery task runs (audit.tasks.execute_deletion_request).
    assert deletion_request_perform(request_id=request_for.pk)

    done = compliance.get(review_url(request_for))
    assert done.context["proof"]["counts"]["messages"] == 7
    assert 'id="proof"' in done.content.decode()
    assert not Message.objects.filter(content__contains="refund").exists()
    actions = set(
        AuditEvent.objects.filter(actor_id="cleo-compliance").values_list("action", flat=True)
    )
    assert {"deletion_request.approved", "deletion_request.execution_requested"} <= actions


def test_the_proof_and_the_trail_read_as_words_not_code(
    compliance: Client, request_for: DeletionRequest, branched: Branched
):
    """Kinds by name ("Assembly snapshots"), counts and ids in tables, dates formatted: no
    stored keys, dicts or ISO timestamps."""
    step(compliance, request_for, "approve")
    step(compliance, request_for, "execute")
    running = compliance.get(review_url(request_for)).content.decode()
    deletion_request_perform(request_id=request_for.pk)

    html = compliance.get(review_url(request_for)).content.decode()

    assert "Queued, waiting for a worker" in running
    for words in (
        "Threads",
        "Messages",
        "Memos",
        "Assembly snapshots",
        "Stored API responses",
        "Stored prompts and retrieved texts",
        "Execution requested",
        "1 of 1 thread erased",
        "User ref",
    ):
        assert words in html, words
    proof = html[html.index('id="proof"') : html.index('id="trail"')]
    assert branched.u2.public_id in proof  # the erased ids, listed
    assert "7 ids" in proof
    trail = html[html.index('id="trail"') :]
    assert "Erased</dt><dd>Threads: 1, Messages: 7, Memos: 0" in trail
    for code in ("assembly_snapshots", "idempotency_responses", "content_blobs", "{&#x27;"):
        assert code not in html, code
    assert not re.search(r"\d{4}-\d\d-\d\dT\d\d:", html)  # no ISO timestamps


def test_reject_needs_a_reason(compliance: Client, request_for: DeletionRequest):
    step(compliance, request_for, "reject", reason="")
    request_for.refresh_from_db()
    assert request_for.status == "received"

    step(compliance, request_for, "reject", reason="Not the requester's data.")
    request_for.refresh_from_db()
    assert (request_for.status, request_for.rejection_reason) == (
        "rejected",
        "Not the requester's data.",
    )
    html = compliance.get(review_url(request_for)).content.decode()
    assert 'Reason for rejecting</dt><dd id="rejection-reason">Not the requester' in html


def test_an_approval_note_is_kept_and_shown_and_the_trail_says_yes(
    compliance: Client, request_for: DeletionRequest
):
    html = compliance.get(review_url(request_for)).content.decode()
    # The reason box belongs to Reject (and is required there), the note to Approve.
    reject = html.split('id="reject-form"')[1].split("</form>")[0]
    approve = html.split('id="approve-form"')[1].split("</form>")[0]
    assert 'name="reason"' in reject
    assert "required" in reject
    assert 'name="note"' in approve
    assert 'name="reason"' not in approve

    step(compliance, request_for, "approve", note="Identity checked by phone.")

    request_for.refresh_from_db()
    assert request_for.approval_note == "Identity checked by phone."
    html = compliance.get(review_url(request_for)).content.decode()
    assert '<dd id="approval-note">Identity checked by phone.</dd>' in html
    trail = html[html.index('id="trail"') :]
    assert "<dt>Approval note given</dt><dd>yes</dd>" in trail
    assert "True" not in trail
    event = AuditEvent.objects.get(action="deletion_request.approved")
    assert "Identity" not in str(event.details)  # the note stays on the request


def test_after_execution_what_is_left_agrees_with_the_proof(
    compliance: Client, request_for: DeletionRequest, branched: Branched
):
    step(compliance, request_for, "approve")
    step(compliance, request_for, "execute")
    deletion_request_perform(request_id=request_for.pk)

    html = compliance.get(review_url(request_for)).content.decode()

    left = html[html.index('id="footprint"') : html.index('id="proof"')]
    assert "What is left now" in left
    for counter in ("left-messages", "left-memos", "left-snapshots"):
        assert f'id="{counter}">0<' in left
    # Stored API responses: counted once, by the proof (content removed), not as data left.
    assert "Stored API responses" not in left.split("</table>")[0]
    assert 'class="cm-badge bad cm-erased">erased</span>' in left
    branched.thread.refresh_from_db()
    assert branched.thread.erased_at is not None
    listing = compliance.get(reverse("admin:threads_thread_changelist")).content.decode()
    assert 'cm-erased">erased</span>' in listing
    erased = compliance.get(reverse("admin:threads_thread_changelist"), {"erased": "yes"})
    assert [t.pk for t in erased.context["cl"].result_list] == [branched.thread.pk]
    page = compliance.get(
        reverse("admin:threads_thread_change", args=[branched.thread.public_id])
    ).content.decode()
    assert 'id="erased-banner"' in page
    assert "<title>Erased conversation" in page


def test_a_legal_hold_is_shown_and_blocks_execution(
    compliance: Client, request_for: DeletionRequest
):
    legal_hold_place(
        tenant=request_for.tenant,
        actor=Actor.system("tests"),
        reason="Litigation 2026-14",
        user_ref="user-7",
    )
    step(compliance, request_for, "approve")

    step(compliance, request_for, "execute")

    page = compliance.get(review_url(request_for), follow=True)
    html = page.content.decode()
    assert "Under legal hold" in html
    assert "Litigation 2026-14" in html
    request_for.refresh_from_db()
    assert request_for.status == "approved"
    assert request_for.progress["state"] == "refused"


def test_steps_need_post(compliance: Client, request_for: DeletionRequest):
    url = reverse(
        "admin:audit_deletionrequest_step",
        kwargs={"object_id": request_for.public_id, "step": "approve"},
    )
    assert compliance.get(url).status_code == 403
