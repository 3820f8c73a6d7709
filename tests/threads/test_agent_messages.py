"""Agent turns: tool calls and their results, content parts, per-message metadata, model and usage.

Every path must stay valid OpenAI Chat Completions input: a tool message answers an open call
of the assistant turn its tool group starts with, and nothing else follows a turn whose calls
are not all answered.
"""

import pytest
from django.test import override_settings

from convmem.tokens import count_tokens
from tests.conftest import make_thread
from tests.threads.helpers import Rows, edit_url, error_of, messages_url, post
from threads.content import LOW_DETAIL_IMAGE_TOKENS, TOOL_CALL_OVERHEAD
from threads.models import Message


def call(call_id: str, name: str = "get_order", arguments: str = '{"id": "ORD-1"}') -> dict:
    return {"id": call_id, "type": "function", "function": {"name": name, "arguments": arguments}}


@pytest.fixture
def thread(acme):
    thread = make_thread(acme.tenant)
    post(acme.client, messages_url(thread.public_id), {"role": "user", "content": "hi"}, "u0")
    return thread


@pytest.fixture
def append(acme, thread):
    keys = iter(range(10_000))

    def send(body: dict):
        return post(acme.client, messages_url(thread.public_id), body, f"k{next(keys)}")

    return send


def test_an_assistant_turn_with_tool_calls_and_its_results_round_trip(append, acme, thread):
    calls = [call("call_a"), call("call_b", "get_refund", '{"order": "ORD-1"}')]

    asked = append({"role": "assistant", "content": None, "tool_calls": calls, "model": "gpt-x"})
    first = append({"role": "tool", "tool_call_id": "call_b", "content": "refund REF-9 issued"})
    second = append({"role": "tool", "tool_call_id": "call_a", "content": '{"status": "shipped"}'})
    answer = append({"role": "assistant", "content": "It shipped; REF-9 is on its way."})

    assert [r.status_code for r in (asked, first, second, answer)] == [201] * 4
    assert asked.data["tool_calls"] == calls
    assert asked.data["content"] is None  # one null convention (issue 20)
    assert asked.data["model"] == "gpt-x"
    assert first.data["tool_call_id"] == "call_b"
    assert first.data["parent_id"] == asked.data["id"]
    assert answer.data["tool_calls"] is None
    assert answer.data["tool_call_id"] is None
    listed = acme.client.get(messages_url(thread.public_id)).data["results"]
    assert [m["tool_call_id"] for m in listed[-3:-1]] == ["call_b", "call_a"]
    assert listed[-4]["tool_calls"] == calls


def test_tool_calls_are_priced_by_name_and_arguments(append):
    arguments = '{"order_id": "ORD-12345", "include": ["items", "refunds"]}'

    r = append(
        {
            "role": "assistant",
            "content": "Looking.",
            "tool_calls": [call("c1", "get_order", arguments)],
        }
    )

    expected = count_tokens("Looking.") + TOOL_CALL_OVERHEAD
    expected += count_tokens("get_order") + count_tokens(arguments)
    assert r.data["token_count"] == expected


