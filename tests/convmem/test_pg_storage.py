"""PostgreSQL's append-only indexes are filled to the brim after ``migrate``
(``convmem.pg_storage``), and the migrations undo it."""

import pytest
from django.db import connection
from django.db.migrations.executor import MigrationExecutor

from convmem.pg_storage import APPEND_ONLY_INDEXES, FILLFACTOR, append_only_index_names

# The migration before each app's ``*_append_only_indexes_filled``.
BEFORE = [
    ("threads", "0014_message_search_without_pending_list"),
    ("compaction", "0015_blob_per_subject_key"),
    ("auditlog", "0001_initial"),
]


def _fill(table: str) -> dict[str, list[str] | None]:
    """Each append-only index of ``table`` with its storage options."""
    with connection.cursor() as cursor:
        names = append_only_index_names(cursor, table)
        cursor.execute(
            "SELECT relname, reloptions FROM pg_class WHERE relname = ANY(%s::text[])", [names]
        )
        return dict(cursor.fetchall())


@pytest.mark.postgres
@pytest.mark.django_db
def test_the_append_only_indexes_fill_their_pages_after_migrate():
    for table, indexes in APPEND_ONLY_INDEXES.items():
        found = _fill(table)
        assert len(found) == len(indexes), table  # each listed index exists, found by columns
        assert all(options == [f"fillfactor={FILLFACTOR}"] for options in found.values()), found


@pytest.mark.postgres
@pytest.mark.django_db(transaction=True)
def test_the_migrations_reverse_to_the_default_fill():
    executor = MigrationExecutor(connection)
    executor.migrate(BEFORE)
    try:
        for table in APPEND_ONLY_INDEXES:
            assert set(_fill(table).values()) == {None}, table
    finally:
        executor = MigrationExecutor(connection)
        executor.migrate(executor.loader.graph.leaf_nodes())
    assert all(_fill(table) for table in APPEND_ONLY_INDEXES)
