"""The full-text GIN index on PostgreSQL without a pending list (``fastupdate = off``, see
``threads.search.PG_STORAGE``): every search read the list whole, for each word. The entries
already in it are merged into the index here, as a vacuum would. SQLite is unchanged."""

from django.db import migrations


def index_without_pending_list(apps, schema_editor):
    from threads.search import PG_INDEX, PG_STORAGE

    connection = schema_editor.connection
    if connection.vendor != "postgresql":
        return
    with connection.cursor() as cursor:
        cursor.execute(f"ALTER INDEX IF EXISTS {PG_INDEX} SET ({PG_STORAGE})")
        cursor.execute("SELECT to_regclass(%s)", [PG_INDEX])
        if cursor.fetchone()[0] is not None:
            cursor.execute("SELECT gin_clean_pending_list(%s::regclass)", [PG_INDEX])


class Migration(migrations.Migration):
    dependencies = [("threads", "0013_message_search_terms")]

    operations = [migrations.RunPython(index_without_pending_list, migrations.RunPython.noop)]
