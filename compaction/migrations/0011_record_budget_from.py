"""Assembly records name the record holding their budget's profile, encoding and policy (issue
24, stored bytes).

A record whose budget differs from the thread's previous record's only in its window and
reserve stores those two and names, in ``budget_from``, the record with the whole budget
(``compaction.models.budget_shortened``). This adds the column and rewrites existing records,
with the rule copied here as it is today: in id order, per thread, a record of the same
assembler version as the last whole record whose budget has the same entries besides window
and reserve is shortened and names it; any other record stays whole and is the one the next
records are compared with. Reversing sets each shortened budget whole again.
"""

from django.db import migrations, models

BATCH = 500
OWN = ("window", "reserve")


def _rest(budget):
    return {key: value for key, value in budget.items() if key not in OWN}


def _in_batches(queryset):
    last = 0
    while batch := list(queryset.filter(pk__gt=last).order_by("pk")[:BATCH]):
        yield batch
        last = batch[-1].pk


def budgets_by_reference(apps, schema_editor):
    AssemblyRecord = apps.get_model("compaction", "AssemblyRecord")
    records = AssemblyRecord.objects.filter(budget_from__isnull=True).only(
        "pk", "thread_id", "assembler_version", "budget"
    )
    whole = {}  # thread id -> the last whole record (pk, version, rest)
    for batch in _in_batches(records):
        changed = []
        for record in batch:
            budget = record.budget or {}
            last = whole.get(record.thread_id)
            fits = set(OWN) <= budget.keys() and len(budget) > len(OWN)
            if fits and last and (last[1], last[2]) == (record.assembler_version, _rest(budget)):
                record.budget = {key: budget[key] for key in OWN}
                record.budget_from_id = last[0]
                changed.append(record)
            else:
                whole[record.thread_id] = (record.pk, record.assembler_version, _rest(budget))
        AssemblyRecord.objects.bulk_update(changed, ["budget", "budget_from"])


def budgets_whole(apps, schema_editor):
    AssemblyRecord = apps.get_model("compaction", "AssemblyRecord")
    records = AssemblyRecord.objects.filter(budget_from__isnull=False).only(
        "pk", "budget", "budget_from"
    )
    for batch in _in_batches(records.select_related("budget_from")):
        for record in batch:
            record.budget = {**record.budget_from.budget, **record.budget}
            record.budget_from = None
        AssemblyRecord.objects.bulk_update(batch, ["budget", "budget_from"])


class Migration(migrations.Migration):
    dependencies = [
        ("compaction", "0010_record_recalled_by_key"),
    ]

    operations = [
        migrations.AddField(
            model_name="assemblyrecord",
            name="budget_from",
            field=models.ForeignKey(
                blank=True,
                db_index=False,
                editable=False,
                null=True,
                on_delete=models.DO_NOTHING,
                related_name="+",
                to="compaction.assemblyrecord",
            ),
        ),
        migrations.RunPython(budgets_by_reference, budgets_whole),
    ]
