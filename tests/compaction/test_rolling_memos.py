"""Rolling memos over bounded segments: the newcomer's repro, bounded writer input and storage,
chains that continue to their goal, failures that back off, invalidation of a chain.

Memos are written inline with the memo writer's service (what its Celery task calls); the
worker itself is exercised in test_memo_worker.py.
"""

import itertools
from collections.abc import Sequence
from dataclasses import dataclass, field

from compaction import services as compaction_services
from compaction.backends import MemoDraft, MemoSource
from compaction.backends.embedded import EmbeddedBackend
from compaction.memo_input import FRAMING_TOKENS, PROMPT_TOKENS
from compaction.models import Summary
from compaction.profiles import writer_segment_tokens
from convmem.tokens import MESSAGE_OVERHEAD, count_tokens
from tests.compaction.helpers import grow, post_context
from tests.conftest import SYSTEM, make_thread, path_ids
from threads import services
from threads.models import Message


def write_all_pending(thread, backend=None) -> list[Summary]:
    """Write pending memos until none is left (a chain's next segments come one by one)."""
    written = []
    while pending := Summary.objects.filter(thread=thread, status="pending").first():
        summary = compaction_services.summary_write(summary_id=pending.pk, backend=backend)
        assert summary is not None, Summary.objects.get(pk=pending.pk).error
        written.append(summary)
    return written


def thirty_short_turns(acme):
    """The newcomer's thread: 30 messages, about 870 tokens."""
    thread = make_thread(acme.tenant)
    for index in range(30):
        role = "user" if index % 2 == 0 else "assistant"
        text = f"Message {index}: order ORD-{5000 + index} costs ${index}.99 and ships soon, ok."
        services.message_append(thread=thread, actor=SYSTEM, role=role, content=text)
    thread.refresh_from_db()
    return thread


def test_the_newcomer_repro_drops_nothing_at_8192(acme):
    thread = thirty_short_turns(acme)
    tiny = post_context(acme.client, thread, window_tokens=50, reserve_tokens=0)
    small = post_context(acme.client, thread, window_tokens=800, reserve_tokens=100)
    assert tiny.status_code == 400 or tiny.data["memo_status"] == "none"
    assert small.data["memo_status"] == "pending"

    written = write_all_pending(thread)
    large = post_context(acme.client, thread, window_tokens=8192, reserve_tokens=1024)

    assert written
    assert large.data["sections"]["dropped"] == []
    assert large.data["sections"]["memo"] is None
    assert large.data["sections"]["recent"] == path_ids(thread)
    again_small = post_context(acme.client, thread, window_tokens=800, reserve_tokens=100)
    assert again_small.data["memo_status"] == "ready"
    assert again_small.data["sections"]["dropped"] == []


def test_a_bigger_window_never_shows_fewer_original_turns(acme):
    thread = thirty_short_turns(acme)
    post_context(acme.client, thread, window_tokens=500, reserve_tokens=50)
    write_all_pending(thread)

    shown = []
    for window in range(300, 1300, 50):
        r = post_context(acme.client, thread, window_tokens=window, reserve_tokens=50)
        shown.append(len(r.data["sections"]["recent"]) + len(r.data["sections"]["anchor"]))

    assert shown == sorted(shown)
    assert shown[-1] == 30


@dataclass
class RecordingBackend:
    """Writes what ``EmbeddedBackend`` writes, or ``reply`` if given; remembers each call's
    input size in our tokenizer."""

    context_tokens: int = 16384
    reply: str | None = None
    name: str = "recording"
    inputs: list[int] = field(default_factory=list)

    def summarize(
        self, *, previous_memo: str | None, messages: Sequence[MemoSource], max_tokens: int
    ) -> MemoDraft:
        size = count_tokens(previous_memo or "") + sum(
            count_tokens(m.content) + FRAMING_TOKENS for m in messages
        )
        self.inputs.append(size + max_tokens + PROMPT_TOKENS)
        if self.reply is not None:
            return MemoDraft(self.reply, self.name, "fixed", "test/1", prompt_tokens=size)
        draft = EmbeddedBackend().summarize(
            previous_memo=previous_memo, messages=messages, max_tokens=max_tokens
        )
        return MemoDraft(draft.text, self.name, draft.model, draft.prompt_version, size, 7)


