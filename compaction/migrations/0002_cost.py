"""Store each memo's cost with it (at the prices when stored), so that a later price change
never re-prices the past. Memos stored before this are priced once, here, at their thread's
profile prices of today (the only prices known)."""

from decimal import Decimal

from django.conf import settings
from django.db import migrations, models
from django.db.models import Q

MILLION = Decimal(1_000_000)


def price_stored_memos(apps, schema_editor):
    Summary = apps.get_model("compaction", "Summary")
    memos = Summary.objects.filter(Q(prompt_tokens__gt=0) | Q(completion_tokens__gt=0))
    default = (
        Decimal(settings.CONVMEM_DEFAULT_PROMPT_PRICE),
        Decimal(settings.CONVMEM_DEFAULT_COMPLETION_PRICE),
    )
    fields = ("pk", "prompt_tokens", "completion_tokens", "thread__profile")
    for memo in memos.select_related("thread__profile").only(*fields).iterator(chunk_size=1000):
        profile = memo.thread.profile
        prompt, completion = (
            (profile.prompt_price, profile.completion_price) if profile else default
        )
        memo.cost = (memo.prompt_tokens * prompt + memo.completion_tokens * completion) / MILLION
        memo.save(update_fields=["cost"])


class Migration(migrations.Migration):
    dependencies = [
        ("compaction", "0001_initial"),
        ("threads", "0001_initial"),
        ("convmem", "0001_initial"),
    ]

    operations = [
        migrations.AddField(
            model_name="summary",
            name="cost",
            field=models.DecimalField(
                decimal_places=12,
                default=0,
                help_text="What the writer's tokens cost at the thread's prices when the memo was stored.",
                max_digits=30,
            ),
        ),
        migrations.RunPython(price_stored_memos, migrations.RunPython.noop),
    ]
