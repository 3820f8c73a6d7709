"""Context assembly for threads of 100 … 100,000 messages (window 8,192, reserve 1,024).

Each thread is bulk-built with realistic turns (user ~30, assistant ~90 tokens, counted with
the real tokenizer), then brought to its steady state: the first assembly asks for a memo of
the older range, the memo writer runs inline (here, in place of the worker), and from then on
assemblies use it. Timed: ``context_assemble`` (the service: bounded read, curate, render,
record) and ``POST /api/v1/threads/{id}/context`` (plus auth, parsing, serialising), each
thread interleaved with the 100-message one. Printed: medians and the ratio to 100 messages
(limit 1.5), and the curator's own time against one indexed SELECT of the window's rows.

    .venv/bin/python bench/context_assembly.py                      # SQLite (temporary file)
    DATABASE_URL=postgres://postgres@127.0.0.1:5432/x .venv/bin/python bench/context_assembly.py
"""

import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench import bench_database, interleaved

SIZES = (100, 1_000, 10_000, 100_000)
WINDOW = 8_192
RESERVE = 1_024
SYSTEM = (
    "You are the support assistant of a furniture shop. Answer briefly, quote order and "
    "ticket numbers exactly, and never promise refunds the policy does not allow."
)
MAX_RATIO = 1.5
REPETITIONS = 60


def _turn(index: int) -> tuple[str, str]:
    if index % 2 == 0:
        return "user", (
            f"About order ORD-{10_000 + index}: the desk arrived with a scratch on the left leg, "
            f"can you send a replacement part before Friday?"
        )
    return "assistant", (
        f"Thanks for the photos. I have opened ticket TCK-{20_000 + index} for order "
        f"ORD-{10_000 + index - 1}: a replacement leg ships from the Leipzig warehouse within two "
        "business days, tracking follows by email. If the new part does not fit, reply here and "
        "we will arrange a pick-up of the whole desk at no cost to you; the refund of 649.00 EUR "
        "stays available until the end of the month."
    )


def build_thread(tenant: object, actor: object, size: int) -> object:
    """A thread whose active path holds ``size`` messages, bulk-inserted with explicit ids."""
    from django.core.management.color import no_style
    from django.db import connection, transaction
    from django.db.models import Max

    from convmem.tokens import count_tokens
    from threads import services
    from threads.models import Message, Thread

    thread = services.thread_create(tenant=tenant, actor=actor, user_ref=f"bench-{size}")
    first = Message.objects.aggregate(top=Max("id"))["top"] + 1
    counts: dict[str, int] = {}
    rows = []
    for i in range(size):
        role, content = _turn(i)
        rows.append(
            Message(
                id=first + i,
                public_id=f"msg_b{size}x{i}",
                thread=thread,
                parent_id=thread.root_id if i == 0 else first + i - 1,
                role=role,
                content=content,
                token_count=counts.setdefault(content, count_tokens(content)),
                depth=i + 1,
            )
        )
    with transaction.atomic():
        Message.objects.bulk_create(rows, batch_size=5_000)
        with connection.cursor() as cursor:
            for sql in connection.ops.sequence_reset_sql(no_style(), [Message]):
                cursor.execute(sql)
        Thread.objects.filter(pk=thread.pk).update(active_leaf_id=first + size - 1)
    return Thread.objects.select_related("profile", "active_leaf").get(pk=thread.pk)


def settle(thread: object, actor: object) -> str:
    """Assemble until no memo is pending, writing requested memos inline; returns the status."""
    from compaction import services
    from compaction.context import context_assemble
    from compaction.models import Summary

    for _ in range(5):
        assembly = context_assemble(
            thread=thread, actor=actor, window_tokens=WINDOW, reserve_tokens=RESERVE, system=SYSTEM
        )
        if assembly.memo_status != "pending":
            return assembly.memo_status
        for pk in Summary.objects.filter(thread=thread, status="pending").values_list(
            "pk", flat=True
        ):
            services.summary_write(summary_id=pk)
    raise RuntimeError("memo requests did not settle")


