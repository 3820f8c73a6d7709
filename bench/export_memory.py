"""Peak memory of streaming a full-history export: 1,000 vs 100,000 messages.

    .venv/bin/python bench/export_memory.py [--small 1000] [--large 100000]

Builds two threads in a scratch database (created and dropped here; your data is not
touched), each message with its ``message.appended`` audit event as in real use, then streams
each export (``json`` and ``jsonl``) through ``audit.exports`` and measures the peak of Python
allocations with ``tracemalloc``. The export reads in batches of ``CONVMEM_EXPORT_BATCH_SIZE``
rows, so the peak must not follow the history: the large/small ratio must stay <= 2.
Uses ``DATABASE_URL`` like the app (SQLite by default).
"""

import argparse
import gc
import os
import sys
import time
import tracemalloc
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "convmem.settings")

import django

django.setup()

from django.conf import settings  # noqa: E402
from django.core.management.color import no_style  # noqa: E402
from django.db import connection  # noqa: E402

from audit.exports import export_begin  # noqa: E402
from auditlog.events import Actor  # noqa: E402
from auditlog.models import AuditEvent  # noqa: E402
from convmem.models import Tenant  # noqa: E402
from threads import services  # noqa: E402
from threads.models import Message, Thread  # noqa: E402

BENCH = Actor.system("bench.export_memory")
LIMIT = 2.0


def build_thread(tenant: Tenant, n: int) -> Thread:
    """A thread of ``n`` messages in one chain, bulk-inserted with explicit keys (each row
    names the previous one as parent), plus one audit event per message."""
    thread = services.thread_create(tenant=tenant, actor=BENCH, user_ref=f"user-{n}")
    start = Message.objects.order_by("-pk").values_list("pk", flat=True).first() + 1
    for offset in range(0, n, 5000):
        rows = range(offset, min(n, offset + 5000))
        messages = [
            Message(
                pk=start + i,
                thread=thread,
                parent_id=thread.root_id if i == 0 else start + i - 1,
                role="user" if i % 2 == 0 else "assistant",
                content=f"Message {i}: the order ORD-{i:06d} shipped on 2026-11-05 to Leipzig.",
                token_count=24,
                depth=i + 1,
            )
            for i in rows
        ]
        Message.objects.bulk_create(messages)
        AuditEvent.objects.bulk_create(
            AuditEvent(
                tenant=tenant,
                actor_type="system",
                actor_id=BENCH.id,
                action="message.appended",
                thread_public_id=thread.public_id,
                object_ids=[m.public_id],
                details={"role": m.role, "tokens": 24},
            )
            for m in messages
        )
    with connection.cursor() as cursor:
        for sql in connection.ops.sequence_reset_sql(no_style(), [Message]):
            cursor.execute(sql)
    Thread.objects.filter(pk=thread.pk).update(active_leaf_id=start + n - 1)
    return Thread.objects.get(pk=thread.pk)


def peak_bytes(tenant: Tenant, thread: Thread, fmt: str) -> tuple[int, int, float]:
    """(peak traced bytes, characters streamed, seconds) of one export."""
    export = export_begin(tenant=tenant, actor=BENCH, thread=thread, fmt=fmt)
    gc.collect()
    tracemalloc.start()
    started = time.perf_counter()
    size = 0
    for chunk in export.chunks():
        size += len(chunk)
    elapsed = time.perf_counter() - started
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    return peak, size, elapsed


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--small", type=int, default=1_000)
    parser.add_argument("--large", type=int, default=100_000)
    args = parser.parse_args()
    settings.DEBUG = False  # as in production: no query log
    test_settings = connection.settings_dict.setdefault("TEST", {})
    if connection.vendor == "sqlite":
        test_settings["NAME"] = str(Path(settings.VAR_DIR) / "bench-export-memory.sqlite3")
    else:
        test_settings["NAME"] = f"bench_export_{connection.settings_dict['NAME']}"
    old_name = connection.settings_dict["NAME"]
    connection.creation.create_test_db(verbosity=0, autoclobber=True, serialize=False)
    try:
        tenant = Tenant.objects.create(name="bench")
        print(f"database: {connection.vendor}, batch size {settings.CONVMEM_EXPORT_BATCH_SIZE}")
        threads = {n: build_thread(tenant, n) for n in (args.small, args.large)}
        with connection.cursor() as cursor:
            cursor.execute("ANALYZE")  # fresh statistics, as autovacuum would keep them
        ok = True
        for fmt in ("json", "jsonl"):
            results = {n: peak_bytes(tenant, thread, fmt) for n, thread in threads.items()}
            for n, (peak, size, elapsed) in results.items():
                print(
                    f"{fmt:5} {n:>8,} messages: peak {peak / 1024:8.0f} KiB, "
                    f"streamed {size / 1_048_576:7.1f} MiB in {elapsed:5.1f} s"
                )
            ratio = results[args.large][0] / results[args.small][0]
            verdict = "ok" if ratio <= LIMIT else "FAIL"
            ok = ok and ratio <= LIMIT
            print(
                f"{fmt:5} peak ratio {args.large:,} / {args.small:,} = {ratio:.2f} "
                f"(limit {LIMIT}) {verdict}"
            )
        return 0 if ok else 1
    finally:
        connection.creation.destroy_test_db(old_name, verbosity=0)


if __name__ == "__main__":
    sys.exit(main())
