"""Celery tasks of respond: thin wrappers that take ids and call ``respond.services``.

``generate`` runs on its own queue (``generation``): an answer's first token waits on nothing
else. It is queued by the request after the run is committed (``respond_dispatch``) and is
safe to run twice (the service claims the attempt). Its time limits stay below the broker's
visibility timeout; a soft limit stops the model and stores the partial answer as interrupted.
"""

from celery import shared_task

from respond import services


@shared_task(name=services.GENERATE_TASK, acks_late=True, soft_time_limit=480, time_limit=540)
def generate(run_id: int, attempt: int) -> None:
    services.respond_generate(run_id=run_id, attempt=attempt)
