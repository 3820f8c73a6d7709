from drf_spectacular.utils import extend_schema_field
from rest_framework import serializers

from imports import formats


@extend_schema_field(
    {"oneOf": [{"type": "array", "items": {"type": "object"}}, {"type": "object"}]}
)
class ExportFileField(serializers.JSONField):
    """A parsed export file: a list of conversations or an export object."""


class ImportRequestSerializer(serializers.Serializer):
    data = ExportFileField(
        help_text="The parsed file: a ChatGPT or Claude `conversations.json` (a list), or a "
        "convmem JSON export (an object with `schema`)."
    )
    format = serializers.ChoiceField(
        choices=formats.FORMATS, required=False, help_text="Default: detected from `data`."
    )
    user_ref = serializers.CharField(
        max_length=255,
        required=False,
        help_text="The end user the threads belong to: needed for ChatGPT and Claude exports; "
        "replaces the exported one for a convmem export.",
    )


class ImportResultSerializer(serializers.Serializer):
    source_id = serializers.CharField(help_text="The conversation's id in the file.")
    status = serializers.ChoiceField(choices=["imported", "skipped", "failed"])
    thread_id = serializers.CharField(allow_null=True)
    messages = serializers.IntegerField()
    detail = serializers.CharField(allow_blank=True)


class ImportReportSerializer(serializers.Serializer):
    format = serializers.ChoiceField(choices=formats.FORMATS)
    imported = serializers.IntegerField()
    skipped = serializers.IntegerField(help_text="Conversations imported before: unchanged.")
    failed = serializers.IntegerField()
    results = ImportResultSerializer(many=True)
