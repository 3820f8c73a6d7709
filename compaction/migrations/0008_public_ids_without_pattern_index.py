"""Drop the ``varchar_pattern_ops`` copies of the unique indexes on ``AssemblyRecord.public_id``
and ``Summary.public_id`` (PostgreSQL).

Django adds that second index to every unique ``CharField`` for ``LIKE 'prefix%'`` lookups;
nothing here makes one on a public id (the admin's ``=public_id`` search is an exact match), so
each was a second copy of every id: about 120 bytes a turn together (issue 24, stored bytes).
SQLite has no such index. Reversing recreates them.
"""

from django.db import migrations

INDEXED = (("AssemblyRecord", "compaction_assemblyrecord"), ("Summary", "compaction_summary"))
COLUMN = "public_id"


def drop_pattern_indexes(apps, schema_editor):
    if schema_editor.connection.vendor != "postgresql":
        return
    with schema_editor.connection.cursor() as cursor:
        for _, table in INDEXED:
            cursor.execute(
                "SELECT indexname FROM pg_indexes WHERE tablename = %s AND indexdef LIKE %s",
                [table, f"%({COLUMN} varchar_pattern_ops)%"],
            )
            for (name,) in cursor.fetchall():
                cursor.execute(f'DROP INDEX IF EXISTS "{name}"')


def create_pattern_indexes(apps, schema_editor):
    if schema_editor.connection.vendor != "postgresql":
        return
    for model_name, _ in INDEXED:
        model = apps.get_model("compaction", model_name)
        schema_editor.execute(
            schema_editor._create_like_index_sql(model, model._meta.get_field(COLUMN))
        )


class Migration(migrations.Migration):
    dependencies = [("compaction", "0007_compact_record_json")]

    operations = [migrations.RunPython(drop_pattern_indexes, create_pattern_indexes)]
