"""A 5,000-turn conversation through the service layer, at realistic message sizes.

A turn is a user message (~100 tokens) and the assistant's answer (~240 tokens): about 340
tokens a turn, the size of a real support conversation. Each turn: append the user's message,
assemble the context (window 8,192, reserve 1,024, a system prompt), append the answer linked
to the assembly. When a memo is pending, the memo writer runs right after the turn, inline
(standing in for the Celery worker, with the embedded summarizer), and keeps writing while a
chain has more segments; its time is off the hot path and reported apart.

Printed, each from this one run:

- per-turn service time (append + context + append), p50 of turns 100-199 of a young
  conversation vs turns 5,000-5,099 of the long one, the two alternated turn by turn so that
  the shared machine's drift affects both alike; limit 1.2;
- memo rows the context read per turn (``context_read``), first vs last 500: O(1);
- stored bytes per turn (messages, assembly records, memos, blobs, audit events, with their
  indexes) against the message content's bytes; limit 2; and, apart, the full-text index over
  the messages (PostgreSQL's GIN index, SQLite's FTS5 table) and the ratio with it;
- tokens the memo writers were given (previous memo + segment) per turn, per 1,000-turn
  bucket, and the last/first bucket ratio: flat;
- the largest writer input vs the summarizer's context limit, and storage per memo (covered
  ids, text) — bounded, not growing with the conversation;
- on every turn: the current user message is the last message of the input, never dropped;
  once a memo is shown, nothing between it and the recent turns is dropped.

    .venv/bin/python bench/long_conversation.py                      # SQLite (temporary file)
    DATABASE_URL=postgres://postgres@127.0.0.1:5432/x .venv/bin/python bench/long_conversation.py
    .venv/bin/python bench/long_conversation.py --turns 1000         # a shorter run

``--encryption`` measures instead what sealing content with the subject's data key costs
(issue 23, goal <= 1.15x): two conversations of ``--turns`` turns, one sealed and one in clear,
alternated turn by turn in the same run; the per-turn service time p50 over the turns after the
first 100, sealed / clear.
"""

import argparse
import statistics
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench import SEARCH_INDEX, bench_database, stored_bytes, stored_bytes_detail

WINDOW = 8_192
RESERVE = 1_024
MAX_RATIO = 1.2
MAX_STORAGE_RATIO = 2.0
SYSTEM = (
    "You are the support assistant of a furniture shop. Answer briefly, quote order and "
    "ticket numbers exactly, and never promise refunds the policy does not allow."
)
CITIES = ("Leipzig", "Lyon", "Porto", "Gdansk", "Turin", "Ghent", "Malmo", "Brno")
ITEMS = ("oak desk", "linen sofa", "bookshelf", "bed frame", "dining table", "armchair")
ISSUES = ("a scratched top", "a missing screw bag", "a torn cushion", "the wrong colour")


def user_turn(index: int) -> str:
    """About 100 tokens: an order, a place, a problem, a question."""
    item, city = ITEMS[index % len(ITEMS)], CITIES[index % len(CITIES)]
    return (
        f"Hello again. About order ORD-{30_000 + index}, the {item} delivered to our office in "
        f"{city} on day {index % 28 + 1}: it arrived with {ISSUES[index % len(ISSUES)]}. I "
        f"have photos of the box and of the damage, and the delivery note is signed with a "
        f"remark. We would rather keep the {item} if it can be repaired, but otherwise we need "
        f"a replacement before the {index % 12 + 1}th, because the team moves in then. Can you "
        f"tell me what the options are and how long each one takes?"
    )


