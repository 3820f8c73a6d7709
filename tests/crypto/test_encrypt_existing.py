"""``manage.py encrypt_existing``: the content written before encryption was turned on is sealed
in batches with its subject's key; erasure markers stay as erasure wrote them; an interrupted
run is finished by the next; a row erased while its batch runs is never written back."""

import threading
from io import StringIO
from typing import Any

import pytest
from django.core.management import CommandError, call_command
from django.db import connection, connections

from audit.erasure import message_content_erase
from compaction.models import ContentBlob, Summary
from convmem import blind_index, seal_existing
from tests.conftest import SYSTEM, TenantKit
from threads import services
from threads.erasure import ERASED
from threads.models import Message, Thread

pytestmark = pytest.mark.django_db


def _stored(table: str, public_id: str) -> str:
    columns = {
        "threads_message": "content, content_parts, tool_calls, metadata",
        "compaction_summary": "text",
    }[table]
    with connection.cursor() as cursor:
        cursor.execute(f"SELECT {columns} FROM {table} WHERE public_id = %s", [public_id])
        return " ".join(str(value) for value in cursor.fetchone())


def _clear_history(acme: TenantKit, user_ref: str = "alice", turns: int = 2) -> Thread:
    """A thread written with encryption off: text, parts, metadata, tool calls, a memo."""
    thread = services.thread_create(tenant=acme.tenant, actor=SYSTEM, user_ref=user_ref)
    for i in range(turns):
        services.message_append(
            thread=thread,
            actor=SYSTEM,
            role="user",
            content=[{"type": "text", "text": f"canary parts {i}"}],
            metadata={"mood": f"canary mood {i}"},
        )
        call = {"id": f"call_{i}", "type": "function"}
        call["function"] = {"name": "lookup", "arguments": f'{{"q": "canary {i}"}}'}
        services.message_append(
            thread=thread,
            actor=SYSTEM,
            role="assistant",
            content=f"canary answer {i}",
            tool_calls=[call],
        )
        services.message_append(
            thread=thread,
            actor=SYSTEM,
            role="tool",
            content=f"canary result {i}",
            tool_call_id=f"call_{i}",
        )
    nodes = list(Message.objects.filter(thread=thread).exclude(role="root").order_by("pk"))
    Summary.objects.create(
        thread=thread,
        first=nodes[0],
        segment_first=nodes[0],
        last=nodes[1],
        covered_ids=[n.public_id for n in nodes[:2]],
        status=Summary.Status.READY,
        text="canary memo",
        fingerprint="a",
    )
    return Thread.objects.get(pk=thread.pk)


def _canaries_at_rest() -> list[str]:
    found = [
        m.public_id
        for m in Message.objects.exclude(role="root")
        if "canary" in _stored("threads_message", m.public_id)
    ]
    found += [
        s.public_id
        for s in Summary.objects.all()
        if "canary" in _stored("compaction_summary", s.public_id)
    ]
    return found


def _encrypt(*args: str) -> str:
    out = StringIO()
    call_command("encrypt_existing", *args, stdout=out, stderr=StringIO())
    return out.getvalue()


def test_rows_written_in_clear_are_sealed_and_read_as_before(
    acme: TenantKit, settings: Any
) -> None:
    thread = _clear_history(acme)
    before = [
        (m.content, m.content_parts, m.tool_calls, m.metadata)
        for m in Message.objects.filter(thread=thread).order_by("pk")
    ]
    assert thread.data_key_id == ""  # made before encryption: no key yet
    settings.CONVMEM_ENCRYPT_CONTENT = True

    assert _encrypt("--dry-run").splitlines() == [
        "threads.SystemPrompt: 0 rows in clear",
        "threads.Message: 6 rows in clear",
        "threads.IdempotencyRecord: 0 rows in clear",
        "compaction.Summary: 1 rows in clear",
        "compaction.ContentBlob: 0 rows in clear",
        "compaction.RenderedPiece: 0 rows in clear",
    ]
    output = _encrypt()

    assert "threads.Message: sealed 6 rows" in output
    assert "compaction.Summary: sealed 1 rows" in output
    assert _canaries_at_rest() == []
    thread.refresh_from_db()
    assert thread.data_key_id
    assert [
        (m.content, m.content_parts, m.tool_calls, m.metadata)
        for m in Message.objects.filter(thread=thread).order_by("pk")
    ] == before
    assert Summary.objects.get(thread=thread).text == "canary memo"
    assert "threads.Message: 0 rows in clear" in _encrypt("--dry-run")


