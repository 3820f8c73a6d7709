"""Shared set-up for the benchmarks: a dedicated database, Django, and a bulk-built data set.

The benchmarks never touch the development or test databases. With ``DATABASE_URL`` pointing
at PostgreSQL they create (and afterwards drop) the database ``convmem_bench`` on the same
server (``CONVMEM_BENCH_DB`` overrides the name); otherwise they use a SQLite file in a
temporary directory. Either way the database is configured before ``django.setup()``.
"""

import base64
import os
import statistics
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import urlsplit, urlunsplit

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

OTHER_THREADS = 200
OTHER_MESSAGES = 500
SMALL = 100
BIG = 100_000
MAX_RATIO = 1.5


@contextmanager
def bench_database(*, keep_redis: bool = False) -> Iterator[str]:
    """Configure Django for a fresh benchmark database, migrate it, and drop it afterwards.

    Yields a label for the report ("postgresql" or "sqlite"). ``REDIS_URL`` is dropped (a
    locmem cache and a filesystem broker: nothing shared) unless ``keep_redis`` (a bench that
    runs a real worker on the production broker).
    """
    url = os.environ.get("DATABASE_URL", "")
    if not keep_redis:
        os.environ.pop("REDIS_URL", None)
    os.environ.update(
        DEBUG="0",  # no query log; DEBUG=0 then needs the two settings below for APIClient
        SECURE_SSL_REDIRECT="0",
        ALLOWED_HOSTS="testserver",
        API_RATE="100000000/min",
        LOG_LEVEL="WARNING",
    )
    # DEBUG=0 requires a master key: a throwaway one for the throwaway database.
    os.environ.setdefault("CONVMEM_MASTER_KEY", base64.b64encode(os.urandom(32)).decode())
    with tempfile.TemporaryDirectory(prefix="convmem-bench-") as var_dir:
        os.environ["CONVMEM_VAR_DIR"] = var_dir
        if url.startswith(("postgres://", "postgresql://")):
            name = os.environ.get("CONVMEM_BENCH_DB", "convmem_bench")
            parts = urlsplit(url)
            admin_url = urlunsplit(parts._replace(path="/postgres"))
            _pg_admin(admin_url, f'DROP DATABASE IF EXISTS "{name}"', f'CREATE DATABASE "{name}"')
            os.environ["DATABASE_URL"] = urlunsplit(parts._replace(path=f"/{name}"))
            try:
                _setup_django()
                yield "postgresql"
            finally:
                from django.db import connections

                connections.close_all()
                _pg_admin(admin_url, f'DROP DATABASE IF EXISTS "{name}"')
        else:
            os.environ["DATABASE_URL"] = f"sqlite:///{var_dir}/bench.sqlite3"
            _setup_django()
            yield "sqlite"


def _pg_admin(url: str, *statements: str) -> None:
    import psycopg

    with psycopg.connect(url, autocommit=True) as conn:
        for statement in statements:
            conn.execute(statement)


def _setup_django() -> None:
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "convmem.settings")
    import django
    from django.core.management import call_command

    django.setup()
    call_command("migrate", verbosity=0)
    # The data keys' own database (SQLite in the temporary CONVMEM_VAR_DIR unless
    # CONVMEM_KEYS_DATABASE_URL says otherwise).
    call_command("migrate", database="keys", verbosity=0)


@dataclass(frozen=True)
class DataSet:
    tenant: object
    small: object  # a Thread whose active path holds SMALL messages
    big: object  # a Thread whose active path holds BIG messages


def build_data_set(progress: Callable[[str], None] = print) -> DataSet:
    """OTHER_THREADS threads of OTHER_MESSAGES messages, then one thread of BIG and one of SMALL.

    Threads and their hidden roots come from the services; the message chains are bulk-inserted
    with explicit ids (so each row can name its parent) and the id sequence is moved past them.
    """
    from auditlog.events import Actor
    from convmem.tenancy import tenant_create

    started = time.perf_counter()
    tenant, _, _ = tenant_create(name="bench")
    actor = Actor.system("bench")
    _bulk_threads(tenant, actor, count=OTHER_THREADS, messages=OTHER_MESSAGES)
    (big,) = _bulk_threads(tenant, actor, count=1, messages=BIG)
    (small,) = _bulk_threads(tenant, actor, count=1, messages=SMALL)
    from django.db import connection

    with connection.cursor() as cursor:
        if connection.vendor == "postgresql":
            cursor.execute("VACUUM ANALYZE")
        else:
            cursor.execute("ANALYZE")
    total = OTHER_THREADS * OTHER_MESSAGES + BIG + SMALL
    progress(f"built {total:,} messages in {time.perf_counter() - started:.1f}s")
    return DataSet(tenant=tenant, small=small, big=big)


