"""Webhooks: endpoints per tenant, Standard Webhooks signatures (checked with the
``standardwebhooks`` library, as a receiver would), delivery by a real Celery worker with
retries, a local receiver; payloads with ids and states, never content."""

import json
from datetime import timedelta

import pytest
from django.utils import timezone
from standardwebhooks.webhooks import Webhook

from tests.compaction.helpers import wait_for
from tests.conftest import make_thread
from tests.respond.conftest import REPLY, chat  # noqa: F401  (the chat server fixture)
from tests.support.webhook_receiver import WebhookReceiver
from tests.webhooks.conftest import ENDPOINTS, subscribe
from webhooks.models import WebhookDelivery, WebhookEndpoint
from webhooks.services import delivery_send, signed_headers, webhook_secret_rotate


@pytest.mark.django_db
def test_loopback_and_private_endpoints_are_refused(acme):
    for url in ("http://127.0.0.1:9/hooks", "http://10.1.2.3/hooks", "http://localhost/hooks"):
        response = acme.client.post(
            ENDPOINTS, {"url": url, "events": ["memo.ready"]}, format="json"
        )
        assert response.status_code == 400, url
        assert response.data["code"] == "webhook_url_refused"
    assert not WebhookEndpoint.objects.exists()


@pytest.mark.django_db
def test_endpoints_belong_to_their_tenant(acme, globex, allow_loopback):
    endpoint = subscribe(acme, "http://127.0.0.1:9/hooks", ["memo.ready"])
    assert endpoint["id"].startswith("whk_")
    assert endpoint["secret"].startswith("whsec_")
    assert "secret" not in acme.client.get(f"{ENDPOINTS}/{endpoint['id']}").data
    assert globex.client.get(f"{ENDPOINTS}/{endpoint['id']}").status_code == 404
    assert globex.client.get(ENDPOINTS).data == []


@pytest.mark.django_db
def test_a_rotated_secret_signs_beside_the_new_one_until_it_expires(acme, allow_loopback):
    created = subscribe(acme, "http://127.0.0.1:9/hooks", ["memo.ready"])
    rotated = acme.client.post(f"{ENDPOINTS}/{created['id']}/rotate-secret").data
    assert rotated["secret"] != created["secret"]
    endpoint = WebhookEndpoint.objects.get(public_id=created["id"])
    body = json.dumps({"type": "memo.ready", "data": {"summary_id": "sum_x"}})
    headers = signed_headers(endpoint=endpoint, event_id="evt_1", body=body)
    assert len(headers["webhook-signature"].split(" ")) == 2
    for secret in (created["secret"], rotated["secret"]):
        assert Webhook(secret).verify(body, headers)["type"] == "memo.ready"

    endpoint.previous_secret_expires_at = timezone.now() - timedelta(seconds=1)
    endpoint.save(update_fields=["previous_secret_expires_at"])
    headers = signed_headers(endpoint=endpoint, event_id="evt_2", body=body)
    assert len(headers["webhook-signature"].split(" ")) == 1
    with pytest.raises(Exception, match="signature"):
        Webhook(created["secret"]).verify(body, headers)
    webhook_secret_rotate(endpoint=endpoint)