def curator_vs_select(thread: object) -> tuple[float, float, int]:
    """Median seconds of ``curate`` alone and of one indexed SELECT of the window's rows: the
    rows the bounded read found the window could hold (what the curator decides over)."""
    from django.conf import settings
    from django.db import connection

    from compaction import selectors
    from compaction.curator import Budget, Memo, Turn, curate
    from compaction.profiles import thread_profile
    from convmem.tokens import count_tokens, system_section_tokens
    from threads.models import Message

    profile = thread_profile(thread)
    budget = Budget(
        window=WINDOW, reserve=RESERVE, system=system_section_tokens(count_tokens(SYSTEM))
    )
    stretch = selectors.context_stretch(
        thread=thread,
        leaf_id=thread.active_leaf_id,
        budget=budget.available,
        lookahead=budget.available * settings.CONVMEM_CONTEXT_LOOKAHEAD_WINDOWS,
        per_message_overhead=profile.policy.message_overhead,
        max_rows=settings.CONVMEM_CONTEXT_MAX_ROWS,
    )
    rows = [row for row in stretch if row.role != "root"]
    summaries = selectors.summaries_ending_on(thread=thread, message_ids=[r.id for r in rows])
    path = [Turn(r.id, r.role, r.token_count) for r in rows]
    memos = [
        Memo(s.id, s.first_id, s.last_id, s.token_count) for s in summaries if s.status == "ready"
    ]
    head = None
    if rows[0].depth != 1:
        first = Message.objects.get(parent_id=thread.root_id)
        head = Turn(first.id, first.role, first.token_count)
    window_rows = len(path)
    sql = (
        "SELECT id, role, token_count, content FROM threads_message "
        "WHERE thread_id = %s ORDER BY id DESC LIMIT %s"
    )
    curator_times, select_times = [], []
    for _ in range(500):
        started = time.perf_counter()
        curate(path, memos, budget, profile.policy, head=head)
        curator_times.append(time.perf_counter() - started)
        started = time.perf_counter()
        with connection.cursor() as cursor:
            cursor.execute(sql, [thread.pk, window_rows])
            cursor.fetchall()
        select_times.append(time.perf_counter() - started)
    return statistics.median(curator_times), statistics.median(select_times), window_rows


def main() -> int:
    with bench_database() as backend:
        from rest_framework.test import APIClient

        from auditlog.events import Actor
        from compaction.context import context_assemble
        from convmem.tenancy import tenant_create

        tenant, _, key = tenant_create(name="bench-context")
        actor = Actor.system("bench")
        client = APIClient()
        client.credentials(HTTP_AUTHORIZATION=f"Bearer {key}")
        started = time.perf_counter()
        threads = {size: build_thread(tenant, actor, size) for size in SIZES}
        print(f"built {sum(SIZES):,} messages in {time.perf_counter() - started:.1f}s")
        for size, thread in threads.items():
            print(f"  {size:>7,} messages: memo {settle(thread, actor)}")

        def service(thread: object) -> None:
            context_assemble(
                thread=thread,
                actor=actor,
                window_tokens=WINDOW,
                reserve_tokens=RESERVE,
                system=SYSTEM,
            )

        def api(thread: object) -> None:
            response = client.post(
                f"/api/v1/threads/{thread.public_id}/context",
                {"window_tokens": WINDOW, "reserve_tokens": RESERVE, "system": SYSTEM},
                format="json",
            )
            assert response.status_code == 200, response.content[:300]

        ok = True
        base = threads[SIZES[0]]
        print(f"\ncontext assembly on {backend} (window {WINDOW:,}, reserve {RESERVE:,})")
        for label, run in (("service", service), ("API", api)):
            for size in SIZES[1:]:
                small, big = interleaved(
                    lambda run=run: run(base),
                    lambda run=run, size=size: run(threads[size]),
                    repetitions=REPETITIONS,
                    warmup=5,
                )
                ratio = statistics.median(big) / statistics.median(small)
                verdict = "OK" if ratio <= MAX_RATIO else "FAIL"
                ok &= ratio <= MAX_RATIO
                print(
                    f"  {label:>7}: {statistics.median(small) * 1e3:7.2f} ms at {SIZES[0]:,}, "
                    f"{statistics.median(big) * 1e3:7.2f} ms at {size:>7,}  "
                    f"ratio {ratio:.2f} (limit {MAX_RATIO}) {verdict}"
                )
        curator, select, rows = curator_vs_select(threads[SIZES[-1]])
        ok &= curator < select
        print(
            f"\ncurator alone: {curator * 1e6:.0f} µs; one indexed SELECT of the window's {rows} "
            f"rows: {select * 1e6:.0f} µs; ratio {curator / select:.2f} (must be < 1) "
            f"{'OK' if curator < select else 'FAIL'}"
        )
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
