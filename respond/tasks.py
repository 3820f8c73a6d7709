"""Celery tasks of respond: thin wrappers that take ids and call ``respond.services``.

``generate`` runs on its own queue (``generation``): an answer's first token waits on nothing
else. It is queued by the request inside the transaction that stores the run (so a broker
that refuses it writes nothing), or after a takeover (``respond_dispatch``), and is safe to
run twice (the service claims the attempt). Its time limits stay below the broker's
visibility timeout; a soft limit stops the model and stores the partial answer as interrupted.

``take_over_orphaned_runs`` (beat, every ``CONVMEM_RESPOND_TAKEOVER_SECONDS``) ends or requeues
the runs whose generating worker died. It runs on the upkeep queue (``bulk``), not on
``generation``: there it would wait behind long answers, and never run once every generation
worker is dead or busy.
"""

from typing import Any

from celery import Task, shared_task

from respond import services

# The task is queued inside the request's transaction: it may arrive before the commit. It
# looks again every 50 ms for up to 10 s (a transaction that rolled back leaves no run).
_NOT_VISIBLE_RETRIES = 200


@shared_task(
    bind=True,
    name=services.GENERATE_TASK,
    acks_late=True,
    soft_time_limit=480,
    time_limit=540,
    max_retries=_NOT_VISIBLE_RETRIES,
)
def generate(
    self: Task,
    run_id: int,
    attempt: int,
    items: list[dict[str, Any]] | None = None,
    thread_id: int | None = None,
    # Sent by releases before 6 December 2026, whose tasks may still be queued; the claim now
    # reads the run, its public id with it.
    run_public_id: str | None = None,
) -> None:
    outcome = services.respond_generate(
        run_id=run_id, attempt=attempt, items=items, thread_id=thread_id
    )
    if outcome == services.RUN_NOT_VISIBLE and self.request.retries < _NOT_VISIBLE_RETRIES:
        raise self.retry(countdown=0.05)


@shared_task(name="respond.take_over_orphaned_runs")
def take_over_orphaned_runs() -> int:
    return services.orphans_take_over()
