"""Webhooks: endpoints, events, signed deliveries (Standard Webhooks).

``webhook_event_emit`` is called by the apps above in the transaction that makes the event
true; it writes one delivery row per subscribed endpoint and queues ``webhooks.deliver`` after
commit (a rolled-back event sends nothing). ``delivery_send`` POSTs the payload signed with
``webhook-id`` (the event id, the same on every attempt, so receivers deduplicate),
``webhook-timestamp`` and ``webhook-signature`` (``v1,<HMAC-SHA256 of id.timestamp.body>``, one
per live secret). Payloads carry ids and states, never content.

Endpoints resolving to loopback, private, link-local or reserved addresses are refused (at
creation and again at each delivery, against DNS rebinding) unless
``CONVMEM_WEBHOOKS_ALLOW_PRIVATE`` (tests, and private deployments that mean it).
"""

import base64
import ipaddress
import json
import logging
import secrets
import socket
from datetime import timedelta
from typing import Any
from urllib.parse import urlsplit

import httpx
from django.conf import settings
from django.db import transaction
from django.utils import timezone
from standardwebhooks.webhooks import Webhook

from convmem.errors import InvalidRequest
from convmem.models import Tenant
from webhooks.models import EVENT_TYPES, WebhookDelivery, WebhookEndpoint

logger = logging.getLogger(__name__)
DELIVER_TASK = "webhooks.deliver"


class DeliveryFailed(Exception):
    """The endpoint did not take the event (a retry may)."""


def _new_secret() -> str:
    return "whsec_" + base64.b64encode(secrets.token_bytes(32)).decode()


def _refused_address(host: str) -> str | None:
    """Why ``host`` may not receive webhooks, or None."""
    if settings.CONVMEM_WEBHOOKS_ALLOW_PRIVATE:
        return None
    try:
        infos = socket.getaddrinfo(host, None)
    except OSError:
        return "its host does not resolve"
    for info in infos:
        address = ipaddress.ip_address(info[4][0])
        if not address.is_global:
            return f"it resolves to a non-public address ({address})"
    return None


def webhook_url_checked(url: str) -> str:
    """``url``, or ``InvalidRequest`` if it is not http(s) or its host is refused."""
    parts = urlsplit(url)
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise InvalidRequest("url must be an http(s) URL.", code="invalid_webhook_url")
    reason = _refused_address(parts.hostname)
    if reason:
        raise InvalidRequest(f"url is refused: {reason}.", code="webhook_url_refused")
    return url


def _checked_events(events: list[str]) -> list[str]:
    unknown = sorted(set(events) - set(EVENT_TYPES))
    if unknown or not events:
        raise InvalidRequest(
            f"events must be some of {', '.join(EVENT_TYPES)}.", code="invalid_webhook_events"
        )
    return sorted(set(events))


def webhook_endpoint_create(*, tenant: Tenant, url: str, events: list[str]) -> WebhookEndpoint:
    return WebhookEndpoint.objects.create(
        tenant=tenant,
        url=webhook_url_checked(url),
        events=_checked_events(events),
        secret=_new_secret(),
    )


def webhook_endpoint_update(
    *, endpoint: WebhookEndpoint, url: str | None = None, events: list[str] | None = None
) -> WebhookEndpoint:
    """Change what is given of ``url`` and ``events`` (checked as at creation)."""
    if url is not None:
        endpoint.url = webhook_url_checked(url)
    if events is not None:
        endpoint.events = _checked_events(events)
    endpoint.save(update_fields=["url", "events"])
    return endpoint


def webhook_secret_rotate(*, endpoint: WebhookEndpoint) -> WebhookEndpoint:
    """A new secret; the old one keeps signing beside it for
    ``CONVMEM_WEBHOOKS_ROTATION_HOURS``."""
    endpoint.previous_secret = endpoint.secret
    endpoint.previous_secret_expires_at = timezone.now() + timedelta(
        hours=settings.CONVMEM_WEBHOOKS_ROTATION_HOURS
    )
    endpoint.secret = _new_secret()
    endpoint.save(update_fields=["secret", "previous_secret", "previous_secret_expires_at"])
    return endpoint


