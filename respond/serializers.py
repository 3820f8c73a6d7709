"""Request and response shapes of the respond endpoint."""

from django.conf import settings
from drf_spectacular.utils import extend_schema_field
from rest_framework import serializers

from compaction.serializers import ContextRequestSerializer
from threads.serializers import (
    CONTENT_PART_SCHEMA,
    MessageSerializer,
    UsageField,
    _validate_metadata,
)


@extend_schema_field(
    {
        "oneOf": [
            {"type": "string"},
            {"type": "array", "items": CONTENT_PART_SCHEMA, "minItems": 1, "maxItems": 64},
        ]
    }
)
class UserContentField(serializers.JSONField):
    """The user's turn: a string or a list of content parts (checked by ``threads.content``)."""


class RespondRequestSerializer(ContextRequestSerializer):
    """The user turn (as an append takes it), the budget (as context takes it), the mode."""

    leaf_id = None  # the input ends at the user turn this call appends
    role = serializers.ChoiceField(choices=["user"], default="user")
    content = UserContentField(
        help_text="The user's turn: text, or a list of content parts (text; images and files "
        "by reference)."
    )
    metadata = serializers.DictField(required=False, validators=[_validate_metadata])
    parent_id = serializers.CharField(
        max_length=40,
        required=False,
        allow_null=True,
        help_text="Answer under this message instead of the active leaf.",
    )
    stream = serializers.BooleanField(
        default=False,
        help_text="true: Server-Sent Events (`turn`, `token`…, then `done` or `error`); "
        "false: one JSON body when the answer is stored.",
    )
    max_tokens = serializers.IntegerField(
        required=False,
        min_value=1,
        max_value=settings.CONVMEM_MAX_WINDOW_TOKENS,
        help_text="Cap on the answer's tokens; at most the output reserve (the default).",
    )
    temperature = serializers.FloatField(required=False, min_value=0, max_value=2)


class RespondResultSerializer(serializers.Serializer):
    """The stored turn: the JSON response, and the data of the `done` event."""

    thread_id = serializers.CharField()
    user_message = MessageSerializer()
    assistant_message = MessageSerializer()
    assembly_id = serializers.CharField(help_text="The recorded model input the answer answers.")
    finish_reason = serializers.CharField(help_text="As the model reported it (`stop`, `length`).")
    usage = UsageField(
        help_text="The model's token counts; `estimated: true` when it reported none (counted "
        "in the thread's encoding)."
    )
    cost = serializers.DecimalField(
        max_digits=24,
        decimal_places=6,
        help_text="At the thread's model profile prices (per million tokens), in `currency`.",
    )
    currency = serializers.CharField(help_text="ISO 4217 code of `cost` (the profile's).")
