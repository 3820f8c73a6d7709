"""Recall and corrections: the newest statement of the same thing replaces the older one in the
recalled section as in the memo (``compaction.recall``)."""

from tests.compaction.helpers import grow, post_context
from tests.compaction.test_recall import BUDGET, recalled_texts, say
from tests.conftest import SYSTEM
from threads import services

FACT = "The gate code for the allotment shed is 5521-KX, the padlock is brass."
CORRECTION = "Sorry, I got that wrong: the gate code for the allotment shed is actually 9034-PL."
QUESTION = "Remind me, what is the gate code for the allotment shed?"


def thread_with(acme, *later: str, filler: int = 100):
    """The fact at turn 3, then each of ``later`` after ``filler`` turns of other things."""
    thread = services.thread_create(tenant=acme.tenant, actor=SYSTEM, user_ref="user-1")
    grow(thread, 2)
    fact = say(thread, "user", FACT)
    say(thread, "assistant", "Noted.")
    start = 4
    said = []
    for text in later:
        grow(thread, filler, start=start)
        start += filler
        said.append(say(thread, "user", text))
        say(thread, "assistant", "Noted.")
        start += 2
    grow(thread, filler, start=start)
    return thread, fact, said


def test_a_message_the_user_corrected_later_is_not_recalled_and_the_correction_is(acme):
    thread, fact, (correction,) = thread_with(acme, CORRECTION)
    say(thread, "user", QUESTION)

    response = post_context(acme.client, thread, **BUDGET)

    recalled = response.data["sections"]["recalled"]
    assert correction.public_id in recalled
    assert fact.public_id not in recalled
    assert "5521-KX" not in str(response.data["messages"])
    assert [t for t in recalled_texts(response) if "9034-PL" in t]


def test_a_turn_with_a_corrections_words_still_recalls(acme):
    """ "New" and "wrong" are in complaints as often as in corrections: the turn recalls."""
    thread, fact, _ = thread_with(acme)
    say(thread, "user", "The new brass padlock for the allotment shed is the wrong size: 40 mm.")

    response = post_context(acme.client, thread, **BUDGET)

    assert fact.public_id in response.data["sections"]["recalled"]


def test_a_later_correction_of_another_thing_leaves_the_message_recalled(acme):
    thread, fact, _ = thread_with(acme, "Actually, the code for the bike lock is now 3141-BK.")
    say(thread, "user", QUESTION)

    response = post_context(acme.client, thread, **BUDGET)

    assert fact.public_id in response.data["sections"]["recalled"]
    assert [t for t in recalled_texts(response) if "5521-KX" in t]


def test_a_correction_passes_over_only_what_is_older_than_it(acme):
    """The correction said first and a plain statement of the same thing later: nothing newer
    corrects either, so both are recalled."""
    thread = services.thread_create(tenant=acme.tenant, actor=SYSTEM, user_ref="user-1")
    grow(thread, 2)
    correction = say(thread, "user", CORRECTION)
    say(thread, "assistant", "Noted.")
    grow(thread, 100, start=4)
    fact = say(thread, "user", FACT)
    say(thread, "assistant", "Noted.")
    grow(thread, 100, start=106)
    say(thread, "user", QUESTION)

    response = post_context(acme.client, thread, **BUDGET)

    recalled = response.data["sections"]["recalled"]
    assert correction.public_id in recalled
    assert fact.public_id in recalled
