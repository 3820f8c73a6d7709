"""The memo services called inline: invalidation, re-dispatch, backend failures."""

import re
import threading
from datetime import timedelta

import pytest
from django.db import connection
from django.utils import timezone

from auditlog.events import Actor
from auditlog.models import AuditEvent
from compaction import services as compaction_services
from compaction.backends import BackendError
from compaction.backends.openai_compat import OpenAICompatBackend
from compaction.context import context_assemble
from compaction.models import Summary
from tests.compaction.helpers import grow, post_context
from tests.conftest import SYSTEM, make_thread, path_ids
from tests.support.chat_server import ChatServer
from tests.support.pg import other_session
from threads import services as thread_services
from threads.models import Message, Thread

SMALL = {"window_tokens": 900, "reserve_tokens": 100}
ERASER = Actor.system("tests-erasure")


def _pending(thread) -> Summary:
    return Summary.objects.get(thread=thread, status="pending")


@pytest.fixture
def memo_thread(acme):
    """A thread over the small budget with one ready memo of its older range."""
    thread = make_thread(acme.tenant)
    grow(thread, 30)
    post_context(acme.client, thread, **SMALL)
    compaction_services.summary_write(summary_id=_pending(thread).pk)
    return thread


def test_invalidating_a_covered_message_makes_the_memo_stale_and_requests_a_rebuild(
    acme, memo_thread, django_capture_on_commit_callbacks
):
    memo = Summary.objects.get(thread=memo_thread, status="ready")
    # The newest covered turn whose order the memo kept (it keeps the user's questions first).
    covered = next(
        message
        for message in Message.objects.filter(public_id__in=memo.covered_ids).order_by("-depth")
        if re.search(r"ORD-\d+", message.content).group(0) in memo.text
    )
    fact = re.search(r"ORD-\d+", covered.content).group(0)
    Message.objects.filter(pk=covered.pk).update(content="[erased]", erased_at=timezone.now())

    with django_capture_on_commit_callbacks() as callbacks:
        invalidated = compaction_services.summaries_invalidate_for_messages(
            message_ids=[covered.pk], actor=ERASER
        )

    assert [s.pk for s in invalidated] == [memo.pk]
    memo.refresh_from_db()
    assert memo.status == "stale"
    rebuild = _pending(memo_thread)
    assert (rebuild.first_id, rebuild.last_id) == (memo.first_id, memo.last_id)
    assert rebuild.base_id is None
    assert rebuild.covered_ids == memo.covered_ids
    assert len(callbacks) == 1  # its task is sent after commit
    event = AuditEvent.objects.get(action="summary.invalidated")
    assert event.object_ids == [memo.public_id]
    assert event.actor_id == "tests-erasure"

    stale_not_used = post_context(acme.client, memo_thread, **SMALL)

    assert stale_not_used.data["sections"]["memo"]["status"] == "pending"
    assert stale_not_used.data["sections"]["memo"]["summary_id"] == rebuild.public_id
    assert all(memo.text not in m["content"] for m in stale_not_used.data["messages"])

    rebuilt = compaction_services.summary_write(summary_id=rebuild.pk)

    assert rebuilt.status == "ready"
    assert fact not in rebuilt.text
    assert rebuilt.fingerprint != memo.fingerprint
    used = post_context(acme.client, memo_thread, **SMALL)
    assert used.data["sections"]["memo"]["summary_id"] == rebuilt.public_id


def test_messages_outside_every_range_invalidate_nothing(acme, memo_thread):
    recent = Message.objects.get(pk=memo_thread.active_leaf_id)

    invalidated = compaction_services.summaries_invalidate_for_messages(
        message_ids=[recent.pk], actor=ERASER
    )

    assert invalidated == []
    assert Summary.objects.get(thread=memo_thread).status == "ready"


