"""Tenant isolation: globex sees none of acme's threads or messages, exactly like missing ids."""

import pytest

from convmem.api import encode_cursor
from tests.conftest import make_thread, path_ids
from tests.threads.helpers import Rows, edit_url, messages_url, post

MISSING_THREAD = "thr_0000000000000000000000"
MISSING_MESSAGE = "msg_0000000000000000000000"


@pytest.fixture
def acme_thread(acme):
    return make_thread(acme.tenant, user_ref="shared-user", turns=3)


def calls_on_thread(client, thread_id: str, message_id: str):
    """Every thread-scoped endpoint on ``thread_id`` (``message_id`` where one is needed)."""
    url = f"/api/v1/threads/{thread_id}"
    return {
        "get": client.get(url),
        "patch": client.patch(url, {"title": "mine now"}, format="json"),
        "switch": client.patch(url, {"active_leaf_id": message_id}, format="json"),
        "path": client.get(messages_url(thread_id)),
        "path-leaf": client.get(messages_url(thread_id), {"leaf": message_id}),
        "append": post(client, messages_url(thread_id), {"role": "user", "content": "x"}, "k1"),
        "edit": post(client, edit_url(thread_id, message_id), {"content": "x"}, "k2"),
        "tree": client.get(f"{url}/tree"),
    }


def test_every_thread_endpoint_answers_404_like_a_missing_thread(acme, globex, acme_thread):
    acme_message = path_ids(acme_thread)[-1]
    before = Rows.now()

    other_tenants = calls_on_thread(globex.client, acme_thread.public_id, acme_message)
    missing = calls_on_thread(globex.client, MISSING_THREAD, MISSING_MESSAGE)

    for name, response in other_tenants.items():
        assert response.status_code == 404, name
        assert (
            response.json()
            == missing[name].json()
            == {
                "code": "not_found",
                "detail": "Not found.",
            }
        ), name
    assert Rows.now() == before
    acme_thread.refresh_from_db()
    assert acme_thread.title == ""
    assert acme_thread.active_leaf.public_id == acme_message


def test_message_ids_of_another_tenant_read_like_missing_ones(acme, globex, acme_thread):
    acme_message = path_ids(acme_thread)[-1]
    own = make_thread(globex.tenant, turns=1)
    own_url = f"/api/v1/threads/{own.public_id}"

    def calls(message_id: str):
        return {
            "leaf": globex.client.get(messages_url(own.public_id), {"leaf": message_id}),
            "cursor": globex.client.get(
                messages_url(own.public_id), {"cursor": encode_cursor(message_id)}
            ),
            "tree-cursor": globex.client.get(
                f"{own_url}/tree", {"cursor": encode_cursor(message_id)}
            ),
            "edit": post(globex.client, edit_url(own.public_id, message_id), {"content": "x"}, "e"),
            "parent": post(
                globex.client,
                messages_url(own.public_id),
                {"role": "user", "content": "x", "parent_id": message_id},
                "p",
            ),
            "switch": globex.client.patch(own_url, {"active_leaf_id": message_id}, format="json"),
        }

    before = Rows.now()
    foreign = calls(acme_message)
    missing = calls(MISSING_MESSAGE)

    for name, response in foreign.items():
        assert response.status_code in (400, 404), name
        assert response.status_code == missing[name].status_code, name
        # The detail may echo the id the caller sent, and nothing else.
        assert response.content.decode().replace(acme_message, "ID") == (
            missing[name].content.decode().replace(MISSING_MESSAGE, "ID")
        ), name
    assert Rows.now() == before


def test_list_never_shows_another_tenants_threads(acme, globex, acme_thread):
    make_thread(globex.tenant, user_ref="shared-user")

    theirs = globex.client.get("/api/v1/threads").data["results"]
    by_user = globex.client.get("/api/v1/threads", {"user_ref": "shared-user"}).data["results"]
    mine = acme.client.get("/api/v1/threads").data["results"]

    assert acme_thread.public_id not in {t["id"] for t in theirs}
    assert len(theirs) == 1
    assert [t["id"] for t in by_user] == [theirs[0]["id"]]
    assert [t["id"] for t in mine] == [acme_thread.public_id]


def test_idempotency_keys_do_not_leak_responses_across_tenants(acme, globex, acme_thread):
    body = {"role": "user", "content": "x"}
    mine = post(acme.client, messages_url(acme_thread.public_id), body, "same")
    own = make_thread(globex.tenant)

    theirs = post(globex.client, messages_url(own.public_id), body, "same")

    assert theirs.status_code == 201
    assert theirs.data["id"] != mine.data["id"]
    assert theirs.data["thread_id"] == own.public_id
