"""Physical erasure: after content is erased, make the database files stop holding it.

Erasure (``audit.erasure``) replaces content in every row that held it, so no API, admin page,
export, replay, memo or cache returns it. The database engine may still hold the old bytes:

- PostgreSQL keeps an updated row's old version in the table file (and its TOAST table) until
  ``VACUUM`` prunes it, and even then the freed space is not overwritten until reused; only a
  rewrite (``VACUUM FULL``) leaves a file without it. The write-ahead log holds the old values
  until its segments are recycled and overwritten; WAL archives, replicas' WAL and backups
  hold them until their own retention ends.
- SQLite (with ``secure_delete``, set in the settings) zeroes freed cells, but its WAL file
  keeps old page images until a checkpoint truncates it.

``database_scrub`` goes as far as the database can: it waits until no transaction older than
the erasure is open (their snapshots keep old row versions alive), rewrites the content tables
(``VACUUM FULL``: an exclusive lock on each table while it runs — schedule it), and on
PostgreSQL forces a checkpoint and a WAL switch so the segments holding the old values can be
recycled; on SQLite it vacuums the file and truncates its WAL. What it cannot reach (archives,
replicas, backups) it names in ``warnings``. See ``docs/erasure.md``.
"""

import time
from dataclasses import dataclass, field
from datetime import datetime

from django.db import DatabaseError, connection
from django.db.models import Model
from django.utils import timezone

from compaction.models import AssemblyRecord, ContentBlob, Summary
from threads.models import IdempotencyRecord, Message, Thread
from threads.search import search_index_compact

# Every table a message's content (or a copy of it) is written to.
CONTENT_MODELS: tuple[type[Model], ...] = (
    Message,
    Thread,
    Summary,
    AssemblyRecord,
    ContentBlob,
    IdempotencyRecord,
)
POLL_SECONDS = 0.5


@dataclass
class Scrub:
    """What one scrub did, and what it could not do."""

    vendor: str
    tables: list[str] = field(default_factory=list)
    steps: list[str] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    waited_seconds: float = 0.0

    @property
    def complete(self) -> bool:
        return not self.warnings


def database_scrub(*, erased_before: datetime | None = None, wait_seconds: float = 60) -> Scrub:
    """Rewrite the content tables so their files no longer hold erased content (see the
    module docstring). ``erased_before``: when the erasures to scrub committed (default now);
    transactions that started earlier are waited for, up to ``wait_seconds``.

    Must run outside a transaction (``VACUUM`` cannot run inside one). Safe to run again.
    """
    if connection.in_atomic_block:
        raise RuntimeError("database_scrub must run outside a transaction (VACUUM)")
    erased_before = erased_before or timezone.now()
    tables = [model._meta.db_table for model in CONTENT_MODELS]
    if connection.vendor == "postgresql":
        return _scrub_postgresql(tables, erased_before, wait_seconds)
    return _scrub_sqlite(tables)


def _scrub_postgresql(tables: list[str], erased_before: datetime, wait_seconds: float) -> Scrub:
    scrub = Scrub(vendor="postgresql", tables=tables)
    started = time.monotonic()
    older = _older_transactions(erased_before)
    while older and time.monotonic() - started < wait_seconds:
        time.sleep(POLL_SECONDS)
        older = _older_transactions(erased_before)
    scrub.waited_seconds = round(time.monotonic() - started, 1)
    if older:
        scrub.warnings.append(
            f"{older} transaction(s) older than the erasure are still open; the old row "
            "versions they can see survive this scrub. Run it again once they end."
        )
    with connection.cursor() as cursor:
        for table in tables:
            cursor.execute(f"VACUUM (FULL, ANALYZE) {connection.ops.quote_name(table)}")
        scrub.steps.append(f"VACUUM FULL of {len(tables)} content tables (and their TOAST)")
        for statement, step in (
            ("CHECKPOINT", "checkpoint"),
            ("SELECT pg_switch_wal()", "WAL switch"),
            ("CHECKPOINT", "checkpoint"),
        ):
            try:
                cursor.execute(statement)
                scrub.steps.append(step)
            except DatabaseError as error:
                scrub.warnings.append(f"{step} not run ({error}); needs a privileged role")
                break
        scrub.warnings += _wal_retention_warnings(cursor)
    return scrub


def _older_transactions(erased_before: datetime) -> int:
    """Open transactions (in any database of the server: they hold back what VACUUM may
    remove, by their snapshot or their own transaction id) that started before the erasure
    committed, this connection's aside."""
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT count(*) FROM pg_stat_activity WHERE pid <> pg_backend_pid() "
            "AND (backend_xmin IS NOT NULL OR backend_xid IS NOT NULL) AND xact_start < %s",
            [erased_before],
        )
        return cursor.fetchone()[0]


def _wal_retention_warnings(cursor) -> list[str]:
    """What keeps WAL (and with it the old values) beyond this server's own segments."""
    warnings = []
    cursor.execute("SELECT current_setting('archive_mode'), current_setting('wal_keep_size')")
    archive_mode, keep_size = cursor.fetchone()
    if archive_mode != "off":
        warnings.append(
            "archive_mode is on: archived WAL segments keep the old values until the archive's "
            "retention removes them"
        )
    if keep_size not in ("0", "0MB"):
        warnings.append(f"wal_keep_size is {keep_size}: that much WAL is kept for replicas")
    cursor.execute("SELECT count(*) FROM pg_replication_slots")
    if cursor.fetchone()[0]:
        warnings.append("replication slots hold WAL until their replicas have consumed it")
    return warnings


def _scrub_sqlite(tables: list[str]) -> Scrub:
    scrub = Scrub(vendor="sqlite", tables=tables)
    if search_index_compact(connection):
        scrub.steps.append("search index merged (deleted words dropped)")
    with connection.cursor() as cursor:
        cursor.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        cursor.execute("VACUUM")
        cursor.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    scrub.steps += ["WAL checkpointed and truncated", "VACUUM (the file rewritten)"]
    return scrub
