"""Issue 21 in Chromium: the staff pages tell the truth about agent conversations, and read at
900 px. An agent conversation with tool calls, content parts and an elided result; the memo and
model-input pages; usage for Support; the readable export; every page screenshotted under
``test-artifacts/screenshots/`` (``truthful-*``)."""

from collections.abc import Callable
from pathlib import Path

import pytest
from django.contrib.auth.models import User
from playwright.sync_api import Page, expect

from audit.deletion import deletion_request_file
from compaction import admin_views as compaction_admin_views
from tests.admin.conftest import (
    PASSWORD,
    AgentThread,
    build_agent_thread,
    build_memo_thread,
    staff_user,
    write_embellished,
)
from tests.audit.conftest import assert_in_order, pdf_text
from tests.browser.conftest import screenshot
from tests.browser.test_admin_pages import log_in
from tests.conftest import SYSTEM, TenantKit
from tests.usage.test_usage_api import DAY1, DAY2, answer, priced_thread

pytestmark = [
    pytest.mark.browser,
    pytest.mark.django_db(transaction=True),
    pytest.mark.usefixtures("staff_groups"),
]

OpenPage = Callable[..., Page]
NARROW = 900
# Something runs off the page: wider than the window (the page scrolls sideways), or past the
# right edge of a box that scrolls or clips it (a table column, a hash, hidden until scrolled to).
# Code blocks (``pre``) may scroll: their lines are kept as written.
OVERFLOW = """() => {
  const out = [];
  const width = document.documentElement.clientWidth;
  if (document.documentElement.scrollWidth > width + 1) {
    out.push(`page ${document.documentElement.scrollWidth}px in ${width}px`);
  }
  for (const el of document.querySelectorAll('#content-main *')) {
    const box = el.getBoundingClientRect();
    if (!box.width || el.closest('pre') || getComputedStyle(el).visibility === 'hidden') continue;
    let limit = width;
    let hidden = false;
    let clipper = 'the window';
    for (let up = el.parentElement; up && up !== document.body; up = up.parentElement) {
      if (getComputedStyle(up).overflowX !== 'visible') {
        const clip = up.getBoundingClientRect();
        hidden = hidden || clip.width <= 1;  // clipped to nothing (or for screen readers only)
        if (clip.right < limit) {
          limit = clip.right;
          clipper = `${up.tagName}#${up.id}.${up.className}`;
        }
      }
    }
    if (!hidden && box.right > limit + 1) {
      const where = `${el.tagName}#${el.id}.${el.className}`;
      out.push(`${where}: right ${Math.round(box.right)} > ${Math.round(limit)} (${clipper})`);
    }
  }
  return out.slice(0, 10);
}"""


def thread_url(base: str, agent: AgentThread) -> str:
    thread = f"{base}/admin/threads/thread/{agent.thread.public_id}/change/"
    return f"{thread}?end={agent.answer.public_id}"


def outside_requests(page: Page, base: str) -> list[str]:
    seen: list[str] = []
    page.on("request", lambda r: seen.append(r.url) if not r.url.startswith(base) else None)
    return seen


def test_an_agent_turn_reads_as_calls_with_their_results(
    live_server, open_page: OpenPage, acme: TenantKit
):
    agent = build_agent_thread(acme)
    staff_user("sam-support", "Support")
    page = open_page()
    outside = outside_requests(page, live_server.url)
    log_in(page, live_server.url, "sam-support")

    page.goto(thread_url(live_server.url, agent))

    turn = page.locator(f"article#{agent.calls.public_id}")
    order = turn.locator('.cm-call[data-call="call_order"]')
    expect(order.locator(".cm-call-head")).to_contain_text("Called get_order")
    expect(order.locator("details.cm-args pre")).to_contain_text('"id": "ORD-1234"')
    expect(order.locator(f"#{agent.order_result.public_id}")).to_contain_text("649.00 EUR")
    log = turn.locator('.cm-call[data-call="call_log"]')
    expect(log.locator(".cm-elided")).to_have_text("elided from the model input")
    long_result = log.locator("details.cm-long")
    expect(long_result).not_to_have_attribute("open", "")
    expect(long_result.locator("pre")).not_to_be_visible()
    # No bubble of its own for a result drawn under its call.
    expect(page.locator(f"article#{agent.order_result.public_id}")).to_have_count(0)
    question = page.locator(f"article#{agent.question.public_id}")
    expect(question.locator(".cm-part-image a.cm-part-link")).to_have_text("images.example.com")
    expect(question.locator(".cm-part-file")).to_contain_text("file-receipt-1234")
    expect(question.locator("img")).to_have_count(0)
    screenshot(page, "truthful-agent-thread")

    long_result.locator("summary").click()
    expect(long_result.locator("pre")).to_be_visible()
    details = turn.locator("details.cm-more")
    details.locator("summary").click()
    expect(details).to_contain_text(agent.calls.public_id)
    screenshot(page, "truthful-agent-thread-opened")
    assert outside == []  # the image was never fetched

    page.goto(
        f"{live_server.url}/admin/compaction/assemblyrecord/{agent.assembly.public_id}/change/"
    )
    expect(page.locator("#items")).to_contain_text("Shown to the model as a short marker")
    expect(page.locator("#elided")).to_contain_text("old tool result")
    screenshot(page, "truthful-agent-model-input")


