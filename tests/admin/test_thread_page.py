"""The thread page: one path with its forks, switching branches, side branches on demand,
message lineage, audit-on-view and a query count that does not grow with the thread."""

from collections.abc import Callable

from django.db import connection
from django.test import Client
from django.test.utils import CaptureQueriesContext
from django.urls import reverse

from auditlog.models import AuditEvent
from tests.admin.conftest import Branched
from threads.admin_views import PAGE_SIZE
from threads.models import Thread


def thread_url(thread: Thread) -> str:
    return reverse("admin:threads_thread_change", args=[thread.public_id])


def test_it_shows_the_active_path_with_sibling_positions(support: Client, branched: Branched):
    response = support.get(thread_url(branched.thread))

    assert response.status_code == 200
    page = response.content.decode()
    for shown in (branched.u1, branched.a1, branched.u2b, branched.a2c):
        assert f'id="{shown.public_id}"' in page
    for hidden in (branched.u2, branched.a2, branched.a2b):
        assert f'id="{hidden.public_id}"' not in page
    nodes = {n.message.public_id: n for n in response.context["nodes"]}
    assert (
        nodes[branched.u2b.public_id].position,
        len(nodes[branched.u2b.public_id].siblings),
    ) == (
        2,
        2,
    )
    assert (
        nodes[branched.a2c.public_id].position,
        len(nodes[branched.a2c.public_id].siblings),
    ) == (
        2,
        2,
    )
    assert nodes[branched.u2b.public_id].replaced.public_id == branched.u2.public_id
    assert "Can I get a refund" in page  # what the edit replaced, shown beside it
    assert nodes[branched.a2c.public_id].is_active_leaf


def test_switching_shows_another_branch_without_moving_the_active_leaf(
    support: Client, branched: Branched
):
    response = support.get(thread_url(branched.thread), {"branch": branched.u2.public_id})

    assert response.status_code == 302
    assert f"leaf={branched.a2.public_id}" in response["Location"]
    page = support.get(response["Location"]).content.decode()
    assert f'id="{branched.a2.public_id}"' in page
    assert f'id="{branched.u2b.public_id}"' not in page
    assert 'id="branch-banner"' in page
    branched.thread.refresh_from_db()
    assert branched.thread.active_leaf_id == branched.a2c.pk


def test_a_side_branch_loads_on_demand(support: Client, branched: Branched):
    url = reverse(
        "admin:threads_thread_branch", args=[branched.thread.public_id, branched.u2.public_id]
    )

    response = support.get(url, headers={"X-Requested-With": "fetch"})

    assert response.status_code == 200
    fragment = response.content.decode()
    assert "<html" not in fragment
    assert branched.u2.public_id in fragment
    assert branched.a2.public_id in fragment


def test_viewing_a_thread_is_audited(support: Client, branched: Branched):
    support.get(thread_url(branched.thread))

    event = AuditEvent.objects.filter(action="thread.viewed").latest("id")
    assert (event.actor_type, event.actor_id) == ("staff", "sam-support")
    assert event.thread_public_id == branched.thread.public_id
    assert event.tenant_id == branched.thread.tenant_id


def test_older_messages_are_a_page_away(support: Client, long_thread: Callable[[int], Thread]):
    thread = long_thread(PAGE_SIZE + 5)

    response = support.get(thread_url(thread))

    assert len(response.context["nodes"]) == PAGE_SIZE
    older = response.context["older_url"]
    assert older
    rest = support.get(older).context["nodes"]
    assert [n.message.content for n in rest] == [f"turn {i}" for i in range(5)]


def _queries_for(client: Client, url: str) -> list[str]:
    client.get(url)  # warm the session
    with CaptureQueriesContext(connection) as queries:
        response = client.get(url)
    assert response.status_code == 200
    return [q["sql"] for q in queries]


def test_query_count_does_not_grow_with_the_thread(
    support: Client, long_thread: Callable[[int], Thread]
):
    small = _queries_for(support, thread_url(long_thread(20)))
    large = _queries_for(support, thread_url(long_thread(500)))

    assert len(small) == len(large), large
    # session, user, permissions, thread, path, sibling groups, memos, audit event
    assert len(large) <= 10, large


def test_message_page_shows_lineage(support: Client, branched: Branched):
    url = reverse("admin:threads_message_change", args=[branched.u2b.public_id])

    response = support.get(url)

    assert response.status_code == 200
    assert response.context["edits"].public_id == branched.u2.public_id
    assert [a.public_id for a, _ in response.context["ancestors"]] == [
        branched.u1.public_id,
        branched.a1.public_id,
    ]
    assert [c.public_id for c in response.context["children"]] == [
        branched.a2b.public_id,
        branched.a2c.public_id,
    ]
    assert response.context["position"] == 2
    original = support.get(reverse("admin:threads_message_change", args=[branched.u2.public_id]))
    assert [s.public_id for s in original.context["edited_by"]] == [branched.u2b.public_id]


def test_threads_are_found_by_user_ref_and_messages_by_content(support: Client, branched: Branched):
    threads = support.get(reverse("admin:threads_thread_changelist"), {"q": "user-7"})
    messages = support.get(reverse("admin:threads_message_changelist"), {"q": "replacement"})

    assert [t.public_id for t in threads.context["cl"].result_list] == [branched.thread.public_id]
    assert {m.public_id for m in messages.context["cl"].result_list} == {
        branched.a2b.public_id,
        branched.a2c.public_id,
    }
    assert AuditEvent.objects.filter(action="message.searched", actor_id="sam-support").exists()
