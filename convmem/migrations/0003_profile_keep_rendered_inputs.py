from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [
        ("convmem", "0002_model_profile_currency"),
    ]

    operations = [
        migrations.AddField(
            model_name="modelprofile",
            name="keep_rendered_inputs",
            field=models.BooleanField(
                default=False,
                help_text="Keep each model input's rendered text (deduplicated, compressed) for "
                "CONVMEM_SNAPSHOT_DAYS, for debugging. Off: inputs are recorded as ids and a hash "
                "only.",
            ),
        ),
    ]
