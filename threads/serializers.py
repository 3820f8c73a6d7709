"""Request and response shapes for threads and messages (field names fixed by DESIGN.md)."""

import json
from datetime import timedelta
from typing import Any

from django.conf import settings
from django.utils import timezone
from drf_spectacular.utils import extend_schema_field
from rest_framework import serializers

from threads.content import MAX_USAGE_TOKENS
from threads.models import API_ROLES, Message, Role, Thread
from threads.selectors import thread_system_text

MAX_METADATA_BYTES = 16_384


class ThreadSerializer(serializers.ModelSerializer):
    id = serializers.CharField(source="public_id", read_only=True)
    active_leaf_id = serializers.SerializerMethodField()
    profile = serializers.SerializerMethodField()
    system = serializers.SerializerMethodField(
        help_text="The thread's system prompt, used by /context and /respond when a request "
        "gives none; null if none is set."
    )
    system_version = serializers.SerializerMethodField(
        help_text="Version of the system prompt (1, 2, …; older versions are kept); null if "
        "one was never set."
    )

    class Meta:
        model = Thread
        fields = [
            "id",
            "user_ref",
            "title",
            "metadata",
            "active_leaf_id",
            "profile",
            "system",
            "system_version",
            "expires_at",
            "created_at",
            "updated_at",
        ]
        read_only_fields = fields
        extra_kwargs = {
            "expires_at": {
                "help_text": "When the thread is erased and deleted (null: never); a legal hold "
                "keeps it past this."
            }
        }

    def get_active_leaf_id(self, thread: Thread) -> str | None:
        leaf = thread.active_leaf
        return None if leaf is None or leaf.role == Role.ROOT else leaf.public_id

    def get_profile(self, thread: Thread) -> str | None:
        return thread.profile.name if thread.profile_id else None

    def get_system(self, thread: Thread) -> str | None:
        return thread_system_text(thread)

    def get_system_version(self, thread: Thread) -> int | None:
        return thread.system_prompt.version if thread.system_prompt_id else None


def _system_field() -> serializers.CharField:
    return serializers.CharField(
        required=False,
        allow_blank=True,
        trim_whitespace=False,
        max_length=settings.CONVMEM_MAX_CONTENT_CHARS,
        help_text='The thread\'s system prompt (a new version; "" clears it). /context and '
        "/respond place it first when the request gives no `system`.",
    )


def _validate_metadata(value: Any) -> dict[str, Any]:
    if not isinstance(value, dict):
        raise serializers.ValidationError("metadata must be a JSON object.")
    if len(json.dumps(value)) > MAX_METADATA_BYTES:
        raise serializers.ValidationError(f"metadata is limited to {MAX_METADATA_BYTES} bytes.")
    return value


# The longest relative expiry taken (100 years), far below what a datetime can add.
MAX_EXPIRES_IN_SECONDS = 100 * 366 * 86400


class ExpiryFieldsSerializer(serializers.Serializer):
    """``expires_at`` (absolute) or ``expires_in`` (seconds from now), resolved to one
    ``expires_at`` in ``validated_data``: in the future, or null for no expiry. Absent from
    ``validated_data`` when the request gives neither."""

    expires_at = serializers.DateTimeField(
        required=False,
        allow_null=True,
        help_text="When the thread is erased and deleted (ISO 8601; without an offset: UTC). "
        "Must be in the future; null: never (even if the profile sets a thread_ttl).",
    )
    expires_in = serializers.IntegerField(
        required=False,
        min_value=1,
        max_value=MAX_EXPIRES_IN_SECONDS,
        write_only=True,
        help_text="Seconds from now until the thread expires (instead of expires_at).",
    )

    def validate(self, attrs: dict[str, Any]) -> dict[str, Any]:
        if "expires_at" in attrs and "expires_in" in attrs:
            raise serializers.ValidationError(
                {"expires_in": "Give expires_at or expires_in, not both."}
            )
        now = timezone.now()
        if "expires_in" in attrs:
            attrs["expires_at"] = now + timedelta(seconds=attrs.pop("expires_in"))
        elif attrs.get("expires_at") is not None and attrs["expires_at"] <= now:
            # A date in the past would erase the thread on the next run: a typo must not, and
            # an app that wants the thread gone now has DELETE.
            raise serializers.ValidationError({"expires_at": "Must be in the future."})
        return attrs


class ThreadCreateSerializer(ExpiryFieldsSerializer):
    user_ref = serializers.CharField(max_length=255)
    title = serializers.CharField(max_length=255, required=False, allow_blank=True, default="")
    # DictField: documented (and validated) as a JSON object, not "any JSON value".
    metadata = serializers.DictField(required=False, default=dict, validators=[_validate_metadata])
    profile = serializers.CharField(
        max_length=100, required=False, help_text="Name of one of the tenant's model profiles."
    )
    system = _system_field()


