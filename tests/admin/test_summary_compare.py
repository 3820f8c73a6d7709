"""The summary page: the memo beside its originals, facts highlighted in both, scores, and the
regenerate / mark-stale actions (queued and invalidated through compaction's services)."""

import html
import re

import pytest
from django.contrib.auth.models import Permission
from django.test import Client
from django.urls import reverse

from auditlog.models import AuditEvent
from compaction import admin_views
from compaction.fact_labels import fact_label
from compaction.models import Summary
from tests.admin.conftest import MemoThread, client_for, staff_user


def compare_url(summary: Summary) -> str:
    return reverse("admin:compaction_summary_change", args=[summary.public_id])


def marks(html: str, kind: str) -> list[str]:
    return re.findall(rf'<mark class="cm-fact cm-fact-{kind}"[^>]*>([^<]*)</mark>', html)


def marked_facts(html: str, kind: str) -> set[str]:
    """The facts (not their wording: "EUR 649.00" and "649.00 EUR" are one) marked ``kind``.

    Dates without their year: a memo may write "2026-11-09" where a message said "November 9",
    and the scores count that as the same fact."""
    facts = re.findall(rf'<mark class="cm-fact cm-fact-{kind}" data-fact="([^"]*)"', html)
    return {re.sub(r"^date:\d{4}-", "date:--", fact) for fact in facts}


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
    assert marked_facts(memo, "found") <= marked_facts(originals, "found")
    assert marks(memo, "unsupported") == ["Maria Lopez"]
    assert marks(originals, "missing")
    assert not marks(originals, "unsupported")
    assert not marks(memo, "missing")
    summary = response.context["summary"]
    stands_for = html.split('id="memo-range"')[1].split("</p>")[0]
    assert f"This memo stands for the {len(summary.covered_ids)} messages" in stands_for
    size = html.split('id="memo-size"')[1].split("</dd>")[0]
    assert f"{summary.token_count} tokens, of at most {summary.max_tokens}" in size


def test_values_the_writer_kept_that_no_message_holds_are_listed(
    support: Client, memo_thread: MemoThread
):
    page = support.get(compare_url(memo_thread.summary)).content.decode()

    listed = page.split('id="unsupported-values"')[1].split("</p>")[0]
    assert memo_thread.summary.scores["unsupported_values"] == ["Maria", "Lopez"]
    assert "Maria" in listed
    assert "Lopez" in listed
    assert "(2)" in listed


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
    # The pager sits above the originals and below them, both saying where one is.
    html = second.content.decode()
    pages = -(-len(covered) // 3)
    for where in ("top", "bottom"):
        pager = html.split(f'id="originals-pager-{where}"')[1].split("</p>")[0]
        assert f"page 2 of {pages}" in pager
        assert "?page=1" in pager
        assert "?page=3" in pager


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


def _with_scores(memo_thread: MemoThread, scores: dict) -> Summary:
    Summary.objects.filter(pk=memo_thread.summary.pk).update(scores=scores)
    memo_thread.summary.refresh_from_db()
    return memo_thread.summary


RANGE_SCORES = {
    "scorer": "range/1",
    "fact_recall": 0.4,
    "recent_fact_recall": 0.75,
    "unsupported_rate": 0.0,
    "compression": 0.01,
    "messages": 12,
    "original_tokens": 900,
    "memo_tokens": 40,
    "found_count": 4,
    "missing_count": 6,
    "unsupported_count": 0,
    "found": ["id:ORD-48213"],
    "missing": ["money:EUR 649", "id:TCK-7731", "date:2026-11-05"],
    "unsupported": [],
}


def test_range_scores_show_two_recall_gauges_and_facts_in_words(
    support: Client, memo_thread: MemoThread
):
    summary = _with_scores(memo_thread, RANGE_SCORES)

    response = support.get(compare_url(summary))

    html = response.content.decode()
    assert [gauge.key for gauge in response.context["gauges"]] == ["recent", "range"]
    assert re.search(r'<div class="cm-gauge" id="gauge-recent">.*?value="0.75"', html, re.S)
    assert re.search(r'id="gauge-range">.*?value="0.4".*?4 of 10 key facts in 12', html, re.S)
    assert 'id="low-recall-warning"' not in html
    missing = html.split('id="missing-facts"')[1].split("</p>")[0]
    assert "Amount: EUR 649" in missing
    assert "Ticket id: TCK-7731" in missing
    assert "Date: 5 Nov 2026" in missing
    assert "(the 3 mentioned last)" in missing
    assert "money:EUR 649" not in missing.replace('title="money:EUR 649"', "")
    assert "Scored against every original message of the range" in html


def test_a_memo_under_the_recall_threshold_carries_a_warning(
    support: Client, memo_thread: MemoThread, settings
):
    settings.CONVMEM_MEMO_LOW_RECALL = 0.8
    summary = _with_scores(memo_thread, RANGE_SCORES)

    html = support.get(compare_url(summary)).content.decode()

    warning = html.split('id="low-recall-warning"')[1].split("</p>")[0]
    assert "75% of the facts mentioned last" in warning
    assert "80% threshold" in warning


def test_older_scores_show_one_gauge(support: Client, memo_thread: MemoThread, settings):
    settings.CONVMEM_MEMO_LOW_RECALL = 0.99
    scores = {key: memo_thread.summary.scores[key] for key in memo_thread.summary.scores}
    scores.pop("recent_fact_recall", None)

    response = support.get(compare_url(_with_scores(memo_thread, scores)))

    (gauge,) = response.context["gauges"]
    assert (gauge.key, gauge.value) == ("recall", scores["fact_recall"])
    assert 'id="low-recall-warning"' in response.content.decode()


def test_highlights_name_each_fact_in_words(support: Client, memo_thread: MemoThread):
    page = support.get(compare_url(memo_thread.summary)).content.decode()

    highlights = re.findall(
        r'<mark class="cm-fact cm-fact-(\w+)" data-fact="([^"]*)" title="([^"]*)"', page
    )
    assert {kind for kind, _, _ in highlights} >= {"found", "missing"}
    for kind, fact, title in highlights:
        fact, title = html.unescape(fact), html.unescape(title)
        assert title == f"{fact_label(fact)} \u2014 {admin_views._CLASS_WORDS[kind]}"
    assert any(title.startswith("Order number: ORD-48213") for _, _, title in highlights)


def test_carried_scores_name_what_the_memo_was_judged_by(support: Client, memo_thread: MemoThread):
    scores = {
        **RANGE_SCORES,
        "scorer": "carried/1",
        "carried_from": "sum_base",
        "segment_messages": 11,
        "range_messages": 40,
    }
    summary = _with_scores(memo_thread, scores)

    response = support.get(compare_url(summary))

    html = response.content.decode()
    assert [gauge.key for gauge in response.context["gauges"]] == ["recent", "range"]
    assert re.search(
        r'id="gauge-range">.*?4 of 10 key facts in the memo it extends and 11 new', html, re.S
    )
    assert "Scored against what the memo carries forward" in html
    assert "the range holds 40 messages" in html
