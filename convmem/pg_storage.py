"""PostgreSQL: the B-tree indexes that only grow at their right edge are filled to the brim.

When a B-tree leaf page splits at the right edge of its key range — every insert into an index
whose key grows with each row: a serial key, a creation time, ``(thread, id)`` within a
thread — PostgreSQL leaves the old page ``fillfactor`` percent full and carries on in the new
one. The default is 90: a tenth of each such page is kept free for keys that would fall inside
it, and none ever does here (messages, assembly records and audit events are inserted with
ever larger ids and times and never deleted). ``fillfactor = 100`` fills those pages (issue 24,
stored bytes). Indexes on random keys (the public ids) split in the middle whatever the
setting and keep the default; so does the GIN index (``threads.search``).

The setting governs splits from now on: pages written before keep their free tenth until the
index is rebuilt (``REINDEX INDEX CONCURRENTLY``, ``docs/upgrading.md``). Changing it takes a
``SHARE UPDATE EXCLUSIVE`` lock, which blocks neither reads nor writes. SQLite has no such
setting. A later migration that rebuilds one of these indexes must set it again
(``tests/convmem/test_pg_storage.py`` checks it after ``migrate``).
"""

from django.db.backends.base.schema import BaseDatabaseSchemaEditor

# Each table's append-only indexes, by their key columns in order (names are Django's and
# PostgreSQL's own, some with hashes; the catalog finds them by their columns).
APPEND_ONLY_INDEXES: dict[str, tuple[tuple[str, ...], ...]] = {
    "threads_message": (("id",), ("thread_id", "id"), ("thread_id", "depth")),
    "compaction_assemblyrecord": (("id",),),
    "auditlog_auditevent": (("id",), ("created_at",), ("thread_public_id", "id")),
}
FILLFACTOR = 100

_INDEX_BY_COLUMNS = """
    SELECT i.relname FROM pg_index x JOIN pg_class i ON i.oid = x.indexrelid
    WHERE x.indrelid = %s::regclass AND x.indpred IS NULL AND x.indexprs IS NULL
      AND ARRAY(
        SELECT a.attname::text
        FROM unnest(x.indkey::int2[]) WITH ORDINALITY AS k(attnum, n)
        JOIN pg_attribute a ON a.attrelid = x.indrelid AND a.attnum = k.attnum
        ORDER BY k.n
      ) = %s::text[]
"""


def append_only_index_names(cursor, table: str) -> list[str]:
    """The names of ``table``'s indexes listed in ``APPEND_ONLY_INDEXES``, as they exist."""
    names = []
    for columns in APPEND_ONLY_INDEXES[table]:
        cursor.execute(_INDEX_BY_COLUMNS, [table, list(columns)])
        names += [name for (name,) in cursor.fetchall()]
    return names


def indexes_fill(schema_editor: BaseDatabaseSchemaEditor, table: str) -> None:
    """Set ``fillfactor = 100`` on ``table``'s append-only indexes (PostgreSQL only)."""
    _indexes_set(schema_editor, table, f"SET (fillfactor = {FILLFACTOR})")


def indexes_fill_default(schema_editor: BaseDatabaseSchemaEditor, table: str) -> None:
    """Back to PostgreSQL's default fill (the reverse of ``indexes_fill``)."""
    _indexes_set(schema_editor, table, "RESET (fillfactor)")


def _indexes_set(schema_editor: BaseDatabaseSchemaEditor, table: str, change: str) -> None:
    connection = schema_editor.connection
    if connection.vendor != "postgresql":
        return
    with connection.cursor() as cursor:
        for name in append_only_index_names(cursor, table):
            cursor.execute(f'ALTER INDEX "{name}" {change}')
