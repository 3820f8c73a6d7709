"""The full-text index stays in step with the record: append, edit, redaction, erasure and
deletion requests, in the writing transaction. Runs on SQLite (FTS5) and PostgreSQL (GIN)."""

import pytest
from django.db import connection, transaction

from audit.deletion import (
    deletion_request_approve,
    deletion_request_execute,
    deletion_request_file,
    deletion_request_perform,
)
from audit.erasure import message_content_erase, thread_content_erase
from tests.audit.conftest import officer  # noqa: F401  (fixture)
from tests.conftest import SYSTEM, make_thread
from threads import search, services
from threads.models import Message


def found(text: str) -> set[str]:
    hits, _ = search.message_search(Message.objects.all(), text)
    return set(hits.values_list("public_id", flat=True))


def append(thread, role: str, content, **fields) -> Message:
    return services.message_append(
        thread=thread, actor=SYSTEM, role=role, content=content, **fields
    )


def test_an_appended_message_is_found_by_any_case_of_its_words(acme):
    thread = make_thread(acme.tenant)
    message = append(thread, "user", "My booking code is qzxkpt, flight SK1420 to Malmö.")

    assert found("QZXKPT") == {message.public_id}
    assert found("sk1420 malmö") == {message.public_id}
    assert found("qzxkpt nowhere") == set()  # every word must occur


def test_tool_call_arguments_and_tool_results_are_found(acme):
    thread = make_thread(acme.tenant)
    append(thread, "user", "What is the weather?")
    call = append(
        thread,
        "assistant",
        "",
        tool_calls=[
            {
                "id": "call_1",
                "type": "function",
                "function": {"name": "get_weather", "arguments": '{"city": "Kraków"}'},
            }
        ],
    )
    result = append(thread, "tool", "Sunny, 21 degrees in Kraków", tool_call_id="call_1")

    assert found("kraków") == {call.public_id, result.public_id}
    assert found("get_weather") == {call.public_id}


def test_content_parts_text_is_found(acme):
    thread = make_thread(acme.tenant)
    message = append(
        thread,
        "user",
        [
            {"type": "text", "text": "see the attached invoice 77-ab"},
            {"type": "image_url", "image_url": {"url": "https://example.com/i.png"}},
        ],
    )

    assert found("invoice 77-ab") == {message.public_id}


def test_an_edit_is_found_and_the_original_stays_findable(acme):
    thread = make_thread(acme.tenant)
    original = append(thread, "user", "deliver to Storgatan 5")
    edit = services.message_edit(
        thread=thread,
        actor=SYSTEM,
        message_public_id=original.public_id,
        content="deliver to Kungsgatan 9",
    )

    assert found("kungsgatan") == {edit.public_id}
    assert found("storgatan") == {original.public_id}
    assert found("deliver") == {original.public_id, edit.public_id}


def test_a_redacted_message_leaves_the_index_in_the_erasure_transaction(acme):
    thread = make_thread(acme.tenant)
    secret = append(thread, "user", "my passport number is pz4471")
    kept = append(thread, "assistant", "noted, passport received")

    message_content_erase(message=secret, actor=SYSTEM)

    assert found("pz4471") == set()
    assert found("passport") == {kept.public_id}
    assert found("erased") == set()  # the tombstone text is not searchable either


def test_erased_tool_arguments_leave_the_index(acme):
    thread = make_thread(acme.tenant)
    call = append(
        thread,
        "assistant",
        "",
        tool_calls=[
            {
                "id": "c1",
                "type": "function",
                "function": {"name": "lookup", "arguments": '{"iban": "SE3550000000054910000003"}'},
            }
        ],
    )
    append(thread, "tool", "ok", tool_call_id="c1")

    message_content_erase(message=call, actor=SYSTEM)

    assert found("SE3550000000054910000003") == set()
    assert found("lookup") == set()


def test_a_thread_erasure_empties_the_index_of_that_thread_only(acme):
    erased = make_thread(acme.tenant)
    append(erased, "user", "alpha bravo charlie")
    other = make_thread(acme.tenant)
    survivor = append(other, "user", "alpha delta")

    thread_content_erase(thread=erased, actor=SYSTEM)

    assert found("bravo") == set()
    assert found("alpha") == {survivor.public_id}


def test_an_executed_deletion_request_leaves_nothing_findable(acme, officer):  # noqa: F811
    thread = make_thread(acme.tenant, user_ref="subject")
    append(thread, "user", "Joaquín lives at Calle Mayor 12")
    request = deletion_request_file(tenant=acme.tenant, actor=acme.actor, user_ref="subject")
    deletion_request_approve(request=request, user=officer)
    deletion_request_execute(request=request, user=officer)

    assert deletion_request_perform(request_id=request.pk)

    assert found("joaquín") == set()
    assert found("mayor") == set()


def test_a_rolled_back_append_leaves_no_index_entry(acme):
    thread = make_thread(acme.tenant)

    def append_then_fail() -> None:
        with transaction.atomic():
            append(thread, "user", "rollback-me-xyzzy")
            raise RuntimeError

    with pytest.raises(RuntimeError):
        append_then_fail()

    assert found("xyzzy") == set()


