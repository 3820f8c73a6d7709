"""Filters typed into a changelist URL: an impossible date answers like any bad filter (the
list without its filters, ``?e=1``), never a 500."""

import pytest

from tests.conftest import make_thread

CHANGELISTS = [
    "/admin/threads/thread/",
    "/admin/threads/message/",
    "/admin/auditlog/auditevent/",
]
BAD_DATES = [
    "created_at__year=99999999999",
    "created_at__year=99999999999&created_at__month=1",
    "created_at__year=9999",
    "created_at__year=9999&created_at__month=12",
    "created_at__year=9999&created_at__month=12&created_at__day=31",
    "created_at__year=2026&created_at__month=99999999999999999999",
    "created_at__year=2026&created_at__month=2&created_at__day=30",
    "created_at__year=0",
    "created_at__year=abc",
]


@pytest.mark.parametrize("query", BAD_DATES)
@pytest.mark.parametrize("changelist", CHANGELISTS)
def test_an_impossible_date_filter_drops_the_filters(admin_client, changelist, query):
    r = admin_client.get(f"{changelist}?{query}")

    assert r.status_code == 302, r.status_code
    assert r["Location"] == f"{changelist}?e=1"
    assert admin_client.get(r["Location"]).status_code == 200


@pytest.mark.parametrize("changelist", CHANGELISTS)
def test_the_last_possible_day_still_filters(admin_client, acme, changelist):
    make_thread(acme.tenant, turns=2)

    assert admin_client.get(f"{changelist}?created_at__year=2026").status_code == 200
    r = admin_client.get(
        f"{changelist}?created_at__year=9998&created_at__month=12&created_at__day=31"
    )
    assert r.status_code == 200
