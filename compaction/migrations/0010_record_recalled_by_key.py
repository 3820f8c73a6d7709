"""Existing assembly records' recalled items by key (issue 24, stored bytes).

Records now name a recalled message by its primary key with the excerpt's token count,
``{"kind": "recalled", "pk": 733, "tokens": 253}``: its public id and role are the row's
(``compaction.item_runs``). This rewrites the records that do not keep their rendered input
(those keep whole items: erasure matches them by id), with the rule copied here as it is today:
a recalled item of exactly kind, id, role and tokens whose message is found in the record's
thread with that role. Any other item stays as it is. Reversing leaves the rows as they are:
the readers show both forms.
"""

from collections import defaultdict

from django.db import migrations

BATCH = 500
PLAIN = {"kind", "id", "role", "tokens"}


def _recalled(item):
    return item["kind"] == "recalled" and item.keys() == PLAIN


def _keyed(item, messages):
    if _recalled(item):
        row = messages.get(item["id"])
        if row and row[1] == item["role"]:
            return {"kind": "recalled", "pk": row[0], "tokens": item["tokens"]}
    return item


def _in_batches(queryset):
    last = 0
    while batch := list(queryset.filter(pk__gt=last).order_by("pk")[:BATCH]):
        yield batch
        last = batch[-1].pk


def recalled_by_key(apps, schema_editor):
    AssemblyRecord = apps.get_model("compaction", "AssemblyRecord")
    Message = apps.get_model("threads", "Message")
    records = AssemblyRecord.objects.filter(rendered_pieces__isnull=True).only(
        "pk", "thread_id", "items"
    )
    for batch in _in_batches(records):
        ids = {item["id"] for record in batch for item in record.items or [] if _recalled(item)}
        messages = defaultdict(dict)
        for pk, thread_id, public_id, role in Message.objects.filter(public_id__in=ids).values_list(
            "pk", "thread_id", "public_id", "role"
        ):
            messages[thread_id][public_id] = (pk, role)
        changed = []
        for record in batch:
            keyed = [_keyed(item, messages[record.thread_id]) for item in record.items or []]
            if keyed != record.items:
                record.items = keyed
                changed.append(record)
        AssemblyRecord.objects.bulk_update(changed, ["items"])


class Migration(migrations.Migration):
    dependencies = [
        ("compaction", "0009_record_items_by_key"),
    ]

    operations = [migrations.RunPython(recalled_by_key, migrations.RunPython.noop)]
