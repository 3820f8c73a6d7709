"""The leaf-up path reads use the primary-key index and stop after the rows they need.

Checked with EXPLAIN on PostgreSQL against a table big enough for the planner to care: many
other threads plus one deep thread. The chains are bulk-inserted (appending 12,000 messages
one by one would make a slow test); threads and roots come from the services, and the tree
shape is the one the services build (hidden root, depth).
"""

import json
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

import pytest
from django.core.management.color import no_style
from django.db import connection
from django.db.models import Max

from compaction import selectors as compaction_selectors
from compaction.context import context_assemble
from compaction.models import AssemblyRecord, Summary
from tests.conftest import SYSTEM, make_thread
from threads import search, selectors, services
from threads.models import Message, Thread

pytestmark = pytest.mark.postgres

LIMIT = 50


def bulk_threads(tenant, *, count: int, messages: int) -> list[Thread]:
    """``count`` threads, each a chain of ``messages`` nodes under its root, the last node its
    active leaf. Threads and roots come from the services, the chains from one bulk insert."""
    threads = [
        services.thread_create(tenant=tenant, actor=SYSTEM, user_ref="bulk") for _ in range(count)
    ]
    first = Message.objects.aggregate(top=Max("id"))["top"] + 1
    rows = []
    for t, thread in enumerate(threads):
        start = first + t * messages
        rows += [
            Message(
                id=start + i,
                public_id=f"msg_bulk{start + i}",
                thread=thread,
                parent_id=thread.root_id if i == 0 else start + i - 1,
                role="user" if i % 2 == 0 else "assistant",
                content=f"message {i}",
                token_count=3,
                depth=i + 1,
            )
            for i in range(messages)
        ]
    Message.objects.bulk_create(rows, batch_size=5_000)
    with connection.cursor() as cursor:
        # Explicit ids bypassed the sequence; move it past them for later inserts.
        for sql in connection.ops.sequence_reset_sql(no_style(), [Message]):
            cursor.execute(sql)
    for t, thread in enumerate(threads):
        thread.active_leaf_id = first + (t + 1) * messages - 1
        thread.save(update_fields=["active_leaf"])
    return threads


def unanalysed(*models: Any) -> None:
    """Keep autovacuum from analysing these tables during the test: their plans must not
    depend on statistics (a fresh database, or one with autovacuum off, has none)."""
    with connection.cursor() as cursor:
        for model in models:
            cursor.execute(f"ALTER TABLE {model._meta.db_table} SET (autovacuum_enabled = false)")


@pytest.fixture
def deep_thread(acme) -> Thread:
    bulk_threads(acme.tenant, count=50, messages=200)
    (thread,) = bulk_threads(acme.tenant, count=1, messages=2_000)
    with connection.cursor() as cursor:
        cursor.execute(f"ANALYZE {Message._meta.db_table}")
    thread.refresh_from_db()
    return thread


@pytest.fixture
def unanalysed_deep_thread(acme) -> Thread:
    unanalysed(Message, Summary)
    bulk_threads(acme.tenant, count=50, messages=200)
    (thread,) = bulk_threads(acme.tenant, count=1, messages=2_000)
    thread.refresh_from_db()
    return thread


def explain(sql: str, params: list[Any]) -> dict[str, Any]:
    """The executed plan (EXPLAIN ANALYZE) of ``sql`` as a tree of dicts."""
    with connection.cursor() as cursor:
        cursor.execute("EXPLAIN (ANALYZE, FORMAT JSON) " + sql, params)
        raw = cursor.fetchone()[0]
    return (json.loads(raw) if isinstance(raw, str) else raw)[0]["Plan"]


def nodes(plan: dict[str, Any]) -> list[dict[str, Any]]:
    found = [plan]
    for child in plan.get("Plans", []):
        found += nodes(child)
    return found


def message_scans(plan: dict[str, Any]) -> list[dict[str, Any]]:
    return [n for n in nodes(plan) if n.get("Relation Name") == Message._meta.db_table]