def test_the_pages_read_at_900_px(live_server, open_page: OpenPage, acme: TenantKit):
    agent = build_agent_thread(acme, user_ref="a-customer-with-a-long-reference-0042@example.com")
    memo = build_memo_thread(acme, write=write_embellished)
    request = deletion_request_file(
        tenant=acme.tenant, actor=SYSTEM, user_ref="leaving-user", reason="Account closed"
    )
    User.objects.create_superuser("root-admin", password=PASSWORD)
    base = live_server.url
    pages = {
        "index": f"{base}/admin/",
        "thread-list": f"{base}/admin/threads/thread/",
        "agent-thread": thread_url(base, agent),
        "message": f"{base}/admin/threads/message/{agent.calls.public_id}/change/",
        "memo": f"{base}/admin/compaction/summary/{memo.summary.public_id}/change/",
        "model-input": f"{base}/admin/compaction/assemblyrecord/{memo.assembly.public_id}/change/",
        "usage": f"{base}/admin/usage/usagereport/",
        "deletion-review": f"{base}/admin/audit/deletionrequest/{request.public_id}/change/",
        "export-form": f"{base}/admin/threads/thread/export/",
    }
    page = open_page(width=NARROW)
    log_in(page, base, "root-admin")

    overflowing = {}
    for name, url in pages.items():
        page.goto(url)
        expect(page.locator("#content-main")).to_be_visible()
        screenshot(page, f"truthful-900-{name}")
        found = page.evaluate(OVERFLOW)
        if found:
            overflowing[name] = found

    assert overflowing == {}
    # One "API keys" entry (convmem's; the key library's own admin is unregistered).
    page.goto(f"{base}/admin/")
    expect(page.locator("#content-main th a", has_text="API keys")).to_have_count(1)
    expect(page).to_have_title("Conversations, memos and compliance | convmem")


def test_a_stale_memo_links_to_its_replacement(live_server, open_page: OpenPage, acme: TenantKit):
    memo = build_memo_thread(acme, write=write_embellished)
    staff_user("sam-support", "Support")
    page = open_page()
    log_in(page, live_server.url, "sam-support")
    page.goto(f"{live_server.url}/admin/compaction/summary/{memo.summary.public_id}/change/")
    expect(page.locator("#memo-size")).to_contain_text("tokens, of at most")
    expect(page.locator("#scores")).not_to_contain_text("fact recall")  # no raw metric names

    page.click("#regenerate")

    expect(page.locator("#summary-status")).to_have_text("stale")
    link = page.locator("#replacement-link")
    expect(link).to_be_visible()
    expect(page.locator("#regenerate")).to_have_count(0)  # the replacement is on its way
    screenshot(page, "truthful-memo-stale-with-replacement")
    link.click()
    expect(page.locator("#summary-status")).to_have_text("pending")
    screenshot(page, "truthful-memo-replacement")


