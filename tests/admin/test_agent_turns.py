"""Agent turns on the staff pages: a tool call as a named call with its arguments, each result
under its call (long ones collapsed, elided ones marked), content parts as links that the
browser does not fetch unless a setting allows thumbnails, and the stored details on demand."""

import re

from django.test import Client
from django.urls import reverse

from tests.admin.conftest import IMAGE_URL, AgentThread
from threads.admin_display import block, turns


def thread_page(client: Client, agent: AgentThread, **params: str) -> str:
    url = reverse("admin:threads_thread_change", args=[agent.thread.public_id])
    response = client.get(url, {"end": agent.answer.public_id, **params})
    assert response.status_code == 200
    return response.content.decode()


def article(html: str, public_id: str) -> str:
    return html.split(f'id="{public_id}"')[1].split("</article>")[0]


def test_a_tool_call_reads_as_a_named_call_with_its_results_under_it(
    support: Client, agent_thread: AgentThread
):
    html = thread_page(support, agent_thread)

    turn = article(html, agent_thread.calls.public_id)
    assert 'Called <code class="cm-tool">get_order</code>' in turn
    assert "&quot;id&quot;: &quot;ORD-1234&quot;" in turn  # pretty-printed, escaped
    assert '"include": [\n' in turn.replace("&quot;", '"')
    # Each result sits under its call, not as a bubble of its own.
    order = turn.split('data-call="call_order"')[1].split('data-call="call_log"')[0]
    assert f'id="{agent_thread.order_result.public_id}"' in order
    assert "649.00 EUR" in order
    log = turn.split('data-call="call_log"')[1]
    assert f'id="{agent_thread.bulky_result.public_id}"' in log
    assert f'<article class="cm-msg cm-path" id="{agent_thread.order_result.public_id}"' not in html


def test_a_long_result_is_collapsed_and_an_elided_one_marked(
    support: Client, agent_thread: AgentThread
):
    turn = article(thread_page(support, agent_thread), agent_thread.calls.public_id)

    log = turn.split('data-call="call_log"')[1]
    assert '<details class="cm-long">' in log
    assert "elided from the model input" in log
    order = turn.split('data-call="call_order"')[1].split('data-call="call_log"')[0]
    assert "cm-long" not in order
    assert "elided" not in order


def test_parts_are_links_and_images_are_not_fetched_without_the_setting(
    support: Client, agent_thread: AgentThread, settings
):
    question = article(thread_page(support, agent_thread), agent_thread.question.public_id)

    assert "My parcel ORD-1234 arrived damaged" in question
    assert f'href="{IMAGE_URL}"' in question
    assert "<img" not in question
    assert "file-receipt-1234" in question

    settings.CONVMEM_ADMIN_IMAGE_THUMBNAILS = True
    question = article(thread_page(support, agent_thread), agent_thread.question.public_id)
    assert re.search(rf'<img class="cm-thumb" src="{re.escape(IMAGE_URL)}"', question)
    assert 'referrerpolicy="no-referrer"' in question


def test_the_message_page_shows_the_call_and_its_details(
    support: Client, agent_thread: AgentThread
):
    url = reverse("admin:threads_message_change", args=[agent_thread.calls.public_id])
    html = support.get(url).content.decode()

    assert 'Called <code class="cm-tool">carrier_log</code>' in html
    assert '<details class="cm-more"><summary>Details</summary>' in html


def test_the_model_input_marks_the_elided_result(support: Client, agent_thread: AgentThread):
    url = reverse("admin:compaction_assemblyrecord_change", args=[agent_thread.assembly.public_id])
    html = support.get(url).content.decode()

    row = html.split(f'title="{agent_thread.bulky_result.public_id}"')[1].split("</tr>")[0]
    assert "Shown to the model as a short marker" in row
    assert "The result as stored" in row


def test_results_go_under_their_call_only_when_asked_and_name_it_otherwise(
    agent_thread: AgentThread,
):
    calls, order, bulky = agent_thread.calls, agent_thread.order_result, agent_thread.bulky_result

    nested = turns([calls, order, bulky], nest=[order.pk])
    alone = turns([order])

    assert nested[order.pk].under_call
    assert nested[calls.pk].calls[0].result == order
    assert not nested[bulky.pk].under_call  # not asked: it keeps its place
    assert nested[bulky.pk].answers == "carrier_log"
    assert not alone[order.pk].under_call
    assert alone[order.pk].answers == ""  # its call is not on the page


def test_json_is_pretty_printed_and_long_text_collapsed():
    assert block('{"a": 1}').text == '{\n  "a": 1\n}'
    assert block('{"a": 1}').is_json
    assert not block("plain words").is_json
    assert block("x\n" * 20).long
    assert not block("x\n" * 3).long
