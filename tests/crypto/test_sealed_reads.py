"""With sealing on, the staff pages and the export read sealed turns in clear (through
``convmem.crypto``), while the database holds only ciphertext."""

from typing import Any

import pytest
from django.db import connection
from django.test import Client
from django.urls import reverse

from tests.admin.conftest import build_agent_thread, client_for, staff_user
from tests.conftest import TenantKit

pytestmark = pytest.mark.django_db


def _stored_contents(thread_pk: int) -> str:
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT content, tool_calls FROM threads_message WHERE thread_id = %s", [thread_pk]
        )
        return " ".join(str(value) for row in cursor.fetchall() for value in row)


def test_the_thread_page_shows_sealed_turns_in_clear(acme: TenantKit, settings: Any) -> None:
    settings.CONVMEM_ENCRYPT_CONTENT = True
    agent = build_agent_thread(acme)
    support: Client = client_for(staff_user("sam-support", "Support"))

    response = support.get(
        reverse("admin:threads_thread_change", args=[agent.thread.public_id]),
        {"end": agent.answer.public_id},
    )

    assert response.status_code == 200
    html = response.content.decode()
    assert "649.00 EUR" in html
    assert "ORD-1234" in html
    stored = _stored_contents(agent.thread.pk)
    assert "649.00 EUR" not in stored
    assert "ORD-1234" not in stored


def test_the_export_holds_sealed_turns_in_clear(acme_exporter: TenantKit, settings: Any) -> None:
    settings.CONVMEM_ENCRYPT_CONTENT = True
    agent = build_agent_thread(acme_exporter)

    response = acme_exporter.client.get(f"/api/v1/threads/{agent.thread.public_id}/export")

    assert response.status_code == 200
    body = b"".join(response.streaming_content) if response.streaming else response.content
    assert b"649.00 EUR" in body
    assert "649.00 EUR" not in _stored_contents(agent.thread.pk)
