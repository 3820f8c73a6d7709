"""The Python client's imports and webhook endpoints, against the live server."""

import asyncio
import json
from pathlib import Path

import httpx
import pytest
from convmem_client import (
    APIConnectionError,
    APIError,
    Client,
    ImportReport,
    WebhookDelivery,
    WebhookEndpoint,
    WebhookEndpointWithSecret,
)

from tests.client.conftest import FAST
from threads.models import Thread as StoredThread

pytestmark = pytest.mark.django_db(transaction=True)

CHATGPT = json.loads(
    (Path(__file__).parents[1] / "fixtures" / "imports" / "chatgpt_conversations.json").read_text()
)
EVENTS = ["memo.ready", "response.completed"]  # as the server lists them: sorted


@pytest.fixture
def private_urls(settings) -> None:
    settings.CONVMEM_WEBHOOKS_ALLOW_PRIVATE = True


def test_a_chatgpt_export_is_imported_once(connect, acme):
    api = connect(acme)
    report = api.import_conversations(CHATGPT, user_ref="user-42")
    assert isinstance(report, ImportReport)
    assert (report.format, report.imported, report.skipped, report.failed) == ("chatgpt", 2, 0, 0)
    assert {r.source_id for r in report.results} == {c["id"] for c in CHATGPT}
    threads = {r.thread_id for r in report.results}
    assert (
        set(StoredThread.objects.filter(user_ref="user-42").values_list("public_id", flat=True))
        == threads
    )
    first = report.results[0]
    assert api.get_thread(first.thread_id).user_ref == "user-42"
    assert len(api.messages(first.thread_id)) > 0

    again = api.import_conversations(CHATGPT, user_ref="user-42", format="chatgpt")
    assert (again.imported, again.skipped) == (0, 2)
    assert {r.thread_id for r in again.results} == threads


def test_an_import_without_its_end_user_is_refused(connect, acme):
    with pytest.raises(APIError) as refused:
        connect(acme).import_conversations(CHATGPT)
    assert refused.value.status == 400


def test_webhook_endpoints_are_created_rotated_and_deleted(connect, acme, private_urls):
    api = connect(acme)
    created = api.create_webhook_endpoint("http://127.0.0.1:9/hooks", EVENTS)
    assert isinstance(created, WebhookEndpointWithSecret)
    assert created.id.startswith("whk_")
    assert created.secret.startswith("whsec_")
    assert (created.url, created.events, created.active) == (
        "http://127.0.0.1:9/hooks",
        EVENTS,
        True,
    )

    read = api.get_webhook_endpoint(created.id)
    assert type(read) is WebhookEndpoint
    assert "secret" not in read.raw
    assert [e.id for e in api.iter_webhook_endpoints()] == [created.id]

    rotated = api.rotate_webhook_secret(created.id)
    assert rotated.id == created.id
    assert rotated.secret.startswith("whsec_")
    assert rotated.secret != created.secret

    assert api.delete_webhook_endpoint(created.id) is None
    assert api.list_webhook_endpoints() == []
    with pytest.raises(APIError) as gone:
        api.get_webhook_endpoint(created.id)
    assert gone.value.status == 404


def test_a_private_url_is_refused_by_default(connect, acme):
    with pytest.raises(APIError) as refused:
        connect(acme).create_webhook_endpoint("http://127.0.0.1:9/hooks", EVENTS)
    assert (refused.value.status, refused.value.code) == (400, "webhook_url_refused")


def test_a_webhook_endpoint_lost_answer_is_not_created_twice(
    live_server, proxy, acme, private_urls
):
    """The server keeps no key for a new endpoint: when the answer is lost after the request
    went through, the client raises rather than subscribing the URL a second time."""
    sent: list[str] = []
    http = httpx.Client(timeout=15, event_hooks={"request": [lambda r: sent.append(r.method)]})
    api = Client(proxy.url, acme.key, http_client=http, **FAST)
    proxy.cut_next_after(1)
    with pytest.raises(APIConnectionError):
        api.create_webhook_endpoint("http://127.0.0.1:9/hooks", EVENTS)
    assert sent == ["POST"]
    assert len(api.list_webhook_endpoints()) == 1


def test_the_async_client_manages_webhook_endpoints(connect_async, acme, private_urls):
    async def scenario() -> tuple[list[str], list[WebhookEndpoint]]:
        async with connect_async(acme) as api:
            created = await api.create_webhook_endpoint("http://127.0.0.1:9/hooks", EVENTS)
            listed = [e.id async for e in api.iter_webhook_endpoints()]
            await api.rotate_webhook_secret(created.id)
            await api.delete_webhook_endpoint(created.id)
            report = await api.import_conversations(CHATGPT, user_ref="user-7")
            assert report.imported == 2
            return [created.id], listed, await api.list_webhook_endpoints()

    created, listed, after = asyncio.run(scenario())
    assert listed == created
    assert after == []


def test_an_endpoint_is_changed_and_its_delivery_log_read(connect, acme, private_urls):
    api = connect(acme)
    created = api.create_webhook_endpoint("http://127.0.0.1:9/hooks", ["memo.ready"])
    changed = api.update_webhook_endpoint(created.id, events=["deletion.completed"])
    assert (changed.url, changed.events) == ("http://127.0.0.1:9/hooks", ["deletion.completed"])
    assert api.webhook_deliveries(created.id).results == []

    thread = api.create_thread("user-42")
    erased = api.delete_thread(thread.id)  # recorded for the endpoint (no worker sends it here)
    page = api.webhook_deliveries(created.id, limit=5)
    assert page.next is None
    [delivery] = page.results
    assert isinstance(delivery, WebhookDelivery)
    assert (delivery.event_type, delivery.status, delivery.attempts) == (
        "deletion.completed",
        "pending",
        0,
    )
    assert [d.event_id for d in api.iter_webhook_deliveries(created.id)] == [delivery.event_id]
    assert erased.status == "executed"