@pytest.mark.worker
@pytest.mark.django_db(transaction=True)
def test_a_completed_answer_is_delivered_signed_and_retried(
    acme,
    chat,  # noqa: F811  (the fixture imported above)
    webhook_worker,
    allow_loopback,
):
    with WebhookReceiver(fail_first=2) as receiver:
        endpoint = subscribe(acme, receiver.url, ["response.completed", "response.failed"])
        thread = make_thread(acme.tenant)
        answered = acme.client.post(
            f"/api/v1/threads/{thread.public_id}/respond",
            {"content": "Where is my parcel?", "window_tokens": 4096, "reserve_tokens": 256},
            format="json",
            HTTP_IDEMPOTENCY_KEY="k1",
        )
        assert answered.status_code == 201
        wait_for(lambda: len(receiver.received) == 3, timeout=30)
        received = receiver.received

    # Three attempts (two answered 500), one event: the same webhook-id each time.
    assert len({r.headers["webhook-id"] for r in received}) == 1
    last = received[-1]
    payload = Webhook(endpoint["secret"]).verify(last.body, last.headers)
    assert payload["type"] == "response.completed"
    data = payload["data"]
    assert data["thread_id"] == thread.public_id
    assert data["assistant_message_id"] == answered.data["assistant_message"]["id"]
    assert data["state"] == "complete"
    assert REPLY.encode() not in last.body
    assert b"Where is my parcel" not in last.body
    delivery = wait_for(
        lambda: WebhookDelivery.objects.filter(status="delivered").first(), timeout=10
    )
    assert delivery.attempts == 3
    assert delivery.last_status_code == 204
    assert delivery.event_id == last.headers["webhook-id"]
    log = acme.client.get(f"{ENDPOINTS}/{endpoint['id']}/deliveries").data
    assert log["next"] is None
    assert [(d["event_id"], d["status"], d["attempts"]) for d in log["results"]] == [
        (delivery.event_id, "delivered", 3)
    ]
    assert log["results"][0]["last_status_code"] == 204
    assert "payload" not in log["results"][0]


@pytest.mark.django_db
def test_an_endpoint_is_updated_as_it_was_checked_at_creation(acme, globex, allow_loopback):
    created = subscribe(acme, "http://127.0.0.1:9/hooks", ["memo.ready"])
    url = f"{ENDPOINTS}/{created['id']}"
    updated = acme.client.patch(url, {"events": ["response.failed", "memo.ready"]}, format="json")
    assert updated.status_code == 200
    assert updated.data["events"] == ["memo.ready", "response.failed"]
    assert updated.data["url"] == "http://127.0.0.1:9/hooks"
    assert "secret" not in updated.data
    moved = acme.client.patch(url, {"url": "http://127.0.0.1:10/hooks"}, format="json")
    assert moved.data["url"] == "http://127.0.0.1:10/hooks"

    assert globex.client.patch(url, {"events": ["memo.ready"]}, format="json").status_code == 404
    assert globex.client.get(f"{url}/deliveries").status_code == 404
    unknown = acme.client.patch(url, {"events": ["memo.deleted"]}, format="json")
    assert unknown.status_code == 400


@pytest.mark.django_db
def test_an_endpoint_cannot_be_moved_to_a_private_address(acme, settings):
    settings.CONVMEM_WEBHOOKS_ALLOW_PRIVATE = True
    created = subscribe(acme, "http://127.0.0.1:9/hooks", ["memo.ready"])
    settings.CONVMEM_WEBHOOKS_ALLOW_PRIVATE = False
    refused = acme.client.patch(
        f"{ENDPOINTS}/{created['id']}", {"url": "http://10.0.0.8/hooks"}, format="json"
    )
    assert refused.status_code == 400
    assert refused.data["code"] == "webhook_url_refused"
    assert WebhookEndpoint.objects.get(public_id=created["id"]).url == "http://127.0.0.1:9/hooks"


@pytest.mark.django_db
def test_a_deleted_endpoint_gets_no_more_attempts(acme, allow_loopback):
    with WebhookReceiver() as receiver:
        endpoint = subscribe(acme, receiver.url, ["deletion.completed"])
        thread = make_thread(acme.tenant)
        assert acme.client.delete(f"/api/v1/threads/{thread.public_id}").status_code == 200
        delivery = WebhookDelivery.objects.get()
        assert acme.client.delete(f"{ENDPOINTS}/{endpoint['id']}").status_code == 204

        delivery_send(delivery_id=delivery.pk)  # what the worker's next attempt runs

        assert receiver.received == []
    delivery.refresh_from_db()
    assert (delivery.status, delivery.attempts) == ("failed", 0)
    assert delivery.last_error == "the endpoint was deleted"
