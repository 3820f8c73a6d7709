"""The erasure proof: plant a canary in a subject's data, let it spread the way it does in use
(memo written by the worker, rendered snapshot, content blobs, stored idempotent responses),
execute a deletion request through a real Celery worker, then scan every column of every
table and every Redis key (or broker file) for it. Another user's data must stay.
"""

import base64
import json
import uuid
import zlib
from pathlib import Path

import pytest
import redis
from django.conf import settings
from django.contrib.auth.models import User
from django.db import connection

from audit.deletion import deletion_request_approve, deletion_request_execute
from audit.models import DeletionRequest
from compaction.models import RenderedPiece, Summary
from convmem import crypto
from tests.audit.conftest import grant, wait_for
from threads.models import Message, Thread

pytestmark = [pytest.mark.worker, pytest.mark.django_db(transaction=True)]

TURNS = 20
AGENT_TURNS = 3


def db_hits(needle: str) -> dict[str, int]:
    """Rows containing ``needle``, per ``table.column``, over every column of every table, and
    the kept inputs' pieces once decompressed."""
    hits = {}
    pieces = sum(
        needle.encode() in _piece_bytes(bytes(data))
        for data in RenderedPiece.objects.values_list("data", flat=True)
    )
    if pieces:
        hits["compaction_renderedpiece.data"] = pieces
    with connection.cursor() as cursor:
        for table in connection.introspection.table_names(cursor):
            for column in connection.introspection.get_table_description(cursor, table):
                quoted = connection.ops.quote_name(column.name)
                cursor.execute(
                    f"SELECT COUNT(*) FROM {connection.ops.quote_name(table)} "
                    f"WHERE CAST({quoted} AS TEXT) LIKE %s",
                    [f"%{needle}%"],
                )
                count = cursor.fetchone()[0]
                if count:
                    hits[f"{table}.{column.name}"] = count
    return hits


def _piece_bytes(data: bytes) -> bytes:
    """A stored piece as it can be read at rest: decompressed, unless it is sealed."""
    return data if data.startswith(crypto.PREFIX.encode()) else zlib.decompress(data)


def _contains(raw: bytes, needle: bytes) -> bool:
    """``needle`` in ``raw``, or in a base64-encoded kombu message body inside it."""
    if needle in raw:
        return True
    try:
        message = json.loads(raw)
    except ValueError:
        return False
    if isinstance(message, list):  # the Redis transport stores [message, exchange, key]
        message = message[0] if message else None
    if isinstance(message, dict) and isinstance(message.get("body"), str):
        try:
            return needle in base64.b64decode(message["body"])
        except ValueError:
            return False
    return False


def broker_hits(needle: str) -> list[str]:
    """Redis keys (the test's REDIS_URL: broker, run streams, rate limits) or broker files
    holding ``needle``."""
    target = needle.encode()
    found = []
    if settings.REDIS_URL:
        client = redis.Redis.from_url(settings.REDIS_URL)
        for key in client.scan_iter(count=500):
            kind = client.type(key).decode()
            values: list[bytes] = {
                "string": lambda k: [client.get(k) or b""],
                "list": lambda k: client.lrange(k, 0, -1),
                "hash": lambda k: [b for pair in client.hgetall(k).items() for b in pair],
                "set": lambda k: list(client.smembers(k)),
                "zset": lambda k: client.zrange(k, 0, -1),
            }.get(kind, lambda k: [])(key)
            if any(_contains(v, target) for v in [key, *values]):
                found.append(key.decode(errors="replace"))
        return found
    for path in Path(settings.BROKER_DIR).rglob("*"):
        if path.is_file() and _contains(path.read_bytes(), target):
            found.append(str(path))
    return found


def test_the_broker_scan_finds_what_it_looks_for(transactional_db, tmp_path):
    """The scanner itself: a planted value (in a Redis hash, as the broker's unacknowledged
    messages are kept, or a base64 broker message file) is found."""
    probe = f"PROBE{uuid.uuid4().hex.upper()}"
    if settings.REDIS_URL:
        client = redis.Redis.from_url(settings.REDIS_URL)
        client.hset("audit-probe", "message", json.dumps({"text": probe}))
        assert broker_hits(probe) == ["audit-probe"]
        client.delete("audit-probe")
    else:
        folder = Path(settings.BROKER_DIR) / "audit-probe"
        folder.mkdir(exist_ok=True)
        body = base64.b64encode(json.dumps([[probe], {}, {}]).encode()).decode()
        (folder / "message.msg").write_text(json.dumps({"body": body}))
        assert len(broker_hits(probe)) == 1
        (folder / "message.msg").unlink()
        folder.rmdir()
    assert broker_hits(probe) == []


