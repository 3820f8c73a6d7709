"""Celery tasks of the audit app: thin wrappers that take ids and call a service."""

from celery import shared_task

from audit import deletion, expiry, retention


@shared_task(name="audit.apply_retention")
def apply_retention() -> int:
    return sum(run.messages for run in retention.retention_apply_all())


@shared_task(name="audit.execute_deletion_request")
def execute_deletion_request(request_id: int) -> None:
    """Erase what an approved request covers; re-queues itself until done (resumable)."""
    if not deletion.deletion_request_perform(request_id=request_id):
        execute_deletion_request.delay(request_id)


@shared_task(name="audit.expire_threads")
def expire_threads() -> int:
    """Erase one batch of expired threads; queues the next batch while batches come back full."""
    run = expiry.thread_expiry_apply()
    if run.more:
        expire_threads.delay()
    return len(run.erased)
