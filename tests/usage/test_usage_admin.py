"""The staff admin's usage page: a chart and a table of one tenant's usage, for staff with the
``usage.view_usagereport`` permission (superusers), linked from the admin index."""

from django.contrib.auth.models import Permission, User
from django.test import Client

from tests.admin.conftest import client_for, staff_user
from tests.conftest import make_thread
from tests.usage.test_usage_api import DAY1, DAY2, answer, priced_thread

URL = "/admin/usage/usagereport/"
MARCH = {"start": "2026-03-01", "end": "2026-03-31", "group_by": "day"}


def superuser() -> Client:
    return client_for(User.objects.create_superuser("root", password="a-long-pass-1"))


def test_it_draws_a_bar_per_day_and_lists_the_numbers(acme, globex):
    alice = priced_thread(acme.tenant, user_ref="alice", prompt="1000", completion="1000")
    answer(alice, DAY1, 1000, 0)
    answer(alice, DAY2, 2000, 1000)
    answer(make_thread(acme.tenant, user_ref="<b>bob</b>"), DAY2, 5, 5)
    answer(make_thread(globex.tenant), DAY2, 9999, 9999)

    page = superuser().get(URL, {"tenant": acme.tenant.pk, **MARCH})
    assert page.status_code == 200
    html = page.content.decode()
    assert html.count('class="cm-col"') == 31
    chart = page.context["chart"]
    bars = {bar.period.isoformat(): bar for bar in chart.bars}
    # The y axis runs to a round 4 (in four steps of 1) over the peak day's 3.
    assert [tick.text for tick in chart.y_ticks] == ["0.00", "1.00", "2.00", "3.00", "4.00"]
    assert bars["2026-03-05"].height == 150
    assert bars["2026-03-02"].height == 50
    assert bars["2026-03-03"].height == 0
    assert chart.metric == "cost"
    assert page.context["rollup"].totals.turns == 3
    assert 'id="total-cost">USD 4.00<' in html
    assert "Cost in USD per day" in html
    # Each day with a cost has its value written on the chart, not only in a tooltip.
    assert [b.value_text for b, _ in chart.labelled_bars] == ["1.00", "3.00"]
    assert [ref for ref, _ in page.context["top_users"]] == ["alice", "<b>bob</b>"]
    assert "&lt;b&gt;bob&lt;/b&gt;" in html
    assert "<b>bob</b>" not in html


def test_one_end_user_and_months(acme):
    answer(make_thread(acme.tenant, user_ref="alice"), DAY1, 10, 10)
    answer(make_thread(acme.tenant, user_ref="bob"), DAY1, 20, 20)
    page = superuser().get(
        URL,
        {
            "tenant": acme.tenant.pk,
            "start": "2026-01-01",
            "end": "2026-06-30",
            "group_by": "month",
            "user_ref": "bob",
        },
    )
    assert page.content.decode().count('class="cm-col"') == 6
    assert page.context["chart"].metric == "tokens"  # nothing has a price
    assert page.context["rollup"].totals.total_tokens == 40
    assert page.context["top_users"] == []


def test_a_bad_period_is_a_form_error(acme):
    page = superuser().get(
        URL,
        {"tenant": acme.tenant.pk, "start": "2026-03-05", "end": "2026-03-01", "group_by": "day"},
    )
    assert page.status_code == 200
    assert "rollup" not in page.context
    assert "to must not be before from" in page.content.decode()


def test_only_staff_with_the_permission_see_it(acme):
    index = superuser().get("/admin/")
    assert URL in index.content.decode()
    user = staff_user("pat-plain")
    denied = client_for(user).get(URL)
    assert denied.status_code == 403
    assert URL not in client_for(user).get("/admin/").content.decode()
    # The 403 names the groups that really have it (a data migration gives it to both).
    assert "Staff in the Compliance or Support group have it." in denied.content.decode()
    user.user_permissions.add(Permission.objects.get(codename="view_usagereport"))
    granted = User.objects.get(pk=user.pk)
    assert client_for(granted).get(URL).status_code == 200


def test_support_and_compliance_may_view_usage(acme):
    for group in ("Support", "Compliance"):
        member = staff_user(f"pat-{group.lower()}", group)
        assert client_for(member).get(URL).status_code == 200
        assert URL in client_for(member).get("/admin/").content.decode()
