"""The Python client (clients/python) against the real API, served by pytest-django's live
server, with the real local chat server and a real TCP proxy that breaks connections."""

import asyncio

import pytest
from convmem_client import (
    APIConnectionError,
    APIError,
    APITimeoutError,
    AsyncClient,
    Client,
    Context,
    DeletionRequest,
    Message,
    RateLimited,
    RespondResult,
    StreamEvent,
    Thread,
    TreeNode,
)

from convmem.auth import ApiKeyRateThrottle
from respond.models import RespondRun
from tests.client.conftest import BUDGET
from tests.respond.conftest import REPLY, chat  # noqa: F401  (the chat server fixture)
from threads.models import Message as StoredMessage
from threads.models import Thread as StoredThread

pytestmark = pytest.mark.django_db(transaction=True)


def user_turns(thread_id: str) -> int:
    return StoredMessage.objects.filter(thread__public_id=thread_id, role="user").count()


def assert_completed_once(thread_id: str, done: RespondResult) -> None:
    """After a cut, one complete answer: the re-opened stream completed the interrupted answer
    (stored as its sibling), or replayed or answered anew when the server saw the client go
    before or after the answer; any other answer is an interrupted prefix of it."""
    answers = StoredMessage.objects.filter(thread__public_id=thread_id, role="assistant")
    complete = [a.public_id for a in answers if a.status == "complete"]
    assert complete == [done.assistant_message.id]
    assert all(REPLY.startswith(a.content) for a in answers if a.status == "interrupted")


def test_a_conversation_through_the_client(connect, acme_exporter, chat):  # noqa: F811
    api = connect(acme_exporter)
    thread = api.create_thread("user-42", title="Refund", system="Be brief.")
    assert isinstance(thread, Thread)
    assert (thread.title, thread.system, thread.system_version) == ("Refund", "Be brief.", 1)
    assert thread.idempotency_key
    first = api.append(thread.id, "user", "My order ORD-1234 arrived broken.")
    api.append(thread.id, "assistant", "Sorry to hear that. Refund or replacement?")
    edited = api.edit(thread.id, first.id, "My order ORD-1234 arrived broken; replace it.")
    assert isinstance(edited, Message)
    assert edited.edits_id == first.id
    assert [m.id for m in api.messages(thread.id)] == [edited.id]
    tree = list(api.iter_tree(thread.id))
    assert all(isinstance(node, TreeNode) for node in tree)
    assert {(n.id, n.sibling_count) for n in tree if n.parent_id == first.parent_id} == {
        (first.id, 2),
        (edited.id, 2),
    }
    api.switch_branch(thread.id, first.id)
    assert api.get_thread(thread.id).active_leaf_id == first.id
    api.switch_branch(thread.id, edited.id)

    context = api.context(thread.id, **BUDGET)
    assert isinstance(context, Context)
    assert context.messages[0].content == "Be brief."  # the thread's system prompt
    assert context.chat_messages()[-1] == {"role": "user", "content": edited.content}
    assert context.tokens.total + context.tokens.reserve <= context.tokens.window
    assert api.replay(context.assembly_id).matches

    answer = api.respond(thread.id, "When will it ship?", **BUDGET)
    assert isinstance(answer, RespondResult)
    assert answer.assistant_message.content == REPLY
    assert answer.idempotency_key
    stream = api.respond_stream(thread.id, "And the parcel service?", **BUDGET)
    events = list(stream)
    assert [e.type for e in events][:1] == ["turn"]
    assert "".join(e.text for e in events) == REPLY
    assert stream.result is not None
    assert stream.result.idempotency_key == stream.idempotency_key
    path = api.messages(thread.id)
    assert [m.id for m in path][-2:] == [
        stream.result.user_message.id,
        stream.result.assistant_message.id,
    ]
    usage = api.usage()
    assert usage.totals.turns == 2
    assert usage.currency

    batch = api.append_batch(
        thread.id,
        [
            {
                "role": "assistant",
                "content": None,
                "tool_calls": [
                    {
                        "id": "call_1",
                        "type": "function",
                        "function": {"name": "track", "arguments": "{}"},
                    }
                ],
            },
            {"role": "tool", "content": "In transit.", "tool_call_id": "call_1"},
        ],
    )
    assert [m.role for m in batch.results] == ["assistant", "tool"]
    assert batch.results[0].content is None
    assert [h.message_id for h in api.search("transit").results] == [batch.results[1].id]
    assert [h.message_id for h in api.search_thread(thread.id, "parcel").results] == [
        stream.result.user_message.id
    ]
    assert api.summaries(thread.id).results == []
    exported = api.export_thread(thread.id)
    assert exported["schema"].startswith("convmem.export/")
    assert api.export_user("user-42", format="jsonl").count("\n") >= 1

    redacted = api.redact(thread.id, first.id, reason="typo with personal data")
    assert isinstance(redacted, DeletionRequest)
    assert redacted.proof["erased"]["messages"] == [first.id]
    filed = api.create_deletion_request(user_ref="user-42", reason="account closed")
    assert api.get_deletion_request(filed.id).status == "received"
    assert [t.id for t in api.iter_threads(user_ref="user-42")] == [thread.id]
    proof = api.delete_thread(thread.id)
    assert proof.status == "executed"
    with pytest.raises(APIError) as gone:
        api.get_thread(thread.id)
    assert (gone.value.status, gone.value.code) == (404, "not_found")