def assert_leaf_up_and_bounded(plan: dict[str, Any], *, rows: int) -> None:
    """Every read of the message table is an index lookup (no Seq Scan), each step up the
    path is a primary-key lookup, and the walk produced exactly ``rows`` rows."""
    assert {n["Node Type"] for n in message_scans(plan)} <= {"Index Scan", "Index Only Scan"}
    walk = next(n for n in nodes(plan) if n["Node Type"] == "Recursive Union")
    anchor, step = walk["Plans"]
    assert {n["Index Name"] for n in message_scans(anchor)} <= {
        "threads_message_pkey",
        "message_thread_id_idx",
    }
    assert {n["Index Name"] for n in message_scans(step)} == {"threads_message_pkey"}
    assert walk["Actual Rows"] == rows
    assert max(n["Actual Rows"] * n["Actual Loops"] for n in message_scans(plan)) <= rows


def test_path_page_plan(deep_thread):
    params = [deep_thread.active_leaf_id, deep_thread.pk, LIMIT + 1]

    plan = explain(selectors._path_sql(), params)

    assert_leaf_up_and_bounded(plan, rows=LIMIT + 1)
    page = selectors.path_page(thread=deep_thread, leaf=deep_thread.active_leaf, limit=LIMIT)
    assert [m.depth for m in page.messages] == list(range(2_000 - LIMIT + 1, 2_001))


def read_params(thread: Thread, *, budget: int) -> list[Any]:
    """``context_read``'s parameters: 3 tokens + 4 overhead per message, no lookahead; the
    last is the thread whose previous input's prefix is read."""
    walk = [4, thread.active_leaf_id, thread.pk, 4, 10_000, 1, budget, budget]
    return [*walk, *[budget] * 4, thread.root_id, thread.pk]


def test_context_read_plan(deep_thread):
    # 10 messages of 3 tokens + 4 overhead reach a 70-token budget (no memo to look ahead for).
    plan = explain(compaction_selectors.read_sql("postgresql"), read_params(deep_thread, budget=70))

    walk = next(n for n in nodes(plan) if n["Node Type"] == "Recursive Union")
    assert walk["Actual Rows"] == 10
    assert {n["Node Type"] for n in message_scans(plan)} <= {"Index Scan", "Index Only Scan"}
    assert max(n["Actual Rows"] * n["Actual Loops"] for n in message_scans(plan)) <= 10


def literal(value: Any) -> str:
    return str(value) if isinstance(value, int) else "'" + str(value).replace("'", "''") + "'"


@contextmanager
def generic_plan_made_now(sql: str, params: list[Any]) -> Iterator[Callable[[list[Any]], dict]]:
    """``sql`` prepared with its generic plan made at its first run, now, as a connection
    keeps the plan of a statement it prepared on its first runs (``prepare_threshold``);
    yields what explains a later run of that plan with other parameters."""
    numbered = sql.split("%s")
    text = numbered[0] + "".join(f"${i}{part}" for i, part in enumerate(numbered[1:], 1))
    with connection.cursor() as cursor:
        cursor.execute("SET LOCAL plan_cache_mode = force_generic_plan")
        cursor.execute(f"PREPARE planned_early AS {text}")
        try:
            cursor.execute(f"EXECUTE planned_early({', '.join(map(literal, params))})")
            yield lambda later: explain(
                f"EXECUTE planned_early({', '.join(map(literal, later))})", []
            )
        finally:
            cursor.execute("DEALLOCATE planned_early")


def small_as_in_a_fresh_database() -> None:
    """Earlier tests' rows, though rolled back, still take the tables' pages (which the
    planner reads as their size) until a vacuum; truncated in this test's transaction, the
    message table and those referring to it are empty, and none is analysed."""
    unanalysed(Message, Summary, AssemblyRecord)
    with connection.cursor() as cursor:
        cursor.execute(f"TRUNCATE {Message._meta.db_table} CASCADE")


