"""What the model sends that the database cannot store, and what its errors must not reveal.

The chat server is real (tests/support/chat_server.py) and sends exactly what a misbehaving
model server would: NULs and lone surrogates in tokens, a 500-character model name, a long
finish reason, usage out of range or not integers, an answer over the content limit, HTML
error pages, and a base URL with credentials in it.
"""

import socket
import threading

import pytest

from respond.chat import ModelError, ModelParams, chat_stream_open
from respond.models import RespondRun
from tests.conftest import make_thread
from tests.respond.conftest import REPLY, sse_events
from tests.respond.test_respond import respond, streamed
from threads.models import Message


def answer_of(thread) -> Message:
    return Message.objects.get(thread=thread, role="assistant")


@pytest.mark.parametrize("stream", [True, False])
def test_nul_and_lone_surrogates_in_tokens_are_replaced(acme, chat, stream):
    chat.configure(reply="Order \x00ORD-1 ships \ud800today.")
    thread = make_thread(acme.tenant)
    response = respond(acme, thread, "k1", stream=stream)
    if stream:
        assert streamed(response)[-1][0] == "done"
    else:
        assert response.status_code == 201, response.data
    answer = answer_of(thread)
    assert answer.status == "complete"
    assert answer.content == "Order \ufffdORD-1 ships \ufffdtoday."


def test_a_model_name_and_finish_reason_too_long_are_cut(acme, chat):
    chat.configure(model_name="m" * 500, finish_reason="f" * 100)
    thread = make_thread(acme.tenant)
    response = respond(acme, thread, "k1")
    assert response.status_code == 201, response.data
    assert response.data["assistant_message"]["model"] == "m" * 128
    assert response.data["finish_reason"] == "f" * 32
    assert answer_of(thread).content == REPLY


@pytest.mark.parametrize(
    "usage",
    [
        {"prompt_tokens": 10**20, "completion_tokens": 5},
        {"prompt_tokens": -7, "completion_tokens": 5},
        {"prompt_tokens": 1.5, "completion_tokens": 5},
        {"prompt_tokens": "12", "completion_tokens": 5},
    ],
)
def test_usage_a_turn_cannot_store_is_replaced_by_an_estimate(acme, chat, usage):
    chat.configure(usage=usage)
    thread = make_thread(acme.tenant)
    response = respond(acme, thread, "k1")
    assert response.status_code == 201, response.data
    stored = answer_of(thread).usage
    assert stored["estimated"] is True
    assert 0 < stored["prompt_tokens"] < 10**6
    assert response.data["cost"] is not None
    replay = respond(acme, thread, "k1")
    assert replay.status_code == 201
    assert replay.data["usage"] == response.data["usage"]


@pytest.mark.parametrize("stream", [True, False])
def test_an_answer_over_the_content_limit_is_stored_cut_as_interrupted(
    acme, chat, settings, stream
):
    settings.CONVMEM_MAX_CONTENT_CHARS = 30
    thread = make_thread(acme.tenant)
    response = respond(acme, thread, "k1", stream=stream, content="Where is my order?")
    if stream:
        events = streamed(response)
        assert events[-1][0] == "error"
        assert events[-1][1]["code"] == "answer_too_long"
        sent = "".join(data["text"] for name, data in events if name == "token")
        assert sent == REPLY[:30]
    else:
        assert response.status_code == 502
        assert response.data["code"] == "answer_too_long"
    answer = answer_of(thread)
    assert answer.status == "interrupted"
    assert answer.content == REPLY[:30]
    assert RespondRun.objects.get().error_code == "answer_too_long"


def test_a_stream_whose_thread_is_deleted_meanwhile_ends_with_an_error(acme, chat):
    thread = make_thread(acme.tenant)
    response = respond(acme, thread, "k1", stream=True)
    chunks = iter(response.streaming_content)
    first = next(chunks)  # the turn event: the answer is being streamed
    assert b"event: turn" in first
    assert acme.client.delete(f"/api/v1/threads/{thread.public_id}").status_code == 200
    events = sse_events(first + b"".join(chunks))
    assert events[-1][0] == "error"
    assert events[-1][1]["code"] == "not_found"
    assert not Message.objects.filter(thread=thread, role="assistant").exists()


@pytest.mark.parametrize(
    ("mode", "tokens"),
    [
        # A 200 whose body is JSON, not an event stream: nothing can be read from it.
        ("malformed", []),
        # An error chunk after the first word, as OpenAI's servers report a late failure.
        ("stream_error", ["The "]),
    ],
)
def test_a_reply_that_cannot_be_read_ends_the_stream_with_a_retryable_error(
    acme, chat, mode, tokens
):
    chat.configure(mode=mode, reply="The parcel ships today.")
    thread = make_thread(acme.tenant)
    events = streamed(respond(acme, thread, "k1", stream=True))
    assert [data["text"] for name, data in events if name == "token"] == tokens
    name, data = events[-1]
    assert name == "error"
    assert data["code"] == "model_unavailable"
    assert data["detail"].startswith("the chat model's reply could not be read")
    answers = Message.objects.filter(thread=thread, role="assistant")
    # What was streamed before the failure is kept as an interrupted answer; nothing else.
    assert [(m.status, m.content) for m in answers] == ([("interrupted", "The ")] if tokens else [])


def test_error_details_carry_no_url_credentials_or_upstream_text(acme, chat, settings):
    settings.CONVMEM_CHAT_BASE_URL = chat.base_url.replace("http://", "http://bob:s3cret@")
    chat.configure(mode="error_html")
    thread = make_thread(acme.tenant)
    response = respond(acme, thread, "k1")
    assert response.status_code == 503
    detail = response.data["detail"]
    for secret in ("s3cret", "bob", "127.0.0.1", "<html>", "gpu"):
        assert secret not in detail
    assert "HTTP 502" in detail


def test_an_unreachable_model_is_named_without_its_address(acme, settings):
    settings.CONVMEM_CHAT_BASE_URL = "http://alice:hunter2@127.0.0.1:9/v1"
    thread = make_thread(acme.tenant)
    response = respond(acme, thread, "k1")
    assert response.status_code == 503
    detail = response.data["detail"]
    assert detail.startswith("the chat model could not be reached")
    for secret in ("hunter2", "alice", "127.0.0.1"):
        assert secret not in detail


def test_a_refusal_whose_body_is_cut_keeps_its_status(settings):
    """A server that refuses (400) and drops the connection inside the body it announced: the
    error is still the refusal's, not an unreachable model's (and a 400 is not retried)."""
    server = socket.create_server(("127.0.0.1", 0))
    settings.CONVMEM_CHAT_BASE_URL = f"http://127.0.0.1:{server.getsockname()[1]}/v1"

    def refuse_once() -> None:
        connection, _ = server.accept()
        with connection:
            connection.recv(65536)
            connection.sendall(b"HTTP/1.1 400 Bad Request\r\nContent-Length: 1000\r\n\r\n{")

    refusing = threading.Thread(target=refuse_once, daemon=True)
    refusing.start()
    with pytest.raises(ModelError) as raised:
        chat_stream_open(
            messages=[{"role": "user", "content": "Hello"}],
            params=ModelParams(model="m", max_tokens=16),
        )
    refusing.join(5)
    server.close()
    assert raised.value.detail == "the chat model answered HTTP 400"
    assert not raised.value.retryable