def converse(client, user_ref: str, canary: str) -> Thread:
    """A conversation through the API, long enough that the curator asks for a memo."""
    keys = iter(uuid.uuid4().hex for _ in range(1000))
    created = client.post(
        "/api/v1/threads",
        {"user_ref": user_ref, "title": f"Case {canary}", "metadata": {"ref": canary}},
        format="json",
        HTTP_IDEMPOTENCY_KEY=next(keys),
    )
    thread_id = created.data["id"]
    for turn in range(TURNS):
        role = "user" if turn % 2 == 0 else "assistant"
        content = (
            f"Turn {turn}: my customer number is {canary} and order ORD-{4000 + turn} shipped "
            "to the warehouse in Leipzig on 2026-11-05, tracking says it is delayed again."
        )
        response = client.post(
            f"/api/v1/threads/{thread_id}/messages",
            {"role": role, "content": content},
            format="json",
            HTTP_IDEMPOTENCY_KEY=next(keys),
        )
        assert response.status_code == 201
    for body in agent_turns(canary):
        response = client.post(
            f"/api/v1/threads/{thread_id}/messages",
            body,
            format="json",
            HTTP_IDEMPOTENCY_KEY=next(keys),
        )
        assert response.status_code == 201, response.data
    return Thread.objects.get(public_id=thread_id)


def agent_turns(canary: str) -> list[dict]:
    """A tool call and its result, then a user turn with an image: the canary in the tool's
    arguments, the message metadata, the result and a content part's URL."""
    call = {
        "id": "call_1",
        "type": "function",
        "function": {"name": "crm_lookup", "arguments": f'{{"customer": "{canary}"}}'},
    }
    image = {
        "type": "image_url",
        "image_url": {"url": f"https://cdn.example/{canary}.png", "detail": "low"},
    }
    return [
        {"role": "assistant", "content": "", "tool_calls": [call], "metadata": {"c": canary}},
        {"role": "tool", "tool_call_id": "call_1", "content": f"{canary}: premium since 2019"},
        {"role": "user", "content": [{"type": "text", "text": f"I am {canary}"}, image]},
    ]


def assemble(client, thread: Thread, canary: str) -> dict:
    response = client.post(
        f"/api/v1/threads/{thread.public_id}/context",
        {
            "window_tokens": 900,
            "reserve_tokens": 100,
            "system": f"You help customer {canary}.",
            "retrieved": [{"ref": "crm", "content": f"CRM record of {canary}: premium"}],
        },
        format="json",
    )
    assert response.status_code == 200, response.data
    return response.data


def subject_erase_by_request(acme, user_ref: str) -> DeletionRequest:
    """File a deletion request for ``user_ref``, approve and execute it as an officer, and wait
    until the worker has carried it out."""
    filed = acme.client.post(
        "/api/v1/deletion-requests", {"user_ref": user_ref}, format="json"
    ).data
    officer = User.objects.create_user("officer", is_staff=True)
    grant(officer, "approve_deletionrequest", "execute_deletionrequest")
    request = DeletionRequest.objects.get(public_id=filed["id"])
    deletion_request_approve(request=request, user=officer)
    deletion_request_execute(request=request, user=officer)
    wait_for(
        lambda: (
            acme.client.get(f"/api/v1/deletion-requests/{filed['id']}").data["status"] == "executed"
        )
    )
    return request


def test_executed_request_leaves_no_trace_of_the_canary(acme, celery_worker):
    canary = f"CANARY{uuid.uuid4().hex[:12].upper()}"
    bystander = f"BYSTANDER{uuid.uuid4().hex[:12].upper()}"
    subject = converse(acme.client, "subject-1", canary)
    other = converse(acme.client, "other-1", bystander)
    for thread, word in ((subject, canary), (other, bystander)):
        assemble(acme.client, thread, word)  # history does not fit: a memo is requested
        wait_for(lambda t=thread: Summary.objects.filter(thread=t, status="ready").exists())
        body = assemble(acme.client, thread, word)  # now uses the memo
        assert body["sections"]["memo"]["status"] == "ready"
    summary = Summary.objects.get(thread=subject, status="ready")
    assert canary in summary.text, "the memo carries the canary (the test plants what it scans)"
    planted = db_hits(canary)
    assert {
        "threads_message.content",
        "threads_message.content_parts",
        "threads_message.tool_calls",
        "threads_message.metadata",
        "threads_thread.title",
        "threads_thread.metadata",
        "threads_idempotencyrecord.response_body",
        "compaction_summary.text",
        "compaction_renderedpiece.data",
        "compaction_contentblob.text",
    } <= set(planted), planted

    request = subject_erase_by_request(acme, "subject-1")

    assert db_hits(canary) == {}
    assert broker_hits(canary) == []
    assert Message.objects.filter(thread=subject, erased_at__isnull=True).count() == 1  # root
    survivors = db_hits(bystander)
    assert survivors["threads_message.content"] == TURNS + 2  # the tool result, the user turn
    assert "compaction_summary.text" in survivors
    assert "compaction_renderedpiece.data" in survivors
    proof = DeletionRequest.objects.get(pk=request.pk).proof
    assert proof["counts"]["messages"] == TURNS + AGENT_TURNS
    assert proof["counts"]["summaries"] >= 1
    assert proof["counts"]["assembly_snapshots"] == 2
    assert proof["counts"]["content_blobs"] == 2
