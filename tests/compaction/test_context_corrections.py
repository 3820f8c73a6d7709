"""A correction said while a memo is shown: the memo in the input leaves out the line it
corrects, from the correcting turn on, and the record names that line so a replay leaves out
the same one. Memos are written by a real worker, as in production."""

import pytest

from compaction.models import AssemblyRecord, Summary
from compaction.rendering import MEMO_HEADER
from compaction.selectors import assembly_items
from convmem.tokens import MESSAGE_OVERHEAD, count_tokens
from tests.compaction.helpers import FILLER, post_context, wait_for
from tests.conftest import SYSTEM, make_thread
from threads import services

pytestmark = [pytest.mark.worker, pytest.mark.django_db(transaction=True)]

BUDGET = {"window_tokens": 900, "reserve_tokens": 100}
STALE = "+44 7700 900123"


def say(thread, role: str, content: str) -> None:
    services.message_append(thread=thread, actor=SYSTEM, role=role, content=content)


def memo_message(context: dict) -> str:
    memo = context["messages"][0]
    assert memo["role"] == "system"
    assert memo["content"].startswith(MEMO_HEADER)
    return memo["content"]


@pytest.fixture
def shown_memo(acme, celery_worker):
    """A thread whose input shows a memo holding the user's phone number (and their
    partner's), written by the worker."""
    thread = make_thread(acme.tenant)
    say(thread, "user", f"My phone number is {STALE}. My partner's number is +44 7700 900999.")
    say(thread, "assistant", "Noted both numbers.")
    for index in range(12):  # turns with nothing for the memo to keep
        say(thread, "user", f"Turn {index} of small talk. {FILLER}")
        say(thread, "assistant", f"Reply {index} of small talk. {FILLER}")
    post_context(acme.client, thread, **BUDGET)
    wait_for(lambda: not Summary.objects.filter(thread=thread, status="pending").exists())
    context = post_context(acme.client, thread, **BUDGET).data
    assert context["memo_status"] == "ready"
    assert STALE in memo_message(context)
    assert "superseded_lines" not in context["sections"]["memo"]
    return thread


def test_a_correction_leaves_the_stale_line_out_of_the_memo_shown(acme, shown_memo):
    thread = shown_memo
    say(thread, "assistant", "Anything else?")
    say(thread, "user", "Sorry, my number is actually +44 7700 900456.")

    context = post_context(acme.client, thread, **BUDGET).data

    memo = memo_message(context)
    assert STALE not in memo
    assert "+44 7700 900999" in memo  # the partner's number is another slot
    assert context["messages"][-1]["content"].endswith("+44 7700 900456.")
    section = context["sections"]["memo"]
    summary = Summary.objects.get(public_id=section["summary_id"])
    lines = summary.text.split("\n")
    assert [lines[index] for index in section["superseded_lines"]] == [
        line for line in lines if STALE in line
    ]
    assert STALE in summary.text  # the memo itself is not rewritten
    # Counted as shown, and still adding up.
    assert context["tokens"]["memo"] == count_tokens(memo) + MESSAGE_OVERHEAD
    sections = ("system", "memo", "anchor", "recalled", "retrieved", "recent")
    assert context["tokens"]["total"] == sum(context["tokens"][name] for name in sections)
    # The record names the lines, so a replay leaves out the same ones.
    record = AssemblyRecord.objects.get(public_id=context["assembly_id"])
    (item,) = [item for item in assembly_items(record) if item["kind"] == "summary"]
    assert item["superseded_lines"] == section["superseded_lines"]
    replay = acme.client.get(f"/api/v1/assemblies/{record.public_id}/replay").data
    assert replay["matches"] is True
    assert replay["messages"][0]["content"] == memo


def test_the_next_turns_keep_the_memo_as_the_correcting_turn_showed_it(acme, shown_memo):
    thread = shown_memo
    say(thread, "assistant", "Anything else?")
    say(thread, "user", "Sorry, my number is actually +44 7700 900456.")
    corrected = post_context(acme.client, thread, **BUDGET).data
    say(thread, "assistant", "Updated your number.")
    say(thread, "user", "Thanks. When does the parcel arrive?")

    after = post_context(acme.client, thread, **BUDGET).data

    assert after["sections"]["memo"]["summary_id"] == corrected["sections"]["memo"]["summary_id"]
    assert memo_message(after) == memo_message(corrected)  # one change, then a stable prefix


def test_a_turn_without_a_correction_shows_the_memo_whole(acme, shown_memo):
    thread = shown_memo
    say(thread, "assistant", "Anything else?")
    say(thread, "user", "Could you tell me when the parcel arrives?")

    context = post_context(acme.client, thread, **BUDGET).data

    assert STALE in memo_message(context)
    assert "superseded_lines" not in context["sections"]["memo"]
    record = AssemblyRecord.objects.get(public_id=context["assembly_id"])
    (item,) = [item for item in assembly_items(record) if item["kind"] == "summary"]
    assert "superseded_lines" not in item
