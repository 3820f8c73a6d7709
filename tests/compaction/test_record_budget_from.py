"""A record's budget by reference (issue 24, stored bytes): a record asked with the same
profile, encoding and policy as the thread's previous one stores only its window and reserve
and names the record holding the rest; the admin, the export and ``/respond`` see the whole
budget, replay verifies, and the migration rewrites records written before."""

import pytest
from django.db import connection
from django.db.migrations.executor import MigrationExecutor

from audit.exports import Export
from compaction.models import AssemblyRecord
from compaction.replay import assembly_replay
from convmem.models import ModelProfile
from tests.compaction.helpers import grow, post_context
from tests.conftest import make_thread

BEFORE = [("compaction", "0010_record_recalled_by_key")]


def _record(response) -> AssemblyRecord:
    assert response.status_code == 200, response.data
    return AssemblyRecord.objects.get(public_id=response.data["assembly_id"])


def _exported(tenant, thread) -> dict[str, dict]:
    sections = dict(Export(tenant=tenant, fmt="json", thread=thread).sections(thread))
    return {a["id"]: a for a in sections["assembly"]}


def test_the_same_profile_again_stores_window_and_reserve_and_names_the_first(acme):
    thread = make_thread(acme.tenant)
    grow(thread, 5)

    first = _record(post_context(acme.client, thread))
    second = _record(post_context(acme.client, thread, window_tokens=4000, reserve_tokens=500))
    third = _record(post_context(acme.client, thread))

    assert first.budget_from_id is None
    assert second.budget == {"window": 4000, "reserve": 500}
    assert second.budget_from_id == third.budget_from_id == first.pk
    whole = first.budget_shown()
    assert third.budget_shown() == whole
    assert second.budget_shown() == {**whole, "window": 4000, "reserve": 500}
    assert second.tokens_shown()["window"] == 4000
    exported = _exported(acme.tenant, thread)
    assert [exported[r.public_id]["budget"] for r in (first, second, third)] == [
        whole,
        second.budget_shown(),
        whole,
    ]
    assert all(assembly_replay(assembly=r).matches for r in (first, second, third))


def test_another_profile_writes_a_whole_budget_that_later_records_name(acme):
    thread = make_thread(acme.tenant)
    grow(thread, 5)
    first = _record(post_context(acme.client, thread))
    thread.profile = ModelProfile.objects.create(
        tenant=acme.tenant, name="short-memos", memo_max_tokens=256
    )
    thread.save(update_fields=["profile"])

    changed = _record(post_context(acme.client, thread))
    again = _record(post_context(acme.client, thread))

    assert changed.budget_from_id is None
    assert changed.budget_shown()["profile"] == "short-memos"
    assert changed.budget_shown()["policy"]["memo_max_tokens"] == 256
    assert again.budget_from_id == changed.pk
    assert again.budget_shown() == changed.budget_shown()
    assert first.budget_shown()["profile"] is None


def test_a_thread_goes_with_its_records_that_name_each_other(acme):
    thread = make_thread(acme.tenant)
    grow(thread, 5)
    for _ in range(3):
        _record(post_context(acme.client, thread))

    deleted, _ = AssemblyRecord.objects.filter(thread=thread).delete()

    assert deleted == 3


@pytest.mark.django_db(transaction=True)
def test_the_migration_shortens_repeated_budgets_and_they_show_the_same():
    executor = MigrationExecutor(connection)
    executor.migrate(BEFORE)
    apps = executor.loader.project_state(BEFORE).apps
    ids, budgets = _records_with_whole_budgets(apps)

    executor = MigrationExecutor(connection)
    executor.migrate(executor.loader.graph.leaf_nodes())

    records = [AssemblyRecord.objects.get(pk=pk) for pk in ids]
    assert [r.budget_from_id for r in records] == [None, ids[0], None, ids[2], None]
    assert records[1].budget == {"window": 4000, "reserve": 500}
    assert [r.budget_whole() for r in records] == budgets


def _records_with_whole_budgets(apps) -> tuple[list[int], list[dict]]:
    """Five records as written before 0011: a budget, the same with another window, another
    policy, the same again, and one of another assembler version."""
    Tenant = apps.get_model("convmem", "Tenant")
    Thread = apps.get_model("threads", "Thread")
    Message = apps.get_model("threads", "Message")
    AssemblyRecord = apps.get_model("compaction", "AssemblyRecord")
    tenant = Tenant.objects.create(name="old")
    thread = Thread.objects.create(tenant=tenant, user_ref="u")
    root = Message.objects.create(thread=thread, role="root", public_id="msg_root")
    leaf = Message.objects.create(thread=thread, role="user", parent=root, depth=1)
    base = {"window": 8192, "reserve": 1024, "profile": None, "encoding": "cl100k_base"}
    budgets = [
        {**base, "policy": {"memo_max_tokens": 1024}},
        {**base, "window": 4000, "reserve": 500, "policy": {"memo_max_tokens": 1024}},
        {**base, "policy": {"memo_max_tokens": 256}},
        {**base, "policy": {"memo_max_tokens": 256}},
        {**base, "policy": {"memo_max_tokens": 256}},
    ]
    versions = ["curator/4"] * 4 + ["curator/5"]
    ids = [
        AssemblyRecord.objects.create(
            tenant=tenant,
            thread=thread,
            leaf=leaf,
            assembler_version=version,
            budget=budget,
            rendered_hash="0" * 64,
        ).pk
        for budget, version in zip(budgets, versions, strict=True)
    ]
    return ids, budgets
