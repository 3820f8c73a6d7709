"""Recalled messages stored by key in a record's items (issue 24, stored bytes): the record
names each by primary key with the excerpt's token count, replay, the export and the admin see
the same items as the context response, and the migration rewrites records written before."""

import pytest
from django.db import connection
from django.db.migrations.executor import MigrationExecutor

from audit.exports import Export
from compaction.models import AssemblyRecord
from compaction.replay import assembly_replay
from compaction.selectors import assembly_items
from tests.compaction.helpers import post_context
from tests.compaction.test_recall import BUDGET, long_thread

BEFORE = [("compaction", "0009_record_items_by_key")]


def test_a_recalled_message_is_stored_by_key_and_replays_to_the_same_hash(acme):
    thread, fact, _ = long_thread(acme)

    response = post_context(acme.client, thread, **BUDGET)
    record = AssemblyRecord.objects.get(public_id=response.data["assembly_id"])

    [stored] = [item for item in record.items if item["kind"] == "recalled"]
    assert stored == {"kind": "recalled", "pk": fact.pk, "tokens": stored["tokens"]}
    [shown] = [item for item in assembly_items(record) if item["kind"] == "recalled"]
    assert shown == {
        "kind": "recalled",
        "id": fact.public_id,
        "role": "user",
        "tokens": response.data["tokens"]["recalled"] - 4,
    }
    replay = assembly_replay(assembly=record)
    assert replay.matches, replay.reason
    assert replay.messages == response.data["messages"]
    sections = dict(Export(tenant=acme.tenant, fmt="json", thread=thread).sections(thread))
    [exported] = [a for a in sections["assembly"] if a["id"] == record.public_id]
    assert exported["items"] == assembly_items(record)


@pytest.mark.django_db(transaction=True)
def test_the_migration_names_existing_recalled_items_by_key_and_they_show_the_same():
    executor = MigrationExecutor(connection)
    executor.migrate(BEFORE)
    apps = executor.loader.project_state(BEFORE).apps
    record_id, kept_id, shown = _record_with_whole_recalled_items(apps)

    executor = MigrationExecutor(connection)
    executor.migrate(executor.loader.graph.leaf_nodes())

    record = AssemblyRecord.objects.get(pk=record_id)
    recalled = [item for item in record.items if item["kind"] == "recalled"]
    assert recalled[0] == {"kind": "recalled", "pk": recalled[0]["pk"], "tokens": 21}
    # An item that is not the message's (another role) stays whole.
    assert recalled[1] == shown[2]
    assert assembly_items(record) == shown
    # A record that keeps its rendered input keeps its items whole.
    assert AssemblyRecord.objects.get(pk=kept_id).items == shown


def _record_with_whole_recalled_items(apps) -> tuple[int, int, list[dict]]:
    """A record as written before 0010 (whole recalled items) and one that keeps its
    rendered input, through the historical models."""
    Tenant = apps.get_model("convmem", "Tenant")
    Thread = apps.get_model("threads", "Thread")
    Message = apps.get_model("threads", "Message")
    AssemblyRecord = apps.get_model("compaction", "AssemblyRecord")
    tenant = Tenant.objects.create(name="old")
    thread = Thread.objects.create(tenant=tenant, user_ref="u")
    parent = Message.objects.create(thread=thread, role="root", public_id="msg_root")
    path = []
    for n in range(1, 5):
        role = "user" if n % 2 else "assistant"
        parent = Message.objects.create(
            thread=thread, role=role, parent=parent, depth=n, token_count=n, public_id=f"msg_{n}"
        )
        path.append(parent)
    shown = [
        {"kind": "messages", "first": path[2].pk, "last": path[2].pk, "count": 1},
        {"kind": "recalled", "id": "msg_1", "role": "user", "tokens": 21},
        {"kind": "recalled", "id": "msg_2", "role": "user", "tokens": 22},
        {"kind": "message", "id": "msg_4", "role": "assistant", "tokens": 4},
    ]
    expanded = [
        {"kind": "message", "id": "msg_3", "role": "user", "tokens": 3},
        *shown[1:],
    ]
    common = {"tenant": tenant, "thread": thread, "leaf": path[3], "assembler_version": "x"}
    record = AssemblyRecord.objects.create(**common, items=shown, rendered_hash="0" * 64)
    kept = AssemblyRecord.objects.create(
        **common, items=expanded, rendered_hash="0" * 64, rendered_pieces=[]
    )
    return record.pk, kept.pk, expanded
