"""Assembly records and memo scores in their short forms (issue 24, stored bytes).

The JSON fields are written without separator spaces (``convmem.compact_json``); the data step
rewrites the existing rows: each record's plan without its default entries, its policy without
the values of its assembler version's defaults, its token counts without window and reserve
(``compaction.record_form``, whose rules are copied here as they are today), and each memo's
fact lists cut to 12 with their full sizes counted (``compaction.evals.scores_stored``).
Reversing leaves the rows as they are: the readers show both forms.
"""

from django.db import migrations, models

import convmem.compact_json

BATCH = 500
PLAN_DEFAULTS = {
    "format": "openai.chat_completions",
    "dropped": [],
    "elided": [],
    "covered": None,
    "memo_requested": None,
    "memo_lag": {"turns": 0, "tokens": 0, "first_id": None, "last_id": None},
}
POLICY_DEFAULTS = {
    "curator/4": {
        "min_recent_turns": 4,
        "memo_max_tokens": 512,
        "high_water": 0.85,
        "low_water": 0.1,
        "message_overhead": 4,
        "segment_tokens": 8192,
        "min_memo_tokens": 96,
        "recall_max_tokens": 0,
    },
}
LISTED = 12


def _short_record(record):
    record.plan = {k: v for k, v in (record.plan or {}).items() if PLAN_DEFAULTS.get(k, ...) != v}
    record.tokens = {
        k: v for k, v in (record.tokens or {}).items() if k not in ("window", "reserve")
    }
    defaults = POLICY_DEFAULTS.get(record.assembler_version)
    if defaults is not None and "policy" in (record.budget or {}):
        policy = {k: v for k, v in record.budget["policy"].items() if defaults.get(k, ...) != v}
        record.budget = {**record.budget, "policy": policy}


def _short_scores(scores):
    for key in ("found", "missing", "unsupported", "unsupported_values"):
        if key in scores:
            scores.setdefault(f"{key}_count", len(scores[key]))
            scores[key] = scores[key][:LISTED]
    return scores


def _in_batches(queryset):
    last = 0
    while batch := list(queryset.filter(pk__gt=last).order_by("pk")[:BATCH]):
        yield batch
        last = batch[-1].pk


def shorten(apps, schema_editor):
    AssemblyRecord = apps.get_model("compaction", "AssemblyRecord")
    Summary = apps.get_model("compaction", "Summary")
    records = AssemblyRecord.objects.only(
        "pk", "assembler_version", "items", "plan", "tokens", "budget"
    )
    for batch in _in_batches(records):
        for record in batch:
            _short_record(record)
        AssemblyRecord.objects.bulk_update(batch, ["plan", "tokens", "budget", "items"])
    for batch in _in_batches(Summary.objects.only("pk", "scores", "covered_ids")):
        for summary in batch:
            summary.scores = _short_scores(dict(summary.scores or {}))
        Summary.objects.bulk_update(batch, ["scores", "covered_ids"])


class Migration(migrations.Migration):
    dependencies = [
        ("compaction", "0006_assembly_thread_index_once"),
    ]

    operations = [
        # The encoder is Python's: no column changes (and SQLite would rebuild the table for
        # each field).
        migrations.SeparateDatabaseAndState(
            state_operations=[
                migrations.AlterField(
                    model_name="assemblyrecord",
                    name="budget",
                    field=models.JSONField(
                        default=dict, encoder=convmem.compact_json.CompactJSONEncoder
                    ),
                ),
                migrations.AlterField(
                    model_name="assemblyrecord",
                    name="items",
                    field=models.JSONField(
                        default=list, encoder=convmem.compact_json.CompactJSONEncoder
                    ),
                ),
                migrations.AlterField(
                    model_name="assemblyrecord",
                    name="plan",
                    field=models.JSONField(
                        blank=True,
                        default=dict,
                        encoder=convmem.compact_json.CompactJSONEncoder,
                        help_text="What the curator decided besides the items shown: dropped and elided message ids, the range the memo stands for, the memo it asked for, the input format (entries at their defaults are not stored).",
                    ),
                ),
                migrations.AlterField(
                    model_name="assemblyrecord",
                    name="tokens",
                    field=models.JSONField(
                        default=dict, encoder=convmem.compact_json.CompactJSONEncoder
                    ),
                ),
                migrations.AlterField(
                    model_name="summary",
                    name="covered_ids",
                    field=models.JSONField(
                        blank=True, default=list, encoder=convmem.compact_json.CompactJSONEncoder
                    ),
                ),
                migrations.AlterField(
                    model_name="summary",
                    name="scores",
                    field=models.JSONField(
                        blank=True, default=dict, encoder=convmem.compact_json.CompactJSONEncoder
                    ),
                ),
            ],
        ),
        migrations.RunPython(shorten, migrations.RunPython.noop),
    ]
