"""Imports of ChatGPT, Claude and convmem exports: branches kept, idempotent, round-trip."""

import json
from pathlib import Path
from typing import Any

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError

from audit.exports import export_begin
from auditlog.models import AuditEvent
from imports.models import ImportedConversation
from tests.conftest import SYSTEM, path_ids
from threads import services
from threads.models import Message, Thread

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures" / "imports"
CHATGPT = FIXTURES / "chatgpt_conversations.json"
CLAUDE = FIXTURES / "claude_conversations.json"


def import_file(path: Path | str, *args: str) -> str:
    out = __import__("io").StringIO()
    call_command("import_conversations", str(path), "--tenant", "acme", *args, stdout=out)
    return out.getvalue()


def by_source(thread: Thread) -> dict[str, Message]:
    return {
        m.metadata["source_id"]: m
        for m in Message.objects.filter(thread=thread).exclude(role="root")
    }


def path_sources(thread: Thread) -> list[str]:
    nodes = {m.public_id: m for m in Message.objects.filter(thread=thread)}
    return [nodes[i].metadata["source_id"] for i in path_ids(thread)]


def test_a_chatgpt_export_keeps_its_branches_and_its_current_one(acme):
    output = import_file(CHATGPT, "--user-ref", "u-42")

    assert output.strip() == "chatgpt: 2 imported, 0 skipped (imported before), 0 failed."
    thread = Thread.objects.get(tenant=acme.tenant, title="Torn sofa cushion")
    assert thread.user_ref == "u-42"
    # The root, the hidden system message and the custom instructions are no turns.
    assert path_sources(thread) == ["u-1", "a-1", "u-2b", "a-2b", "t-1", "a-3", "u-3", "a-4"]
    nodes = by_source(thread)
    assert set(nodes) == {
        "u-1",
        "a-1",
        "u-2a",
        "a-2a",
        "a-2a-regen",
        "u-2b",
        "a-2b",
        "t-1",
        "a-3",
        "u-3",
        "a-4",
    }
    # The edited question and the regenerated answer stay as siblings.
    assert nodes["u-2a"].parent_id == nodes["u-2b"].parent_id == nodes["a-1"].pk
    assert nodes["a-2a"].parent_id == nodes["a-2a-regen"].parent_id == nodes["u-2a"].pk
    # A message to a tool and its output: a tool call and its result.
    call = nodes["a-2b"]
    assert call.content == ""
    assert call.tool_calls[0]["function"] == {
        "name": "browser",
        "arguments": 'search("furniture courier ORD-5512 tracking")',
    }
    result = nodes["t-1"]
    assert result.role == "tool"
    assert result.tool_call_id == call.tool_calls[0]["id"]
    assert "JD014600006281" in result.content
    # Text, the model, and what the text cannot carry (the image) kept as metadata.
    assert nodes["a-1"].model == "gpt-4o"
    assert nodes["u-1"].model == ""
    assert nodes["u-3"].content == "Here is the torn cushion."
    assert (
        nodes["u-3"].metadata["attachments"][0]["asset_pointer"] == "file-service://file-7QmZxKp2"
    )
    assert nodes["u-1"].metadata["created_at"] == 1717171718.0
    assert all(m.token_count > 0 for m in nodes.values())
    assert AuditEvent.objects.filter(action="thread.imported", thread_public_id=thread.public_id)


def test_importing_the_same_file_twice_creates_nothing_new(acme):
    import_file(CHATGPT, "--user-ref", "u-42")
    counts = (Thread.objects.count(), Message.objects.count(), AuditEvent.objects.count())

    output = import_file(CHATGPT, "--user-ref", "u-42")

    assert output.strip() == "chatgpt: 0 imported, 2 skipped (imported before), 0 failed."
    assert (Thread.objects.count(), Message.objects.count(), AuditEvent.objects.count()) == counts
    assert ImportedConversation.objects.filter(tenant=acme.tenant).count() == 2


def test_a_claude_export_linear_and_branched(acme):
    output = import_file(CLAUDE, "--user-ref", "u-7")

    assert output.strip() == "claude: 2 imported, 0 skipped (imported before), 0 failed."
    lease = Thread.objects.get(title="Lease notice period")
    assert path_sources(lease) == ["c1-m1", "c1-m2", "c1-m3", "c1-m4"]
    nodes = by_source(lease)
    assert [nodes[k].role for k in ("c1-m1", "c1-m2")] == ["user", "assistant"]
    # The attachment's text is what the model read with the question.
    assert "three months' written notice" in nodes["c1-m1"].content
    assert nodes["c1-m1"].metadata["files"] == ["lease.txt"]
    assert nodes["c1-m2"].content.startswith("Clause 9 of your lease")
    assert [b["type"] for b in nodes["c1-m2"].metadata["tool_blocks"]] == [
        "tool_use",
        "tool_result",
    ]
    venue = Thread.objects.get(title="Team offsite venue")
    assert path_sources(venue) == ["c2-m1", "c2-m3", "c2-m4"]
    branches = by_source(venue)
    assert branches["c2-m2"].parent_id == branches["c2-m3"].parent_id


def test_a_file_that_is_no_export_is_refused(acme, tmp_path):
    odd = tmp_path / "odd.json"
    odd.write_text(json.dumps({"hello": "world"}))
    with pytest.raises(CommandError, match="not a ChatGPT or Claude"):
        import_file(odd, "--user-ref", "u-1")
    with pytest.raises(CommandError, match="names no end user"):
        import_file(CHATGPT)


