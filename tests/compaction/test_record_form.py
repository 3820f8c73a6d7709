"""Assembly records and memo scores in their short stored forms (issue 24, stored bytes): what
is stored leaves out what every record would say, readers get the whole shapes back, replay
still verifies, and the migration shortens rows written before."""

from dataclasses import asdict

import pytest
from django.db import connection
from django.db.migrations.executor import MigrationExecutor

from compaction import record_form
from compaction.curator import VERSION, Policy
from compaction.evals import scores_stored
from compaction.models import AssemblyRecord, Summary
from compaction.profiles import thread_profile
from compaction.replay import assembly_replay
from compaction.selectors import assembly_items
from tests.compaction.helpers import grow, post_context
from tests.conftest import make_thread

FULL_POLICY = {
    "min_recent_turns": 4,
    "memo_max_tokens": 512,
    "high_water": 0.85,
    "low_water": 0.1,
    "message_overhead": 4,
    "segment_tokens": 14960,
    "min_memo_tokens": 96,
    "recall_max_tokens": 512,
}
OLD_PLAN = {
    "format": "openai.chat_completions",
    "dropped": [],
    "elided": [],
    "covered": None,
    "memo_status": "none",
    "memo_requested": None,
    "memo_lag": {"turns": 0, "tokens": 0, "first_id": None, "last_id": None},
    "prefix": {"messages": 3, "tokens": 40, "hash": "ab" * 32, "memo_id": None, "first_id": "m"},
}
OLD_BUDGET = {
    "window": 8192,
    "reserve": 1024,
    "profile": None,
    "encoding": "cl100k_base",
    "policy": FULL_POLICY,
}
OLD_TOKENS = {"window": 8192, "reserve": 1024, "system": 14, "recent": 300, "total": 314}


def test_the_pinned_policy_defaults_are_the_current_curators():
    """A new default needs a new assembler version (and its pinned entry), or older records
    would be shown with values they did not run with."""
    assert record_form.POLICY_DEFAULTS[VERSION] == asdict(Policy())


def test_stored_forms_leave_out_the_defaults_and_are_shown_whole():
    plan = record_form.plan_stored(OLD_PLAN)
    assert plan == {"memo_status": "none", "prefix": OLD_PLAN["prefix"]}
    assert record_form.plan_shown(plan) == OLD_PLAN
    budget = record_form.budget_stored(OLD_BUDGET, VERSION)
    assert budget["policy"] == {"segment_tokens": 14960, "recall_max_tokens": 512}
    assert record_form.budget_shown(budget, VERSION) == OLD_BUDGET
    tokens = record_form.tokens_stored(OLD_TOKENS)
    assert "window" not in tokens
    assert "reserve" not in tokens
    assert record_form.tokens_shown(tokens, budget) == OLD_TOKENS


CURATOR_TOKENS = {
    "window": 8192,
    "reserve": 1024,
    "system": 14,
    "memo": 500,
    "anchor": 0,
    "retrieved": 0,
    "recent": 3000,
    "total": 3514,
    "recalled": 0,
    "free": 3654,
}


def test_counts_that_add_up_are_stored_without_zeros_total_and_free():
    stored = record_form.tokens_stored(CURATOR_TOKENS)

    assert stored == {"system": 14, "memo": 500, "recent": 3000}
    shown = record_form.tokens_shown(stored, OLD_BUDGET)
    assert shown == CURATOR_TOKENS
    assert list(shown) == list(CURATOR_TOKENS)  # the order they were written in


def test_counts_that_do_not_add_up_are_stored_whole():
    odd = {**CURATOR_TOKENS, "free": 1}

    stored = record_form.tokens_stored(odd)

    assert stored == {key: v for key, v in odd.items() if key not in ("window", "reserve")}
    assert record_form.tokens_shown(stored, OLD_BUDGET) == odd