def assistant_turn(index: int) -> str:
    """About 240 tokens: a decision with ids, amounts, dates and next steps."""
    item = ITEMS[index % len(ITEMS)]
    return (
        f"Thank you for the details and the photos; I am sorry the {item} arrived like this. "
        f"I have opened ticket TCK-{40_000 + index} for order ORD-{30_000 + index} and attached "
        f"your photos and the signed delivery note, so nobody will ask you for them again. "
        f"There are two options. First, a repair: our technician can visit on day "
        f"{(index + 3) % 28 + 1} between 08:00 and 12:00, bring the parts, and fix it on site; "
        f"that costs you nothing and takes about an hour. Second, a replacement: a new {item} "
        f"leaves our warehouse within two working days and arrives on day "
        f"{(index + 5) % 28 + 1}; the driver takes the damaged one back at the same visit. "
        f"Either way, the delivery fee of {index % 40 + 10}.00 EUR is refunded to the card "
        f"you paid with, within five working days, and I have added a goodwill voucher "
        f"VCH-{index:05d} worth 25.00 EUR for your next order. If you prefer the repair, reply "
        f"with a time that suits you; for the replacement I only need you to confirm that "
        f"someone can receive it. Is there anything else about this order I can help with?"
    )


class CountingBackend:
    """The embedded summarizer, counting the tokens each call is given."""

    name = "embedded"

    def __init__(self) -> None:
        from compaction.backends import summarizer_context_tokens
        from compaction.backends.embedded import EmbeddedBackend

        self.inner = EmbeddedBackend()
        self.context_tokens = summarizer_context_tokens("embedded")
        self.inputs: list[int] = []

    def summarize(self, *, previous_memo: str | None, messages: Sequence[Any], max_tokens: int):
        from compaction.memo_input import FRAMING_TOKENS, PROMPT_TOKENS
        from convmem.tokens import count_tokens

        given = count_tokens(previous_memo or "") + sum(
            count_tokens(m.content) + FRAMING_TOKENS for m in messages
        )
        self.inputs.append(given + PROMPT_TOKENS + max_tokens)
        return self.inner.summarize(
            previous_memo=previous_memo, messages=messages, max_tokens=max_tokens
        )


class MemoRowsRead:
    """Counts the memo rows each context read returns (wraps the selector)."""

    def __init__(self) -> None:
        from compaction import context, selectors

        self.original = selectors.context_read
        self.rows = 0
        context.selectors.context_read = self._read  # type: ignore[attr-defined]

    def _read(self, **kwargs: Any) -> Any:
        found = self.original(**kwargs)
        self.rows += len(found.summaries)
        return found


def p50_ms(values: Sequence[float]) -> float:
    return statistics.median(values) * 1e3


class Conversation:
    """One thread talked to turn by turn, with the memo writer run inline after each turn."""

    def __init__(self, name: str, backend: CountingBackend, memo_rows: MemoRowsRead) -> None:
        from auditlog.events import Actor
        from convmem.tenancy import tenant_create
        from threads import services

        tenant, _, _ = tenant_create(name=f"bench-{name}")
        self.actor = Actor.system("bench")
        self.thread = services.thread_create(tenant=tenant, actor=self.actor, user_ref=name)
        self.backend = backend
        self.memo_rows = memo_rows
        self.index = 0
        self.seconds: list[float] = []
        self.rows_read: list[int] = []
        self.writer_given: list[int] = []
        self.tokens = 0
        self.violations = 0
        self.gaps = 0

    def turn(self) -> None:
        """Append, assemble, append (timed, recorded), then write what memos are pending."""
        from compaction.context import context_assemble
        from threads import services
        from threads.selectors import thread_get

        index, thread = self.index, self.thread
        question_text, answer_text = user_turn(index), assistant_turn(index)
        rows_before = self.memo_rows.rows
        started = time.perf_counter()
        question = services.message_append(
            thread=thread, actor=self.actor, role="user", content=question_text
        )
        # As the API does per request: the thread row as it is now (its active leaf).
        thread = thread_get(tenant=thread.tenant, public_id=thread.public_id)
        assembly = context_assemble(
            thread=thread,
            actor=self.actor,
            window_tokens=WINDOW,
            reserve_tokens=RESERVE,
            system=SYSTEM,
        )
        answer = services.message_append(
            thread=thread,
            actor=self.actor,
            role="assistant",
            content=answer_text,
            assembly_public_id=assembly.record.public_id,
        )
        self.seconds.append(time.perf_counter() - started)
        self.rows_read.append(self.memo_rows.rows - rows_before)
        self.tokens += question.token_count + answer.token_count
        self.thread = thread
        self.index += 1
        sections = assembly.sections
        if (
            sections["recent"][-1] != question.public_id
            or question.public_id in sections["dropped"]
            or assembly.messages[-1] != {"role": "user", "content": question_text}
        ):
            self.violations += 1
        if assembly.memo_status == "ready" and sections["dropped"]:
            self.gaps += 1
        self.write_pending_memos()

    def write_pending_memos(self) -> None:
        from compaction import services as compaction_services
        from compaction.models import Summary

        given_before = sum(self.backend.inputs)
        while pending := Summary.objects.filter(thread=self.thread, status="pending").first():
            compaction_services.summary_write(summary_id=pending.pk, backend=self.backend)
        self.writer_given.append(sum(self.backend.inputs) - given_before)


