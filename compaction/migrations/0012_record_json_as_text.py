"""Assembly records' items, plan, budget and token counts as compact ``json`` text on
PostgreSQL, not ``jsonb`` (issue 24, stored bytes; ``convmem.compact_json.CompactJSONField``).

The type change keeps each value, printed as ``jsonb`` prints it (a space after each ``,`` and
``:``); the rows are then written again compact, a batch at a time. SQLite keeps the text it
had. Reversing turns the columns back into ``jsonb``.
"""

from django.db import migrations

import convmem.compact_json

BATCH = 500
FIELDS = ["items", "plan", "budget", "tokens"]


def compact_text(apps, schema_editor):
    if schema_editor.connection.vendor != "postgresql":
        return
    AssemblyRecord = apps.get_model("compaction", "AssemblyRecord")
    records = AssemblyRecord.objects.only("pk", *FIELDS).order_by("pk")
    last = 0
    while batch := list(records.filter(pk__gt=last)[:BATCH]):
        AssemblyRecord.objects.bulk_update(batch, FIELDS)
        last = batch[-1].pk


class Migration(migrations.Migration):
    dependencies = [
        ("compaction", "0011_record_budget_from"),
    ]

    operations = [
        migrations.AlterField(
            model_name="assemblyrecord",
            name="budget",
            field=convmem.compact_json.CompactJSONField(
                default=dict, encoder=convmem.compact_json.CompactJSONEncoder
            ),
        ),
        migrations.AlterField(
            model_name="assemblyrecord",
            name="items",
            field=convmem.compact_json.CompactJSONField(
                default=list, encoder=convmem.compact_json.CompactJSONEncoder
            ),
        ),
        migrations.AlterField(
            model_name="assemblyrecord",
            name="plan",
            field=convmem.compact_json.CompactJSONField(
                blank=True,
                default=dict,
                encoder=convmem.compact_json.CompactJSONEncoder,
                help_text="What the curator decided besides the items shown: dropped and elided message ids, the range the memo stands for, the memo it asked for, the input format (entries at their defaults are not stored).",
            ),
        ),
        migrations.AlterField(
            model_name="assemblyrecord",
            name="tokens",
            field=convmem.compact_json.CompactJSONField(
                default=dict, encoder=convmem.compact_json.CompactJSONEncoder
            ),
        ),
        migrations.RunPython(compact_text, migrations.RunPython.noop),
    ]
