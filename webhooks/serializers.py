"""Shapes of the webhook endpoints API."""

from rest_framework import serializers

from webhooks.models import EVENT_TYPES


class WebhookEndpointCreateSerializer(serializers.Serializer):
    url = serializers.URLField(max_length=2000)
    events = serializers.ListField(
        child=serializers.ChoiceField(choices=EVENT_TYPES), min_length=1, max_length=8
    )


class WebhookEndpointSerializer(serializers.Serializer):
    """An endpoint; ``secret`` (``whsec_…``) is shown on creation and rotation only."""

    id = serializers.CharField(source="public_id")
    url = serializers.URLField()
    events = serializers.ListField(child=serializers.CharField())
    active = serializers.BooleanField()
    created_at = serializers.DateTimeField()


class WebhookEndpointWithSecretSerializer(WebhookEndpointSerializer):
    secret = serializers.CharField()


class WebhookEndpointUpdateSerializer(serializers.Serializer):
    url = serializers.URLField(max_length=2000, required=False)
    events = serializers.ListField(
        child=serializers.ChoiceField(choices=EVENT_TYPES),
        min_length=1,
        max_length=8,
        required=False,
    )


class WebhookDeliverySerializer(serializers.Serializer):
    """One event sent (or being sent) to an endpoint: how it went, never its payload."""

    event_id = serializers.CharField(help_text="The `webhook-id` header of every attempt.")
    event_type = serializers.CharField()
    status = serializers.ChoiceField(choices=["pending", "delivered", "failed"])
    attempts = serializers.IntegerField()
    last_status_code = serializers.IntegerField(allow_null=True)
    last_error = serializers.CharField()
    created_at = serializers.DateTimeField()
    delivered_at = serializers.DateTimeField(allow_null=True)
