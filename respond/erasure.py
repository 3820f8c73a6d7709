"""Erasing respond's copies of a thread's content: the Redis streams of its runs
(``respond.events``), which hold each answer's text for ``CONVMEM_RUN_EVENTS_TTL`` seconds
after the run's last event, and the model inputs requests handed over to the workers of runs
not started yet (``input_hand_over``), which hold the text of any of the thread's messages.

Called by ``audit.erasure`` inside the erasure's transaction; the streams are deleted once it
commits (a rollback keeps them, as it keeps the rows), and closed: a run still being generated
can append nothing more, and its worker stops the model and stores nothing
(``respond.services``). Best effort: with Redis down the erasure still commits, and the streams
expire on their own (the TTL is the backstop).
"""

import logging

import redis
from django.db import transaction
from django.db.models import Q, QuerySet

from respond import events as run_events
from respond.models import RespondRun
from threads.models import Thread

logger = logging.getLogger(__name__)


def run_streams_erase(thread: Thread, message_pks: list[int], *, everything: bool) -> None:
    """Delete and close, on commit, the streams of the thread's runs: all of them
    (``everything``), or those of the runs that asked or answered one of ``message_pks``; and
    delete the inputs handed over for the thread's other runs still going (an input holds
    older messages of the thread too)."""
    runs = RespondRun.objects.filter(thread=thread, in_worker=True)
    closed = runs
    if not everything:
        closed = runs.filter(
            Q(user_message_id__in=message_pks) | Q(assistant_message_id__in=message_pks)
        )
    run_ids = list(closed.values_list("public_id", flat=True))
    going = [] if everything else _going(runs, run_ids)
    if run_ids or going:
        transaction.on_commit(lambda: _streams_close(run_ids, going))


def _going(runs: QuerySet[RespondRun], closed: list[str]) -> list[str]:
    going = runs.filter(status=RespondRun.Status.STREAMING).exclude(public_id__in=closed)
    return list(going.values_list("public_id", flat=True))


def _streams_close(run_ids: list[str], going: list[str]) -> None:
    try:
        if run_ids:
            run_events.streams_close(run_ids)
        if going:
            run_events.inputs_withdraw(going)
    except redis.RedisError as error:
        logger.warning(
            "could not delete the streams of %d erased runs and the inputs of %d going "
            "(they expire on their own): %r",
            len(run_ids),
            len(going),
            error,
        )
