"""The full-text index on PostgreSQL holds the thread as a lexeme of the document instead of
as a ``btree_gin`` column (``threads.search``): a lookup within one thread is then answered by
the GIN index alone. With the thread as a column the planner chose a (thread, …) btree and
computed the document of every message of the thread, with statistics or without. SQLite is
unchanged."""

from django.db import migrations

FORMER_PG_INDEX = "message_search_thread_idx"


def rebuild_search_index(apps, schema_editor):
    from threads.search import search_index_ensure

    connection = schema_editor.connection
    if connection.vendor != "postgresql":
        return
    with connection.cursor() as cursor:
        cursor.execute(f"DROP INDEX IF EXISTS {FORMER_PG_INDEX}")
    search_index_ensure(connection)


class Migration(migrations.Migration):
    dependencies = [("threads", "0008_message_search_thread_scoped")]

    operations = [migrations.RunPython(rebuild_search_index, migrations.RunPython.noop)]
