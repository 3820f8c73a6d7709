"""Existing assembly records' items in the keyed form (issue 24, stored bytes).

Records now name their message ranges and their memo by primary key, and a single plain message
as a range of one (``compaction.item_runs``). This rewrites the records that do not keep their
rendered input (those keep whole items: erasure matches them by id), with the rules copied
here as they are today: a range by public ids becomes a range by keys, a plain message whose
role and token count are its row's a range of one, a memo item whose range is its row's the
memo's key with its token count and header. An item whose ids are not found stays as it is.
Reversing leaves the rows as they are: the readers show both forms.
"""

from collections import defaultdict

from django.db import migrations

BATCH = 500
PLAIN = {"kind", "id", "role", "tokens"}
FROM_MEMO_ROW = ("kind", "id", "first_id", "last_id")


def _ids(items):
    messages, memos = set(), set()
    for item in items:
        if item["kind"] == "messages" and "last_id" in item:
            messages |= {item["first_id"], item["last_id"]}
        elif item["kind"] == "message" and item.keys() == PLAIN:
            messages.add(item["id"])
        elif item["kind"] == "summary" and "id" in item:
            memos.add(item["id"])
    return messages, memos


def _keyed(item, messages, memos):
    if item["kind"] == "messages" and "last_id" in item:
        first, last = messages.get(item["first_id"]), messages.get(item["last_id"])
        if first and last:
            return {"kind": "messages", "first": first[0], "last": last[0], "count": item["count"]}
    elif item["kind"] == "message" and item.keys() == PLAIN:
        row = messages.get(item["id"])
        if row and (row[1], row[2]) == (item["role"], item["tokens"]):
            return {"kind": "messages", "first": row[0], "last": row[0], "count": 1}
    elif item["kind"] == "summary" and "id" in item:
        memo = memos.get(item["id"])
        if memo and (memo[1], memo[2]) == (item.get("first_id"), item.get("last_id")):
            rest = {k: v for k, v in item.items() if k not in FROM_MEMO_ROW}
            return {"kind": "summary", "pk": memo[0], **rest}
    return item


def _in_batches(queryset):
    last = 0
    while batch := list(queryset.filter(pk__gt=last).order_by("pk")[:BATCH]):
        yield batch
        last = batch[-1].pk


def items_by_key(apps, schema_editor):
    AssemblyRecord = apps.get_model("compaction", "AssemblyRecord")
    Message = apps.get_model("threads", "Message")
    Summary = apps.get_model("compaction", "Summary")
    records = AssemblyRecord.objects.filter(rendered_pieces__isnull=True).only(
        "pk", "thread_id", "items"
    )
    for batch in _in_batches(records):
        message_ids, memo_ids = set(), set()
        for record in batch:
            found = _ids(record.items or [])
            message_ids |= found[0]
            memo_ids |= found[1]
        messages = defaultdict(dict)
        for pk, thread_id, public_id, role, tokens in Message.objects.filter(
            public_id__in=message_ids
        ).values_list("pk", "thread_id", "public_id", "role", "token_count"):
            messages[thread_id][public_id] = (pk, role, tokens)
        memos = defaultdict(dict)
        for pk, thread_id, public_id, first, last in Summary.objects.filter(
            public_id__in=memo_ids
        ).values_list("pk", "thread_id", "public_id", "first__public_id", "last__public_id"):
            memos[thread_id][public_id] = (pk, first, last)
        changed = []
        for record in batch:
            thread = record.thread_id
            keyed = [_keyed(i, messages[thread], memos[thread]) for i in record.items or []]
            if keyed != record.items:
                record.items = keyed
                changed.append(record)
        AssemblyRecord.objects.bulk_update(changed, ["items"])


class Migration(migrations.Migration):
    dependencies = [
        ("compaction", "0008_public_ids_without_pattern_index"),
        ("threads", "0010_message_public_id_without_pattern_index"),
    ]

    operations = [migrations.RunPython(items_by_key, migrations.RunPython.noop)]