def _bulk_threads(tenant: object, actor: object, *, count: int, messages: int) -> list:
    from django.core.management.color import no_style
    from django.db import connection, transaction
    from django.db.models import Max

    from threads import services
    from threads.models import Message, Thread

    threads = [
        services.thread_create(tenant=tenant, actor=actor, user_ref=f"user-{i % 50}")
        for i in range(count)
    ]
    first = Message.objects.aggregate(top=Max("id"))["top"] + 1
    rows = []
    for t, thread in enumerate(threads):
        start = first + t * messages
        rows.extend(
            Message(
                id=start + i,
                public_id=f"msg_bench{start + i}",
                thread=thread,
                parent_id=thread.root_id if i == 0 else start + i - 1,
                role="user" if i % 2 == 0 else "assistant",
                content=f"message {i} of a benchmark thread",
                token_count=8,
                depth=i + 1,
            )
            for i in range(messages)
        )
    with transaction.atomic():
        Message.objects.bulk_create(rows, batch_size=5_000)
        with connection.cursor() as cursor:
            for sql in connection.ops.sequence_reset_sql(no_style(), [Message]):
                cursor.execute(sql)
        for t, thread in enumerate(threads):
            thread.active_leaf_id = first + (t + 1) * messages - 1
            Thread.objects.filter(pk=thread.pk).update(active_leaf_id=thread.active_leaf_id)
    for thread in threads:
        thread.refresh_from_db()
    return threads


def interleaved(
    small: Callable[[], None],
    big: Callable[[], None],
    *,
    repetitions: int,
    warmup: int,
    untimed: Callable[[], None] = lambda: None,
) -> tuple[list[float], list[float]]:
    """Time ``small`` and ``big`` alternately (swapping which goes first each round), so drift
    in the machine's speed affects both alike; ``untimed`` runs after each call, off the clock.
    Returns the two lists of seconds."""
    for _ in range(warmup):
        for run in (small, big):
            run()
            untimed()
    timings: dict[str, list[float]] = {"small": [], "big": []}
    for round_ in range(repetitions):
        order = (("small", small), ("big", big))
        for name, run in order if round_ % 2 == 0 else order[::-1]:
            started = time.perf_counter()
            run()
            timings[name].append(time.perf_counter() - started)
            untimed()
    return timings["small"], timings["big"]


def report(title: str, backend: str, small: list[float], big: list[float]) -> bool:
    """Print medians and the BIG/SMALL ratio; True when the ratio is within MAX_RATIO."""
    small_median = statistics.median(small)
    big_median = statistics.median(big)
    ratio = big_median / small_median
    ok = ratio <= MAX_RATIO
    print(
        f"{title} on {backend}: median {small_median * 1e3:.3f} ms at {SMALL:,} messages, "
        f"{big_median * 1e3:.3f} ms at {BIG:,} messages ({len(small)} runs each)\n"
        f"  ratio {BIG:,}/{SMALL:,} = {ratio:.2f} (limit {MAX_RATIO}) -> {'OK' if ok else 'FAIL'}"
    )
    return ok


# What a conversation stores, by table: the record itself and everything derived from it.
STORED_TABLES = (
    "threads_message",
    "compaction_assemblyrecord",
    "compaction_summary",
    "compaction_contentblob",
    "compaction_renderedpiece",
    "auditlog_auditevent",
)


# The full-text index over message content (``threads.search``), counted apart from the
# tables: PostgreSQL's GIN index lives inside ``threads_message``'s total, SQLite's FTS5
# table (with its copy of each message's text) in tables of its own.
SEARCH_INDEX = "search index"


