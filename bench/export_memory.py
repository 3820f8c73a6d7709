"""Peak memory of streaming a full-history export: 1,000 vs 100,000 messages; or, with
``--encryption``, the cost of exporting a sealed history against a clear one.

    .venv/bin/python bench/export_memory.py [--small 1000] [--large 100000]
    .venv/bin/python bench/export_memory.py --encryption [--large 100000] [--rounds 3]

Builds two threads in a scratch database (created and dropped here, as is a scratch keys
database; your data is not touched), each message with its ``message.appended`` audit event as
in real use, then streams each export (``json`` and ``jsonl``) through ``audit.exports`` and
measures the peak of Python allocations with ``tracemalloc``. The export reads in batches of
``CONVMEM_EXPORT_BATCH_SIZE`` rows, so the peak must not follow the history: the large/small
ratio must stay <= 2.

``--encryption`` (issue 23) builds two threads of ``--large`` messages, one written with
``CONVMEM_ENCRYPT_CONTENT`` on (every message sealed with its subject's key) and one without,
plus a small sealed one, then exports them (``json``) alternately, sealed and clear in turn,
``--rounds`` times each: the median time sealed / clear must stay <= 1.3, and the sealed
export's peak memory must not follow the history (large / small <= 2, as above) nor exceed the
clear one's by more than the same factor. Each export starts with an empty key cache, as a
fresh process would. Uses ``DATABASE_URL`` like the app (SQLite by default).
"""

import argparse
import gc
import os
import statistics
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
from django.db import connection, connections  # noqa: E402

from audit.exports import export_begin  # noqa: E402
from auditlog.events import Actor  # noqa: E402
from auditlog.models import AuditEvent  # noqa: E402
from convmem import crypto  # noqa: E402
from convmem.models import Tenant  # noqa: E402
from threads import services  # noqa: E402
from threads.models import Message, Thread  # noqa: E402

BENCH = Actor.system("bench.export_memory")
LIMIT = 2.0
MAX_ENCRYPTION_RATIO = 1.3


def build_thread(tenant: Tenant, n: int, *, sealed: bool = False) -> Thread:
    """A thread of ``n`` messages in one chain, bulk-inserted with explicit keys (each row
    names the previous one as parent), plus one audit event per message. ``sealed``: written
    with encryption on (``bulk_create`` seals each row with the subject's key)."""
    settings.CONVMEM_ENCRYPT_CONTENT = sealed
    user_ref = f"user-{n}-{'sealed' if sealed else 'clear'}"
    thread = services.thread_create(tenant=tenant, actor=BENCH, user_ref=user_ref)
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
    crypto.key_cache.clear()
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


def export_seconds(tenant: Tenant, thread: Thread, fmt: str) -> float:
    """Seconds to stream one export to the end (no tracing: tracemalloc slows Python down)."""
    export = export_begin(tenant=tenant, actor=BENCH, thread=thread, fmt=fmt)
    crypto.key_cache.clear()
    gc.collect()
    started = time.perf_counter()
    for _chunk in export.chunks():
        pass
    return time.perf_counter() - started


def encryption_cost(tenant: Tenant, small: int, large: int, rounds: int) -> bool:
    """Sealed vs clear exports of the same history, alternated; True within the goals."""
    threads = {
        "clear": build_thread(tenant, large),
        "sealed": build_thread(tenant, large, sealed=True),
        "sealed-small": build_thread(tenant, small, sealed=True),
    }
    with connection.cursor() as cursor:
        cursor.execute("ANALYZE")
    fmt = "json"
    seconds: dict[str, list[float]] = {"clear": [], "sealed": []}
    for i in range(rounds):
        # Alternate which goes first, so a warming cache or a busy neighbour favours neither.
        for mode in ("clear", "sealed") if i % 2 == 0 else ("sealed", "clear"):
            seconds[mode].append(export_seconds(tenant, threads[mode], fmt))
    peaks = {mode: peak_bytes(tenant, thread, fmt)[0] for mode, thread in threads.items()}
    median = {mode: statistics.median(times) for mode, times in seconds.items()}
    ratio = median["sealed"] / median["clear"]
    flat = peaks["sealed"] / peaks["sealed-small"]
    versus_clear = peaks["sealed"] / peaks["clear"]
    for mode in ("clear", "sealed"):
        times = ", ".join(f"{t:.2f}" for t in seconds[mode])
        print(
            f"{mode:6} {large:>8,} messages: median {median[mode]:6.2f} s ({times}), "
            f"peak {peaks[mode] / 1024:8.0f} KiB"
        )
    print(f"sealed {small:>8,} messages: peak {peaks['sealed-small'] / 1024:8.0f} KiB")
    ok = ratio <= MAX_ENCRYPTION_RATIO and flat <= LIMIT and versus_clear <= LIMIT
    print(
        f"time sealed / clear = {ratio:.3f} (goal {MAX_ENCRYPTION_RATIO}); peak sealed "
        f"{large:,} / {small:,} = {flat:.2f}, sealed / clear = {versus_clear:.2f} "
        f"(limit {LIMIT}) {'ok' if ok else 'FAIL'}"
    )
    return ok


def _scratch_database(alias: str) -> str:
    """Create a scratch database in place of ``alias``'s; returns the real one's name."""
    wrapper = connections[alias]
    test_settings = wrapper.settings_dict.setdefault("TEST", {})
    if wrapper.vendor == "sqlite":
        test_settings["NAME"] = str(Path(settings.VAR_DIR) / f"bench-export-memory-{alias}.sqlite3")
    else:
        test_settings["NAME"] = f"bench_export_{wrapper.settings_dict['NAME']}"
    old_name = wrapper.settings_dict["NAME"]
    wrapper.creation.create_test_db(verbosity=0, autoclobber=True, serialize=False)
    return old_name


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--small", type=int, default=1_000)
    parser.add_argument("--large", type=int, default=100_000)
    parser.add_argument(
        "--encryption", action="store_true", help="sealed vs clear export (issue 23)"
    )
    parser.add_argument("--rounds", type=int, default=3, help="exports of each (--encryption)")
    args = parser.parse_args()
    settings.DEBUG = False  # as in production: no query log
    # Scratch copies of the content database and of the data keys' own database.
    scratch = {alias: _scratch_database(alias) for alias in ("default", "keys")}
    try:
        tenant = Tenant.objects.create(name="bench")
        print(f"database: {connection.vendor}, batch size {settings.CONVMEM_EXPORT_BATCH_SIZE}")
        if args.encryption:
            return 0 if encryption_cost(tenant, args.small, args.large, args.rounds) else 1
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
        for alias, old_name in scratch.items():
            connections[alias].creation.destroy_test_db(old_name, verbosity=0)


if __name__ == "__main__":
    sys.exit(main())
