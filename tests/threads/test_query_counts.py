"""Query counts on the read endpoints are bounded and do not grow with the thread."""

from django.db import connection
from django.test.utils import CaptureQueriesContext

from convmem.models import ModelProfile
from tests.conftest import SYSTEM, make_thread, path_ids
from tests.threads.helpers import messages_url
from threads import services


def queries(client, url: str, **params: str) -> int:
    with CaptureQueriesContext(connection) as captured:
        r = client.get(url, params)
    assert r.status_code == 200, r.data
    return len(captured)


def branchy_thread(tenant, turns: int):
    """A thread of ``turns`` turns with an edit at every fifth turn (forks on the path)."""
    thread = make_thread(tenant, turns=turns)
    for public_id in path_ids(thread)[::5]:
        services.message_edit(thread=thread, actor=SYSTEM, message_public_id=public_id, content="e")
    thread.refresh_from_db()
    return thread


def test_path_is_a_handful_of_queries(acme, django_assert_max_num_queries):
    thread = make_thread(acme.tenant, turns=10)

    # The API key, the thread, the path.
    with django_assert_max_num_queries(3):
        r = acme.client.get(messages_url(thread.public_id))

    assert len(r.data["results"]) == 10


def test_path_queries_do_not_grow_with_the_thread(acme):
    small = make_thread(acme.tenant, turns=10)
    big = make_thread(acme.tenant, turns=200)

    assert queries(acme.client, messages_url(small.public_id), limit="500") == queries(
        acme.client, messages_url(big.public_id), limit="500"
    )
    leaf = path_ids(big)[100]
    assert queries(acme.client, messages_url(big.public_id), leaf=leaf) == queries(
        acme.client, messages_url(small.public_id), leaf=path_ids(small)[3]
    )


def test_tree_is_a_handful_of_queries(acme, django_assert_max_num_queries):
    thread = branchy_thread(acme.tenant, 10)

    # The API key, the thread, the page of nodes, their sibling groups.
    with django_assert_max_num_queries(4):
        r = acme.client.get(f"/api/v1/threads/{thread.public_id}/tree")

    assert len(r.data["results"]) == 12


def test_tree_queries_do_not_grow_with_the_thread(acme):
    small = branchy_thread(acme.tenant, 10)
    big = branchy_thread(acme.tenant, 200)

    assert queries(acme.client, f"/api/v1/threads/{small.public_id}/tree", limit="500") == (
        queries(acme.client, f"/api/v1/threads/{big.public_id}/tree", limit="500")
    )


def test_list_is_a_handful_of_queries(acme, django_assert_max_num_queries):
    ModelProfile.objects.create(tenant=acme.tenant, name="default", is_default=True)
    for _ in range(10):
        make_thread(acme.tenant, turns=2)

    # The API key, the page of threads (leaf and profile joined in).
    with django_assert_max_num_queries(2):
        r = acme.client.get("/api/v1/threads")

    assert len(r.data["results"]) == 10


def test_list_queries_do_not_grow_with_the_page_or_the_threads(acme):
    profile = ModelProfile.objects.create(tenant=acme.tenant, name="default", is_default=True)
    for _ in range(3):
        services.thread_create(tenant=acme.tenant, actor=SYSTEM, user_ref="u", profile=profile)
    few = queries(acme.client, "/api/v1/threads")
    for _ in range(60):
        thread = services.thread_create(
            tenant=acme.tenant, actor=SYSTEM, user_ref="u", profile=profile
        )
        services.message_append(thread=thread, actor=SYSTEM, role="user", content="x")

    assert queries(acme.client, "/api/v1/threads", limit="60") == few
    assert queries(acme.client, "/api/v1/threads", user_ref="u") == few


def test_one_thread_is_a_handful_of_queries(acme, django_assert_max_num_queries):
    thread = make_thread(acme.tenant, turns=3)

    with django_assert_max_num_queries(2):
        acme.client.get(f"/api/v1/threads/{thread.public_id}")


def test_append_queries_do_not_grow_with_the_thread(acme):
    small = make_thread(acme.tenant, turns=10)
    big = make_thread(acme.tenant, turns=200)

    def append(thread, key: str) -> int:
        with CaptureQueriesContext(connection) as captured:
            r = acme.client.post(
                messages_url(thread.public_id),
                {"role": "user", "content": "x"},
                format="json",
                HTTP_IDEMPOTENCY_KEY=key,
            )
        assert r.status_code == 201
        return len(captured)

    assert append(small, "a") == append(big, "b")
