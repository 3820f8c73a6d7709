"""An append costs a fixed handful of statements, BEGIN and COMMIT counted.

PostgreSQL: two statements in one round trip (lock the thread row; then read the parent,
insert the node, move the leaf, write the audit event), one transaction on their own; for an
answer naming its assembly, the second checks that the assembly is the thread's. SQLite: an
insert into the append view (its trigger reads the parent, inserts, moves the leaf and writes
the audit event; ``threads.append_view``), then the node read back; an assembly is checked
before, in process.
"""

import pytest
from django.db import IntegrityError, connection
from django.test.utils import CaptureQueriesContext

from auditlog.events import Actor
from auditlog.models import AuditEvent
from compaction.models import AssemblyRecord
from convmem.errors import InvalidRequest
from tests.conftest import SYSTEM, make_thread
from threads import services
from threads.models import Message, Thread

# Real transactions: inside a test transaction, atomic() would send SAVEPOINTs instead.
pytestmark = pytest.mark.django_db(transaction=True)

BUDGET = {"postgresql": 3, "sqlite": 3}


def appended(thread: Thread, **fields) -> tuple[Message, list[str]]:
    thread = Thread.objects.select_related("profile").get(pk=thread.pk)
    with CaptureQueriesContext(connection) as captured:
        message = services.message_append(thread=thread, actor=SYSTEM, **fields)
    return message, [query["sql"] for query in captured.captured_queries]


def test_an_append_is_a_handful_of_statements(acme):
    thread = make_thread(acme.tenant, turns=4)
    leaf = thread.active_leaf

    message, sent = appended(thread, role="user", content="Where is my order?")

    assert len(sent) <= BUDGET[connection.vendor], sent
    if connection.vendor == "sqlite":
        assert "INSERT INTO threads_append" in sent[0]
    thread.refresh_from_db()
    assert thread.active_leaf_id == message.pk
    stored = Message.objects.get(pk=message.pk)
    assert (stored.parent_id, stored.depth, stored.public_id) == (
        leaf.pk,
        leaf.depth + 1,
        message.public_id,
    )
    assert message.parent_public_id == leaf.public_id
    event = AuditEvent.objects.filter(action="message.appended").latest("id")
    assert event.object_ids == [message.public_id]
    # The role only: the parent and the token count are the message row's.
    assert event.details == {"role": "user"}


def test_the_first_message_hangs_under_the_hidden_root(acme):
    thread = make_thread(acme.tenant)

    message, sent = appended(thread, role="user", content="Hello")

    assert len(sent) <= BUDGET[connection.vendor], sent
    assert message.parent_public_id is None
    assert Message.objects.get(pk=message.pk).parent_id == thread.root_id
    event = AuditEvent.objects.filter(action="message.appended").latest("id")
    assert event.object_ids == [message.public_id]


def _record_of(thread: Thread) -> AssemblyRecord:
    return AssemblyRecord.objects.create(
        tenant=thread.tenant, thread=thread, leaf=thread.active_leaf, assembler_version="v1"
    )


def test_an_answer_naming_its_assembly_costs_what_any_append_costs(acme):
    thread = make_thread(acme.tenant, turns=3)
    record = _record_of(thread)
    _, plain = appended(thread, role="user", content="And the refund?")

    message, sent = appended(
        thread, role="assistant", content="On its way.", assembly_public_id=record.public_id
    )

    # SQLite checks the assembly with a statement of its own: a function call, no round trip.
    assert len(sent) == len(plain) + (connection.vendor == "sqlite"), sent
    assert Message.objects.get(pk=message.pk).assembly_public_id == record.public_id


def test_an_answer_naming_another_threads_assembly_writes_nothing(acme):
    thread, other = make_thread(acme.tenant, turns=3), make_thread(acme.tenant, turns=1)
    foreign = _record_of(other)
    leaf, count = thread.active_leaf_id, Message.objects.count()
    events = AuditEvent.objects.count()

    with pytest.raises(InvalidRequest) as refused:
        appended(thread, role="assistant", content="x", assembly_public_id=foreign.public_id)

    assert refused.value.get_codes() == "unknown_assembly"
    assert (Message.objects.count(), AuditEvent.objects.count()) == (count, events)
    thread.refresh_from_db()
    assert thread.active_leaf_id == leaf


def test_the_count_does_not_grow_with_the_thread(acme):
    small, big = make_thread(acme.tenant, turns=2), make_thread(acme.tenant, turns=60)

    assert len(appended(small, role="user", content="x")[1]) == len(
        appended(big, role="user", content="x")[1]
    )


def test_the_append_and_its_audit_event_are_one_write(acme):
    """An audit event the database refuses (no actor) takes the node and the leaf move with
    it, on the one-statement path of either database."""
    thread = make_thread(acme.tenant, turns=2)
    leaf, count = thread.active_leaf_id, Message.objects.count()

    with pytest.raises(IntegrityError):
        services.message_append(thread=thread, actor=Actor.system(""), role="user", content="x")

    assert Message.objects.count() == count
    thread.refresh_from_db()
    assert thread.active_leaf_id == leaf
