"""POST /threads/{id}/messages:batch: several turns in one call, one key, all or nothing."""

from tests.conftest import make_thread, path_ids
from tests.threads.helpers import Rows, error_of, post


def call(call_id: str) -> dict:
    return {"id": call_id, "type": "function", "function": {"name": "get_order", "arguments": "{}"}}


def batch_url(thread_id: str) -> str:
    return f"/api/v1/threads/{thread_id}/messages:batch"


AGENT_STEP = [
    {"role": "assistant", "content": None, "tool_calls": [call("c1"), call("c2")], "model": "m"},
    {"role": "tool", "tool_call_id": "c1", "content": "shipped"},
    {"role": "tool", "tool_call_id": "c2", "content": "refunded"},
]


def test_an_assistant_turn_and_its_tool_results_append_in_one_call(acme):
    thread = make_thread(acme.tenant, turns=1)
    before = path_ids(thread)

    response = post(acme.client, batch_url(thread.public_id), {"messages": AGENT_STEP}, "b1")

    assert response.status_code == 201, response.data
    results = response.data["results"]
    assert [m["role"] for m in results] == ["assistant", "tool", "tool"]
    assert results[0]["content"] is None
    assert results[0]["parent_id"] == before[-1]
    assert [m["parent_id"] for m in results[1:]] == [results[0]["id"], results[1]["id"]]
    assert path_ids(thread) == [*before, *(m["id"] for m in results)]
    thread.refresh_from_db()
    assert thread.active_leaf.public_id == results[-1]["id"]


def test_a_retry_with_the_key_replays_and_writes_nothing(acme):
    thread = make_thread(acme.tenant, turns=1)
    first = post(acme.client, batch_url(thread.public_id), {"messages": AGENT_STEP}, "b1")
    rows = Rows.now()

    again = post(acme.client, batch_url(thread.public_id), {"messages": AGENT_STEP}, "b1")

    assert again.status_code == 201
    assert again["Idempotent-Replayed"] == "true"
    assert again.data == first.data
    assert Rows.now() == rows


def test_one_bad_message_refuses_the_batch_naming_it_and_writes_nothing(acme):
    thread = make_thread(acme.tenant, turns=1)
    bad = [*AGENT_STEP[:2], {"role": "tool", "tool_call_id": "c9", "content": "??"}]
    rows = Rows.now()

    response = post(acme.client, batch_url(thread.public_id), {"messages": bad}, "b1")

    assert error_of(response)[0] == 400
    assert response.json()["detail"].startswith("messages[2]: ")
    assert Rows.now().messages == rows.messages
    assert Rows.now().audit_events == rows.audit_events


def test_the_key_is_required(acme):
    thread = make_thread(acme.tenant, turns=1)

    response = post(acme.client, batch_url(thread.public_id), {"messages": AGENT_STEP})

    assert error_of(response) == (400, "idempotency_key_required")


def test_a_batch_starts_under_the_given_parent(acme):
    thread = make_thread(acme.tenant, turns=3)
    first = path_ids(thread)[1]
    body = {"parent_id": first, "messages": [{"role": "user", "content": "Another question"}]}

    response = post(acme.client, batch_url(thread.public_id), body, "b1")

    assert response.status_code == 201
    assert response.data["results"][0]["parent_id"] == first


def test_an_empty_batch_writes_nothing_and_a_parent_per_message_is_refused(acme):
    thread = make_thread(acme.tenant, turns=1)
    url = batch_url(thread.public_id)
    nested = {"messages": [{"role": "user", "content": "x", "parent_id": None}]}

    empty = post(acme.client, url, {"messages": []}, "b1")
    assert (empty.status_code, empty.data) == (201, {"results": []})
    assert error_of(post(acme.client, url, nested, "b2")) == (400, "unknown_field")
