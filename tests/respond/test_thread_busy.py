"""One answer at a time per thread: while an answer runs on a thread, ``/respond`` under
another key answers ``409 thread_busy`` and writes nothing, so the path stays
user -> answer -> user -> answer. Real concurrent requests: gunicorn (threaded) on the test
database, the local chat server streaming slowly.
"""

import threading
from typing import Any

import pytest
import requests

from compaction.models import AssemblyRecord
from respond.models import RespondRun
from tests.conftest import TenantKit, make_thread, path_ids
from tests.respond.conftest import REPLY
from threads.models import Message

pytestmark = pytest.mark.django_db(transaction=True)


def post_respond(url: str, kit: TenantKit, key: str, **body: Any) -> requests.Response:
    return requests.post(
        url,
        json={"content": f"Question under {key}", **body},
        headers={"Authorization": f"Bearer {kit.key}", "Idempotency-Key": key},
        stream=bool(body.get("stream")),
        timeout=30,
    )


def test_a_second_answer_while_one_streams_is_409_thread_busy(acme: TenantKit, chat, web):
    chat.configure(chunk_delay=0.2)
    thread = make_thread(acme.tenant)
    url = f"{web.url}/api/v1/threads/{thread.public_id}/respond"
    first = post_respond(url, acme, "first", stream=True)
    assert first.status_code == 200
    lines = first.iter_lines()
    assert next(line for line in lines if line.startswith(b"event: token"))

    records = AssemblyRecord.objects.filter(thread=thread).count()
    second = post_respond(url, acme, "second")
    assert second.status_code == 409, second.text
    assert second.json()["code"] == "thread_busy"
    assert Message.objects.filter(thread=thread, role="user").count() == 1
    # Refused ahead of the input's read: no record, no run.
    assert AssemblyRecord.objects.filter(thread=thread).count() == records
    assert RespondRun.objects.filter(thread=thread).count() == 1

    assert any(line == b"event: done" for line in lines)
    first.close()
    again = post_respond(url, acme, "second")
    assert again.status_code == 201, again.text
    answers = Message.objects.filter(thread=thread, role="assistant").order_by("pk")
    assert [a.content for a in answers] == [REPLY, REPLY]
    users = Message.objects.filter(thread=thread, role="user").order_by("pk")
    turns = [users[0], answers[0], users[1], answers[1]]
    assert path_ids(thread) == [turn.public_id for turn in turns]


def test_of_two_simultaneous_requests_one_answers_and_one_is_refused(acme: TenantKit, chat, web):
    chat.configure(chunk_delay=0.05)
    thread = make_thread(acme.tenant)
    url = f"{web.url}/api/v1/threads/{thread.public_id}/respond"
    start = threading.Barrier(2)
    responses: dict[str, requests.Response] = {}

    def ask(key: str) -> None:
        start.wait()
        responses[key] = post_respond(url, acme, key)

    askers = [threading.Thread(target=ask, args=(key,)) for key in ("a", "b")]
    for asker in askers:
        asker.start()
    for asker in askers:
        asker.join(timeout=60)

    statuses = sorted(response.status_code for response in responses.values())
    assert statuses == [201, 409], {k: r.text for k, r in responses.items()}
    refused = next(r for r in responses.values() if r.status_code == 409)
    assert refused.json()["code"] == "thread_busy"
    assert Message.objects.filter(thread=thread, role="user").count() == 1
    assert Message.objects.filter(thread=thread, role="assistant").count() == 1
