"""POST /threads/{id}/respond in one process: the turn, the model call, streaming, replays."""

from typing import Any

import pytest
from django.core.signals import request_finished
from django.db import close_old_connections
from django.utils import timezone
from rest_framework.test import APIRequestFactory

from compaction.models import AssemblyRecord
from respond.models import RespondRun
from respond.views import RespondView
from tests.conftest import make_thread, path_ids
from tests.respond.conftest import CHAT_MODEL, REPLY, sse_events
from tests.support.chat_server import ChatServer
from threads.models import Message

BUDGET = {"window_tokens": 4096, "reserve_tokens": 256}


def respond(kit, thread, key: str, **body: Any):
    payload = {"content": "My order ORD-1234 arrived broken.", **BUDGET, **body}
    return kit.client.post(
        f"/api/v1/threads/{thread.public_id}/respond",
        payload,
        format="json",
        HTTP_IDEMPOTENCY_KEY=key,
    )


def streamed(response) -> list[tuple[str, dict[str, Any]]]:
    return sse_events(b"".join(response.streaming_content))


def test_it_stores_the_turn_and_the_answer(acme, chat):
    thread = make_thread(acme.tenant, turns=2)
    response = respond(acme, thread, "k1", system="You are a shop assistant.")
    assert response.status_code == 201, response.data
    body = response.data
    user, answer = body["user_message"], body["assistant_message"]
    assert user["role"] == "user"
    assert user["content"] == "My order ORD-1234 arrived broken."
    assert answer["role"] == "assistant"
    assert answer["content"] == REPLY
    assert answer["status"] == "complete"
    assert answer["parent_id"] == user["id"]
    assert answer["assembly_id"] == body["assembly_id"]
    assert answer["model"] == CHAT_MODEL
    sent = chat.requests[0].body
    prompt_words = sum(len(m["content"].split()) for m in sent["messages"])
    expected_usage = {
        "prompt_tokens": prompt_words,
        "completion_tokens": len(REPLY.split()),
        "total_tokens": prompt_words + len(REPLY.split()),
    }
    assert answer["usage"] == expected_usage
    assert body["usage"] == expected_usage
    assert body["finish_reason"] == "stop"
    assert body["cost"] == "0.000000"
    assert body["currency"] == "USD"
    assert path_ids(thread)[-2:] == [user["id"], answer["id"]]
    # What the model got: the assembled input ending with the user turn, capped by the reserve.
    assert sent["model"] == CHAT_MODEL
    assert sent["stream"] is True
    assert sent["stream_options"] == {"include_usage": True}
    assert sent["max_tokens"] == 256
    assert sent["messages"][0] == {"role": "system", "content": "You are a shop assistant."}
    assert sent["messages"][-1] == {"role": "user", "content": user["content"]}


def test_a_turn_of_content_parts_reaches_the_model_as_its_parts(acme, settings):
    parts = [
        {"type": "text", "text": "My order ORD-1234 arrived broken."},
        {"type": "text", "text": "Call me on 555-0100."},
    ]
    # No fixed reply: the server answers with the fact-bearing lines of the last user turn.
    with ChatServer() as server:
        settings.CONVMEM_CHAT_BASE_URL = server.base_url
        settings.CONVMEM_CHAT_MODEL = CHAT_MODEL
        response = respond(acme, make_thread(acme.tenant, turns=2), "parts", content=parts)

    assert response.status_code == 201, response.data
    assert server.requests[-1].body["messages"][-1] == {"role": "user", "content": parts}
    answer = response.data["assistant_message"]["content"]
    assert "ORD-1234" in answer
    assert "555-0100." in answer