def test_a_query_without_words_finds_nothing(acme):
    thread = make_thread(acme.tenant)
    append(thread, "user", "anything")

    assert found("  ?! ") == set()


@pytest.mark.skipif(connection.vendor != "sqlite", reason="SQLite keeps the index by triggers")
def test_the_triggers_are_recreated_after_a_table_rebuild_drops_them(db):
    from django.db import connection as db

    with db.cursor() as cursor:
        cursor.execute(f"DROP TRIGGER {search.FTS_TABLE}_update")
    search.search_index_ensure(db)

    with db.cursor() as cursor:
        cursor.execute("SELECT name FROM sqlite_master WHERE type = 'trigger' ORDER BY name")
        names = {row[0] for row in cursor.fetchall()}
    assert set(search.SQLITE_TRIGGERS) <= names


@pytest.mark.postgres
def test_postgresql_answers_from_the_gin_index(acme):
    thread = make_thread(acme.tenant)
    append(thread, "user", "needle in a haystack")
    hits, _ = search.message_search(Message.objects.all(), "needle")
    with transaction.atomic(), connection.cursor() as cursor:
        # Bitmap scans only: the planner may otherwise walk the primary key of a small table.
        cursor.execute("SET LOCAL enable_seqscan = off")
        cursor.execute("SET LOCAL enable_indexscan = off")
        sql, params = hits.query.sql_with_params()
        cursor.execute("EXPLAIN " + sql, params)
        plan = "\n".join(row[0] for row in cursor.fetchall())

    assert search.PG_INDEX in plan


def _pending_list() -> tuple[int, int]:
    """The GIN index's pending list: its pages and the rows whose entries wait in it."""
    with connection.cursor() as cursor:
        cursor.execute("CREATE EXTENSION IF NOT EXISTS pgstattuple")
        cursor.execute(
            "SELECT pending_pages, pending_tuples FROM pgstatginindex(%s::regclass)",
            [search.PG_INDEX],
        )
        return cursor.fetchone()


@pytest.mark.postgres
def test_the_gin_index_keeps_a_pending_list_of_64_kb(db):
    """An insert adds its words to a small list instead of walking the tree for each (see
    ``threads.search.PG_STORAGE``); the smallest limit PostgreSQL takes bounds what every
    search reads of it."""
    with connection.cursor() as cursor:
        cursor.execute("SELECT reloptions FROM pg_class WHERE relname = %s", [search.PG_INDEX])
        (options,) = cursor.fetchone()

    assert set(options) == {"fastupdate=on", "gin_pending_list_limit=64"}


@pytest.mark.postgres
def test_words_waiting_in_the_pending_list_are_found_and_the_list_stays_small(acme):
    thread = make_thread(acme.tenant)
    message = append(thread, "user", "The serial is ZQ4471VEX, under the stairs.")

    assert _pending_list()[1] >= 1  # its words wait in the list, not in the tree
    assert found("zq4471vex stairs") == {message.public_id}

    for index in range(150):  # about 25,000 entries: well past 64 kB
        append(thread, "user", f"Note {index}: " + " ".join(f"w{index}x{n}" for n in range(160)))

    pages, _ = _pending_list()
    assert pages <= 9  # 64 kB of 8 kB pages, plus the page that took it over and was merged
    assert found("ZQ4471VEX") == {message.public_id}  # merged into the tree, still found
    assert len(found("w149x0")) == 1


@pytest.mark.postgres
def test_a_lookup_within_a_thread_reads_only_the_index_on_an_unanalysed_table(acme):
    """Recall's lookup: the thread is a lexeme of the indexed document, and no btree applies to
    its bounds, so the GIN index answers it — with no statistics gathered, as on a fresh
    database (through a (thread, …) btree the planner would parse every message of the thread;
    scanning the table, every message)."""
    thread = make_thread(acme.tenant)
    for number in range(30):
        append(thread, "user", f"note {number} about the parcel qzx{number}")
    last = Message.objects.filter(thread=thread).order_by("-id").first()
    sql, params = search.thread_term_hits_sql(
        thread_id=thread.pk,
        terms=["qzx3"],
        below_id=last.pk,
        below_depth=last.depth,
        per_term=25,
        key_id=thread.data_key_id,  # "" unless sealing is on (CONVMEM_ENCRYPT_CONTENT)
    )
    with transaction.atomic(), connection.cursor() as cursor:
        cursor.execute("SELECT COUNT(*) FROM pg_stats WHERE tablename = 'threads_message'")
        assert cursor.fetchone()[0] == 0
        cursor.execute("SET LOCAL enable_seqscan = off")
        cursor.execute(f"EXPLAIN {sql}", params)
        plan = "\n".join(row[0] for row in cursor.fetchall())
        hits = search.thread_term_hits(
            thread_id=thread.pk,
            terms=["qzx3"],
            below_id=last.pk,
            below_depth=last.depth,
            per_term=25,
            key_id=thread.data_key_id,
        )

    assert search.PG_INDEX in plan
    assert "Seq Scan" not in plan
    assert "message_thread" not in plan
    assert [hit.message_id for hit in hits] == [
        m.pk for m in Message.objects.filter(thread=thread) if m.content.endswith("qzx3")
    ]