def test_the_async_client_is_the_twin(connect_async, acme, chat):  # noqa: F811
    async def conversation() -> tuple[list[str], str, list[str]]:
        async with connect_async(acme) as api:
            thread = await api.create_thread("user-7")
            first = await api.append(thread.id, "user", "Hello?", idempotency_key="hello-1")
            again = await api.append(thread.id, "user", "Hello?", idempotency_key="hello-1")
            assert again.id == first.id
            await api.respond(thread.id, "Is it shipped?", **BUDGET)
            stream = api.respond_stream(thread.id, "When?", **BUDGET)
            tokens = "".join([event.text async for event in stream])
            path = [m.role for m in await api.messages(thread.id, limit=2)]
            listed = [t.id async for t in api.iter_threads(user_ref="user-7", limit=1)]
            assert listed == [thread.id]
            return path, tokens, [m.id async for m in api.iter_messages(thread.id, limit=2)]

    path, tokens, newest_first = asyncio.run(conversation())
    assert path == ["user", "user", "assistant", "user", "assistant"]
    assert tokens == REPLY
    assert len(newest_first) == 5


def test_pages_are_read_lazily_and_in_order(connect, acme):
    api = connect(acme)
    thread = api.create_thread("user-1")
    sent = [api.append(thread.id, "user", f"turn {n}").id for n in range(5)]
    page = api.list_messages(thread.id, limit=2)
    assert [m.id for m in page.results] == sent[3:]
    assert page.next
    newest_first = api.iter_messages(thread.id, limit=2)
    assert [next(newest_first).id, next(newest_first).id] == [sent[4], sent[3]]
    assert [m.id for m in api.messages(thread.id, limit=2)] == sent


def test_a_thread_expiry_is_set_changed_and_removed_through_the_client(connect, acme):
    api = connect(acme)
    relative = api.create_thread("user-1", expires_in=3600)
    absolute = api.create_thread("user-1", expires_at="2099-01-02T03:04:05Z")

    assert relative.expires_at is not None
    assert absolute.expires_at == "2099-01-02T03:04:05Z"
    assert api.update_thread(absolute.id, expires_in=60).expires_at != absolute.expires_at
    assert api.update_thread(absolute.id, expires_at=None).expires_at is None
    assert StoredThread.objects.get(public_id=absolute.id).expires_at is None
    with pytest.raises(APIError) as refused:
        api.update_thread(absolute.id, expires_at="2000-01-01T00:00:00Z")
    assert refused.value.status == 400


def test_settings_come_from_the_environment(monkeypatch, live_server, acme):
    monkeypatch.setenv("CONVMEM_BASE_URL", live_server.url)
    monkeypatch.setenv("CONVMEM_API_KEY", acme.key)
    with Client() as api:
        assert api.create_thread("user-env").user_ref == "user-env"
    monkeypatch.delenv("CONVMEM_API_KEY")
    with pytest.raises(ValueError, match="CONVMEM_API_KEY"):
        Client()


def test_errors_that_retrying_cannot_fix_are_raised_with_their_key(connect, acme):
    api = connect(acme)
    thread = api.create_thread("user-1")
    with pytest.raises(APIError) as invalid:
        api.append(thread.id, "narrator", "hi", idempotency_key="narrator-1")
    assert (invalid.value.status, invalid.value.code) == (400, "invalid")
    assert "role" in invalid.value.errors
    assert invalid.value.idempotency_key == "narrator-1"
    api.append(thread.id, "user", "hi", idempotency_key="reused")
    with pytest.raises(APIError) as reused:
        api.append(thread.id, "user", "something else", idempotency_key="reused")
    assert reused.value.status == 422
    with pytest.raises(TypeError, match="idempotency_key"):
        api.get_thread(thread.id, idempotency_key="reads have none")


def test_a_server_that_cannot_be_reached_is_a_connection_error(acme):
    # A port nothing listens on: the request is refused, retried, then raised with its key.
    api = Client("http://127.0.0.1:9", acme.key, max_retries=1, backoff=0.01)
    with pytest.raises(APIConnectionError) as refused:
        api.create_thread("user-1", idempotency_key="create-1")
    assert refused.value.idempotency_key == "create-1"
    assert isinstance(refused.value, ConnectionError)


def test_a_lost_answer_is_retried_with_the_same_key(connect, proxy, acme):
    thread = connect(acme).create_thread("user-1")
    # The server appends the message, the client never sees the answer: the retry replays it.
    proxy.cut_next_after(1)
    message = connect(acme, proxy.url).append(thread.id, "user", "Hello?")
    assert user_turns(thread.id) == 1
    assert message.content == "Hello?"
    # Connections refused outright are retried too.
    proxy.drop_next(2)
    created = connect(acme, proxy.url).create_thread("user-2")
    assert StoredThread.objects.filter(public_id=created.id).exists()
    assert proxy.connections == 5  # cut + retry, two dropped + retry


