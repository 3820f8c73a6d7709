"""Sealed messages are indexed by their blind document (``Message.search_terms``: keyed hashes
of their words under the subject's key, ``convmem.blind_index``) instead of their content, which
is ciphertext: on PostgreSQL the GIN index's expression reads it for rows that have one; on
SQLite the FTS5 table gains a ``blind`` column (its triggers fill it) and is refilled."""

from django.db import migrations, models


def rebuild_search_index(apps, schema_editor):
    from threads.search import search_index_drop, search_index_ensure

    search_index_drop(schema_editor.connection)
    search_index_ensure(schema_editor.connection)


class Migration(migrations.Migration):
    dependencies = [("threads", "0012_thread_data_key")]

    operations = [
        migrations.AddField(
            model_name="message",
            name="search_terms",
            field=models.TextField(blank=True, db_default="", default="", editable=False),
        ),
        migrations.RunPython(rebuild_search_index, migrations.RunPython.noop),
    ]
