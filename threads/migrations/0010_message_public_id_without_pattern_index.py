"""Drop the ``varchar_pattern_ops`` copy of the unique index on ``Message.public_id`` (PostgreSQL).

Django adds that second index to every unique ``CharField`` for ``LIKE 'prefix%'`` lookups;
nothing here makes one on a public id (the admin's ``=public_id`` search is an exact match), so
it was a second copy of every id: about 150 bytes a turn (issue 24, stored bytes). SQLite has
no such index. Reversing recreates it.
"""

from django.db import migrations

TABLE, COLUMN = "threads_message", "public_id"


def drop_pattern_index(apps, schema_editor):
    if schema_editor.connection.vendor != "postgresql":
        return
    with schema_editor.connection.cursor() as cursor:
        cursor.execute(
            "SELECT indexname FROM pg_indexes WHERE tablename = %s AND indexdef LIKE %s",
            [TABLE, f"%({COLUMN} varchar_pattern_ops)%"],
        )
        for (name,) in cursor.fetchall():
            cursor.execute(f'DROP INDEX IF EXISTS "{name}"')


def create_pattern_index(apps, schema_editor):
    if schema_editor.connection.vendor != "postgresql":
        return
    model = apps.get_model("threads", "Message")
    schema_editor.execute(
        schema_editor._create_like_index_sql(model, model._meta.get_field(COLUMN))
    )


class Migration(migrations.Migration):
    dependencies = [("threads", "0009_message_search_thread_lexeme")]

    operations = [migrations.RunPython(drop_pattern_index, create_pattern_index)]
