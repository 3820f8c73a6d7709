"""The Python client's runs (answers generated in a worker): a real Celery worker on the
``generation`` queue, Redis streams, the real local chat server, the live server, and a real
TCP proxy that cuts the events mid-answer."""

import asyncio

import httpx
import pytest
from convmem_client import APIError, AsyncClient, Client, RespondResult, Run
from django.conf import settings as django_settings

from tests.client.conftest import BUDGET, FAST
from tests.respond.conftest import REPLY
from tests.respond.test_runs import chat, chat_server, generation_worker  # noqa: F401
from threads.models import Message as StoredMessage

pytestmark = [
    pytest.mark.worker,
    pytest.mark.django_db(transaction=True),
    pytest.mark.skipif(not django_settings.REDIS_URL, reason="runs need REDIS_URL"),
]


def counting_client(live_server, kit, sent: list[str], **settings: object) -> Client:
    """A client whose every request sent is recorded (method and path) by an httpx hook."""
    http = httpx.Client(
        timeout=15, event_hooks={"request": [lambda r: sent.append(f"{r.method} {r.url.path}")]}
    )
    return Client(live_server.url, kit.key, http_client=http, **{**FAST, **settings})


def test_a_background_answer_is_followed_through_its_events(connect, proxy, acme, chat):  # noqa: F811
    chat.configure(chunk_delay=0.02)
    api, through_proxy = connect(acme), connect(acme, base_url=proxy.url)
    thread = api.create_thread("user-42")
    question = "My order ORD-1234 arrived broken."
    run = api.respond(thread.id, question, background=True, **BUDGET)
    assert isinstance(run, Run)
    assert run.id.startswith("run_")
    assert run.idempotency_key
    assert run.state in ("queued", "running")

    proxy.cut_next_at(b"event: token", 3)  # the events' connection drops after two tokens
    events = list(through_proxy.run_events(thread.id, run.id))
    assert proxy.connections == 2
    assert "restart" not in [e.type for e in events]  # re-attached after the last id seen
    ids = [int(e.id) for e in events]
    assert ids == list(range(1, len(events) + 1))
    assert "".join(e.text for e in events) == REPLY
    done = events[-1].result
    assert isinstance(done, RespondResult)
    assert done.assistant_message.content == REPLY

    stored = api.get_run(thread.id, run.id)
    assert (stored.state, stored.finished) == ("completed", True)
    assert stored.assistant_message_id == done.assistant_message.id
    assert stored.seq == len(events)
    assert len(chat.requests) == 1
    tail = api.run_events(thread.id, run.id, last_event_id=ids[-3])
    assert [e.type for e in tail] == ["token", "done"]
    assert tail.until_done().assistant_message.id == done.assistant_message.id

    replayed = api.respond(thread.id, question, idempotency_key=run.idempotency_key, **BUDGET)
    assert replayed.assistant_message.id == done.assistant_message.id


def test_cuts_that_each_bring_the_answer_on_do_not_use_the_retries_up(connect, proxy, acme, chat):  # noqa: F811
    """With one retry allowed, a stream cut three times in a row still completes when each
    connection brought newer events than any before: the relay of a run (continued after the
    last id seen), and a streamed answer re-opened with its key (each re-open relays the run
    from its start, cut a little further on each time). A client of its own for each stream,
    so that each starts on a new connection through the proxy."""
    chat.configure(chunk_delay=0.02)
    api = connect(acme)
    thread = api.create_thread("user-42")
    run = api.respond(thread.id, "Where is my parcel?", background=True, **BUDGET)

    proxy.cut_each_at(b"event: token", [3, 3, 3])  # two tokens a connection
    events = list(connect(acme, base_url=proxy.url, max_retries=1).run_events(thread.id, run.id))
    assert proxy.connections == 4
    assert [int(e.id) for e in events] == list(range(1, len(events) + 1))
    assert "".join(e.text for e in events) == REPLY

    # Each re-open must find the answer still streaming: one that has finished is replayed
    # from what was stored, as one token event, and so is not cut. A word every 0.2 s leaves
    # the three re-opens (each a new connection and request) over two seconds between them.
    chat.configure(chunk_delay=0.2)
    proxy.cut_each_at(b"event: token", [3, 5, 7])
    flaky = connect(acme, base_url=proxy.url, max_retries=1)
    stream = flaky.respond_stream(thread.id, "And the refund?", **BUDGET)
    events = list(stream)
    assert proxy.connections == 8
    assert [e.type for e in events].count("restart") == 3
    assert stream.result is not None
    assert stream.result.assistant_message.content == REPLY
    assert len(chat.requests) == 2


