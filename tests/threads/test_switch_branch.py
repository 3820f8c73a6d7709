"""PATCH /api/v1/threads/{id} with ``active_leaf_id``: switch branch, continue from anywhere."""

from auditlog.models import AuditEvent
from tests.conftest import SYSTEM, make_thread, path_ids
from tests.threads.helpers import Rows, error_of, messages_url, post
from threads import services


def patch(client, thread_id: str, body: object):
    return client.patch(f"/api/v1/threads/{thread_id}", body, format="json")


def test_switch_to_another_leaf(acme):
    thread = make_thread(acme.tenant, turns=3)
    old = path_ids(thread)
    services.message_edit(thread=thread, actor=SYSTEM, message_public_id=old[1], content="v2")

    r = patch(acme.client, thread.public_id, {"active_leaf_id": old[-1]})

    assert r.status_code == 200, r.data
    assert r.data["active_leaf_id"] == old[-1]
    assert path_ids(thread) == old
    path = acme.client.get(messages_url(thread.public_id)).data["results"]
    assert [m["id"] for m in path] == old
    event = AuditEvent.objects.get(action="thread.branch_switched")
    assert event.details["to"] == old[-1]


def test_switch_to_a_non_leaf_continues_from_there(acme):
    thread = make_thread(acme.tenant, turns=4)
    old = path_ids(thread)

    patch(acme.client, thread.public_id, {"active_leaf_id": old[1]})
    path = acme.client.get(messages_url(thread.public_id)).data["results"]
    r = post(acme.client, messages_url(thread.public_id), {"role": "user", "content": "x"}, "k1")

    assert [m["id"] for m in path] == old[:2]
    assert r.data["parent_id"] == old[1]
    assert path_ids(thread) == [*old[:2], r.data["id"]]
    # The abandoned continuation is still there.
    kept = acme.client.get(messages_url(thread.public_id), {"leaf": old[-1]}).data["results"]
    assert [m["id"] for m in kept] == old


def test_switch_to_null_starts_over_from_the_root(acme):
    thread = make_thread(acme.tenant, turns=2)
    old = path_ids(thread)

    r = patch(acme.client, thread.public_id, {"active_leaf_id": None})
    path = acme.client.get(messages_url(thread.public_id)).data
    new = post(acme.client, messages_url(thread.public_id), {"role": "user", "content": "x"}, "k")

    assert r.status_code == 200
    assert r.data["active_leaf_id"] is None
    assert path == {"results": [], "next": None}
    assert new.data["parent_id"] is None
    assert path_ids(thread) == [new.data["id"]]
    tree = acme.client.get(f"/api/v1/threads/{thread.public_id}/tree").data["results"]
    assert [
        (n["id"], n["sibling_index"], n["sibling_count"]) for n in tree if not n["parent_id"]
    ] == [
        (old[0], 1, 2),
        (new.data["id"], 2, 2),
    ]


def test_patch_without_active_leaf_id_keeps_the_leaf(acme):
    thread = make_thread(acme.tenant, turns=2)
    leaf = path_ids(thread)[-1]

    r = patch(acme.client, thread.public_id, {"title": "x"})

    assert r.data["active_leaf_id"] == leaf
    assert not AuditEvent.objects.filter(action="thread.branch_switched").exists()


def test_invalid_active_leaf_id_is_400_and_changes_nothing(acme, globex):
    thread = make_thread(acme.tenant, turns=2)
    leaf = path_ids(thread)[-1]
    other = make_thread(acme.tenant, turns=1)
    foreign = make_thread(globex.tenant, turns=1)
    before = Rows.now()

    for bad in ["msg_nope", path_ids(other)[0], path_ids(foreign)[0], thread.root.public_id]:
        r = patch(acme.client, thread.public_id, {"active_leaf_id": bad, "title": "changed"})
        assert error_of(r) == (400, "unknown_message"), bad
    for bad in ["", ["x"], {"a": 1}, "m" * 41]:
        r = patch(acme.client, thread.public_id, {"active_leaf_id": bad})
        assert error_of(r) == (400, "invalid"), bad

    assert Rows.now() == before
    thread.refresh_from_db()
    assert thread.active_leaf.public_id == leaf
    assert thread.title == ""