def test_a_plan_made_while_the_table_was_small_still_looks_messages_up_by_key(acme):
    """The context read is a prepared statement, and PostgreSQL keeps the generic plan it made
    on the first runs until something invalidates it. Made while the message table was small
    and had no statistics (a fresh database), that plan hashed a sequential scan of every
    message for each step up the path; it must still probe the primary key once the table has
    grown."""
    small_as_in_a_fresh_database()
    (young,) = bulk_threads(acme.tenant, count=1, messages=20)
    sql = compaction_selectors.read_sql("postgresql")
    with generic_plan_made_now(sql, read_params(young, budget=70)) as explain_later:
        bulk_threads(acme.tenant, count=20, messages=200)
        (thread,) = bulk_threads(acme.tenant, count=1, messages=2_000)
        thread.refresh_from_db()
        plan = explain_later(read_params(thread, budget=70))

    walk = next(n for n in nodes(plan) if n["Node Type"] == "Recursive Union")
    assert walk["Actual Rows"] == 10
    assert {n["Node Type"] for n in message_scans(plan)} <= {"Index Scan", "Index Only Scan"}
    assert max(n["Actual Rows"] * n["Actual Loops"] for n in message_scans(plan)) <= 10
    # Not one message read and thrown away: the first row too is found by its key, not
    # through the thread's index (which reads every message of the thread).
    assert sum(n.get("Rows Removed by Filter", 0) for n in message_scans(plan)) == 0


def test_an_answers_model_input_is_checked_by_its_public_id_alone(acme):
    """Every answer names its model input, checked against the thread's records; a plan made
    while the table was small read them through the thread's index, more every turn."""
    small_as_in_a_fresh_database()
    thread = make_thread(acme.tenant, turns=1)
    record = context_assemble(thread=thread, actor=SYSTEM, system="Be brief.").record
    params = [record.public_id, thread.pk]
    with generic_plan_made_now(compaction_selectors.ASSEMBLY_EXISTS_SQL, params) as explain_later:
        plan = explain_later(params)

    scans = [n for n in nodes(plan) if n.get("Relation Name") == AssemblyRecord._meta.db_table]
    assert [n["Node Type"] for n in scans] == ["Index Scan"]
    assert scans[0]["Index Name"] != "assembly_thread_idx"
    assert scans[0]["Index Cond"].startswith("((public_id)::text =")


def ready_memos(every: int) -> list[Summary]:
    """A ready memo of each run of ``every`` messages of every bulk thread."""
    memos = []
    for thread in Thread.objects.exclude(active_leaf=None):
        chain = list(Message.objects.filter(thread=thread).exclude(role="root").order_by("depth"))
        memos += [
            Summary(
                thread=thread,
                first=chain[0],
                segment_first=chain[i * every],
                last=chain[i * every + every - 1],
                status=Summary.Status.READY,
                text="memo",
                fingerprint=str(i),
                covered_ids=[m.public_id for m in chain[i * every : (i + 1) * every]],
            )
            for i in range(len(chain) // every)
        ]
    return Summary.objects.bulk_create(memos, batch_size=2_000)


def test_the_memos_a_context_reads_are_found_by_their_last_message(unanalysed_deep_thread):
    """However many memos the table holds, and with no statistics at all (the tables were
    never analysed), the per-turn read probes the index on ``last_id`` once per stretch row
    and reads only the memos ending there."""
    thread = unanalysed_deep_thread
    memos = ready_memos(every=4)
    # Past the 70-token budget the walk goes on only to the end of the next ready memo.
    params = read_params(thread, budget=70)
    params[7] = 10_000  # lookahead

    plan = explain(compaction_selectors.read_sql("postgresql"), params)
    read = compaction_selectors.context_read(
        thread=thread,
        leaf_id=thread.active_leaf_id,
        budget=70,
        lookahead=10_000,
        per_message_overhead=4,
        max_rows=10_000,
    )

    assert len(memos) > 2_500
    summary_scans = [n for n in nodes(plan) if n.get("Relation Name") == Summary._meta.db_table]
    assert summary_scans
    assert {n["Node Type"] for n in summary_scans} == {"Index Scan"}
    assert {n["Index Name"] for n in summary_scans} == {"summary_live_last"}
    # Ten messages reach the budget; a memo ends on every fourth (the leaf's depth, 2,000, too).
    assert len(read.rows) == 10
    assert max(n["Actual Rows"] * n.get("Actual Loops", 1) for n in summary_scans) <= 10
    ending = [row.id for row in read.rows if row.depth % 4 == 0]
    assert [s.last_id for s in read.summaries] == ending
    assert len(ending) == 3
    # Messages: by primary key, and the root's children through the index on parent_id.
    assert "Seq Scan" not in {n["Node Type"] for n in message_scans(plan)}
    assert max(n["Actual Rows"] * n.get("Actual Loops", 1) for n in message_scans(plan)) <= 10


def message_scans_in_transaction() -> tuple[int, int]:
    """Sequential scans of the message table so far in this transaction, and rows they read."""
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT seq_scan, seq_tup_read FROM pg_stat_xact_user_tables WHERE relname = %s",
            [Message._meta.db_table],
        )
        return cursor.fetchone()


