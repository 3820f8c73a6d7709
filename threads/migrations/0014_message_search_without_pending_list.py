"""The full-text GIN index on PostgreSQL without a pending list (``fastupdate = off``): every
search read the list whole, for each word. The entries already in it are merged into the index
here, as a vacuum would. Migration 0017 brings back a list of 64 kB. SQLite is unchanged."""

from django.db import migrations


def index_without_pending_list(apps, schema_editor):
    from threads.search import PG_INDEX

    connection = schema_editor.connection
    if connection.vendor != "postgresql":
        return
    with connection.cursor() as cursor:
        cursor.execute(f"ALTER INDEX IF EXISTS {PG_INDEX} SET (fastupdate = off)")
        cursor.execute("SELECT to_regclass(%s)", [PG_INDEX])
        if cursor.fetchone()[0] is not None:
            cursor.execute("SELECT gin_clean_pending_list(%s::regclass)", [PG_INDEX])


class Migration(migrations.Migration):
    dependencies = [("threads", "0013_message_search_terms")]

    operations = [migrations.RunPython(index_without_pending_list, migrations.RunPython.noop)]
