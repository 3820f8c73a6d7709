"""Filters typed into a changelist URL: an impossible date answers like any bad filter (the
list without its filters, ``?e=1``), never a 500."""

import pytest
from django.contrib import admin
from django.db.models import DateField
from django.urls import reverse

from tests.conftest import make_thread
from usage.models import UsageReport

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


YEARS = ["0", "-1", "10000", "99999", "99999999999999999999"]


def every_changelist_and_date_field() -> list[tuple[str, str]]:
    """(changelist URL, date field) for every registered ModelAdmin whose list is Django's
    changelist, and each of its model's date fields: the guard must hold for the changelists
    added later too. (The usage report draws its own page and reads no lookups.)"""
    cases = []
    for model in admin.site._registry:
        if model is UsageReport:
            continue
        url = reverse(f"admin:{model._meta.app_label}_{model._meta.model_name}_changelist")
        for field in model._meta.concrete_fields:
            if isinstance(field, DateField):  # DateTimeField is one too
                cases.append((url, field.name))
    return cases


CASES = every_changelist_and_date_field()


def test_the_sweep_covers_the_changelists_the_red_team_hit():
    urls = {url for url, _ in CASES}
    assert len(urls) >= 6
    assert {"/admin/threads/thread/", "/admin/audit/deletionrequest/"} <= urls
    assert ("/admin/threads/thread/", "updated_at") in CASES


@pytest.mark.parametrize(("changelist", "field"), CASES)
def test_a_year_outside_the_calendar_on_any_changelist_drops_the_filters(
    admin_client, acme, changelist, field
):
    make_thread(acme.tenant, turns=2)
    for year in YEARS:
        r = admin_client.get(f"{changelist}?{field}__year={year}")
        assert r.status_code == 302, (field, year, r.status_code)
        assert r["Location"] == f"{changelist}?e=1"
    assert admin_client.get(f"{changelist}?{field}__year=2026").status_code == 200