@pytest.mark.parametrize(
    ("bodies", "code"),
    [
        pytest.param(
            [{"role": "tool", "tool_call_id": "call_a", "content": "x"}],
            "tool_result_without_call",
            id="tool-after-a-user-turn",
        ),
        pytest.param(
            [
                {"role": "assistant", "content": "", "tool_calls": [call("call_a")]},
                {"role": "tool", "tool_call_id": "call_z", "content": "x"},
            ],
            "unknown_tool_call",
            id="unknown-call-id",
        ),
        pytest.param(
            [
                {"role": "assistant", "content": "", "tool_calls": [call("call_a")]},
                {"role": "tool", "tool_call_id": "call_a", "content": "x"},
                {"role": "tool", "tool_call_id": "call_a", "content": "again"},
            ],
            "tool_call_answered",
            id="answered-twice",
        ),
        pytest.param(
            [
                {"role": "assistant", "content": "", "tool_calls": [call("a"), call("b")]},
                {"role": "tool", "tool_call_id": "a", "content": "x"},
                {"role": "user", "content": "and?"},
            ],
            "tool_results_pending",
            id="user-turn-before-all-results",
        ),
        pytest.param([{"role": "tool", "content": "x"}], "tool_call_id_required", id="no-call-id"),
        pytest.param(
            [{"role": "user", "content": "x", "tool_calls": [call("a")]}],
            "field_not_for_role",
            id="tool-calls-on-a-user-turn",
        ),
        pytest.param(
            [{"role": "user", "content": "x", "tool_call_id": "a"}],
            "field_not_for_role",
            id="call-id-on-a-user-turn",
        ),
        pytest.param(
            [{"role": "user", "content": "x", "model": "gpt-x"}],
            "field_not_for_role",
            id="model-on-user",
        ),
        pytest.param(
            [{"role": "assistant", "content": "", "tool_calls": [call("a"), call("a")]}],
            "duplicate_tool_call_ids",
            id="duplicate-call-ids",
        ),
        pytest.param(
            [{"role": "assistant", "content": "", "tool_calls": []}],
            "invalid_tool_calls",
            id="empty-tool-calls",
        ),
        pytest.param(
            [{"role": "assistant", "content": "", "tool_calls": [call("a", "bad name!")]}],
            "invalid_tool_calls",
            id="bad-function-name",
        ),
        pytest.param(
            [{"role": "assistant", "content": "", "tool_calls": [call("a", "f", {"x": 1})]}],
            "invalid_tool_calls",
            id="arguments-not-a-string",
        ),
        pytest.param(
            [{"role": "assistant", "content": ""}], "empty_content", id="empty-without-calls"
        ),
        pytest.param([{"role": "user", "content": None}], "invalid", id="null-without-calls"),
        pytest.param(
            [{"role": "assistant", "content": "x", "usage": {"prompt_tokens": -1}}],
            "invalid_usage",
            id="bad-usage",
        ),
    ],
)
def test_invalid_agent_turns_are_refused_with_nothing_written(append, bodies, code):
    *setup, last = bodies
    for body in setup:
        assert append(body).status_code == 201
    before = Rows.now()

    r = append(last)

    assert error_of(r) == (400, code)
    assert Rows.now() == before


def test_a_pending_tool_group_names_the_missing_results(append):
    append({"role": "assistant", "content": "", "tool_calls": [call("a"), call("b"), call("c")]})
    append({"role": "tool", "tool_call_id": "b", "content": "x"})

    r = append({"role": "assistant", "content": "done?"})

    assert error_of(r) == (400, "tool_results_pending")
    assert "a, c" in r.data["detail"]


def test_usage_is_stored_with_its_total(append):
    r = append(
        {
            "role": "assistant",
            "content": "hello",
            "model": "gpt-4o-2024-08-06",
            "usage": {"prompt_tokens": 120, "completion_tokens": 8},
        }
    )

    assert r.data["usage"] == {"prompt_tokens": 120, "completion_tokens": 8, "total_tokens": 128}
    assert Message.objects.get(public_id=r.data["id"]).usage["total_tokens"] == 128


def test_per_message_metadata_is_kept(append):
    r = append({"role": "user", "content": "x", "metadata": {"channel": "email", "n": 3}})

    assert r.data["metadata"] == {"channel": "email", "n": 3}


@override_settings(CONVMEM_IMAGE_PART_TOKENS=700, CONVMEM_FILE_PART_TOKENS=900)
def test_content_parts_keep_references_and_price_them(append):
    parts = [
        {"type": "text", "text": "What is on this receipt?"},
        {"type": "image_url", "image_url": {"url": "https://cdn.example/r.png"}},
        {"type": "image_url", "image_url": {"url": "https://cdn.example/s.png", "detail": "low"}},
        {"type": "file", "file": {"file_id": "file-abc123"}},
        {"type": "text", "text": "Order ORD-7."},
    ]

    r = append({"role": "user", "content": parts})

    assert r.status_code == 201, r.data
    assert r.data["content"] == "What is on this receipt?\n\nOrder ORD-7."
    assert r.data["content_parts"] == parts
    text = count_tokens("What is on this receipt?\n\nOrder ORD-7.")
    assert r.data["token_count"] == text + 700 + LOW_DETAIL_IMAGE_TOKENS + 900


