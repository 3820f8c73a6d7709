"""Per-thread expiry: the beat task erases and deletes expired threads through the deletion
path (with its proof), in batches, idempotently, never under legal hold, skipping locked rows."""

import threading
from datetime import datetime, timedelta

import pytest
from django.db import connections
from django.utils import timezone

from audit import tasks
from audit.expiry import EXPIRY_REASON, thread_expiry_apply
from audit.models import DeletionRequest
from audit.services import legal_hold_place, legal_hold_release
from auditlog.models import AuditEvent
from tests.audit.conftest import OPERATOR, branched_thread, visible
from tests.support.pg import other_session
from threads.erasure import ERASED
from threads.models import Thread

pytestmark = pytest.mark.django_db


def expire(thread: Thread, *, ago: timedelta = timedelta(minutes=1)) -> datetime:
    """Move the thread's expiry into the past (the API only takes future ones)."""
    when = timezone.now() - ago
    Thread.objects.filter(pk=thread.pk).update(expires_at=when)
    thread.refresh_from_db()
    return when


def erased_and_deleted(thread: Thread) -> bool:
    thread.refresh_from_db()
    return thread.deleted_at is not None and all(m.content == ERASED for m in visible(thread))


def test_the_beat_task_erases_an_expired_thread_and_the_api_forgets_it(acme):
    thread = branched_thread(acme.tenant, text="CANARY-EXP")
    expire(thread)

    erased = tasks.expire_threads()

    assert erased == 1
    assert erased_and_deleted(thread)
    assert thread.title == ""
    assert thread.metadata == {}
    assert thread.erased_at is not None
    assert acme.client.get(f"/api/v1/threads/{thread.public_id}").status_code == 404
    listed = acme.client.get("/api/v1/threads").data["results"]
    assert thread.public_id not in [t["id"] for t in listed]


def test_the_proof_names_the_expiry(acme):
    thread = branched_thread(acme.tenant)
    when = expire(thread, ago=timedelta(hours=2))

    run = thread_expiry_apply()

    request = DeletionRequest.objects.get(thread=thread)
    assert run.requests == [request.public_id]
    assert request.status == DeletionRequest.Status.EXECUTED
    assert request.filed_by == "system:audit.expire_threads"
    proof = request.proof
    assert proof["expiry"] == {"reason": EXPIRY_REASON, "expires_at": when.isoformat()}
    assert proof["counts"]["threads"] == 1
    assert proof["counts"]["messages"] == len(visible(thread)) == 6
    assert proof["erased"]["threads"] == [thread.public_id]
    assert sorted(proof["erased"]["messages"]) == sorted(m.public_id for m in visible(thread))
    assert proof["executed_at"] is not None
    expired = AuditEvent.objects.get(action="thread.expired")
    assert expired.thread_public_id == thread.public_id
    assert expired.object_ids == [thread.public_id, request.public_id]
    assert expired.details == {"expires_at": when.isoformat()}
    about_request = [
        e.action
        for e in AuditEvent.objects.filter(action__startswith="deletion_request.").order_by("pk")
        if request.public_id in e.object_ids
    ]
    assert about_request == [
        "deletion_request.filed",
        "deletion_request.thread_erased",
        "deletion_request.executed",
    ]
    assert AuditEvent.objects.filter(action="thread.deleted").count() == 1


def test_threads_not_yet_expired_or_without_expiry_are_kept(acme):
    later = branched_thread(acme.tenant, user_ref="later")
    Thread.objects.filter(pk=later.pk).update(expires_at=timezone.now() + timedelta(minutes=5))
    never = branched_thread(acme.tenant, user_ref="never")

    run = thread_expiry_apply()

    assert run.erased == []
    assert run.held == []
    for thread in (later, never):
        thread.refresh_from_db()
        assert thread.deleted_at is None
        assert all(m.content != ERASED for m in visible(thread))
    assert not DeletionRequest.objects.exists()
    assert not AuditEvent.objects.filter(action="thread_expiry.run").exists()


def test_a_second_run_finds_nothing_and_writes_nothing(acme):
    thread = branched_thread(acme.tenant)
    expire(thread)
    thread_expiry_apply()
    events = AuditEvent.objects.count()

    again = thread_expiry_apply()

    assert again.erased == []
    assert not again.more
    assert AuditEvent.objects.count() == events
    assert DeletionRequest.objects.filter(thread=thread).count() == 1


