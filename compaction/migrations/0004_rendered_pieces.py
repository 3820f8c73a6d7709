"""Model inputs are recorded as ids and a hash; the rendered text is kept only when a profile
asks (for debugging), as content-addressed, compressed pieces per thread (one per rendered
message), so consecutive inputs share what they have in common. Snapshots stored before this
become pieces; ``rendered_text`` goes."""

import hashlib
import json
import zlib

import django.db.models.deletion
from django.db import migrations, models
from django.db.models import Q


def _canonical(value):
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"), sort_keys=True)


def snapshots_to_pieces(apps, schema_editor):
    AssemblyRecord = apps.get_model("compaction", "AssemblyRecord")
    RenderedPiece = apps.get_model("compaction", "RenderedPiece")
    kept = AssemblyRecord.objects.filter(rendered_purged_at__isnull=True).exclude(rendered_text="")
    for record in kept.iterator(chunk_size=500):
        digests, pieces = [], {}
        for message in json.loads(record.rendered_text):
            text = _canonical(message)
            digest = hashlib.sha256(text.encode()).hexdigest()
            digests.append(digest)
            pieces[digest] = zlib.compress(text.encode())
        RenderedPiece.objects.bulk_create(
            [
                RenderedPiece(thread_id=record.thread_id, sha256=digest, data=data)
                for digest, data in pieces.items()
            ],
            ignore_conflicts=True,
        )
        AssemblyRecord.objects.filter(pk=record.pk).update(rendered_pieces=digests)


class Migration(migrations.Migration):
    dependencies = [
        ("compaction", "0003_staff_names_memo_and_model_input"),
        ("threads", "0001_initial"),
    ]

    operations = [
        migrations.CreateModel(
            name="RenderedPiece",
            fields=[
                (
                    "id",
                    models.BigAutoField(
                        auto_created=True, primary_key=True, serialize=False, verbose_name="ID"
                    ),
                ),
                ("sha256", models.CharField(max_length=64)),
                ("data", models.BinaryField()),
                ("created_at", models.DateTimeField(auto_now_add=True)),
                (
                    "thread",
                    models.ForeignKey(
                        on_delete=django.db.models.deletion.CASCADE,
                        related_name="+",
                        to="threads.thread",
                    ),
                ),
            ],
            options={
                "constraints": [
                    models.UniqueConstraint(fields=("thread", "sha256"), name="piece_thread_sha256")
                ],
            },
        ),
        migrations.AddField(
            model_name="assemblyrecord",
            name="rendered_pieces",
            field=models.JSONField(
                blank=True,
                help_text="SHA-256 of each rendered message in order (RenderedPiece), when the "
                "input was kept for debugging; null when it was not kept or has been purged.",
                null=True,
            ),
        ),
        migrations.RunPython(snapshots_to_pieces, migrations.RunPython.noop),
        migrations.RemoveIndex(model_name="assemblyrecord", name="assembly_snapshot_live_idx"),
        migrations.RemoveField(model_name="assemblyrecord", name="rendered_text"),
        migrations.AddIndex(
            model_name="assemblyrecord",
            index=models.Index(
                condition=Q(rendered_pieces__isnull=False),
                fields=["created_at"],
                name="assembly_snapshot_kept_idx",
            ),
        ),
    ]
