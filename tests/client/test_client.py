"""The Python client (clients/python) against the real API, served by pytest-django's live
server, with the real local chat server and a real TCP proxy that breaks connections."""

from collections.abc import Iterator
from urllib.parse import urlsplit

import pytest
from convmem_client import Convmem, ConvmemError

from respond.models import RespondRun
from tests.conftest import TenantKit
from tests.respond.conftest import REPLY, chat  # noqa: F401  (the chat server fixture)
from tests.support.flaky_proxy import FlakyProxy
from threads.models import Message, Thread

pytestmark = pytest.mark.django_db(transaction=True)

BUDGET = {"window_tokens": 4096, "reserve_tokens": 256}


@pytest.fixture
def proxy(live_server) -> Iterator[FlakyProxy]:
    address = urlsplit(live_server.url)
    with FlakyProxy((address.hostname, address.port)) as flaky:
        yield flaky


def client(base_url: str, kit: TenantKit) -> Convmem:
    # Short backoff: the tests check what is retried, not how long it waits.
    return Convmem(base_url, kit.key, timeout=15, backoff=0.05, max_backoff=0.5)


def test_a_conversation_through_the_client(live_server, acme, chat):  # noqa: F811
    api = client(live_server.url, acme)
    thread = api.create_thread("user-42", title="Refund")
    first = api.append(thread["id"], "user", "My order ORD-1234 arrived broken.")
    api.append(thread["id"], "assistant", "Sorry to hear that. Refund or replacement?")
    edited = api.edit(thread["id"], first["id"], "My order ORD-1234 arrived broken; replace it.")
    assert [m["id"] for m in api.messages(thread["id"])] == [edited["id"]]
    assert api.context(thread["id"], **BUDGET)["messages"][-1]["content"] == edited["content"]

    answer = api.respond(thread["id"], "When will it ship?", system="Be brief.", **BUDGET)
    assert answer["assistant_message"]["content"] == REPLY
    events = list(api.respond_stream(thread["id"], "And the courier?", **BUDGET))
    assert next(e.type for e in events) == "turn"
    assert "".join(e.data["text"] for e in events if e.type == "token") == REPLY
    done = events[-1]
    assert done.type == "done"
    path = api.messages(thread["id"])
    assert [m["id"] for m in path][-2:] == [
        done.data["user_message"]["id"],
        done.data["assistant_message"]["id"],
    ]
    assert api.usage()["totals"]["turns"] == 2

    redacted = api.redact(thread["id"], first["id"], reason="typo with personal data")
    assert redacted["proof"]["erased"]["messages"] == [first["id"]]
    assert [t["id"] for t in api.list_threads(user_ref="user-42")] == [thread["id"]]
    proof = api.delete_thread(thread["id"])
    assert proof["status"] == "executed"
    with pytest.raises(ConvmemError) as gone:
        api.get_thread(thread["id"])
    assert (gone.value.status, gone.value.code) == (404, "not_found")


def test_errors_that_retrying_cannot_fix_are_raised(live_server, acme):
    api = client(live_server.url, acme)
    thread = api.create_thread("user-1")
    with pytest.raises(ConvmemError) as invalid:
        api.append(thread["id"], "narrator", "hi")
    assert (invalid.value.status, invalid.value.code) == (400, "invalid")


def test_a_lost_answer_is_retried_with_the_same_key(live_server, proxy, acme):
    thread = client(live_server.url, acme).create_thread("user-1")
    # The server appends the message, the client never sees the answer: the retry replays it.
    proxy.cut_next_after(1)
    message = client(proxy.url, acme).append(thread["id"], "user", "Hello?")
    assert Message.objects.filter(thread__public_id=thread["id"], role="user").count() == 1
    assert message["content"] == "Hello?"
    # Connections refused outright are retried too.
    proxy.drop_next(2)
    created = client(proxy.url, acme).create_thread("user-2")
    assert Thread.objects.filter(public_id=created["id"]).exists()
    assert proxy.connections == 5  # cut + retry, two dropped + retry


def test_a_model_that_is_down_is_retried_and_the_turn_resumed(live_server, acme, chat):  # noqa: F811
    chat.configure(mode="fail_n_then_ok", fail_n=2)
    api = client(live_server.url, acme)
    thread = api.create_thread("user-1")
    answer = api.respond(thread["id"], "Is it shipped?", **BUDGET)
    assert answer["assistant_message"]["content"] == REPLY
    assert len(chat.requests) == 3
    assert Message.objects.filter(thread__public_id=thread["id"], role="user").count() == 1
    assert RespondRun.objects.get().attempt == 3


def test_a_stream_cut_mid_answer_restarts_and_completes_once(live_server, proxy, acme, chat):  # noqa: F811
    chat.configure(chunk_delay=0.1)
    thread = client(live_server.url, acme).create_thread("user-1")
    proxy.cut_next_after(900)  # the headers, the turn event and a few tokens
    events = list(client(proxy.url, acme).respond_stream(thread["id"], "Is it shipped?", **BUDGET))
    types = [e.type for e in events]
    assert "restart" in types
    after = types[types.index("restart") + 1 :]
    assert after[0] == "turn"
    assert after[-1] == "done"
    tokens = "".join(e.data["text"] for e in events[types.index("restart") :] if e.type == "token")
    assert tokens == REPLY
    done = events[-1].data
    interrupted = Message.objects.get(public_id=done["assistant_message"]["edits_id"])
    assert interrupted.status == "interrupted"
    assert REPLY.startswith(interrupted.content)
    assert Message.objects.filter(thread__public_id=thread["id"], role="user").count() == 1