def test_an_empty_memo_is_never_ready_and_the_curator_backs_off(acme):
    thread = thirty_short_turns(acme)
    post_context(acme.client, thread, window_tokens=800, reserve_tokens=100)
    pending = Summary.objects.get(thread=thread, status="pending")

    assert (
        compaction_services.summary_write(
            summary_id=pending.pk, backend=RecordingBackend(reply="  \n ")
        )
        is None
    )

    pending.refresh_from_db()
    assert pending.status == "failed"
    assert "empty memo" in pending.error
    assert pending.text == ""
    r = post_context(acme.client, thread, window_tokens=800, reserve_tokens=100)
    assert r.data["memo_status"] == "failed"
    assert r.data["memo_error"]["summary_id"] == pending.public_id


def test_an_over_long_memo_is_cut_at_whole_lines_to_its_size(acme):
    thread = thirty_short_turns(acme)
    post_context(acme.client, thread, window_tokens=800, reserve_tokens=100)
    pending = Summary.objects.get(thread=thread, status="pending")
    lines = [
        f"- case {i}: order ORD-{i} refunded EUR {i}.50 on 2026-11-{i % 28 + 1:02d}"
        for i in range(80)
    ]

    written = compaction_services.summary_write(
        summary_id=pending.pk, backend=RecordingBackend(reply="\n".join(lines))
    )

    assert written.token_count <= written.max_tokens
    assert written.text.splitlines()[-1] in lines
    assert written.prompt_tokens > 0


def test_the_writer_input_stays_within_the_summarizers_context(acme, settings):
    settings.CONVMEM_EMBEDDED_CONTEXT_TOKENS = 2000
    thread = make_thread(acme.tenant)
    grow(thread, 20)
    huge = "The log line ORD-1 retried and failed again. " * 1500  # ~18k tokens
    services.message_append(thread=thread, actor=SYSTEM, role="user", content=huge)
    grow(thread, 20, start=21)
    post_context(acme.client, thread, window_tokens=8000, reserve_tokens=500)
    backend = RecordingBackend(context_tokens=2000)

    written = write_all_pending(thread, backend)

    assert len(written) > 1
    assert backend.inputs
    assert max(backend.inputs) <= 2000


def test_a_chain_reaches_its_goal_one_bounded_segment_at_a_time(acme, settings):
    settings.CONVMEM_EMBEDDED_CONTEXT_TOKENS = 2200  # segments of at most 664 tokens
    thread = make_thread(acme.tenant)
    grow(thread, 60)
    r = post_context(acme.client, thread, window_tokens=2000, reserve_tokens=200)
    first = Summary.objects.get(public_id=r.data["pending_memo"]["summary_id"])
    goal = first.goal

    chain = write_all_pending(thread)

    assert len(chain) > 2
    assert chain[-1].last_id == goal.pk
    assert chain[-1].first_id == chain[0].first_id == thread.root.children.get().pk
    for previous, memo in itertools.pairwise(chain):
        assert memo.base_id == previous.pk
        assert memo.chain_depth == previous.chain_depth + 1
        assert memo.segment_first.parent_id == previous.last_id
    path = path_ids(thread)
    assert sum(len(m.covered_ids) for m in chain) == path.index(goal.public_id) + 1
    segment_tokens = writer_segment_tokens(context_tokens=2200, memo_max_tokens=512)
    for memo in chain:  # bounded per memo, not growing with the conversation
        covered = Message.objects.filter(public_id__in=memo.covered_ids)
        assert sum(m.token_count + MESSAGE_OVERHEAD for m in covered) <= segment_tokens
    r = post_context(acme.client, thread, window_tokens=2000, reserve_tokens=200)
    # A memo of the chain stands before every turn after it (the earliest that can: curator/4
    # keeps the input's prefix as long as it can).
    assert r.data["sections"]["memo"]["summary_id"] in {memo.public_id for memo in chain}
    assert r.data["sections"]["dropped"] == []


