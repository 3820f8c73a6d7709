"""Recall in context assembly: an old fact the current turn asks about comes back into the model
input as a quoted excerpt, within the budget, recorded as ids and replayable to the same hash."""

from django.db import connection
from django.test.utils import CaptureQueriesContext

from audit.erasure import message_content_erase
from compaction.models import AssemblyRecord
from compaction.rendering import RECALLED_HEADER
from compaction.replay import assembly_replay
from compaction.selectors import assembly_items
from convmem.models import ModelProfile
from tests.compaction.helpers import grow, post_context
from tests.conftest import SYSTEM, make_thread
from threads import services
from threads.models import Message

BUDGET = {"window_tokens": 2048, "reserve_tokens": 256}
FACT = "By the way, my locker code at the gym is 4471-QZ and the locker is number 88."
QUESTION = "Remind me: what is my locker code?"


def say(thread, role: str, content: str) -> Message:
    return services.message_append(thread=thread, actor=SYSTEM, role=role, content=content)


def long_thread(acme, *, profile=None, filler: int = 200):
    """A first turn, the fact at turn 3, ``filler`` turns about other things, the question."""
    thread = services.thread_create(
        tenant=acme.tenant, actor=SYSTEM, user_ref="user-1", profile=profile
    )
    grow(thread, 2)
    fact = say(thread, "user", FACT)
    say(thread, "assistant", "Noted.")
    grow(thread, filler, start=4)
    question = say(thread, "user", QUESTION)
    return thread, fact, question


def recalled_texts(response) -> list[str]:
    prefix = RECALLED_HEADER.split("(")[0]
    return [m["content"] for m in response.data["messages"] if m["content"].startswith(prefix)]


def test_a_fact_from_200_turns_ago_is_recalled_when_asked_about(acme):
    thread, fact, _ = long_thread(acme)

    response = post_context(acme.client, thread, **BUDGET)

    assert response.status_code == 200, response.data
    sections = response.data["sections"]
    assert fact.public_id not in sections["recent"]
    assert sections["recalled"] == [fact.public_id]
    assert [t for t in recalled_texts(response) if "4471-QZ" in t]
    # After the stable history (memo or anchor, then the earlier recent turns), right before
    # the current turn, which is still last.
    contents = [m["content"] for m in response.data["messages"]]
    assert contents[-1] == QUESTION
    recalled_at = next(i for i, c in enumerate(contents) if "4471-QZ" in c)
    assert recalled_at == len(contents) - 2
    assert response.data["prefix"]["messages"] == recalled_at
    tokens = response.data["tokens"]
    assert tokens["recalled"] > 0
    assert tokens["total"] + tokens["reserve"] <= tokens["window"]
    assert tokens["total"] == sum(
        tokens[k] for k in ("system", "memo", "anchor", "recalled", "retrieved", "recent")
    )


def test_the_recalled_section_is_recorded_and_replays_to_the_same_hash(acme):
    thread, fact, _ = long_thread(acme)

    response = post_context(acme.client, thread, **BUDGET)
    record = AssemblyRecord.objects.get(public_id=response.data["assembly_id"])
    replay = assembly_replay(assembly=record)

    assert [i["id"] for i in assembly_items(record) if i["kind"] == "recalled"] == [fact.public_id]
    assert record.tokens["recalled"] == response.data["tokens"]["recalled"]
    assert replay.matches, replay.reason
    assert replay.messages == response.data["messages"]


def test_a_recalled_message_erased_later_is_named_by_the_replay(acme):
    thread, fact, _ = long_thread(acme)
    response = post_context(acme.client, thread, **BUDGET)

    message_content_erase(message=fact, actor=SYSTEM)
    record = AssemblyRecord.objects.get(public_id=response.data["assembly_id"])
    replay = assembly_replay(assembly=record)

    assert not replay.matches
    assert fact.public_id in replay.reason
    assert record.rendered_pieces is None  # no snapshot quotes it (none is kept by default)


