"""What /respond sends to the database before its ``turn`` event (the model is asked right
after it): the user turn, its input and the run in one transaction, nothing read twice."""

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from respond.models import RespondRun
from tests.conftest import make_thread
from tests.respond.conftest import sse_events

# Real transactions: inside a test transaction, atomic() would send SAVEPOINTs instead.
pytestmark = pytest.mark.django_db(transaction=True)

# Authentication, the thread, the key's claim (on PostgreSQL its transaction's setting and the
# insert, two statements in one round trip); then BEGIN, the append (on PostgreSQL the thread
# lock and the append's statement, two statements in one round trip), the busy check and the
# input's read (one round trip), the record with its audit event and the run (one round trip),
# the key's response, COMMIT. SQLite reads the appended node back and writes the record and its
# event as two statements.
BUDGET = {"postgresql": 13, "sqlite": 13}


def statements_before_the_turn(kit, thread, key: str) -> list[str]:
    with CaptureQueriesContext(connection) as captured:
        response = kit.client.post(
            f"/api/v1/threads/{thread.public_id}/respond",
            {"content": "Where is my order?", "stream": True},
            format="json",
            HTTP_IDEMPOTENCY_KEY=key,
        )
        chunks = iter(response.streaming_content)
        ((name, _),) = sse_events(next(chunks))
        sent = [query["sql"] for query in captured.captured_queries]
    assert name == "turn"
    assert [name for name, _ in sse_events(b"".join(chunks))][-1] == "done"
    return sent


def test_the_turn_is_stored_in_a_handful_of_statements(acme, chat):
    thread = make_thread(acme.tenant, turns=6)

    sent = statements_before_the_turn(acme, thread, "k1")

    assert len(sent) <= BUDGET[connection.vendor], sent
    # The key's claim commits on its own as one statement, before the turn's transaction.
    claim = next(i for i, sql in enumerate(sent) if "INSERT INTO" in sql)
    assert "idempotencyrecord" in sent[claim]
    assert not any(sql.startswith("BEGIN") for sql in sent[:claim])
    # The append's thread lock already keeps an erasure out, and the tenant is in hand: the
    # input is assembled without a savepoint, a second lock or a re-read.
    assert not any("SAVEPOINT" in sql for sql in sent), sent
    assert not any("FOR KEY SHARE" in sql for sql in sent), sent
    assert not any('FROM "convmem_tenant"' in sql for sql in sent), sent


def test_the_busy_check_goes_ahead_of_the_read_and_the_run_after_its_record(acme, chat):
    """The running-run check is sent just ahead of the input's read, the run's insert just
    after its record's (on PostgreSQL each pair in one round trip, in a pipeline): the run
    names the record by its public id, whose key is not known until that insert."""
    thread = make_thread(acme.tenant, turns=6)

    sent = statements_before_the_turn(acme, thread, "k1")

    read = next(i for i, sql in enumerate(sent) if sql.lstrip().startswith("WITH RECURSIVE"))
    assert '"respond_respondrun"' in sent[read - 1], sent
    assert sent[read - 1].lstrip().startswith("SELECT 1"), sent
    record = next(i for i, sql in enumerate(sent) if '"compaction_assemblyrecord"' in sql)
    if connection.vendor == "sqlite":  # the record's audit event is a statement of its own
        assert sent[record + 1].startswith('INSERT INTO "auditlog_auditevent"'), sent
        record += 1
    assert sent[record + 1].startswith('INSERT INTO "respond_respondrun"'), sent
    run = RespondRun.objects.select_related("assembly", "user_message").get(idempotency__key="k1")
    assert run.assembly.leaf_id == run.user_message.pk
    assert run.prefix_messages == run.assembly.plan["prefix"]["messages"]
