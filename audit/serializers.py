"""Request and response shapes of the audit API (field names fixed by DESIGN.md)."""

from typing import Any

from rest_framework import serializers

from audit.models import DeletionRequest


class DeletionRequestCreateSerializer(serializers.Serializer):
    user_ref = serializers.CharField(max_length=255, required=False)
    thread_id = serializers.CharField(max_length=40, required=False)
    reason = serializers.CharField(required=False, allow_blank=True, default="", max_length=2000)

    def validate(self, attrs: dict[str, Any]) -> dict[str, Any]:
        if ("user_ref" in attrs) == ("thread_id" in attrs):
            raise serializers.ValidationError("Give exactly one of user_ref or thread_id.")
        return attrs


class DeletionRequestSerializer(serializers.ModelSerializer):
    id = serializers.CharField(source="public_id", read_only=True)
    user_ref = serializers.SerializerMethodField()
    thread_id = serializers.SerializerMethodField()
    message_id = serializers.SerializerMethodField(
        help_text="A redaction: the one message erased (else null)."
    )
    rejection_reason = serializers.SerializerMethodField()
    proof = serializers.JSONField(
        read_only=True, help_text="Once executed: what was erased (counts and ids), who, when."
    )

    class Meta:
        model = DeletionRequest
        fields = [
            "id",
            "user_ref",
            "thread_id",
            "message_id",
            "status",
            "reason",
            "created_at",
            "due_at",
            "decided_at",
            "rejection_reason",
            "executed_at",
            "proof",
        ]
        read_only_fields = fields

    def get_user_ref(self, request: DeletionRequest) -> str | None:
        return request.user_ref or None

    def get_thread_id(self, request: DeletionRequest) -> str | None:
        return request.thread.public_id if request.thread_id else None

    def get_message_id(self, request: DeletionRequest) -> str | None:
        return request.message.public_id if request.message_id else None

    def get_rejection_reason(self, request: DeletionRequest) -> str | None:
        return request.rejection_reason or None


class RedactRequestSerializer(serializers.Serializer):
    reason = serializers.CharField(required=False, allow_blank=True, default="", max_length=2000)
