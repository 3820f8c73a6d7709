"""The export for the person the data is about (``?format=html``): their conversations in
order, every message numbered, branches marked, tool calls in words, from the API and the
admin; the JSON encodings stay as they were."""

import json

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError
from django.urls import reverse

from audit.export_html import call_words
from auditlog.models import AuditEvent
from tests.admin.conftest import IMAGE_URL, build_agent_thread, client_for, staff_user
from tests.audit.conftest import assert_in_order, branched_thread, pdf_text


def body(response) -> str:
    assert response.status_code == 200, response.content
    return b"".join(response.streaming_content).decode()


def test_the_page_reads_as_a_conversation_with_branches_marked(acme_exporter):
    thread = branched_thread(acme_exporter.tenant, user_ref="u-9")

    response = acme_exporter.client.get(
        f"/api/v1/threads/{thread.public_id}/export", {"format": "html"}
    )

    assert response["Content-Type"] == "text/html; charset=utf-8"
    assert response["Content-Disposition"].endswith('.html"')
    html = body(response)
    assert html.startswith("<!DOCTYPE html>")
    assert "<script" not in html
    # u1 a1 u2 a2, then u2' (an edit of #3, continuing from #2) and its answer a2'.
    assert html.index("#1 You") < html.index("#2 Assistant") < html.index("#5 You")
    fifth = html.split("#5 You")[1].split("</div>\n</div>")[0]
    assert "continues from #2" in fifth
    assert "an edited version of #3" in fifth
    third = html.split("#3 You")[1].split("#4")[0]
    assert "earlier branch" in third
    assert "earlier branch" not in fifth
    event = AuditEvent.objects.filter(action="export.made").latest("pk")
    assert event.details == {"format": "html"}


def test_tool_calls_parts_and_memos_read_in_words(acme_exporter):
    agent = build_agent_thread(acme_exporter, user_ref="u-agent")

    html = body(
        acme_exporter.client.get("/api/v1/exports", {"user_ref": "u-agent", "format": "html"})
    )

    assert "The assistant used the tool <strong>get_order</strong> with:" in html
    assert "<dt>id</dt><dd>ORD-1234</dd>" in html
    assert "<dt>include</dt><dd>[&quot;items&quot;, &quot;shipping&quot;]</dd>" in html
    assert "Tool result (get_order)" in html
    assert f"[an image: {IMAGE_URL}]" in html
    assert "[a file, reference file-receipt-1234]" in html
    assert "<img" not in html
    assert agent.thread.title in html


def test_json_is_unchanged_beside_it(acme_exporter):
    thread = branched_thread(acme_exporter.tenant)
    url = f"/api/v1/threads/{thread.public_id}/export"

    doc = json.loads(body(acme_exporter.client.get(url)))

    assert doc["schema"] == "convmem.export/2"
    assert {m["id"] for m in doc["threads"][0]["messages"]} <= set(
        thread.messages.values_list("public_id", flat=True)
    )


def test_compliance_gets_it_from_the_admin(acme):
    compliance = client_for(staff_user("cleo-compliance", "Compliance"))
    thread = branched_thread(acme.tenant, user_ref="u-7")
    url = reverse("admin:threads_thread_export", args=[thread.public_id])

    html = body(compliance.get(url, {"format": "html"}))
    page = compliance.get(reverse("admin:threads_thread_change", args=[thread.public_id]))

    assert "Your conversations" in html
    assert 'id="export-thread-html"' in page.content.decode()
    form = compliance.get(reverse("admin:threads_thread_export_user")).content.decode()
    assert "---------" not in form  # one tenant: nothing to choose
    user = body(
        compliance.get(
            reverse("admin:threads_thread_export_user"),
            {"tenant": acme.tenant.pk, "user_ref": "u-7", "format": "html"},
        )
    )
    assert "#1 You" in user


def test_the_command_writes_the_page_too(acme, tmp_path):
    branched_thread(acme.tenant, user_ref="u-3")
    target = tmp_path / "u-3.html"

    call_command(
        "export_history",
        "--user-ref",
        "u-3",
        "--tenant",
        "acme",
        "--output",
        str(target),
        "--format",
        "html",
    )

    page = target.read_text()
    assert "Your conversations" in page
    assert "#6 Assistant" in page


