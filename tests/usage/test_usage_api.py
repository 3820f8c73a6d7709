"""GET /api/v1/usage: tokens and cost per day or month, per tenant and per end user."""

from datetime import datetime, timedelta
from decimal import Decimal

from django.contrib.auth.models import User
from django.db import connection
from django.test import Client
from django.test.utils import CaptureQueriesContext

from compaction.models import Summary
from convmem.models import ModelProfile
from convmem.pricing import exact_cost, profile_prices
from tests.conftest import SYSTEM, make_thread
from threads import services
from threads.models import Message, Thread

DAY1 = datetime.fromisoformat("2026-03-02T10:00:00+00:00")
DAY2 = datetime.fromisoformat("2026-03-05T23:30:00+00:00")
APRIL = datetime.fromisoformat("2026-04-01T08:00:00+00:00")


def answer(thread: Thread, when: datetime, prompt: int, completion: int) -> None:
    """A user turn and an answer carrying usage, dated ``when``."""
    services.message_append(thread=thread, actor=SYSTEM, role="user", content="question")
    message = services.message_append(
        thread=thread,
        actor=SYSTEM,
        role="assistant",
        content="answer",
        model="m",
        usage={"prompt_tokens": prompt, "completion_tokens": completion},
    )
    type(message).objects.filter(pk=message.pk).update(created_at=when)


def memo(thread: Thread, when: datetime, prompt: int, completion: int) -> Summary:
    """A memo whose writer reported tokens, priced as the memo writer prices it, dated ``when``."""
    first = thread.messages.exclude(role="root").order_by("id").first()
    summary = Summary.objects.create(
        thread=thread,
        first=first,
        segment_first=first,
        last=first,
        status=Summary.Status.READY,
        text="memo",
        prompt_tokens=prompt,
        completion_tokens=completion,
        cost=exact_cost(
            prices=profile_prices(thread.profile),
            prompt_tokens=prompt,
            completion_tokens=completion,
        ),
    )
    Summary.objects.filter(pk=summary.pk).update(created_at=when)
    return summary


def priced_thread(tenant, *, user_ref: str, prompt: str, completion: str) -> Thread:
    profile = ModelProfile.objects.create(
        tenant=tenant,
        name=f"p-{user_ref}",
        prompt_price=Decimal(prompt),
        completion_price=Decimal(completion),
    )
    thread = make_thread(tenant, user_ref=user_ref)
    thread.profile = profile
    thread.save(update_fields=["profile"])
    return thread


def rollup(kit, **params):
    response = kit.client.get("/api/v1/usage", params)
    assert response.status_code == 200, response.data
    return response.json()


def test_it_sums_turns_and_memos_per_day_with_profile_prices(acme, settings):
    settings.CONVMEM_DEFAULT_PROMPT_PRICE = "1"
    settings.CONVMEM_DEFAULT_COMPLETION_PRICE = "3"
    alice = priced_thread(acme.tenant, user_ref="alice", prompt="2.5", completion="10")
    bob = make_thread(acme.tenant, user_ref="bob")  # no profile: the default prices
    answer(alice, DAY1, 1000, 200)
    answer(alice, DAY1, 3000, 400)
    answer(bob, DAY1, 500, 100)
    answer(alice, DAY2, 100_000, 1_000)
    memo(alice, DAY2, 2_000, 300)
    answer(alice, APRIL, 1, 1)  # outside the period

    body = rollup(acme, **{"from": "2026-03-01", "to": "2026-03-31"})
    assert body["from"] == "2026-03-01"
    assert body["to"] == "2026-03-31"
    assert body["group_by"] == "day"
    assert body["user_ref"] is None
    day1, day2 = body["results"]
    # alice: (4000 * 2.5 + 600 * 10) / 1e6; bob: (500 * 1 + 100 * 3) / 1e6
    assert day1 == {
        "period": "2026-03-02",
        "turns": 3,
        "prompt_tokens": 4500,
        "completion_tokens": 700,
        "cached_tokens": 0,
        "cache_write_tokens": 0,
        "memos": 0,
        "memo_prompt_tokens": 0,
        "memo_completion_tokens": 0,
        "total_tokens": 5200,
        "cost": "0.016800",
    }
    assert day2["period"] == "2026-03-05"
    assert (day2["turns"], day2["memos"]) == (1, 1)
    assert (day2["memo_prompt_tokens"], day2["memo_completion_tokens"]) == (2000, 300)
    # (100000 * 2.5 + 1000 * 10 + 2000 * 2.5 + 300 * 10) / 1e6
    assert day2["cost"] == "0.268000"
    assert body["totals"]["turns"] == 4
    assert body["totals"]["memos"] == 1
    assert body["totals"]["cost"] == "0.284800"


def test_a_price_change_does_not_reprice_the_past(acme):
    alice = priced_thread(acme.tenant, user_ref="alice", prompt="1", completion="2")
    answer(alice, DAY1, 1_000_000, 1_000_000)
    ModelProfile.objects.filter(pk=alice.profile_id).update(prompt_price=10, completion_price=20)
    alice.refresh_from_db()
    answer(alice, DAY2, 1_000_000, 1_000_000)

    body = rollup(acme, **{"from": "2026-03-01", "to": "2026-03-31"})

    assert [(r["period"], r["cost"]) for r in body["results"]] == [
        ("2026-03-02", "3.000000"),
        ("2026-03-05", "30.000000"),
    ]


