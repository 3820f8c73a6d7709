"""POST /api/v1/threads/{id}/messages/{msg}/edit: an edit is a new sibling, the old node stays."""

from auditlog.models import AuditEvent
from tests.conftest import make_thread, path_ids
from tests.threads.helpers import Rows, edit_url, error_of, messages_url, post
from threads.models import Message


def test_edit_makes_a_sibling_that_becomes_the_active_leaf(acme):
    thread = make_thread(acme.tenant, turns=4)
    old_path = path_ids(thread)
    edited = old_path[2]

    r = post(acme.client, edit_url(thread.public_id, edited), {"content": "better"}, "e1")

    assert r.status_code == 201, r.data
    assert r.data["edits_id"] == edited
    assert r.data["parent_id"] == old_path[1]
    assert r.data["content"] == "better"
    original = Message.objects.get(public_id=edited)
    assert r.data["role"] == original.role
    new = Message.objects.get(public_id=r.data["id"])
    assert (new.parent_id, new.depth) == (original.parent_id, original.depth)
    assert path_ids(thread) == [*old_path[:2], r.data["id"]]
    thread_view = acme.client.get(f"/api/v1/threads/{thread.public_id}").data
    assert thread_view["active_leaf_id"] == r.data["id"]
    path = acme.client.get(messages_url(thread.public_id)).data["results"]
    assert [m["content"] for m in path] == ["turn 0", "turn 1", "better"]


def test_old_node_and_its_subtree_stay_readable(acme):
    thread = make_thread(acme.tenant, turns=4)
    old_path = path_ids(thread)

    post(acme.client, edit_url(thread.public_id, old_path[1]), {"content": "edited"}, "e1")

    before_edit = acme.client.get(messages_url(thread.public_id), {"leaf": old_path[-1]})
    assert before_edit.status_code == 200
    assert [m["id"] for m in before_edit.data["results"]] == old_path
    assert [m["content"] for m in before_edit.data["results"]] == [
        "turn 0",
        "turn 1",
        "turn 2",
        "turn 3",
    ]


def test_edit_of_the_first_message_keeps_one_root(acme):
    thread = make_thread(acme.tenant, turns=2)
    first = path_ids(thread)[0]

    r = post(acme.client, edit_url(thread.public_id, first), {"content": "hello again"}, "e1")

    assert r.status_code == 201, r.data
    assert r.data["parent_id"] is None
    assert Message.objects.filter(thread=thread, parent__isnull=True).count() == 1
    assert path_ids(thread) == [r.data["id"]]


def test_editing_an_edit_chains_edits_ids(acme):
    thread = make_thread(acme.tenant, turns=1)
    first = path_ids(thread)[0]

    one = post(acme.client, edit_url(thread.public_id, first), {"content": "v2"}, "e1")
    two = post(acme.client, edit_url(thread.public_id, one.data["id"]), {"content": "v3"}, "e2")

    assert two.data["edits_id"] == one.data["id"]
    assert one.data["edits_id"] == first
    tree = acme.client.get(f"/api/v1/threads/{thread.public_id}/tree").data["results"]
    assert [(n["sibling_index"], n["sibling_count"]) for n in tree] == [(1, 3), (2, 3), (3, 3)]


def test_edit_writes_an_audit_event_naming_both_nodes(acme):
    thread = make_thread(acme.tenant, turns=1)
    first = path_ids(thread)[0]

    r = post(acme.client, edit_url(thread.public_id, first), {"content": "v2"}, "e1")

    event = AuditEvent.objects.get(action="message.edited")
    assert event.object_ids == [r.data["id"], first]
    assert event.details["edits_id"] == first


def test_edit_is_idempotent(acme):
    thread = make_thread(acme.tenant, turns=1)
    first = path_ids(thread)[0]
    url = edit_url(thread.public_id, first)

    one = post(acme.client, url, {"content": "v2"}, "same")
    two = post(acme.client, url, {"content": "v2"}, "same")
    other = post(acme.client, url, {"content": "v3"}, "same")

    assert two.data == one.data
    assert two["Idempotent-Replayed"] == "true"
    assert error_of(other) == (422, "idempotency_key_reused")
    assert Message.objects.filter(edits__public_id=first).count() == 1


def test_edit_bad_input_leaves_nothing(acme, settings):
    settings.CONVMEM_MAX_CONTENT_CHARS = 10
    thread = make_thread(acme.tenant, turns=1)
    other = make_thread(acme.tenant, turns=1)
    first = path_ids(thread)[0]
    url = edit_url(thread.public_id, first)
    before = Rows.now()

    cases = [
        (post(acme.client, url, {"content": ""}, "b1"), (400, "empty_content")),
        (post(acme.client, url, {"content": "  \n"}, "b2"), (400, "empty_content")),
        (post(acme.client, url, {}, "b3"), (400, "invalid")),
        (post(acme.client, url, {"content": "x" * 11}, "b4"), (413, "content_too_large")),
        (post(acme.client, url, {"content": "ok"}), (400, "idempotency_key_required")),
        (post(acme.client, url, {"content": "ok"}, "bad key"), (400, "idempotency_key_invalid")),
        (
            post(acme.client, edit_url(thread.public_id, "msg_nope"), {"content": "ok"}, "b5"),
            (404, "not_found"),
        ),
        (
            post(
                acme.client,
                edit_url(thread.public_id, path_ids(other)[0]),
                {"content": "ok"},
                "b6",
            ),
            (404, "not_found"),
        ),
        (
            post(acme.client, edit_url("thr_nope", first), {"content": "ok"}, "b7"),
            (404, "not_found"),
        ),
    ]

    for response, expected in cases:
        assert error_of(response) == expected
    assert Rows.now() == before


def test_the_hidden_root_cannot_be_edited(acme):
    thread = make_thread(acme.tenant, turns=1)
    before = Rows.now()

    r = post(acme.client, edit_url(thread.public_id, thread.root.public_id), {"content": "x"}, "k")

    assert error_of(r) == (404, "not_found")
    assert Rows.now() == before
