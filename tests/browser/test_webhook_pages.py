"""The webhook pages of the admin in Chromium: an operator adds an endpoint (a refused address is
a form error), an event reaches a local receiver through a real worker, the delivery log shows
it, and **Redeliver** sends it a second time with the same ``webhook-id``."""

from collections.abc import Callable, Iterator

import httpx
import pytest
from django.contrib.auth.models import User
from playwright.sync_api import Page, expect
from standardwebhooks.webhooks import Webhook

from tests.admin.conftest import PASSWORD
from tests.browser.conftest import screenshot
from tests.compaction.helpers import grow, wait_for
from tests.conftest import TenantKit, make_thread
from tests.support.webhook_receiver import WebhookReceiver
from tests.support.worker import CeleryWorker, start_worker

pytestmark = [pytest.mark.browser, pytest.mark.worker, pytest.mark.django_db(transaction=True)]

OpenPage = Callable[..., Page]
DELIVERIES = "/admin/webhooks/webhookdelivery/"


@pytest.fixture(scope="module")
def delivering_worker(django_db_setup: None) -> Iterator[CeleryWorker]:
    with start_worker({"CONVMEM_WEBHOOKS_ALLOW_PRIVATE": "1"}) as worker:
        yield worker


def log_in(page: Page, base_url: str, username: str) -> None:
    page.goto(f"{base_url}/admin/login/?next=/admin/")
    page.fill("#id_username", username)
    page.fill("#id_password", PASSWORD)
    page.click("input[type=submit]")
    expect(page.locator("#user-tools")).to_contain_text(username)


def add_endpoint(page: Page, base_url: str, url: str) -> None:
    page.goto(f"{base_url}/admin/webhooks/webhookendpoint/add/")
    page.select_option("#id_tenant", label="acme")
    page.fill("#id_url", url)
    page.check("input[name=events][value='deletion.completed']")
    page.click("input[name=_save]")


def delivery_row(page: Page, base_url: str, shows: str):
    """The log's one row, once it shows ``shows`` (the worker writes the outcome after the
    receiver answered, so the page is reloaded until it does)."""
    row = page.locator("#result_list tbody tr")

    def shown() -> bool:
        page.goto(f"{base_url}{DELIVERIES}")
        return shows in row.inner_text()

    wait_for(shown, timeout=30)
    return row


def test_an_operator_adds_an_endpoint_and_redelivers_an_event(
    live_server, open_page: OpenPage, acme: TenantKit, delivering_worker, settings
):
    User.objects.create_superuser("root-admin", password=PASSWORD)
    thread = make_thread(acme.tenant)
    grow(thread, 2)
    settings.CONVMEM_WEBHOOKS_ALLOW_PRIVATE = False
    with WebhookReceiver() as receiver:
        page = open_page()
        log_in(page, live_server.url, "root-admin")

        add_endpoint(page, live_server.url, receiver.url)
        expect(page.locator(".errorlist")).to_contain_text("non-public address (127.0.0.1)")
        screenshot(page, "webhook-endpoint-refused")

        settings.CONVMEM_WEBHOOKS_ALLOW_PRIVATE = True
        add_endpoint(page, live_server.url, receiver.url)
        # The secret is on the page answering the form, once; the list follows.
        secret = page.locator("#webhook-secrets code.webhook-secret").inner_text()
        assert secret.startswith("whsec_")
        screenshot(page, "webhook-secret-shown")
        page.click("#secrets-done")
        expect(page.locator("body")).not_to_contain_text(secret)
        expect(page.locator("#result_list")).to_contain_text(receiver.url)
        expect(page.locator("#result_list")).to_contain_text("deletion.completed")

        erased = httpx.delete(
            f"{live_server.url}/api/v1/threads/{thread.public_id}",
            headers={"Authorization": f"Bearer {acme.key}"},
        )
        assert erased.status_code == 200
        wait_for(lambda: len(receiver.received) == 1, timeout=30)

        row = delivery_row(page, live_server.url, "Delivered")
        expect(row).to_contain_text("deletion.completed")
        expect(row.locator("td.field-attempts")).to_have_text("1")
        expect(row.locator("td.field-last_status_code_shown")).to_have_text("204")
        screenshot(page, "webhook-deliveries")

        row.locator("input.action-select").check()
        page.select_option("select[name=action]", "redeliver")
        page.click("button[name=index]")
        expect(page.locator(".messagelist")).to_contain_text("1 queued again.")
        wait_for(lambda: len(receiver.received) == 2, timeout=30)
        row = delivery_row(page, live_server.url, "Delivered")
        expect(row.locator("td.field-attempts")).to_have_text("2")
        screenshot(page, "webhook-redelivered")
        received = receiver.received

    first, second = received
    assert first.headers["webhook-id"] == second.headers["webhook-id"]
    for attempt in received:
        payload = Webhook(secret).verify(attempt.body, attempt.headers)
        assert payload["type"] == "deletion.completed"
        assert payload["data"]["thread_id"] == thread.public_id
        assert payload["data"]["deletion_request_id"] == erased.json()["id"]
