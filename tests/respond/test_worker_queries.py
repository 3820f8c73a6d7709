"""What a generation worker sends to the database before the first token of a first attempt:
the claim (behind the commit of the request that queued it), the run, the input's texts.

The worker's service runs in this process (as its task would: the run's id and attempt, the
items and thread the request handed over), so its statements can be counted; the run is
queued through the API with no worker consuming the queue.
"""

from typing import Any

import pytest
from django.conf import settings as django_settings
from django.db import connection
from django.test.utils import CaptureQueriesContext

from compaction.selectors import assembly_items
from respond import events as run_events
from respond import services
from respond.models import RespondRun
from tests.conftest import make_thread
from tests.respond.conftest import REPLY

pytestmark = [
    pytest.mark.django_db(transaction=True),
    pytest.mark.skipif(not django_settings.REDIS_URL, reason="runs need REDIS_URL"),
]

# The claim (one query string on PostgreSQL: the wait for the request's commit and the
# claim), the run with its thread, turn and input record, and the input's texts: the
# messages and the stored texts (the system prompt; memos too once the thread has one).
BUDGET = 4


def queued_run(kit, thread) -> RespondRun:
    response = kit.client.post(
        f"/api/v1/threads/{thread.public_id}/respond",
        {"content": "Where is my order?", "system": "You are a support agent.", "background": True},
        format="json",
        HTTP_IDEMPOTENCY_KEY="k1",
    )
    assert response.status_code == 202, response.data
    return RespondRun.objects.select_related("assembly").get(public_id=response.data["id"])


def test_a_first_attempt_reaches_its_first_token_in_a_handful_of_statements(
    acme, chat, settings: Any, monkeypatch
):
    settings.CONVMEM_RESPOND_IN_WORKER = True
    thread = make_thread(acme.tenant, turns=6)
    run = queued_run(acme, thread)
    items = assembly_items(run.assembly)  # what the request hands the task
    before_first_token: list[str] = []
    append = run_events.event_append

    def observed_append(run_public_id: str, event: Any, *, attempt: int) -> bool:
        if event.name == "token" and not before_first_token:
            before_first_token.extend(q["sql"] for q in captured.captured_queries)
        return append(run_public_id, event, attempt=attempt)

    monkeypatch.setattr(run_events, "event_append", observed_append)
    with CaptureQueriesContext(connection) as captured:
        services.respond_generate(run_id=run.pk, attempt=1, items=items, thread_id=thread.pk)

    run.refresh_from_db()
    assert run.status == RespondRun.Status.COMPLETE
    assert run.assistant_message.content == REPLY
    assert before_first_token, "no token was appended"
    assert len(before_first_token) <= BUDGET, before_first_token
    if connection.vendor == "postgresql":
        # The commit wait and the claim are one round trip: no transaction of their own.
        lock, claim = before_first_token[0].split("FOR NO KEY UPDATE")
        assert "threads_thread" in lock
        assert 'UPDATE "respond_respondrun"' in claim
        assert not any(sql.startswith("BEGIN") for sql in before_first_token)