def test_legal_holds_keep_expired_threads_and_the_run_says_so(acme, globex):
    held_thread = branched_thread(acme.tenant, user_ref="free")
    held_user = branched_thread(acme.tenant, user_ref="held")
    other_tenant = branched_thread(globex.tenant, user_ref="held")
    for thread in (held_thread, held_user, other_tenant):
        expire(thread)
    legal_hold_place(tenant=acme.tenant, actor=OPERATOR, reason="litigation", user_ref="held")
    hold = legal_hold_place(tenant=acme.tenant, actor=OPERATOR, reason="audit", thread=held_thread)

    run = thread_expiry_apply()

    # A hold on acme's user "held" does not cover globex's user of the same name.
    assert run.erased == [other_tenant.public_id]
    assert sorted(run.held) == sorted([held_thread.public_id, held_user.public_id])
    for thread in (held_thread, held_user):
        thread.refresh_from_db()
        assert thread.deleted_at is None
        assert thread.expires_at is not None
        assert all(m.content != ERASED for m in visible(thread))
    recorded = AuditEvent.objects.get(action="thread_expiry.run")
    assert sorted(recorded.details["held_threads"]) == sorted(run.held)
    assert recorded.details["counts"] == {"threads_erased": 1, "held_threads_skipped": 2}

    legal_hold_release(hold=hold, actor=OPERATOR)
    after_release = thread_expiry_apply()

    assert after_release.erased == [held_thread.public_id]
    assert after_release.held == [held_user.public_id]
    assert erased_and_deleted(held_thread)


def test_runs_go_in_batches_soonest_expiry_first(acme):
    threads = [branched_thread(acme.tenant, user_ref=f"u{i}") for i in range(3)]
    for hours, thread in zip((1, 3, 2), threads, strict=True):
        expire(thread, ago=timedelta(hours=hours))

    first = thread_expiry_apply(limit=2)
    second = thread_expiry_apply(limit=2)

    assert first.erased == [threads[1].public_id, threads[2].public_id]
    assert first.more
    assert second.erased == [threads[0].public_id]
    assert not second.more


@pytest.mark.postgres
@pytest.mark.django_db(transaction=True)
def test_a_thread_another_transaction_holds_is_skipped_not_waited_for(acme):
    busy = branched_thread(acme.tenant, user_ref="busy")
    free = branched_thread(acme.tenant, user_ref="free")
    expire(busy)
    expire(free)

    with other_session() as session:
        # What a concurrent expiry run (or an append) holds while it works on the thread.
        session.execute("SELECT id FROM threads_thread WHERE id = %s FOR UPDATE", [busy.pk])
        run = thread_expiry_apply()
        session.rollback()

    assert run.erased == [free.public_id]
    busy.refresh_from_db()
    assert busy.deleted_at is None
    assert thread_expiry_apply().erased == [busy.public_id]
    assert erased_and_deleted(busy)


def _run_in_own_connection(results: list, errors: list) -> None:
    try:
        results.append(thread_expiry_apply())
    except BaseException as error:  # reported by the test, not lost in the thread
        errors.append(error)
    finally:
        connections.close_all()


@pytest.mark.postgres
@pytest.mark.django_db(transaction=True)
def test_two_runs_at_once_erase_each_thread_once(acme):
    threads = [branched_thread(acme.tenant, user_ref=f"u{i}") for i in range(8)]
    for thread in threads:
        expire(thread)
    results: list = []
    errors: list = []

    runs = [
        threading.Thread(target=_run_in_own_connection, args=(results, errors)) for _ in range(2)
    ]
    for run in runs:
        run.start()
    for run in runs:
        run.join(60)

    assert not errors, errors
    erased = [public_id for result in results for public_id in result.erased]
    assert sorted(erased) == sorted(t.public_id for t in threads)
    assert DeletionRequest.objects.count() == len(threads)
    assert AuditEvent.objects.filter(action="thread.expired").count() == len(threads)
    assert all(erased_and_deleted(thread) for thread in threads)
