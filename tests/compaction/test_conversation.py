"""A growing conversation through the services, memos written as soon as they are asked for:
on every turn the input fits, ends with the current turn, and never summarises it."""

from auditlog.events import Actor
from compaction import services as compaction_services
from compaction.context import context_assemble
from compaction.models import Summary
from convmem.tokens import MESSAGE_OVERHEAD
from tests.compaction.helpers import turn_text
from tests.conftest import make_thread
from threads import services
from threads.models import Message, Thread

ACTOR = Actor.system("tests")
WINDOW, RESERVE = 1000, 100
TURNS = 80


def test_every_turn_fits_shows_the_current_turn_and_asks_for_few_memos(acme):
    thread = make_thread(acme.tenant)
    path: list[str] = []
    memos_written = 0
    for index in range(TURNS):
        question = services.message_append(
            thread=thread, actor=ACTOR, role="user", content=turn_text(index, "user")
        )
        path.append(question.public_id)
        current = Thread.objects.select_related("profile").get(pk=thread.pk)

        assembly = context_assemble(
            thread=current, actor=ACTOR, window_tokens=WINDOW, reserve_tokens=RESERVE
        )

        sections, tokens = assembly.sections, assembly.tokens
        assert tokens["total"] + RESERVE <= WINDOW
        assert sections["recent"][-1] == question.public_id
        assert assembly.messages[-1] == {"role": "user", "content": question.content}
        assert sections["recent"] == path[-len(sections["recent"]) :]
        assert question.public_id not in sections["dropped"]
        memo = sections["memo"]
        if memo and memo["status"] == "ready":
            # The memo stands for the conversation from its first turn; every turn after it
            # is shown verbatim: it leaves nothing out.
            assert memo["first_id"] == path[0]
            assert path.index(memo["last_id"]) + 1 == path.index(sections["recent"][0])
            assert sections["dropped"] == []
        shown = Message.objects.filter(public_id__in=sections["recent"])
        assert tokens["recent"] == sum(m.token_count + MESSAGE_OVERHEAD for m in shown)
        if assembly.memo_status == "pending":
            pending = Summary.objects.get(public_id=assembly.pending_memo["summary_id"])
            if compaction_services.summary_write(summary_id=pending.pk) is not None:
                memos_written += 1
        answer = services.message_append(
            thread=thread,
            actor=ACTOR,
            role="assistant",
            content=turn_text(index, "assistant"),
            assembly_public_id=assembly.record.public_id,
        )
        path.append(answer.public_id)

    # ~7,800 tokens of conversation through a 900-token budget: a memo every ~3 turns at most.
    assert 0 < memos_written <= TURNS // 3
    assert Summary.objects.filter(thread=thread).exclude(status="ready").count() == 0
