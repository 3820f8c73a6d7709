"""Message content, titles and user_refs are untrusted: every page renders them as text."""

import pytest
from django.test import Client
from django.urls import reverse

from tests.admin.conftest import build_memo_thread, write_embellished
from tests.conftest import SYSTEM, TenantKit
from threads import services
from threads.models import Message, Thread

SCRIPT = "<script>alert(1)</script>"
IMG = "<img src=x onerror=alert(1)>"


@pytest.fixture
def hostile(acme: TenantKit) -> tuple[Thread, Message]:
    thread = services.thread_create(
        tenant=acme.tenant, actor=SYSTEM, user_ref=f"u{IMG}", title=f"t{SCRIPT}"
    )
    first = services.message_append(thread=thread, actor=SYSTEM, role="user", content=SCRIPT)
    services.message_append(thread=thread, actor=SYSTEM, role="assistant", content=IMG)
    services.message_edit(
        thread=thread, actor=SYSTEM, message_public_id=first.public_id, content=f"again {IMG}"
    )
    thread.refresh_from_db()
    return thread, first


def assert_inert(html: str) -> None:
    assert SCRIPT not in html
    assert IMG not in html
    assert "onerror=alert(1)>" not in html


def test_every_page_escapes_content(support: Client, hostile: tuple[Thread, Message]):
    thread, first = hostile
    pages = [
        reverse("admin:threads_thread_change", args=[thread.public_id]),
        reverse("admin:threads_thread_change", args=[thread.public_id])
        + f"?leaf={first.public_id}",
        reverse("admin:threads_thread_branch", args=[thread.public_id, first.public_id]),
        reverse("admin:threads_message_change", args=[first.public_id]),
        reverse("admin:threads_message_changelist") + "?q=alert",
        reverse("admin:threads_thread_changelist"),
    ]
    for url in pages:
        response = support.get(url)
        assert response.status_code == 200, url
        html = response.content.decode()
        assert_inert(html)
    thread_page = support.get(pages[1]).content.decode()
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in thread_page


def test_memo_and_model_input_pages_escape_content(support: Client, acme: TenantKit):
    memo_thread = build_memo_thread(acme, write=write_embellished, extra=f"{SCRIPT} {IMG}")
    assert SCRIPT in Message.objects.filter(thread=memo_thread.thread).values_list(
        "content", flat=True
    ).get(content__contains="Any news")
    pages = [
        reverse("admin:compaction_summary_change", args=[memo_thread.summary.public_id]),
        reverse("admin:compaction_assemblyrecord_change", args=[memo_thread.assembly.public_id])
        + "?replay=1",
    ]
    for url in pages:
        response = support.get(url)
        assert response.status_code == 200, url
        assert_inert(response.content.decode())