MAX_ENCRYPTION_RATIO = 1.15


def encryption_cost(turns: int, database: str) -> bool:
    """Sealed vs clear, alternated turn by turn (``--encryption``); True within the goal."""
    from django.conf import settings

    backend, memo_rows = CountingBackend(), MemoRowsRead()
    conversations = {}
    for sealed in (True, False):
        settings.CONVMEM_ENCRYPT_CONTENT = sealed
        conversations[sealed] = Conversation("sealed" if sealed else "clear", backend, memo_rows)
    for index in range(turns):
        # Which one goes first alternates too (a turn after a memo write meets a cold cache).
        for sealed in (index % 2 == 0, index % 2 == 1):
            settings.CONVMEM_ENCRYPT_CONTENT = sealed
            conversations[sealed].turn()
    from threads.models import Message

    sealed_rows = Message.objects.filter(
        thread=conversations[True].thread, content__startswith="enc1:"
    ).count()
    clear_rows = Message.objects.filter(
        thread=conversations[False].thread, content__startswith="enc1:"
    ).count()
    print(f"  rows sealed: {sealed_rows} in the sealed thread, {clear_rows} in the clear one")
    warm = slice(min(100, turns // 2), None)
    sealed_ms = p50_ms(conversations[True].seconds[warm])
    clear_ms = p50_ms(conversations[False].seconds[warm])
    ratio = sealed_ms / clear_ms
    print(
        f"\nper-turn service time (append + context + append) on {database}, {turns:,} turns "
        f"each, alternated: sealed p50 {sealed_ms:.2f} ms, clear {clear_ms:.2f} ms -> ratio "
        f"{ratio:.3f} (goal {MAX_ENCRYPTION_RATIO})"
    )
    return ratio <= MAX_ENCRYPTION_RATIO


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--turns", type=int, default=5_000)
    parser.add_argument(
        "--detail", action="store_true", help="also print stored bytes per column and index"
    )
    parser.add_argument(
        "--encryption", action="store_true", help="sealed vs clear per-turn cost (issue 23)"
    )
    arguments = parser.parse_args()
    turns = arguments.turns
    if arguments.encryption:
        with bench_database() as database:
            return 0 if encryption_cost(turns, database) else 1
    edge = min(500, turns // 4)
    with bench_database() as database:
        from compaction.models import Summary
        from convmem.tokens import count_tokens

        backend = CountingBackend()
        memo_rows = MemoRowsRead()
        long = Conversation("long", backend, memo_rows)
        started_all = time.perf_counter()
        for _ in range(turns):
            long.turn()
            if long.index % 1000 == 0:
                elapsed = time.perf_counter() - started_all
                print(
                    f"  {long.index:,} turns, {len(backend.inputs)} memos, {elapsed:.0f}s",
                    flush=True,
                )
        # The ratio: turns 100-199 of a young conversation against turns past ``turns`` of the
        # long one, alternated so that the shared machine's drift affects both alike.
        young = Conversation("young", backend, memo_rows)
        for _ in range(100):
            young.turn()
        measured_from = len(long.seconds)
        for _ in range(100):
            young.turn()
            long.turn()
        early, late = young.seconds[100:], long.seconds[measured_from:]
        ratio = p50_ms(late) / p50_ms(early)

        memos = Summary.objects.filter(thread=long.thread, status="ready")
        covered = [len(ids) for ids in memos.values_list("covered_ids", flat=True)]
        texts = [count_tokens(text) for text in memos.values_list("text", flat=True)]
        buckets = [long.writer_given[i : i + 1000] for i in range(0, turns, 1000)]
        per_bucket = [sum(b) / len(b) for b in buckets if b]
        steady = per_bucket[1:] or per_bucket
        writer_flat = per_bucket[-1] / steady[0] if steady[0] else 0.0

        print(
            f"\n{turns:,}-turn conversation on {database} (window {WINDOW:,}, reserve {RESERVE:,})"
        )
        print(
            f"  conversation: {long.tokens / long.index:.0f} tokens per turn (user + assistant), "
            f"{long.tokens:,} in all"
        )
        print(
            f"  per-turn service time p50, alternated: turns 100-199 of a young thread "
            f"{p50_ms(early):.2f} ms, turns {turns:,}-{turns + 99:,} of the long one "
            f"{p50_ms(late):.2f} ms -> ratio {ratio:.2f} (limit {MAX_RATIO})"
        )
        print(
            f"  (unalternated, for the record: first/last {edge} turns of the long run "
            f"{p50_ms(long.seconds[:edge]):.2f} / "
            f"{p50_ms(long.seconds[turns - edge : turns]):.2f} ms)"
        )
        print(
            f"  memo rows read per context: first {edge} mean "
            f"{statistics.mean(long.rows_read[:edge]):.2f}, last {edge} mean "
            f"{statistics.mean(long.rows_read[turns - edge : turns]):.2f}"
        )
        print(
            "  memo writer input per turn, by 1,000 turns: "
            + ", ".join(f"{value:.0f}" for value in per_bucket)
            + f" tokens -> last/first steady bucket {writer_flat:.2f}"
        )
        print(
            f"  memo writer: {len(backend.inputs)} calls, largest input "
            f"{max(backend.inputs, default=0):,} tokens of a {backend.context_tokens:,}-token "
            f"context (off the hot path)"
        )
        print(
            f"  storage per memo: covered ids max {max(covered, default=0)}, mean "
            f"{statistics.mean(covered) if covered else 0:.1f}; memo text max "
            f"{max(texts, default=0)} tokens"
        )
        tables, content = stored_bytes()
        all_turns = long.index + young.index
        search = tables.pop(SEARCH_INDEX)
        storage_ratio = sum(tables.values()) / content
        print(
            f"  stored: {sum(tables.values()) / all_turns:,.0f} bytes per turn (messages, "
            f"assembly records, memos, blobs, audit events, their indexes included) for "
            f"{content / all_turns:,.0f} bytes of message content -> "
            f"{storage_ratio:.2f}x (limit {MAX_STORAGE_RATIO}); per turn: "
            + ", ".join(f"{name} {size / all_turns:,.0f}" for name, size in tables.items())
        )
        print(
            f"  the full-text index over messages (recall, search), apart: "
            f"{search / all_turns:,.0f} bytes per turn -> with it "
            f"{(sum(tables.values()) + search) / content:.2f}x"
        )
        if arguments.detail:
            for table, part, size in stored_bytes_detail():
                if size >= all_turns:
                    print(f"    {table}.{part}: {size / all_turns:,.0f} bytes per turn")
        violations = long.violations + young.violations
        print(
            f"  current turn lost, dropped or summarised: {violations} of "
            f"{long.index + young.index:,} turns"
        )
        print(f"  turns with a memo shown and history dropped beside it: {long.gaps + young.gaps}")
        within = (
            max(backend.inputs, default=0) <= backend.context_tokens
            and ratio <= MAX_RATIO
            and storage_ratio <= MAX_STORAGE_RATIO
            and violations == 0
        )
    return 0 if within else 1


if __name__ == "__main__":
    sys.exit(main())
