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