def test_a_low_recall_memo_warns_and_its_originals_are_paged_above_and_below(
    live_server, open_page: OpenPage, acme: TenantKit, settings, monkeypatch: pytest.MonkeyPatch
):
    memo = build_memo_thread(acme, write=write_embellished)
    recall = memo.summary.scores["fact_recall"]
    settings.CONVMEM_MEMO_LOW_RECALL = min(recall + 0.1, 1.0)
    monkeypatch.setattr(compaction_admin_views, "ORIGINALS_PAGE", 5)
    staff_user("sam-support", "Support")
    page = open_page()
    log_in(page, live_server.url, "sam-support")

    page.goto(f"{live_server.url}/admin/compaction/summary/{memo.summary.public_id}/change/")

    warning = page.locator("#low-recall-warning")
    expect(warning).to_be_visible()
    expect(warning).to_contain_text(f"keeps {round(recall * 100)}% of the key facts")
    pages = -(-len(memo.summary.covered_ids) // 5)
    for where in ("top", "bottom"):
        expect(page.locator(f"#originals-pager-{where}")).to_contain_text(f"page 1 of {pages}")
    screenshot(page, "truthful-memo-low-recall")
    page.locator("#originals-pager-bottom a.cm-next-page").click()
    expect(page.locator("#originals-pager-top")).to_contain_text(f"page 2 of {pages}")
    expect(page.locator("#originals .cm-msg")).to_have_count(5)


def test_support_sees_usage_with_axes_and_a_currency(
    live_server, open_page: OpenPage, acme: TenantKit
):
    alice = priced_thread(acme.tenant, user_ref="alice", prompt="1000", completion="1000")
    answer(alice, DAY1, 1000, 0)
    answer(alice, DAY2, 2000, 1000)
    staff_user("sam-support", "Support")
    page = open_page()
    log_in(page, live_server.url, "sam-support")

    page.click("#content-main a[href='/admin/usage/usagereport/']")
    page.fill("#id_start", "2026-03-01")
    page.fill("#id_end", "2026-03-31")
    page.click("#usage-form input[type=submit]")

    expect(page.locator("#chart-title")).to_have_text("Cost in USD per day")
    expect(page.locator("#y-axis text.cm-tick")).to_have_count(5)
    expect(page.locator('#bar-values text[data-period="2026-03-05"]')).to_have_text("3.00")
    expect(page.locator("#total-cost")).to_have_text("USD 4.00")
    screenshot(page, "truthful-usage-support")


def test_a_staff_member_without_a_group_is_told_which_groups_have_it(
    live_server, open_page: OpenPage, acme: TenantKit
):
    staff_user("pat-plain")
    page = open_page()
    page.goto(f"{live_server.url}/admin/login/?next=/admin/")
    page.fill("#id_username", "pat-plain")
    page.fill("#id_password", PASSWORD)
    page.click("input[type=submit]")

    page.goto(f"{live_server.url}/admin/usage/usagereport/")

    expect(page.locator("#missing-permission")).to_contain_text(
        "Staff in the Compliance or Support group have it."
    )
    expect(page.locator("#site-name")).to_have_text("convmem")
    screenshot(page, "truthful-403")


def test_compliance_downloads_the_readable_export(
    live_server, open_page: OpenPage, acme: TenantKit, tmp_path: Path
):
    agent = build_agent_thread(acme)
    staff_user("cleo-compliance", "Compliance")
    page = open_page()
    log_in(page, live_server.url, "cleo-compliance")
    page.goto(thread_url(live_server.url, agent))

    with page.expect_download() as download:
        page.click("#export-thread-html")
    saved = tmp_path / download.value.suggested_filename
    download.value.save_as(saved)
    assert saved.suffix == ".html"

    page.goto(saved.as_uri())
    expect(page.locator("h1")).to_have_text("Your conversations")
    expect(page.locator("body")).to_contain_text("The assistant used the tool get_order with:")
    expect(page.locator("body")).to_contain_text("#1 You")
    screenshot(page, "truthful-export-html")

    page.goto(thread_url(live_server.url, agent))
    with page.expect_download() as download:
        page.click("#export-thread-pdf")
    pdf = tmp_path / download.value.suggested_filename
    download.value.save_as(pdf)
    assert pdf.suffix == ".pdf"
    text = pdf_text(pdf.read_bytes())
    assert_in_order(text, ["#1 You", "The assistant used the tool get_order with:", "ORD-1234"])
