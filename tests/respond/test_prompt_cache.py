"""Prompt-cache hints to the model, and the cached tokens it reports, counted and priced."""

from decimal import Decimal
from typing import Any

from convmem.models import ModelProfile
from tests.conftest import make_thread
from threads.models import Message

BUDGET = {"window_tokens": 4096, "reserve_tokens": 256}


def respond(kit, thread, key: str, **body: Any):
    payload = {"content": "Where is my parcel?", **BUDGET, **body}
    return kit.client.post(
        f"/api/v1/threads/{thread.public_id}/respond",
        payload,
        format="json",
        HTTP_IDEMPOTENCY_KEY=key,
    )


def profile(kit, **fields: Any) -> ModelProfile:
    return ModelProfile.objects.create(
        tenant=kit.tenant,
        name="cached",
        prompt_price="2",
        completion_price="8",
        cached_prompt_price="0.2",
        cache_write_price="2.5",
        **fields,
    )


def on_profile(thread, chosen: ModelProfile):
    thread.profile = chosen
    thread.save(update_fields=["profile"])
    return thread


def test_every_request_carries_the_threads_prompt_cache_key(acme, chat):
    thread = make_thread(acme.tenant, turns=4)

    assert respond(acme, thread, "k1", system="Be brief.").status_code == 201

    sent = chat.requests[0].body
    assert sent["prompt_cache_key"] == thread.public_id
    assert all(isinstance(m.get("content"), str) for m in sent["messages"])  # no breakpoints


def test_a_profile_with_breakpoints_marks_the_last_message_of_the_stable_prefix(acme, chat):
    thread = on_profile(make_thread(acme.tenant, turns=4), profile(acme, cache_breakpoints=True))

    response = respond(acme, thread, "k1", system="Be brief.")

    assert response.status_code == 201, response.data
    sent = chat.requests[0].body["messages"]
    marked = [i for i, m in enumerate(sent) if isinstance(m["content"], list)]
    # system + 4 earlier turns are the stable prefix; the new user turn comes after it.
    assert marked == [4]
    assert sent[4]["content"] == [
        {"type": "text", "text": "turn 3", "cache_control": {"type": "ephemeral"}}
    ]
    assert sent[-1] == {"role": "user", "content": "Where is my parcel?"}


def test_cached_tokens_the_model_reports_are_stored_and_priced_apart(acme, chat):
    thread = on_profile(make_thread(acme.tenant, turns=2), profile(acme))
    chat.configure(
        usage={
            "prompt_tokens": 1000,
            "completion_tokens": 100,
            "total_tokens": 1100,
            "prompt_tokens_details": {"cached_tokens": 800},
        }
    )

    body = respond(acme, thread, "k1").data

    assert body["usage"]["cached_tokens"] == 800
    answer = Message.objects.get(public_id=body["assistant_message"]["id"])
    assert answer.usage["cached_tokens"] == 800
    # 200 plain at 2, 800 cached at 0.2, 100 completion at 8 (per million)
    assert answer.cost == Decimal(200 * 2 + 800 * Decimal("0.2") + 100 * 8) / 1_000_000


def test_appended_usage_takes_either_providers_cache_fields(acme):
    thread = on_profile(make_thread(acme.tenant, turns=1), profile(acme))
    url = f"/api/v1/threads/{thread.public_id}/messages"

    def append(key: str, usage: dict[str, Any]):
        return acme.client.post(
            url,
            {"role": "assistant", "content": "Done.", "usage": usage},
            format="json",
            HTTP_IDEMPOTENCY_KEY=key,
        )

    anthropic = append(
        "a",
        {
            "prompt_tokens": 1000,
            "completion_tokens": 10,
            "cache_read_input_tokens": 600,
            "cache_creation_input_tokens": 300,
        },
    )
    too_many = append("b", {"prompt_tokens": 10, "completion_tokens": 1, "cached_tokens": 11})

    assert anthropic.status_code == 201, anthropic.data
    assert anthropic.data["usage"] == {
        "prompt_tokens": 1000,
        "completion_tokens": 10,
        "total_tokens": 1010,
        "cached_tokens": 600,
        "cache_write_tokens": 300,
    }
    stored = Message.objects.get(public_id=anthropic.data["id"])
    expected = Decimal(100 * 2) + 600 * Decimal("0.2") + 300 * Decimal("2.5") + 10 * 8
    assert stored.cost == expected / 1_000_000
    assert too_many.status_code == 400
    assert too_many.data["code"] == "invalid_usage"


def test_the_usage_api_sums_cached_tokens(acme):
    thread = make_thread(acme.tenant, turns=1)
    acme.client.post(
        f"/api/v1/threads/{thread.public_id}/messages",
        {
            "role": "assistant",
            "content": "Done.",
            "usage": {"prompt_tokens": 50, "completion_tokens": 5, "cached_tokens": 40},
        },
        format="json",
        HTTP_IDEMPOTENCY_KEY="u1",
    )

    totals = acme.client.get("/api/v1/usage").data["totals"]

    assert (totals["prompt_tokens"], totals["cached_tokens"], totals["cache_write_tokens"]) == (
        50,
        40,
        0,
    )
