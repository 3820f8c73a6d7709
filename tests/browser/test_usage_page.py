"""The usage page in Chromium: reached from the admin index, the form picks a tenant and a
period, the SVG chart draws one bar per day, sized by cost (nothing loaded from elsewhere)."""

from collections.abc import Callable

import pytest
from django.contrib.auth.models import User
from playwright.sync_api import Page, expect

from tests.admin.conftest import PASSWORD
from tests.browser.conftest import screenshot
from tests.browser.test_admin_pages import log_in
from tests.conftest import TenantKit
from tests.usage.test_usage_api import DAY1, DAY2, answer, priced_thread

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


def test_the_usage_chart(live_server, open_page: Callable[[], Page], acme: TenantKit, globex):
    alice = priced_thread(acme.tenant, user_ref="alice", prompt="1000", completion="1000")
    answer(alice, DAY1, 1000, 0)
    answer(alice, DAY2, 2000, 1000)
    bob = priced_thread(acme.tenant, user_ref="bob", prompt="1000", completion="1000")
    answer(bob, DAY2, 500, 500)
    User.objects.create_superuser("root", password=PASSWORD)
    outside: list[str] = []

    page = open_page()
    page.on(
        "request",
        lambda request: (
            outside.append(request.url) if not request.url.startswith(live_server.url) else None
        ),
    )
    log_in(page, live_server.url, "root")
    page.click("#content-main a[href='/admin/usage/usagereport/']")
    page.select_option("#id_tenant", label="acme")
    page.fill("#id_start", "2026-03-01")
    page.fill("#id_end", "2026-03-14")
    page.click("#usage-form input[type=submit]")

    bars = page.locator("#usage-chart rect.cm-col")
    expect(bars).to_have_count(14)
    peak = page.locator('#usage-chart rect[data-period="2026-03-05"]')
    quiet = page.locator('#usage-chart rect[data-period="2026-03-02"]')
    assert float(peak.get_attribute("height")) > float(quiet.get_attribute("height")) > 0
    expect(page.locator("#total-cost")).to_have_text("USD 5.00")
    expect(page.locator("#usage-top-users")).to_contain_text("alice")
    # Axes with values: round ticks on the y axis, dates below, each day's cost on its bar.
    expect(page.locator("#y-axis text.cm-tick")).to_have_text(
        ["0.00", "1.00", "2.00", "3.00", "4.00"]
    )
    expect(page.locator("#x-axis text.cm-tick").first).to_have_text("2026-03-01")
    expect(page.locator('#bar-values text[data-period="2026-03-05"]')).to_have_text("4.00")
    expect(page.locator("#y-axis")).to_contain_text("USD")
    box = page.locator("#usage-chart").bounding_box()
    assert box is not None
    assert box["width"] > 400
    screenshot(page, "usage-chart")

    page.click("#usage-top-users >> text=bob")
    expect(page.locator("#id_user_ref")).to_have_value("bob")
    expect(page.locator("#total-cost")).to_have_text("USD 1.00")
    assert outside == []