@pytest.mark.parametrize("named_parent", [False, True], ids=["active leaf", "named parent"])
def test_an_append_planned_while_the_table_was_small_finds_its_parent_by_key(acme, named_parent):
    """The append's statement is prepared once the connection has run it often enough, and its
    generic plan kept: made on a fresh database's empty message table, it must still find the
    parent by key once the table has grown, never by reading the table."""
    small_as_in_a_fresh_database()
    (thread,) = bulk_threads(acme.tenant, count=1, messages=2)
    with connection.cursor() as cursor:
        cursor.execute("SET LOCAL plan_cache_mode = force_generic_plan")

    def append(thread: Thread) -> Message:
        thread.refresh_from_db()
        parent = thread.active_leaf.public_id if named_parent else None
        return services.message_append(
            thread=thread, actor=SYSTEM, role="user", content="x", parent_public_id=parent
        )

    for _ in range(8):  # past psycopg's prepare_threshold: the plan is made now, on 10 rows
        append(thread)
    bulk_threads(acme.tenant, count=4, messages=1_000)
    scans_before = message_scans_in_transaction()
    message = append(thread)

    assert message_scans_in_transaction() == scans_before
    assert message.parent_id == Message.objects.get(pk=message.pk).parent_id
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT count(*) FROM pg_prepared_statements WHERE statement LIKE %s",
            ["%INSERT INTO " + connection.ops.quote_name(Message._meta.db_table) + "%"],
        )
        assert cursor.fetchone()[0] >= 1  # the append's statement is a prepared one


def test_a_recall_lookup_planned_while_the_table_was_small_reads_through_the_index(acme):
    """Recall's word lookup goes pipelined behind its setting, so the connection prepares it
    once it has run it often enough and PostgreSQL keeps the generic plan. Made on a fresh
    database's small message table, that plan must still find the words through the
    full-text index once the table has grown, never by reading the table."""
    small_as_in_a_fresh_database()
    (thread,) = bulk_threads(acme.tenant, count=1, messages=40)
    with connection.cursor() as cursor:
        cursor.execute("SET LOCAL plan_cache_mode = force_generic_plan")

    def lookup() -> list[search.TermHit]:
        return search.thread_term_hits(
            thread_id=thread.pk,
            terms=["message", "17"],
            below_id=thread.active_leaf_id,
            below_depth=40,
            per_term=5,
        )

    for _ in range(8):  # past psycopg's prepare_threshold: the plan is made now, on 40 rows
        lookup()
    bulk_threads(acme.tenant, count=4, messages=1_000)
    scans_before = message_scans_in_transaction()
    hits = lookup()

    assert message_scans_in_transaction() == scans_before
    assert len([hit for hit in hits if hit.term == "message"]) == 5
    ((seventeen,),) = [[hit for hit in hits if hit.term == "17"]]
    assert Message.objects.get(pk=seventeen.message_id).content == "message 17"
    assert Message.objects.get(pk=seventeen.message_id).thread_id == thread.pk
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT count(*) FROM pg_prepared_statements WHERE statement LIKE %s",
            ["%FROM unnest(%"],
        )
        assert cursor.fetchone()[0] >= 1  # the lookup is a prepared statement