class ThreadUpdateSerializer(ExpiryFieldsSerializer):
    active_leaf_id = serializers.CharField(
        max_length=40,
        required=False,
        allow_null=True,
        help_text="Any message of the thread; a non-leaf means 'continue from here', "
        "null means 'start over from the beginning'.",
    )
    title = serializers.CharField(max_length=255, required=False, allow_blank=True)
    metadata = serializers.DictField(required=False, validators=[_validate_metadata])
    system = _system_field()


CONTENT_PART_SCHEMA = {
    "oneOf": [
        {
            "type": "object",
            "properties": {"type": {"enum": ["text"]}, "text": {"type": "string", "minLength": 1}},
            "required": ["type", "text"],
        },
        {
            "type": "object",
            "properties": {
                "type": {"enum": ["image_url"]},
                "image_url": {
                    "type": "object",
                    "properties": {
                        "url": {"type": "string", "pattern": "^https?://", "maxLength": 2048},
                        "detail": {"enum": ["auto", "low", "high"]},
                    },
                    "required": ["url"],
                },
            },
            "required": ["type", "image_url"],
        },
        {
            "type": "object",
            "properties": {
                "type": {"enum": ["file"]},
                "file": {
                    "type": "object",
                    "properties": {"file_id": {"type": "string", "pattern": "^[!-~]{1,255}$"}},
                    "required": ["file_id"],
                },
            },
            "required": ["type", "file"],
        },
    ]
}
TOOL_CALL_SCHEMA = {
    "type": "object",
    "properties": {
        "id": {"type": "string", "pattern": "^[!-~]{1,255}$"},
        "type": {"enum": ["function"]},
        "function": {
            "type": "object",
            "properties": {
                "name": {"type": "string", "pattern": "^[A-Za-z0-9_-]{1,64}$"},
                "arguments": {"type": "string"},
            },
            "required": ["name", "arguments"],
        },
    },
    "required": ["id", "function"],
}
USAGE_SCHEMA = {
    "type": "object",
    "properties": {
        "prompt_tokens": {"type": "integer", "minimum": 0, "maximum": MAX_USAGE_TOKENS},
        "completion_tokens": {"type": "integer", "minimum": 0, "maximum": MAX_USAGE_TOKENS},
        "total_tokens": {"type": "integer", "minimum": 0, "maximum": 2 * MAX_USAGE_TOKENS},
        "cached_tokens": {
            "type": "integer",
            "minimum": 0,
            "maximum": MAX_USAGE_TOKENS,
            "description": "Of the prompt tokens, those served from a prompt cache "
            "(also read from prompt_tokens_details.cached_tokens or cache_read_input_tokens).",
        },
        "cache_write_tokens": {
            "type": "integer",
            "minimum": 0,
            "maximum": MAX_USAGE_TOKENS,
            "description": "Of the prompt tokens, those written to a prompt cache "
            "(also read from cache_creation_input_tokens).",
        },
        "prompt_tokens_details": {
            "type": "object",
            "properties": {"cached_tokens": {"type": "integer", "minimum": 0}},
            "description": "OpenAI's form of cached_tokens (write only).",
        },
        "cache_read_input_tokens": {
            "type": "integer",
            "minimum": 0,
            "description": "Anthropic's name of cached_tokens (write only).",
        },
        "cache_creation_input_tokens": {
            "type": "integer",
            "minimum": 0,
            "description": "Anthropic's name of cache_write_tokens (write only).",
        },
    },
    "required": ["prompt_tokens", "completion_tokens"],
}


@extend_schema_field(
    {
        "oneOf": [
            {"type": "string"},
            {"type": "array", "items": CONTENT_PART_SCHEMA, "minItems": 1, "maxItems": 64},
        ],
        "nullable": True,
    }
)
class ContentField(serializers.JSONField):
    """A string, or a list of OpenAI content parts (checked by ``threads.content``)."""


@extend_schema_field(
    {"type": "array", "items": TOOL_CALL_SCHEMA, "minItems": 1, "maxItems": 128, "nullable": True}
)
class ToolCallsField(serializers.JSONField):
    """An assistant turn's tool calls (checked by ``threads.content``)."""


@extend_schema_field({**USAGE_SCHEMA, "nullable": True})
class UsageField(serializers.JSONField):
    """Tokens the model reported for an assistant turn."""


@extend_schema_field({"type": "array", "items": CONTENT_PART_SCHEMA, "nullable": True})
class ContentPartsField(serializers.JSONField):
    """The parts a message was sent as (null for plain text)."""