def test_rows_in_the_old_form_are_shown_as_they_are():
    assert record_form.plan_shown(OLD_PLAN) == OLD_PLAN
    assert record_form.budget_shown(OLD_BUDGET, VERSION) == OLD_BUDGET
    assert record_form.budget_shown(OLD_BUDGET, "curator/3") == OLD_BUDGET
    assert record_form.tokens_shown(OLD_TOKENS, OLD_BUDGET) == OLD_TOKENS
    assert record_form.plan_shown({}) == {}


def test_a_stored_record_is_short_and_its_replay_verifies(acme):
    thread = make_thread(acme.tenant)
    grow(thread, 5)
    r = post_context(acme.client, thread, system="Be brief.")
    assert r.status_code == 200, r.data
    record = AssemblyRecord.objects.get(public_id=r.data["assembly_id"])
    assert "dropped" not in record.plan
    assert "memo_lag" not in record.plan
    assert "window" not in record.tokens
    assert "total" not in record.tokens
    assert record.tokens_shown() == r.data["tokens"]
    assert record.budget_shown()["policy"] == asdict(thread_profile(thread).policy)
    assert record.plan_shown()["dropped"] == []
    assert assembly_replay(assembly=record).matches


def test_memo_scores_keep_counts_and_a_capped_list():
    facts = [f"id:ORD-{n}" for n in range(40)]
    stored = scores_stored({"fact_recall": 0.5, "found": facts[:20], "missing": facts[20:]})
    assert stored["found_count"] == stored["missing_count"] == 20
    assert len(stored["found"]) == len(stored["missing"]) == 12
    assert stored["missing"] == facts[20:32]
    # Counts already given (the range scorer's) are kept.
    assert scores_stored({"found": facts[:3], "found_count": 30})["found_count"] == 30


@pytest.mark.django_db(transaction=True)
def test_the_migration_shortens_existing_records_and_scores():
    executor = MigrationExecutor(connection)
    before, after = (
        [("compaction", "0006_assembly_thread_index_once")],
        [("compaction", "0007_compact_record_json")],
    )
    executor.migrate(before)
    apps = executor.loader.project_state(before).apps
    record_id, summary_id = _old_rows(apps)

    executor = MigrationExecutor(connection)
    executor.migrate(after)
    executor = MigrationExecutor(connection)
    executor.migrate(executor.loader.graph.leaf_nodes())  # as the other tests expect

    record = AssemblyRecord.objects.get(pk=record_id)
    assert record.plan == {"memo_status": "none", "prefix": OLD_PLAN["prefix"]}
    assert record.plan_shown() == OLD_PLAN
    assert record.budget_shown() == OLD_BUDGET
    assert record.tokens_shown() == OLD_TOKENS
    scores = Summary.objects.get(pk=summary_id).scores
    assert scores["missing_count"] == 30
    assert len(scores["missing"]) == 12
    assert scores["found"] == ["id:A"]
    assert scores["found_count"] == 1


def _old_rows(apps) -> tuple[int, int]:
    """A record and a memo as the code before 0007 wrote them, through the historical models."""
    Tenant = apps.get_model("convmem", "Tenant")
    Thread = apps.get_model("threads", "Thread")
    Message = apps.get_model("threads", "Message")
    AssemblyRecord = apps.get_model("compaction", "AssemblyRecord")
    Summary = apps.get_model("compaction", "Summary")
    tenant = Tenant.objects.create(name="old")
    thread = Thread.objects.create(tenant=tenant, user_ref="u")
    root = Message.objects.create(thread=thread, role="root", public_id="msg_root")
    leaf = Message.objects.create(thread=thread, role="user", parent=root, public_id="msg_1")
    record = AssemblyRecord.objects.create(
        tenant=tenant,
        thread=thread,
        leaf=leaf,
        assembler_version=VERSION,
        items=[{"kind": "message", "id": "msg_1", "role": "user", "tokens": 3}],
        plan=OLD_PLAN,
        tokens=OLD_TOKENS,
        budget=OLD_BUDGET,
        rendered_hash="0" * 64,
    )
    summary = Summary.objects.create(
        thread=thread,
        first=leaf,
        last=leaf,
        segment_first=leaf,
        status="ready",
        scores={"found": ["id:A"], "missing": [f"id:M{n}" for n in range(30)]},
    )
    return record.pk, summary.pk