def test_a_model_that_is_down_is_retried_and_the_turn_resumed(connect, acme, chat):  # noqa: F811
    chat.configure(mode="fail_n_then_ok", fail_n=2)
    api = connect(acme)
    thread = api.create_thread("user-1")
    answer = api.respond(thread.id, "Is it shipped?", **BUDGET)
    assert answer.assistant_message.content == REPLY
    assert len(chat.requests) == 3
    assert user_turns(thread.id) == 1
    assert RespondRun.objects.get().attempt == 3


def test_respond_retried_after_a_503_never_stores_a_second_user_turn(connect, acme, chat):  # noqa: F811
    chat.configure(mode="fail_n_then_ok", fail_n=1)
    api = connect(acme, max_retries=0)
    thread = api.create_thread("user-1")
    with pytest.raises(APIError) as down:
        api.respond(thread.id, "Is it shipped?", **BUDGET)
    assert (down.value.status, down.value.code) == (503, "model_unavailable")
    assert user_turns(thread.id) == 1
    # The retry the error invites: the same key resumes the stored turn.
    key = down.value.idempotency_key
    answer = api.respond(thread.id, "Is it shipped?", **BUDGET, idempotency_key=key)
    assert answer.idempotency_key == key
    assert answer.assistant_message.content == REPLY
    assert user_turns(thread.id) == 1
    # And a streamed retry with that key replays the same stored turn.
    replayed = api.respond_stream(thread.id, "Is it shipped?", **BUDGET, idempotency_key=key)
    assert replayed.until_done().assistant_message.id == answer.assistant_message.id
    assert user_turns(thread.id) == 1


def test_a_timeout_is_raised_with_the_key_that_resumes_the_turn(connect, acme, chat):  # noqa: F811
    chat.configure(mode="timeout", delay=1.0)  # the model answers after a second
    api = connect(acme, max_retries=0)
    thread = api.create_thread("user-1")
    with pytest.raises(APITimeoutError) as slow:
        api.respond(thread.id, "Is it shipped?", **BUDGET, timeout=0.2)
    assert isinstance(slow.value, TimeoutError)
    # The first request is still answering (409 in flight, retried), then its answer is replayed.
    answer = connect(acme, max_retries=30).respond(
        thread.id, "Is it shipped?", **BUDGET, idempotency_key=slow.value.idempotency_key
    )
    assert answer.assistant_message.content == REPLY
    assert user_turns(thread.id) == 1


def test_a_stream_cut_mid_answer_restarts_and_completes_once(connect, proxy, acme, chat):  # noqa: F811
    chat.configure(chunk_delay=0.1)
    thread = connect(acme).create_thread("user-1")
    # Cut before the third token: the client saw `turn` and exactly two tokens.
    proxy.cut_next_at(b"event: token", 3)
    events = list(connect(acme, proxy.url).respond_stream(thread.id, "Is it shipped?", **BUDGET))
    types = [e.type for e in events]
    assert types[:4] == ["turn", "token", "token", "restart"]
    after = types[4:]
    assert after[0] == "turn"
    assert after[-1] == "done"
    assert "".join(e.text for e in events[4:]) == REPLY
    assert_completed_once(thread.id, events[-1].result)
    assert user_turns(thread.id) == 1


def test_a_throttled_call_is_rate_limited_with_the_wait(connect, acme, monkeypatch):
    monkeypatch.setattr(ApiKeyRateThrottle, "THROTTLE_RATES", {"api_key": "2/min"})
    api = connect(acme, max_retries=1)
    thread = api.create_thread("user-1")
    api.get_thread(thread.id)
    with pytest.raises(RateLimited) as throttled:
        api.append(thread.id, "user", "Hello?", idempotency_key="hello-1")
    assert (throttled.value.status, throttled.value.code) == (429, "throttled")
    assert throttled.value.retry_after > 0
    assert throttled.value.idempotency_key == "hello-1"
    assert user_turns(thread.id) == 0


def test_an_async_stream_cut_mid_answer_restarts_and_completes_once(connect, proxy, acme, chat):  # noqa: F811
    chat.configure(chunk_delay=0.1)
    thread = connect(acme).create_thread("user-1")
    proxy.cut_next_at(b"event: token", 2)

    async def read() -> list[StreamEvent]:
        async with AsyncClient(proxy.url, acme.key, backoff=0.05, max_backoff=0.5) as api:
            stream = api.respond_stream(thread.id, "Is it shipped?", **BUDGET)
            return [event async for event in stream]

    events = asyncio.run(read())
    assert [e.type for e in events][:3] == ["turn", "token", "restart"]
    assert "".join(e.text for e in events[3:]) == REPLY
    assert_completed_once(thread.id, events[-1].result)
    assert user_turns(thread.id) == 1
