"""Both clients relaying a run that a retry of its key took over: the run's stream holds the
dead attempt's tokens, then the new attempt's ``turn`` (``resumed: true``) and the whole answer.
The relay shows a ``restart`` before that ``turn`` (drop the text shown), also when the
connection was cut just before it and re-opened after the last id seen, so the text assembled
after the last ``restart`` is the stored answer.

The run is made for real: a worker SIGKILLed mid-answer, its lease run out, a retry of the key
(attempt 2) and a second worker. Its own module: the worker of ``test_typescript`` (module
scope) must not be there to generate the first attempt.
"""

import os
import signal
from typing import Any

import pytest
from django.conf import settings as django_settings

from respond.models import RespondRun
from respond.selectors import run_is_live
from tests.client.test_typescript import node_modules, node_tests  # noqa: F401  (fixture)
from tests.compaction.helpers import wait_for
from tests.conftest import make_thread
from tests.respond.conftest import REPLY, chat  # noqa: F401  (the chat server fixture)
from tests.respond.test_run_faults import LEASE, worker_env
from tests.respond.test_runs import BUDGET, sse
from tests.support.worker import queue_drained, start_worker

pytestmark = [
    pytest.mark.worker,
    pytest.mark.django_db(transaction=True),
    pytest.mark.skipif(not django_settings.REDIS_URL, reason="runs need REDIS_URL"),
]


def _respond(acme, thread) -> Any:
    return acme.client.post(
        f"/api/v1/threads/{thread.public_id}/respond",
        {"content": "Where is my parcel?", **BUDGET, "background": True},
        format="json",
        HTTP_IDEMPOTENCY_KEY="k1",
    )


def _run_taken_over_by_a_retry(acme, chat, settings: Any) -> tuple[Any, str]:  # noqa: F811
    settings.CONVMEM_RESPOND_IN_WORKER = True
    settings.CONVMEM_RESPOND_LEASE_SECONDS = LEASE
    env = worker_env(chat)
    chat.configure(chunk_delay=0.3)
    thread = make_thread(acme.tenant)
    with start_worker(env) as first:
        run = _respond(acme, thread).data
        events = f"/api/v1/threads/{thread.public_id}/runs/{run['id']}/events"
        sse(acme.client.get(events).streaming_content, stop_after=3)  # turn and two tokens
        os.killpg(first.process.pid, signal.SIGKILL)
    pk = RespondRun.objects.get(thread=thread).pk
    wait_for(lambda: not run_is_live(run_pk=pk), timeout=30)
    chat.configure(chunk_delay=0.0)
    with start_worker(env):
        assert _respond(acme, thread).status_code == 202  # the retry takes the run over
        wait_for(lambda: RespondRun.objects.get(pk=pk).status == "complete", timeout=60)
        wait_for(queue_drained, timeout=30)
    assert RespondRun.objects.get(pk=pk).attempt == 2
    return thread, run["id"]


def test_a_relay_across_a_takeover_restarts_in_both_clients(
    node_modules,  # noqa: F811
    live_server,
    connect,
    proxy,
    acme,
    chat,  # noqa: F811
    settings: Any,
):
    thread, run_id = _run_taken_over_by_a_retry(acme, chat, settings)

    # Python: the connection drops just before the new attempt's turn.
    proxy.cut_next_at(b"event: turn", 2)
    events = list(connect(acme, base_url=proxy.url).run_events(thread.public_id, run_id))
    assert proxy.connections == 2
    types = [e.type for e in events]
    assert types.count("restart") == 1
    restart = types.index("restart")
    assert types[restart - 1] == "token"
    assert types[restart + 1] == "turn"
    assert events[restart + 1].data["resumed"] is True
    assert "".join(e.text for e in events[restart:]) == REPLY
    assert events[-1].result.assistant_message.content == REPLY

    node_tests(
        "test/takeover.test.js",
        live_server.url,
        acme.key,
        chat.base_url,
        CONVMEM_TEST_THREAD_ID=thread.public_id,
        CONVMEM_TEST_RUN_ID=run_id,
    )
