"""The full-text index scoped by thread (``threads.search``): on PostgreSQL a GIN index on
(thread_id, document) through ``btree_gin`` replaces the document-only one; on SQLite the FTS5
table gains a ``thread`` column (its triggers fill it) and is refilled from the messages. A
lookup within one thread (context recall, a thread's search) then reads that thread's entries
only, not every thread's hits of its words."""

from django.db import migrations

FORMER_PG_INDEX = "message_search_idx"


def rebuild_search_index(apps, schema_editor):
    from threads.search import search_index_drop, search_index_ensure

    connection = schema_editor.connection
    if connection.vendor == "postgresql":
        with connection.cursor() as cursor:
            cursor.execute(f"DROP INDEX IF EXISTS {FORMER_PG_INDEX}")
    search_index_drop(connection)
    search_index_ensure(connection)


class Migration(migrations.Migration):
    dependencies = [("threads", "0007_message_indexes_without_duplicates")]

    operations = [migrations.RunPython(rebuild_search_index, migrations.RunPython.noop)]
