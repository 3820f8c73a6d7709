"""GET /api/v1/threads/{id}/messages: the path root → leaf, paged from the leaf up."""

from convmem.api import encode_cursor
from tests.conftest import SYSTEM, make_thread, path_ids
from tests.threads.helpers import error_of, messages_url
from threads import selectors, services


def walk_pages(client, url: str, **params: str) -> list[list[str]]:
    """Follow ``next`` from ``url``; the ids of each page."""
    pages: list[list[str]] = []
    r = client.get(url, params)
    while True:
        assert r.status_code == 200, r.data
        pages.append([m["id"] for m in r.data["results"]])
        if r.data["next"] is None:
            return pages
        r = client.get(r.data["next"])


def test_path_of_the_active_leaf_in_root_to_leaf_order(acme):
    thread = make_thread(acme.tenant, turns=5)

    r = acme.client.get(messages_url(thread.public_id))

    assert r.status_code == 200
    assert [m["id"] for m in r.data["results"]] == path_ids(thread)
    assert [m["content"] for m in r.data["results"]] == [f"turn {i}" for i in range(5)]
    assert [m["role"] for m in r.data["results"]] == ["user", "assistant"] * 2 + ["user"]
    assert r.data["results"][0]["parent_id"] is None
    assert all(m["thread_id"] == thread.public_id for m in r.data["results"])
    assert r.data["next"] is None


def test_empty_thread_has_an_empty_path(acme):
    thread = make_thread(acme.tenant)

    r = acme.client.get(messages_url(thread.public_id))

    assert r.data == {"results": [], "next": None}


def test_pages_walk_from_the_leaf_to_the_root(acme):
    thread = make_thread(acme.tenant, turns=7)
    ids = path_ids(thread)

    pages = walk_pages(acme.client, messages_url(thread.public_id), limit="3")

    assert pages == [ids[4:7], ids[1:4], ids[0:1]]


def test_exact_multiple_of_the_page_size_has_no_empty_last_page(acme):
    thread = make_thread(acme.tenant, turns=6)
    ids = path_ids(thread)

    pages = walk_pages(acme.client, messages_url(thread.public_id), limit="3")

    assert pages == [ids[3:6], ids[0:3]]


def test_leaf_parameter_reads_another_branch_and_pages_keep_it(acme):
    thread = make_thread(acme.tenant, turns=6)
    old = path_ids(thread)
    services.message_append(
        thread=thread, actor=SYSTEM, role="user", content="fork", parent_public_id=old[1]
    )

    pages = walk_pages(acme.client, messages_url(thread.public_id), leaf=old[4], limit="2")

    assert pages == [old[3:5], old[1:3], old[0:1]]
    assert path_ids(thread) != old


def test_next_carries_the_limit(acme):
    thread = make_thread(acme.tenant, turns=5)

    r = acme.client.get(messages_url(thread.public_id), {"limit": "2"})
    older = acme.client.get(r.data["next"])

    assert "limit=2" in r.data["next"]
    assert len(older.data["results"]) == 2


def test_a_limit_above_the_maximum_is_a_400_naming_it(acme, settings):
    settings.CONVMEM_MAX_PAGE_SIZE = 4
    thread = make_thread(acme.tenant, turns=6)

    r = acme.client.get(messages_url(thread.public_id), {"limit": "5"})

    assert r.status_code == 400
    assert r.data["detail"] == "limit: must be at most 4."
    ok = acme.client.get(messages_url(thread.public_id), {"limit": "4"})
    assert len(ok.data["results"]) == 4
    assert ok.data["next"]


def test_default_page_size_is_the_setting(acme, settings):
    settings.CONVMEM_PAGE_SIZE = 3
    thread = make_thread(acme.tenant, turns=5)

    r = acme.client.get(messages_url(thread.public_id))

    assert [m["id"] for m in r.data["results"]] == path_ids(thread)[2:]


def test_bad_parameters(acme):
    thread = make_thread(acme.tenant, turns=2)
    other = make_thread(acme.tenant, turns=2)
    url = messages_url(thread.public_id)

    assert error_of(acme.client.get(url, {"limit": "abc"})) == (400, "invalid")
    assert error_of(acme.client.get(url, {"limit": "0"})) == (400, "invalid")
    assert error_of(acme.client.get(url, {"cursor": "%%%"})) == (400, "invalid_cursor")
    assert error_of(acme.client.get(url, {"leaf": "msg_nope"})) == (404, "unknown_message")
    assert error_of(acme.client.get(url, {"leaf": path_ids(other)[0]})) == (
        404,
        "unknown_message",
    )
    assert error_of(acme.client.get(url, {"leaf": thread.root.public_id})) == (
        404,
        "unknown_message",
    )
    assert error_of(acme.client.get(url, {"cursor": encode_cursor(path_ids(other)[0])})) == (
        400,
        "invalid_cursor",
    )
    assert error_of(acme.client.get(messages_url("thr_nope"))) == (404, "not_found")


def test_path_page_selector_matches_a_python_walk(acme):
    thread = make_thread(acme.tenant, turns=12)
    ids = path_ids(thread)

    page = selectors.path_page(thread=thread, leaf=thread.active_leaf, limit=5)
    everything = selectors.path_page(thread=thread, leaf=thread.active_leaf, limit=1000)

    assert [m.public_id for m in page.messages] == ids[-5:]
    assert page.older_start.public_id == ids[-6]
    assert [m.public_id for m in everything.messages] == ids
    assert everything.older_start is None
    parents = [m.parent_id for m in everything.messages]
    assert parents == [thread.root_id] + [m.pk for m in everything.messages[:-1]]
