"""The summarizer backend (an OpenAI-compatible server) hangs, then fails, then recovers:
context keeps being served with the memo pending, the memo tasks retry with exponential
backoff, and after recovery every memo is written exactly once.

Real parts: a Celery worker with the OpenAI-compatible backend, pointed at the local chat server
of tests/support (scripted to time out, then to answer 500s, then to answer).
"""

import re
import time
from collections.abc import Iterator

import pytest

from auditlog.models import AuditEvent
from compaction.models import Summary
from compaction.tasks import retry_delay
from tests.compaction.helpers import grow, post_context, wait_for
from tests.conftest import make_thread
from tests.faults.processes import figure
from tests.support.chat_server import ChatServer
from tests.support.worker import CeleryWorker, start_worker

pytestmark = [pytest.mark.faults, pytest.mark.worker, pytest.mark.django_db(transaction=True)]

THREADS = 3
BUDGET = {"window_tokens": 600, "reserve_tokens": 100}
BACKOFF = {"CONVMEM_MEMO_RETRY_BACKOFF": "0.25", "CONVMEM_MEMO_RETRY_BACKOFF_MAX": "1"}
RETRY_LOG = re.compile(r"memo (\d+): retryable backend error, retry in ([\d.]+)s")


@pytest.fixture
def server() -> Iterator[ChatServer]:
    # Hangs three times longer than the backend waits.
    with ChatServer(mode="timeout", delay=3.0) as server:
        yield server


@pytest.fixture
def worker(server: ChatServer, django_db_setup: None) -> Iterator[CeleryWorker]:
    env = {
        "CONVMEM_SUMMARIZER_BACKEND": "openai",
        "CONVMEM_OPENAI_BASE_URL": server.base_url,
        "CONVMEM_OPENAI_MODEL": "outage-test",
        "CONVMEM_OPENAI_TIMEOUT": "1",
        "CONVMEM_MEMO_MAX_RETRIES": "50",
        **BACKOFF,
    }
    with start_worker(env) as worker:
        yield worker


def _attempts(memos: list[Summary]) -> list[int]:
    return list(
        Summary.objects.filter(pk__in=[m.pk for m in memos])
        .order_by("pk")
        .values_list("attempts", flat=True)
    )


def test_memos_are_written_after_the_backend_recovers(acme, server, worker, settings):
    threads = [make_thread(acme.tenant, user_ref=f"backend-{i}") for i in range(THREADS)]
    memos = []
    for thread in threads:
        grow(thread, 30)
        r = post_context(acme.client, thread, **BUDGET)
        assert r.data["memo_status"] == "pending"
        memos.append(Summary.objects.get(public_id=r.data["pending_memo"]["summary_id"]))

    # The backend times out: each memo is tried, and tried again.
    wait_for(lambda: min(_attempts(memos)) >= 2, timeout=60)
    server.configure(mode="error500")
    wait_for(lambda: min(_attempts(memos)) >= 4, timeout=60)

    # Meanwhile context is served at once, from the originals, naming the same pending memo.
    for thread, memo in zip(threads, memos, strict=True):
        r = post_context(acme.client, thread, **BUDGET)
        assert r.status_code == 200
        assert r.data["memo_status"] == "pending"
        assert r.data["pending_memo"]["summary_id"] == memo.public_id
        assert r.data["messages"]
    for memo in memos:
        memo.refresh_from_db()
        assert memo.status == "pending"
        assert memo.error

    server.configure(mode="ok")
    recovered = time.monotonic()
    wait_for(
        lambda: not Summary.objects.filter(pk__in=[m.pk for m in memos]).exclude(status="ready"),
        timeout=60,
    )
    figure(
        "backend outage",
        memos=THREADS,
        attempts=_attempts(memos),
        all_ready_s_after_recovery=round(time.monotonic() - recovered, 1),
    )

    for thread, memo in zip(threads, memos, strict=True):
        memo.refresh_from_db()
        assert memo.error == ""
        assert memo.model == "outage-test"
        written = AuditEvent.objects.filter(action="summary.written", object_ids=[memo.public_id])
        assert written.count() == 1
        assert Summary.objects.filter(thread=thread).count() == 1
        after = post_context(acme.client, thread, **BUDGET)
        assert after.data["memo_status"] == "ready"
        assert after.data["sections"]["memo"]["summary_id"] == memo.public_id
    # Every retry waited on the exponential schedule: 0.25 s, 0.5 s, then capped at 1 s.
    settings.CONVMEM_MEMO_RETRY_BACKOFF = float(BACKOFF["CONVMEM_MEMO_RETRY_BACKOFF"])
    settings.CONVMEM_MEMO_RETRY_BACKOFF_MAX = float(BACKOFF["CONVMEM_MEMO_RETRY_BACKOFF_MAX"])
    delays: dict[int, list[float]] = {}
    for summary_id, delay in RETRY_LOG.findall(worker.output()):
        delays.setdefault(int(summary_id), []).append(float(delay))
    for memo in memos:
        logged = delays[memo.pk]
        assert len(logged) >= 3
        assert logged == [round(retry_delay(n), 1) for n in range(1, len(logged) + 1)]