def test_an_erased_message_is_never_recalled(acme):
    thread, fact, _ = long_thread(acme)
    message_content_erase(message=fact, actor=SYSTEM)

    response = post_context(acme.client, thread, **BUDGET)

    assert response.data["sections"]["recalled"] == []
    assert "4471" not in str(response.data["messages"])


def test_a_profile_with_recall_off_recalls_nothing(acme):
    profile = ModelProfile.objects.create(tenant=acme.tenant, name="no-recall", recall=False)
    thread, _, _ = long_thread(acme, profile=profile)

    response = post_context(acme.client, thread, **BUDGET)

    assert response.data["sections"]["recalled"] == []
    assert response.data["tokens"]["recalled"] == 0
    assert "4471" not in str(response.data["messages"])


def test_the_profile_cap_bounds_the_section(acme):
    profile = ModelProfile.objects.create(
        tenant=acme.tenant, name="tiny-recall", recall_max_tokens=10
    )
    thread, _, _ = long_thread(acme, profile=profile)

    response = post_context(acme.client, thread, **BUDGET)

    assert response.data["sections"]["recalled"] == []  # the fact costs more than 10 tokens


def test_nothing_is_recalled_while_the_history_fits(acme):
    thread = make_thread(acme.tenant)
    say(thread, "user", FACT)
    say(thread, "assistant", "Noted.")
    say(thread, "user", QUESTION)

    response = post_context(acme.client, thread, **BUDGET)

    assert response.data["sections"]["recalled"] == []
    assert response.data["tokens"]["recalled"] == 0


def test_only_the_active_path_is_recalled(acme):
    """An edited-away message (another branch) is never recalled; its edit is."""
    thread = make_thread(acme.tenant)
    grow(thread, 2)
    old = say(thread, "user", "My locker code is 1111-AA.")
    new = services.message_edit(
        thread=thread, actor=SYSTEM, message_public_id=old.public_id, content=FACT
    )
    say(thread, "assistant", "Noted.")
    grow(thread, 200, start=4)
    say(thread, "user", QUESTION)

    response = post_context(acme.client, thread, **BUDGET)

    assert new.public_id in response.data["sections"]["recalled"]
    assert old.public_id not in response.data["sections"]["recalled"]
    assert "1111-AA" not in str(response.data["messages"])


def test_a_word_common_in_the_thread_is_not_looked_up_again(acme):
    """Once a lookup finds a word in more messages than recall reads for one (a common word,
    which the ranking ignores), later turns of the thread leave it out of the lookup; what is
    recalled stays the same."""
    thread, fact, _ = long_thread(acme)
    say(thread, "assistant", "Sure.")
    # Every filler turn talks about "carriers"; only the fact has "locker".
    say(thread, "user", "Not about the carriers: what is my locker code?")

    def recall() -> tuple[list[str], str]:
        with CaptureQueriesContext(connection) as captured:
            response = post_context(acme.client, thread, **BUDGET)
        return response.data["sections"]["recalled"], " ".join(q["sql"] for q in captured)

    first, asked_first = recall()
    second, asked_second = recall()

    assert first == second == [fact.public_id]
    assert "carriers" in asked_first
    assert "carriers" not in asked_second
    assert "locker" in asked_second


def test_recall_adds_one_query(acme, settings):
    """The word hits with the rows of the messages they found (a fork would add one walk); on
    PostgreSQL the lookup's setting goes with it, two statements in one round trip."""
    thread, fact, _ = long_thread(acme)
    post_context(acme.client, thread, **BUDGET)  # the memo request is made once, here

    def queries() -> tuple[int, list[str]]:
        with CaptureQueriesContext(connection) as captured:
            response = post_context(acme.client, thread, **BUDGET)
        return len(captured), response.data["sections"]["recalled"]

    with_recall, recalled = queries()
    settings.CONVMEM_DEFAULT_RECALL = False
    without, none = queries()

    assert (recalled, none) == ([fact.public_id], [])
    # The current turn's text comes with the context's own read.
    assert with_recall - without == (2 if connection.vendor == "postgresql" else 1)
