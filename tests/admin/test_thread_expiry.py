"""The thread list shows each thread's expiry and filters by it: expired, expiring within 7
days, no expiry."""

import re
from datetime import timedelta

import pytest
from django.utils import timezone

from tests.conftest import make_thread
from threads.models import Thread

pytestmark = pytest.mark.django_db
CHANGELIST = "/admin/threads/thread/"


def listed(client, query: str = "") -> set[str]:
    r = client.get(f"{CHANGELIST}?{query}")
    assert r.status_code == 200
    return set(re.findall(r"thr_[A-Za-z0-9]+", r.content.decode()))


@pytest.fixture
def by_expiry(acme) -> dict[str, Thread]:
    now = timezone.now()
    threads = {
        name: make_thread(acme.tenant, user_ref=name)
        for name in ("expired", "soon", "later", "never", "deleted")
    }
    for name, when in [
        ("expired", now - timedelta(hours=1)),
        ("soon", now + timedelta(days=3)),
        ("later", now + timedelta(days=30)),
        ("deleted", now - timedelta(days=1)),
    ]:
        Thread.objects.filter(pk=threads[name].pk).update(expires_at=when)
    Thread.objects.filter(pk=threads["deleted"].pk).update(deleted_at=now)
    return threads


@pytest.mark.parametrize(
    ("value", "expected"),
    [("expired", {"expired"}), ("soon", {"soon"}), ("none", {"never"})],
)
def test_the_expiry_filter(compliance, by_expiry, value, expected):
    ids = {by_expiry[name].public_id for name in expected}

    shown = listed(compliance, f"expiry={value}")

    assert shown & {t.public_id for t in by_expiry.values()} == ids


def test_the_list_has_an_expiry_column_marking_expired_threads(compliance, by_expiry):
    r = compliance.get(CHANGELIST)
    page = r.content.decode()

    assert "column-expiry" in page
    assert page.count("cm-expired") == 1
    assert "expiring within 7 days" in page
    for thread in by_expiry.values():
        assert thread.public_id in page


def test_the_support_role_sees_the_expiry_too(support, by_expiry):
    assert listed(support, "expiry=soon") & {t.public_id for t in by_expiry.values()} == {
        by_expiry["soon"].public_id
    }


def test_the_thread_page_shows_when_it_expires(compliance, by_expiry):
    soon = by_expiry["soon"]
    never = by_expiry["never"]

    shown = compliance.get(f"{CHANGELIST}{soon.public_id}/change/").content.decode()
    without = compliance.get(f"{CHANGELIST}{never.public_id}/change/").content.decode()

    assert 'id="thread-expires"' in shown
    assert 'id="thread-expires"' not in without