def test_it_streams_tokens_then_the_stored_turn(acme, chat):
    thread = make_thread(acme.tenant)
    response = respond(acme, thread, "k1", stream=True)
    assert response.status_code == 200
    assert response["Content-Type"] == "text/event-stream; charset=utf-8"
    assert response["Cache-Control"] == "no-cache"
    assert response["X-Accel-Buffering"] == "no"
    events = streamed(response)
    names = [name for name, _ in events]
    assert names[0] == "turn"
    assert set(names[1:-1]) == {"token"}
    assert names[-1] == "done"
    assert "".join(data["text"] for name, data in events if name == "token") == REPLY
    turn, done = events[0][1], events[-1][1]
    assert turn["replayed"] is False
    assert turn["resumed"] is False
    assert turn["user_message_id"] == done["user_message"]["id"]
    assert turn["assembly_id"] == done["assembly_id"]
    stored = Message.objects.get(public_id=done["assistant_message"]["id"])
    assert stored.content == REPLY
    assert stored.status == "complete"
    assert stored.usage == done["usage"]


def test_a_retry_replays_and_never_makes_a_second_turn(acme, chat):
    thread = make_thread(acme.tenant)
    first = respond(acme, thread, "k1")
    again = respond(acme, thread, "k1")
    assert again.status_code == 201
    assert again["Idempotent-Replayed"] == "true"
    assert again.data == first.data
    # Retried as a stream: the stored answer, as events.
    as_stream = respond(acme, thread, "k1", stream=True)
    assert as_stream["Idempotent-Replayed"] == "true"
    events = streamed(as_stream)
    assert [name for name, _ in events] == ["turn", "token", "done"]
    assert events[0][1]["replayed"] is True
    assert events[1][1] == {"text": REPLY}
    assert events[2][1] == first.data
    assert len(chat.requests) == 1
    assert Message.objects.filter(thread=thread).exclude(role="root").count() == 2


def test_the_key_is_required_and_bound_to_the_body(acme, chat):
    thread = make_thread(acme.tenant)
    url = f"/api/v1/threads/{thread.public_id}/respond"
    missing = acme.client.post(url, {"content": "hi"}, format="json")
    assert missing.status_code == 400
    assert missing.data["code"] == "idempotency_key_required"
    assert respond(acme, thread, "k1").status_code == 201
    reused = respond(acme, thread, "k1", content="Something else")
    assert reused.status_code == 422
    assert reused.data["code"] == "idempotency_key_reused"


def test_the_profile_names_the_model_and_prices_the_answer(acme, chat):
    from convmem.models import ModelProfile

    profile = ModelProfile.objects.create(
        tenant=acme.tenant,
        name="premium",
        model="premium-model",
        prompt_price="2.5",
        completion_price="10",
        currency="EUR",
    )
    thread = make_thread(acme.tenant)
    thread.profile = profile
    thread.save(update_fields=["profile"])
    body = respond(acme, thread, "k1").data
    assert body["currency"] == "EUR"
    assert chat.requests[0].body["model"] == "premium-model"
    assert body["assistant_message"]["model"] == "premium-model"
    usage = body["usage"]
    cost = (usage["prompt_tokens"] * 2.5 + usage["completion_tokens"] * 10) / 1_000_000
    assert body["cost"] == f"{cost:.6f}"


def test_a_budget_that_cannot_fit_writes_nothing(acme, chat):
    thread = make_thread(acme.tenant)
    response = respond(acme, thread, "k1", window_tokens=20, reserve_tokens=10)
    assert response.status_code == 400
    assert response.data["code"] == "budget_too_small"
    over = respond(acme, thread, "k2", max_tokens=257)
    assert over.status_code == 400
    assert over.data["code"] == "max_tokens_over_reserve"
    assert Message.objects.filter(thread=thread).exclude(role="root").count() == 0
    assert RespondRun.objects.count() == 0
    assert chat.requests == []
    # The key was released with the refusal: it may be used for the corrected request.
    assert respond(acme, thread, "k1").status_code == 201


def test_another_tenants_thread_is_404(acme, globex, chat):
    thread = make_thread(globex.tenant)
    assert respond(acme, thread, "k1").status_code == 404
    assert chat.requests == []