def test_the_pdf_holds_the_conversation_in_order_with_branches_marked(acme_exporter):
    thread = branched_thread(acme_exporter.tenant, user_ref="u-9")

    response = acme_exporter.client.get(
        f"/api/v1/threads/{thread.public_id}/export", {"format": "pdf"}
    )

    assert response.status_code == 200, response.content
    assert response["Content-Type"] == "application/pdf"
    assert response["Content-Disposition"].endswith('.pdf"')
    assert response.content.startswith(b"%PDF-")
    text = pdf_text(response.content)
    order = [
        "1. t Started",
        "#1 You",
        "My order ORD-1",
        "#2 Assistant",
        "It shipped.",
        "#3 You",
        "earlier branch",
        "Refund 649 EUR?",
        "#4 Assistant",
        "earlier branch",
        "Yes, refunded.",
        "#5 You",
        "continues from #2",
        "an edited version of #3",
        "Replace it",
        "#6 Assistant",
        "Replacement sent.",
    ]
    assert_in_order(text, order)
    assert "earlier branch" not in text[text.index("#5 You") :]
    assert "Page 1 of" in text
    event = AuditEvent.objects.filter(action="export.made").latest("pk")
    assert event.details == {"format": "pdf"}


def test_the_pdf_says_tool_calls_in_words(acme_exporter):
    build_agent_thread(acme_exporter, user_ref="u-agent")

    response = acme_exporter.client.get("/api/v1/exports", {"user_ref": "u-agent", "format": "pdf"})

    text = pdf_text(response.content)
    order = [
        "Damaged parcel",
        "My parcel ORD-1234 arrived damaged, photo attached.",
        f"[an image: {IMAGE_URL}]",
        "[a file, reference file-receipt-1234]",
        "The assistant used the tool get_order with:",
        "id ORD-1234",
        "The assistant used the tool carrier_log with:",
        "tracking DHL-99812",
        "Tool result (get_order)",
        "649.00 EUR",
        "Tool result (carrier_log)",
        "The parcel was delivered damaged; I opened a claim.",
    ]
    assert_in_order(text, order)


def test_compliance_gets_the_pdf_from_the_admin(acme, tmp_path):
    compliance = client_for(staff_user("cleo-compliance", "Compliance"))
    thread = branched_thread(acme.tenant, user_ref="u-7")

    page = compliance.get(reverse("admin:threads_thread_change", args=[thread.public_id]))
    thread_pdf = compliance.get(
        reverse("admin:threads_thread_export", args=[thread.public_id]), {"format": "pdf"}
    )
    user_pdf = compliance.get(
        reverse("admin:threads_thread_export_user"),
        {"tenant": acme.tenant.pk, "user_ref": "u-7", "format": "pdf"},
    )

    assert 'id="export-thread-pdf"' in page.content.decode()
    for response in (thread_pdf, user_pdf):
        assert response["Content-Type"] == "application/pdf"
        text = pdf_text(response.content)
        assert text.index("My order ORD-1") < text.index("Replacement sent.")


def test_the_command_writes_the_pdf_to_a_file_only(acme, tmp_path):
    branched_thread(acme.tenant, user_ref="u-3")
    target = tmp_path / "u-3.pdf"
    arguments = ["export_history", "--user-ref", "u-3", "--tenant", "acme", "--format", "pdf"]

    with pytest.raises(CommandError, match="needs --output"):
        call_command(*arguments)
    call_command(*arguments, "--output", str(target))

    assert "#6 Assistant" in pdf_text(target.read_bytes())


def test_arguments_that_are_not_an_object_stay_as_written():
    call = {"id": "c", "function": {"name": "search", "arguments": '"lost parcel"'}}
    assert call_words(call).arguments == []
    assert call_words(call).raw == '"lost parcel"'
    broken = {"id": "c", "function": {"name": "search", "arguments": "{not json"}}
    assert call_words(broken).raw == "{not json"
