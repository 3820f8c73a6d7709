"""A client that goes away mid-stream, under a real HTTP server (gunicorn, threaded workers)
on the test database, with the real local chat server streaming slowly: the answer is stored
as ``interrupted`` with what was streamed, convmem stops reading the model, and a retry with
the same Idempotency-Key completes the turn once.
"""

import json
import socket
from urllib.parse import urlsplit

import pytest
import requests

from respond.models import RespondRun
from tests.compaction.helpers import wait_for
from tests.conftest import TenantKit, make_thread
from tests.respond.conftest import REPLY
from threads.models import Message

pytestmark = pytest.mark.django_db(transaction=True)

QUESTION = "My order ORD-1234 arrived broken."


def read_then_hang_up(url: str, *, key: str, api_key: str, tokens: int) -> str:
    """POST a streamed respond over a raw socket, read ``tokens`` token events, close the
    socket. Returns the text of the tokens read."""
    parts = urlsplit(url)
    body = json.dumps({"content": QUESTION, "stream": True}).encode()
    head = (
        f"POST {parts.path} HTTP/1.1\r\nHost: {parts.netloc}\r\n"
        f"Authorization: Bearer {api_key}\r\nIdempotency-Key: {key}\r\n"
        f"Content-Type: application/json\r\nAccept: text/event-stream\r\n"
        f"Content-Length: {len(body)}\r\n\r\n"
    ).encode()
    received = b""
    with socket.create_connection((parts.hostname, parts.port), timeout=15) as sock:
        sock.sendall(head + body)
        while received.count(b"event: token") < tokens:
            chunk = sock.recv(4096)
            assert chunk, received
            received += chunk
    assert b" 200 OK" in received.split(b"\r\n", 1)[0]
    texts = []
    for line in received.split(b"\n"):
        if line.startswith(b'data: {"text"'):
            texts.append(json.loads(line[len(b"data: ") :])["text"])
    return "".join(texts[:tokens])


def test_a_client_that_hangs_up_leaves_an_interrupted_turn(acme: TenantKit, chat, web):
    chat.configure(chunk_delay=0.3)
    thread = make_thread(acme.tenant)
    url = f"{web.url}/api/v1/threads/{thread.public_id}/respond"
    seen = read_then_hang_up(url, key="hang-up-1", api_key=acme.key, tokens=2)
    assert seen == " ".join(REPLY.split()[:2]) + " "

    run = wait_for(lambda: RespondRun.objects.filter(status="interrupted").first(), timeout=20)
    assert run.error_code == "client_disconnected"
    partial = Message.objects.get(thread=thread, role="assistant")
    assert partial.status == "interrupted"
    # What was streamed: at least what the client read, and not the whole answer.
    assert partial.content.startswith(seen)
    assert REPLY.startswith(partial.content)
    assert len(partial.content) < len(REPLY)
    assert partial.assembly_public_id == run.assembly.public_id
    # convmem hung up on the model too, instead of paying for the rest of the answer.
    wait_for(lambda: chat.aborted_streams == 1, timeout=20)

    retry = requests.post(
        url,
        json={"content": QUESTION},
        headers={"Authorization": f"Bearer {acme.key}", "Idempotency-Key": "hang-up-1"},
        timeout=30,
    )
    assert retry.status_code == 201, retry.text
    answer = retry.json()["assistant_message"]
    assert answer["content"] == REPLY
    assert answer["status"] == "complete"
    assert answer["edits_id"] == partial.public_id
    assert Message.objects.filter(thread=thread, role="user").count() == 1
    thread.refresh_from_db()
    assert thread.active_leaf.public_id == answer["id"]
