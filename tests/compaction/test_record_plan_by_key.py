"""A record's plan names the covered range's ends and the stable prefix's memo and first turn
by key (issue 24, stored bytes): the admin page and the export show them as public ids, as
written before; the migration rewrites plans written before."""

import pytest
from django.db import connection
from django.db.migrations.executor import MigrationExecutor

from audit.exports import Export
from compaction.models import AssemblyRecord, Summary
from compaction.selectors import assembly_plan, plans_shown
from tests.compaction.helpers import grow, post_context
from tests.conftest import make_thread
from threads.models import Message

BEFORE = [("compaction", "0013_record_leaf_unindexed")]


def _path(thread) -> list[Message]:
    return list(Message.objects.filter(thread=thread).exclude(role="root").order_by("pk"))


def test_the_prefix_is_stored_by_key_and_shown_by_public_id(acme):
    thread = make_thread(acme.tenant)
    grow(thread, 5)
    response = post_context(acme.client, thread, system="Be brief.")
    assert response.status_code == 200, response.data
    record = AssemblyRecord.objects.get(public_id=response.data["assembly_id"])
    path = _path(thread)

    assert record.plan["prefix"]["first"] == path[0].pk
    assert "first_id" not in record.plan["prefix"]
    shown = assembly_plan(record)["prefix"]
    assert shown["first_id"] == path[0].public_id
    assert shown["memo_id"] is None
    assert shown["hash"] == response.data["prefix"]["hash"]
    sections = dict(Export(tenant=acme.tenant, fmt="json", thread=thread).sections(thread))
    [exported] = [a for a in sections["assembly"] if a["id"] == record.public_id]
    assert exported["plan"] == assembly_plan(record)


def test_a_covered_range_and_a_memo_by_key_are_shown_by_public_id(acme):
    thread = make_thread(acme.tenant)
    grow(thread, 6)
    path = _path(thread)
    memo = Summary.objects.create(
        thread=thread, first=path[0], last=path[3], segment_first=path[0], status="ready"
    )
    stored = {
        "covered": {"first": path[1].pk, "last": path[3].pk, "count": 3},
        "prefix": {"messages": 3, "tokens": 90, "hash": "ab", "memo": memo.pk, "first": path[4].pk},
    }

    [shown] = plans_shown(thread_id=thread.pk, stored=[stored])

    assert shown["covered"] == {
        "first_id": path[1].public_id,
        "last_id": path[3].public_id,
        "count": 3,
    }
    assert shown["prefix"] == {
        "messages": 3,
        "tokens": 90,
        "hash": "ab",
        "memo_id": memo.public_id,
        "first_id": path[4].public_id,
    }


@pytest.mark.django_db(transaction=True)
def test_the_migration_keys_existing_plans_and_they_show_the_same():
    executor = MigrationExecutor(connection)
    executor.migrate(BEFORE)
    apps = executor.loader.project_state(BEFORE).apps
    record_id, unknown_id, written = _records_with_public_id_plans(apps)

    executor = MigrationExecutor(connection)
    executor.migrate(executor.loader.graph.leaf_nodes())

    record = AssemblyRecord.objects.get(pk=record_id)
    assert set(record.plan["covered"]) == {"first", "last", "count"}
    assert set(record.plan["prefix"]) == {"messages", "tokens", "hash", "memo", "first"}
    assert assembly_plan(record) == {**assembly_plan(record), **written}
    # Ids not found in the thread: the plan stays as written.
    unknown = AssemblyRecord.objects.get(pk=unknown_id)
    assert unknown.plan["prefix"]["first_id"] == "msg_gone"


def _records_with_public_id_plans(apps) -> tuple[int, int, dict]:
    Tenant = apps.get_model("convmem", "Tenant")
    Thread = apps.get_model("threads", "Thread")
    Message = apps.get_model("threads", "Message")
    Summary = apps.get_model("compaction", "Summary")
    AssemblyRecord = apps.get_model("compaction", "AssemblyRecord")
    tenant = Tenant.objects.create(name="old")
    thread = Thread.objects.create(tenant=tenant, user_ref="u")
    parent = Message.objects.create(thread=thread, role="root", public_id="msg_root")
    path = []
    for n in range(1, 6):
        parent = Message.objects.create(
            thread=thread, role="user", parent=parent, depth=n, public_id=f"msg_{n}"
        )
        path.append(parent)
    memo = Summary.objects.create(
        thread=thread, first=path[0], last=path[2], segment_first=path[0], status="ready"
    )
    written = {
        "covered": {"first_id": "msg_2", "last_id": "msg_3", "count": 2},
        "memo_status": "ready",
        "prefix": {
            "messages": 3,
            "tokens": 90,
            "hash": "ab",
            "memo_id": memo.public_id,
            "first_id": "msg_4",
        },
    }
    common = {"tenant": tenant, "thread": thread, "leaf": path[4], "assembler_version": "x"}
    record = AssemblyRecord.objects.create(**common, plan=written, rendered_hash="0" * 64)
    unknown_plan = {"prefix": {**written["prefix"], "first_id": "msg_gone"}}
    unknown = AssemblyRecord.objects.create(**common, plan=unknown_plan, rendered_hash="0" * 64)
    return record.pk, unknown.pk, written
