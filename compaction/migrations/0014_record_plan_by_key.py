"""Existing assembly records' plans name messages and memos by key (issue 24, stored bytes).

The plan now holds the covered range's ends as ``first``/``last`` and the stable prefix's memo
and first verbatim turn as ``memo``/``first``, by primary key (the record pins the thread);
``compaction.selectors.plans_shown`` shows them as public ids again. This rewrites existing
plans with the rule as it is today: a covered range or a prefix whose public ids are all found
in the record's thread is keyed, keys in the same places; anything else stays as it is (shown
as it is; a newest record whose prefix stays by public id gives the next input no prefix to
keep, once). Reversing leaves the rows as they are.
"""

from collections import defaultdict

from django.db import migrations

BATCH = 500


def _ids(plan):
    covered, prefix = plan.get("covered") or {}, plan.get("prefix") or {}
    messages = {covered.get("first_id"), covered.get("last_id"), prefix.get("first_id")}
    return messages - {None}, {prefix.get("memo_id")} - {None}


def _keyed(plan, messages, memos):
    plan = dict(plan)
    covered = plan.get("covered")
    if isinstance(covered, dict) and "first_id" in covered:
        first, last = messages.get(covered["first_id"]), messages.get(covered.get("last_id"))
        if first and last:
            names = {"first_id": ("first", first), "last_id": ("last", last)}
            plan["covered"] = dict(names.get(k, (k, v)) for k, v in covered.items())
    prefix = plan.get("prefix")
    if isinstance(prefix, dict) and "first_id" in prefix:
        first = messages.get(prefix["first_id"])
        memo = memos.get(prefix.get("memo_id")) if prefix.get("memo_id") else None
        if first and (memo or not prefix.get("memo_id")):
            names = {"memo_id": ("memo", memo), "first_id": ("first", first)}
            plan["prefix"] = dict(names.get(k, (k, v)) for k, v in prefix.items())
    return plan


def plans_by_key(apps, schema_editor):
    AssemblyRecord = apps.get_model("compaction", "AssemblyRecord")
    Message = apps.get_model("threads", "Message")
    Summary = apps.get_model("compaction", "Summary")
    records = AssemblyRecord.objects.only("pk", "thread_id", "plan").order_by("pk")
    last = 0
    while batch := list(records.filter(pk__gt=last)[:BATCH]):
        last = batch[-1].pk
        message_ids, memo_ids = set(), set()
        for record in batch:
            found = _ids(record.plan or {})
            message_ids |= found[0]
            memo_ids |= found[1]
        messages, memos = defaultdict(dict), defaultdict(dict)
        for pk, thread_id, public_id in Message.objects.filter(
            public_id__in=message_ids
        ).values_list("pk", "thread_id", "public_id"):
            messages[thread_id][public_id] = pk
        for pk, thread_id, public_id in Summary.objects.filter(public_id__in=memo_ids).values_list(
            "pk", "thread_id", "public_id"
        ):
            memos[thread_id][public_id] = pk
        changed = []
        for record in batch:
            keyed = _keyed(record.plan or {}, messages[record.thread_id], memos[record.thread_id])
            if keyed != (record.plan or {}):
                record.plan = keyed
                changed.append(record)
        AssemblyRecord.objects.bulk_update(changed, ["plan"])


class Migration(migrations.Migration):
    dependencies = [
        ("compaction", "0013_record_leaf_unindexed"),
    ]

    operations = [migrations.RunPython(plans_by_key, migrations.RunPython.noop)]
