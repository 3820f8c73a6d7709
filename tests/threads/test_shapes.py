"""One convention for absent values (null, never ""), and the developer role."""

import json

from compaction.models import AssemblyRecord
from compaction.selectors import assembly_items
from tests.conftest import make_thread
from tests.threads.helpers import messages_url, post

CALL = {"id": "c1", "type": "function", "function": {"name": "get_order", "arguments": "{}"}}


def test_a_tool_calling_turn_without_text_reads_back_null_everywhere(acme, acme_exporter):
    thread = make_thread(acme.tenant, turns=1)
    url = messages_url(thread.public_id)
    asked = post(
        acme.client, url, {"role": "assistant", "content": None, "tool_calls": [CALL]}, "a"
    )
    post(acme.client, url, {"role": "tool", "tool_call_id": "c1", "content": "ok"}, "t")

    listed = acme.client.get(url).data["results"]
    tree = acme.client.get(f"/api/v1/threads/{thread.public_id}/tree").data["results"]
    context = acme.client.post(
        f"/api/v1/threads/{thread.public_id}/context", {}, format="json"
    ).data["messages"]
    exported = acme_exporter.client.get(f"/api/v1/threads/{thread.public_id}/export")
    export = json.loads(b"".join(exported.streaming_content))

    assert asked.data["content"] is None
    assert next(m for m in listed if m["id"] == asked.data["id"])["content"] is None
    assert next(m for m in tree if m["id"] == asked.data["id"])["content"] is None
    assert next(m for m in context if m.get("tool_calls"))["content"] is None
    exported = next(m for m in export["threads"][0]["messages"] if m["id"] == asked.data["id"])
    assert exported["content"] is None


def test_turns_without_a_model_say_null(acme):
    thread = make_thread(acme.tenant)
    url = messages_url(thread.public_id)

    user = post(acme.client, url, {"role": "user", "content": "hi"}, "u")
    answer = post(acme.client, url, {"role": "assistant", "content": "hello", "model": None}, "a")
    named = post(acme.client, url, {"role": "assistant", "content": "more", "model": "m-1"}, "b")

    assert user.data["model"] is None
    assert answer.data["model"] is None
    assert named.data["model"] == "m-1"


def test_developer_turns_are_stored_and_rendered_as_developer_messages(acme):
    thread = make_thread(acme.tenant)
    url = messages_url(thread.public_id)
    dev = post(acme.client, url, {"role": "developer", "content": "Answer in French."}, "d")
    post(acme.client, url, {"role": "user", "content": "Hello"}, "u")

    context = acme.client.post(f"/api/v1/threads/{thread.public_id}/context", {}, format="json")

    assert dev.status_code == 201
    assert dev.data["role"] == "developer"
    assert context.data["messages"] == [
        {"role": "developer", "content": "Answer in French."},
        {"role": "user", "content": "Hello"},
    ]
    record = AssemblyRecord.objects.get(public_id=context.data["assembly_id"])
    assert assembly_items(record)[0]["role"] == "developer"
