"""The conversation page says when a thread's memos are asked for early (its turns outran its
last memo), and says nothing for a thread at a human pace."""

import pytest

from tests.conftest import make_thread
from threads import services as thread_services

pytestmark = pytest.mark.django_db
CHANGELIST = "/admin/threads/thread/"


def test_the_conversation_page_shows_a_memo_lead_only_when_there_is_one(support, acme):
    fast, at_pace = make_thread(acme.tenant), make_thread(acme.tenant)
    thread_services.thread_memo_lead_record(thread_id=fast.pk, messages=7)

    shown = support.get(f"{CHANGELIST}{fast.public_id}/change/").content.decode()
    without = support.get(f"{CHANGELIST}{at_pace.public_id}/change/").content.decode()

    assert "memos asked for 7 messages early" in shown
    assert 'id="thread-memo-lead"' not in without