def test_a_pending_memo_covering_a_changed_message_is_dropped_by_its_writer(acme):
    thread = make_thread(acme.tenant)
    grow(thread, 30)
    post_context(acme.client, thread, **SMALL)
    pending = _pending(thread)
    first = Message.objects.get(pk=pending.first_id)
    # A writer claims it (and is slow) …
    attempt = compaction_services._claim(pending.pk)
    assert attempt == 1

    compaction_services.summaries_invalidate_for_messages(message_ids=[first.pk], actor=ERASER)

    pending.refresh_from_db()
    assert pending.status == "stale"
    # … and its result is refused: the row is no longer pending under its claim.
    written = Summary.objects.filter(pk=pending.pk, status="pending", attempts=attempt).update(
        status="ready"
    )
    assert written == 0
    assert compaction_services.summary_write(summary_id=pending.pk) is None
    assert Summary.objects.filter(thread=thread, status="pending").count() == 1  # the rebuild


def test_the_dispatcher_resends_only_lost_pending_memos(acme, settings):
    settings.CONVMEM_MEMO_REDISPATCH_SECONDS = 60
    thread = make_thread(acme.tenant)
    grow(thread, 30)
    post_context(acme.client, thread, **SMALL)
    lost = _pending(thread)
    now = timezone.now()

    assert compaction_services.summaries_dispatch_pending(now=now) == 0

    later = now + timedelta(seconds=61)
    assert compaction_services.summaries_dispatch_pending(now=later) == 1
    lost.refresh_from_db()
    assert lost.enqueued_at == later
    assert compaction_services.summaries_dispatch_pending(now=later) == 0
    # A live lease (a writer at work) is left alone even when the send is old.
    Summary.objects.filter(pk=lost.pk).update(leased_until=later + timedelta(hours=1))
    assert compaction_services.summaries_dispatch_pending(now=later + timedelta(minutes=5)) == 0


@pytest.fixture
def openai_settings(settings):
    settings.CONVMEM_OPENAI_MODEL = "test-memo-model"
    settings.CONVMEM_OPENAI_API_KEY = "sk-right"
    settings.CONVMEM_OPENAI_TIMEOUT = 5.0
    return settings


def test_a_permanent_backend_error_fails_the_memo(acme, openai_settings):
    thread = make_thread(acme.tenant)
    grow(thread, 30)
    post_context(acme.client, thread, **SMALL)
    pending = _pending(thread)

    with ChatServer(api_key="sk-other") as server:
        openai_settings.CONVMEM_OPENAI_BASE_URL = server.base_url
        with pytest.raises(BackendError) as raised:
            compaction_services.summary_write(summary_id=pending.pk, backend=OpenAICompatBackend())

    assert raised.value.retryable is False
    pending.refresh_from_db()
    assert pending.status == "failed"
    assert "401" in pending.error
    assert AuditEvent.objects.filter(action="summary.failed").count() == 1
    # The next contexts do not ask again at once: they say the memo failed, and until when
    # the curator backs off.
    for _ in range(3):
        again = post_context(acme.client, thread, **SMALL)
        assert again.data["memo_status"] == "failed"
        assert again.data["memo_error"]["summary_id"] == pending.public_id
        assert "401" in again.data["memo_error"]["error"]
        assert again.data["memo_error"]["failures_in_a_row"] == 1
    assert Summary.objects.filter(thread=thread).count() == 1
    # Once the backoff is over, it asks for a new memo.
    Summary.objects.filter(pk=pending.pk).update(retry_at=timezone.now())
    later = post_context(acme.client, thread, **SMALL)
    assert later.data["memo_status"] == "pending"
    assert later.data["sections"]["memo"]["summary_id"] != pending.public_id


