"""POST /api/v1/threads/{id}/messages: the append hot path (bad input: test_bad_input.py)."""

from auditlog.models import AuditEvent
from compaction.models import AssemblyRecord
from convmem.tokens import count_tokens
from tests.conftest import make_thread, path_ids
from tests.threads.helpers import Rows, error_of, messages_url, post
from threads.models import Message


def test_first_message_hangs_under_the_hidden_root(acme, idem):
    thread = make_thread(acme.tenant)

    r = acme.client.post(
        messages_url(thread.public_id), {"role": "user", "content": "hi"}, format="json", **idem()
    )

    assert r.status_code == 201, r.data
    assert r.data["id"].startswith("msg_")
    assert r.data["thread_id"] == thread.public_id
    assert r.data["parent_id"] is None
    assert r.data["role"] == "user"
    assert r.data["content"] == "hi"
    assert r.data["edits_id"] is None
    assert r.data["created_at"]
    node = Message.objects.get(public_id=r.data["id"])
    assert node.parent_id == thread.root_id
    assert node.depth == 1


def test_token_count_is_computed_at_write(acme, idem):
    thread = make_thread(acme.tenant)
    content = "The quick brown fox jumps over the lazy dog. " * 3

    r = acme.client.post(
        messages_url(thread.public_id),
        {"role": "user", "content": content},
        format="json",
        **idem(),
    )

    assert r.data["token_count"] == count_tokens(content) > 0
    assert Message.objects.get(public_id=r.data["id"]).token_count == r.data["token_count"]


def test_parent_defaults_to_the_active_leaf_and_the_leaf_moves(acme, idem):
    thread = make_thread(acme.tenant)
    url = messages_url(thread.public_id)
    ids = []
    call = {"id": "call_1", "type": "function", "function": {"name": "lookup", "arguments": "{}"}}
    bodies = [
        {"role": "system", "content": "m0"},
        {"role": "user", "content": "m1"},
        {"role": "assistant", "content": "m2", "tool_calls": [call]},
        {"role": "tool", "content": "m3", "tool_call_id": "call_1"},
        {"role": "user", "content": "m4"},
    ]
    for body in bodies:
        r = acme.client.post(url, body, format="json", **idem())
        assert r.status_code == 201, r.data
        assert r.data["parent_id"] == (ids[-1] if ids else None)
        ids.append(r.data["id"])
        thread_view = acme.client.get(f"/api/v1/threads/{thread.public_id}").data
        assert thread_view["active_leaf_id"] == r.data["id"]

    assert path_ids(thread) == ids
    assert list(
        Message.objects.filter(public_id__in=ids).order_by("id").values_list("depth", flat=True)
    ) == [1, 2, 3, 4, 5]


def test_explicit_parent_appends_on_another_branch(acme, idem):
    thread = make_thread(acme.tenant, turns=4)
    old_path = path_ids(thread)
    fork_at = old_path[1]

    r = acme.client.post(
        messages_url(thread.public_id),
        {"role": "user", "content": "a different question", "parent_id": fork_at},
        format="json",
        **idem(),
    )

    assert r.status_code == 201, r.data
    assert r.data["parent_id"] == fork_at
    assert path_ids(thread) == [*old_path[:2], r.data["id"]]
    # The old branch is untouched and still readable.
    old = acme.client.get(messages_url(thread.public_id), {"leaf": old_path[-1]})
    assert [m["id"] for m in old.data["results"]] == old_path


def test_append_writes_one_audit_event_without_content(acme, idem):
    thread = make_thread(acme.tenant)
    before = AuditEvent.objects.count()

    r = acme.client.post(
        messages_url(thread.public_id),
        {"role": "user", "content": "secret words"},
        format="json",
        **idem(),
    )

    assert AuditEvent.objects.count() == before + 1
    event = AuditEvent.objects.latest("id")
    assert event.action == "message.appended"
    assert event.object_ids == [r.data["id"]]
    assert event.thread_public_id == thread.public_id
    assert event.actor_id == acme.api_key.prefix
    assert "secret" not in str(event.details)


def test_assistant_turn_can_name_its_assembly(acme, idem):
    thread = make_thread(acme.tenant, turns=1)
    assembly = AssemblyRecord.objects.create(
        tenant=acme.tenant, thread=thread, leaf=thread.active_leaf, assembler_version="v1"
    )

    r = acme.client.post(
        messages_url(thread.public_id),
        {"role": "assistant", "content": "answer", "assembly_id": assembly.public_id},
        format="json",
        **idem(),
    )

    assert r.status_code == 201, r.data
    assert r.data["assembly_id"] == assembly.public_id
    assert Message.objects.get(public_id=r.data["id"]).assembly_public_id == assembly.public_id


def test_assembly_id_is_only_for_assistant_turns_of_this_thread(acme, idem):
    thread = make_thread(acme.tenant, turns=1)
    other = make_thread(acme.tenant, turns=1)
    foreign = AssemblyRecord.objects.create(
        tenant=acme.tenant, thread=other, leaf=other.active_leaf, assembler_version="v1"
    )
    own = AssemblyRecord.objects.create(
        tenant=acme.tenant, thread=thread, leaf=thread.active_leaf, assembler_version="v1"
    )
    url = messages_url(thread.public_id)
    before = Rows.now()

    on_user = post(
        acme.client, url, {"role": "user", "content": "x", "assembly_id": own.public_id}, "k1"
    )
    unknown = post(
        acme.client,
        url,
        {"role": "assistant", "content": "x", "assembly_id": foreign.public_id},
        "k2",
    )

    assert error_of(on_user) == (400, "invalid")
    assert error_of(unknown) == (400, "unknown_assembly")
    assert Rows.now() == before