def webhook_event_emit(*, tenant_id: int, event_type: str, data: dict[str, Any]) -> int:
    """Record ``event_type`` for every active endpoint of the tenant subscribed to it and queue
    their deliveries after commit. Returns the number of deliveries."""
    assert event_type in EVENT_TYPES, event_type
    endpoints = [
        endpoint
        for endpoint in WebhookEndpoint.objects.filter(tenant_id=tenant_id, active=True)
        if event_type in endpoint.events
    ]
    if not endpoints:
        return 0
    now = timezone.now()
    payload = {"type": event_type, "timestamp": now.isoformat(), "data": data}
    deliveries = WebhookDelivery.objects.bulk_create(
        WebhookDelivery(endpoint=endpoint, event_type=event_type, payload=payload)
        for endpoint in endpoints
    )
    for delivery in deliveries:
        transaction.on_commit(lambda pk=delivery.pk: delivery_enqueue(delivery_id=pk))
    return len(deliveries)


def delivery_enqueue(*, delivery_id: int) -> None:
    from celery import current_app

    try:
        current_app.send_task(DELIVER_TASK, args=[delivery_id])
    except Exception:
        # The row stays pending; staff can redeliver it from the admin.
        logger.exception("could not queue webhook delivery %s", delivery_id)


def delivery_redeliver(*, delivery: WebhookDelivery) -> None:
    WebhookDelivery.objects.filter(pk=delivery.pk).update(status=WebhookDelivery.Status.PENDING)
    delivery_enqueue(delivery_id=delivery.pk)


def _signing_secrets(endpoint: WebhookEndpoint) -> list[str]:
    live = [endpoint.secret]
    expires = endpoint.previous_secret_expires_at
    if endpoint.previous_secret and expires and expires > timezone.now():
        live.append(endpoint.previous_secret)
    return live


def signed_headers(*, endpoint: WebhookEndpoint, event_id: str, body: str) -> dict[str, str]:
    """The Standard Webhooks headers for ``body``: one ``v1`` signature per live secret."""
    now = timezone.now()
    signatures = [
        Webhook(secret).sign(event_id, now, body) for secret in _signing_secrets(endpoint)
    ]
    return {
        "webhook-id": event_id,
        "webhook-timestamp": str(int(now.timestamp())),
        "webhook-signature": " ".join(signatures),
        "content-type": "application/json",
    }


def delivery_send(*, delivery_id: int) -> None:
    """POST one delivery; raises ``DeliveryFailed`` for the task to retry. A delivery already
    delivered is not sent again (safe to run twice)."""
    delivery = (
        WebhookDelivery.objects.select_related("endpoint")
        .filter(pk=delivery_id, status=WebhookDelivery.Status.PENDING)
        .first()
    )
    if delivery is None:
        return
    endpoint = delivery.endpoint
    if not endpoint.active:
        # Unsubscribed since the event: its retries (and redeliveries) stop here.
        WebhookDelivery.objects.filter(pk=delivery.pk).update(
            status=WebhookDelivery.Status.FAILED, last_error="the endpoint was deleted"
        )
        return
    body = json.dumps(delivery.payload, separators=(",", ":"))
    fields: dict[str, Any] = {"attempts": delivery.attempts + 1}
    try:
        reason = _refused_address(urlsplit(endpoint.url).hostname or "")
        if reason:
            raise DeliveryFailed(f"refused: {reason}")
        response = httpx.post(
            endpoint.url,
            content=body.encode(),
            headers=signed_headers(endpoint=endpoint, event_id=delivery.event_id, body=body),
            timeout=settings.CONVMEM_WEBHOOKS_TIMEOUT,
            follow_redirects=False,
        )
        fields["last_status_code"] = response.status_code
        if not 200 <= response.status_code < 300:
            raise DeliveryFailed(f"the endpoint answered HTTP {response.status_code}")
    except (httpx.HTTPError, DeliveryFailed) as error:
        fields["last_error"] = str(error)[:300]
        WebhookDelivery.objects.filter(pk=delivery.pk).update(**fields)
        raise DeliveryFailed(fields["last_error"]) from error
    fields.update(
        status=WebhookDelivery.Status.DELIVERED, delivered_at=timezone.now(), last_error=""
    )
    WebhookDelivery.objects.filter(pk=delivery.pk).update(**fields)


def delivery_give_up(*, delivery_id: int) -> None:
    WebhookDelivery.objects.filter(pk=delivery_id, status=WebhookDelivery.Status.PENDING).update(
        status=WebhookDelivery.Status.FAILED
    )