def test_failures_in_a_row_back_off_longer_and_a_written_memo_ends_the_row(acme, settings):
    settings.CONVMEM_MEMO_FAILURE_BACKOFF = 60
    thread = make_thread(acme.tenant)
    grow(thread, 30)
    waits = []
    for _ in range(3):
        post_context(acme.client, thread, **SMALL)
        pending = _pending(thread)
        compaction_services.summary_fail(summary_id=pending.pk, error="model refused")
        pending.refresh_from_db()
        waits.append(round((pending.retry_at - pending.updated_at).total_seconds()))
        Summary.objects.filter(pk=pending.pk).update(retry_at=timezone.now())
    assert waits == [60, 120, 240]

    post_context(acme.client, thread, **SMALL)
    written = compaction_services.summary_write(summary_id=_pending(thread).pk)
    assert written is not None
    grow(thread, 10, start=30)
    post_context(acme.client, thread, **SMALL)
    compaction_services.summary_fail(summary_id=_pending(thread).pk, error="model refused")
    assert Summary.objects.filter(status="failed").order_by("-id").first().failure_streak == 1


def test_a_retryable_backend_error_keeps_the_memo_pending_for_a_retry(acme, openai_settings):
    thread = make_thread(acme.tenant)
    grow(thread, 30)
    post_context(acme.client, thread, **SMALL)
    pending = _pending(thread)

    with ChatServer(mode="fail_n_then_ok", fail_n=1, api_key="sk-right") as server:
        openai_settings.CONVMEM_OPENAI_BASE_URL = server.base_url
        with pytest.raises(BackendError) as raised:
            compaction_services.summary_write(summary_id=pending.pk, backend=OpenAICompatBackend())
        pending.refresh_from_db()
        assert raised.value.retryable is True
        assert pending.status == "pending"
        assert pending.leased_until is None
        assert "500" in pending.error

        written = compaction_services.summary_write(
            summary_id=pending.pk, backend=OpenAICompatBackend()
        )

    assert written.status == "ready"
    assert written.attempts == 2
    assert written.backend == "openai"
    assert written.model == "test-memo-model"
    assert written.error == ""
    assert written.token_count <= written.max_tokens


def test_values_a_remote_writer_invents_are_stored_as_unsupported(acme, openai_settings):
    thread = make_thread(acme.tenant)
    grow(thread, 30)
    post_context(acme.client, thread, **SMALL)
    pending = _pending(thread)
    reply = (
        '{"lines": [{"role": "user", "text": "order ORD-1002 for $2.50", "values": ["ORD-1002"]},'
        ' {"role": "user", "text": "refund RF-777 approved", "values": ["RF-777", "EUR 2.50"]}]}'
    )

    with ChatServer(api_key="sk-right") as server:
        server.configure(reply=reply)
        openai_settings.CONVMEM_OPENAI_BASE_URL = server.base_url
        written = compaction_services.summary_write(
            summary_id=pending.pk, backend=OpenAICompatBackend()
        )

    assert written.text.splitlines() == [
        "- order ORD-1002 for $2.50",
        "- refund RF-777 approved",
    ]
    assert written.scores["unsupported_values"] == ["RF-777", "EUR 2.50"]
    assert written.scores["unsupported_values_count"] == 2
    assert compaction_services.summary_score(summary_id=written.pk) is not None
    rescored = Summary.objects.get(pk=written.pk).scores
    assert rescored["scorer"]  # the range scores replaced the writer's own
    assert rescored["unsupported_values"] == ["RF-777", "EUR 2.50"]


def test_a_range_that_is_not_one_path_fails(acme):
    thread = make_thread(acme.tenant)
    grow(thread, 4)
    ids = path_ids(thread)
    first, last = (Message.objects.get(public_id=i) for i in (ids[3], ids[1]))
    summary = compaction_services.summary_request(
        thread=thread, actor=ERASER, first_id=first.pk, last_id=last.pk, max_tokens=100
    )

    assert compaction_services.summary_write(summary_id=summary.pk) is None

    summary.refresh_from_db()
    assert summary.status == "failed"


@pytest.mark.postgres
@pytest.mark.django_db(transaction=True)
def test_concurrent_context_requests_ask_for_one_memo(acme):
    thread = make_thread(acme.tenant)
    grow(thread, 30)
    barrier = threading.Barrier(4)
    answers: list[str | None] = []

    def assemble() -> None:
        try:
            barrier.wait()
            fresh = Thread.objects.select_related("profile").get(pk=thread.pk)
            assembly = context_assemble(thread=fresh, actor=ERASER, **SMALL)
            answers.append(assembly.pending_memo["summary_id"])
        finally:
            connection.close()

    workers = [threading.Thread(target=assemble) for _ in range(4)]
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join()

    pending = Summary.objects.get(thread=thread)
    assert answers == [pending.public_id] * 4


