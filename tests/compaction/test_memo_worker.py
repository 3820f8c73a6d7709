"""Memos written by a real Celery worker process (embedded summarizer), never on the request."""

from datetime import timedelta

import pytest
from django.utils import timezone

from auditlog.events import Actor
from compaction import services as compaction_services
from compaction.models import Summary
from tests.compaction.helpers import grow, post_context, wait_for
from tests.conftest import make_thread
from tests.support.processes import run_child
from tests.support.worker import worker_database_url
from threads.models import Message

pytestmark = [pytest.mark.worker, pytest.mark.django_db(transaction=True)]

SMALL = {"window_tokens": 600, "reserve_tokens": 100}


def _status(summary: Summary) -> str:
    summary.refresh_from_db()
    return summary.status


def test_an_over_budget_thread_gets_its_memo_written_and_used(acme, celery_worker):
    thread = make_thread(acme.tenant)
    grow(thread, 30)

    first = post_context(acme.client, thread, **SMALL)

    assert first.status_code == 200
    assert first.data["memo_status"] == "pending"
    pending = Summary.objects.get(public_id=first.data["pending_memo"]["summary_id"])
    wait_for(lambda: _status(pending) == "ready")
    assert pending.backend == "embedded"
    assert "ORD-" in pending.text
    used = post_context(acme.client, thread, **SMALL)
    assert used.data["memo_status"] == "ready"
    assert used.data["sections"]["memo"]["summary_id"] == pending.public_id
    assert used.data["messages"][0]["content"].endswith(pending.text)


def test_an_invalidated_memo_is_not_used_and_is_rebuilt(acme, celery_worker):
    thread = make_thread(acme.tenant)
    grow(thread, 30)
    first = post_context(acme.client, thread, **SMALL)
    memo = Summary.objects.get(public_id=first.data["pending_memo"]["summary_id"])
    wait_for(lambda: _status(memo) == "ready")
    erased = Message.objects.get(public_id=memo.covered_ids[0])
    Message.objects.filter(pk=erased.pk).update(content="[erased]", erased_at=timezone.now())

    compaction_services.summaries_invalidate_for_messages(
        message_ids=[erased.pk], actor=Actor.system("tests-erasure")
    )

    assert _status(memo) == "stale"
    meanwhile = post_context(acme.client, thread, **SMALL)
    assert meanwhile.data["sections"]["memo"]["summary_id"] != memo.public_id
    rebuild = Summary.objects.get(
        thread=thread, first=memo.first, last=memo.last, status__in=["pending", "ready"]
    )
    wait_for(lambda: _status(rebuild) == "ready")
    assert "ORD-1000" not in rebuild.text
    used = post_context(acme.client, thread, **SMALL)
    assert used.data["sections"]["memo"]["summary_id"] == rebuild.public_id


_ASSEMBLE = """
import django
django.setup()
from auditlog.events import Actor
from compaction.context import context_assemble
from threads.models import Thread
thread = Thread.objects.select_related("profile").get(public_id={thread_id!r})
assembly = context_assemble(
    thread=thread, actor=Actor.system("broker-down"), window_tokens=600, reserve_tokens=100
)
print(assembly.memo_status, assembly.pending_memo["summary_id"])
"""


def test_a_broker_outage_does_not_fail_the_request_and_the_dispatcher_recovers(acme, celery_worker):
    thread = make_thread(acme.tenant)
    grow(thread, 30)
    env = {
        "DATABASE_URL": worker_database_url(),
        "CONVMEM_KEYS_DATABASE_URL": worker_database_url("keys"),
        "REDIS_URL": "redis://127.0.0.1:1/0",  # nothing listens there: the broker is down
    }

    result = run_child(_ASSEMBLE.format(thread_id=thread.public_id), env)

    assert result.returncode == 0, result.stderr
    status, summary_id = result.stdout.split()
    assert status == "pending"
    assert "could not enqueue memo task" in result.stderr
    pending = Summary.objects.get(public_id=summary_id)
    assert pending.status == "pending"
    assert pending.attempts == 0

    later = timezone.now() + timedelta(hours=1)
    assert compaction_services.summaries_dispatch_pending(now=later) == 1

    wait_for(lambda: _status(pending) == "ready")
    assert pending.attempts == 1