def _stored_prompt_and_responses(thread: Thread) -> str:
    with connection.cursor() as cursor:
        cursor.execute("SELECT text FROM threads_systemprompt WHERE thread_id = %s", [thread.pk])
        prompts = [row[0] for row in cursor.fetchall()]
        cursor.execute(
            "SELECT response_body FROM threads_idempotencyrecord WHERE thread_id = %s", [thread.pk]
        )
        responses = [str(row[0]) for row in cursor.fetchall()]
    return " ".join(prompts + responses)


def test_system_prompts_and_stored_responses_written_in_clear_are_sealed(
    acme: TenantKit, settings: Any
) -> None:
    thread = services.thread_create(
        tenant=acme.tenant, actor=SYSTEM, user_ref="alice", system="canary system prompt"
    )
    said = acme.client.post(
        f"/api/v1/threads/{thread.public_id}/messages",
        {"role": "user", "content": "canary turn"},
        format="json",
        HTTP_IDEMPOTENCY_KEY="clear-before",
    )
    assert said.status_code == 201
    context = acme.client.post(
        f"/api/v1/threads/{thread.public_id}/context",
        {"window_tokens": 4000, "retrieved": [{"ref": "crm", "content": "canary item"}]},
        format="json",
    )
    assert context.status_code == 200, context.data
    assert "canary system prompt" in _stored_prompt_and_responses(thread)
    assert "canary turn" in _stored_prompt_and_responses(thread)
    settings.CONVMEM_ENCRYPT_CONTENT = True

    output = _encrypt()

    assert "threads.SystemPrompt: sealed 1 rows" in output
    assert "threads.IdempotencyRecord: sealed 1 rows" in output
    # The tenant's blobs written in clear are shared by its subjects: no one key seals them.
    assert "compaction.ContentBlob: sealed 0 rows" in output
    assert set(ContentBlob.objects.values_list("key_id", flat=True)) == {""}
    assert "canary" not in _stored_prompt_and_responses(thread)
    thread = Thread.objects.get(pk=thread.pk)
    assert thread.system_prompt.text == "canary system prompt"
    replay = acme.client.post(
        f"/api/v1/threads/{thread.public_id}/messages",
        {"role": "user", "content": "canary turn"},
        format="json",
        HTTP_IDEMPOTENCY_KEY="clear-before",
    )
    assert replay.status_code == 201
    assert replay.data == said.data


def test_rows_it_seals_are_found_by_search_through_the_blind_index(
    acme: TenantKit, settings: Any
) -> None:
    thread = _clear_history(acme, turns=1)
    answer = Message.objects.get(thread=thread, role="assistant")
    settings.CONVMEM_ENCRYPT_CONTENT = True

    _encrypt()

    thread.refresh_from_db()  # its key was made by the command
    with connection.cursor() as cursor:
        cursor.execute("SELECT search_terms FROM threads_message WHERE id = %s", [answer.pk])
        terms = cursor.fetchone()[0]
    assert terms.split()[0] == blind_index.key_token(thread.data_key_id)
    assert "canary" not in terms
    response = acme.client.get(f"/api/v1/threads/{thread.public_id}/search", {"q": "answer"})
    assert response.status_code == 200, response.content
    assert [hit["message_id"] for hit in response.json()["results"]] == [answer.public_id]
    # The tool call's arguments are indexed as a sealed append indexes them.
    response = acme.client.get("/api/v1/search", {"q": "lookup"})
    assert [hit["message_id"] for hit in response.json()["results"]] == [answer.public_id]


def test_erased_rows_keep_their_markers_in_clear(acme: TenantKit, settings: Any) -> None:
    thread = _clear_history(acme)
    redacted = Message.objects.filter(thread=thread, role="user").first()
    message_content_erase(message=redacted, actor=SYSTEM)
    erased_memo = Summary.objects.get(thread=thread, fingerprint="a")
    assert erased_memo.text == ERASED  # the memo covered the redacted turn
    settings.CONVMEM_ENCRYPT_CONTENT = True

    _encrypt()

    assert _stored("threads_message", redacted.public_id).startswith(ERASED)
    assert _stored("compaction_summary", erased_memo.public_id) == ERASED
    assert _canaries_at_rest() == []


