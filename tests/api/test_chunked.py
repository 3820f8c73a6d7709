"""Chunked request bodies (``Transfer-Encoding: chunked``, no Content-Length) through real HTTP
servers: gunicorn reads them; runserver cannot tell where they end, so it answers 411. Either
way never "an empty body" (the Django test client cannot send chunked bodies, hence the
servers)."""

import http.client
import json
import socket
from collections.abc import Iterator
from typing import Any

import pytest

from tests.conftest import TenantKit, make_thread
from tests.faults.processes import DevServer, WebServer
from tests.support.worker import worker_database_url
from tests.threads.helpers import Rows
from threads.models import Message, Thread

pytestmark = pytest.mark.django_db(transaction=True)

LIMIT = 20_000


def send_chunked(
    server: WebServer, method: str, path: str, kit: TenantKit, body: bytes, **headers: str
) -> tuple[int, Any]:
    """Send ``body`` in several chunks; returns (status, parsed JSON answer).

    The whole request goes out in one write: a server that answers from the headers alone (411)
    and closes then has nothing of it left unread, so the client still reads the answer.
    """
    chunks = [body[i : i + 7] for i in range(0, len(body), 7)]
    head = {
        "Host": f"127.0.0.1:{server.port}",
        "Authorization": f"Bearer {kit.key}",
        "Content-Type": "application/json",
        "Transfer-Encoding": "chunked",
        "Connection": "close",
        **headers,
    }
    request = f"{method} {path} HTTP/1.1\r\n".encode()
    request += "".join(f"{name}: {value}\r\n" for name, value in head.items()).encode()
    request += b"\r\n" + b"".join(b"%x\r\n%s\r\n" % (len(c), c) for c in chunks) + b"0\r\n\r\n"
    with socket.create_connection(("127.0.0.1", server.port), timeout=30) as sock:
        sock.sendall(request)
        response = http.client.HTTPResponse(sock)
        response.begin()
        return response.status, json.loads(response.read())


def _env() -> dict[str, str]:
    return {
        "DATABASE_URL": worker_database_url(),
        "CONVMEM_KEYS_DATABASE_URL": worker_database_url("keys"),
        "CONVMEM_MAX_REQUEST_BYTES": str(LIMIT),
    }


@pytest.fixture
def gunicorn(transactional_db: None) -> Iterator[WebServer]:
    with WebServer(_env(), workers=1) as server:
        yield server


@pytest.fixture
def runserver(transactional_db: None) -> Iterator[WebServer]:
    with DevServer(_env()) as server:
        yield server


def test_gunicorn_reads_chunked_bodies(gunicorn, acme):
    thread = make_thread(acme.tenant, turns=1)

    created = send_chunked(
        gunicorn, "POST", "/api/v1/threads", acme, b'{"user_ref": "u-chunked", "title": "Chunks"}'
    )
    appended = send_chunked(
        gunicorn,
        "POST",
        f"/api/v1/threads/{thread.public_id}/messages",
        acme,
        json.dumps({"role": "user", "content": "sent in chunks"}).encode(),
        **{"Idempotency-Key": "chunked-1"},
    )
    patched = send_chunked(
        gunicorn,
        "PATCH",
        f"/api/v1/threads/{thread.public_id}",
        acme,
        b'{"metadata": {"channel": "chunked"}}',
    )

    assert created[0] == 201, created
    assert Thread.objects.get(public_id=created[1]["id"]).title == "Chunks"
    assert appended[0] == 201, appended
    assert Message.objects.get(public_id=appended[1]["id"]).content == "sent in chunks"
    assert patched[0] == 200, patched
    thread.refresh_from_db()
    assert thread.metadata == {"channel": "chunked"}


def test_gunicorn_refuses_a_chunked_body_over_the_limit(gunicorn, acme):
    before = Rows.now()
    body = json.dumps({"user_ref": "u-big", "title": "x" * LIMIT}).encode()

    status, answer = send_chunked(gunicorn, "POST", "/api/v1/threads", acme, body)

    assert (status, answer["code"]) == (413, "payload_too_large")
    assert Rows.now() == before


def test_runserver_refuses_chunked_bodies_with_411(runserver, acme):
    before = Rows.now()

    status, answer = send_chunked(runserver, "POST", "/api/v1/threads", acme, b'{"user_ref": "u"}')

    assert (status, answer["code"]) == (411, "length_required")
    assert "Content-Length" in answer["detail"]
    assert Rows.now() == before