def stored_bytes() -> tuple[dict[str, int], int]:
    """(bytes per table of ``STORED_TABLES`` — rows, out-of-line values and indexes — and of
    ``SEARCH_INDEX``, bytes of message content). PostgreSQL: ``pg_total_relation_size`` (the
    search index's ``pg_relation_size`` taken out of the messages' figure); SQLite: the pages
    of each table and of its indexes, and of the FTS5 table's shadow tables (``dbstat``)."""
    from django.db import connection

    from threads.search import FTS_TABLE, PG_INDEX

    with connection.cursor() as cursor:
        if connection.vendor == "postgresql":
            cursor.execute("SELECT COALESCE(SUM(octet_length(content)), 0) FROM threads_message")
            content = cursor.fetchone()[0]
            cursor.execute(
                "SELECT name, pg_total_relation_size(name::regclass) "
                "FROM unnest(%s::text[]) AS name",
                [list(STORED_TABLES)],
            )
            tables = {name: int(size) for name, size in cursor.fetchall()}
            cursor.execute("SELECT pg_relation_size(%s::regclass)", [PG_INDEX])
            search = int(cursor.fetchone()[0])
            tables["threads_message"] -= search
        else:
            cursor.execute(
                "SELECT COALESCE(SUM(LENGTH(CAST(content AS BLOB))), 0) FROM threads_message"
            )
            content = cursor.fetchone()[0]
            placeholders = ", ".join(["%s"] * len(STORED_TABLES))
            cursor.execute(
                f"SELECT s.tbl_name, SUM(d.pgsize) FROM dbstat d "
                f"JOIN sqlite_schema s ON s.name = d.name "
                f"WHERE s.tbl_name IN ({placeholders}) GROUP BY s.tbl_name",
                list(STORED_TABLES),
            )
            tables = {name: int(size) for name, size in cursor.fetchall()}
            cursor.execute(
                "SELECT COALESCE(SUM(pgsize), 0) FROM dbstat WHERE name LIKE %s",
                [f"{FTS_TABLE}%"],
            )
            search = int(cursor.fetchone()[0])
        return {**tables, SEARCH_INDEX: search}, int(content)


def stored_bytes_detail() -> list[tuple[str, str, int]]:
    """Where the bytes of ``STORED_TABLES`` are: (table, column or index, bytes), largest first.

    Columns are the values as stored (PostgreSQL ``pg_column_size``, after compression; SQLite
    ``LENGTH`` of the value as a blob, integers as 8 bytes) and do not include row headers or
    page slack; indexes are their whole relations (PostgreSQL ``pg_relation_size``, SQLite
    ``dbstat`` pages)."""
    from django.db import connection

    found: list[tuple[str, str, int]] = []
    with connection.cursor() as cursor:
        for table in STORED_TABLES:
            columns = [
                c.name for c in connection.introspection.get_table_description(cursor, table)
            ]
            if connection.vendor == "postgresql":
                sizes = ", ".join(f'COALESCE(SUM(pg_column_size("{c}")), 0)' for c in columns)
            else:
                sizes = ", ".join(
                    f"COALESCE(SUM(CASE typeof(\"{c}\") WHEN 'integer' THEN 8 "
                    f"WHEN 'null' THEN 0 ELSE LENGTH(CAST(\"{c}\" AS BLOB)) END), 0)"
                    for c in columns
                )
            cursor.execute(f'SELECT {sizes} FROM "{table}"')
            found += [
                (table, c, int(size)) for c, size in zip(columns, cursor.fetchone(), strict=True)
            ]
            if connection.vendor == "postgresql":
                cursor.execute(
                    "SELECT i.relname, pg_relation_size(i.oid) FROM pg_index x "
                    "JOIN pg_class i ON i.oid = x.indexrelid WHERE x.indrelid = %s::regclass",
                    [table],
                )
            else:
                cursor.execute(
                    "SELECT d.name, SUM(d.pgsize) FROM dbstat d JOIN sqlite_schema s "
                    "ON s.name = d.name WHERE s.tbl_name = %s AND s.type = 'index' "
                    "GROUP BY d.name",
                    [table],
                )
            found += [(table, f"index {name}", int(size)) for name, size in cursor.fetchall()]
    return sorted(found, key=lambda row: -row[2])
