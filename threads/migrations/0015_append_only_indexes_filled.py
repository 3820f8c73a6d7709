"""Messages: the indexes that only grow at their right edge fill their pages whole on
PostgreSQL (``fillfactor = 100``, ``convmem.pg_storage``; issue 24, stored bytes). Existing
pages are not rewritten (``docs/upgrading.md``); SQLite is unchanged."""

from django.db import migrations

from convmem.pg_storage import indexes_fill, indexes_fill_default

TABLE = "threads_message"


def fill(apps, schema_editor):
    indexes_fill(schema_editor, TABLE)


def fill_default(apps, schema_editor):
    indexes_fill_default(schema_editor, TABLE)


class Migration(migrations.Migration):
    dependencies = [("threads", "0014_message_search_without_pending_list")]

    operations = [migrations.RunPython(fill, fill_default)]
