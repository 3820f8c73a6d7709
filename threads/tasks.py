"""Periodic upkeep for threads."""

from celery import shared_task

from threads.idempotency import idempotency_records_purge


@shared_task(name="threads.purge_idempotency_records")
def purge_idempotency_records() -> int:
    return idempotency_records_purge()
