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
    bars = {bar.period.isoformat(): bar for bar in page.context["bars"]}
    assert bars["2026-03-05"].height == 200  # the peak
    assert round(bars["2026-03-02"].height) == round(200 * 1 / 3)
    assert bars["2026-03-03"].height == 0
    assert page.context["metric"] == "cost"
    assert page.context["rollup"].totals.turns == 3
    assert 'id="total-cost">4.000000<' in html
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
    assert page.context["metric"] == "tokens"  # nothing has a price
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
    user = staff_user("pat-plain", "Support", "Compliance")
    assert client_for(user).get(URL).status_code == 403
    assert URL not in client_for(user).get("/admin/").content.decode()
    user.user_permissions.add(Permission.objects.get(codename="view_usagereport"))
    granted = User.objects.get(pk=user.pk)
    assert client_for(granted).get(URL).status_code == 200
