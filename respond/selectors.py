"""Reads of respond runs."""

from decimal import Decimal

from django.utils import timezone
from rest_framework.exceptions import NotFound

from convmem.pricing import shown_cost
from respond.models import RespondRun
from threads.models import Message, Thread
from threads.selectors import messages_with_refs


def run_turns(*, run: RespondRun) -> tuple[Message, Message]:
    """The run's user turn and its stored answer, with the public ids the API shows."""
    rows = {
        m.pk: m
        for m in messages_with_refs().filter(pk__in=[run.user_message_id, run.assistant_message_id])
    }
    return rows[run.user_message_id], rows[run.assistant_message_id]


def answer_cost(*, answer: Message) -> Decimal:
    """The answer's cost, as stored with it (at the prices when it was stored; 0 without usage)."""
    return shown_cost(answer.cost)


def run_get(*, thread: Thread, public_id: str) -> RespondRun:
    """The thread's run ``public_id`` (404 for any other)."""
    run = (
        RespondRun.objects.select_related("user_message", "assembly", "assistant_message")
        .filter(thread=thread, public_id=public_id)
        .first()
    )
    if run is None:
        raise NotFound("Not found.")
    return run


def run_state(run: RespondRun) -> str:
    """The state the API shows: ``queued`` (no worker has started it yet), ``running``,
    ``completed``, ``interrupted`` (a partial answer is stored: cancelled, failed or cut
    mid-answer), ``cancelled`` (before any text), ``failed``."""
    Status = RespondRun.Status
    if run.status == Status.STREAMING:
        return "running" if run.started_attempt >= run.attempt or not run.in_worker else "queued"
    return {
        Status.COMPLETE: "completed",
        Status.INTERRUPTED: "interrupted",
        Status.CANCELLED: "cancelled",
        Status.FAILED: "failed",
    }[run.status]


def run_is_live(*, run_pk: int) -> bool:
    """Whether the run is still being generated under a live lease (a worker that died stops
    renewing it)."""
    return RespondRun.objects.filter(
        pk=run_pk, status=RespondRun.Status.STREAMING, leased_until__gte=timezone.now()
    ).exists()
