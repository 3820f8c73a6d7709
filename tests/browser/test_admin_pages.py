"""The staff admin in a real browser: Chromium (Playwright) against a live server, with a real
Celery worker writing memos and executing the deletion request.

Each test logs in through the admin's login form, walks a page like a person would, and saves a
screenshot of what it saw under ``test-artifacts/screenshots/``.
"""

from collections.abc import Callable

import pytest
from playwright.sync_api import Page, expect

from audit.deletion import deletion_request_file
from compaction.models import Summary
from tests.admin.conftest import (
    PASSWORD,
    Branched,
    MemoThread,
    build_branched,
    build_memo_thread,
    staff_user,
)
from tests.browser.conftest import screenshot
from tests.compaction.helpers import wait_for
from tests.conftest import SYSTEM, TenantKit
from threads import services

pytestmark = [
    pytest.mark.browser,
    pytest.mark.worker,
    pytest.mark.django_db(transaction=True),
    pytest.mark.usefixtures("celery_worker", "staff_groups"),
]

OpenPage = Callable[..., Page]
SCRIPT = "<script>alert(1)</script>"
IMG = "<img src=x onerror=alert(1)>"


def log_in(page: Page, base_url: str, username: str) -> None:
    page.goto(f"{base_url}/admin/login/?next=/admin/")
    page.fill("#id_username", username)
    page.fill("#id_password", PASSWORD)
    page.click("input[type=submit]")
    expect(page.locator("#user-tools")).to_contain_text(username)


def article(page: Page, public_id: str):
    return page.locator(f"article#{public_id}")


def written_by_the_worker(summary: Summary) -> None:
    """Wait until the worker has written the memo and scored it (a task of its own, after the
    write; skipped once a newer memo extends it)."""
    wait_for(
        lambda: (
            (written := Summary.objects.get(pk=summary.pk)).status == Summary.Status.READY
            and (
                "scorer" in written.scores
                or written.extensions.filter(status=Summary.Status.READY).exists()
            )
        )
    )


def test_support_switches_the_shown_branch(live_server, open_page: OpenPage, acme: TenantKit):
    branched: Branched = build_branched(acme)
    staff_user("sam-support", "Support")
    page = open_page()
    log_in(page, live_server.url, "sam-support")
    expect(page.locator("#content-main")).not_to_contain_text("Deletion requests")
    screenshot(page, "support-index")

    page.locator("#content-main a[href='/admin/threads/thread/']").first.click()
    page.click(f"text={branched.thread.public_id}")
    edited = article(page, branched.u2b.public_id)
    expect(edited.locator(".cm-position")).to_have_text("2 / 2")
    expect(edited.locator(".cm-replaced")).to_contain_text("Can I get a refund")
    expect(article(page, branched.a2c.public_id)).to_contain_text("latest of the current branch")
    screenshot(page, "thread-active-branch")

    edited.locator("a.cm-prev").click()

    original = article(page, branched.u2.public_id)
    expect(original.locator(".cm-position")).to_have_text("1 / 2")
    expect(article(page, branched.a2.public_id)).to_contain_text("once DHL confirms the loss")
    expect(page.locator("#branch-banner")).to_be_visible()
    assert article(page, branched.u2b.public_id).count() == 0
    screenshot(page, "thread-switched-branch")

    original.locator("details.cm-side > summary").click()
    original.locator("details.cm-lazy > summary").click()
    side = original.locator(".cm-branch-body")
    expect(side).to_contain_text("A replacement ships on Monday")
    screenshot(page, "thread-side-branch-expanded")

    page.goto(f"{live_server.url}/admin/audit/deletionrequest/")
    expect(page.locator("body")).to_contain_text("403")


def test_support_reads_the_budget_bar_and_replays(
    live_server, open_page: OpenPage, acme: TenantKit
):
    memo_thread: MemoThread = build_memo_thread(acme, write=written_by_the_worker)
    staff_user("sam-support", "Support")
    page = open_page()
    log_in(page, live_server.url, "sam-support")

    page.goto(
        f"{live_server.url}/admin/compaction/assemblyrecord/{memo_thread.assembly.public_id}/change/"
    )

    bar = page.locator("#budget-bar")
    expect(bar).to_be_visible()
    segments = bar.locator(".cm-seg")
    keys = [segments.nth(i).get_attribute("data-section") for i in range(segments.count())]
    assert {"system", "memo", "recent", "retrieved", "reserve"} <= set(keys)
    full = bar.bounding_box()["width"]
    shares = {
        segments.nth(i).get_attribute("data-section"): segments.nth(i).bounding_box()["width"]
        / full
        for i in range(segments.count())
    }
    assert abs(sum(shares.values()) - 1) < 0.01  # the segments fill the window
    window = memo_thread.assembly.tokens_shown()["window"]
    for section in ("system", "memo", "recent", "retrieved", "reserve"):
        assert abs(shares[section] - memo_thread.assembly.tokens_shown()[section] / window) < 0.01
    expect(page.locator("#items")).to_contain_text("kb:lost-parcels")
    screenshot(page, "assembly-budget-bar")

    page.click("#replay-link")

    expect(page.locator("#replay-result")).to_contain_text("matches the recorded hash")
    screenshot(page, "assembly-replay")


