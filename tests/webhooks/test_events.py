"""Every event end to end: made true by the real path (a memo written by the worker, a thread
erased through the API, a model that is down), delivered by a real worker to a local receiver
and verified there with the ``standardwebhooks`` library; ids and states, never content."""

from typing import Any

import pytest
from django.contrib.auth.models import User
from django.utils.dateparse import parse_datetime
from standardwebhooks.webhooks import Webhook

from audit.deletion import deletion_request_approve, deletion_request_execute
from audit.models import DeletionRequest
from compaction.models import Summary
from respond.models import RespondRun
from tests.compaction.helpers import grow, post_context, wait_for
from tests.conftest import make_thread
from tests.respond.conftest import REPLY, chat  # noqa: F401  (the chat server fixture)
from tests.support.webhook_receiver import Received, WebhookReceiver
from tests.webhooks.conftest import subscribe
from webhooks.models import WebhookDelivery

pytestmark = [
    pytest.mark.worker,
    pytest.mark.django_db(transaction=True),
    pytest.mark.usefixtures("webhook_worker", "allow_loopback"),
]

SMALL = {"window_tokens": 600, "reserve_tokens": 100}


def verified(received: Received, secret: str) -> dict[str, Any]:
    """The payload, after the receiver's own check of the Standard Webhooks signature."""
    return Webhook(secret).verify(received.body, received.headers)


def only_ids_and_states(received: Received) -> None:
    """No turn text (every turn of ``grow`` names an ``ORD-`` order) and no reply text."""
    assert b"ORD-" not in received.body
    assert b"Question" not in received.body
    assert REPLY.encode() not in received.body


def delivered(event_id: str) -> WebhookDelivery:
    return wait_for(
        lambda: WebhookDelivery.objects.filter(event_id=event_id, status="delivered").first()
    )


def test_a_memo_written_by_the_worker_is_announced(acme):
    thread = make_thread(acme.tenant)
    grow(thread, 30)
    with WebhookReceiver() as receiver:
        endpoint = subscribe(acme, receiver.url, ["memo.ready"])
        asked = post_context(acme.client, thread, **SMALL)
        assert asked.data["memo_status"] == "pending"
        summary_id = asked.data["pending_memo"]["summary_id"]
        wait_for(lambda: receiver.received)
        first = receiver.received[0]

    payload = verified(first, endpoint["secret"])
    assert payload["type"] == "memo.ready"
    memo = Summary.objects.get(public_id=summary_id)
    assert memo.status == "ready"
    assert payload["data"] == {
        "summary_id": summary_id,
        "thread_id": thread.public_id,
        "first_id": memo.first.public_id,
        "last_id": memo.last.public_id,
        "status": "ready",
    }
    only_ids_and_states(first)
    assert delivered(first.headers["webhook-id"]).attempts == 1


def test_a_thread_deleted_through_the_api_announces_its_erasure(acme):
    thread = make_thread(acme.tenant)
    grow(thread, 4)
    with WebhookReceiver() as receiver:
        endpoint = subscribe(acme, receiver.url, ["deletion.completed"])
        erased = acme.client.delete(f"/api/v1/threads/{thread.public_id}")
        assert erased.status_code == 200
        wait_for(lambda: receiver.received)
        received = receiver.received

    assert len(received) == 1
    payload = verified(received[0], endpoint["secret"])
    assert payload["type"] == "deletion.completed"
    data = payload["data"]
    assert data["deletion_request_id"] == erased.data["id"]
    assert data["thread_id"] == thread.public_id
    assert data["message_id"] is None
    assert data["status"] == "executed"
    assert parse_datetime(data["executed_at"]) == parse_datetime(erased.data["executed_at"])
    assert data["counts"] == erased.data["proof"]["counts"]
    assert data["counts"]["messages"] == 4
    only_ids_and_states(received[0])
    delivered(received[0].headers["webhook-id"])


def test_a_request_staff_approved_and_the_worker_executed_announces_its_erasure(acme):
    leaving = make_thread(acme.tenant, user_ref="user-leaving")
    grow(leaving, 2)
    officer = User.objects.create_superuser("officer")
    with WebhookReceiver() as receiver:
        endpoint = subscribe(acme, receiver.url, ["deletion.completed"])
        filed = acme.client.post(
            "/api/v1/deletion-requests",
            {"user_ref": "user-leaving", "reason": "account closed"},
            format="json",
        )
        assert filed.status_code == 202
        request = DeletionRequest.objects.get(public_id=filed.data["id"])
        deletion_request_approve(request=request, user=officer)
        assert not WebhookDelivery.objects.exists()  # approved is not done: nothing erased yet
        deletion_request_execute(request=request, user=officer)
        wait_for(lambda: receiver.received)
        received = receiver.received

    assert len(received) == 1
    data = verified(received[0], endpoint["secret"])["data"]
    executed = acme.client.get(f"/api/v1/deletion-requests/{filed.data['id']}").data
    assert executed["status"] == "executed"
    assert data["deletion_request_id"] == filed.data["id"]
    assert (data["thread_id"], data["message_id"]) == (None, None)  # a user's data, not a thread
    assert data["counts"] == executed["proof"]["counts"]
    assert data["counts"]["threads"] == 1
    assert b"user-leaving" not in received[0].body
    only_ids_and_states(received[0])


def test_an_answer_the_model_could_not_give_is_announced_as_failed(acme, chat):  # noqa: F811
    chat.configure(mode="error500")
    thread = make_thread(acme.tenant)
    with WebhookReceiver() as receiver:
        endpoint = subscribe(acme, receiver.url, ["response.failed"])
        failed = acme.client.post(
            f"/api/v1/threads/{thread.public_id}/respond",
            {"content": "Where is ORD-77?", "window_tokens": 4096, "reserve_tokens": 256},
            format="json",
            HTTP_IDEMPOTENCY_KEY="k1",
        )
        assert failed.status_code == 503
        wait_for(lambda: receiver.received)
        received = receiver.received

    assert len(received) == 1
    payload = verified(received[0], endpoint["secret"])
    assert payload["type"] == "response.failed"
    data = payload["data"]
    assert data["thread_id"] == thread.public_id
    run = RespondRun.objects.get()
    assert data["run_id"] == run.public_id
    assert data["user_message_id"] == run.user_message.public_id
    assert data["assistant_message_id"] is None
    assert data["state"] == "failed"
    assert data["error"] == "model_unavailable"
    only_ids_and_states(received[0])


def test_only_subscribed_events_are_sent(acme, chat):  # noqa: F811
    thread = make_thread(acme.tenant)
    with WebhookReceiver() as receiver:
        subscribe(acme, receiver.url, ["memo.ready"])
        answered = acme.client.post(
            f"/api/v1/threads/{thread.public_id}/respond",
            {"content": "Hello", "window_tokens": 4096, "reserve_tokens": 256},
            format="json",
            HTTP_IDEMPOTENCY_KEY="k1",
        )
        assert answered.status_code == 201
        assert acme.client.delete(f"/api/v1/threads/{thread.public_id}").status_code == 200
    assert not WebhookDelivery.objects.exists()
    assert receiver.received == []
