"""Context for agent conversations: valid Chat Completions input with tool calls, tool results,
content parts; tool groups never split; old bulky tool results elided with a readable marker."""

from compaction.models import AssemblyRecord
from compaction.rendering import elided_tool_result
from compaction.replay import assembly_replay
from compaction.selectors import assembly_items
from convmem.tokens import MESSAGE_OVERHEAD, count_tokens
from tests.compaction.helpers import assert_valid_chat_input, post_context
from tests.conftest import SYSTEM, make_thread
from threads import services
from threads.models import Message, Role

FILLER = "We compared the carriers, the packaging and the insurance terms once more. " * 3


def call(call_id: str, name: str = "lookup_order") -> dict:
    arguments = '{"order_id": "ORD-77"}'
    return {"id": call_id, "type": "function", "function": {"name": name, "arguments": arguments}}


def append(thread, role: str, content, **fields) -> Message:
    return services.message_append(
        thread=thread, actor=SYSTEM, role=role, content=content, **fields
    )


def agent_thread(acme, *, rounds: int, result_size: int = 40):
    """``rounds`` times: a user question, an assistant turn calling two tools, both results,
    and the assistant's answer."""
    thread = make_thread(acme.tenant)
    for index in range(rounds):
        append(thread, "user", f"Question {index}: where is order ORD-{index}? {FILLER}")
        append(thread, "assistant", "", tool_calls=[call(f"a{index}"), call(f"b{index}", "refund")])
        append(
            thread,
            "tool",
            f"status of ORD-{index}: shipped " * result_size,
            tool_call_id=f"a{index}",
        )
        append(thread, "tool", f"refund for ORD-{index}: none", tool_call_id=f"b{index}")
        append(thread, "assistant", f"Order ORD-{index} shipped; no refund is due. {FILLER}")
    thread.refresh_from_db()
    return thread


def test_tool_calls_and_results_render_as_chat_completions_input(acme):
    thread = agent_thread(acme, rounds=2)

    r = post_context(acme.client, thread)

    assert r.status_code == 200, r.data
    assert r.data["format"] == "openai.chat_completions"
    messages = r.data["messages"]
    assert_valid_chat_input(messages)
    calling = messages[1]
    assert calling["role"] == "assistant"
    assert calling["content"] is None
    assert [c["id"] for c in calling["tool_calls"]] == ["a0", "b0"]
    assert messages[2]["role"] == "tool"
    assert messages[2]["tool_call_id"] == "a0"
    assert r.data["sections"]["dropped"] == []


def test_a_leaf_waiting_for_tool_results_is_refused(acme):
    thread = make_thread(acme.tenant)
    append(thread, "user", "where is my order?")
    append(thread, "assistant", "", tool_calls=[call("a"), call("b")])
    append(thread, "tool", "shipped", tool_call_id="a")

    r = post_context(acme.client, thread)

    assert r.status_code == 400
    assert r.data["code"] == "tool_results_pending"
    assert "b" in r.data["detail"]


def test_a_small_window_never_splits_a_tool_group(acme):
    thread = agent_thread(acme, rounds=6)

    for window in range(300, 1400, 37):
        r = post_context(acme.client, thread, window_tokens=window, reserve_tokens=50)
        if r.status_code != 200:
            assert r.data["code"] == "budget_too_small"
            continue
        assert_valid_chat_input(r.data["messages"])
        recent = Message.objects.filter(public_id__in=r.data["sections"]["recent"])
        assert recent.order_by("depth").first().role != Role.TOOL


def test_old_bulky_tool_results_are_elided_with_a_marker_the_model_can_read(acme, settings):
    settings.CONVMEM_DEFAULT_TOOL_RESULT_ELIDE_TOKENS = 100
    thread = agent_thread(acme, rounds=4, result_size=120)
    bulky = Message.objects.filter(thread=thread, role=Role.TOOL, token_count__gt=100)
    first_bulky = bulky.order_by("depth").first()

    r = post_context(acme.client, thread, window_tokens=2500, reserve_tokens=200)

    assert r.status_code == 200, r.data
    assert first_bulky.public_id in r.data["sections"]["elided"]
    assert r.data["sections"]["dropped"] == []
    marker = elided_tool_result(message_id=first_bulky.public_id, tokens=first_bulky.token_count)
    shown = next(m for m in r.data["messages"] if m.get("tool_call_id") == first_bulky.tool_call_id)
    assert shown["content"] == marker
    # the current turns' results are never elided
    assert bulky.order_by("-depth").first().public_id not in r.data["sections"]["elided"]
    assert_valid_chat_input(r.data["messages"])
    # the arithmetic counts the marker, not the result
    record = AssemblyRecord.objects.get(public_id=r.data["assembly_id"])
    item = next(i for i in assembly_items(record) if i["id"] == first_bulky.public_id)
    assert item["tokens"] == count_tokens(marker)
    assert r.data["tokens"]["recent"] == sum(
        i["tokens"] + MESSAGE_OVERHEAD for i in assembly_items(record) if i["kind"] == "message"
    )
    assert assembly_replay(assembly=record).matches


def test_nothing_is_elided_while_the_history_fits(acme, settings):
    settings.CONVMEM_DEFAULT_TOOL_RESULT_ELIDE_TOKENS = 100
    thread = agent_thread(acme, rounds=2, result_size=120)

    r = post_context(acme.client, thread, window_tokens=8192, reserve_tokens=1024)

    assert r.data["sections"]["elided"] == []
    assert r.data["sections"]["dropped"] == []


def test_content_parts_render_as_parts(acme):
    thread = make_thread(acme.tenant)
    parts = [
        {"type": "text", "text": "What does this receipt say?"},
        {"type": "image_url", "image_url": {"url": "https://cdn.example/r.png", "detail": "low"}},
    ]
    append(thread, "user", parts)

    r = post_context(acme.client, thread)

    assert r.data["messages"][-1] == {"role": "user", "content": parts}
    assert_valid_chat_input(r.data["messages"])
    record = AssemblyRecord.objects.get(public_id=r.data["assembly_id"])
    assert assembly_replay(assembly=record).matches


def test_a_tool_result_stored_without_a_call_renders_as_system_output(acme):
    """Rows from before tool calls were stored: valid input, and the arithmetic holds."""
    thread = make_thread(acme.tenant)
    question = append(thread, "user", "status?")
    legacy = Message.objects.create(
        thread=thread,
        parent=question,
        role=Role.TOOL,
        content="shipped yesterday",
        token_count=count_tokens("shipped yesterday"),
        depth=question.depth + 1,
    )
    thread.active_leaf = legacy
    thread.save(update_fields=["active_leaf"])
    append(thread, "assistant", "It shipped yesterday.")

    r = post_context(acme.client, thread)

    assert r.data["messages"][1] == {"role": "system", "content": "Tool output:\nshipped yesterday"}
    assert_valid_chat_input(r.data["messages"])
    expected = sum(count_tokens(m["content"]) + MESSAGE_OVERHEAD for m in r.data["messages"])
    assert r.data["tokens"]["recent"] == expected


def test_the_replay_api_answers_the_same_chat_input(acme):
    thread = agent_thread(acme, rounds=1, result_size=20)
    parts = [{"type": "text", "text": "And this one?"}]
    append(thread, "user", parts)
    r = post_context(acme.client, thread)

    replay = acme.client.get(f"/api/v1/assemblies/{r.data['assembly_id']}/replay")

    assert replay.status_code == 200, replay.data
    assert replay.data["matches"] is True
    # content parts, tool calls and tool_call_id come back as they went in, not as text
    assert replay.json()["messages"] == r.json()["messages"]