class MessageSerializer(serializers.ModelSerializer):
    """A message; selectors and services attach the related public ids as attributes."""

    id = serializers.CharField(source="public_id", read_only=True)
    thread_id = serializers.SerializerMethodField()
    parent_id = serializers.CharField(source="parent_public_id", read_only=True, allow_null=True)
    edits_id = serializers.CharField(source="edits_public_id", read_only=True, allow_null=True)
    assembly_id = serializers.CharField(
        source="assembly_public_id", read_only=True, allow_null=True
    )
    content = serializers.SerializerMethodField(
        help_text="The text (the text parts, when sent as content parts); null on an assistant "
        "turn that only calls tools, as the chat format has it."
    )
    content_parts = ContentPartsField(read_only=True)
    tool_calls = ToolCallsField(read_only=True)
    tool_call_id = serializers.SerializerMethodField()
    model = serializers.SerializerMethodField(
        help_text="Assistant turns: the model that wrote it; null when none was reported."
    )
    usage = UsageField(read_only=True)
    erased = serializers.SerializerMethodField()

    class Meta:
        model = Message
        fields = [
            "id",
            "thread_id",
            "parent_id",
            "role",
            "content",
            "content_parts",
            "tool_calls",
            "tool_call_id",
            "metadata",
            "model",
            "usage",
            "status",
            "token_count",
            "edits_id",
            "assembly_id",
            "erased",
            "created_at",
        ]
        read_only_fields = fields

    def get_thread_id(self, message: Message) -> str:
        return self.context["thread"].public_id

    def get_content(self, message: Message) -> str | None:
        return message_content(message)

    def get_tool_call_id(self, message: Message) -> str | None:
        return message.tool_call_id or None

    def get_model(self, message: Message) -> str | None:
        return message.model or None

    def get_erased(self, message: Message) -> bool:
        return message.erased_at is not None


def message_content(message: Message) -> str | None:
    """The one null convention for absent content: an assistant turn that only calls tools has
    ``content: null`` (stored as ""), in the message endpoints as in ``/context``."""
    if message.tool_calls and not message.content:
        return None
    return message.content


class TreeNodeSerializer(MessageSerializer):
    depth = serializers.IntegerField(read_only=True)
    sibling_index = serializers.SerializerMethodField(help_text="1-based position among siblings")
    sibling_count = serializers.SerializerMethodField()

    class Meta(MessageSerializer.Meta):
        fields = [*MessageSerializer.Meta.fields, "depth", "sibling_index", "sibling_count"]
        read_only_fields = fields

    def get_sibling_index(self, message: Message) -> int:
        return self.context["positions"][message.pk][0]

    def get_sibling_count(self, message: Message) -> int:
        return self.context["positions"][message.pk][1]


class MessageCreateSerializer(serializers.Serializer):
    role = serializers.ChoiceField(choices=[str(r) for r in API_ROLES])
    content = ContentField(
        allow_null=True,
        help_text="Text, or a list of content parts (text; images and files by reference on "
        "user turns). May be empty or null on an assistant turn that only calls tools.",
    )
    parent_id = serializers.CharField(max_length=40, required=False, allow_null=True)
    assembly_id = serializers.CharField(max_length=40, required=False, allow_null=True)
    tool_calls = ToolCallsField(
        required=False, allow_null=True, help_text="Assistant turns: the tool calls the model made."
    )
    tool_call_id = serializers.RegexField(
        r"^[!-~]{1,255}$",
        required=False,
        help_text="Tool messages: the id of the call this result answers.",
    )
    metadata = serializers.DictField(required=False, validators=[_validate_metadata])
    model = serializers.CharField(
        max_length=128,
        required=False,
        allow_blank=True,
        allow_null=True,
        help_text="Assistant turns: the model that wrote it, as the model reported it.",
    )
    usage = UsageField(
        required=False, allow_null=True, help_text="Assistant turns: the usage the model reported."
    )


class MessageEditSerializer(serializers.Serializer):
    content = ContentField(allow_null=True)
    tool_calls = ToolCallsField(
        required=False,
        allow_null=True,
        help_text="Assistant turns: new tool calls (default: the original's).",
    )
    metadata = serializers.DictField(required=False, validators=[_validate_metadata])


MAX_BATCH_MESSAGES = 256


class BatchTurnSerializer(MessageCreateSerializer):
    """One message of a batch: as an append takes it, without ``parent_id`` (each message's
    parent is the one before it)."""

    parent_id = None


class MessageBatchCreateSerializer(serializers.Serializer):
    parent_id = serializers.CharField(
        max_length=40,
        required=False,
        allow_null=True,
        help_text="The first message's parent (default: the active leaf).",
    )
    messages = BatchTurnSerializer(
        many=True,
        max_length=MAX_BATCH_MESSAGES,
        help_text="Appended in order, each under the one before it; the last becomes the "
        "active leaf.",
    )


class SearchHitSerializer(serializers.Serializer):
    """One message found by a search. ``snippet`` is HTML: the text escaped, the words found
    in ``<mark>…</mark>``."""

    message_id = serializers.CharField()
    thread_id = serializers.CharField()
    user_ref = serializers.CharField()
    role = serializers.CharField()
    created_at = serializers.DateTimeField()
    snippet = serializers.CharField()
