"""Self-service erasure by the app: DELETE /threads/{id} and POST …/messages/{msg}/redact.

Both run the deletion machinery at once (request, proof, audit events, memo invalidation,
snapshot purge, stored-response redaction) and are refused under a legal hold.
"""

from audit.models import DeletionRequest, LegalHold
from auditlog.models import AuditEvent
from compaction.models import Summary
from tests.audit.conftest import branched_thread, ready_memo, record_assembly, visible
from threads.erasure import ERASED
from threads.models import IdempotencyRecord, Message, Thread


def thread_url(thread: Thread) -> str:
    return f"/api/v1/threads/{thread.public_id}"


def redact_url(thread: Thread, message: Message) -> str:
    return f"{thread_url(thread)}/messages/{message.public_id}/redact"


def actions(thread: Thread) -> list[str]:
    events = AuditEvent.objects.filter(thread_public_id=thread.public_id).order_by("id")
    return list(events.values_list("action", flat=True))


def hold(kit, **subject) -> LegalHold:
    return LegalHold.objects.create(
        tenant=kit.tenant, reason="litigation", placed_by="officer", **subject
    )


def test_deleting_a_thread_erases_it_with_proof(acme):
    thread = branched_thread(acme.tenant, text="SECRET-1")
    nodes = visible(thread)
    memo = ready_memo(thread, nodes[0:2], "ORD-1 shipped SECRET-1")
    assembly = record_assembly(thread)
    other = branched_thread(acme.tenant, user_ref="user-2", text="KEEP")

    response = acme.client.delete(thread_url(thread))
    assert response.status_code == 200, response.data
    body = response.data
    assert body["id"].startswith("del_")
    assert body["thread_id"] == thread.public_id
    assert body["message_id"] is None
    assert body["status"] == "executed"
    assert body["proof"]["counts"]["messages"] == len(nodes)
    assert set(body["proof"]["erased"]["messages"]) == {n.public_id for n in nodes}
    assert body["proof"]["erased"]["summaries"] == [memo.public_id]
    assert body["proof"]["erased"]["assemblies"] == [assembly.public_id]
    assert body["proof"]["approved_by"] == f"api_key:{acme.api_key.prefix}"

    assert {m.content for m in visible(thread)} == {ERASED}
    memo.refresh_from_db()
    assert (memo.text, memo.status) == (ERASED, "stale")
    assert acme.client.get(thread_url(thread)).status_code == 404
    assert acme.client.get(f"{thread_url(thread)}/messages").status_code == 404
    listed = acme.client.get("/api/v1/threads").data["results"]
    assert [t["id"] for t in listed] == [other.public_id]
    assert "KEEP" in visible(other)[0].content
    steps = [a for a in actions(thread) if a.startswith(("deletion_request.", "thread.deleted"))]
    assert steps == [
        "deletion_request.filed",
        "deletion_request.approved",
        "deletion_request.execution_requested",
        # Marked deleted in the erasure's own transaction, so no append lands in between.
        "thread.deleted",
        "deletion_request.thread_erased",
        "deletion_request.executed",
    ]
    # The proof stays readable through the deletion request.
    filed = acme.client.get(f"/api/v1/deletion-requests/{body['id']}")
    assert filed.data["status"] == "executed"


def test_a_deleted_thread_takes_no_new_content(acme, idem):
    thread = branched_thread(acme.tenant)
    acme.client.delete(thread_url(thread))
    append = acme.client.post(
        f"{thread_url(thread)}/messages",
        {"role": "user", "content": "hello again"},
        format="json",
        **idem(),
    )
    assert append.status_code == 404
    assert acme.client.delete(thread_url(thread)).status_code == 404


def test_a_delete_retried_with_its_key_replays_the_proof(acme):
    thread = branched_thread(acme.tenant)
    first = acme.client.delete(thread_url(thread), HTTP_IDEMPOTENCY_KEY="del-1")
    again = acme.client.delete(thread_url(thread), HTTP_IDEMPOTENCY_KEY="del-1")
    assert again.status_code == 200
    assert again["Idempotent-Replayed"] == "true"
    assert again.data == first.data
    assert DeletionRequest.objects.count() == 1


def test_another_tenants_thread_is_404(acme, globex):
    thread = branched_thread(globex.tenant)
    assert acme.client.delete(thread_url(thread)).status_code == 404
    message = visible(thread)[0]
    assert acme.client.post(redact_url(thread, message)).status_code == 404
    assert DeletionRequest.objects.count() == 0


def test_a_legal_hold_refuses_both(acme):
    by_user = branched_thread(acme.tenant, user_ref="held-user", text="KEEP")
    by_thread = branched_thread(acme.tenant, user_ref="free-user", text="KEEP")
    hold(acme, user_ref="held-user")
    hold(acme, thread=by_thread)
    for thread in (by_user, by_thread):
        deleted = acme.client.delete(thread_url(thread))
        assert deleted.status_code == 423
        assert deleted.data["code"] == "legal_hold"
        redacted = acme.client.post(redact_url(thread, visible(thread)[0]))
        assert redacted.status_code == 423
        assert all("KEEP" in m.content for m in visible(thread))
        assert actions(thread)[-2:] == ["deletion_request.self_service_refused"] * 2
    assert DeletionRequest.objects.count() == 0
    assert acme.client.get(thread_url(by_user)).status_code == 200


def test_redacting_a_message_erases_it_and_its_copies(acme, idem):
    thread = branched_thread(acme.tenant, text="KEEP")
    appended = acme.client.post(
        f"{thread_url(thread)}/messages",
        {"role": "user", "content": "My card is 4111 1111 1111 1111"},
        format="json",
        **idem(),
    )
    secret = Message.objects.get(public_id=appended.data["id"])
    nodes = visible(thread)
    covering = Summary.objects.create(
        thread=thread,
        first=nodes[0],
        segment_first=nodes[0],
        last=secret,
        covered_ids=[n.public_id for n in nodes],
        status=Summary.Status.READY,
        text="card 4111 1111 1111 1111",
        fingerprint="a",
    )
    untouched = ready_memo(thread, nodes[0:2], "ORD-1 shipped")
    shown = record_assembly(thread)

    response = acme.client.post(
        redact_url(thread, secret), {"reason": "card number"}, format="json"
    )
    assert response.status_code == 200, response.data
    body = response.data
    assert body["message_id"] == secret.public_id
    assert body["status"] == "executed"
    assert body["proof"]["erased"]["messages"] == [secret.public_id]
    assert body["proof"]["erased"]["summaries"] == [covering.public_id]
    assert body["proof"]["erased"]["assemblies"] == [shown.public_id]
    assert body["proof"]["counts"]["idempotency_responses"] == 1

    path = acme.client.get(f"{thread_url(thread)}/messages").data["results"]
    assert path[-1]["id"] == secret.public_id
    assert (path[-1]["content"], path[-1]["erased"]) == (ERASED, True)
    assert all("KEEP" in m["content"] for m in path[:-1])
    covering.refresh_from_db()
    untouched.refresh_from_db()
    assert (covering.status, covering.text) == ("stale", ERASED)
    assert (untouched.status, untouched.text) == ("ready", "ORD-1 shipped")
    stored = IdempotencyRecord.objects.get(response_body__id=secret.public_id)
    assert "4111" not in str(stored.response_body)
    # The thread itself stays (title included) and answers as before.
    assert acme.client.get(thread_url(thread)).data["title"] == "t"
    assert "deletion_request.executed" in actions(thread)

    again = acme.client.post(redact_url(thread, secret))
    assert again.status_code == 409
    assert again.data["code"] == "already_erased"