@pytest.mark.postgres
@pytest.mark.django_db
def test_public_ids_have_one_index_each_on_postgresql():
    """Django's ``varchar_pattern_ops`` copies of the public-id indexes are dropped: nothing
    looks a public id up by prefix."""
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT tablename FROM pg_indexes WHERE indexdef LIKE %s AND tablename IN "
            "('threads_message', 'compaction_assemblyrecord', 'compaction_summary')",
            ["%varchar_pattern_ops%"],
        )
        assert cursor.fetchall() == []
        cursor.execute(
            "SELECT count(*) FROM pg_indexes WHERE tablename = 'threads_message' "
            "AND indexdef LIKE '%(public_id)%'"
        )
        assert cursor.fetchone()[0] == 1


@pytest.mark.django_db(transaction=True)
def test_the_migration_names_existing_items_by_key_and_they_show_the_same():
    executor = MigrationExecutor(connection)
    before = [("compaction", "0008_public_ids_without_pattern_index")]
    executor.migrate(before)
    apps = executor.loader.project_state(before).apps
    record_id, kept_id, shown = _records_with_public_id_items(apps)

    executor = MigrationExecutor(connection)
    executor.migrate(executor.loader.graph.leaf_nodes())

    record = AssemblyRecord.objects.get(pk=record_id)
    kinds = [item["kind"] for item in record.items]
    assert kinds == ["system", "summary", "messages", "messages", "message"]
    assert "id" not in record.items[1]
    assert "first_id" not in record.items[2]
    assert assembly_items(record) == shown
    # A record that keeps its rendered input keeps its items whole.
    assert AssemblyRecord.objects.get(pk=kept_id).items == shown


def _records_with_public_id_items(apps) -> tuple[int, int, list[dict]]:
    """A record as written before 0009 (a range by public ids, a whole memo item, a plain
    current message) and one that keeps its rendered input, through the historical models."""
    Tenant = apps.get_model("convmem", "Tenant")
    Thread = apps.get_model("threads", "Thread")
    Message = apps.get_model("threads", "Message")
    AssemblyRecord = apps.get_model("compaction", "AssemblyRecord")
    Summary = apps.get_model("compaction", "Summary")
    tenant = Tenant.objects.create(name="old")
    thread = Thread.objects.create(tenant=tenant, user_ref="u")
    parent = Message.objects.create(thread=thread, role="root", public_id="msg_root")
    path = []
    for n in range(1, 7):
        role = "user" if n % 2 else "assistant"
        parent = Message.objects.create(
            thread=thread, role=role, parent=parent, depth=n, token_count=n, public_id=f"msg_{n}"
        )
        path.append(parent)
    memo = Summary.objects.create(
        thread=thread, first=path[0], last=path[1], segment_first=path[0], status="ready"
    )
    system = {"kind": "system", "hash": "ab" * 32, "tokens": 5}
    memo_item = {
        "kind": "summary",
        "id": memo.public_id,
        "first_id": "msg_1",
        "last_id": "msg_2",
        "tokens": 40,
        "header": 2,
    }
    shown = [
        system,
        memo_item,
        *[
            {"kind": "message", "id": m.public_id, "role": m.role, "tokens": m.token_count}
            for m in path[2:5]
        ],
        {"kind": "message", "id": "msg_6", "role": "assistant", "tokens": 6, "elided": True},
    ]
    old_items = [
        system,
        memo_item,
        {"kind": "messages", "first_id": "msg_3", "last_id": "msg_4", "count": 2},
        shown[4],
        shown[5],
    ]
    fields = {
        "tenant": tenant,
        "thread": thread,
        "leaf": path[-1],
        "assembler_version": VERSION,
        "rendered_hash": "0" * 64,
    }
    record = AssemblyRecord.objects.create(items=old_items, **fields)
    kept = AssemblyRecord.objects.create(items=shown, rendered_pieces=["cd" * 32], **fields)
    return record.pk, kept.pk, shown
