"""Reads of respond runs."""

from decimal import Decimal

from respond.models import RespondRun
from threads.models import Message
from threads.selectors import messages_with_refs
from usage.pricing import profile_prices, tokens_cost


def run_turns(*, run: RespondRun) -> tuple[Message, Message]:
    """The run's user turn and its stored answer, with the public ids the API shows."""
    rows = {
        m.pk: m
        for m in messages_with_refs().filter(pk__in=[run.user_message_id, run.assistant_message_id])
    }
    return rows[run.user_message_id], rows[run.assistant_message_id]


def answer_cost(*, run: RespondRun, answer: Message) -> Decimal:
    """The answer's cost at its thread's profile prices (0 without usage)."""
    usage = answer.usage or {}
    return tokens_cost(
        prices=profile_prices(run.thread.profile),
        prompt_tokens=usage.get("prompt_tokens", 0),
        completion_tokens=usage.get("completion_tokens", 0),
    )
