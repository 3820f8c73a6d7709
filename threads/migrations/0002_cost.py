"""Store each assistant turn's cost with it (at the prices when stored), so that a later price
change never re-prices the past. Turns stored before this are priced once, here, at their
thread's profile prices of today (the only prices known)."""

from decimal import Decimal

from django.conf import settings
from django.db import migrations, models

MILLION = Decimal(1_000_000)


def price_stored_turns(apps, schema_editor):
    Message = apps.get_model("threads", "Message")
    turns = Message.objects.filter(usage__isnull=False, cost__isnull=True).select_related(
        "thread__profile"
    )
    default = (
        Decimal(settings.CONVMEM_DEFAULT_PROMPT_PRICE),
        Decimal(settings.CONVMEM_DEFAULT_COMPLETION_PRICE),
    )
    for turn in turns.only("pk", "usage", "thread__profile").iterator(chunk_size=1000):
        profile = turn.thread.profile
        prompt, completion = (
            (profile.prompt_price, profile.completion_price) if profile else default
        )
        usage = turn.usage or {}
        turn.cost = (
            int(usage.get("prompt_tokens") or 0) * prompt
            + int(usage.get("completion_tokens") or 0) * completion
        ) / MILLION
        turn.save(update_fields=["cost"])


class Migration(migrations.Migration):
    dependencies = [
        ("threads", "0001_initial"),
        ("convmem", "0001_initial"),
    ]

    operations = [
        migrations.AddField(
            model_name="message",
            name="cost",
            field=models.DecimalField(
                blank=True,
                decimal_places=12,
                help_text="What ``usage`` cost at the thread's prices when the turn was stored (exact).",
                max_digits=30,
                null=True,
            ),
        ),
        migrations.RunPython(price_stored_turns, migrations.RunPython.noop),
    ]