def test_a_streamed_answer_names_its_run(connect, acme, chat):  # noqa: F811
    api = connect(acme)
    thread = api.create_thread("user-42")
    stream = api.respond_stream(thread.id, "Where is my parcel?", **BUDGET)
    result = stream.until_done()
    assert stream.run_id
    assert stream.run_id.startswith("run_")
    run = api.get_run(thread.id, stream.run_id)
    assert run.assistant_message_id == result.assistant_message.id


def test_cancel_stores_the_partial_and_finished_runs_are_not_retried(live_server, acme, chat):  # noqa: F811
    chat.configure(chunk_delay=0.2)
    sent: list[str] = []
    api = counting_client(live_server, acme, sent)
    thread = api.create_thread("user-42")
    run = api.respond(thread.id, "My order ORD-1234 arrived broken.", background=True, **BUDGET)

    with pytest.raises(APIError) as busy:
        api.respond(thread.id, "And another thing.", **BUDGET)
    assert (busy.value.status, busy.value.code) == (409, "thread_busy")
    assert sent.count(f"POST /api/v1/threads/{thread.id}/respond") == 2  # not retried

    events = iter(api.run_events(thread.id, run.id))
    seen = [next(events) for _ in range(3)]
    assert api.cancel_run(thread.id, run.id).id == run.id
    with pytest.raises(APIError) as cancelled:
        seen.extend(events)
    assert (cancelled.value.status, cancelled.value.code) == (409, "run_cancelled")

    stored = api.get_run(thread.id, run.id)
    assert (stored.state, stored.error) == ("interrupted", "cancelled")
    partial = StoredMessage.objects.get(public_id=stored.assistant_message_id)
    assert partial.status == "interrupted"
    assert REPLY.startswith(partial.content)
    assert len(partial.content) < len(REPLY)
    assert "".join(e.text for e in seen) in partial.content

    with pytest.raises(APIError) as finished:
        api.cancel_run(thread.id, run.id)
    assert (finished.value.status, finished.value.code) == (409, "run_finished")
    assert sent.count(f"POST /api/v1/threads/{thread.id}/runs/{run.id}/cancel") == 2


def test_the_async_client_follows_a_background_answer(connect_async, acme, chat):  # noqa: F811
    async def scenario() -> tuple[Run, list, Run]:
        async with connect_async(acme) as api:
            thread = await api.create_thread("user-42")
            run = await api.respond(thread.id, "Hello?", background=True, **BUDGET)
            events = [event async for event in api.run_events(thread.id, run.id)]
            return run, events, await api.get_run(thread.id, run.id)

    run, events, stored = asyncio.run(scenario())
    assert isinstance(run, Run)
    assert "".join(e.text for e in events) == REPLY
    assert stored.state == "completed"
    assert stored.assistant_message_id == events[-1].result.assistant_message.id


def test_the_async_client_outlives_cuts_that_each_bring_the_answer_on(
    connect_async,
    proxy,
    acme,
    chat,  # noqa: F811
):
    """As the sync client above: one retry allowed, three cuts in a row, each after two new
    tokens of the run's relay (read by a client of its own, on new connections)."""
    chat.configure(chunk_delay=0.02)

    async def scenario() -> list:
        async with connect_async(acme) as api:
            thread = await api.create_thread("user-42")
            run = await api.respond(thread.id, "Hello?", background=True, **BUDGET)
        proxy.cut_each_at(b"event: token", [3, 3, 3])
        async with AsyncClient(proxy.url, acme.key, **{**FAST, "max_retries": 1}) as flaky:
            return [event async for event in flaky.run_events(thread.id, run.id)]

    events = asyncio.run(scenario())
    assert proxy.connections == 4
    assert [int(e.id) for e in events] == list(range(1, len(events) + 1))
    assert "".join(e.text for e in events) == REPLY