@pytest.mark.parametrize(
    ("parts", "code"),
    [
        pytest.param([], "empty_content", id="no-parts"),
        pytest.param([{"type": "audio"}], "invalid", id="unknown-type"),
        pytest.param([{"type": "text", "text": " "}], "empty_content", id="blank-text"),
        pytest.param(
            [{"type": "image_url", "image_url": {"url": "data:image/png;base64,AAAA"}}],
            "inline_data_not_supported",
            id="inline-image",
        ),
        pytest.param(
            [{"type": "file", "file": {"file_data": "AAAA", "filename": "a.pdf"}}],
            "inline_data_not_supported",
            id="inline-file",
        ),
        pytest.param(
            [{"type": "image_url", "image_url": {"url": "ftp://x/y.png"}}], "invalid", id="ftp"
        ),
        pytest.param(
            [{"type": "image_url", "image_url": {"url": "https://x/y", "detail": "ultra"}}],
            "invalid",
            id="bad-detail",
        ),
    ],
)
def test_malformed_content_parts_are_refused(append, parts, code):
    before = Rows.now()

    r = append({"role": "user", "content": parts})

    assert error_of(r) == (400, code)
    assert Rows.now() == before


def test_images_are_refused_on_assistant_turns(append):
    image = {"type": "image_url", "image_url": {"url": "https://cdn.example/a.png"}}

    r = append({"role": "assistant", "content": [image]})

    assert error_of(r) == (400, "field_not_for_role")


def test_editing_a_tool_result_keeps_its_call_id(append, acme, thread):
    append({"role": "assistant", "content": "", "tool_calls": [call("call_a")]})
    result = append({"role": "tool", "tool_call_id": "call_a", "content": "wrong"})

    r = post(
        acme.client,
        edit_url(thread.public_id, result.data["id"]),
        {"content": "right"},
        "edit-1",
    )

    assert r.status_code == 201, r.data
    assert r.data["tool_call_id"] == "call_a"
    assert r.data["edits_id"] == result.data["id"]


def test_editing_a_tool_calling_turn_keeps_its_calls_unless_new_ones_are_given(
    append, acme, thread
):
    asked = append({"role": "assistant", "content": "one", "tool_calls": [call("call_a")]})
    url = edit_url(thread.public_id, asked.data["id"])

    kept = post(acme.client, url, {"content": "two"}, "edit-1")
    replaced = post(acme.client, url, {"content": None, "tool_calls": [call("call_b")]}, "edit-2")

    assert kept.data["tool_calls"] == [call("call_a")]
    assert replaced.data["tool_calls"] == [call("call_b")]
    assert replaced.data["content"] is None


def image(url: str) -> list[dict]:
    return [
        {"type": "text", "text": "what is this?"},
        {"type": "image_url", "image_url": {"url": url}},
    ]


@pytest.mark.parametrize(
    "url",
    [
        "http://169.254.169.254/latest/meta-data/iam/",  # cloud metadata (link-local)
        "http://127.0.0.1:8080/admin",
        "http://localhost/a.png",  # a name resolving to loopback
        "http://[::1]/a.png",
        "http://[::ffff:127.0.0.1]/a.png",
        "https://10.0.0.7/a.png",
        "https://192.168.1.1/a.png",
        "http://2130706433/a.png",  # 127.0.0.1 spelt as one number
        "http://0.0.0.0/a.png",
    ],
)
def test_image_urls_to_private_loopback_or_link_local_addresses_are_refused(append, url):
    before = Rows.now()

    r = append({"role": "user", "content": image(url)})

    assert error_of(r) == (400, "url_not_allowed")
    assert Rows.now() == before


def test_public_image_urls_are_accepted(append):
    for url in ("https://93.184.215.14/a.png", "https://cdn.example/a.png"):
        assert append({"role": "user", "content": image(url)}).status_code == 201, url


def test_the_allowed_schemes_and_hosts_are_settings(append, settings):
    settings.CONVMEM_PART_URL_SCHEMES = ["https"]
    settings.CONVMEM_PART_URL_HOSTS = ["cdn.example"]

    assert error_of(append({"role": "user", "content": image("http://cdn.example/a.png")})) == (
        400,
        "url_not_allowed",
    )
    assert error_of(append({"role": "user", "content": image("https://evil.example/a.png")})) == (
        400,
        "url_not_allowed",
    )
    for url in ("https://cdn.example/a.png", "https://img.cdn.example/a.png"):
        assert append({"role": "user", "content": image(url)}).status_code == 201, url


def test_private_addresses_may_be_allowed_for_a_model_on_a_private_network(append, settings):
    settings.CONVMEM_PART_URL_ALLOW_PRIVATE = True

    r = append({"role": "user", "content": image("http://10.0.0.7/a.png")})

    assert r.status_code == 201