def test_a_model_that_is_down_keeps_the_turn_and_a_retry_resumes(acme, chat):
    thread = make_thread(acme.tenant)
    chat.configure(mode="error500")
    down = respond(acme, thread, "k1")
    assert down.status_code == 503
    assert down.data["code"] == "model_unavailable"
    run = RespondRun.objects.get()
    assert run.status == "failed"
    assert run.assistant_message is None
    chat.configure(mode="ok")
    retry = respond(acme, thread, "k1", stream=True)
    events = streamed(retry)
    assert events[0][1]["resumed"] is True
    assert events[-1][0] == "done"
    done = events[-1][1]
    assert done["assistant_message"]["content"] == REPLY
    assert done["assistant_message"]["edits_id"] is None
    assert done["user_message"]["id"] == run.user_message.public_id
    assert path_ids(thread) == [done["user_message"]["id"], done["assistant_message"]["id"]]


def test_a_model_that_refuses_is_a_502(acme, chat, settings):
    settings.CONVMEM_CHAT_API_KEY = "wrong"
    chat.api_key = "right"
    thread = make_thread(acme.tenant)
    response = respond(acme, thread, "k1")
    assert response.status_code == 502
    assert response.data["code"] == "model_error"
    assert "401" in response.data["detail"]


@pytest.mark.parametrize("stream", [True, False])
def test_a_model_failing_mid_answer_leaves_an_interrupted_turn(acme, chat, stream):
    thread = make_thread(acme.tenant)
    chat.configure(stream_fail_after=4)
    response = respond(acme, thread, "k1", stream=stream)
    if stream:
        events = streamed(response)
        assert events[-1][0] == "error"
        assert events[-1][1]["code"] == "model_unavailable"
        assert events[-1][1]["user_message_id"] == events[0][1]["user_message_id"]
    else:
        assert response.status_code == 503
        assert response.data["code"] == "model_unavailable"
    partial = Message.objects.get(thread=thread, role="assistant")
    assert partial.status == "interrupted"
    assert partial.content == " ".join(REPLY.split()[:4]) + " "
    # No usage chunk arrived: estimated, with the input's tokens and the text received.
    assert partial.usage["estimated"] is True
    assert partial.usage["completion_tokens"] > 0
    assembly = AssemblyRecord.objects.get(public_id=partial.assembly_public_id)
    assert partial.usage["prompt_tokens"] == assembly.tokens_shown()["total"]

    chat.configure(stream_fail_after=0)
    completed = respond(acme, thread, "k1").data["assistant_message"]
    assert completed["content"] == REPLY
    assert completed["edits_id"] == partial.public_id
    assert completed["parent_id"] == partial.parent.public_id
    assert path_ids(thread) == [completed["parent_id"], completed["id"]]


def test_a_client_that_goes_away_leaves_what_it_was_sent(acme, chat):
    thread = make_thread(acme.tenant)
    # The view itself (the test client wraps streams in its own closing logic).
    request = APIRequestFactory().post(
        f"/api/v1/threads/{thread.public_id}/respond",
        {"content": "My order ORD-1234 arrived broken.", **BUDGET, "stream": True},
        format="json",
        HTTP_AUTHORIZATION=f"Bearer {acme.key}",
        HTTP_IDEMPOTENCY_KEY="k1",
    )
    response = RespondView.as_view()(request, thread_id=thread.public_id)
    chunks = iter(response.streaming_content)
    received = [next(chunks) for _ in range(4)]  # turn + 3 tokens
    # What a WSGI server does when the client is gone (without closing the test's connection,
    # as the end of a real request would).
    request_finished.disconnect(close_old_connections)
    try:
        response.close()
    finally:
        request_finished.connect(close_old_connections)
    sent = "".join(data["text"] for name, data in sse_events(b"".join(received)) if name == "token")
    partial = Message.objects.get(thread=thread, role="assistant")
    assert partial.status == "interrupted"
    assert partial.content == sent
    run = RespondRun.objects.get()
    assert run.status == "interrupted"
    assert run.error_code == "client_disconnected"

    retry = respond(acme, thread, "k1")
    assert retry.status_code == 201
    answer = retry.data["assistant_message"]
    assert answer["content"] == REPLY
    assert answer["status"] == "complete"
    assert answer["edits_id"] == partial.public_id
    # One user turn, one answer on the path; the interrupted answer stays beside it.
    user_turns = Message.objects.filter(thread=thread, role="user")
    assert user_turns.count() == 1
    assert path_ids(thread) == [user_turns.get().public_id, answer["id"]]
    assert respond(acme, thread, "k1").data == retry.data


