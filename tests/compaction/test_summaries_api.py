"""GET /api/v1/threads/{id}/summaries, and the query counts of the context endpoint."""

from django.db import connection
from django.test.utils import CaptureQueriesContext

from compaction import services as compaction_services
from compaction.models import Summary
from tests.compaction.helpers import grow, post_context, summaries_url
from tests.conftest import make_thread

SMALL = {"window_tokens": 900, "reserve_tokens": 100}


def _with_memo(acme, turns: int):
    thread = make_thread(acme.tenant)
    grow(thread, turns)
    post_context(acme.client, thread, **SMALL)
    pending = Summary.objects.get(thread=thread, status="pending")
    compaction_services.summary_write(summary_id=pending.pk)
    return thread


def test_it_lists_ranges_status_and_scores(acme):
    thread = _with_memo(acme, 30)
    grow(thread, 20, start=30)
    post_context(acme.client, thread, **SMALL)  # asks for the next memo, extending the first

    r = acme.client.get(summaries_url(thread))

    assert r.status_code == 200, r.data
    assert r.data["next"] is None
    pending, ready = r.data["results"]
    assert pending["status"] == "pending"
    assert ready["status"] == "ready"
    summary = Summary.objects.get(public_id=ready["id"])
    assert ready["first_id"] == summary.first.public_id
    assert ready["last_id"] == summary.last.public_id
    assert ready["covered_ids"] == summary.covered_ids
    assert ready["covered_ids"][0] == ready["first_id"]
    assert ready["covered_ids"][-1] == ready["last_id"]
    assert ready["text"] == summary.text
    assert ready["token_count"] == summary.token_count > 0
    assert set(ready["scores"]) >= {"fact_recall", "unsupported_rate", "compression"}
    assert 0 < ready["scores"]["fact_recall"] <= 1
    assert ready["scores"]["unsupported_rate"] == 0
    assert ready["backend"] == "embedded"
    assert ready["chain_depth"] == 0
    assert ready["base_id"] is None
    assert pending["base_id"] == ready["id"]
    assert pending["chain_depth"] == 1
    assert pending["first_id"] == ready["first_id"]


def test_it_filters_by_status_and_pages(acme):
    thread = _with_memo(acme, 30)
    grow(thread, 20, start=30)
    post_context(acme.client, thread, **SMALL)

    ready = acme.client.get(summaries_url(thread), {"status": "ready"})
    page = acme.client.get(summaries_url(thread), {"limit": 1})
    rest = acme.client.get(page.data["next"])
    bad = acme.client.get(summaries_url(thread), {"status": "sleepy"})

    assert [s["status"] for s in ready.data["results"]] == ["ready"]
    assert len(page.data["results"]) == 1
    assert len(rest.data["results"]) == 1
    assert page.data["results"][0]["id"] != rest.data["results"][0]["id"]
    assert bad.status_code == 400


def test_listing_queries_do_not_grow_with_the_summaries(acme):
    thread = _with_memo(acme, 30)
    with CaptureQueriesContext(connection) as one:
        acme.client.get(summaries_url(thread))
    grow(thread, 20, start=30)
    post_context(acme.client, thread, **SMALL)
    compaction_services.summary_write(
        summary_id=Summary.objects.get(thread=thread, status="pending").pk
    )
    assert Summary.objects.filter(thread=thread).count() == 2

    with CaptureQueriesContext(connection) as two:
        acme.client.get(summaries_url(thread))

    assert len(two) == len(one)


def _steady_context_queries(acme, turns: int) -> int:
    thread = _with_memo(acme, turns)
    post_context(acme.client, thread, **SMALL)
    with CaptureQueriesContext(connection) as queries:
        r = post_context(acme.client, thread, **SMALL)
    assert r.status_code == 200
    assert r.data["memo_status"] == "ready"
    return len(queries)


def test_context_queries_are_bounded_and_do_not_grow_with_the_thread(acme, settings):
    # Recall off: whether its candidate read runs depends on the words found (its own bound is
    # checked in tests/compaction/test_recall.py).
    settings.CONVMEM_DEFAULT_RECALL = False
    small = _steady_context_queries(acme, 30)
    large = _steady_context_queries(acme, 300)

    # Recall reads the older messages it found (one statement) when it finds any: that depends
    # on the words, not on the thread's length.
    assert abs(large - small) <= 1
    assert large <= 12
