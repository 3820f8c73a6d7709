"""A Celery worker SIGKILLed while it writes memos: a new worker finishes the job, and every
requested memo ends ``ready``, written exactly once.

Real parts: a worker process (prefork, acks_late, reject_on_worker_lost, Redis with a short
visibility timeout so unacknowledged deliveries come back quickly), the OpenAI-compatible
backend against a local chat server that is slow on purpose (so writes are in flight when the
worker dies), and the dispatcher (`dispatch_pending_memos`, which beat runs every minute; the
test calls the same service in a loop) that re-sends memos whose writer died holding its lease.
"""

import os
import signal
import time
from collections.abc import Iterator

import pytest

from auditlog.models import AuditEvent
from compaction import services as compaction_services
from compaction.models import Summary
from tests.compaction.helpers import grow, post_context, wait_for
from tests.conftest import make_thread
from tests.faults.processes import figure
from tests.support.chat_server import ChatServer
from tests.support.worker import queue_drained, start_worker

pytestmark = [
    pytest.mark.faults,
    pytest.mark.worker,
    pytest.mark.django_db(transaction=True),
]

THREADS = 4
BUDGET = {"window_tokens": 600, "reserve_tokens": 100}
# Short limits for the test worker: unacked deliveries come back after 5 s; a memo write's
# lease (time limit + margin) expires soon after the writer is killed.
WORKER_LIMITS = {
    "CELERY_VISIBILITY_TIMEOUT": "5",
    "CONVMEM_MEMO_SOFT_TIME_LIMIT": "3",
    "CONVMEM_MEMO_TIME_LIMIT": "4",
    "CONVMEM_MEMO_LEASE_MARGIN_SECONDS": "3",
    "CONVMEM_OPENAI_TIMEOUT": "60",
}


def worker_env(server: ChatServer) -> dict[str, str]:
    return {
        "CONVMEM_SUMMARIZER_BACKEND": "openai",
        "CONVMEM_OPENAI_BASE_URL": server.base_url,
        "CONVMEM_OPENAI_MODEL": "crash-test",
        **WORKER_LIMITS,
    }


@pytest.fixture
def slow_server() -> Iterator[ChatServer]:
    # Far longer than the test waits: a write that reaches the server stays in flight.
    with ChatServer(mode="timeout", delay=300) as server:
        yield server


def _pending_memos(acme) -> list[Summary]:
    memos = []
    for _ in range(THREADS):
        thread = make_thread(acme.tenant)
        grow(thread, 30)
        r = post_context(acme.client, thread, **BUDGET)
        assert r.status_code == 200, r.content
        assert r.data["memo_status"] == "pending"
        memos.append(Summary.objects.get(public_id=r.data["pending_memo"]["summary_id"]))
    return memos


def _all_ready(memos: list[Summary]) -> bool:
    # What beat does every minute; re-sends only memos whose task looks lost (lease expired).
    compaction_services.summaries_dispatch_pending()
    return not Summary.objects.filter(pk__in=[m.pk for m in memos]).exclude(status="ready")


def test_memos_survive_a_worker_killed_mid_write(acme, slow_server, settings):
    settings.CONVMEM_MEMO_REDISPATCH_SECONDS = 1

    with start_worker(worker_env(slow_server)) as first:
        memos = _pending_memos(acme)
        try:
            wait_for(lambda: len(slow_server.requests) >= 1, timeout=30)
        except AssertionError as error:
            log = first.output()[-4000:]
            raise AssertionError(f"no memo write reached the backend:\n{log}") from error
        in_flight = Summary.objects.filter(pk__in=[m.pk for m in memos], attempts__gt=0)
        assert in_flight.exists()
        os.killpg(first.process.pid, signal.SIGKILL)
        killed = time.monotonic()
        first.process.wait(timeout=10)

    killed_mid_write = set(in_flight.values_list("pk", flat=True))
    assert Summary.objects.filter(pk__in=killed_mid_write, status="pending").count() == len(
        killed_mid_write
    )
    slow_server.configure(mode="ok")

    with start_worker(worker_env(slow_server)):
        wait_for(lambda: _all_ready(memos), timeout=90, interval=1.0)
        # The killed worker's unacknowledged deliveries come back (visibility timeout) and run
        # as no-ops; wait for that so no stray message outlives the test.
        wait_for(queue_drained, timeout=30)
    figure(
        "worker crash",
        memos=THREADS,
        killed_mid_write=len(killed_mid_write),
        all_ready_s_after_kill=round(time.monotonic() - killed, 1),
    )

    for memo in memos:
        memo.refresh_from_db()
        assert memo.status == "ready"
        assert memo.model == "crash-test"
        assert memo.text
        written = AuditEvent.objects.filter(action="summary.written", object_ids=[memo.public_id])
        assert written.count() == 1
    assert Summary.objects.count() == THREADS
    # The writes the kill interrupted were attempted again, under a new claim.
    assert all(
        attempts >= 2
        for attempts in Summary.objects.filter(pk__in=killed_mid_write).values_list(
            "attempts", flat=True
        )
    )
