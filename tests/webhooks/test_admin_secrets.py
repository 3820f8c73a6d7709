"""A signing secret made in the admin (an endpoint added, secrets rotated) is shown once, in the
page answering the POST, and left nowhere else: not in a message (Django's messages go to a
cookie or the session and come back with the next requests), not in the session store, not in
the admin's log, not in any cache (``no-store``), not on the pages that follow."""

from typing import Any

import pytest
from django.contrib.admin.models import LogEntry
from django.contrib.auth.models import User
from django.contrib.sessions.models import Session
from django.test import Client

from tests.admin.conftest import client_for
from webhooks.models import WebhookEndpoint

pytestmark = pytest.mark.django_db
ENDPOINTS = "/admin/webhooks/webhookendpoint/"


@pytest.fixture
def admin_client_(allow_loopback: None) -> Client:
    return client_for(User.objects.create_superuser("root-admin", password="a-long-password-1"))


def _assert_shown_once_and_kept_nowhere(client: Client, response: Any, secret: str) -> None:
    assert response.status_code == 200
    body = response.content.decode()
    assert body.count(secret) == 1
    assert 'class="webhook-secret"' in body
    assert "no-store" in response["Cache-Control"]
    assert "messages" not in response.cookies
    assert all(secret not in str(s.get_decoded()) for s in Session.objects.all())
    assert all(secret not in entry.change_message for entry in LogEntry.objects.all())
    for page in (ENDPOINTS, f"{ENDPOINTS}{WebhookEndpoint.objects.get(secret=secret).pk}/change/"):
        after = client.get(page)
        assert after.status_code == 200
        assert secret not in after.content.decode()


def test_a_new_endpoints_secret_is_shown_once_and_kept_nowhere(acme, admin_client_):
    response = admin_client_.post(
        f"{ENDPOINTS}add/",
        {
            "tenant": acme.tenant.pk,
            "url": "http://127.0.0.1:9/hooks",
            "events": ["response.completed"],
            "active": "on",
        },
    )
    endpoint = WebhookEndpoint.objects.get()
    assert endpoint.secret.startswith("whsec_")
    assert endpoint.public_id in response.content.decode()
    _assert_shown_once_and_kept_nowhere(admin_client_, response, endpoint.secret)


def test_rotated_secrets_are_shown_once_and_kept_nowhere(acme, admin_client_):
    endpoints = [
        WebhookEndpoint.objects.create(
            tenant=acme.tenant, url=f"http://127.0.0.1:9/{n}", events=["memo.ready"], secret=f"s{n}"
        )
        for n in range(2)
    ]
    response = admin_client_.post(
        ENDPOINTS,
        {"action": "rotate_secret", "_selected_action": [e.pk for e in endpoints]},
    )
    for endpoint in endpoints:
        endpoint.refresh_from_db()
        assert endpoint.previous_secret == f"s{endpoints.index(endpoint)}"
        assert endpoint.secret.startswith("whsec_")
        _assert_shown_once_and_kept_nowhere(admin_client_, response, endpoint.secret)