def test_a_memo_lets_go_of_what_a_message_after_its_range_corrects(acme):
    from threads import services as thread_services

    thread = make_thread(acme.tenant)
    system = Actor.system("tests")
    thread_services.message_append(
        thread=thread,
        actor=system,
        role="user",
        content="The locker number for the gym membership is L-0412, and my coach is Ingrid Berg.",
    )
    for index in range(29):  # chatter without values, so the memo has room for the first turn
        thread_services.message_append(
            thread=thread,
            actor=system,
            role="assistant" if index % 2 == 0 else "user",
            content="that sounds fine to me, thanks for walking me through it all " * 6,
        )
    post_context(acme.client, thread, **SMALL)
    pending = _pending(thread)
    covered = Message.objects.get(pk=pending.last_id).depth
    thread_services.message_append(
        thread=thread,
        actor=system,
        role="user",
        content="Correction: the locker number for the gym membership is L-0977.",
    )
    assert Message.objects.get(content__startswith="Correction").depth > covered

    written = compaction_services.summary_write(summary_id=pending.pk)

    assert written is not None
    assert "Ingrid Berg" in written.text
    assert "L-0412" not in written.text  # the newer message corrects it
    assert "L-0977" not in written.text  # outside the range: the next memo folds it in


def test_the_memo_writer_keeps_how_many_messages_came_while_it_wrote(acme):
    thread = make_thread(acme.tenant)
    grow(thread, 30)
    post_context(acme.client, thread, **SMALL)
    requested = _pending(thread)
    grow(thread, 5, start=30)  # the conversation goes on while the memo waits for a worker

    compaction_services.summary_write(summary_id=requested.pk)

    thread.refresh_from_db()
    assert thread.memo_lead_messages == 5
    for index in range(35, 80):  # on to the next memo, written as soon as it is asked for
        grow(thread, 1, start=index)
        post_context(acme.client, thread, **SMALL)
        if following := Summary.objects.filter(thread=thread, status="pending").first():
            break
    compaction_services.summary_write(summary_id=following.pk)

    thread.refresh_from_db()
    assert thread.memo_lead_messages == 0


def test_with_the_lead_turned_off_the_writer_keeps_none(acme, settings):
    settings.CONVMEM_MEMO_LEAD_MAX = 0
    thread = make_thread(acme.tenant)
    grow(thread, 30)
    post_context(acme.client, thread, **SMALL)
    requested = _pending(thread)
    grow(thread, 5, start=30)

    compaction_services.summary_write(summary_id=requested.pk)

    thread.refresh_from_db()
    assert thread.memo_lead_messages == 0


def test_a_thread_whose_memos_come_late_asks_for_the_next_one_sooner(acme):
    at_pace, fast = make_thread(acme.tenant), make_thread(acme.tenant)
    thread_services.thread_memo_lead_record(thread_id=fast.pk, messages=6)
    first_request = {}

    for index in range(40):
        for thread in (at_pace, fast):
            grow(thread, 1, start=index)
            status = post_context(acme.client, thread, **SMALL).data["memo_status"]
            if status == "pending":
                first_request.setdefault(thread.pk, index)

    assert first_request[fast.pk] < first_request[at_pace.pk]