def test_support_compares_a_memo_with_its_originals(
    live_server, open_page: OpenPage, acme: TenantKit
):
    memo_thread: MemoThread = build_memo_thread(acme, write=written_by_the_worker)
    staff_user("sam-support", "Support")
    page = open_page()
    log_in(page, live_server.url, "sam-support")

    page.goto(f"{live_server.url}/admin/compaction/summary/")
    page.click(f"text={memo_thread.summary.public_id}")

    found_in_memo = page.locator("#memo mark.cm-fact-found")
    expect(found_in_memo.first).to_be_visible()
    expect(page.locator("#originals mark.cm-fact-found").first).to_be_visible()
    expect(page.locator("#originals mark.cm-fact-missing").first).to_be_visible()
    fact = found_in_memo.first.inner_text()
    expect(page.locator("#originals mark.cm-fact-found", has_text=fact).first).to_be_visible()
    colours = {
        kind: page.locator(f"mark.cm-fact-{kind}").first.evaluate(
            "el => getComputedStyle(el).backgroundColor"
        )
        for kind in ("found", "missing")
    }
    assert colours["found"] != colours["missing"]
    expect(page.locator("#summary-status")).to_have_text("ready")
    expect(page.locator("#memo-range")).to_contain_text("This memo stands for the")
    gauge = page.locator(".cm-gauge meter").first
    expect(gauge).to_be_visible()
    # Whole-range scores: the first gauge is the recall of the facts mentioned last.
    recall = memo_thread.summary.scores["recent_fact_recall"]
    assert float(gauge.get_attribute("value")) == pytest.approx(recall)
    assert gauge.bounding_box()["width"] >= 100  # drawn as a bar, not collapsed
    expect(page.locator(".cm-gauge .cm-gauge-value").first).to_have_text(f"{round(recall * 100)}%")
    title = found_in_memo.first.get_attribute("title")
    assert title.endswith("\u2014 kept by the memo")
    assert title.split(":")[0] in {"Order number", "Ticket id", "Amount", "Date", "Reference"}
    screenshot(page, "summary-compare")


def test_compliance_walks_a_deletion_request_to_its_proof(
    live_server, open_page: OpenPage, acme: TenantKit
):
    build_branched(acme, user_ref="leaving-user")
    request = deletion_request_file(
        tenant=acme.tenant, actor=SYSTEM, user_ref="leaving-user", reason="Account closed"
    )
    staff_user("cleo-compliance", "Compliance")
    page = open_page()
    log_in(page, live_server.url, "cleo-compliance")

    page.locator("#content-main a[href='/admin/audit/deletionrequest/']").first.click()
    page.click(f"text={request.public_id}")
    expect(page.locator("#deletion-status")).to_have_text("received")
    expect(page.locator("#footprint")).to_contain_text("Messages")
    # Each box beside the step it belongs to: a note on approving, a reason on rejecting.
    expect(page.locator("#approve-form")).to_contain_text("Note for the record (optional)")
    expect(page.locator("#reject-form")).to_contain_text("Reason for the requester (required)")
    expect(page.locator("#no-hold")).to_be_visible()
    assert page.locator("#execute").count() == 0  # approval comes first
    screenshot(page, "deletion-review")

    page.fill("#approve-note", "Checked the account is closed.")
    page.click("#approve")
    expect(page.locator("#deletion-status")).to_have_text("approved")
    expect(page.locator("#approval-note")).to_have_text("Checked the account is closed.")
    screenshot(page, "deletion-approved")

    page.click("#execute")  # the real worker runs audit.execute_deletion_request

    expect(page.locator("#proof")).to_be_visible(timeout=60_000)  # the page refreshes itself
    expect(page.locator("#deletion-status")).to_have_text("executed")
    expect(page.locator("#proof-counts")).to_contain_text("Assembly snapshots")
    # What is left agrees with the proof: nothing holding content, erased threads marked.
    for left in ("#left-messages", "#left-memos", "#left-snapshots"):
        expect(page.locator(left)).to_have_text("0")
    expect(page.locator("#footprint .cm-erased").first).to_be_visible()
    expect(page.locator("#trail")).not_to_contain_text("True")
    screenshot(page, "deletion-proof")

    # The erased threads are marked in the list and on their own pages.
    page.goto(f"{live_server.url}/admin/threads/thread/?erased=yes")
    marked = page.locator("#result_list .cm-erased")
    expect(marked).to_have_count(1)
    page.locator("#result_list tbody a").first.click()
    expect(page.locator("#erased-banner")).to_be_visible()
    screenshot(page, "deletion-erased-thread")


def test_an_xss_canary_renders_as_text(live_server, open_page: OpenPage, acme: TenantKit):
    thread = services.thread_create(
        tenant=acme.tenant, actor=SYSTEM, user_ref="canary", title=f"Canary {IMG}"
    )
    first = services.message_append(thread=thread, actor=SYSTEM, role="user", content=SCRIPT)
    second = services.message_append(thread=thread, actor=SYSTEM, role="assistant", content=IMG)
    services.message_edit(
        thread=thread, actor=SYSTEM, message_public_id=first.public_id, content=f"again {IMG}"
    )
    staff_user("sam-support", "Support")
    dialogs: list[str] = []
    page = open_page()
    page.on("dialog", lambda dialog: (dialogs.append(dialog.message), dialog.dismiss()))
    log_in(page, live_server.url, "sam-support")

    page.goto(
        f"{live_server.url}/admin/threads/thread/{thread.public_id}/change/?leaf={second.public_id}"
    )

    expect(article(page, first.public_id).locator("> div.cm-content")).to_have_text(SCRIPT)
    expect(article(page, second.public_id).locator("> div.cm-content")).to_have_text(IMG)
    assert page.locator("#content-main img").count() == 0
    screenshot(page, "xss-canary-thread")
    page.goto(f"{live_server.url}/admin/threads/message/?q=alert")
    expect(page.locator("#result_list")).to_contain_text(SCRIPT)
    page.goto(f"{live_server.url}/admin/threads/message/{second.public_id}/change/")
    expect(page.locator("#lineage")).to_contain_text(IMG)
    screenshot(page, "xss-canary-message")
    assert dialogs == []
