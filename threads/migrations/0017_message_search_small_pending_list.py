"""The full-text GIN index on PostgreSQL with a pending list of at most 64 kB (see
``threads.search.PG_STORAGE``): an insert no longer walks the tree for each of its words.
Reversed, the index goes back to no pending list, and what is in it is merged as migration
0014 did. SQLite is unchanged."""

from django.db import migrations


def _index_alter(schema_editor, *changes: str, merge: bool = False) -> None:
    from threads.search import PG_INDEX

    connection = schema_editor.connection
    if connection.vendor != "postgresql":
        return
    with connection.cursor() as cursor:
        for change in changes:
            cursor.execute(f"ALTER INDEX IF EXISTS {PG_INDEX} {change}")
        cursor.execute("SELECT to_regclass(%s)", [PG_INDEX])
        if merge and cursor.fetchone()[0] is not None:
            cursor.execute("SELECT gin_clean_pending_list(%s::regclass)", [PG_INDEX])


def small_pending_list(apps, schema_editor):
    from threads.search import PG_STORAGE

    _index_alter(schema_editor, f"SET ({PG_STORAGE})")


def no_pending_list(apps, schema_editor):
    _index_alter(
        schema_editor, "SET (fastupdate = off)", "RESET (gin_pending_list_limit)", merge=True
    )


class Migration(migrations.Migration):
    dependencies = [("threads", "0016_thread_memo_lead_messages")]

    operations = [migrations.RunPython(small_pending_list, no_pending_list)]