@pytest.mark.postgres
@pytest.mark.django_db(transaction=True)
def test_the_memo_is_stored_for_contexts_before_its_writer_scores_it(acme, monkeypatch):
    """Scoring is a fifth of a write: another connection (a context) sees the memo ready
    while its writer is still scoring it, and the scores follow."""
    from compaction import evals

    thread = make_thread(acme.tenant)
    grow(thread, 30)
    post_context(acme.client, thread, **SMALL)
    requested = _pending(thread)
    seen_while_scoring: list[str] = []

    def scoring(**kwargs):
        with other_session(autocommit=True) as other:
            (status,) = other.execute(
                "SELECT status FROM compaction_summary WHERE id = %s", [requested.pk]
            ).fetchone()
        seen_while_scoring.append(status)
        return evals.score_memo(**kwargs)

    monkeypatch.setattr(compaction_services, "score_memo", scoring)
    compaction_services.summary_write(summary_id=requested.pk)

    assert seen_while_scoring == ["ready"]
    requested.refresh_from_db()
    assert 0 <= requested.scores["fact_recall"] <= 1
    assert requested.scores["unsupported_values_count"] == 0


def test_a_memo_is_due_its_scores_until_its_writer_stores_them(acme, settings):
    """The memo is stored before its writer scores it, marked as owing its scores; the
    writer's scores clear the mark, so the dispatcher has nothing to send for it."""
    settings.CONVMEM_MEMO_REDISPATCH_SECONDS = 60
    thread = make_thread(acme.tenant)
    grow(thread, 30)
    post_context(acme.client, thread, **SMALL)
    requested = _pending(thread)
    marks: list[object] = []
    store = compaction_services._writer_scores_store

    def observed(summary, *args):
        marks.append(Summary.objects.get(pk=summary.pk).scores_due)
        return store(summary, *args)

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(compaction_services, "_writer_scores_store", observed)
        compaction_services.summary_write(summary_id=requested.pk)

    requested.refresh_from_db()
    assert marks[0] is not None
    assert requested.scores_due is None
    assert 0 <= requested.scores["fact_recall"] <= 1
    later = timezone.now() + timedelta(minutes=5)
    assert compaction_services.summaries_dispatch_unscored(now=later) == 0


@pytest.mark.parametrize("turns_after", [0, 2], ids=["read-to-its-end", "read-past-its-end"])
def test_a_memo_does_not_apply_again_a_correction_its_base_read_ahead(acme, turns_after):
    """The first memo reads ahead over the user's correction and lets the stale address go;
    the memo that extends it over that correction folds it in without applying it again, which
    would take the other address of the same slot in place of the line already gone. The first
    memo may have read past the end of the second's range (``turns_after``)."""
    thread = make_thread(acme.tenant)
    said = [
        ("user", "The endpoint address for the failover drill is 10.177.130.206:6379."),
        ("assistant", "Noted."),
        ("user", "The endpoint address for the restore test is 10.40.1.7:9092."),
        ("assistant", "Noted."),
        (
            "user",
            "Sorry, the endpoint address for the failover drill is actually 10.168.220.159:6379.",
        ),
        ("assistant", "Updated."),
        *[("user", f"Small talk {index}.") for index in range(turns_after)],
    ]
    messages = [
        thread_services.message_append(thread=thread, actor=SYSTEM, role=role, content=content)
        for role, content in said
    ]
    first = compaction_services.summary_request(
        thread=thread,
        actor=SYSTEM,
        first_id=messages[0].pk,
        last_id=messages[3].pk,
        covered_ids=[m.public_id for m in messages[:4]],
        max_tokens=512,
    )
    first = compaction_services.summary_write(summary_id=first.pk)
    assert "10.177.130.206:6379" not in first.text  # read ahead: the correction is applied
    assert "10.40.1.7:9092" in first.text
    assert first.read_ahead_to_id == messages[-1].pk

    extension = compaction_services.summary_request(
        thread=thread,
        actor=SYSTEM,
        first_id=messages[0].pk,
        segment_first_id=messages[4].pk,
        last_id=messages[5].pk,
        base_id=first.pk,
        chain_depth=1,
        covered_ids=[m.public_id for m in messages[4:]],
        max_tokens=512,
    )
    extension = compaction_services.summary_write(summary_id=extension.pk)

    assert "10.168.220.159:6379" in extension.text
    assert "10.40.1.7:9092" in extension.text
    assert "10.177.130.206:6379" not in extension.text
    later = messages[6:]
    assert extension.read_ahead_to_id == (later[-1].pk if later else None)
