"""The summary page: the memo beside its originals, facts highlighted in both, scores, and the
regenerate / mark-stale actions (queued and invalidated through compaction's services)."""

import re

import pytest
from django.contrib.auth.models import Permission
from django.test import Client
from django.urls import reverse

from audit.models import AuditEvent
from compaction import admin_views
from compaction.models import Summary
from tests.admin.conftest import MemoThread, client_for, staff_user


def compare_url(summary: Summary) -> str:
    return reverse("admin:compaction_summary_change", args=[summary.public_id])


def marks(html: str, kind: str) -> list[str]:
    return re.findall(rf'<mark class="cm-fact cm-fact-{kind}"[^>]*>([^<]*)</mark>', html)


def test_it_highlights_facts_found_missing_and_unsupported(
    support: Client, memo_thread: MemoThread
):
    response = support.get(compare_url(memo_thread.summary))

    assert response.status_code == 200
    html = response.content.decode()
    memo = html.split('id="memo"')[1].split("</section>")[0]
    originals = html.split('id="originals"')[1].split("</section>")[0]
    scores = response.context["scores"]
    # The memo (written in a tight budget; which sentences fit varies with the ids in its
    # header) keeps some facts, loses others, and invents one.
    assert scores["found"]
    assert scores["missing"]
    assert scores["unsupported"] == ["name:Maria Lopez"]
    assert marks(memo, "found")
    assert set(marks(memo, "found")) <= set(marks(originals, "found"))
    assert marks(memo, "unsupported") == ["Maria Lopez"]
    assert marks(originals, "missing")
    assert not marks(originals, "unsupported")
    assert not marks(memo, "missing")
    assert "chain depth" in html.lower()


def test_viewing_a_memo_is_audited(support: Client, memo_thread: MemoThread):
    support.get(compare_url(memo_thread.summary))

    event = AuditEvent.objects.filter(action="thread.viewed").latest("id")
    assert event.actor_id == "sam-support"
    assert event.details == {"what": f"summary {memo_thread.summary.public_id}"}


def test_originals_are_paged(
    support: Client, memo_thread: MemoThread, monkeypatch: pytest.MonkeyPatch
):
    covered = memo_thread.summary.covered_ids
    monkeypatch.setattr(admin_views, "ORIGINALS_PAGE", 3)

    first = support.get(compare_url(memo_thread.summary))
    second = support.get(compare_url(memo_thread.summary), {"page": 2})

    assert [m.public_id for m, _ in first.context["originals"]] == covered[:3]
    assert [m.public_id for m, _ in second.context["originals"]] == covered[3:6]


def test_mark_stale_goes_through_the_invalidation_service(support: Client, memo_thread: MemoThread):
    url = reverse("admin:compaction_summary_mark_stale", args=[memo_thread.summary.public_id])

    response = support.post(url)

    assert response.status_code == 302
    memo_thread.summary.refresh_from_db()
    assert memo_thread.summary.status == Summary.Status.STALE
    event = AuditEvent.objects.get(action="summary.invalidated")
    assert (event.actor_type, event.actor_id) == ("staff", "sam-support")


def test_regenerate_queues_a_new_memo_and_writes_nothing_inline(
    support: Client, memo_thread: MemoThread
):
    url = reverse("admin:compaction_summary_regenerate", args=[memo_thread.summary.public_id])

    support.post(url)

    summaries = Summary.objects.filter(thread=memo_thread.thread).order_by("id")
    assert [s.status for s in summaries] == [Summary.Status.STALE, Summary.Status.PENDING]
    assert summaries[1].text == ""  # the memo writer's task writes it, not the request
    assert (summaries[1].first_id, summaries[1].last_id) == (
        memo_thread.summary.first_id,
        memo_thread.summary.last_id,
    )


def test_acting_needs_the_summary_permission_and_a_post(memo_thread: MemoThread, support: Client):
    viewer = staff_user("vic-viewer")
    viewer.user_permissions.add(Permission.objects.get(codename="view_summary"))
    for action in ("regenerate", "mark_stale"):
        url = reverse(f"admin:compaction_summary_{action}", args=[memo_thread.summary.public_id])
        assert client_for(viewer).post(url).status_code == 403
        assert support.get(url).status_code == 403
    memo_thread.summary.refresh_from_db()
    assert memo_thread.summary.status == Summary.Status.READY
