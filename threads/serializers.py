"""Request and response shapes for threads and messages (field names fixed by DESIGN.md)."""

import json
from typing import Any

from django.conf import settings
from rest_framework import serializers

from threads.models import API_ROLES, Message, Role, Thread

MAX_METADATA_BYTES = 16_384


class ThreadSerializer(serializers.ModelSerializer):
    id = serializers.CharField(source="public_id", read_only=True)
    active_leaf_id = serializers.SerializerMethodField()
    profile = serializers.SerializerMethodField()

    class Meta:
        model = Thread
        fields = [
            "id",
            "user_ref",
            "title",
            "metadata",
            "active_leaf_id",
            "profile",
            "created_at",
            "updated_at",
        ]
        read_only_fields = fields

    def get_active_leaf_id(self, thread: Thread) -> str | None:
        leaf = thread.active_leaf
        return None if leaf is None or leaf.role == Role.ROOT else leaf.public_id

    def get_profile(self, thread: Thread) -> str | None:
        return thread.profile.name if thread.profile_id else None


def _validate_metadata(value: Any) -> dict[str, Any]:
    if not isinstance(value, dict):
        raise serializers.ValidationError("metadata must be a JSON object.")
    if len(json.dumps(value)) > MAX_METADATA_BYTES:
        raise serializers.ValidationError(f"metadata is limited to {MAX_METADATA_BYTES} bytes.")
    return value


class ThreadCreateSerializer(serializers.Serializer):
    user_ref = serializers.CharField(max_length=255)
    title = serializers.CharField(max_length=255, required=False, allow_blank=True, default="")
    # DictField: documented (and validated) as a JSON object, not "any JSON value".
    metadata = serializers.DictField(required=False, default=dict, validators=[_validate_metadata])
    profile = serializers.CharField(
        max_length=100, required=False, help_text="Name of one of the tenant's model profiles."
    )


class ThreadUpdateSerializer(serializers.Serializer):
    active_leaf_id = serializers.CharField(
        max_length=40,
        required=False,
        allow_null=True,
        help_text="Any message of the thread; a non-leaf means 'continue from here', "
        "null means 'start over from the beginning'.",
    )
    title = serializers.CharField(max_length=255, required=False, allow_blank=True)
    metadata = serializers.DictField(required=False, validators=[_validate_metadata])


class MessageSerializer(serializers.ModelSerializer):
    """A message; selectors and services attach the related public ids as attributes."""

    id = serializers.CharField(source="public_id", read_only=True)
    thread_id = serializers.SerializerMethodField()
    parent_id = serializers.CharField(source="parent_public_id", read_only=True, allow_null=True)
    edits_id = serializers.CharField(source="edits_public_id", read_only=True, allow_null=True)
    assembly_id = serializers.CharField(
        source="assembly_public_id", read_only=True, allow_null=True
    )
    erased = serializers.SerializerMethodField()

    class Meta:
        model = Message
        fields = [
            "id",
            "thread_id",
            "parent_id",
            "role",
            "content",
            "token_count",
            "edits_id",
            "assembly_id",
            "erased",
            "created_at",
        ]
        read_only_fields = fields

    def get_thread_id(self, message: Message) -> str:
        return self.context["thread"].public_id

    def get_erased(self, message: Message) -> bool:
        return message.erased_at is not None


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
    content = serializers.CharField(allow_blank=True, trim_whitespace=False)
    parent_id = serializers.CharField(max_length=40, required=False, allow_null=True)
    assembly_id = serializers.CharField(max_length=40, required=False, allow_null=True)


class MessageEditSerializer(serializers.Serializer):
    content = serializers.CharField(allow_blank=True, trim_whitespace=False)


def page_size(raw: str | None) -> int:
    """The ``limit`` query parameter, defaulted and clamped to the configured maximum."""
    if raw is None:
        return settings.CONVMEM_PAGE_SIZE
    try:
        value = int(raw)
    except ValueError:
        raise serializers.ValidationError({"limit": "must be an integer."}) from None
    if value < 1:
        raise serializers.ValidationError({"limit": "must be at least 1."})
    return min(value, settings.CONVMEM_MAX_PAGE_SIZE)
