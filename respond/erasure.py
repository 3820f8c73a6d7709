"""Erasing respond's copies of a thread's content: the Redis streams of its runs
(``respond.events``), which hold each answer's text for ``CONVMEM_RUN_EVENTS_TTL`` seconds
after the run's last event.

Called by ``audit.erasure`` inside the erasure's transaction; the streams are deleted once it
commits (a rollback keeps them, as it keeps the rows), and closed: a run still being generated
can append nothing more, and its worker stops the model and stores nothing
(``respond.services``). Best effort: with Redis down the erasure still commits, and the streams
expire on their own (the TTL is the backstop).
"""

import logging

import redis
from django.db import transaction
from django.db.models import Q

from respond import events as run_events
from respond.models import RespondRun
from threads.models import Thread

logger = logging.getLogger(__name__)


def run_streams_erase(thread: Thread, message_pks: list[int], *, everything: bool) -> None:
    """Delete and close, on commit, the streams of the thread's runs: all of them
    (``everything``), or those of the runs that asked or answered one of ``message_pks``."""
    runs = RespondRun.objects.filter(thread=thread, in_worker=True)
    if not everything:
        runs = runs.filter(
            Q(user_message_id__in=message_pks) | Q(assistant_message_id__in=message_pks)
        )
    run_ids = list(runs.values_list("public_id", flat=True))
    if run_ids:
        transaction.on_commit(lambda: _streams_close(run_ids))


def _streams_close(run_ids: list[str]) -> None:
    try:
        run_events.streams_close(run_ids)
    except redis.RedisError as error:
        logger.warning(
            "could not delete the streams of %d erased runs (they expire on their own): %r",
            len(run_ids),
            error,
        )
