"""A thread's expires_at through the API: set on create (absolute or expires_in), defaulted by
the profile's thread_ttl, changed or removed by PATCH, validated (past dates, bad formats)."""

from datetime import UTC, datetime, timedelta

import pytest
from django.utils import timezone
from django.utils.dateparse import parse_datetime

from auditlog.models import AuditEvent
from convmem.models import ModelProfile
from tests.conftest import make_thread
from tests.threads.helpers import Rows, error_of, post
from threads.models import Thread

pytestmark = pytest.mark.django_db
THREADS = "/api/v1/threads"


def in_days(days: float) -> datetime:
    return timezone.now() + timedelta(days=days)


def stored_expiry(response) -> datetime | None:
    return Thread.objects.get(public_id=response.data["id"]).expires_at


def test_a_thread_without_expiry_reads_null(acme):
    r = post(acme.client, THREADS, {"user_ref": "u1"})

    assert r.status_code == 201, r.data
    assert r.data["expires_at"] is None
    assert stored_expiry(r) is None


def test_create_with_expires_at_stores_and_shows_it(acme):
    when = in_days(30).replace(microsecond=0)

    r = post(acme.client, THREADS, {"user_ref": "u1", "expires_at": when.isoformat()})

    assert r.status_code == 201, r.data
    assert parse_datetime(r.data["expires_at"]) == when
    assert stored_expiry(r) == when
    shown = acme.client.get(f"{THREADS}/{r.data['id']}")
    assert parse_datetime(shown.data["expires_at"]) == when


def test_a_time_without_offset_is_utc(acme):
    r = post(acme.client, THREADS, {"user_ref": "u1", "expires_at": "2099-01-02T03:04:05"})

    assert r.status_code == 201, r.data
    assert stored_expiry(r) == datetime(2099, 1, 2, 3, 4, 5, tzinfo=UTC)


def test_expires_in_counts_seconds_from_now(acme):
    before = timezone.now()

    r = post(acme.client, THREADS, {"user_ref": "u1", "expires_in": 3600})

    assert r.status_code == 201, r.data
    assert "expires_in" not in r.data
    stored = stored_expiry(r)
    assert before + timedelta(seconds=3600) <= stored <= timezone.now() + timedelta(seconds=3600)


def test_the_profile_thread_ttl_is_the_default(acme):
    ModelProfile.objects.create(
        tenant=acme.tenant, name="short", is_default=True, thread_ttl=timedelta(days=7)
    )
    ModelProfile.objects.create(tenant=acme.tenant, name="keep")
    before = timezone.now()

    defaulted = post(acme.client, THREADS, {"user_ref": "u1"})
    without_ttl = post(acme.client, THREADS, {"user_ref": "u1", "profile": "keep"})

    assert defaulted.data["profile"] == "short"
    stored = stored_expiry(defaulted)
    assert before + timedelta(days=7) <= stored <= timezone.now() + timedelta(days=7)
    assert stored_expiry(without_ttl) is None


def test_an_explicit_expiry_wins_over_the_profile(acme):
    ModelProfile.objects.create(
        tenant=acme.tenant, name="short", is_default=True, thread_ttl=timedelta(days=7)
    )
    when = in_days(90).replace(microsecond=0)

    later = post(acme.client, THREADS, {"user_ref": "u1", "expires_at": when.isoformat()})
    never = post(acme.client, THREADS, {"user_ref": "u1", "expires_at": None})

    assert stored_expiry(later) == when
    assert never.status_code == 201, never.data
    assert stored_expiry(never) is None


@pytest.mark.parametrize(
    "body",
    [
        {"expires_at": "next tuesday"},
        {"expires_at": "2099-13-01T00:00:00Z"},
        {"expires_at": 1767225600},
        {"expires_in": "soon"},
        {"expires_in": 0},
        {"expires_in": -5},
        {"expires_in": 10**12},
        {"expires_at": "2099-01-01T00:00:00Z", "expires_in": 60},
    ],
    ids=["words", "month-13", "number", "in-words", "in-zero", "in-negative", "in-huge", "both"],
)
def test_bad_expiry_is_400_and_writes_nothing(acme, body):
    before = Rows.now()

    r = post(acme.client, THREADS, {"user_ref": "u1", **body})

    assert error_of(r) == (400, "invalid"), r.json()
    assert Rows.now() == before


def test_a_past_expiry_is_refused(acme):
    r = post(acme.client, THREADS, {"user_ref": "u1", "expires_at": in_days(-1).isoformat()})

    assert error_of(r) == (400, "invalid")
    assert "expires_at" in r.json()["errors"]
    assert not Thread.objects.exists()


def test_patch_changes_and_removes_the_expiry(acme):
    thread = make_thread(acme.tenant)
    url = f"{THREADS}/{thread.public_id}"
    when = in_days(10).replace(microsecond=0)

    changed = acme.client.patch(url, {"expires_at": when.isoformat()}, format="json")
    thread.refresh_from_db()
    assert changed.status_code == 200, changed.data
    assert parse_datetime(changed.data["expires_at"]) == when
    assert thread.expires_at == when

    removed = acme.client.patch(url, {"expires_at": None}, format="json")
    thread.refresh_from_db()
    assert removed.data["expires_at"] is None
    assert thread.expires_at is None
    events = AuditEvent.objects.filter(action="thread.updated").order_by("pk")
    assert [e.details["fields"] for e in events] == [["expires_at"], ["expires_at"]]


def test_patch_without_expiry_fields_keeps_it(acme):
    r = post(acme.client, THREADS, {"user_ref": "u1", "expires_in": 600})
    before = stored_expiry(r)

    acme.client.patch(f"{THREADS}/{r.data['id']}", {"title": "renamed"}, format="json")

    assert stored_expiry(r) == before


def test_patch_refuses_a_past_or_malformed_expiry(acme):
    thread = make_thread(acme.tenant)
    url = f"{THREADS}/{thread.public_id}"

    past = acme.client.patch(url, {"expires_at": in_days(-0.01).isoformat()}, format="json")
    malformed = acme.client.patch(url, {"expires_at": "yesterday"}, format="json")

    assert error_of(past) == (400, "invalid")
    assert error_of(malformed) == (400, "invalid")
    thread.refresh_from_db()
    assert thread.expires_at is None
