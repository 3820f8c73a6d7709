"""Reads of webhooks: a tenant's endpoints and an endpoint's delivery log."""

from django.db.models import QuerySet

from convmem.models import Tenant
from webhooks.models import WebhookDelivery, WebhookEndpoint


def webhook_endpoints(*, tenant: Tenant) -> QuerySet[WebhookEndpoint]:
    """The tenant's subscribed (active) endpoints, oldest first."""
    return WebhookEndpoint.objects.filter(tenant=tenant, active=True).order_by("pk")


def webhook_deliveries(*, endpoint: WebhookEndpoint) -> QuerySet[WebhookDelivery]:
    return WebhookDelivery.objects.filter(endpoint=endpoint)