def test_a_retry_while_the_answer_streams_is_409(acme, chat):
    thread = make_thread(acme.tenant)
    first = respond(acme, thread, "k1", stream=True)
    chunks = iter(first.streaming_content)
    next(chunks)
    busy = respond(acme, thread, "k1")
    assert busy.status_code == 409
    assert busy.data["code"] == "idempotency_key_in_flight"
    rest = sse_events(b"".join(chunks))
    assert rest[-1][0] == "done"
    assert respond(acme, thread, "k1").status_code == 201


def test_an_answer_whose_request_died_is_taken_over_once(acme, chat):
    thread = make_thread(acme.tenant)
    first = respond(acme, thread, "k1", stream=True)
    chunks = iter(first.streaming_content)
    next(chunks)
    # The first request stops renewing its lease (as a killed web process would).
    RespondRun.objects.update(leased_until=timezone.now() - timezone.timedelta(seconds=1))
    retry = respond(acme, thread, "k1")
    assert retry.status_code == 201
    # The first request comes back to life: its claim is gone, it stores nothing.
    rest = sse_events(b"".join(chunks))
    assert rest[-1][0] == "error"
    assert rest[-1][1]["code"] == "idempotency_key_in_flight"
    answers = Message.objects.filter(thread=thread, role="assistant")
    assert list(answers.values_list("public_id", flat=True)) == [
        retry.data["assistant_message"]["id"]
    ]
    assert RespondRun.objects.get().attempt == 2


def test_the_turn_event_leaves_before_the_model_is_asked(acme, chat):
    thread = make_thread(acme.tenant)
    response = respond(acme, thread, "k1", stream=True)
    chunks = iter(response.streaming_content)

    ((name, turn),) = sse_events(next(chunks))

    # The turn and its input are stored and announced; the model has not been asked yet.
    assert name == "turn"
    assert chat.requests == []
    record = AssemblyRecord.objects.get(public_id=turn["assembly_id"])
    assert Message.objects.get(public_id=turn["user_message_id"]).pk == record.leaf_id
    rest = sse_events(b"".join(chunks))
    assert [name for name, _ in rest][-1] == "done"
    assert {name for name, _ in rest[:-1]} == {"token"}
    assert len(chat.requests) == 1


def test_a_stream_whose_model_is_down_says_so_after_the_turn(acme, chat):
    thread = make_thread(acme.tenant)
    chat.configure(mode="error500")

    events = streamed(respond(acme, thread, "k1", stream=True))

    assert [name for name, _ in events] == ["turn", "error"]
    assert events[1][1]["code"] == "model_unavailable"
    run = RespondRun.objects.get()
    assert (run.status, run.assistant_message) == ("failed", None)
    chat.configure(mode="ok")
    retry = streamed(respond(acme, thread, "k1", stream=True))
    assert retry[0][1]["resumed"] is True
    assert retry[-1][0] == "done"


def test_a_client_gone_after_the_turn_event_frees_the_key(acme, chat):
    thread = make_thread(acme.tenant)
    # The view itself (the test client wraps streams in its own closing logic).
    request = APIRequestFactory().post(
        f"/api/v1/threads/{thread.public_id}/respond",
        {"content": "My order ORD-1234 arrived broken.", **BUDGET, "stream": True},
        format="json",
        HTTP_AUTHORIZATION=f"Bearer {acme.key}",
        HTTP_IDEMPOTENCY_KEY="k1",
    )
    response = RespondView.as_view()(request, thread_id=thread.public_id)
    chunks = iter(response.streaming_content)
    next(chunks)

    # The client goes away (as a WSGI server does, without closing the test's connection).
    request_finished.disconnect(close_old_connections)
    try:
        response.close()
    finally:
        request_finished.connect(close_old_connections)

    assert chat.requests == []
    assert RespondRun.objects.get().status == "failed"
    assert streamed(respond(acme, thread, "k1", stream=True))[-1][0] == "done"
