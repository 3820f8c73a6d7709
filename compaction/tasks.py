"""Celery tasks of compaction: thin wrappers that take ids and call ``compaction.services``.

``summary_write`` is enqueued after commit (``services.summary_enqueue``) and is safe to run
twice or concurrently (the service claims the row). ``acks_late`` + reject-on-worker-lost
(settings) redeliver it if its worker dies; its time limits stay below the broker's visibility
timeout. A retryable backend failure is retried with exponential backoff up to
``CONVMEM_MEMO_MAX_RETRIES`` times, then the summary is marked failed.
"""

import logging

from celery import Task, shared_task
from celery.exceptions import SoftTimeLimitExceeded
from django.conf import settings

from compaction import erasure, services
from compaction.backends import BackendError

logger = logging.getLogger(__name__)


def retry_delay(retry: int) -> float:
    """Seconds before retry number ``retry`` (1-based): exponential, capped."""
    base = settings.CONVMEM_MEMO_RETRY_BACKOFF
    return min(settings.CONVMEM_MEMO_RETRY_BACKOFF_MAX, base * 2 ** max(0, retry - 1))


@shared_task(
    bind=True,
    name=services.WRITE_TASK,
    acks_late=True,
    max_retries=None,
    soft_time_limit=settings.CONVMEM_MEMO_SOFT_TIME_LIMIT,
    time_limit=settings.CONVMEM_MEMO_TIME_LIMIT,
)
def summary_write(self: Task, summary_id: int) -> None:
    try:
        services.summary_write(summary_id=summary_id)
    except BackendError as error:
        if not error.retryable:
            logger.warning("memo %s failed permanently: %s", summary_id, error)
            return
        if self.request.retries >= settings.CONVMEM_MEMO_MAX_RETRIES:
            services.summary_fail(summary_id=summary_id, error=f"retries exhausted: {error}")
            return
        delay = retry_delay(self.request.retries + 1)
        logger.info(
            "memo %s: retryable backend error, retry in %.1fs: %s", summary_id, delay, error
        )
        raise self.retry(countdown=delay, exc=error) from error
    except SoftTimeLimitExceeded:
        # The claim's lease outlives this task; the dispatcher re-sends it once that expires.
        logger.warning("memo %s: soft time limit exceeded", summary_id)


@shared_task(name=services.SCORE_TASK, acks_late=True)
def summary_score(summary_id: int) -> None:
    services.summary_score(summary_id=summary_id)


@shared_task(name="compaction.dispatch_pending_memos", acks_late=True)
def dispatch_pending_memos() -> int:
    return services.summaries_dispatch_pending() + services.summaries_dispatch_unscored()


@shared_task(name="compaction.purge_assembly_snapshots")
def purge_assembly_snapshots() -> int:
    return erasure.assembly_snapshots_purge()