def test_invalidating_a_segment_rebuilds_the_chain_from_the_memo_before_it(acme, settings):
    settings.CONVMEM_EMBEDDED_CONTEXT_TOKENS = 2200
    thread = make_thread(acme.tenant)
    grow(thread, 60)
    post_context(acme.client, thread, window_tokens=2000, reserve_tokens=200)
    chain = write_all_pending(thread)
    before, hit, after = chain[0], chain[1], chain[2:]
    changed = hit.segment_first

    stale = compaction_services.summaries_invalidate_for_messages(
        message_ids=[changed.pk], actor=SYSTEM
    )

    assert {s.pk for s in stale} == {hit.pk, *(m.pk for m in after)}
    before.refresh_from_db()
    assert before.status == "ready"
    rebuild = Summary.objects.get(thread=thread, status="pending")
    assert rebuild.base_id == before.pk
    assert rebuild.segment_first_id == changed.pk
    assert rebuild.goal_id == chain[-1].last_id
    rebuilt = write_all_pending(thread)
    assert rebuilt[-1].last_id == chain[-1].last_id


def test_derived_summaries_include_every_memo_extending_one_that_covers_a_message(acme, settings):
    settings.CONVMEM_EMBEDDED_CONTEXT_TOKENS = 2200
    thread = make_thread(acme.tenant)
    grow(thread, 60)
    post_context(acme.client, thread, window_tokens=2000, reserve_tokens=200)
    chain = write_all_pending(thread)

    derived = compaction_services.summaries_derived_from(message_ids=[chain[0].segment_first_id])

    assert {s.pk for s in derived} == {m.pk for m in chain}


def test_a_written_memo_is_scored_against_what_it_carries_forward(acme, settings):
    settings.CONVMEM_EMBEDDED_CONTEXT_TOKENS = 2200
    thread = make_thread(acme.tenant)
    grow(thread, 60)
    post_context(acme.client, thread, window_tokens=2000, reserve_tokens=200)
    chain = write_all_pending(thread)
    last = chain[-1]
    length = last.last.depth - last.first.depth + 1
    assert length > len(last.covered_ids)

    scored = compaction_services.summary_score(summary_id=last.pk)

    scored.refresh_from_db()
    scores = scored.scores
    assert scores["scorer"] == compaction_services.CARRIED_SCORER
    assert scores["carried_from"] == chain[-2].public_id
    # the memo it extends and its own segment, not the whole range: bounded per memo
    assert scores["segment_messages"] == len(last.covered_ids)
    assert scores["messages"] == len(last.covered_ids) + 1
    assert scores["range_messages"] == length
    assert 0 <= scores["fact_recall"] <= 1
    assert 0 <= scores["recent_fact_recall"] <= 1


def test_a_memo_a_newer_memo_extends_is_not_scored(acme, settings):
    """Sampling under load: by the time the bulk queue reaches a superseded memo, only the
    newest of its chain is worth scoring; the superseded one keeps its writer's scores."""
    settings.CONVMEM_EMBEDDED_CONTEXT_TOKENS = 2200
    thread = make_thread(acme.tenant)
    grow(thread, 60)
    post_context(acme.client, thread, window_tokens=2000, reserve_tokens=200)
    first = write_all_pending(thread)[0]
    writer_scores = first.scores

    assert compaction_services.summary_score(summary_id=first.pk) is None
    first.refresh_from_db()
    assert first.scores == writer_scores
    assert "scorer" not in first.scores
