"""A full-text index of message content (``threads.search``): a partial GIN index on PostgreSQL,
an FTS5 table kept by triggers on SQLite (filled here from the messages that exist). Also an
index on (thread, depth), with which context recall tells whether an old message lies on the
active path without walking the path."""

from django.db import migrations, models


def create_search_index(apps, schema_editor):
    from threads.search import search_index_ensure

    search_index_ensure(schema_editor.connection)


def drop_search_index(apps, schema_editor):
    from threads.search import search_index_drop

    search_index_drop(schema_editor.connection)


class Migration(migrations.Migration):
    dependencies = [("threads", "0005_thread_erased_at")]

    operations = [
        migrations.AddIndex(
            model_name="message",
            index=models.Index(fields=["thread", "depth"], name="message_thread_depth_idx"),
        ),
        migrations.RunPython(create_search_index, drop_search_index),
    ]
