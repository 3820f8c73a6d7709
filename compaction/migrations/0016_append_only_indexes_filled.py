"""Assembly records: the indexes that only grow at their right edge fill their pages whole on
PostgreSQL (``fillfactor = 100``, ``convmem.pg_storage``; issue 24, stored bytes). Existing
pages are not rewritten (``docs/upgrading.md``); SQLite is unchanged."""

from django.db import migrations

from convmem.pg_storage import indexes_fill, indexes_fill_default

TABLE = "compaction_assemblyrecord"


def fill(apps, schema_editor):
    indexes_fill(schema_editor, TABLE)


def fill_default(apps, schema_editor):
    indexes_fill_default(schema_editor, TABLE)


class Migration(migrations.Migration):
    dependencies = [("compaction", "0015_blob_per_subject_key")]

    operations = [migrations.RunPython(fill, fill_default)]
