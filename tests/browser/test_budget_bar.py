"""The budget bar of a model input names every section readably, whatever the window width:
a label shows inside its segment only when it fits whole, and the legend below the bar names
every section, each on one line, with its tokens."""

import pytest

from tests.admin.conftest import PASSWORD, build_memo_thread, staff_user, write_embellished
from tests.browser.conftest import screenshot
from tests.conftest import TenantKit

pytestmark = [
    pytest.mark.browser,
    pytest.mark.django_db(transaction=True),
    pytest.mark.usefixtures("staff_groups"),
]

# Labels wider than their segment, shown anyway (the bug: "system" cut to "syst").
CUT_LABELS = """() => [...document.querySelectorAll('#budget-bar .cm-seg-label')]
  .filter(label => getComputedStyle(label).visibility === 'visible')
  .filter(label => label.offsetWidth > label.parentElement.clientWidth)
  .map(label => label.textContent)"""
# Legend items that wrap onto a second line or overflow their box.
BROKEN_LEGEND = """() => [...document.querySelectorAll('#budget-legend li')]
  .filter(item => item.getClientRects().length !== 1 || item.scrollWidth > item.clientWidth + 1)
  .map(item => item.textContent)"""
SEGMENTS = """segments => segments.map(s => [s.dataset.section, s.dataset.tokens])"""
# Two frames drawn: what the user sees once the page has settled (layout, resize observers).
DRAWN = """() => new Promise(done => requestAnimationFrame(() => requestAnimationFrame(done)))"""


@pytest.mark.parametrize("width", [1400, 900])
def test_every_section_is_named_readably(live_server, open_page, acme: TenantKit, width):
    assembly = build_memo_thread(acme, write=write_embellished).assembly
    staff_user("sam-support", "Support")
    page = open_page(width=width)
    page.goto(f"{live_server.url}/admin/login/?next=/admin/")
    page.fill("#id_username", "sam-support")
    page.fill("#id_password", PASSWORD)
    page.click("input[type=submit]")

    page.goto(f"{live_server.url}/admin/compaction/assemblyrecord/{assembly.public_id}/change/")
    page.evaluate(DRAWN)

    assert page.evaluate(CUT_LABELS) == []
    assert page.evaluate(BROKEN_LEGEND) == []
    legend = {
        item.get_attribute("data-section"): item.inner_text()
        for item in page.locator("#budget-legend li").all()
    }
    segments = page.locator("#budget-bar .cm-seg").evaluate_all(SEGMENTS)
    assert {"system", "memo", "recent", "retrieved", "reserve"} <= {s for s, _ in segments}
    for section, tokens in segments:
        assert f" {tokens} (" in legend[section], (section, legend[section])
    shown = page.locator("#budget-bar .cm-seg-label").evaluate_all(
        "labels => labels.filter(l => getComputedStyle(l).visibility === 'visible').length"
    )
    assert shown >= 1  # wide segments keep their label in the bar
    screenshot(page, f"assembly-budget-bar-{width}")
