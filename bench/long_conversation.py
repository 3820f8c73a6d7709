"""A 5,000-turn conversation through the service layer (window 8,192, reserve 1,024).

Each turn: append the user's message, assemble the context (system prompt + memo + recent
turns), append the assistant's answer linked to the assembly. When an assembly asks for a
memo, the memo writer runs right after it, inline (standing in for the Celery worker; its time
is reported apart, as it is off the hot path). Printed: per-turn time p50/p99 for the first and
the last 500 turns, tokens passed through the tokenizer per turn (hot path and memo writer),
summarizer calls per 1,000 turns; checked on every turn: the current user message is the last
message of the input, never dropped, never inside the memo's range.

    .venv/bin/python bench/long_conversation.py                      # SQLite (temporary file)
    DATABASE_URL=postgres://postgres@127.0.0.1:5432/x .venv/bin/python bench/long_conversation.py
"""

import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench import bench_database

TURNS = 5_000
WINDOW = 8_192
RESERVE = 1_024
EDGE = 500
MAX_CALLS_PER_1000 = 50
SYSTEM = (
    "You are the support assistant of a furniture shop. Answer briefly, quote order and "
    "ticket numbers exactly, and never promise refunds the policy does not allow."
)
CITIES = ("Leipzig", "Lyon", "Porto", "Gdansk", "Turin", "Ghent", "Malmo", "Brno")


def user_turn(index: int) -> str:
    return (
        f"Order ORD-{30_000 + index} ({CITIES[index % len(CITIES)]}): the delivery window on "
        f"day {index % 28 + 1} does not work for me, can we move it by {index % 5 + 1} days?"
    )


def assistant_turn(index: int) -> str:
    return (
        f"Done: ORD-{30_000 + index} now arrives on day {(index + 3) % 28 + 1} between 08:00 and "
        f"12:00, ticket TCK-{40_000 + index}. The driver calls 30 minutes ahead; the delivery fee "
        f"of {index % 40 + 10}.00 EUR is waived because of the change. Anything else I can do?"
    )


class TokenCounter:
    """Counts the tokens every ``encode`` call of the encoding produces (wraps the cached
    encoding object that ``compaction.tokens`` hands out)."""

    def __init__(self) -> None:
        from compaction.tokens import default_encoding_name, get_encoding

        self.encoding = get_encoding(default_encoding_name())
        self.original: Callable[..., list[int]] = self.encoding.encode
        self.total = 0
        self.encoding.encode = self._encode  # type: ignore[method-assign]

    def _encode(self, text: str, **kwargs: Any) -> list[int]:
        tokens = self.original(text, **kwargs)
        self.total += len(tokens)
        return tokens


def percentile(values: list[float], share: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(share * len(ordered)))]


def main() -> int:
    with bench_database() as backend:
        from audit.events import Actor
        from compaction import services as compaction_services
        from compaction.context import context_assemble
        from compaction.models import Summary
        from convmem.tenancy import tenant_create
        from threads import services
        from threads.models import Thread

        tenant, _, _ = tenant_create(name="bench-long")
        actor = Actor.system("bench")
        thread = services.thread_create(tenant=tenant, actor=actor, user_ref="long")
        thread = Thread.objects.select_related("profile").get(pk=thread.pk)
        counter = TokenCounter()
        turn_seconds: list[float] = []
        hot_tokens: list[int] = []
        writer_seconds: list[float] = []
        writer_tokens = 0
        calls = 0
        covered: dict[str, set[str]] = {}
        violations = 0
        started_all = time.perf_counter()
        for index in range(TURNS):
            before = counter.total
            started = time.perf_counter()
            question = services.message_append(
                thread=thread, actor=actor, role="user", content=user_turn(index)
            )
            # As the API does per request: the thread row as it is now (its active leaf).
            thread = Thread.objects.select_related("profile").get(pk=thread.pk)
            assembly = context_assemble(
                thread=thread,
                actor=actor,
                window_tokens=WINDOW,
                reserve_tokens=RESERVE,
                system=SYSTEM,
            )
            services.message_append(
                thread=thread,
                actor=actor,
                role="assistant",
                content=assistant_turn(index),
                assembly_public_id=assembly.record.public_id,
            )
            turn_seconds.append(time.perf_counter() - started)
            hot_tokens.append(counter.total - before)

            sections = assembly.sections
            memo = sections["memo"]
            in_memo = False
            if memo and memo["status"] == "ready":
                if memo["summary_id"] not in covered:
                    ids = Summary.objects.get(public_id=memo["summary_id"]).covered_ids
                    covered[memo["summary_id"]] = set(ids)
                in_memo = question.public_id in covered[memo["summary_id"]]
            last = assembly.messages[-1]
            if (
                sections["recent"][-1] != question.public_id
                or question.public_id in sections["dropped"]
                or in_memo
                or last != {"role": "user", "content": question.content}
            ):
                violations += 1

            pending = assembly.pending_memo
            if (
                pending
                and Summary.objects.filter(
                    public_id=pending["summary_id"], status="pending"
                ).exists()
            ):
                before = counter.total
                started = time.perf_counter()
                summary_id = Summary.objects.get(public_id=pending["summary_id"]).pk
                compaction_services.summary_write(summary_id=summary_id)
                writer_seconds.append(time.perf_counter() - started)
                writer_tokens += counter.total - before
                calls += 1
            if (index + 1) % 1000 == 0:
                elapsed = time.perf_counter() - started_all
                print(f"  {index + 1:,} turns, {calls} memos, {elapsed:.0f}s", flush=True)

        first, last = turn_seconds[:EDGE], turn_seconds[-EDGE:]
        per_1000 = calls * 1000 / TURNS
        flat = statistics.median(last) / statistics.median(first)
        print(
            f"\n{TURNS:,}-turn conversation on {backend} (window {WINDOW:,}, reserve {RESERVE:,})"
        )
        print(
            f"  per-turn time (append + context + append), first {EDGE}: "
            f"p50 {statistics.median(first) * 1e3:.2f} ms, "
            f"p99 {percentile(first, 0.99) * 1e3:.2f} ms"
        )
        print(
            f"  per-turn time, last {EDGE}:  p50 {statistics.median(last) * 1e3:.2f} ms, "
            f"p99 {percentile(last, 0.99) * 1e3:.2f} ms  (last/first p50 ratio {flat:.2f})"
        )
        print(
            f"  tokens through the tokenizer per turn on the hot path: "
            f"mean {statistics.mean(hot_tokens):.0f}, last {EDGE} mean "
            f"{statistics.mean(hot_tokens[-EDGE:]):.0f} (the two new messages, counted once; "
            f"the system prompt's count is cached)"
        )
        print(
            f"  memo writer (off the hot path): {calls} calls = {per_1000:.1f} per 1,000 turns "
            f"(limit {MAX_CALLS_PER_1000}); {writer_tokens / TURNS:.0f} tokens tokenised per turn "
            f"on average; median {statistics.median(writer_seconds) * 1e3:.0f} ms per memo, "
            f"max {max(writer_seconds) * 1e3:.0f} ms (rebuilds from the originals)"
            if writer_seconds
            else "  memo writer: never called"
        )
        print(f"  current turn lost, dropped or summarised: {violations} of {TURNS:,} turns")
        ok = per_1000 <= MAX_CALLS_PER_1000 and violations == 0
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
