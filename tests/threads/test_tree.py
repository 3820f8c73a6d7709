"""GET /api/v1/threads/{id}/tree: every node, parent ids and sibling positions ("2 / 3")."""

from convmem.api import encode_cursor
from tests.conftest import SYSTEM, make_thread, path_ids
from tests.threads.helpers import error_of
from threads import services


def tree_url(thread_id: str) -> str:
    return f"/api/v1/threads/{thread_id}/tree"


def test_empty_thread_has_an_empty_tree(acme):
    thread = make_thread(acme.tenant)

    r = acme.client.get(tree_url(thread.public_id))

    assert r.data == {"results": [], "next": None}


def test_linear_thread(acme):
    thread = make_thread(acme.tenant, turns=3)
    ids = path_ids(thread)

    r = acme.client.get(tree_url(thread.public_id))

    assert r.status_code == 200
    nodes = r.data["results"]
    assert [n["id"] for n in nodes] == ids
    assert [n["parent_id"] for n in nodes] == [None, ids[0], ids[1]]
    assert [n["depth"] for n in nodes] == [1, 2, 3]
    assert all((n["sibling_index"], n["sibling_count"]) == (1, 1) for n in nodes)
    assert all(n["thread_id"] == thread.public_id for n in nodes)


def test_sibling_positions_for_a_branch_switcher(acme):
    thread = make_thread(acme.tenant, turns=2)
    first, answer = path_ids(thread)
    edit_one = services.message_edit(
        thread=thread, actor=SYSTEM, message_public_id=answer, content="v2"
    )
    edit_two = services.message_edit(
        thread=thread, actor=SYSTEM, message_public_id=answer, content="v3"
    )
    under_edit = services.message_append(
        thread=thread,
        actor=SYSTEM,
        role="user",
        content="follow-up",
        parent_public_id=edit_one.public_id,
    )

    r = acme.client.get(tree_url(thread.public_id))

    by_id = {n["id"]: n for n in r.data["results"]}
    assert list(by_id) == [
        first,
        answer,
        edit_one.public_id,
        edit_two.public_id,
        under_edit.public_id,
    ]
    position = {i: (n["sibling_index"], n["sibling_count"]) for i, n in by_id.items()}
    assert position == {
        first: (1, 1),
        answer: (1, 3),
        edit_one.public_id: (2, 3),
        edit_two.public_id: (3, 3),
        under_edit.public_id: (1, 1),
    }
    assert by_id[edit_one.public_id]["edits_id"] == answer
    assert by_id[edit_two.public_id]["edits_id"] == answer
    assert by_id[under_edit.public_id]["parent_id"] == edit_one.public_id
    assert by_id[under_edit.public_id]["depth"] == 3


def test_edited_first_messages_are_siblings_under_the_hidden_root(acme):
    thread = make_thread(acme.tenant, turns=1)
    first = path_ids(thread)[0]
    services.message_edit(thread=thread, actor=SYSTEM, message_public_id=first, content="again")

    r = acme.client.get(tree_url(thread.public_id))

    assert [
        (n["parent_id"], n["sibling_index"], n["sibling_count"]) for n in r.data["results"]
    ] == [
        (None, 1, 2),
        (None, 2, 2),
    ]


def test_pages_cover_every_node_once_with_positions_across_pages(acme):
    thread = make_thread(acme.tenant, turns=3)
    ids = path_ids(thread)
    for i in range(4):
        services.message_append(
            thread=thread, actor=SYSTEM, role="user", content=f"alt {i}", parent_public_id=ids[0]
        )

    seen = []
    r = acme.client.get(tree_url(thread.public_id), {"limit": "2"})
    while True:
        assert r.status_code == 200
        assert len(r.data["results"]) <= 2
        seen += r.data["results"]
        if r.data["next"] is None:
            break
        r = acme.client.get(r.data["next"])

    assert len(seen) == 7
    assert len({n["id"] for n in seen}) == 7
    children_of_first = [n for n in seen if n["parent_id"] == ids[0]]
    assert [(n["sibling_index"], n["sibling_count"]) for n in children_of_first] == [
        (i, 5) for i in range(1, 6)
    ]


def test_bad_parameters(acme):
    thread = make_thread(acme.tenant, turns=2)
    other = make_thread(acme.tenant, turns=1)
    url = tree_url(thread.public_id)

    assert error_of(acme.client.get(url, {"limit": "x"})) == (400, "invalid")
    assert error_of(acme.client.get(url, {"cursor": "!!"})) == (400, "invalid_cursor")
    assert error_of(acme.client.get(url, {"cursor": encode_cursor(path_ids(other)[0])})) == (
        400,
        "invalid_cursor",
    )
    assert error_of(acme.client.get(tree_url("thr_nope"))) == (404, "not_found")
