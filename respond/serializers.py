"""Request and response shapes of the respond endpoint."""

from typing import Any

from django.conf import settings
from drf_spectacular.utils import extend_schema_field
from rest_framework import serializers

from compaction.serializers import ContextRequestSerializer
from respond.selectors import run_state
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
    background = serializers.BooleanField(
        default=False,
        help_text="true: answer 202 with the run at once (generated in a worker); read it with "
        "`GET …/runs/{run_id}`, its events with `GET …/runs/{run_id}/events`.",
    )


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


class RunSerializer(serializers.Serializer):
    """A run of ``/respond`` (ids and states, never content)."""

    id = serializers.CharField(source="public_id")
    thread_id = serializers.SerializerMethodField()
    state = serializers.SerializerMethodField(
        help_text="queued, running, completed, interrupted, cancelled or failed."
    )
    seq = serializers.IntegerField(help_text="The last event's sequence number recorded.")
    user_message_id = serializers.CharField(source="user_message.public_id")
    assistant_message_id = serializers.SerializerMethodField()
    assembly_id = serializers.SerializerMethodField()
    error = serializers.SerializerMethodField(help_text="The error code, or null.")
    created_at = serializers.DateTimeField()
    updated_at = serializers.DateTimeField()

    def get_thread_id(self, run: Any) -> str:
        return self.context["thread"].public_id

    def get_state(self, run: Any) -> str:
        return run_state(run)

    def get_assistant_message_id(self, run: Any) -> str | None:
        return run.assistant_message.public_id if run.assistant_message_id else None

    def get_assembly_id(self, run: Any) -> str | None:
        return run.assembly.public_id if run.assembly_id else None

    def get_error(self, run: Any) -> str | None:
        return run.error_code or None