def test_one_odd_conversation_fails_alone(acme, tmp_path):
    data = json.loads(CHATGPT.read_text())
    data[1]["mapping"]["r-1"]["message"]["author"] = None  # unreadable
    broken = tmp_path / "conversations.json"
    broken.write_text(json.dumps(data))

    output = import_file(broken, "--user-ref", "u-1")

    assert output.strip() == "chatgpt: 1 imported, 0 skipped (imported before), 1 failed."
    assert Thread.objects.count() == 1


def _export(acme, thread: Thread) -> dict[str, Any]:
    export = export_begin(tenant=acme.tenant, actor=SYSTEM, thread=thread)
    return json.loads("".join(export.chunks()))["threads"][0]


def _conversation(record: dict[str, Any]) -> dict[str, Any]:
    """A thread's export with its ids replaced by their position and its timestamps left out:
    what must survive an export and an import."""
    position = {m["id"]: i for i, m in enumerate(record["messages"])}
    ref = position.get
    drop = {"id", "created_at", "erased_at", "assembly_id", "parent_id", "edits_id"}
    return {
        "thread": {k: record[k] for k in ("user_ref", "title", "metadata", "profile")},
        "system_prompts": [(p["version"], p["text"]) for p in record["system_prompts"]],
        "active_leaf": ref(record["active_leaf_id"]),
        "messages": [
            {
                **{k: v for k, v in m.items() if k not in drop},
                "parent": ref(m["parent_id"]),
                "edits": ref(m["edits_id"]),
            }
            for m in record["messages"]
        ],
    }


def agent_thread(acme) -> Thread:
    """Branches, an edit, tool calls and results, parts, usage, metadata, two system prompts,
    and the active leaf on the older branch."""
    thread = services.thread_create(
        tenant=acme.tenant,
        actor=SYSTEM,
        user_ref="u-42",
        title="Order",
        metadata={"channel": "web"},
        system="You help with orders.",
    )
    append = services.message_append
    u1 = append(thread=thread, actor=SYSTEM, role="user", content="Where is ORD-1?")
    append(
        thread=thread,
        actor=SYSTEM,
        role="assistant",
        content=None,
        model="gpt-4o",
        usage={"prompt_tokens": 40, "completion_tokens": 9},
        tool_calls=[
            {
                "id": "call_1",
                "type": "function",
                "function": {"name": "get_order", "arguments": '{"id": "ORD-1"}'},
            }
        ],
    )
    append(thread=thread, actor=SYSTEM, role="tool", tool_call_id="call_1", content="shipped")
    first_answer = append(
        thread=thread, actor=SYSTEM, role="assistant", content="It shipped.", metadata={"k": 1}
    )
    services.message_edit(
        thread=thread, actor=SYSTEM, message_public_id=u1.public_id, content="Where is ORD-2?"
    )
    append(
        thread=thread,
        actor=SYSTEM,
        role="user",
        content=[
            {"type": "text", "text": "Photo:"},
            {"type": "image_url", "image_url": {"url": "https://cdn.example/a.jpg"}},
        ],
    )
    services.thread_update(thread=thread, actor=SYSTEM, system="You help with orders, briefly.")
    services.thread_update(
        thread=thread, actor=SYSTEM, active_leaf_public_id=first_answer.public_id, switch_leaf=True
    )
    thread.refresh_from_db()
    return thread


def test_export_import_export_is_the_same_conversation(acme):
    original = _export(acme, agent_thread(acme))
    document = {"schema": "convmem.export/2", "threads": [original]}

    response = acme.client.post("/api/v1/imports", {"data": document}, format="json")

    assert response.status_code == 200, response.data
    assert response.data["format"] == "convmem"
    assert response.data["imported"] == 1
    copy = Thread.objects.get(public_id=response.data["results"][0]["thread_id"])
    again = _export(acme, copy)
    assert again["id"] != original["id"]
    assert _conversation(again) == _conversation(original)


def test_the_api_imports_once_and_says_so(acme, globex):
    data = json.loads(CLAUDE.read_text())
    body = {"data": data, "user_ref": "u-7"}

    first = acme.client.post("/api/v1/imports", body, format="json")
    second = acme.client.post("/api/v1/imports", body, format="json")
    other_tenant = globex.client.post("/api/v1/imports", body, format="json")

    assert first.status_code == 200
    assert [r["status"] for r in first.data["results"]] == ["imported", "imported"]
    assert [r["status"] for r in second.data["results"]] == ["skipped", "skipped"]
    assert [r["thread_id"] for r in second.data["results"]] == [
        r["thread_id"] for r in first.data["results"]
    ]
    assert other_tenant.data["imported"] == 2  # each tenant imports its own copy
    assert Thread.objects.filter(tenant=acme.tenant).count() == 2


def test_the_api_refuses_what_it_cannot_read(acme):
    no_user = acme.client.post(
        "/api/v1/imports", {"data": json.loads(CHATGPT.read_text())}, format="json"
    )
    not_an_export = acme.client.post("/api/v1/imports", {"data": [1, 2]}, format="json")

    assert (no_user.status_code, no_user.data["code"]) == (400, "user_ref_required")
    assert (not_an_export.status_code, not_an_export.data["code"]) == (
        400,
        "unknown_import_format",
    )
    assert Thread.objects.count() == 0
