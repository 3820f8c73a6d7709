"""A context costs a fixed handful of statements, whatever the thread's length or its memos.

The budget (issue 24): one read of the path, the memos ending on it and the contents shown;
one write of the record with its audit event (and the texts a replay needs), BEGIN and COMMIT
counted. On PostgreSQL: BEGIN, the thread hold against erasure, the read, the write (one
statement of data-modifying CTEs), COMMIT — five statements (the hold and the read go in one
round trip, a pipeline). On SQLite (in-process: a statement is a call, not a round trip; no
row locks to hold): BEGIN IMMEDIATE, the read, one INSERT each for the record and its audit
event, COMMIT — five. A system prompt or retrieved
text not stored yet adds an INSERT on SQLite (on PostgreSQL it joins the write).

Two additions since: on SQLite, the thread is read again after BEGIN IMMEDIATE (a context that
waited behind an erasure must answer 404, issue 18; on PostgreSQL that is the hold itself);
and when the history does not fit, recall asks the full-text index for the current turn's
words (one statement), checks which of the messages it found are on the path, and reads them
(up to two more). Neither grows with the thread.
"""

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.utils import timezone
from rest_framework.exceptions import NotFound

from auditlog.events import Actor
from compaction.context import context_assemble
from compaction.models import AssemblyRecord
from tests.audit.conftest import ready_memo
from tests.compaction.helpers import grow
from tests.conftest import make_thread
from threads.models import Message, Thread

# Real transactions: inside a test transaction, atomic() would send SAVEPOINTs instead.
pytestmark = pytest.mark.django_db(transaction=True)

ACTOR = Actor.system("tests.context")
BUDGET = 5


def budget(*, recall: bool = False) -> int:
    """The statements a steady context may send here (see the module docstring)."""
    return BUDGET + (connection.vendor == "sqlite") + 3 * recall


def in_hand(thread: Thread) -> Thread:
    """The thread as the context endpoint reads it (leaf and profile joined in)."""
    return Thread.objects.select_related("active_leaf", "profile").get(pk=thread.pk)


def statements(thread: Thread, **request) -> list[str]:
    """What a steady turn sends: the system prompt was stored by the turn before, and so was
    the memo request, if the history called for one."""
    context_assemble(thread=in_hand(thread), actor=ACTOR, system="Be brief.", **request)
    thread = in_hand(thread)
    with CaptureQueriesContext(connection) as captured:
        context_assemble(thread=thread, actor=ACTOR, system="Be brief.", **request)
    return [query["sql"] for query in captured.captured_queries]


def test_a_context_is_one_read_and_one_write(acme):
    thread = make_thread(acme.tenant)
    grow(thread, 9)

    sent = statements(thread)

    assert len(sent) <= budget(), sent
    assert sum(sql.lstrip().upper().startswith("WITH RECURSIVE") for sql in sent) == 1


def test_a_context_with_a_memo_costs_the_same(acme):
    thread = make_thread(acme.tenant)
    grow(thread, 40)
    path = list(Message.objects.filter(thread=thread).exclude(role="root").order_by("depth"))
    ready_memo(thread, path[:30], "memo of the first thirty turns")

    sent = statements(thread, window_tokens=700, reserve_tokens=100)

    assert len(sent) <= budget(recall=True), sent


def test_the_count_does_not_grow_with_the_thread(acme):
    small, big = make_thread(acme.tenant), make_thread(acme.tenant)
    grow(small, 30)  # both overflow the window: both ask recall
    grow(big, 120)

    few = len(statements(small, window_tokens=700, reserve_tokens=100))
    many = len(statements(big, window_tokens=700, reserve_tokens=100))
    # Recall asks the index once and, when it finds older messages, reads them once: whether it
    # finds any depends on the words, not on the thread's length.
    assert abs(many - few) <= 1
    assert max(few, many) <= budget(recall=True)


def test_the_erasure_hold_goes_ahead_of_the_read_and_a_deleted_thread_is_not_found(acme):
    """On PostgreSQL the hold is sent in the read's round trip (a pipeline), still a statement
    of its own ahead of it; a thread deleted since it was read is a 404 with nothing written."""
    thread = make_thread(acme.tenant)
    grow(thread, 9)

    sent = statements(thread)
    read = next(
        i for i, sql in enumerate(sent) if sql.lstrip().upper().startswith("WITH RECURSIVE")
    )
    assert any("deleted_at" in sql for sql in sent[:read]), sent

    stale = in_hand(thread)
    Thread.objects.filter(pk=thread.pk).update(deleted_at=timezone.now())
    records = AssemblyRecord.objects.count()
    with pytest.raises(NotFound):
        context_assemble(thread=stale, actor=ACTOR, system="Be brief.")
    assert AssemblyRecord.objects.count() == records
