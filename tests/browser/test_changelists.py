"""Every changelist of the admin is readable at 1400 px: no column cut off or pushed out of
sight, no cell clipped. Checked in Chromium with a superuser (who sees every list), over data
built through the real services; each list is saved as a screenshot."""

from typing import Any

import pytest
from django.contrib.auth.models import User
from django.test import override_settings
from playwright.sync_api import Page

from audit.deletion import deletion_request_file
from audit.services import legal_hold_place
from auditlog.events import Actor
from tests.admin.conftest import PASSWORD, build_branched, build_memo_thread, write_embellished
from tests.browser.conftest import screenshot
from tests.conftest import SYSTEM, TenantKit
from webhooks.models import EVENT_TYPES
from webhooks.services import webhook_endpoint_create, webhook_event_emit

pytestmark = [
    pytest.mark.browser,
    pytest.mark.django_db(transaction=True),
    pytest.mark.usefixtures("staff_groups"),
]

WIDTH = 1400
REPORT_PAGES = {"/admin/usage/usagereport/"}

# Whatever in the result table overflows its box, or the table its scrolling container.
CLIPPED = """() => {
  const out = [];
  const results = document.querySelector('#changelist .results');
  if (results && results.scrollWidth > results.clientWidth + 1) {
    out.push(`table ${results.scrollWidth}px in ${results.clientWidth}px`);
  }
  for (const cell of document.querySelectorAll('#result_list th, #result_list td')) {
    if (cell.scrollWidth > cell.clientWidth + 1) {
      out.push(`${cell.className || cell.tagName}: ${cell.innerText.slice(0, 40)}`);
    }
  }
  return out;
}"""


def changelists(page: Page, base_url: str) -> list[str]:
    page.goto(f"{base_url}/admin/")
    hrefs = page.eval_on_selector_all(
        "#content-main .module th[scope=row] a", "links => links.map(a => a.getAttribute('href'))"
    )
    assert len(hrefs) >= 10, hrefs
    # The usage report is a chart page listed beside the models, not a changelist.
    return [href for href in hrefs if href not in REPORT_PAGES]


def log_in(page: Page, base_url: str, username: str) -> None:
    page.goto(f"{base_url}/admin/login/?next=/admin/")
    page.fill("#id_username", username)
    page.fill("#id_password", PASSWORD)
    page.click("input[type=submit]")


def build_data(kit: TenantKit) -> None:
    build_branched(kit, user_ref="user-with-a-rather-long-reference-0042@example.com")
    memo = build_memo_thread(kit, write=write_embellished)
    deletion_request_file(tenant=kit.tenant, actor=SYSTEM, user_ref="leaving-user", reason="Gone")
    admin = User.objects.create_superuser("root-admin", password=PASSWORD)
    legal_hold_place(
        tenant=kit.tenant,
        actor=Actor.staff(admin),
        user_ref="user-memo",
        reason="Litigation 2026-14: keep everything",
    )
    assert memo.assembly
    with override_settings(CONVMEM_WEBHOOKS_ALLOW_PRIVATE=True):
        endpoint = webhook_endpoint_create(
            tenant=kit.tenant,
            url="http://127.0.0.1:9/hooks/convmem/a-rather-long-receiver-path-0042",
            events=list(EVENT_TYPES),
        )
    webhook_event_emit(
        tenant_id=kit.tenant.pk,
        event_type="deletion.completed",
        data={"deletion_request_id": "del_x", "status": "executed"},
    )
    assert endpoint.deliveries.count() == 1


def test_every_changelist_is_readable_at_1400_px(live_server, open_page, acme: TenantKit):
    build_data(acme)
    page = open_page(width=WIDTH)
    log_in(page, live_server.url, "root-admin")

    clipped: dict[str, Any] = {}
    for href in changelists(page, live_server.url):
        page.goto(f"{live_server.url}{href}")
        assert page.locator("#changelist").count() == 1, href
        name = href.strip("/").replace("/", "-")
        screenshot(page, f"changelist-{WIDTH}-{name}")
        found = page.evaluate(CLIPPED)
        if found:
            clipped[href] = found

    assert clipped == {}
