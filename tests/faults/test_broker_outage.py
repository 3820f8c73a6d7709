"""Redis (the broker, and the rate limiter's cache) goes down while clients append and ask for
context: every request still succeeds at once, the memo work waits in the database as pending
summaries, and once Redis is back the dispatcher hands it over and every memo gets written.

Real parts: gunicorn serving the API, a Celery worker, and a redis-server of the test's own on
another port, stopped and started again by the test (its queue is lost with it, as in a real
outage without persistence). The dispatcher is the periodic task beat would run; the test runs
the same service in a fresh process configured like the web servers.
"""

import time
from collections.abc import Iterator

import pytest
import requests

from auditlog.models import AuditEvent
from compaction.models import Summary
from tests.compaction.helpers import grow, wait_for
from tests.conftest import TenantKit, make_thread
from tests.faults.processes import RedisServer, WebServer, figure
from tests.support.processes import DJANGO_SETUP, child_prints
from tests.support.worker import start_worker, worker_database_url
from threads.models import Message, Thread

pytestmark = [pytest.mark.faults, pytest.mark.worker, pytest.mark.django_db(transaction=True)]

THREADS = 4
BUDGET = {"window_tokens": 600, "reserve_tokens": 100}
# A hung request fails the test instead of hanging it.
CLIENT_TIMEOUT = 15


class Api:
    def __init__(self, base_url: str, kit: TenantKit) -> None:
        self.base = f"{base_url}/api/v1"
        self.session = requests.Session()
        self.session.headers["Authorization"] = f"Bearer {kit.key}"

    def append(self, thread: Thread, content: str, key: str) -> requests.Response:
        return self.session.post(
            f"{self.base}/threads/{thread.public_id}/messages",
            json={"role": "user", "content": content},
            headers={"Idempotency-Key": key},
            timeout=CLIENT_TIMEOUT,
        )

    def context(self, thread: Thread) -> requests.Response:
        return self.session.post(
            f"{self.base}/threads/{thread.public_id}/context", json=BUDGET, timeout=CLIENT_TIMEOUT
        )


@pytest.fixture
def broker() -> Iterator[RedisServer]:
    redis = RedisServer().start()
    yield redis
    redis.stop()


@pytest.fixture
def stack(broker: RedisServer, django_db_setup: None) -> Iterator[dict[str, str]]:
    """Web servers and a worker on the test database, both using the private Redis."""
    env = {
        "DATABASE_URL": worker_database_url(),
        "CONVMEM_KEYS_DATABASE_URL": worker_database_url("keys"),
        "REDIS_URL": broker.url,
        "CONN_MAX_AGE": "0",
        "CONVMEM_MEMO_REDISPATCH_SECONDS": "1",
    }
    with WebServer(env) as web, start_worker(env):
        yield {**env, "WEB_URL": web.url}


def dispatch(env: dict[str, str]) -> int:
    """Run the memo dispatcher once (what beat schedules), configured like the web servers."""
    code = (
        "from compaction.services import summaries_dispatch_pending\n"
        "print(summaries_dispatch_pending())"
    )
    return int(child_prints(DJANGO_SETUP + code, **env).split()[-1])


def scored_or_superseded(summary: Summary) -> bool:
    """Whether the scoring of a written memo is done: scored, or skipped as a newer ready
    memo extends it (``compaction.services.summary_score``)."""
    if summary.status != "ready" or "scorer" in summary.scores:
        return True
    return summary.extensions.filter(status="ready").exists()


def test_a_broker_outage_loses_nothing(acme, broker, stack):
    api = Api(stack["WEB_URL"], acme)
    threads = [make_thread(acme.tenant, user_ref=f"outage-{i}") for i in range(THREADS + 1)]
    for thread in threads:
        grow(thread, 30)
    before, threads = threads[0], threads[1:]
    # Before the outage: the pipeline works end to end.
    warmup = api.context(before)
    assert warmup.status_code == 200, warmup.text
    first_memo = Summary.objects.get(public_id=warmup.json()["pending_memo"]["summary_id"])
    wait_for(lambda: Summary.objects.get(pk=first_memo.pk).status == "ready")
    # ...down to its last task (the memo's scoring): the outage begins between requests. Redis
    # going away while the worker acknowledges a task is another fault: it can wedge kombu's
    # Redis consumer until the worker restarts (the kombu #582 family of bugs).
    # (A memo a newer one already extends is not scored: then the chain's last one is.)
    wait_for(lambda: all(map(scored_or_superseded, Summary.objects.filter(thread=before))))
    wait_for(lambda: broker.idle())

    broker.stop()
    appended, requested = {}, []
    outage_started = time.monotonic()
    for i, thread in enumerate(threads):
        r = api.append(thread, f"During the outage, turn {i}: order ORD-77{i}?", f"outage-{i}")
        assert r.status_code == 201, r.text
        replay = api.append(thread, f"During the outage, turn {i}: order ORD-77{i}?", f"outage-{i}")
        assert replay.status_code == 201, replay.text
        assert replay.headers["Idempotent-Replayed"] == "true"
        assert replay.json()["id"] == r.json()["id"]
        appended[r.json()["id"]] = thread
        context = api.context(thread)
        assert context.status_code == 200, context.text
        assert context.json()["memo_status"] == "pending"
        requested.append(context.json()["pending_memo"]["summary_id"])

    pending = Summary.objects.filter(public_id__in=requested)
    assert pending.count() == THREADS
    assert set(pending.values_list("status", flat=True)) == {"pending"}
    assert set(pending.values_list("attempts", flat=True)) == {0}

    outage_requests = time.monotonic() - outage_started
    broker.start()
    back = time.monotonic()

    def all_written() -> bool:
        dispatch(stack)
        return not pending.exclude(status="ready").exists()

    wait_for(all_written, timeout=60, interval=0.5)
    figure(
        "broker outage",
        requests_during_outage=3 * THREADS,
        mean_request_ms=round(1000 * outage_requests / (3 * THREADS)),
        memos_written_s_after_redis_back=round(time.monotonic() - back, 1),
    )

    for public_id, thread in appended.items():
        message = Message.objects.get(public_id=public_id)
        assert message.thread_id == thread.pk
        assert Message.objects.filter(thread=thread, content=message.content).count() == 1
        thread.refresh_from_db()
        assert thread.active_leaf_id == message.pk
    for summary in pending:
        written = AuditEvent.objects.filter(
            action="summary.written", object_ids=[summary.public_id]
        )
        assert written.count() == 1
    assert not Summary.objects.filter(status="failed").exists()
