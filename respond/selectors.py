"""Reads of respond runs."""

from decimal import Decimal

from convmem.pricing import shown_cost
from respond.models import RespondRun
from threads.models import Message
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