def test_one_end_user_and_months(acme):
    alice = priced_thread(acme.tenant, user_ref="alice", prompt="1", completion="1")
    bob = priced_thread(acme.tenant, user_ref="bob", prompt="1", completion="1")
    answer(alice, DAY1, 1_000_000, 0)
    answer(bob, DAY2, 2_000_000, 0)
    answer(alice, APRIL, 0, 3_000_000)
    body = rollup(acme, **{"from": "2026-03-01", "to": "2026-04-30", "group_by": "month"})
    assert [(r["period"], r["cost"]) for r in body["results"]] == [
        ("2026-03-01", "3.000000"),
        ("2026-04-01", "3.000000"),
    ]
    only_alice = rollup(
        acme, **{"from": "2026-03-01", "to": "2026-04-30", "group_by": "month", "user_ref": "alice"}
    )
    assert only_alice["user_ref"] == "alice"
    assert [(r["period"], r["turns"]) for r in only_alice["results"]] == [
        ("2026-03-01", 1),
        ("2026-04-01", 1),
    ]
    assert only_alice["totals"]["cost"] == "4.000000"


def test_it_counts_only_the_callers_tenant(acme, globex):
    answer(make_thread(globex.tenant), DAY1, 10, 10)
    body = rollup(acme, **{"from": "2026-03-01", "to": "2026-03-31"})
    assert body["results"] == []
    assert body["totals"]["turns"] == 0
    assert rollup(globex, **{"from": "2026-03-01", "to": "2026-03-31"})["totals"]["turns"] == 1


def test_the_default_period_is_the_last_30_days(acme):
    body = rollup(acme)
    start, end = (datetime.fromisoformat(body[k]).date() for k in ("from", "to"))
    assert end - start == timedelta(days=29)


def test_bad_periods_are_400(acme):
    cases = [
        ({"from": "2026-03-05", "to": "2026-03-01"}, "invalid_period"),
        ({"from": "2025-01-01", "to": "2026-03-01"}, "invalid_period"),
        ({"group_by": "week"}, "invalid"),
        ({"from": "yesterday"}, "invalid"),
        ({"from": ""}, "invalid"),
        ({"user_ref": ""}, "invalid"),
    ]
    for params, code in cases:
        response = acme.client.get("/api/v1/usage", params)
        assert response.status_code == 400, params
        assert response.data["code"] == code


def test_the_queries_do_not_grow_with_the_turns(acme):
    thread = make_thread(acme.tenant)
    answer(thread, DAY1, 1, 1)
    params = {"from": "2026-03-01", "to": "2026-03-31"}
    with CaptureQueriesContext(connection) as few:
        rollup(acme, **params)
    for day in range(30):
        answer(thread, DAY1 + timedelta(days=day % 20), 1, 1)
    with CaptureQueriesContext(connection) as many:
        body = rollup(acme, **params)
    assert body["totals"]["turns"] == 31
    assert len(many.captured_queries) == len(few.captured_queries)


def test_usage_out_of_range_is_refused_on_append(acme):
    thread = make_thread(acme.tenant)
    services.message_append(thread=thread, actor=SYSTEM, role="user", content="question")
    url = f"/api/v1/threads/{thread.public_id}/messages"
    for number, usage in enumerate(
        (
            {"prompt_tokens": 10**12 + 1, "completion_tokens": 0},
            {"prompt_tokens": 10**19, "completion_tokens": 0},
            {"prompt_tokens": 5, "completion_tokens": -1},
        )
    ):
        response = acme.client.post(
            url,
            {"role": "assistant", "content": "answer", "usage": usage},
            format="json",
            HTTP_IDEMPOTENCY_KEY=f"k{number}",
        )
        assert response.status_code == 400, usage
        assert response.data["code"] == "invalid_usage"
    assert Message.objects.filter(thread=thread, role="assistant").count() == 0


def test_a_turn_stored_with_huge_usage_before_the_bound_does_not_break_the_rollup(acme):
    """Rows written before usage was bounded (10^19 prompt tokens: past a bigint) still sum."""
    thread = make_thread(acme.tenant)
    answer(thread, DAY1, 10, 5)
    huge = answer_row(thread)
    Message.objects.filter(pk=huge.pk).update(
        usage={"prompt_tokens": 10**19, "completion_tokens": 10**20, "total_tokens": 11 * 10**19}
    )
    answer(thread, DAY1, 7, 3)

    body = rollup(acme, **{"from": "2026-03-01", "to": "2026-03-31"})
    # (Exact on PostgreSQL; SQLite keeps integers past 2^63 as floating point.)
    assert body["totals"]["turns"] == 2
    assert body["totals"]["prompt_tokens"] >= 10**19
    assert body["totals"]["completion_tokens"] >= 10**20
    page = Client()
    page.force_login(User.objects.create_superuser("root", password="a-long-pass-1"))
    admin = page.get(
        "/admin/usage/usagereport/",
        {"tenant": acme.tenant.pk, "start": "2026-03-01", "end": "2026-03-31", "group_by": "day"},
    )
    assert admin.status_code == 200


def answer_row(thread: Thread) -> Message:
    return Message.objects.filter(thread=thread, role="assistant").latest("id")


def test_days_at_the_end_of_the_calendar_are_400(acme):
    for params in (
        {"to": "9999-12-31"},
        {"from": "9999-12-30", "to": "9999-12-31"},
        {"from": "0001-01-01", "to": "0001-01-05"},
        {"to": "0001-01-05"},
    ):
        response = acme.client.get("/api/v1/usage", params)
        assert response.status_code == 400, params
        assert response.data["code"] == "invalid_period"
    page = Client()
    page.force_login(User.objects.create_superuser("root", password="a-long-pass-1"))
    admin = page.get(
        "/admin/usage/usagereport/",
        {"tenant": acme.tenant.pk, "start": "9999-12-01", "end": "9999-12-31", "group_by": "day"},
    )
    assert admin.status_code == 200
    assert "9998-12-31" in admin.content.decode()