def test_an_interrupted_run_leaves_everything_readable_and_the_next_one_finishes(
    acme: TenantKit, settings: Any
) -> None:
    threads = [_clear_history(acme, f"user-{i}") for i in range(3)]
    settings.CONVMEM_ENCRYPT_CONTENT = True

    def crash_after_the_first_batch(read: int, sealed: int) -> None:
        raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        seal_existing.clear_rows_seal(Message, batch_size=5, on_batch=crash_after_the_first_batch)

    # The first batch read 5 rows: a root and 4 turns, sealed; the other 14 turns wait.
    assert seal_existing.clear_rows_count(Message) == 18 - 4
    texts = sorted(m.content for m in Message.objects.filter(role="assistant"))
    assert texts == sorted(f"canary answer {i}" for i in range(2) for _ in threads)

    assert "threads.Message: sealed 14 rows" in _encrypt("--batch-size", "5")
    assert "threads.Message: sealed 0 rows" in _encrypt()
    assert _canaries_at_rest() == []


def test_a_row_erased_while_its_batch_runs_is_not_written_back(
    acme: TenantKit, settings: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    thread = _clear_history(acme, turns=1)
    settings.CONVMEM_ENCRYPT_CONTENT = True
    target = Message.objects.filter(thread=thread, role="user").get()
    resolve_key = Thread.data_key

    def erased_meanwhile(self: Thread, renew: bool = False) -> str:
        # The erasure commits between the batch's first read and its locked re-read.
        if not Message.objects.filter(pk=target.pk, erased_at__isnull=False).exists():
            message_content_erase(message=target, actor=SYSTEM)
        return resolve_key(self, renew)

    monkeypatch.setattr(Thread, "data_key", erased_meanwhile)

    assert seal_existing.clear_rows_seal(Message) == 2  # the assistant's and the tool's turns

    assert _stored("threads_message", target.public_id).startswith(ERASED)
    assert _canaries_at_rest() == []


def test_appends_made_with_encryption_on_are_skipped(acme: TenantKit, settings: Any) -> None:
    settings.CONVMEM_ENCRYPT_CONTENT = True
    thread = services.thread_create(tenant=acme.tenant, actor=SYSTEM, user_ref="alice")
    services.message_append(thread=thread, actor=SYSTEM, role="user", content="canary")
    stored = _stored("threads_message", Message.objects.filter(thread=thread).last().public_id)

    assert "threads.Message: sealed 0 rows" in _encrypt()

    assert (
        _stored("threads_message", Message.objects.filter(thread=thread).last().public_id) == stored
    )


def test_it_refuses_to_run_with_encryption_off(acme: TenantKit) -> None:
    with pytest.raises(CommandError, match="CONVMEM_ENCRYPT_CONTENT"):
        _encrypt()


@pytest.mark.postgres
@pytest.mark.django_db(transaction=True)
def test_appends_while_it_runs_all_land_and_end_sealed(acme: TenantKit, settings: Any) -> None:
    old = [_clear_history(acme, f"user-{i}", turns=3) for i in range(4)]
    settings.CONVMEM_ENCRYPT_CONTENT = True
    errors: list[BaseException] = []

    def append_meanwhile() -> None:
        try:
            for i in range(30):
                thread = old[i % len(old)]
                services.message_append(
                    thread=thread, actor=SYSTEM, role="user", content=f"canary new {i}"
                )
        except BaseException as error:  # reported below, not lost in the thread
            errors.append(error)
        finally:
            connections.close_all()

    appender = threading.Thread(target=append_meanwhile)
    appender.start()
    while appender.is_alive():
        seal_existing.clear_rows_seal(Message, batch_size=3)
    appender.join()
    seal_existing.clear_rows_seal(Message, batch_size=3)
    seal_existing.clear_rows_seal(Summary, batch_size=3)

    assert errors == []
    assert _canaries_at_rest() == []
    new = Message.objects.filter(content__startswith="enc1:").count()
    assert new == Message.objects.exclude(role="root").count() == 4 * 9 + 30
    assert sorted(
        m.content for m in Message.objects.exclude(role="root") if "new" in m.content
    ) == sorted(f"canary new {i}" for i in range(30))
