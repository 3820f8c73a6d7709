"""Assembly records without the index on ``leaf`` (issue 24, stored bytes): no query
looks records up by their leaf, and messages are never deleted."""

import django.db.models.deletion
from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [
        ("compaction", "0012_record_json_as_text"),
        ("threads", "0012_thread_data_key"),
    ]

    operations = [
        migrations.AlterField(
            model_name="assemblyrecord",
            name="leaf",
            field=models.ForeignKey(
                db_index=False,
                on_delete=django.db.models.deletion.PROTECT,
                related_name="+",
                to="threads.message",
            ),
        ),
    ]
